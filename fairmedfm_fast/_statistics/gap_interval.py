"""Intervals for a gap (largest minus smallest group value) from simultaneous intervals over all pairs.

The interval between the two groups that define the observed gap is not valid for the gap: which two
groups those are is itself chosen by the data, and with no true difference it rejects far more often
than its level says (12% of datasets with 3 groups, 37% with 6). Intervals for every pair
*simultaneously*, ``d_ij +- c se_ij`` with ``c`` the quantile of the largest ``|z|`` over the pairs,
all hold together with the stated probability; then every true ``|theta_i - theta_j|`` lies within
``[max(0, |d_ij| - c se_ij), |d_ij| + c se_ij]``, and so does their maximum, the true gap.

The critical value ``c`` comes from the pairs' joint normal distribution for the analytic intervals
(:func:`normal_critical_value`) and from the bootstrap replicates for the bootstrap ones
(:func:`from_replicates`); both feed :func:`simultaneous_interval`.
"""
from __future__ import annotations

import math
from functools import lru_cache
from statistics import NormalDist

import numpy as np

#: How the gap intervals are labelled in reports.
LABEL = ("simultaneous over the pairs of groups: [max(0, max(d - c se)), max(d + c se)] for a gap, which "
         "is biased upwards; it contains 0 exactly when no pair of groups differs")

#: Draws of the Monte-Carlo estimate of ``c``, and the largest number of pairs it handles (beyond,
#: Bonferroni's bound, which is conservative).
DRAWS = 10_000
MOST_PAIRS = 2_000


def simultaneous_interval(diffs, ses, c) -> tuple[float, float]:
    """The gap's interval from every pair's difference ``diffs`` and standard error ``ses`` at critical
    value ``c``: ``[max(0, max(|d| - c se)), max(|d| + c se)]``; it holds 0 exactly when no pair's
    interval excludes 0. NaN when no pair is defined."""
    d, s = np.abs(np.asarray(diffs, np.float64)), np.asarray(ses, np.float64)
    return pair_bounds(d - c * s, d + c * s)


def pair_bounds(lower, upper) -> tuple[float, float]:
    """The gap's interval from simultaneous intervals ``[lower, upper]`` of the pairs' differences (any
    sign, possibly asymmetric such as Newcombe's): the largest distance from 0 that each excludes, and
    the largest ``|difference|`` that each allows."""
    lower, upper = np.asarray(lower, np.float64), np.asarray(upper, np.float64)
    keep = np.isfinite(lower) & np.isfinite(upper)
    if not keep.any():
        return math.nan, math.nan
    lower, upper = lower[keep], upper[keep]
    excluded = np.maximum(np.maximum(lower, -upper), 0.0)  # |difference| is at least this
    return float(excluded.max()), float(np.maximum(np.abs(lower), np.abs(upper)).max())


def normal_critical_value(variances, level: float, seed: int = 0) -> tuple[float, str]:
    """``c``: the ``level`` quantile of ``max |z_ij|`` over the pairs of independent normal group
    estimates with these ``variances`` (``z_ij = (x_i - x_j) / sqrt(v_i + v_j)``; pairs that share a
    group are correlated), and how it was found: ``"exact"`` (one pair), ``"monte-carlo"``
    (:data:`DRAWS` draws of the joint normal from ``seed``, up to :data:`MOST_PAIRS` pairs) or
    ``"bonferroni"`` (the bound ``z_{1 - (1 - level) / (2 m)}`` over the ``m`` pairs: more pairs, or no
    pair of positive variance). Pairs whose two variances are 0 are left out of the maximum."""
    v = np.nan_to_num(np.asarray(variances, np.float64), nan=0.0)
    i, j = np.triu_indices(len(v), 1)
    if len(i) == 0:
        return math.nan, "none"
    random = v[i] + v[j] > 0
    if len(i) == 1 and random.all():  # one pair: the plain two-sided normal quantile
        return NormalDist().inv_cdf(0.5 + level / 2), "exact"
    if len(i) > MOST_PAIRS or not random.any():
        return NormalDist().inv_cdf(1 - (1 - level) / (2 * len(i))), "bonferroni"
    normals = _normals(len(v), seed) * np.sqrt(v)[:, None]  # row g: DRAWS draws of group g's estimate
    largest = np.zeros(DRAWS)
    step = np.empty(DRAWS)
    for a, b in zip(i[random].tolist(), j[random].tolist()):
        np.subtract(normals[a], normals[b], out=step)
        np.abs(step, out=step)
        step *= 1 / math.sqrt(v[a] + v[b])
        np.maximum(largest, step, out=largest)
    k = min(DRAWS - 1, math.ceil(level * DRAWS) - 1)  # the level quantile: the k-th smallest of the draws
    return float(np.partition(largest, k)[k]), "monte-carlo"


