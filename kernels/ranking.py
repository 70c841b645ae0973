"""Ranking kernels: per-group AUC, the best-F1 threshold sweep, confusion counts above thresholds.

``rank_statistics`` and ``best_f1_thresholds`` need the samples in ascending score order (one sort
in the caller serves every grouping); ``confusion_above`` works in any order. Every kernel takes
optional float64 ``weights`` (sample weights, or bootstrap counts over the sorted order): counts
then become weighted sums, and samples of weight 0 are absent.
"""
import numpy as np

from ._arrays import filled
from ._jit import kernel
from ._slots import slot_offsets, slots_of
from ._statistics import f1_at, f1_candidate, settle, tally_block, tie_end, twice_placement  # noqa: F401 - f1_at: ranking.f1_at
from ._weights import counters, weight_of


@kernel
def rank_statistics(sorted_scores, sorted_labels, sorted_codes, n_groups, weights=None):
    """Sample counts, positives and twice the Mann-Whitney U of every slot, in one pass.

    Parameters
    ----------
    sorted_scores, sorted_labels, sorted_codes, n_groups, weights : as in :func:`.sweeps.ranked_sums`
        (here any groupings, complete or not)

    Returns
    -------
    count, positives, u2 : int64 arrays of shape (n_slots,) (float64 with weights)
        ``u2`` counts, over positive samples, twice the negatives with a lower score plus the
        negatives with an equal score, so that ``AUC = u2 / (2 * positives * negatives)``, ties
        counted as one half (scikit-learn's ``roc_auc_score``). Integer, hence exact.
    """
    offsets, n_slots = slot_offsets(n_groups)
    n_groupings, n = sorted_codes.shape
    count = counters(weights, n_slots)
    positives = counters(weights, n_slots)
    u2 = counters(weights, n_slots)
    neg_below = counters(weights, n_slots)  # negatives with a score below the current tie block
    block_pos = counters(weights, n_slots)
    block_neg = counters(weights, n_slots)
    listed_at = filled(n_slots, -1)  # the tie blocks' lists of their slots (tally_block)
    touched = filled(n_slots, 0)
    start = 0
    while start < n:
        stop = tie_end(sorted_scores, start, n)
        if stop == start + 1:  # a score of its own: a block of one, credited at once
            positive = sorted_labels[start] != 0
            w = weight_of(weights, start)
            # (the per-grouping slot loop is written out here and in confusion_above: read from a
            # per-sample list of slots this kernel ran 1.1 to 1.8 times slower, confusion_above 1.2 to
            # 1.4; through a tuple of both slots with a spare row for no group, 1.1 to 1.2 and 1.2 to
            # 1.4; through a numba generator, 14 times (200,000 samples, 1 and 3 groupings). Through
            # the pair slots_of returns, as delong's single samples and tally_block walk it, 1.05 to
            # 1.07 times slower without weights or ties, 1 grouping, 200,000 and 1,000,000 samples)
            for k in range(n_groupings):
                group, overall = slots_of(sorted_codes, offsets, n_groups, k, start)
                if group < 0:
                    continue
                count[group] += w
                count[overall] += w
                if positive:
                    positives[group] += w
                    positives[overall] += w
                    u2[group] += w * twice_placement(neg_below[group], 0)
                    u2[overall] += w * twice_placement(neg_below[overall], 0)
                else:
                    neg_below[group] += w
                    neg_below[overall] += w
        else:  # a tie block: count it per slot, then credit each slot's block once
            n_touched, _ = tally_block(sorted_labels, sorted_codes, offsets, n_groups, weights, start, stop,
                                       block_pos, block_neg, listed_at, touched, False)
            for t in range(n_touched):
                slot = touched[t]
                count[slot] += block_pos[slot] + block_neg[slot]
                positives[slot] += block_pos[slot]
                u2[slot], neg_below[slot], block_pos[slot], block_neg[slot] = settle(
                    u2[slot], neg_below[slot], block_pos[slot], block_neg[slot])
        start = stop
    return count, positives, u2


