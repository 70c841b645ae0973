"""Radix sort of scores that carries each sample's payload (label, group codes) with its key.

Least-significant-digit radix sort on the full bits of the score: 64-bit keys for float64, 32-bit
keys for float32, so no tie fix-up is needed. The usual sign-flip transform makes the keys' unsigned
order the order of the floats, negative scores and subnormals included; -0.0 is keyed as 0.0, so
that equal scores keep their input order (the sort is stable, as ``np.argsort(kind="stable")``).

Samples are scattered into buckets by a first digit of their keys (its place chosen by the keys'
range), then each bucket is sorted while in cache. When it fits, a sample travels as one 64-bit
word: its key's bits below the first digit, above its label and codes (:func:`sort_bucket`;
the payloads are packed first, by :func:`pack_payload`, and the sorted outputs reuse the words'
and the payloads' memory). Otherwise it travels as its 64-bit key and, in a parallel array, a payload (the label and up to
seven int8 codes packed byte by byte, or the sample index): 32 bits for up to three groupings (or an
index below 2**32), 64 otherwise. Nothing is read at random after the sort.
"""
import numpy as np

from ._jit import inline_kernel, kernel

_BITS = 11  # digit width: 2048 buckets, whose write positions stay in cache
_WIDEST = 13  # the second level's widest digit: 8192 buckets, a 64 KiB count table


@inline_kernel
def _one_bucket(counts, m):
    """Whether one of the 256 buckets of a digit's ``counts`` holds all ``m`` samples."""
    for bucket in range(256):
        if counts[bucket] == m:
            return True
    return False


@inline_kernel
def float_key(bits, wide):
    """Unsigned key with the order of the float whose bits these are (-0.0 keyed as +0.0); 64-bit
    floats when ``wide``, else 32-bit. Branch-free: the sign of a score is a coin toss."""
    top = np.uint64(63 if wide else 31)
    sign = np.uint64(1) << top
    full = (sign << np.uint64(1)) - np.uint64(1)  # all ones (wraps for 64 bits)
    bits = np.uint64(0) if bits == sign else bits
    negative = np.uint64(0) - (bits >> top)  # all ones for a negative float
    return bits ^ ((negative & full) | sign)


@kernel
def _float_bits(key, wide):
    # Inverse of float_key.
    if wide:
        sign = np.uint64(1) << np.uint64(63)
        full = np.uint64(0xFFFFFFFFFFFFFFFF)
    else:
        sign = np.uint64(1) << np.uint64(31)
        full = np.uint64(0xFFFFFFFF)
    if key & sign:
        return key ^ sign
    return full ^ key


# -- Sorting 64-bit words: a key's bits below the first digit above a payload's bits --------------

@kernel
def key_range(score_bits, start, stop):
    """Smallest and largest key of ``score_bits[start:stop]``."""
    wide = score_bits.itemsize == 8
    low = np.uint64(0xFFFFFFFFFFFFFFFF)
    high = np.uint64(0)
    for i in range(start, stop):
        key = float_key(np.uint64(score_bits[i]), wide)
        low = min(low, key)
        high = max(high, key)
    return low, high


@kernel
def digit_counts(score_bits, start, stop, low, shift, bits, counts):
    """``counts[b]``: keys of ``score_bits[start:stop]`` whose ``bits``-bit digit of ``key - low`` at
    ``shift`` is ``b``."""
    wide = score_bits.itemsize == 8
    mask = np.uint64((1 << bits) - 1)
    counts[:] = 0
    for i in range(start, stop):
        key = float_key(np.uint64(score_bits[i]), wide)
        counts[np.intp(((key - low) >> shift) & mask)] += 1


@inline_kernel
def word_insertion(words, start, stop, pay_bits):
    """Insertion sort of words[start:stop] by their key bits (above ``pay_bits``); equal keys stay put."""
    for i in range(start + 1, stop):
        word = words[i]
        key = word >> pay_bits
        j = i - 1
        while j >= start and (words[j] >> pay_bits) > key:
            words[j + 1] = words[j]
            j -= 1
        words[j + 1] = word


