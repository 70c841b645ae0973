"""Calibration kernels: score ranges, pandas.cut-equivalent bin edges, binned ECE sums, BCE sums.

Every kernel here works on samples in any order, and takes optional float64 ``weights`` (counts
become weighted sums; samples of weight 0 are absent, also from the score ranges).
"""
import numpy as np

from ._arrays import filled
from ._bits import bits_of, float_of
from ._jit import inline_kernel, kernel
from ._slots import neumaier_add, slot_offsets, slots_of
from ._weights import counters, weight_of


@kernel
def score_ranges(scores, labels, codes, n_groups, weights=None):
    """Sample count, positives, smallest and largest score of every slot.

    Parameters
    ----------
    scores : float32 or float64 array of shape (n,), any order
    labels : uint8 array of shape (n,), 0 or 1
    codes : intp array of shape (K, n); negative = not in the grouping
    n_groups : int64 array of shape (K,)
    weights : float64 array of shape (n,), optional

    Returns
    -------
    count, positives : int64 arrays of shape (n_slots,) (float64 with weights)
    low, high : float64 arrays of shape (n_slots,); NaN for an empty slot
    """
    offsets, n_slots = slot_offsets(n_groups)
    n_groupings, n = codes.shape
    count = counters(weights, n_slots)
    positives = counters(weights, n_slots)
    low = filled(n_slots, np.inf)
    high = filled(n_slots, -np.inf)
    for i in range(n):
        w = weight_of(weights, i)
        if w == 0:
            continue
        score = np.float64(scores[i])
        positive = labels[i] != 0
        for k in range(n_groupings):
            group, overall = slots_of(codes, offsets, n_groups, k, i)
            if group < 0:
                continue
            for slot in (group, overall):
                count[slot] += w
                if positive:
                    positives[slot] += w
                if score < low[slot]:
                    low[slot] = score
                if score > high[slot]:
                    high[slot] = score
    for slot in range(n_slots):
        if count[slot] == 0:
            low[slot] = np.nan
            high[slot] = np.nan
    return count, positives, low, high


@inline_kernel
def _linspace_into(out, start, stop, n_bins):
    # numpy.linspace(start, stop, n_bins + 1), reproduced operation by operation so that the edges
    # are bit-identical: y[i] = i * step + start, or (i / n) * delta + start when step underflows.
    delta = stop - start
    step = delta / n_bins
    for i in range(n_bins + 1):
        if step == 0.0:
            out[i] = (float(i) / n_bins) * delta + start
        else:
            out[i] = float(i) * step + start
    out[n_bins] = stop


@kernel
def equal_width_edges(low, high, n_bins):
    """Bin edges of ``pandas.cut(x, n_bins)`` for each slot's score range, bit for bit.

    pandas takes ``numpy.linspace(min, max, n_bins + 1)`` and lowers the first edge by 0.1% of the
    range; when ``min == max`` it first widens the range by 0.1% of each end's absolute value (0.001
    at zero) and leaves the edges as they are. Bins are right-closed, ``(edge[b], edge[b + 1]]``.

    Parameters
    ----------
    low, high : float64 arrays of shape (n_slots,), from :func:`score_ranges`
    n_bins : int

    Returns
    -------
    edges : float64 array of shape (n_slots, n_bins + 1); NaN rows for empty slots
    """
    n_slots = low.shape[0]
    edges = filled((n_slots, n_bins + 1), np.nan)
    for slot in range(n_slots):
        lo = low[slot]
        hi = high[slot]
        if np.isnan(lo):
            continue
        if lo == hi:
            lo -= 0.001 * abs(lo) if lo != 0.0 else 0.001
            hi += 0.001 * abs(hi) if hi != 0.0 else 0.001
            _linspace_into(edges[slot], lo, hi, n_bins)
        else:
            _linspace_into(edges[slot], lo, hi, n_bins)
            edges[slot, 0] -= (hi - lo) * 0.001
    return edges