@kernel
def best_f1_thresholds(sorted_scores, sorted_labels, sorted_codes, n_pos, n_neg, pos_before=None,
                       neg_before=None, weights=None):
    """Decision threshold with the highest F1 in each grouping (over its present samples).

    Candidate thresholds are the distinct scores; at threshold ``t`` a sample counts as predicted
    positive when its score is ``>= t`` (scikit-learn's ``precision_recall_curve``). Among equal F1
    the lowest threshold wins.

    Parameters
    ----------
    sorted_scores, sorted_labels, sorted_codes : as in :func:`rank_statistics`
    n_pos, n_neg : int64 arrays of shape (K,)
        Positives and negatives among each grouping's present samples.
    pos_before, neg_before : int64 arrays of shape (K,), optional
        For a slice of a larger sorted sample (one partition of a distributed sort, where equal
        scores never straddle two slices): the positives and negatives of the earlier slices.
        The global best is then the highest F1 over slices, the earliest slice on ties.
    weights : float64 array of shape (n,), optional
        Then ``n_pos``, ``n_neg`` and the ``*_before`` counts are weighted sums too.

    Returns
    -------
    thresholds : float64 array of shape (K,); NaN for a grouping with no present sample
    best_f1 : float64 array of shape (K,)
    """
    n_groupings, n = sorted_codes.shape
    thresholds = filled(n_groupings, np.nan)
    best = filled(n_groupings, -np.inf)
    pos_below = counters(weights, n_groupings)
    neg_below = counters(weights, n_groupings)
    if pos_before is not None:
        pos_below[:] = pos_before
    if neg_before is not None:
        neg_below[:] = neg_before
    block_pos = counters(weights, n_groupings)
    block_neg = counters(weights, n_groupings)
    start = 0
    while start < n:
        stop = tie_end(sorted_scores, start, n)
        for i in range(start, stop):
            w = weight_of(weights, i)
            pw = w * (1 if sorted_labels[i] != 0 else 0)
            for k in range(n_groupings):
                if sorted_codes[k, i] >= 0:
                    block_pos[k] += pw
                    block_neg[k] += w - pw
        for k in range(n_groupings):
            if block_pos[k] + block_neg[k] == 0:
                continue
            f1 = f1_candidate(n_pos[k] - pos_below[k], n_neg[k] - neg_below[k], n_pos[k], best[k])
            if f1 > best[k]:
                best[k] = f1
                thresholds[k] = sorted_scores[start]
            pos_below[k] += block_pos[k]
            neg_below[k] += block_neg[k]
            block_pos[k] = 0
            block_neg[k] = 0
        start = stop
    return thresholds, best


@kernel
def confusion_above(scores, labels, codes, n_groups, thresholds, weights=None):
    """Positives and negatives scoring strictly above each threshold, for every slot.

    Parameters
    ----------
    scores, labels : arrays of shape (n,), any order
    codes : intp array of shape (K, n)
    n_groups : int64 array of shape (K,)
    thresholds : float64 array of shape (K, T); grouping ``k`` uses row ``k``
    weights : float64 array of shape (n,), optional

    Returns
    -------
    pos_above, neg_above : int64 arrays of shape (n_slots, T) (float64 with weights)
        With the slot's positives P and negatives N: TP = pos_above, FP = neg_above,
        FN = P - TP, TN = N - FP (prediction ``score > threshold``).
    """
    offsets, n_slots = slot_offsets(n_groups)
    n_groupings, n = codes.shape
    n_thresholds = thresholds.shape[1]
    pos_above = counters(weights, (n_slots, n_thresholds))
    neg_above = counters(weights, (n_slots, n_thresholds))
    for i in range(n):
        score = scores[i]
        positive = labels[i] != 0
        w = weight_of(weights, i)
        for k in range(n_groupings):
            group, overall = slots_of(codes, offsets, n_groups, k, i)
            if group < 0:
                continue
            for t in range(n_thresholds):
                if score > thresholds[k, t]:
                    if positive:
                        pos_above[group, t] += w
                        pos_above[overall, t] += w
                    else:
                        neg_above[group, t] += w
                        neg_above[overall, t] += w
    return pos_above, neg_above
