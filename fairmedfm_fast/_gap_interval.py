"""Simultaneous intervals of a largest-minus-smallest gap.

A gap (the largest minus the smallest group value) is positive in every resample, so the percentile
interval of the gap itself never contains 0 and reads as significant. Instead, with ``d`` and
``se`` each pair's difference and its standard error and ``c`` the critical value of the largest
``|z|`` over the pairs, the interval ``[max(0, max(d - c se)), max(d + c se)]`` covers the true gap
as often as the pairs' joint intervals cover their differences, and contains 0 exactly when no
pair is shown to differ. It is an interval for a statistic biased upwards (the observed gap
exceeds the true one on average), so its lower end is the meaningful one.
"""
from __future__ import annotations

import numpy as np

__all__ = ["simultaneous_interval", "pair_differences", "from_replicates"]

#: How the gap intervals are labelled in reports.
LABEL = ("simultaneous over the pairs of groups: [max(0, max(d - c se)), max(d + c se)] for a gap, which "
         "is biased upwards; it contains 0 exactly when no pair of groups differs")


def simultaneous_interval(diffs, ses, c) -> tuple[float, float]:
    """``[max(0, max(d - c se)), max(d + c se)]`` over the pairs (NaN pairs are left out)."""
    d, s = np.asarray(diffs, np.float64), np.asarray(ses, np.float64)
    keep = ~(np.isnan(d) | np.isnan(s))
    if not keep.any() or not np.isfinite(c):
        return float("nan"), float("nan")
    d, s = d[keep], s[keep]
    return float(max(0.0, np.max(d - c * s))), float(np.max(d + c * s))


def pair_differences(values) -> tuple[np.ndarray, np.ndarray]:
    """Every ordered pair (i, j), i != j, of the last axis: ``values[..., i] - values[..., j]``, and the
    pairs as an array (n_pairs, 2). Both orders are kept so that ``max(d + c se)`` is the largest
    ``|d| + c se``."""
    values = np.asarray(values, np.float64)
    g = values.shape[-1]
    i, j = np.nonzero(~np.eye(g, dtype=bool))
    return values[..., i] - values[..., j], np.stack([i, j], axis=1)


def from_replicates(observed, replicates, level: float) -> tuple[np.ndarray, np.ndarray, float]:
    """Pair differences ``d``, their bootstrap standard errors and the critical value ``c``.

    ``observed``: (n_metrics, n_groups) or (n_groups,) values; ``replicates``: the same with a first axis
    of resamples (NaN where a group is undefined in a resample). Metrics given together share one
    ``c``: the ``level`` quantile over the resamples of the largest ``|d_b - d| / se`` over every
    metric's pairs (the eod, which reads the TPR and the TNR gaps, needs them jointly).
    """
    observed = np.atleast_2d(np.asarray(observed, np.float64))
    replicates = np.asarray(replicates, np.float64)
    if replicates.ndim == 2:
        replicates = replicates[:, None, :]
    d, _ = pair_differences(observed)
    draws, _ = pair_differences(replicates)
    with np.errstate(invalid="ignore", divide="ignore"):
        se = np.nanstd(draws, axis=0, ddof=1) if len(draws) > 1 else np.full(d.shape, np.nan)
        z = np.abs(draws - d) / se
    z = np.where(se == 0, 0.0, z)  # a pair that never moves is exactly known
    z = np.where(np.isnan(draws), np.nan, z)
    flat = z.reshape(len(z), -1)
    defined = ~np.isnan(flat).all(axis=1)
    if not defined.any():
        return d, se, float("nan")
    largest = np.nanmax(flat[defined], axis=1)
    return d, se, float(np.quantile(largest, level))