@kernel
def binned_calibration(scores, labels, codes, n_groups, edges, include_lowest, weights=None):
    """Per slot and bin: sample count, sum of scores (compensated) and sum of labels.

    Parameters
    ----------
    scores : float32 or float64 array of shape (n,), any order
    labels : uint8 (0/1) or float64 array of shape (n,)
    codes : intp array of shape (K, n)
    n_groups : int64 array of shape (K,)
    edges : float64 array of shape (n_slots, n_bins + 1), one row of edges per slot
    include_lowest : bool
        Whether a score equal to the lowest edge falls in the first bin (``pandas.qcut``) or in no
        bin (``pandas.cut``, whose lowest edge lies below every score).
    weights : float64 array of shape (n,), optional

    Returns
    -------
    count : int64 array of shape (n_slots, n_bins) (float64 with weights)
    label_sum, score_sum : float64 arrays of shape (n_slots, n_bins)
    """
    offsets, n_slots = slot_offsets(n_groups)
    n_groupings, n = codes.shape
    n_bins = edges.shape[1] - 1
    count = counters(weights, n_slots * n_bins)
    label_sum = filled(n_slots * n_bins, 0.0)
    sums = filled(n_slots * n_bins, 0.0)
    compensation = filled(n_slots * n_bins, 0.0)
    origin = edges[:, 0].copy()
    scale = np.empty(n_slots)
    for slot in range(n_slots):
        width = edges[slot, n_bins] - edges[slot, 0]
        scale[slot] = n_bins / width if width > 0 else 0.0
    for i in range(n):
        w = weight_of(weights, i)
        if w == 0:
            continue
        score = np.float64(scores[i])
        label = float(labels[i])
        for k in range(n_groupings):
            code = codes[k, i]
            if code < 0:
                continue
            # (the slot pair written out, not from _slots.slots_of as in score_ranges: through it
            # this loop ran 2.0 to 2.4 times slower, 200,000 and 1,000,000 samples, 1 and 3 groupings)
            for slot in (offsets[k] + code, offsets[k] + n_groups[k]):
                # The bin of pandas: right-closed (edge[b], edge[b + 1]]; the lowest edge itself is in
                # bin 0 only with include_lowest (pandas.qcut). A guess from the (nearly) uniform
                # spacing, corrected against the exact edges, replaces a binary search. (Written out
                # here rather than in a helper: inlined helpers with several exits cost ~2x here.)
                b = int((score - origin[slot]) * scale[slot])
                if b < 0:
                    b = 0
                elif b > n_bins - 1:
                    b = n_bins - 1
                while b > 0 and score <= edges[slot, b]:
                    b -= 1
                while b < n_bins - 1 and score > edges[slot, b + 1]:
                    b += 1
                inside = score > edges[slot, b] and score <= edges[slot, b + 1]
                if not inside and not (include_lowest and b == 0 and score == edges[slot, 0]):
                    continue
                cell = slot * n_bins + b
                count[cell] += w
                label_sum[cell] += w * label
                neumaier_add(sums, compensation, cell, w * score)
    score_sum = (sums + compensation).reshape((n_slots, n_bins))
    return count.reshape((n_slots, n_bins)), label_sum.reshape((n_slots, n_bins)), score_sum


@kernel
def calibration_error(count, label_sum, score_sum, variant):
    """ECE of every slot from its bin sums: ``sum_b n_b * err_b / sum_b n_b`` over non-empty bins.

    ``err_b`` is ``|mean score - fraction positive|`` for ``variant`` 0 ("abs"), its square for 1
    ("squared"), and for 2 ("rmse") the square root of the squared version. NaN for an empty slot.
    """
    n_slots, n_bins = count.shape
    out = filled(n_slots, np.nan)
    for slot in range(n_slots):
        weighted = 0.0
        total = 0
        for b in range(n_bins):
            size = count[slot, b]
            if size == 0:
                continue
            difference = score_sum[slot, b] / size - label_sum[slot, b] / size
            error = abs(difference) if variant == 0 else difference * difference
            weighted += error * size
            total += size
        if total > 0:
            out[slot] = weighted / total
            if variant == 2:
                out[slot] = np.sqrt(out[slot])
    return out


@kernel
def log_loss_terms(scores, labels):
    """Per sample, ``-(y log p + (1 - y) log(1 - p))`` with each log clamped below at -100.

    The clamp is ``torch.nn.BCELoss``'s, so scores of exactly 0 or 1 give finite terms. ``labels``
    may be uint8 (0/1: one logarithm per sample) or float64 (soft labels: both, weighted).
    BCE of a slot is the mean of its terms (:func:`slot_sums` divided by the count).
    """
    out = np.empty(scores.shape[0])
    log_loss_into(scores, labels, out)
    return out