@kernel
def word_lsd(words, other, start, stop, pay_bits, n_bits, table, positions):
    """Stable LSD radix sort of words[start:stop] by the ``n_bits`` key bits above ``pay_bits``, 8-bit
    digits, with other[start:stop] as scratch; digits every word shares are skipped."""
    m = stop - start
    mask = np.uint64(255)
    n_digits = (n_bits + 7) // 8
    table[:n_digits] = 0
    for i in range(start, stop):
        key = words[i] >> pay_bits
        for d in range(n_digits):
            table[d, np.intp((key >> np.uint64(8 * d)) & mask)] += 1
    a, b = words, other
    swapped = False
    for d in range(n_digits):
        if _one_bucket(table[d], m):  # every key has the same digit: nothing moves
            continue
        shift = np.uint64(8 * d) + pay_bits
        total = start
        for bucket in range(256):
            positions[bucket] = total
            total += table[d, bucket]
        for i in range(start, stop):
            word = a[i]
            bucket = np.intp((word >> shift) & mask)
            b[positions[bucket]] = word
            positions[bucket] += 1
        a, b = b, a
        swapped = not swapped
    if swapped:
        words[start:stop] = other[start:stop]


#: The widest second digit of a bucket of words: 8192 sub-buckets (a 64 KiB table).
WORDS_WIDEST = 13
#: The second digit leaves about 2**WORDS_SPREAD words a sub-bucket.
WORDS_SPREAD = 1


@inline_kernel
def bucket_scratch(first, begin_bucket, end_bucket):
    """Scratch space of :func:`sort_bucket` for the buckets begin_bucket..end_bucket-1 (bounds ``first``):
    words for the largest, and its tables."""
    largest = 0
    for bucket in range(begin_bucket, end_bucket):
        largest = max(largest, first[bucket + 1] - first[bucket])
    return (np.empty(largest, np.uint64), np.empty((1 << WORDS_WIDEST) + 1, np.int64), np.empty((8, 256), np.int64),
            np.empty(256, np.int64))


@inline_kernel
def sort_bucket(words, start, stop, scratch, second, table, positions, shift, pay_bits):
    """Stable sort of the words ``words[start:stop]`` (one first-level bucket: ``shift`` key bits above
    ``pay_bits`` bits of payload) by their key bits. Returns True when the sorted words are in
    ``scratch[:stop - start]``, False when in place.

    A second digit as wide as the bucket is large (about 2**WORDS_SPREAD words a sub-bucket) scatters
    the bucket into ``scratch``; then one insertion pass over the bucket when every sub-bucket is
    short (no branch per sub-bucket, whose sizes are a coin toss), else an insertion or LSD sort of
    each. ``second`` (2**WORDS_WIDEST + 1,), ``table`` (8, 256) and ``positions`` (256,) are scratch.
    """
    m = stop - start
    if shift == 0 or m <= 32:
        if shift > 0:
            word_insertion(words, start, stop, pay_bits)
        return False
    bits = 1
    while bits < WORDS_WIDEST and (m >> (bits + WORDS_SPREAD)) > 0:
        bits += 1
    bits = min(bits, shift)
    shift2 = shift - bits
    at = np.uint64(shift2) + pay_bits
    mask = np.uint64((1 << bits) - 1)
    radix = 1 << bits
    second[:radix + 1] = 0
    for i in range(start, stop):
        second[np.intp((words[i] >> at) & mask) + 1] += 1
    crowded = 0  # the largest sub-bucket
    for sub in range(radix):
        crowded = max(crowded, second[sub + 1])
        second[sub + 1] += second[sub]
    for i in range(start, stop):
        word = words[i]
        sub = np.intp((word >> at) & mask)
        scratch[second[sub]] = word
        second[sub] += 1
    if shift2 > 0 and crowded <= 32:
        word_insertion(scratch, 0, m, pay_bits)
    elif shift2 > 0:
        begin = 0
        for sub in range(radix):  # second[sub] is now the end of sub-bucket sub
            end = second[sub]
            if end - begin > 32:  # words[start:stop] is free: the LSD sort's scratch
                word_lsd(scratch[begin:end], words[start:start + end - begin], 0, end - begin, pay_bits, shift2,
                         table, positions)
            elif end - begin > 1:
                word_insertion(scratch, begin, end, pay_bits)
            begin = end
    return True


