"""Average precision per slot, from samples sorted by score (ascending), in one pass from the top.

scikit-learn's ``average_precision_score`` is ``sum_k (R_k - R_{k-1}) P_k`` over the distinct scores
in decreasing order, with ``P_k`` and ``R_k`` the precision and recall of predicting ``score >= t_k``.
Recall only moves at a tie block that holds positives, by ``block positives / P``, so per slot the
sum is ``sum over blocks of block_positives * TP / (TP + FP)`` divided by ``P`` (done by the caller).
A group's tie blocks are the global tie blocks restricted to the group, so one sweep of the sorted
order serves every group of every grouping.
"""

from ._arrays import filled
from ._jit import kernel
from ._slots import neumaier_add, neumaier_step, slot_offsets
from ._statistics import tie_start
from ._weights import counters, weight_of


@kernel
def precision_sums(sorted_scores, sorted_labels, sorted_codes, n_groups, pos_above, neg_above, weights=None):
    """Per slot, the sum over tie blocks of ``block positives * precision`` (AP = sum / positives).

    Parameters
    ----------
    sorted_scores, sorted_labels, sorted_codes, n_groups, weights : as in ``sweeps.ranked_sums``
    pos_above, neg_above : arrays of shape (n_slots,), or of shape (0,) for none
        Positives and negatives of each slot that score above every sample here (samples of
        later partitions of a distributed sort); their type is that of the counters (int64
        without weights, float64 with them).

    Returns
    -------
    float64 array of shape (n_slots,)
        Compensated (Neumaier) sums; 0 for a slot without positives.
    """
    offsets, n_slots = slot_offsets(n_groups)
    n_groupings, n = sorted_codes.shape
    tp = counters(weights, n_slots)
    fp = counters(weights, n_slots)
    if pos_above.shape[0] == n_slots:
        for slot in range(n_slots):
            tp[slot] += pos_above[slot]
            fp[slot] += neg_above[slot]
    block_pos = counters(weights, n_slots)
    block_neg = counters(weights, n_slots)
    sums = filled(n_slots, 0.0)
    compensation = filled(n_slots, 0.0)
    for k in range(n_groupings):  # the overall slot in local variables (every sample updates it)
        first = offsets[k]
        overall = first + n_groups[k]
        o_tp = tp[overall]
        o_fp = fp[overall]
        o_sum = 0.0
        o_comp = 0.0
        stop = n
        while stop > 0:  # the tie block [start, stop), from the highest score down
            start = tie_start(sorted_scores, 0, stop)
            if start == stop - 1:  # one sample (the usual case): no block sums, and no branch on its label
                code = sorted_codes[k, start]
                w = weight_of(weights, start)
                if code >= 0 and w != 0:
                    pw = w * (1 if sorted_labels[start] != 0 else 0)
                    slot = first + code
                    tp[slot] += pw
                    fp[slot] += w - pw
                    neumaier_add(sums, compensation, slot, pw * (tp[slot] / (tp[slot] + fp[slot])))
                    o_tp += pw
                    o_fp += w - pw
                    o_sum, o_comp = neumaier_step(o_sum, o_comp, pw * (o_tp / (o_tp + o_fp)))
                stop = start
                continue
            o_block_pos = o_tp - o_tp
            o_block_neg = o_block_pos
            for i in range(start, stop):
                code = sorted_codes[k, i]
                if code < 0:
                    continue
                w = weight_of(weights, i)
                if w == 0:
                    continue
                pw = w * (1 if sorted_labels[i] != 0 else 0)
                slot = first + code
                block_pos[slot] += pw
                block_neg[slot] += w - pw
                o_block_pos += pw
                o_block_neg += w - pw
            for i in range(start, stop):
                code = sorted_codes[k, i]
                if code < 0:
                    continue
                slot = first + code
                if block_pos[slot] + block_neg[slot] > 0:
                    tp[slot] += block_pos[slot]
                    fp[slot] += block_neg[slot]
                    if block_pos[slot] > 0:
                        neumaier_add(sums, compensation, slot, block_pos[slot] * (tp[slot] / (tp[slot] + fp[slot])))
                    block_pos[slot] = 0
                    block_neg[slot] = 0
            if o_block_pos > 0:
                o_tp += o_block_pos
                o_fp += o_block_neg
                o_sum, o_comp = neumaier_step(o_sum, o_comp, o_block_pos * (o_tp / (o_tp + o_fp)))
            else:
                o_fp += o_block_neg
            stop = start
        sums[overall] = o_sum
        compensation[overall] = o_comp
    return sums + compensation
