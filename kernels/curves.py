"""Curve kernels: the points of every slot's ROC curve, from the one ascending sort.

The points are those of scikit-learn's ``roc_curve(..., drop_intermediate=False)``: one per distinct
score of the slot, thresholds descending, each with the cumulative false and true positives
(samples scoring ``>=`` the threshold), after a first point ``(0, 0)`` at threshold ``+inf``.
Counts are integers, so the curve and its trapezoid area are exact up to the final division.
"""
import numpy as np

from ._config import kernel
from ._slots import slot_offsets


@kernel
def roc_points(sorted_scores, sorted_labels, sorted_codes, n_groups):
    """Cumulative FP and TP counts of every slot at each of its distinct scores, highest first.

    Parameters
    ----------
    sorted_scores : float32 or float64 array of shape (n,), ascending
    sorted_labels : uint8 array of shape (n,), 0 or 1, in the same order
    sorted_codes : integer array of shape (K, n), in the same order; negative = not in the grouping
    n_groups : int64 array of shape (K,)

    Returns
    -------
    starts : int64 array of shape (n_slots + 1,)
        Slot ``s`` owns points ``starts[s]:starts[s + 1]``: its number of distinct scores plus one.
    thresholds : float64 array of shape (starts[-1],)
        ``+inf`` at each slot's first point, then its distinct scores in descending order.
    fps, tps : int64 arrays of shape (starts[-1],)
        Negatives and positives of the slot scoring at least the threshold. A slot's last point
        holds all its negatives and positives; ``fps / fps[-1]`` and ``tps / tps[-1]`` are the FPR
        and TPR.
    """
    offsets, n_slots = slot_offsets(n_groups)
    n_groupings, n = sorted_codes.shape
    # First pass: how many distinct scores each slot sees (a tie block counts once per slot).
    seen_in = np.full(n_slots, -1, np.int64)
    n_distinct = np.zeros(n_slots, np.int64)
    start = 0
    block = 0
    while start < n:
        stop = start + 1
        while stop < n and sorted_scores[stop] == sorted_scores[start]:
            stop += 1
        for i in range(start, stop):
            for k in range(n_groupings):
                code = sorted_codes[k, i]
                if code < 0:
                    continue
                for slot in (offsets[k] + code, offsets[k] + n_groups[k]):
                    if seen_in[slot] != block:
                        seen_in[slot] = block
                        n_distinct[slot] += 1
        block += 1
        start = stop
    starts = np.empty(n_slots + 1, np.int64)
    starts[0] = 0
    for slot in range(n_slots):
        starts[slot + 1] = starts[slot] + n_distinct[slot] + 1
    thresholds = np.empty(starts[n_slots])
    fps = np.zeros(starts[n_slots], np.int64)
    tps = np.zeros(starts[n_slots], np.int64)
    position = np.empty(n_slots, np.int64)  # where each slot writes its next point
    for slot in range(n_slots):
        thresholds[starts[slot]] = np.inf
        position[slot] = starts[slot] + 1
    # Second pass, from the highest score down: add each tie block, then write one point per slot.
    pos_above = np.zeros(n_slots, np.int64)
    neg_above = np.zeros(n_slots, np.int64)
    block_pos = np.zeros(n_slots, np.int64)
    block_neg = np.zeros(n_slots, np.int64)
    stop = n
    while stop > 0:
        start = stop - 1
        while start > 0 and sorted_scores[start - 1] == sorted_scores[stop - 1]:
            start -= 1
        value = float(sorted_scores[start])
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
                    if block_pos[slot] + block_neg[slot] == 0:
                        continue  # already written for this block
                    pos_above[slot] += block_pos[slot]
                    neg_above[slot] += block_neg[slot]
                    block_pos[slot] = 0
                    block_neg[slot] = 0
                    p = position[slot]
                    thresholds[p] = value
                    fps[p] = neg_above[slot]
                    tps[p] = pos_above[slot]
                    position[slot] = p + 1
        stop = start
    return starts, thresholds, fps, tps
