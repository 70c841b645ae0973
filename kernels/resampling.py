"""Resampling kernels: stratified bootstrap counts, the samples a resample draws, and permuted group
codes.

Random numbers come from a counter-based generator (SplitMix64 of seed, stream and index), so a
resample depends only on the seed and its own number: the same intervals whatever the number of
threads that compute resamples side by side.
"""
import numpy as np

from ._config import inline_kernel, kernel
from ._weights import weight_of


@inline_kernel
def _mix(x):
    # SplitMix64 finalizer (Steele, Lea and Flood 2014): a bijection of uint64 with good avalanche.
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


@inline_kernel
def _uniform(seed, stream, index):
    # A float in [0, 1) from (seed, stream, index); 53 random bits. The stream's key does not
    # depend on the index (the compiler computes it once per loop), so each number costs one
    # SplitMix64 step: the finalizer of key + index * golden ratio.
    key = _mix(seed ^ _mix(np.uint64(stream) * np.uint64(0x9E3779B97F4A7C15)))
    x = _mix(key + np.uint64(index) * np.uint64(0x9E3779B97F4A7C15))
    return float(x >> np.uint64(11)) * (1.0 / 9007199254740992.0)


@kernel
def stratified_bootstrap_counts(members, stratum_starts, seed, resample, out):
    """How often each sample is drawn in one stratified bootstrap resample.

    Each stratum keeps its size: its ``m`` members are drawn ``m`` times with replacement.

    Parameters
    ----------
    members : intp array of shape (n,)
        Sample positions grouped by stratum, ascending within each stratum.
    stratum_starts : intp array of shape (n_strata + 1,)
        Stratum ``c`` is ``members[stratum_starts[c]:stratum_starts[c + 1]]``.
    seed : uint64
    resample : int
        The resample's number (its random stream).
    out : float64 array of shape (n,), overwritten with the counts
    """
    stream = np.uint64(resample)
    largest = 0
    for c in range(stratum_starts.shape[0] - 1):
        largest = max(largest, stratum_starts[c + 1] - stratum_starts[c])
    tally = np.empty(largest, np.int32)  # draws per member of the current stratum
    for c in range(stratum_starts.shape[0] - 1):
        start = stratum_starts[c]
        size = stratum_starts[c + 1] - start
        tally[:size] = 0
        for t in range(size):
            pick = int(_uniform(seed, stream, start + t) * size)
            if pick >= size:  # guard against rounding at the top of [0, 1)
                pick = size - 1
            tally[pick] += 1
        for j in range(size):  # members ascend: the writes stream through `out`
            out[members[start + j]] = tally[j]


@kernel
def permuted_codes(codes, seed, permutation, out):
    """``codes`` with its non-negative entries shuffled among themselves (Fisher-Yates).

    Samples without a group (negative code) keep their place; the group sizes are unchanged.

    Parameters
    ----------
    codes : integer array of shape (n,)
    seed : uint64
    permutation : int
        The permutation's number (its random stream).
    out : array of shape (n,), the dtype of ``codes``, overwritten
    """
    n = codes.shape[0]
    present = np.empty(n, np.intp)
    m = 0
    for i in range(n):
        out[i] = codes[i]
        if codes[i] >= 0:
            present[m] = i
            m += 1
    stream = np.uint64(permutation)
    for t in range(m - 1, 0, -1):
        j = int(_uniform(seed, stream, t) * (t + 1))
        if j > t:
            j = t
        a = present[t]
        b = present[j]
        out[a], out[b] = out[b], out[a]


@kernel
def drawn_samples(position, stratum_starts, seed, resample, scores, labels, codes, terms, weights,
                  out_scores, out_labels, out_codes, out_terms, out_weights, tally):
    """The samples one stratified bootstrap resample draws, in their order, with their draw counts.

    The draws are those of :func:`stratified_bootstrap_counts` with ``members`` listing each
    stratum's samples in ascending order; the drawn samples are then copied out (a filter that
    keeps their order: a sorted input stays sorted), each with its count as weight.

    Parameters
    ----------
    position : integer array of shape (n,)
        Sample ``i``'s place among the strata: ``stratum_starts[c] + k`` for the ``k``-th sample
        of stratum ``c`` (in ascending order); negative for a sample never drawn.
    stratum_starts : intp array of shape (n_strata + 1,)
    seed : uint64
    resample : int
        The resample's number (its random stream).
    scores, labels, terms : arrays of shape (n,)
        Copied out for the drawn samples (``terms``: per-sample log-loss terms).
    codes : integer array of shape (K, n)
        Code rows copied out for the drawn samples.
    weights : float64 array of shape (n,) or None
        Sample weights, multiplied into the counts.
    out_scores, out_labels, out_terms, out_weights : arrays of shape (>= drawn,)
    out_codes : array of shape (K, >= drawn)
    tally : int32 array of shape (>= stratum_starts[-1],), scratch (reused, so no page is faulted
        in afresh for every resample)

    Returns
    -------
    int
        How many samples were drawn at least once (the filled length of the outputs).
    """
    stream = np.uint64(resample)
    tally[:stratum_starts[-1]] = 0
    for c in range(stratum_starts.shape[0] - 1):
        start = stratum_starts[c]
        size = stratum_starts[c + 1] - start
        for t in range(size):
            pick = int(_uniform(seed, stream, start + t) * size)
            if pick >= size:
                pick = size - 1
            tally[start + pick] += 1
    m = 0
    for i in range(position.shape[0]):
        p = position[i]
        if p < 0:
            continue
        k = tally[p]
        if k == 0:
            continue
        out_scores[m] = scores[i]
        out_labels[m] = labels[i]
        out_terms[m] = terms[i]
        for row in range(codes.shape[0]):
            out_codes[row, m] = codes[row, i]
        out_weights[m] = k * weight_of(weights, i)
        m += 1
    return m
