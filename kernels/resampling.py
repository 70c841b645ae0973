"""Resampling kernels: stratified bootstrap counts, the samples a resample draws, and permuted group
codes.

Random numbers come from a counter-based generator (SplitMix64 of seed, stream and index), so a
resample depends only on the seed and its own number: the same intervals whatever the number of
threads that compute resamples side by side. A bootstrap draw takes 32 of its 64 bits: an exactly
uniform pick by Lemire's multiply-shift with rejection, two picks per SplitMix64 step.
"""
import numpy as np
from numba import types
from numba.extending import overload

from ._jit import inline_kernel, kernel
from ._weights import weight_of

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_LOW32 = np.uint64(0xFFFFFFFF)
_RETRY = np.uint64(0xD1B54A32D192ED03)  # a second stream for the rare rejected picks


@inline_kernel
def _mix(x):
    # SplitMix64 finalizer (Steele, Lea and Flood 2014): a bijection of uint64 with good avalanche.
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


@inline_kernel
def _stream_key(seed, stream):
    return _mix(seed ^ _mix(np.uint64(stream) * _GOLDEN))


@inline_kernel
def _uniform(seed, stream, index):
    # A float in [0, 1) from (seed, stream, index); 53 random bits. The stream's key does not
    # depend on the index (the compiler computes it once per loop), so each number costs one
    # SplitMix64 step: the finalizer of key + index * golden ratio.
    x = _mix(_stream_key(seed, stream) + np.uint64(index) * _GOLDEN)
    return float(x >> np.uint64(11)) * (1.0 / 9007199254740992.0)


@inline_kernel
def _below(bits, size, key, draw):
    # An exactly uniform integer in [0, size) from 32 random bits (Lemire 2019, multiply-shift with
    # rejection), 1 <= size <= 2**32. A rejection (probability below size / 2**32) draws again from
    # a second stream at (draw, attempt), so every pick stays a function of the key and its number.
    product = bits * size
    if (product & _LOW32) < size:
        threshold = (np.uint64(2**32) - size) % size
        attempt = np.uint64(0)
        while (product & _LOW32) < threshold:
            attempt += np.uint64(1)
            retry = (np.uint64(draw) << np.uint64(16)) | attempt
            product = (_mix((key ^ _RETRY) + retry * _GOLDEN) >> np.uint64(32)) * size
    return np.intp(product >> np.uint64(32))


@inline_kernel
def _draw_stratum(key, start, end, tally, paired):
    # Draw end - start times with replacement among slots start..end of tally. Paired (a stratum of
    # at most 2**32 samples): the SplitMix64 output at counter t gives the picks of draws t and t + 1
    # (its high and low 32 bits). Otherwise one 53-bit float a draw.
    size = end - start
    if paired:
        wide = np.uint64(size)
        t = start
        while t + 1 < end:
            x = _mix(key + np.uint64(t) * _GOLDEN)
            tally[start + _below(x >> np.uint64(32), wide, key, t)] += 1
            tally[start + _below(x & _LOW32, wide, key, t + 1)] += 1
            t += 2
        if t < end:
            x = _mix(key + np.uint64(t) * _GOLDEN)
            tally[start + _below(x >> np.uint64(32), wide, key, t)] += 1
    else:
        for t in range(start, end):
            x = _mix(key + np.uint64(t) * _GOLDEN)
            tally[start + min(int(float(x >> np.uint64(11)) * (1.0 / 9007199254740992.0) * size), size - 1)] += 1


@inline_kernel
def draw_strata(stratum_starts, seed, resample, tally):
    """Every stratum's draws of one resample, counted in ``tally`` (zeroed first) in stratum order:
    ``tally[j]`` is how often the ``j``-th drawable sample (``members[j]`` of
    :func:`stratified_bootstrap_counts`) is drawn. Inlined into the calling kernel."""
    key = _stream_key(seed, resample)
    tally[:stratum_starts[-1]] = 0
    for c in range(stratum_starts.shape[0] - 1):
        start, end = stratum_starts[c], stratum_starts[c + 1]
        _draw_stratum(key, start, end, tally, end - start <= 2**32)


@inline_kernel
def _counts_in_order(members, stratum_starts, tally, out):
    # out[members[j]] = tally[j] (0 for samples in no stratum); returns how many samples are drawn,
    # the total of the counts and the largest count. Members ascend within a stratum: `out` streams.
    n_drawn, total, top = 0, 0, 0
    if stratum_starts[-1] < out.shape[0]:
        out[:] = 0
    for j in range(stratum_starts[-1]):
        v = tally[j]
        out[members[j]] = v
        n_drawn += v != 0
        total += v
        top = max(top, v)
    return n_drawn, total, top


@kernel
def stratified_bootstrap_counts(members, stratum_starts, seed, resample, out):
    """How often each sample is drawn in one stratified bootstrap resample.

    Each stratum keeps its size: its ``m`` members are drawn ``m`` times with replacement, each
    draw an exactly uniform pick (see :func:`drawn_samples`, whose draws these are).

    Parameters
    ----------
    members : integer array of shape (n_drawable,)
        Sample positions grouped by stratum, ascending within each stratum.
    stratum_starts : intp array of shape (n_strata + 1,)
        Stratum ``c`` is ``members[stratum_starts[c]:stratum_starts[c + 1]]``.
    seed : uint64
    resample : int
        The resample's number (its random stream).
    out : float64 array of shape (n,), overwritten with the counts
    """
    tally = np.empty(stratum_starts[-1], np.int64)
    draw_strata(stratum_starts, seed, resample, tally)
    _counts_in_order(members, stratum_starts, tally, out)