# The natural logarithm of a positive normal float, vectorizable (no call, no branch): fdlibm's
# e_log.c reduction (x = 2**k * m, sqrt(2)/2 < m <= sqrt(2), f = m - 1, s = f / (2 + f)) and its
# minimax polynomial in s**2, within 1 ulp of the correctly rounded value (glibc's log is within
# 1 ulp too; about 7 % of terms differ from it in the last bit).
_SQRT2 = 1.4142135623730951
_LN2_HI = 6.93147180369123816490e-01
_LN2_LO = 1.90821492927058770002e-10
_LG1, _LG2, _LG3, _LG4 = 6.666666666666735130e-01, 3.999999999940941908e-01, 2.857142874366239149e-01, 2.222219843214978396e-01
_LG5, _LG6, _LG7 = 1.818357216161805012e-01, 1.531383769920937332e-01, 1.479819860511658591e-01
_FRACTION = np.uint64(0x000FFFFFFFFFFFFF)
_ONE_BITS = np.uint64(0x3FF0000000000000)
#: Samples :func:`log_loss_into` takes at a time.
_LOG_BLOCK = 512


@inline_kernel
def _log_reduced(m, k):
    # log(2**k * m) for m in [1, 2) (k a float): m above sqrt(2) is halved, k raised by one.
    big = m > _SQRT2
    m = m * 0.5 if big else m
    k = k + (1.0 if big else 0.0)
    f = m - 1.0
    s = f / (2.0 + f)
    z = s * s
    w = z * z
    r = z * (_LG1 + w * (_LG3 + w * (_LG5 + w * _LG7))) + w * (_LG2 + w * (_LG4 + w * _LG6))
    half_square = 0.5 * f * f
    return k * _LN2_HI - ((half_square - (s * (half_square + r) + k * _LN2_LO)) - f)


@inline_kernel
def _log_term(p, y):
    # One sample's term by np.log: any label (soft ones weigh both logarithms), any score.
    if y == 1:
        return -max(np.log(p), -100.0)
    if y == 0:
        return -max(np.log(1.0 - p), -100.0)
    y = float(y)
    return -(y * max(np.log(p), -100.0) + (1.0 - y) * max(np.log(1.0 - p), -100.0))


@kernel
def log_loss_into(scores, labels, out):
    """:func:`log_loss_terms` written into ``out`` (float64 of shape (n,)), e.g. a piece per thread.

    Blocks of samples go through one loop that vectorizes: the logarithm's argument (``p`` for a
    positive, ``1 - p`` for a negative), its exponent and mantissa bits, :func:`_log_reduced`. A
    block holding a soft label or an argument that is not a positive normal float (0, a subnormal,
    a score outside [0, 1], inf) is then redone sample by sample with ``np.log``.
    """
    n = scores.shape[0]
    for begin in range(0, n, _LOG_BLOCK):
        m = min(_LOG_BLOCK, n - begin)
        some_scores = scores[begin:begin + m]
        some_labels = labels[begin:begin + m]
        some_out = out[begin:begin + m]
        odd = 0  # soft labels and arguments that are not positive normal floats
        for t in range(m):
            p = np.float64(some_scores[t])
            y = some_labels[t]
            bits = bits_of(p if y == 1 else 1.0 - p)
            biased = np.int64(bits >> np.uint64(52))  # the sign bit makes it 2048 or more
            odd += np.int64((y != 0) & (y != 1) | (biased == 0) | (biased >= 0x7FF))
            mantissa = float_of((bits & _FRACTION) | _ONE_BITS)
            some_out[t] = -max(_log_reduced(mantissa, np.float64(biased - 1023)), -100.0)
        if odd:
            for t in range(m):
                some_out[t] = _log_term(np.float64(some_scores[t]), some_labels[t])


@kernel
def slot_sums(values, codes, n_groups, weights=None):
    """Per slot, the compensated (Neumaier) sum of ``values`` (weighted when ``weights`` is given).

    Parameters
    ----------
    values : float64 array of shape (n,)
    codes : integer array of shape (K, n); negative = not in the grouping
    n_groups : int64 array of shape (K,)
    weights : float64 array of shape (n,), optional
    """
    offsets, n_slots = slot_offsets(n_groups)
    n_groupings, n = codes.shape
    sums = filled(n_slots, 0.0)
    compensation = filled(n_slots, 0.0)
    for i in range(n):
        w = weight_of(weights, i)
        if w == 0:
            continue
        term = w * values[i]
        for k in range(n_groupings):
            code = codes[k, i]
            if code < 0:
                continue
            neumaier_add(sums, compensation, offsets[k] + code, term)
            neumaier_add(sums, compensation, offsets[k] + n_groups[k], term)
    return sums + compensation