@kernel
def _lsd(keys, pays, keys2, pays2, start, stop, low, n_bits, counts, starts):
    # Stable LSD radix sort of keys[start:stop] (a cache-sized piece, payloads alongside) by the low
    # ``n_bits`` bits of (key - low): 8-bit digits, so that the per-piece tables stay small; digits
    # every key shares are skipped. ``counts`` (8, 256) and ``starts`` (256,) are scratch tables.
    m = stop - start
    if m < 2:
        return
    if m <= 24:
        _insertion(keys, pays, start, stop)
        return
    mask = np.uint64(255)
    n_digits = (n_bits + 7) // 8
    counts[:n_digits] = 0
    for i in range(start, stop):
        relative = keys[i] - low
        for d in range(n_digits):
            counts[d, np.intp((relative >> np.uint64(8 * d)) & mask)] += 1
    a_keys, a_pays, b_keys, b_pays = keys, pays, keys2, pays2
    swapped = False
    for d in range(n_digits):
        if _one_bucket(counts[d], m):  # every key has the same digit: nothing moves
            continue
        total = start
        for bucket in range(256):
            starts[bucket] = total
            total += counts[d, bucket]
        _scatter_digit(a_keys, a_pays, b_keys, b_pays, start, stop, low, np.uint64(8 * d), mask, starts)
        a_keys, a_pays, b_keys, b_pays = b_keys, b_pays, a_keys, a_pays
        swapped = not swapped
    if swapped:
        keys[start:stop] = keys2[start:stop]
        pays[start:stop] = pays2[start:stop]


@inline_kernel
def _insertion(keys, pays, start, stop):
    # Stable insertion sort of a short run by key.
    for i in range(start + 1, stop):
        key = keys[i]
        payload = pays[i]
        j = i - 1
        while j >= start and keys[j] > key:
            keys[j + 1] = keys[j]
            pays[j + 1] = pays[j]
            j -= 1
        keys[j + 1] = key
        pays[j + 1] = payload


@kernel
def _scatter(keys, pays, to_keys, to_pays, start, stop, low, shift, bits, counts):
    # Stable scatter of keys[start:stop] (payloads alongside) into to_keys[start:stop] by the
    # ``bits``-bit digit of (key - low) at ``shift``; ``counts`` (at least 2**bits + 1,) receives the
    # buckets' bounds.
    radix = 1 << bits
    _histogram(keys, start, stop, low, shift, bits, counts[1:radix + 1])
    counts[0] = start
    for bucket in range(radix):
        counts[bucket + 1] += counts[bucket]
    _scatter_from(keys, pays, to_keys, to_pays, start, stop, low, shift, bits, counts[:radix].copy())


@kernel
def _prepare(score_bits, labels, codes, keys, pays, start, stop):
    # keys[start:stop] and pays[start:stop] from the scores' bits and the labels and codes (each
    # sample's index when ``labels`` is empty); returns the piece's smallest and largest key.
    n_groupings = codes.shape[0]
    wide = score_bits.itemsize == 8
    with_index = labels.shape[0] == 0
    low = np.uint64(0xFFFFFFFFFFFFFFFF)
    high = np.uint64(0)
    for i in range(start, stop):
        key = float_key(np.uint64(score_bits[i]), wide)
        keys[i] = key
        low = min(low, key)
        high = max(high, key)
        if with_index:
            pays[i] = i
            continue
        payload = np.uint64(labels[i])
        for k in range(n_groupings):
            payload |= np.uint64(np.uint8(codes[k, i])) << np.uint64(8 * (k + 1))
        pays[i] = payload
    return low, high


@kernel
def _histogram(keys, start, stop, low, shift, bits, counts):
    # counts[b] = keys in keys[start:stop] whose ``bits``-bit digit of (key - low) at ``shift`` is b.
    mask = np.uint64((1 << bits) - 1)
    counts[:] = 0
    for i in range(start, stop):
        counts[np.intp(((keys[i] - low) >> shift) & mask)] += 1


@kernel
def _scatter_from(keys, pays, to_keys, to_pays, start, stop, low, shift, bits, starts):
    # Stable scatter of keys[start:stop] (payloads alongside) by the digit of :func:`_histogram`,
    # bucket b's next position being ``starts[b]`` (advanced).
    _scatter_digit(keys, pays, to_keys, to_pays, start, stop, low, shift, np.uint64((1 << bits) - 1), starts)