@kernel
def permuted_codes(codes, seed, permutation, out, labels=None):
    """``codes`` with its non-negative entries shuffled among themselves (Fisher-Yates), or, given
    ``labels``, within each class of ``labels`` (:func:`permuted_codes_within`).

    Samples without a group (negative code) keep their place; the group sizes are unchanged.

    Parameters
    ----------
    codes : integer array of shape (n,)
    seed : uint64
    permutation : int
        The permutation's number (its random stream).
    out : array of shape (n,), the dtype of ``codes``, overwritten
    labels : array of shape (n,), optional
        Nonzero for the positive class.
    """
    n = codes.shape[0]
    present = np.empty(n, np.intp)
    m0 = 0
    for i in range(n):  # the samples with a group (given labels, the negatives first)
        out[i] = codes[i]
        if codes[i] >= 0 and not _positive(labels, i):
            present[m0] = i
            m0 += 1
    m = m0
    if labels is not None:  # then the positives
        for i in range(n):
            if codes[i] >= 0 and labels[i] != 0:
                present[m] = i
                m += 1
    stream = np.uint64(permutation)
    _shuffle_among(present, 0, m0, seed, stream, out)
    _shuffle_among(present, m0, m, seed, stream, out)


def permuted_codes_within(codes, labels, seed, permutation, out):
    """``codes`` with its non-negative entries shuffled within each class of ``labels`` (Fisher-Yates):
    :func:`permuted_codes` given ``labels``.

    Every group keeps its numbers of positives and negatives: the permutations of the null "the
    group does not change the scores given the label". Samples without a group (negative code)
    keep their place.
    """
    permuted_codes(codes, seed, permutation, out, labels)


def _positive(labels, i):
    """Whether sample ``i`` is of the positive class (never without labels)."""
    return labels is not None and labels[i] != 0


@overload(_positive, inline="always")
def _positive_of(labels, i):
    if labels is None or isinstance(labels, (types.NoneType, types.Omitted)):
        return lambda labels, i: False
    return lambda labels, i: labels[i] != 0


@inline_kernel
def _shuffle_among(present, start, end, seed, stream, out):
    # Fisher-Yates of out at positions present[start:end]; random numbers at counters start + t.
    for t in range(end - start - 1, 0, -1):
        j = int(_uniform(seed, stream, start + t) * (t + 1))
        if j > t:
            j = t
        a = present[start + t]
        b = present[start + j]
        out[a], out[b] = out[b], out[a]


@kernel
def drawn_samples(members, stratum_starts, seed, resample, scores, labels, codes, terms, weights,
                  out_scores, out_labels, out_codes, out_terms, out_weights, tally, counts, limit):
    """The samples one stratified bootstrap resample draws, in their order, with their draw counts.

    The draws are those of :func:`stratified_bootstrap_counts`; the drawn samples are then copied
    out (a filter that keeps their order: a sorted input stays sorted), each with its count as
    weight. The counts are kept in the type of ``tally`` and ``counts``: a narrow one (uint8) keeps
    the random increments in cache; when a count does not fit (it wrapped, or passed ``limit``)
    the call returns -1, to be repeated with wider ones.

    Parameters
    ----------
    members, stratum_starts, seed, resample : as in :func:`stratified_bootstrap_counts`
    scores, labels, terms : arrays of shape (n,)
        Copied out for the drawn samples (``terms``: per-sample log-loss terms).
    codes : integer array of shape (K, n), K >= 1
        Code rows copied out for the drawn samples.
    weights : float64 array of shape (n,) or None
        Sample weights, multiplied into the counts.
    out_scores, out_labels, out_terms, out_weights : arrays of shape (>= n,)
    out_codes : array of shape (>= K * n,)
        Row ``r`` of the drawn codes goes to ``out_codes[r * m:(r + 1) * m]`` (``m`` the returned
        length), so that ``out_codes[:K * m].reshape(K, m)`` is the (K, m) block.
    tally : integer array of shape (>= stratum_starts[-1],), scratch: the counts in stratum order
    counts : array of shape (n,), the dtype of ``tally``, overwritten with each sample's count
    limit : int
        The largest count accepted (at most the type's largest value).

    Returns
    -------
    int
        How many samples were drawn at least once (the filled length of the outputs), or -1 when a
        count did not fit (the ``out_`` arrays are then untouched).
    """
    draw_strata(stratum_starts, seed, resample, tally)
    drawn, total, top = _counts_in_order(members, stratum_starts, tally, counts)
    if total != stratum_starts[-1] or top > limit:  # a count that wrapped shows in the total
        return -1
    m = 0
    for i in range(counts.shape[0]):
        if m == drawn:  # every drawn sample is out: the rest are not drawn
            break
        k = counts[i]
        # Written whatever k is, without a branch: a sample not drawn is overwritten by the next
        # drawn one (m < drawn here).
        out_scores[m] = scores[i]
        out_labels[m] = labels[i]
        out_terms[m] = terms[i]
        out_codes[m] = codes[0, i]  # row 0 outside the loop: twice as fast for the usual one row
        for row in range(1, codes.shape[0]):
            out_codes[row * drawn + m] = codes[row, i]
        out_weights[m] = k * weight_of(weights, i)
        m += k != 0
    return drawn
