"""The reference of the report's ROC curves: the points of every slot's ROC curve, from one ascending
sort (a kernel the package used before the fused pass recorded the curves; tests/test_plots.py checks
it against scikit-learn and the report's curves against it).

The points are those of scikit-learn's ``roc_curve(..., drop_intermediate=False)``: one per distinct
score of the slot, thresholds descending, each with the cumulative false and true positives
(samples scoring ``>=`` the threshold), after a first point ``(0, 0)`` at threshold ``+inf``.
Without weights the counts are integers, so the curve and its trapezoid area are exact up to the
final division.
"""
import numpy as np

from fairmedfm_fast.kernels._jit import kernel
from fairmedfm_fast.kernels._slots import slot_offsets
from fairmedfm_fast.kernels._statistics import tie_start
from fairmedfm_fast.kernels._weights import counters, weight_of


@kernel
def roc_points(sorted_scores, sorted_labels, sorted_codes, n_groups, weights=None, max_points=0):
    """Cumulative FP and TP counts of every slot at each of its distinct scores, highest first.

    Parameters
    ----------
    sorted_scores : float32 or float64 array of shape (n,), ascending
    sorted_labels : uint8 array of shape (n,), 0 or 1, in the same order
    sorted_codes : integer array of shape (K, n), in the same order; negative = not in the grouping
    n_groups : int64 array of shape (K,)
    weights : float64 array of shape (n,), optional
        Sample weights in the same order; samples of weight 0 are left out (as scikit-learn does).
    max_points : int, default 0
        0 keeps every point. Otherwise a slot of ``m`` samples keeps a point only once at least
        ``ceil(m / max_points)`` samples have passed since its last kept one (and always its first
        and last point): at most ``max_points + 2`` points, for drawing large inputs.

    Returns
    -------
    starts : int64 array of shape (n_slots + 1,)
        Slot ``s`` owns points ``starts[s]:starts[s + 1]``: its number of distinct scores plus one
        (fewer with ``max_points``).
    thresholds : float64 array of shape (starts[-1],)
        ``+inf`` at each slot's first point, then its distinct scores in descending order.
    fps, tps : arrays of shape (starts[-1],), int64 (float64 with weights)
        Negatives and positives of the slot scoring at least the threshold. A slot's last point
        holds all its negatives and positives; ``fps / fps[-1]`` and ``tps / tps[-1]`` are the FPR
        and TPR.
    """
    offsets, n_slots = slot_offsets(n_groups)
    n_groupings, n = sorted_codes.shape
    # First pass: each slot's samples and distinct scores (a tie block counts once per slot).
    seen_in = np.full(n_slots, -1, np.int64)
    n_distinct = np.zeros(n_slots, np.int64)
    n_samples = np.zeros(n_slots, np.int64)
    block = 0
    for i in range(n):
        if i > 0 and sorted_scores[i] != sorted_scores[i - 1]:
            block += 1
        if weight_of(weights, i) == 0:
            continue
        for k in range(n_groupings):
            code = sorted_codes[k, i]
            if code < 0:
                continue
            for slot in (offsets[k] + code, offsets[k] + n_groups[k]):
                n_samples[slot] += 1
                if seen_in[slot] != block:
                    seen_in[slot] = block
                    n_distinct[slot] += 1
    step = np.ones(n_slots, np.int64)
    starts = np.empty(n_slots + 1, np.int64)
    starts[0] = 0
    for slot in range(n_slots):
        capacity = n_distinct[slot]
        if max_points > 0:
            step[slot] = max(1, -(-n_samples[slot] // max_points))
            capacity = min(capacity, n_samples[slot] // step[slot] + 1)
        starts[slot + 1] = starts[slot] + capacity + 1
    thresholds = np.empty(starts[n_slots])
    fps = counters(weights, starts[n_slots])
    tps = counters(weights, starts[n_slots])
    position = np.empty(n_slots, np.int64)  # where each slot writes its next point
    for slot in range(n_slots):
        thresholds[starts[slot]] = np.inf
        position[slot] = starts[slot] + 1
    # Second pass, from the highest score down: add up each tie block, then flush it as one point
    # per slot (the first of the block's samples in a slot flushes it; the others find it empty).
    pos_above = counters(weights, n_slots)
    neg_above = counters(weights, n_slots)
    block_pos = counters(weights, n_slots)
    block_neg = counters(weights, n_slots)
    block_size = np.zeros(n_slots, np.int64)
    since_kept = np.zeros(n_slots, np.int64)
    done = np.zeros(n_slots, np.int64)
    stop = n
    while stop > 0:
        start = tie_start(sorted_scores, 0, stop)
        for i in range(start, stop):
            w = weight_of(weights, i)
            if w == 0:
                continue
            positive = sorted_labels[i] != 0
            for k in range(n_groupings):
                code = sorted_codes[k, i]
                if code < 0:
                    continue
                for slot in (offsets[k] + code, offsets[k] + n_groups[k]):
                    block_size[slot] += 1
                    if positive:
                        block_pos[slot] += w
                    else:
                        block_neg[slot] += w
        value = np.float64(sorted_scores[start])
        for i in range(start, stop):
            for k in range(n_groupings):
                code = sorted_codes[k, i]
                if code < 0:
                    continue
                for slot in (offsets[k] + code, offsets[k] + n_groups[k]):
                    if block_size[slot] == 0:
                        continue
                    pos_above[slot] += block_pos[slot]
                    neg_above[slot] += block_neg[slot]
                    done[slot] += block_size[slot]
                    since_kept[slot] += block_size[slot]
                    block_pos[slot] = 0
                    block_neg[slot] = 0
                    block_size[slot] = 0
                    if since_kept[slot] >= step[slot] or done[slot] == n_samples[slot]:
                        since_kept[slot] = 0
                        p = position[slot]
                        thresholds[p] = value
                        fps[p] = neg_above[slot]
                        tps[p] = pos_above[slot]
                        position[slot] = p + 1
        stop = start
    if max_points <= 0:
        return starts, thresholds, fps, tps
    # Thinned: close the gaps that the capacity bound left.
    kept = np.empty(n_slots + 1, np.int64)
    kept[0] = 0
    for slot in range(n_slots):
        kept[slot + 1] = kept[slot] + position[slot] - starts[slot]
    out_thresholds = np.empty(kept[n_slots])
    out_fps = counters(weights, kept[n_slots])
    out_tps = counters(weights, kept[n_slots])
    for slot in range(n_slots):
        for j in range(kept[slot + 1] - kept[slot]):
            out_thresholds[kept[slot] + j] = thresholds[starts[slot] + j]
            out_fps[kept[slot] + j] = fps[starts[slot] + j]
            out_tps[kept[slot] + j] = tps[starts[slot] + j]
    return kept, out_thresholds, out_fps, out_tps