@inline_kernel
def _scatter_digit(keys, pays, to_keys, to_pays, start, stop, low, shift, mask, starts):
    # The scatter of :func:`_scatter_from`, the digit being ((key - low) >> shift) & mask: also each
    # pass of :func:`_lsd` (inlined there: as a call of _scatter_from that pass ran 2 to 9% slower).
    for i in range(start, stop):
        key = keys[i]
        bucket = np.intp(((key - low) >> shift) & mask)
        position = starts[bucket]
        to_keys[position] = key
        to_pays[position] = pays[i]
        starts[bucket] = position + 1


@kernel
def _sort_buckets(keys, pays, keys2, pays2, first, begin_bucket, end_bucket, low, shift1):
    # Sort the first-level buckets begin_bucket..end_bucket-1 (bounds ``first``), which lie in the
    # scratch arrays keys2/pays2, into keys/pays: a second MSD level as wide as the bucket is large
    # (up to 13 bits, about 8 keys a sub-bucket), then runs of at most 32 by insertion sort and
    # longer ones by an LSD radix sort on the bits below. Buckets are independent: threads may sort
    # disjoint ranges of them at once.
    second = np.empty((1 << _WIDEST) + 1, np.int64)
    table = np.empty((8, 256), np.int64)
    positions = np.empty(256, np.int64)
    for bucket in range(begin_bucket, end_bucket):
        start = first[bucket]
        stop = first[bucket + 1]
        m = stop - start
        if m == 0:
            continue
        if shift1 == 0 or m <= 32:
            keys[start:stop] = keys2[start:stop]
            pays[start:stop] = pays2[start:stop]
            if shift1 > 0:
                _insertion(keys, pays, start, stop)
            continue
        bits = 1
        while bits < _WIDEST and (m >> (bits + 3)) > 0:
            bits += 1
        bits = min(bits, shift1)
        shift2 = shift1 - bits
        _scatter(keys2, pays2, keys, pays, start, stop, low, np.uint64(shift2), bits, second)
        if shift2 == 0:
            continue
        for sub in range(1 << bits):
            begin = second[sub]
            end = second[sub + 1]
            if end - begin <= 1:
                continue
            if end - begin <= 32:
                _insertion(keys, pays, begin, end)
            else:
                _lsd(keys, pays, keys2, pays2, begin, end, low, shift2, table, positions)


@kernel
def _unpack_carrying(keys, pays, out_bits, out_labels, out_codes, start, stop):
    # The sorted scores' bits, labels and codes of keys/pays[start:stop].
    n_groupings = out_codes.shape[0]
    wide = out_bits.itemsize == 8
    byte = np.uint64(0xFF)
    for i in range(start, stop):
        out_bits[i] = _float_bits(keys[i], wide)
        payload = np.uint64(pays[i])
        out_labels[i] = np.uint8(payload & byte)
        for k in range(n_groupings):
            out_codes[k, i] = np.int8(np.uint8((payload >> np.uint64(8 * (k + 1))) & byte))


@kernel
def _unpack_order(keys, pays, out_bits, order, start, stop):
    # The sorted scores' bits and the order of keys/pays[start:stop].
    wide = out_bits.itemsize == 8
    for i in range(start, stop):
        out_bits[i] = _float_bits(keys[i], wide)
        order[i] = np.intp(pays[i])


def run_tasks(tasks):
    """Run each ``(function, *arguments)``: all but the first on threads of their own (the kernels release
    the GIL), the first on this one; returns their values in order."""
    values = [None] * len(tasks)
    errors = []

    def call(j):
        try:
            values[j] = tasks[j][0](*tasks[j][1:])
        except BaseException as error:  # re-raised below
            errors.append(error)

    threads = []
    if len(tasks) > 1:
        import threading

        threads = [threading.Thread(target=call, args=(j,), daemon=True) for j in range(1, len(tasks))]
        for thread in threads:
            thread.start()
    call(0)
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]
    return values


