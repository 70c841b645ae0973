"""DeLong's variance of every slot's AUC, from the sorted samples, in one pass.

DeLong, DeLong and Clarke-Pearson (1988) write the variance of the Mann-Whitney AUC with
*placement values*: for a positive, the share of the slot's negatives that score below it; for a
negative, the share of the slot's positives that score above it; ties count one half. The AUC is
the mean of either, and its variance is ``S10 / P + S01 / N`` with ``S10`` and ``S01`` the sample
variances of the positives' and of the negatives' placement values. Sun and Xu (2014) get every
placement value from the sorted order: all samples of a slot in one tie block share it, and it is
a running count of the other class below (or above) the block. So one walk down the sorted order,
with per-slot running counts by tie block, gives every slot's sums with no ``P x N`` step.

Nothing is summed in floating point. With ``a = 2 n_below + n_tied`` for a positive (twice its
placement value times ``N``) and ``b = 2 p_below + p_tied`` for a negative (twice one minus its
placement value, times ``P``), the kernel sums ``a`` (twice the Mann-Whitney U) and, exactly in two
int64 words, ``a^2`` and ``b^2``; the caller forms the centred sums from them in Python integers,
so no cancellation can occur (a float sum of squares minus ``n AUC^2`` loses 2.5e-12 relative at
AUC 0.999). The same sums of a partition combine with another's through its counts, as a
distributed backend needs.
"""
from ._arrays import filled
from ._jit import inline_kernel, kernel
from ._slots import slot_offsets, slots_of
from ._statistics import tally_block, tie_end, twice_placement

#: The low word of a wide sum holds this many bits.
LOW_BITS = 31
_LOW_MASK = (1 << LOW_BITS) - 1


@inline_kernel
def wide_step(high, low, x, m):
    """:func:`add_wide` on a sum held in two local variables: returns the new ``(high, low)``."""
    part = (x & _LOW_MASK) * m
    high += (x >> LOW_BITS) * m + (part >> LOW_BITS)
    low += part & _LOW_MASK
    if low > _LOW_MASK:
        low -= 1 << LOW_BITS
        high += 1
    return high, low


@inline_kernel
def add_wide(high, low, slot, x, m):
    """Add ``x * m`` (``0 <= x < 2**62``, ``0 <= m < 2**32``) to the exact sum ``high[slot] * 2**31 +
    low[slot]``, with ``0 <= low < 2**31`` kept: every partial product fits in an int64, and so does
    ``high`` while the sum stays below 2**94 (a slot's sum of ``a^2`` is at most ``4 N^2 P``, below
    2**94 for fewer than 2**32 samples)."""
    high[slot], low[slot] = wide_step(high[slot], low[slot], x, m)


@inline_kernel
def _add_positive(positives, negatives, sum_a, a2_high, a2_low, slot, tied_negatives, count):
    """``count`` positives of a slot in one tie block with ``tied_negatives`` negatives (the slot's
    counts are updated by the caller, after both classes of the block)."""
    a = twice_placement(negatives[slot], tied_negatives)
    sum_a[slot] += count * a
    add_wide(a2_high, a2_low, slot, a * a, count)


@inline_kernel
def _add_negative(positives, negatives, b2_high, b2_low, slot, tied_positives, count):
    """``count`` negatives of a slot in one tie block with ``tied_positives`` positives (counts: as
    :func:`_add_positive`)."""
    b = twice_placement(positives[slot], tied_positives)
    add_wide(b2_high, b2_low, slot, b * b, count)


