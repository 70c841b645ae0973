"""Ranking kernels: per-group AUC, the best-F1 threshold sweep, confusion counts above thresholds.

``rank_statistics`` and ``best_f1_thresholds`` need the samples in ascending score order (one sort
in the caller serves every grouping); ``confusion_above`` works in any order. Every kernel takes
optional float64 ``weights`` (sample weights, or bootstrap counts over the sorted order): counts
then become weighted sums, and samples of weight 0 are absent.
"""
import numpy as np

from ._config import inline_kernel, kernel
from ._slots import slot_offsets
from ._weights import counters, weight_of


@kernel
def rank_statistics(sorted_scores, sorted_labels, sorted_codes, n_groups, weights=None):
    """Sample counts, positives and twice the Mann-Whitney U of every slot, in one pass.

    Parameters
    ----------
    sorted_scores : float32 or float64 array of shape (n,), ascending
    sorted_labels : uint8 array of shape (n,), 0 or 1, in the same order
    sorted_codes : intp array of shape (K, n), in the same order; negative = not in the grouping
    n_groups : int64 array of shape (K,)
    weights : float64 array of shape (n,), optional

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
    start = 0
    while start < n:
        stop = start + 1
        while stop < n and sorted_scores[stop] == sorted_scores[start]:
            stop += 1
        if stop == start + 1:  # a score of its own: no tie to split
            positive = sorted_labels[start] != 0
            w = weight_of(weights, start)
            for k in range(n_groupings):
                code = sorted_codes[k, start]
                if code < 0:
                    continue
                group = offsets[k] + code
                overall = offsets[k] + n_groups[k]
                count[group] += w
                count[overall] += w
                if positive:
                    positives[group] += w
                    positives[overall] += w
                    u2[group] += 2 * w * neg_below[group]
                    u2[overall] += 2 * w * neg_below[overall]
                else:
                    neg_below[group] += w
                    neg_below[overall] += w
        else:  # a tie block: count it per slot, then credit each of its positives half the tied negatives
            for i in range(start, stop):
                positive = sorted_labels[i] != 0
                w = weight_of(weights, i)
                for k in range(n_groupings):
                    code = sorted_codes[k, i]
                    if code < 0:
                        continue
                    for slot in (offsets[k] + code, offsets[k] + n_groups[k]):
                        count[slot] += w
                        if positive:
                            positives[slot] += w
                            block_pos[slot] += w
                        else:
                            block_neg[slot] += w
            for i in range(start, stop):
                for k in range(n_groupings):
                    code = sorted_codes[k, i]
                    if code < 0:
                        continue
                    for slot in (offsets[k] + code, offsets[k] + n_groups[k]):
                        if block_pos[slot] + block_neg[slot] > 0:
                            u2[slot] += block_pos[slot] * (2 * neg_below[slot] + block_neg[slot])
                            neg_below[slot] += block_neg[slot]
                            block_pos[slot] = 0
                            block_neg[slot] = 0
        start = stop
    return count, positives, u2


@inline_kernel
def f1_at(tp, fp, n_pos):
    """F1 from counts, with the FairMedFM formula ``2PR / (P + R + 1e-8)`` in its order of operations."""
    tp = float(tp)
    fp = float(fp)
    predicted = tp + fp
    precision = tp / predicted if predicted != 0.0 else 0.0
    recall = tp / float(n_pos) if n_pos != 0 else 1.0
    return 2.0 * precision * recall / (precision + recall + 1e-8)


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
    thresholds = np.full(n_groupings, np.nan)
    best = np.full(n_groupings, -np.inf)
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
        value = sorted_scores[start]
        stop = start
        while stop < n and sorted_scores[stop] == value:
            positive = sorted_labels[stop] != 0
            w = weight_of(weights, stop)
            for k in range(n_groupings):
                if sorted_codes[k, stop] >= 0:
                    if positive:
                        block_pos[k] += w
                    else:
                        block_neg[k] += w
            stop += 1
        for k in range(n_groupings):
            if block_pos[k] + block_neg[k] == 0:
                continue
            f1 = f1_at(n_pos[k] - pos_below[k], n_neg[k] - neg_below[k], n_pos[k])
            if f1 > best[k]:
                best[k] = f1
                thresholds[k] = value
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
            code = codes[k, i]
            if code < 0:
                continue
            group = offsets[k] + code
            overall = offsets[k] + n_groups[k]
            for t in range(n_thresholds):
                if score > thresholds[k, t]:
                    if positive:
                        pos_above[group, t] += w
                        pos_above[overall, t] += w
                    else:
                        neg_above[group, t] += w
                        neg_above[overall, t] += w
    return pos_above, neg_above


@kernel
def order_tied_keys(packed, order, sorted_scores, keys_are_exact):
    """Put in full order the runs of float64 scores whose upper 32 bits (the sort key) are equal.

    ``packed``, ``order`` and ``sorted_scores`` come from :func:`radix_sort_packed`, sorted by the
    key; runs of equal keys are sorted by the whole score here, in place (insertion sort for short
    runs, an argsort for long ones). Nothing to do when the key is the whole score (float32).
    """
    if keys_are_exact:
        return
    n = packed.shape[0]
    shift = np.uint64(32)
    start = 0
    while start < n:
        high = packed[start] >> shift
        stop = start + 1
        while stop < n and (packed[stop] >> shift) == high:
            stop += 1
        if stop - start > 1:
            if stop - start <= 16:  # insertion sort of a short run
                for i in range(start + 1, stop):
                    value = sorted_scores[i]
                    index = order[i]
                    j = i - 1
                    while j >= start and sorted_scores[j] > value:
                        sorted_scores[j + 1] = sorted_scores[j]
                        order[j + 1] = order[j]
                        j -= 1
                    sorted_scores[j + 1] = value
                    order[j + 1] = index
            else:
                within = np.argsort(sorted_scores[start:stop])
                sorted_scores[start:stop] = sorted_scores[start:stop][within]
                order[start:stop] = order[start:stop][within]
        start = stop


@kernel
def radix_sort_packed(score_bits, scores):
    """Sort non-negative scores by their upper 32 bits: the sorted ``(key << 32) | index`` words,
    the permutation and the scores in that order.

    The key is the score's upper 32 bits (all of a float32; sign, exponent and 20 mantissa bits of
    a float64), whose unsigned order is the order of non-negative floats (-0.0 keyed as 0.0).
    Least-significant-digit radix sort on 11-bit digits of the key: a histogram pass for all three
    digits, then one stable scatter pass per digit (a digit every key shares is skipped; the last
    pass also writes the permutation and the sorted scores), so equal keys stay in index order.
    :func:`order_tied_keys` then orders float64 scores that share a key.

    Parameters
    ----------
    score_bits : uint32 or uint64 array of shape (n,), n < 2**32
        The bits of the scores (``scores.view(np.uint32)`` / ``np.uint64``).
    scores : float32 or float64 array of shape (n,), the same scores

    Returns
    -------
    packed : uint64 array of shape (n,), sorted ascending
    order : intp array of shape (n,)
    sorted_scores : array of shape (n,), the dtype of ``scores``
    """
    n = score_bits.shape[0]
    radix = 1 << 11
    mask = np.uint64(radix - 1)
    low_mask = np.uint64(0xFFFFFFFF)
    shifts = (np.uint64(32), np.uint64(43), np.uint64(54))
    sign_off = np.uint64(0x7FFFFFFF)
    counts = np.zeros((3, radix), np.int64)
    source = np.empty(n, np.uint64)
    high_half = np.uint64(32) if score_bits.itemsize == 8 else np.uint64(0)
    for i in range(n):
        key = (np.uint64(score_bits[i]) >> high_half) & sign_off
        word = (key << np.uint64(32)) | np.uint64(i)
        source[i] = word
        for d in range(3):
            counts[d, np.intp((word >> shifts[d]) & mask)] += 1
    last = -1
    for d in range(3):
        for b in range(radix):
            if counts[d, b] != 0:
                if counts[d, b] != n:  # this digit differs between keys: a pass is needed
                    last = d
                break
    order = np.empty(n, np.intp)
    sorted_scores = np.empty(n, scores.dtype)
    if last < 0:  # every key equal: index order
        for i in range(n):
            order[i] = i
            sorted_scores[i] = scores[i]
        return source, order, sorted_scores
    target = np.empty_like(source)
    for d in range(last + 1):
        skip = False
        for b in range(radix):
            if counts[d, b] == n:
                skip = True
        if skip:
            continue
        starts = np.empty(radix, np.int64)
        total = 0
        for b in range(radix):
            starts[b] = total
            total += counts[d, b]
        shift = shifts[d]
        if d == last:
            for i in range(n):
                word = source[i]
                b = np.intp((word >> shift) & mask)
                position = starts[b]
                target[position] = word
                index = np.intp(word & low_mask)
                order[position] = index
                sorted_scores[position] = scores[index]
                starts[b] = position + 1
        else:
            for i in range(n):
                word = source[i]
                b = np.intp((word >> shift) & mask)
                target[starts[b]] = word
                starts[b] += 1
        source, target = target, source
    return source, order, sorted_scores