def pieces(n, n_threads):
    bounds = [n * j // n_threads for j in range(n_threads + 1)]
    return list(zip(bounds[:-1], bounds[1:]))


def _sort_records(prepare, unpack, n, keys, pays, keys2, pays2, n_threads):
    """The carrying sort's steps, each over ``n_threads`` pieces at once: ``prepare(start, stop)`` fills
    keys/pays and returns the piece's key range; a first MSD digit of 11 bits is counted per piece and
    scattered into keys2/pays2 (each piece into its own part of every bucket, so the sort stays stable);
    the buckets, split into runs of about equal size, are sorted back into keys/pays; then
    ``unpack(start, stop)`` writes the outputs."""
    parts = pieces(n, n_threads)
    ranges = run_tasks([(prepare, start, stop) for start, stop in parts])
    low = min(r[0] for r in ranges) if n else 0
    high = max(r[1] for r in ranges) if n else 0
    span = int(high) - int(low)
    if n >= 2 and span > 0:
        n_bits = span.bit_length()
        shift1 = max(n_bits - _BITS, 0)
        bits1 = min(n_bits, _BITS)
        radix = 1 << bits1
        low, shift = np.uint64(low), np.uint64(shift1)
        counts = np.empty((len(parts), radix), np.int64)
        run_tasks([(_histogram, keys, start, stop, low, shift, bits1, counts[j]) for j, (start, stop) in enumerate(parts)])
        totals = counts.sum(axis=0)
        first = np.zeros(radix + 1, np.int64)
        np.cumsum(totals, out=first[1:])
        starts = first[:-1] + np.cumsum(counts, axis=0) - counts  # each piece's place in each bucket
        run_tasks([(_scatter_from, keys, pays, keys2, pays2, start, stop, low, shift, bits1, starts[j])
                   for j, (start, stop) in enumerate(parts)])
        # runs of buckets of about n / n_threads keys each
        cuts = [0, *np.searchsorted(first, [n * j // n_threads for j in range(1, n_threads)]), radix]
        run_tasks([(_sort_buckets, keys, pays, keys2, pays2, first, int(cuts[j]), int(max(cuts[j], cuts[j + 1])),
                    low, shift1) for j in range(n_threads)])
    run_tasks([(unpack, start, stop) for start, stop in parts])


#: Samples whose payloads :func:`pack_payload` assembles at a time (in a buffer that stays in cache).
_PACK_BLOCK = 4096


@kernel
def pack_payload(labels, codes, code_shifts, start, stop, pays):
    """``pays[start:stop]``: each sample's label (bit 0) and each grouping's code + 1 (0 when
    negative) at bit ``code_shifts[k]``. A loop per row over blocks of samples, which vectorizes;
    assembling the payload inside the scatter's loop (which cannot) took twice as long."""
    n_groupings = codes.shape[0]
    block = np.empty(_PACK_BLOCK, np.uint64)
    for begin in range(start, stop, _PACK_BLOCK):
        m = min(_PACK_BLOCK, stop - begin)
        some_labels = labels[begin:begin + m]
        for t in range(m):
            block[t] = some_labels[t]
        for k in range(n_groupings):
            row = codes[k, begin:begin + m]
            at = code_shifts[k]
            for t in range(m):
                block[t] |= np.uint64(np.uint8(max(row[t], -1) + 1)) << at
        out = pays[begin:begin + m]
        for t in range(m):
            out[t] = block[t]


@kernel
def _scatter_payload(score_bits, pays, start, stop, low, shift, bits, pay_bits, starts, words):
    # Scatter samples start:stop into words by the first digit (bucket b's next position starts[b]):
    # a word holds the key's bits below the digit above the sample's payload (pack_payload).
    wide = score_bits.itemsize == 8
    mask = np.uint64((1 << bits) - 1)
    below = (np.uint64(1) << shift) - np.uint64(1)
    for i in range(start, stop):
        relative = float_key(np.uint64(score_bits[i]), wide) - low
        bucket = np.intp((relative >> shift) & mask)
        position = starts[bucket]
        words[position] = ((relative & below) << pay_bits) | np.uint64(pays[i])
        starts[bucket] = position + 1


@kernel
def _unpack_buckets(words, first, begin_bucket, end_bucket, low, shift, pay_bits, code_shifts, out_bits, out_labels,
                    out_codes):
    # Sort the buckets begin_bucket..end_bucket-1 of words (bounds first) and write their scores' bits,
    # labels and codes at their positions. ``out_bits`` may be ``words`` itself: a bucket's bits are
    # written last, each where its word was read (or from the scratch copy).
    wide = out_bits.itemsize == 8
    n_groupings = out_codes.shape[0]
    code_masks = np.empty(n_groupings, np.uint64)
    for k in range(n_groupings):
        end = code_shifts[k + 1] if k + 1 < n_groupings else pay_bits
        code_masks[k] = (np.uint64(1) << (end - code_shifts[k])) - np.uint64(1)
    scratch, second, table, positions = bucket_scratch(first, begin_bucket, end_bucket)
    one = np.uint64(1)
    for bucket in range(begin_bucket, end_bucket):
        start = first[bucket]
        stop = first[bucket + 1]
        if stop == start:
            continue
        in_scratch = sort_bucket(words, start, stop, scratch, second, table, positions, shift, pay_bits)
        source = scratch if in_scratch else words[start:stop]
        top = low + (np.uint64(bucket) << np.uint64(shift))
        # a loop per output, each over contiguous arrays (vectorized)
        for t in range(stop - start):
            out_labels[start + t] = np.uint8(source[t] & one)
        for k in range(n_groupings):
            at = code_shifts[k]
            mask = code_masks[k]
            row = out_codes[k]
            for t in range(stop - start):
                row[start + t] = np.int8(np.int64((source[t] >> at) & mask) - 1)
        for t in range(stop - start):
            out_bits[start + t] = _float_bits(top + (source[t] >> pay_bits), wide)


def bucket_words(score_bits, pay_bits, n_threads, scatter, first_bits=_BITS, words=None):
    """The samples of ``score_bits`` scattered into buckets of 64-bit words by a first digit of their
    keys, each piece of the samples on a thread: the keys' range, the digit's counts per piece, then
    ``scatter(start, stop, low, shift, bits, starts, words)`` for each piece (a kernel such as
    :func:`_scatter_payload`: the key's ``shift`` bits below the digit above ``pay_bits`` bits), into
    ``words`` (uint64, (n,)) when given, else a new array.

    Returns
    -------
    (words, first, low, shift, runs), or None when ``shift + pay_bits`` exceeds 64 bits
        ``first``: the buckets' bounds (int64, radix + 1); ``low``: the smallest key (uint64);
        ``runs``: ``n_threads`` (begin, end) ranges of buckets of about equal size, in order.
    """
    n = score_bits.shape[0]
    parts = pieces(n, n_threads)
    ranges = run_tasks([(key_range, score_bits, start, stop) for start, stop in parts])
    low = min(int(r[0]) for r in ranges) if n else 0
    n_bits = (max(int(r[1]) for r in ranges) - low).bit_length() if n else 0
    bits = min(n_bits, first_bits)
    shift = n_bits - bits
    if shift + pay_bits > 64:
        return None
    radix = 1 << bits
    counts = np.empty((len(parts), radix), np.int64)
    low_key, at = np.uint64(low), np.uint64(shift)
    run_tasks([(digit_counts, score_bits, start, stop, low_key, at, bits, counts[j])
               for j, (start, stop) in enumerate(parts)])
    first = np.zeros(radix + 1, np.int64)
    np.cumsum(counts.sum(axis=0), out=first[1:])
    starts = first[:-1] + np.cumsum(counts, axis=0) - counts  # each piece's place in each bucket
    words = np.empty(n, np.uint64) if words is None else words
    run_tasks([(scatter, start, stop, low_key, at, bits, starts[j], words) for j, (start, stop) in enumerate(parts)])
    cuts = [0, *np.searchsorted(first, [n * j // n_threads for j in range(1, n_threads)]), radix]
    return words, first, low_key, shift, [(int(cuts[j]), int(max(cuts[j], cuts[j + 1]))) for j in range(n_threads)]


#: Bytes per sample of :func:`sort_carrying`'s ``memory``: a word, then the payloads or the outputs
#: (a label and up to seven codes).
MEMORY_BYTES = 16


def _payload_type(pay_bits):
    """The narrowest of uint16, uint32 and uint64 that holds ``pay_bits`` bits."""
    return np.uint16 if pay_bits <= 16 else np.uint32 if pay_bits <= 32 else np.uint64


def _code_shifts(largest):
    """Each grouping's place in a payload (a code + 1 takes as many bits as the grouping's largest
    code + 1 needs; the label takes bit 0), and the payload's width in bits."""
    code_shifts = np.empty(len(largest), np.uint64)
    pay_bits = 1
    for k, top in enumerate(largest):
        code_shifts[k] = pay_bits
        pay_bits += (int(top) + 1).bit_length()
    return code_shifts, pay_bits


def _sort_words(score_bits, largest, pack, n_threads, memory=None):
    """:func:`sort_carrying` by 64-bit words (see :func:`sort_bucket`), or None when a word cannot hold
    a sample's label and codes beside its key's bits below the first digit. ``largest``: each
    grouping's largest code (-1 where all are missing); ``pack(code_shifts, start, stop, pays)`` fills the payloads
    of samples start:stop (as :func:`pack_payload`)."""
    n = score_bits.shape[0]
    n_groupings = len(largest)
    code_shifts, pay_bits = _code_shifts(largest)
    # The payloads are dead once scattered: their bytes then hold the sorted labels and codes.
    pay_type = np.dtype(_payload_type(pay_bits))
    size = max(n * pay_type.itemsize, n * (1 + n_groupings))
    carried = np.empty(size, np.uint8) if memory is None else memory[8 * n:8 * n + size]
    pays = carried[:n * pay_type.itemsize].view(pay_type)

    def scatter(start, stop, low, shift, bits, starts, words):
        pack(code_shifts, start, stop, pays)
        _scatter_payload(score_bits, pays, start, stop, low, shift, bits, np.uint64(pay_bits), starts, words)

    scattered = bucket_words(score_bits, pay_bits, n_threads, scatter,
                             words=None if memory is None else memory[:8 * n].view(np.uint64))
    if scattered is None:
        return None
    words, first, low_key, shift, cuts = scattered
    # 64-bit scores' sorted bits replace their words; fresh memory costs page faults
    out_bits = words if score_bits.itemsize == 8 else np.empty(n, score_bits.dtype)
    out_labels = carried[:n]
    out_codes = carried[n:n * (1 + n_groupings)].view(np.int8).reshape(n_groupings, n)
    run_tasks([(_unpack_buckets, words, first, begin, end, low_key, shift, np.uint64(pay_bits), code_shifts, out_bits,
                out_labels, out_codes) for begin, end in cuts])
    return out_bits, out_labels, out_codes


@kernel
def pack_keyed(keys, cell_pays, start, stop, pays):
    """``pays[start:stop]`` from keys ``cell * 2 + label``: the cell's payload (``cell_pays``: its codes
    placed as :func:`pack_payload` places them) with the label in bit 0."""
    one = keys.dtype.type(1)
    for i in range(start, stop):
        key = keys[i]
        pays[i] = cell_pays[key >> one] | (key & one)


def sort_keyed(score_bits, keys, cell_codes, n_threads=1, memory=None):
    """:func:`sort_carrying` of samples given by keys ``cell * 2 + label`` (uint32) and the int8 codes
    of each cell (``cell_codes``, shape (K, cells)) rather than by a label and K codes each: the
    payloads are looked up by cell, with no label and code rows to write and read first.

    Returns what :func:`sort_carrying` returns for the labels ``keys & 1`` and the codes
    ``cell_codes[:, keys >> 1]``, or None when a 64-bit word cannot hold a sample's label and codes
    (then split the keys and call :func:`sort_carrying`)."""
    largest = [int(row.max()) if row.size else 0 for row in cell_codes]  # (as sort_carrying's, by cell)
    code_shifts, pay_bits = _code_shifts(largest)
    cell_pays = np.zeros(cell_codes.shape[1], np.uint64)
    for k, row in enumerate(cell_codes):  # (a few groupings over a few cells)
        cell_pays |= (np.maximum(row, -1).astype(np.int64) + 1).astype(np.uint64) << code_shifts[k]
    cell_pays = cell_pays.astype(_payload_type(pay_bits))

    def pack(_, start, stop, pays):
        pack_keyed(keys, cell_pays, start, stop, pays)

    n = score_bits.shape[0]
    return _sort_words(score_bits, largest, pack, _threads_for(n, n_threads), memory)


def sort_carrying(score_bits, labels, codes, n_threads=1, memory=None):
    """Sort the scores ascending, carrying each sample's label and int8 codes with it.

    Parameters
    ----------
    score_bits : uint32 or uint64 array of shape (n,)
        The bits of float32 or float64 scores (``scores.view(np.uint32)`` / ``np.uint64``).
    labels : uint8 array of shape (n,)
    codes : int8 array of shape (K, n), K <= 7
    n_threads : int, default 1
        Threads that share each step (a piece of the samples, or of the buckets, each).
    memory : uint8 array of at least ``MEMORY_BYTES * n`` bytes, optional
        Memory for the sort's words and its outputs, which are then views of it (where a sample
        travels as one word): a caller that sorts many score columns in turn reuses it rather than
        page-faulting fresh arrays for each.

    Returns
    -------
    sorted_bits : array of shape (n,), the bits of the sorted scores (-0.0 becomes 0.0)
    sorted_labels : uint8 array of shape (n,)
    sorted_codes : int8 array of shape (K, n)
        In the order of ``np.argsort(scores, kind="stable")``; a negative code comes out as -1.

    Each sample travels as one 64-bit word (its key's bits below the first digit, its label and its
    ``code + 1`` in as many bits as the row's largest code needs) when that fits; otherwise as a key
    and a separate payload, the outputs then sharing one buffer that served the sort as scratch.
    """
    n = score_bits.shape[0]
    sorted_words = None
    if codes.dtype == np.int8:
        def pack(code_shifts, start, stop, pays):
            pack_payload(labels, codes, code_shifts, start, stop, pays)

        largest = [int(row.max()) if n else 0 for row in codes]
        sorted_words = _sort_words(score_bits, largest, pack, _threads_for(n, n_threads), memory)
    if sorted_words is not None:
        return sorted_words
    n_groupings = codes.shape[0]
    width = score_bits.itemsize
    payload = np.uint32 if n_groupings <= 3 else np.uint64  # label and codes, a byte each
    pay_width = np.dtype(payload).itemsize
    buffer = np.empty(max((8 + pay_width) * n, (width + 1 + n_groupings) * n), np.uint8)
    keys2 = buffer[:8 * n].view(np.uint64)
    pays2 = buffer[8 * n:(8 + pay_width) * n].view(payload)
    out_bits = buffer[:width * n].view(score_bits.dtype)
    out_labels = buffer[width * n:(width + 1) * n]
    out_codes = buffer[(width + 1) * n:(width + 1 + n_groupings) * n].view(np.int8).reshape(n_groupings, n)
    keys = np.empty(n, np.uint64)
    pays = np.empty(n, payload)
    # the outputs alias keys2/pays2, which are dead by the time they are written
    _sort_records(lambda start, stop: _prepare(score_bits, labels, codes, keys, pays, start, stop),
                  lambda start, stop: _unpack_carrying(keys, pays, out_bits, out_labels, out_codes, start, stop),
                  n, keys, pays, keys2, pays2, _threads_for(n, n_threads))
    return out_bits, out_labels, out_codes


def sort_order(score_bits, n_threads=1):
    """Ascending order of the scores (given by their bits, as in :func:`sort_carrying`) and the sorted
    scores' bits, by the same radix sort carrying each sample's index (for payloads that do not fit
    in 64 bits: weights, wide codes).

    Returns
    -------
    order : intp array of shape (n,), equal to ``np.argsort(scores, kind="stable")``
    sorted_bits : array of shape (n,), the bits of the sorted scores (-0.0 becomes 0.0)
    """
    n = score_bits.shape[0]
    index = np.uint32 if n < 1 << 32 else np.uint64
    keys, pays = np.empty(n, np.uint64), np.empty(n, index)
    keys2, pays2 = np.empty(n, np.uint64), np.empty(n, index)
    out_bits = np.empty(n, score_bits.dtype)
    order = np.empty(n, np.intp)
    _sort_records(lambda start, stop: _prepare(score_bits, _NO_LABELS, _NO_CODES, keys, pays, start, stop),
                  lambda start, stop: _unpack_order(keys, pays, out_bits, order, start, stop),
                  n, keys, pays, keys2, pays2, _threads_for(n, n_threads))
    return order, out_bits


_NO_LABELS = np.empty(0, np.uint8)
_NO_CODES = np.empty((0, 0), np.int8)

#: The fewest samples a thread of the sort takes on.
PIECE = 1 << 17


def _threads_for(n, n_threads):
    return max(1, min(int(n_threads), n // PIECE))
