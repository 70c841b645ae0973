"""AUC's sums of every group of one grouping (count, positives, twice the Mann-Whitney U) by a radix
partition of the scores, without sorting them into an array.

The scores' keys (the full bits with the sign flip of :func:`.sorting.float_key`) are counted by
their first digit and scattered into buckets once (:func:`.sorting.bucket_words`). Each sample
travels as one 64-bit word: its key's bits below that digit, then its ``code + 1`` (0 for a sample
absent from the grouping) and its label. A bucket is then sorted by those key bits while it is in
cache (:func:`.sorting.sort_bucket`) and swept at once: the sweep sees the samples in ascending
score order with tie blocks as runs, and nothing is written back.

Threads take pieces of the samples (the scatter) and runs of buckets (:func:`bucket_sums`); a run's
U, counted from its own start, adds twice its positives times the negatives of the runs before it
(ties never span buckets). Exact integer sums, no weights.
"""
import numpy as np

from . import sorting
from ._jit import inline_kernel, kernel
from ._statistics import credit
from .sorting import bucket_scratch, float_key, sort_bucket

#: The first digit's width: 2048 buckets, whose write positions stay in cache.
FIRST = 11


def rank_sums(score_bits, labels, codes, n_groups, n_threads=1):
    """Count, positives and twice the Mann-Whitney U of every group of one grouping, and of all its
    present samples (the last slot).

    Parameters
    ----------
    score_bits : uint32 or uint64 array of shape (n,)
        The bits of float32 or float64 scores, as in :func:`.sorting.sort_carrying`.
    labels : uint8 array of shape (n,), 0 or 1
    codes : integer array of shape (n,); negative = not in the grouping
    n_groups : int
    n_threads : int, default 1

    Returns
    -------
    (count, positives, u2) : int64 arrays of shape (n_groups + 1,), as ``sweeps.ranked_sums``
        ``AUC = u2 / (2 * positives * negatives)``, ties counted one half. None when a word cannot
        hold a sample's payload beside its key bits (the caller sorts instead).
    """
    n = score_bits.shape[0]
    pay_bits = 1 + int(n_groups).bit_length()
    n_threads = max(1, min(int(n_threads), n // PIECE))
    scattered = sorting.bucket_words(
        score_bits, pay_bits, n_threads,
        lambda start, stop, low, shift, bits, starts, words: scatter_words(
            score_bits, labels, codes, start, stop, low, shift, bits, np.uint64(pay_bits), starts, words),
        FIRST)
    if scattered is None:
        return None
    words, first, _, shift, runs = scattered
    runs = sorting.run_tasks([(bucket_sums, words, first, begin, end, shift, np.uint64(pay_bits), int(n_groups))
                              for begin, end in runs])
    count, positives, u2, negatives = (np.array(values) for values in zip(*runs))
    before = np.cumsum(negatives, axis=0) - negatives  # each run's negatives below it
    return count.sum(axis=0), positives.sum(axis=0), (u2 + 2 * positives * before).sum(axis=0)


#: The fewest samples a thread takes on.
PIECE = 1 << 17


@kernel
def scatter_words(score_bits, labels, codes, start, stop, low, shift, bits, pay_bits, starts, words):
    """Scatter samples ``start:stop`` into ``words`` by the digit of :func:`digit_counts`, bucket ``b``'s
    next position being ``starts[b]`` (advanced). A word holds the key's bits below the digit above
    ``pay_bits`` bits of payload: ``code + 1`` (0 when negative) above the label (bit 0)."""
    wide = score_bits.itemsize == 8
    mask = np.uint64((1 << bits) - 1)
    below = (np.uint64(1) << shift) - np.uint64(1)
    for i in range(start, stop):
        relative = float_key(np.uint64(score_bits[i]), wide) - low
        code = codes[i]
        payload = np.uint64(labels[i] != 0) | (np.uint64(code + 1 if code >= 0 else 0) << np.uint64(1))
        bucket = np.intp((relative >> shift) & mask)
        position = starts[bucket]
        words[position] = ((relative & below) << pay_bits) | payload
        starts[bucket] = position + 1


@inline_kernel
def _sweep(words, start, stop, pay_bits, code_mask, positives, negatives, u2, block_pos, block_neg, state):
    # Add the samples words[start:stop] (ascending keys, each above every sample already added) to the
    # slots of their groups (``code - 1``) and to the last slot, whose sums ride in local variables
    # (from and back to ``state``): AUC's tie-block walk, a sample of its own being a block of one.
    o_pos, o_neg, o_u2 = state[0], state[1], state[2]
    i = start
    while i < stop:
        word = words[i]
        key = word >> pay_bits
        if i + 1 < stop and (words[i + 1] >> pay_bits) == key:
            j = i + 1
            while j < stop and (words[j] >> pay_bits) == key:
                j += 1
            o_bp = 0
            o_bn = 0
            for t in range(i, j):
                code = np.int64((words[t] >> np.uint64(1)) & code_mask)
                if code != 0:
                    positive = np.int64(words[t] & np.uint64(1))
                    block_pos[code - 1] += positive
                    block_neg[code - 1] += 1 - positive
                    o_bp += positive
                    o_bn += 1 - positive
            for t in range(i, j):
                code = np.int64((words[t] >> np.uint64(1)) & code_mask)
                slot = code - 1
                if code != 0 and block_pos[slot] + block_neg[slot] > 0:
                    u2[slot], negatives[slot] = credit(u2[slot], negatives[slot], block_pos[slot], block_neg[slot])
                    positives[slot] += block_pos[slot]
                    block_pos[slot] = 0
                    block_neg[slot] = 0
            o_u2, o_neg = credit(o_u2, o_neg, o_bp, o_bn)
            o_pos += o_bp
            i = j
            continue
        code = np.int64((word >> np.uint64(1)) & code_mask)
        if code != 0:
            positive = np.int64(word & np.uint64(1))
            slot = code - 1
            u2[slot], negatives[slot] = credit(u2[slot], negatives[slot], positive, 1 - positive)
            positives[slot] += positive
            o_u2, o_neg = credit(o_u2, o_neg, positive, 1 - positive)
            o_pos += positive
        i += 1
    state[0] = o_pos
    state[1] = o_neg
    state[2] = o_u2


@kernel
def bucket_sums(words, first, begin_bucket, end_bucket, shift, pay_bits, n_groups):
    """Sort each bucket ``begin_bucket .. end_bucket - 1`` of ``words`` (bounds ``first``, the key bits
    below the first digit being ``shift``) and sweep it; ``words`` is reordered.

    Returns
    -------
    count, positives, u2, negatives : int64 arrays of shape (n_groups + 1,)
        Over these buckets' samples; ``u2`` counts only the negatives of these buckets.
    """
    code_mask = np.uint64((1 << (pay_bits - np.uint64(1))) - 1)
    positives = np.zeros(n_groups + 1, np.int64)
    negatives = np.zeros(n_groups + 1, np.int64)
    u2 = np.zeros(n_groups + 1, np.int64)
    block_pos = np.zeros(n_groups + 1, np.int64)
    block_neg = np.zeros(n_groups + 1, np.int64)
    state = np.zeros(3, np.int64)  # the last slot's sums, as in _sweep
    scratch, second, table, positions = bucket_scratch(first, begin_bucket, end_bucket)
    for bucket in range(begin_bucket, end_bucket):
        start = first[bucket]
        stop = first[bucket + 1]
        if stop == start:
            continue
        if sort_bucket(words, start, stop, scratch, second, table, positions, shift, pay_bits):
            _sweep(scratch, 0, stop - start, pay_bits, code_mask, positives, negatives, u2, block_pos, block_neg, state)
        else:
            _sweep(words, start, stop, pay_bits, code_mask, positives, negatives, u2, block_pos, block_neg, state)
    positives[n_groups] = state[0]
    negatives[n_groups] = state[1]
    u2[n_groups] = state[2]
    return positives + negatives, positives, u2, negatives