@kernel
def placement_sums(sorted_scores, sorted_labels, sorted_codes, n_groups, start, stop, shared_overall):
    """Per-slot sums of the placement values and of their squares, in one pass over ``start:stop`` of
    the sorted order.

    Parameters
    ----------
    sorted_scores, sorted_labels, sorted_codes, n_groups : as in :func:`.sweeps.ranked_sums` (any groupings)
    start, stop : int
        The samples read, each at a tie-block boundary (or 0 and ``n``). The sums of consecutive
        ranges combine into those of their union through the counts before each range: ``a`` grows
        by twice the slot's negatives before the range, ``b`` by twice its positives.
    shared_overall : bool
        True when every grouping has the same samples present (no negative code): their "all
        present samples" slots are then one, summed once (in registers) and copied.

    Returns
    -------
    sums : int64 array of shape (n_slots, 7)
        Per slot: positives ``P``, negatives ``N``, the sum over positives of ``a`` (= twice the
        Mann-Whitney U), the sum over positives of ``a^2`` as ``high * 2**31 + low`` (columns 3 and
        4), and the sum over negatives of ``b^2`` likewise (columns 5 and 6), where ``a = 2 n_below
        + n_tied`` counts the slot's negatives below the positive's tie block and in it, and ``b = 2
        p_below + p_tied`` the slot's positives likewise for a negative.
    """
    offsets, n_slots = slot_offsets(n_groups)
    n_groupings = sorted_codes.shape[0]
    positives = filled(n_slots, 0)
    negatives = filled(n_slots, 0)
    sum_a = filled(n_slots, 0)
    a2_high = filled(n_slots, 0)
    a2_low = filled(n_slots, 0)
    b2_high = filled(n_slots, 0)
    b2_low = filled(n_slots, 0)
    block_pos = filled(n_slots, 0)
    block_neg = filled(n_slots, 0)
    listed_at = filled(n_slots, -1)  # the tie blocks' lists of their slots (tally_block)
    touched = filled(n_slots, 0)
    # A shared overall slot lives in local variables (it changes with every sample), copied at the end
    o_pos = 0
    o_neg = 0
    o_a = 0
    o_a2_high = 0
    o_a2_low = 0
    o_b2_high = 0
    o_b2_low = 0
    i = start
    while i < stop:
        end = tie_end(sorted_scores, i, stop)
        if end == i + 1:  # a score of its own: nothing tied
            positive = sorted_labels[i] != 0
            # (the arrays are named here, not handed to one helper for both classes: an inlined helper
            # that takes them and branches inside kept numba's reference counts in this loop, and ran 2.5
            # to 30 times slower)
            for k in range(n_groupings):
                for slot in slots_of(sorted_codes, offsets, n_groups, k, i, shared_overall):
                    if slot < 0:
                        continue
                    if positive:
                        _add_positive(positives, negatives, sum_a, a2_high, a2_low, slot, 0, 1)
                        positives[slot] += 1
                    else:
                        _add_negative(positives, negatives, b2_high, b2_low, slot, 0, 1)
                        negatives[slot] += 1
            if shared_overall:
                if positive:
                    a = twice_placement(o_neg, 0)
                    o_a += a
                    o_a2_high, o_a2_low = wide_step(o_a2_high, o_a2_low, a * a, 1)
                    o_pos += 1
                else:
                    b = twice_placement(o_pos, 0)
                    o_b2_high, o_b2_low = wide_step(o_b2_high, o_b2_low, b * b, 1)
                    o_neg += 1
        else:  # a tie block: count it per slot, then every sample of a slot in it shares its value
            n_touched, tied_pos = tally_block(sorted_labels, sorted_codes, offsets, n_groups, None, i, end,
                                              block_pos, block_neg, listed_at, touched, shared_overall)
            for t in range(n_touched):
                slot = touched[t]
                bp = block_pos[slot]
                bn = block_neg[slot]
                if bp:
                    _add_positive(positives, negatives, sum_a, a2_high, a2_low, slot, bn, bp)
                if bn:
                    _add_negative(positives, negatives, b2_high, b2_low, slot, bp, bn)
                positives[slot] += bp
                negatives[slot] += bn
                block_pos[slot] = 0
                block_neg[slot] = 0
            if shared_overall:
                tied_neg = end - i - tied_pos
                if tied_pos:
                    a = twice_placement(o_neg, tied_neg)
                    o_a += tied_pos * a
                    o_a2_high, o_a2_low = wide_step(o_a2_high, o_a2_low, a * a, tied_pos)
                if tied_neg:
                    b = twice_placement(o_pos, tied_pos)
                    o_b2_high, o_b2_low = wide_step(o_b2_high, o_b2_low, b * b, tied_neg)
                o_pos += tied_pos
                o_neg += tied_neg
        i = end
    if shared_overall:
        for k in range(n_groupings):
            slot = offsets[k] + n_groups[k]
            positives[slot], negatives[slot], sum_a[slot] = o_pos, o_neg, o_a
            a2_high[slot], a2_low[slot], b2_high[slot], b2_low[slot] = o_a2_high, o_a2_low, o_b2_high, o_b2_low
    sums = filled((n_slots, 7), 0)
    for slot in range(n_slots):
        for j, column in enumerate((positives, negatives, sum_a, a2_high, a2_low, b2_high, b2_low)):
            sums[slot, j] = column[slot]
    return sums
