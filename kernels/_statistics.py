"""The steps of the sorted-order statistics, each written once and used by every kernel that needs it.

Every AUC in the package is a walk down the scores in ascending order by *tie blocks* (runs of equal
scores; a sample with a score of its own is a block of one): :func:`tie_end` finds where a block
ends, and :func:`credit` adds a block's positives and negatives to twice the Mann-Whitney U of a
slot, through each sample's :func:`twice_placement` (DeLong's variance sums its squares). Every best-F1 threshold is a sweep over the same blocks that tries each block's score as a
threshold: :func:`f1_candidate` gives the F1 there, or -inf where it cannot beat the best so far.
The sorted-order pass (``sweeps``), the per-grouping kernels (``ranking``), the bootstrap
(``bootstrap``), the radix-bucket sums (``rank_sums``), the voxel sweep (``voxels``) and DeLong's
placement values (``delong``) call these (``tests/test_kernel_primitives.py`` checks it). A walk
that knows its tie blocks beforehand (the bootstrap's, from a list of their starts and ends) enters
each through :func:`enter_block`. A walk over every grouping's slots at once (``ranking.rank_statistics``,
``delong.placement_sums``) counts a tie block of two samples or more by slot with :func:`tally_block`,
which lists the slots the block touched, and settles those.

The helpers are inlined into their callers (they run per sample or per block, in inner loops), but
for :func:`enter_block`, a plain kernel: it runs once a listed tie block, and inlined into the
bootstrap's three walks it added about a tenth to the compile of ``bootstrap.stratified_resample``.
"""
import numpy as np

from ._jit import inline_kernel, kernel
from ._slots import slots_of
from ._weights import weight_of


@inline_kernel
def tie_end(sorted_scores, start, stop):
    """The end of the tie block that starts at ``start``: the first position in ``start + 1 .. stop``
    whose score differs from ``sorted_scores[start]`` (``stop`` when none does)."""
    value = sorted_scores[start]
    end = start + 1
    while end < stop and sorted_scores[end] == value:
        end += 1
    return end


@inline_kernel
def tie_start(sorted_scores, first, stop):
    """The start of the tie block that ends at ``stop`` (for walks from the highest score down): the
    first position in ``first .. stop - 1`` from which every score equals ``sorted_scores[stop - 1]``."""
    value = sorted_scores[stop - 1]
    start = stop - 1
    while start > first and sorted_scores[start - 1] == value:
        start -= 1
    return start


@kernel
def enter_block(block_starts, block_ends, next_block, stop):
    """A walk over ``.. stop`` along listed tie blocks (``block_starts`` and ``block_ends`` ascending,
    as ``bootstrap.tie_blocks`` lists the runs of two samples or more) that has reached the start of
    block ``next_block`` enters it: the block's start and end, the index of the next block, and where
    that one starts (``stop`` when it is past the list or does not start before ``stop``)."""
    start = block_starts[next_block]
    end = block_ends[next_block]
    next_block += 1
    if next_block < block_starts.shape[0] and block_starts[next_block] < stop:
        return start, end, next_block, block_starts[next_block]
    return start, end, next_block, stop


@inline_kernel
def first_above(sorted_scores, start, stop, value):
    """The first position in ``start .. stop`` whose score is above ``value`` (``stop`` when none is):
    where a threshold ``value`` falls in the ascending ``sorted_scores[start:stop]``, the samples
    before it being those predicted negative at ``score > value``. A binary search."""
    low = start
    high = stop
    while low < high:
        middle = (low + high) >> 1
        if np.float64(sorted_scores[middle]) > value:
            high = middle
        else:
            low = middle + 1
    return low


@inline_kernel
def settle(u2, neg_below, block_pos, block_neg):
    """:func:`credit` of a finished tie block, and the next block's (empty) counts: the new
    ``(u2, neg_below, block_pos, block_neg)``."""
    u2, neg_below = credit(u2, neg_below, block_pos, block_neg)
    return u2, neg_below, block_pos - block_pos, block_neg - block_neg


