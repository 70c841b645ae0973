"""Fused sweeps over samples sorted by score: every per-slot sum of the classification metrics in
two streaming passes.

:func:`ranked_sums` (first pass): per slot the sample count, positives, twice the Mann-Whitney U
(AUC), the lowest and highest score, the summed log-loss terms (BCE), and the positives and
negatives below given cut positions (confusion counts at fixed thresholds: with predictions
``score > t`` the samples above are those from ``searchsorted(sorted_scores, t, "right")``).

:func:`ranked_bins` (second pass, which needs the first one's totals and score ranges): the
best-F1 threshold of every grouping with the per-slot counts below it, and the ECE bin sums.

Sorted order makes both cheap: tie blocks are runs, each slot's lowest score is its first, and
each slot's ECE bin only moves up. Integer sums without weights, so counts, U and confusion counts
are exact; weighted sums (float64) otherwise, samples of weight 0 being absent.
"""
import numpy as np

from ._config import kernel
from ._slots import ascending_bin, neumaier_add, neumaier_step, slot_offsets
from ._weights import counters, weight_of
from .ranking import f1_at


@kernel
def ranked_sums(sorted_scores, sorted_labels, sorted_codes, n_groups, loss_terms, cuts, weights=None):
    """First pass: per-slot totals, AUC sums, score ranges, BCE sums and prefix counts at cuts.

    Parameters
    ----------
    sorted_scores : float32 or float64 array of shape (n,), ascending
    sorted_labels : uint8 array of shape (n,), 0 or 1
    sorted_codes : integer array of shape (K, n); negative = not in the grouping
    n_groups : int64 array of shape (K,)
    loss_terms : float64 array of shape (n,) (per-sample BCE terms), or of shape (0,) for no BCE
    cuts : int64 array of shape (K, T), ascending along T
        Positions in the sorted order, each at a tie-block boundary (or ``n``): grouping ``k``'s
        slots record their positives and negatives before position ``cuts[k, t]``.
    weights : float64 array of shape (n,), optional

    Returns
    -------
    count, positives, u2 : arrays of shape (n_slots,), int64 (float64 with weights)
        ``AUC = u2 / (2 * positives * negatives)``, ties counted one half.
    low, high : float64 arrays of shape (n_slots,); NaN for an empty slot
    loss : float64 array of shape (n_slots,), compensated sums of ``loss_terms`` (zeros without)
    pos_below, neg_below : arrays of shape (n_slots, T), int64 (float64 with weights)
    """
    offsets, n_slots = slot_offsets(n_groups)
    n_groupings, n = sorted_codes.shape
    n_cuts = cuts.shape[1]
    with_loss = loss_terms.shape[0] == n and n > 0
    count = counters(weights, n_slots)
    positives = counters(weights, n_slots)
    u2 = counters(weights, n_slots)
    neg_below = counters(weights, n_slots)
    block_pos = counters(weights, n_slots)
    block_neg = counters(weights, n_slots)
    low = np.full(n_slots, np.nan)
    high = np.full(n_slots, np.nan)
    loss = np.zeros(n_slots)
    compensation = np.zeros(n_slots)
    pos_cut = counters(weights, (n_slots, n_cuts))
    neg_cut = counters(weights, (n_slots, n_cuts))
    # One grouping at a time; its "all present samples" slot lives in local variables (it changes
    # with every sample, which through memory would chain each update to the previous one).
    for k in range(n_groupings):
        first = offsets[k]
        overall = first + n_groups[k]
        o_count = count[overall]
        o_pos = positives[overall]
        o_u2 = u2[overall]
        o_neg_below = neg_below[overall]
        o_loss = 0.0
        o_comp = 0.0
        o_low = np.nan
        o_high = np.nan
        next_cut = 0
        start = 0
        while True:
            while next_cut < n_cuts and cuts[k, next_cut] <= start:  # counts below this boundary
                for slot in range(first, overall):
                    pos_cut[slot, next_cut] = positives[slot]
                    neg_cut[slot, next_cut] = count[slot] - positives[slot]
                pos_cut[overall, next_cut] = o_pos
                neg_cut[overall, next_cut] = o_count - o_pos
                next_cut += 1
            if start >= n:
                break
            stop = start + 1
            while stop < n and sorted_scores[stop] == sorted_scores[start]:
                stop += 1
            tied = stop > start + 1
            o_block_pos = o_pos - o_pos
            o_block_neg = o_block_pos
            for i in range(start, stop):
                code = sorted_codes[k, i]
                if code < 0:
                    continue
                w = weight_of(weights, i)
                if w == 0:
                    continue
                # Branch-free on the label (labels in sorted order are random: a branch mispredicts).
                pw = w * (1 if sorted_labels[i] != 0 else 0)
                nw = w - pw
                score = np.float64(sorted_scores[i])
                slot = first + code
                if count[slot] == 0:
                    low[slot] = score
                high[slot] = score
                if o_count == 0:
                    o_low = score
                o_high = score
                count[slot] += w
                positives[slot] += pw
                o_count += w
                o_pos += pw
                if with_loss:
                    term = w * loss_terms[i]
                    neumaier_add(loss, compensation, slot, term)
                    o_loss, o_comp = neumaier_step(o_loss, o_comp, term)
                if tied:
                    block_pos[slot] += pw
                    block_neg[slot] += nw
                    o_block_pos += pw
                    o_block_neg += nw
                else:
                    u2[slot] += 2 * pw * neg_below[slot]
                    neg_below[slot] += nw
                    o_u2 += 2 * pw * o_neg_below
                    o_neg_below += nw
            if tied:  # credit each positive of the block half of the block's negatives
                for i in range(start, stop):
                    code = sorted_codes[k, i]
                    if code < 0:
                        continue
                    slot = first + code
                    if block_pos[slot] + block_neg[slot] > 0:
                        u2[slot] += block_pos[slot] * (2 * neg_below[slot] + block_neg[slot])
                        neg_below[slot] += block_neg[slot]
                        block_pos[slot] = 0
                        block_neg[slot] = 0
                o_u2 += o_block_pos * (2 * o_neg_below + o_block_neg)
                o_neg_below += o_block_neg
            start = stop
        count[overall] = o_count
        positives[overall] = o_pos
        u2[overall] = o_u2
        low[overall] = o_low
        high[overall] = o_high
        loss[overall] = o_loss
        compensation[overall] = o_comp
    return count, positives, u2, low, high, loss + compensation, pos_cut, neg_cut


