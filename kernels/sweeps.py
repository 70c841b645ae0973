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
from ._slots import neumaier_add, slot_offsets
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
                    total = o_loss + term
                    if abs(o_loss) >= abs(term):
                        o_comp += (o_loss - total) + term
                    else:
                        o_comp += (term - total) + o_loss
                    o_loss = total
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
    slot_pos = counters(weights, n_slots)
    slot_neg = counters(weights, n_slots)
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
        best = -np.inf
        pos_below = slot_pos[overall]  # zero, of the counters' type
        neg_below = pos_below
        start = 0
        while start < n:
            value = sorted_scores[start]
            stop = start + 1
            while stop < n and sorted_scores[stop] == value:
                stop += 1
            block_pos = pos_below - pos_below
            block_neg = block_pos
            present = False
            for i in range(start, stop):
                code = sorted_codes[k, i]
                if code < 0:
                    continue
                w = weight_of(weights, i)
                if w == 0:
                    continue
                present = True
                pw = w * (1 if sorted_labels[i] != 0 else 0)
                nw = w - pw
                block_pos += pw
                block_neg += nw
                slot = first + code
                if with_f1:
                    slot_pos[slot] += pw
                    slot_neg[slot] += nw
                if with_bins:
                    score = np.float64(sorted_scores[i])
                    for cell_slot in (slot, overall):
                        b = current[cell_slot]
                        while b < n_bins - 1 and score > edges[cell_slot, b + 1]:
                            b += 1
                        current[cell_slot] = b
                        if score > edges[cell_slot, b] and score <= edges[cell_slot, b + 1]:
                            cell = cell_slot * n_bins + b
                            bin_count[cell] += w
                            bin_labels[cell] += w * float(sorted_labels[i])
                            neumaier_add(sums, compensation, cell, w * score)
            if with_f1 and present:
                # F1 at threshold `value` (predicted positive: score >= value) counts this block.
                f1 = f1_at(n_pos[k] - pos_below, n_neg[k] - neg_below, n_pos[k])
                pos_below += block_pos
                neg_below += block_neg
                if f1 > best:
                    best = f1
                    thresholds[k] = value
                    for slot in range(first, overall):  # counts at or below the best threshold so far
                        pos_at[slot] = slot_pos[slot]
                        neg_at[slot] = slot_neg[slot]
                    pos_at[overall] = pos_below
                    neg_at[overall] = neg_below
            start = stop
    shape = (n_slots, n_bins)
    return (thresholds, pos_at, neg_at, bin_count.reshape(shape), bin_labels.reshape(shape),
            (sums + compensation).reshape(shape))