@inline_kernel
def tally_block(sorted_labels, sorted_codes, offsets, n_groups, weights, start, stop, block_pos, block_neg,
                listed_at, touched, groups_only):
    """The tie block ``start:stop`` counted per slot: each sample's weight added to ``block_pos`` (a
    positive) or ``block_neg`` (a negative) of the slots it adds to (:func:`.slots_of`; its group's
    alone when ``groups_only``), and each slot it touches listed once, in ``touched[:n]`` in the order
    first touched. Returns ``n`` and the block's (weighted) positives.

    The caller settles the listed slots and zeroes their counts before the next block; ``listed_at``
    (-1 at first) holds the start of the block in which each slot was last listed. A sample of weight
    0 may list a slot with counts of zero, which settles to no change. Walking the block's samples
    and their ``K * 2`` slots again to find the slots to settle, as the kernels did before (5da1100),
    took them 1.3 to 2.8 times as long (200,000 and 1,000,000 samples, scores rounded to 2 or 4 decimals, 1 and 3
    groupings); testing a slot's counts for zero instead of ``listed_at``, 1.3 to 1.6 with weights."""
    n_touched = 0
    tied_pos = 0
    for j in range(start, stop):
        w = weight_of(weights, j)
        pw = w * (1 if sorted_labels[j] != 0 else 0)
        tied_pos += pw
        for k in range(sorted_codes.shape[0]):
            for slot in slots_of(sorted_codes, offsets, n_groups, k, j, groups_only):
                if slot < 0:
                    continue
                if listed_at[slot] != start:
                    listed_at[slot] = start
                    touched[n_touched] = slot
                    n_touched += 1
                block_pos[slot] += pw
                block_neg[slot] += w - pw
    return n_touched, tied_pos


@inline_kernel
def twice_placement(below, tied):
    """Twice a sample's placement value, in counts: the samples of the other class below its tie
    block, twice, plus those in its block (ties count one half). For a positive, over the negatives,
    it is what the positive adds to twice the Mann-Whitney U."""
    return 2 * below + tied


@inline_kernel
def credit(u2, neg_below, block_pos, block_neg):
    """AUC's step: a tie block of ``block_pos`` positives and ``block_neg`` negatives above
    ``neg_below`` negatives adds ``block_pos`` times :func:`twice_placement` to twice the U; returns
    the new ``(u2, neg_below)``. A sample alone in its block is ``(1, 0)`` or ``(0, 1)`` (times its
    weight): exact in integers, and in floats equal to ``2 * w * neg_below`` (products with 0 or a
    power of 2)."""
    return u2 + block_pos * twice_placement(neg_below, block_neg), neg_below + block_neg


@inline_kernel
def add_sample(count, positives, u2, neg_below, block_pos, block_neg, w, pw, tied):
    """One sample of weight ``w`` (``pw`` = ``w`` when positive, else 0) added to a slot's AUC state:
    to its count and positives, and to its tie block's counts when ``tied``, else (alone in its
    block) credited at once (:func:`credit` of a block of one, without its ``+ 0``). Returns the six
    sums, for a state in local variables."""
    if tied:
        return count + w, positives + pw, u2, neg_below, block_pos + pw, block_neg + (w - pw)
    return count + w, positives + pw, u2 + pw * twice_placement(neg_below, 0), neg_below + (w - pw), block_pos, block_neg


@inline_kernel
def f1_at(tp, fp, n_pos):
    """F1 from counts, with the FairMedFM formula ``2PR / (P + R + 1e-8)`` in its order of operations."""
    tp = float(tp)
    fp = float(fp)
    predicted = tp + fp
    precision = tp / predicted if predicted != 0.0 else 0.0
    recall = tp / float(n_pos) if n_pos != 0 else 1.0
    return 2.0 * precision * recall / (precision + recall + 1e-8)


#: The F1 bound's margin for rounding (:func:`cannot_beat`).
F1_MARGIN = 1.0 + 1e-11


@inline_kernel
def cannot_beat(tp, predicted, n_pos, best):
    """Whether F1 with ``tp`` true positives among ``predicted`` predicted positives (of ``n_pos``
    positives) is sure to be below ``best``: F1 <= 2 TP / (predicted + P) (the ``1e-8`` of
    :func:`f1_at` only lowers it; the margin covers rounding), which one multiplication checks
    without F1's three divisions. Also true of every threshold with at most ``tp`` true positives
    and at least ``predicted`` predicted positives."""
    return 2.0 * float(tp) * F1_MARGIN < best * (float(predicted) + float(n_pos))


@inline_kernel
def f1_slack(tp, predicted, n_pos, best):
    """How many predicted positives a threshold with at most ``tp`` true positives may lose while
    :func:`cannot_beat` (about) holds: ``predicted + P - 2 TP / best``, with the same margin. A sweep
    skips about half of it at once, and checks the skip with :func:`cannot_beat`."""
    return float(predicted) + float(n_pos) - 2.0 * float(tp) * F1_MARGIN / best


@inline_kernel
def f1_candidate(tp, fp, n_pos, best):
    """F1 at a candidate threshold with ``tp`` true and ``fp`` false positives of ``n_pos`` positives,
    or -inf when it cannot beat ``best`` (:func:`cannot_beat`): while F1 climbs most blocks fail
    that test, so a sweep computes few F1s."""
    if cannot_beat(tp, float(tp) + float(fp), n_pos, best):
        return -np.inf
    return f1_at(tp, fp, n_pos)