@kernel
def ranked_bins(sorted_scores, sorted_labels, sorted_codes, n_groups, n_pos, n_neg, edges, with_f1,
                weights=None):
    """Second pass: each grouping's best-F1 threshold with its slots' counts below it, and ECE bins.

    Parameters
    ----------
    sorted_scores, sorted_labels, sorted_codes, n_groups, weights : as in :func:`ranked_sums`
    n_pos, n_neg : arrays of shape (K,)
        Positives and negatives among each grouping's present samples.
    edges : float64 array of shape (n_slots, n_bins + 1) (``calibration.equal_width_edges``), or
        of shape (0, 1) for no ECE bins
    with_f1 : bool
        Whether to sweep for the best-F1 thresholds.

    Returns
    -------
    thresholds : float64 array of shape (K,)
        The best-F1 threshold of each grouping (candidates are the distinct scores, a sample
        predicted positive at ``score >= t``, the lowest threshold among equal F1; as
        ``ranking.best_f1_thresholds``); NaN without samples or without ``with_f1``.
    pos_at, neg_at : arrays of shape (n_slots,)
        Positives and negatives of each slot scoring at most its grouping's best threshold (then
        ``score > t`` holds for the rest: TP = positives - pos_at).
    bin_count, bin_labels, bin_scores : arrays of shape (n_slots, n_bins)
        As ``calibration.binned_calibration`` (pandas.cut's right-closed bins).
    """
    offsets, n_slots = slot_offsets(n_groups)
    n_groupings, n = sorted_codes.shape
    n_bins = max(edges.shape[1] - 1, 1)
    with_bins = edges.shape[0] == n_slots and edges.shape[1] > 1
    thresholds = np.full(n_groupings, np.nan)
    pos_at = counters(weights, n_slots)
    neg_at = counters(weights, n_slots)
    bin_count = counters(weights, n_slots * n_bins)
    bin_labels = np.zeros(n_slots * n_bins)
    sums = np.zeros(n_slots * n_bins)
    compensation = np.zeros(n_slots * n_bins)
    current = np.zeros(n_slots, np.int64)  # each slot's ECE bin, which only moves up
    for k in range(n_groupings):  # one grouping at a time: its sweep state in local variables
        first = offsets[k]
        overall = first + n_groups[k]
        # The best F1 so far, where its block ends and the overall counts up to there (selected
        # without a branch: while F1 climbs, whether a block beats the best is a coin toss).
        best = -np.inf
        best_stop = 0
        best_start = 0
        start = 0  # the current tie block's first sample
        zero = pos_at[overall]  # zero, of the counters' type
        pos_below = zero
        neg_below = zero
        best_pos = zero
        best_neg = zero
        block_pos = zero
        block_neg = zero
        present = False
        # The overall slot's current ECE bin, in local variables (each sample updates it).
        o_bin = 0
        o_count = zero
        o_labels = 0.0
        o_sum = 0.0
        o_comp = 0.0
        o_lower = edges[overall, 0] if with_bins else 0.0
        o_upper = edges[overall, 1] if with_bins else 0.0
        for i in range(n):
            value = sorted_scores[i]
            code = sorted_codes[k, i]
            w = weight_of(weights, i)
            if code >= 0 and w != 0:
                present = True
                pw = w * (1 if sorted_labels[i] != 0 else 0)
                block_pos += pw
                block_neg += w - pw
                if with_bins:
                    score = np.float64(value)
                    slot = first + code
                    b, inside = ascending_bin(edges, slot, current[slot], score)
                    current[slot] = b
                    if inside:
                        cell = slot * n_bins + b
                        bin_count[cell] += w
                        bin_labels[cell] += w * float(sorted_labels[i])
                        neumaier_add(sums, compensation, cell, w * score)
                    if score > o_upper and o_bin < n_bins - 1:
                        cell = overall * n_bins + o_bin
                        bin_count[cell] = o_count
                        bin_labels[cell] = o_labels
                        sums[cell] = o_sum
                        compensation[cell] = o_comp
                        o_count = zero
                        o_labels = 0.0
                        o_sum = 0.0
                        o_comp = 0.0
                        while o_bin < n_bins - 1 and score > edges[overall, o_bin + 1]:
                            o_bin += 1
                        o_lower = edges[overall, o_bin]
                        o_upper = edges[overall, o_bin + 1]
                    if score > o_lower and score <= o_upper:
                        o_count += w
                        o_labels += w * float(sorted_labels[i])
                        o_sum, o_comp = neumaier_step(o_sum, o_comp, w * score)
            if i + 1 < n and sorted_scores[i + 1] == value:
                continue
            # the end of a tie block
            if with_f1 and present:
                # F1 at threshold `value` (predicted positive: score >= value) counts this block.
                tp = n_pos[k] - pos_below
                predicted = float(tp) + float(n_neg[k] - neg_below)
                # F1 <= 2 TP / (predicted + positives) (within rounding): most blocks cannot beat
                # the best, which a multiplication shows without F1's three divisions.
                if 2.0 * float(tp) * (1.0 + 1e-11) < best * (predicted + float(n_pos[k])):
                    f1 = -np.inf
                else:
                    f1 = f1_at(tp, n_neg[k] - neg_below, n_pos[k])
                pos_below += block_pos
                neg_below += block_neg
                better = f1 > best
                best = f1 if better else best
                best_stop = i + 1 if better else best_stop
                best_start = start if better else best_start
                best_pos = pos_below if better else best_pos
                best_neg = neg_below if better else best_neg
            block_pos = zero
            block_neg = zero
            present = False
            start = i + 1
        if with_bins:
            cell = overall * n_bins + o_bin
            bin_count[cell] = o_count
            bin_labels[cell] = o_labels
            sums[cell] = o_sum
            compensation[cell] = o_comp
        if best_stop > 0:
            thresholds[k] = sorted_scores[best_start]
            pos_at[overall] = best_pos
            neg_at[overall] = best_neg
            for i in range(best_stop):  # each group's counts at or below the best threshold
                code = sorted_codes[k, i]
                w = weight_of(weights, i)
                if code >= 0 and w != 0:
                    pw = w * (1 if sorted_labels[i] != 0 else 0)
                    pos_at[first + code] += pw
                    neg_at[first + code] += w - pw
    shape = (n_slots, n_bins)
    return (thresholds, pos_at, neg_at, bin_count.reshape(shape), bin_labels.reshape(shape),
            (sums + compensation).reshape(shape))