@lru_cache(maxsize=16)
def _normals(n_groups: int, seed: int) -> np.ndarray:
    """``n_groups`` rows of :data:`DRAWS` standard normal values from ``seed`` (the same every call:
    kept, read-only, for the next attribute or gap of as many groups)."""
    normals = np.random.default_rng(seed).standard_normal((n_groups, DRAWS))
    normals.flags.writeable = False
    return normals


def pair_differences(values) -> tuple[np.ndarray, np.ndarray]:
    """Every ordered pair (i, j), i != j, of the last axis: ``values[..., i] - values[..., j]``, and the
    pairs as an array (n_pairs, 2). Both orders are kept so that ``max(d + c se)`` is the largest
    ``|d| + c se``."""
    values = np.asarray(values, np.float64)
    g = values.shape[-1]
    i, j = np.nonzero(~np.eye(g, dtype=bool))
    return values[..., i] - values[..., j], np.stack([i, j], axis=1)


def from_replicates(observed, replicates, level: float, left_out=None) -> tuple[np.ndarray, np.ndarray, float]:
    """Pair differences ``d``, their bootstrap standard errors and the critical value ``c``.

    ``observed``: (n_metrics, n_groups) or (n_groups,) values; ``replicates``: the same with a first axis
    of resamples (NaN where a group is undefined in a resample). Metrics given together share one
    ``c``: the ``level`` quantile over the resamples of the largest ``|d_b - d| / se`` over every
    metric's pairs (the eod, which reads the TPR and the TNR gaps, needs them jointly), taken as the
    ``ceil(level (B + 1))``-th smallest of the ``B`` resamples' values. ``left_out`` (booleans shaped
    as ``observed``): groups whose resamples do not show their uncertainty (a group of one positive
    and one negative has the same AUC in every resample that defines it); their pairs get a NaN
    standard error and stay out of ``c``.
    """
    observed = np.atleast_2d(np.asarray(observed, np.float64))
    replicates = np.asarray(replicates, np.float64)
    if replicates.ndim == 2:
        replicates = replicates[:, None, :]
    d, pairs = pair_differences(observed)
    draws, _ = pair_differences(replicates)
    with np.errstate(invalid="ignore", divide="ignore"):
        se = np.nanstd(draws, axis=0, ddof=1) if len(draws) > 1 else np.full(d.shape, np.nan)
        if left_out is not None:
            left_out = np.atleast_2d(np.asarray(left_out, bool))
            se[left_out[:, pairs[:, 0]] | left_out[:, pairs[:, 1]]] = np.nan
        z = np.abs(draws - d) / se
    z = np.where(se == 0, 0.0, z)  # a pair that never moves is exactly known
    z = np.where(np.isnan(draws), np.nan, z)
    flat = z.reshape(len(z), -1)
    defined = ~np.isnan(flat).all(axis=1)
    if not defined.any():
        return d, se, float("nan")
    largest = np.sort(np.nanmax(flat[defined], axis=1))
    # The ceil(level (B + 1))-th smallest of the B resamples (the 191st of 200 at 95%), not the
    # interpolated quantile: that one is biased low, and with n_boot=200 the auc-gap interval of the
    # null simulation in tests/test_gap_significance.py excluded 0 in 32 of 400 datasets (28 with this).
    k = min(len(largest), math.ceil(level * (len(largest) + 1))) - 1
    return d, se, float(largest[k])
