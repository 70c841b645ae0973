"""DeLong's variance of every slot's AUC, from the sorted samples, in one pass.

DeLong, DeLong and Clarke-Pearson (1988) write the variance of the Mann-Whitney AUC with
*placement values*: for a positive, the share of the slot's negatives that score below it; for a
negative, the share of the slot's positives that score above it; ties count one half. The AUC is
the mean of either, and its variance is ``S10 / P + S01 / N`` with ``S10`` and ``S01`` the sample
variances of the positives' and of the negatives' placement values. Sun and Xu (2014) get every
placement value from the sorted order: all samples of a slot in one tie block share it, and it is
a running count of the other class below (or above) the block. So one walk down the sorted order,
with per-slot running counts by tie block, gives the squared deviations with no
``P x N`` step.

The deviations are centred exactly, in integers: with ``u2`` twice the slot's Mann-Whitney U
(``AUC = u2 / (2 P N)``), a positive's deviation times ``2 P N`` is ``P (2 n_below + n_tied) - u2``
and a negative's is ``N (2 P - 2 p_below - p_tied) - u2``, both exact int64 numbers. Their squares
are summed with Neumaier's compensation; no sum of squares minus ``n AUC^2`` is ever formed (that
loses 2.5e-12 relative at AUC 0.999).
"""
from ._arrays import filled
from ._config import kernel
from ._slots import neumaier_add, slot_offsets


@kernel
def placement_deviations(sorted_scores, sorted_labels, sorted_codes, n_groups, positives, negatives, u2):
    """Summed squared deviations of the placement values from the AUC, per slot.

    Parameters
    ----------
    sorted_scores : float32 or float64 array of shape (n,), ascending
    sorted_labels : uint8 array of shape (n,), 0 or 1, in the same order
    sorted_codes : integer array of shape (K, n), in the same order; negative = not in the grouping
    n_groups : int64 array of shape (K,)
    positives, negatives, u2 : int64 arrays of shape (n_slots,)
        Each slot's positives, negatives and twice its Mann-Whitney U (``rank_statistics``).

    Returns
    -------
    s10, s01 : float64 arrays of shape (n_slots,)
        Over the slot's positives, the sum of ``(P (2 n_below + n_tied) - u2) ** 2``; over its
        negatives, the sum of ``(N (2 P - 2 p_below - p_tied) - u2) ** 2``, where ``n_below`` and
        ``p_below`` count the slot's negatives and positives scoring below the sample's tie block
        and ``n_tied``, ``p_tied`` those in it. Divided by ``(2 P N) ** 2`` they are the summed
        squared deviations of the placement values from the AUC.
    """
    offsets, n_slots = slot_offsets(n_groups)
    n_groupings, n = sorted_codes.shape
    s10 = filled(n_slots, 0.0)
    s01 = filled(n_slots, 0.0)
    c10 = filled(n_slots, 0.0)  # Neumaier compensations
    c01 = filled(n_slots, 0.0)
    neg_below = filled(n_slots, 0)
    pos_below = filled(n_slots, 0)
    block_pos = filled(n_slots, 0)
    block_neg = filled(n_slots, 0)
    start = 0
    while start < n:
        stop = start + 1
        while stop < n and sorted_scores[stop] == sorted_scores[start]:
            stop += 1
        if stop == start + 1:  # a score of its own: its placement value is the other class below/above
            positive = sorted_labels[start] != 0
            for k in range(n_groupings):
                code = sorted_codes[k, start]
                if code < 0:
                    continue
                for slot in (offsets[k] + code, offsets[k] + n_groups[k]):
                    if positive:
                        deviation = float(positives[slot] * 2 * neg_below[slot] - u2[slot])
                        neumaier_add(s10, c10, slot, deviation * deviation)
                        pos_below[slot] += 1
                    else:
                        deviation = float(negatives[slot] * (2 * (positives[slot] - pos_below[slot])) - u2[slot])
                        neumaier_add(s01, c01, slot, deviation * deviation)
                        neg_below[slot] += 1
        else:  # a tie block: count it per slot, then every sample of a slot in it shares one value
            for i in range(start, stop):
                positive = sorted_labels[i] != 0
                for k in range(n_groupings):
                    code = sorted_codes[k, i]
                    if code < 0:
                        continue
                    for slot in (offsets[k] + code, offsets[k] + n_groups[k]):
                        if positive:
                            block_pos[slot] += 1
                        else:
                            block_neg[slot] += 1
            for i in range(start, stop):
                for k in range(n_groupings):
                    code = sorted_codes[k, i]
                    if code < 0:
                        continue
                    for slot in (offsets[k] + code, offsets[k] + n_groups[k]):
                        bp = block_pos[slot]
                        bn = block_neg[slot]
                        if bp + bn == 0:  # done for this block
                            continue
                        if bp:
                            deviation = float(positives[slot] * (2 * neg_below[slot] + bn) - u2[slot])
                            neumaier_add(s10, c10, slot, bp * (deviation * deviation))
                        if bn:
                            deviation = float(negatives[slot] * (2 * (positives[slot] - pos_below[slot]) - bp)
                                              - u2[slot])
                            neumaier_add(s01, c01, slot, bn * (deviation * deviation))
                        neg_below[slot] += bn
                        pos_below[slot] += bp
                        block_pos[slot] = 0
                        block_neg[slot] = 0
        start = stop
    for slot in range(n_slots):
        s10[slot] += c10[slot]
        s01[slot] += c01[slot]
    return s10, s01

