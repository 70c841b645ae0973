"""Analytic intervals of ``evaluate(..., interval="analytic")``: DeLong for AUC, Wilson and Newcombe
for rates, simultaneous intervals for the gaps.

- **AUC**: DeLong, DeLong and Clarke-Pearson (1988) standard errors, from the placement values of the
  engine's one sort (``kernels.delong``, O(n) after it); the interval is ``AUC +- z se`` on the plain
  scale, clipped to [0, 1] (as R's pROC reports it). Undefined (NaN, with a warning) for a group with
  one positive or one negative; 0 at AUC 0 or 1.
- **Accuracy, TPR, TNR** (at 0.5 and at the ``@best_f1`` threshold): Wilson score intervals from the
  confusion counts. At the best-F1 threshold they take the threshold as given, although it was
  chosen on the same data.
- **Pairs of groups** (disjoint samples: variances add): AUC differences with ``sqrt(v_i + v_j)`` and
  a z-test; rate differences with the unpooled standard error, the pooled two-proportion z-test and
  Newcombe's hybrid score interval (method 10 of Newcombe 1998).
- **Gaps** (largest minus smallest group): ``_gap_interval`` over all pairs of the groups that are not
  small at once (the gap of ``report.gaps["value"]``; a small group defines no gap interval).
"""
from __future__ import annotations

import math
from statistics import NormalDist
from typing import Any

import numpy as np

from .._engine import classification as _engine
from .._engine import placements as _placements
from .._registry import metrics as _metric_registry
from . import findings as _findings
from .gap_interval import normal_critical_value, pair_bounds, simultaneous_interval

BEST = _engine.BEST
#: Rates with Wilson intervals, at 0.5 and at the @best_f1 threshold (the registry entries marked so).
RATES = tuple(m.name for m in _metric_registry.REGISTRY.per_group if m.analytic == "wilson")
#: Per-group keys with analytic intervals (and pairwise analytic columns).
KEYS = (*(m.name for m in _metric_registry.REGISTRY.per_group if m.analytic == "delong"), *RATES,
        *(rate + BEST for rate in RATES))
#: Summary gaps with an analytic interval, and the per-group key each is the gap of. ``eod`` has none:
#: it mixes two gaps whose largest and smallest groups may differ.
GAPS = (("auc-gap", "auc"), ("acc-gap", "acc" + BEST), ("eo", "tpr" + BEST), ("tnr-gap", "tnr" + BEST))


def z_value(level: float) -> float:
    return NormalDist().inv_cdf(0.5 + level / 2)


def wilson(successes, n, z: float) -> tuple[np.ndarray, np.ndarray]:
    """Wilson's score interval of the proportion ``successes / n``."""
    x, n = np.asarray(successes, np.float64), np.asarray(n, np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        p = x / n
        shrink = 1 + z * z / n
        centre = (p + z * z / (2 * n)) / shrink
        half = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / shrink
    return centre - half, centre + half


def newcombe(x1, n1, x2, n2, z: float) -> tuple[np.ndarray, np.ndarray]:
    """Newcombe's hybrid score interval of ``x1 / n1 - x2 / n2`` (from the two Wilson intervals)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        p1, p2 = np.asarray(x1, np.float64) / n1, np.asarray(x2, np.float64) / n2
    l1, u1 = wilson(x1, n1, z)
    l2, u2 = wilson(x2, n2, z)
    d = p1 - p2
    return d - np.sqrt((p1 - l1) ** 2 + (u2 - p2) ** 2), d + np.sqrt((u1 - p1) ** 2 + (p2 - l2) ** 2)


def counts_of(values: dict[str, Any], key: str) -> tuple[Any, Any]:
    """Successes and trials of the rate ``key`` (``acc``, ``tpr``, ``tnr``, with or without
    ``@best_f1``) from the confusion counts in ``values`` (arrays or numbers)."""
    base, suffix = key.removesuffix(BEST), BEST if key.endswith(BEST) else ""
    tp, fp, tn, fn = (values[name + suffix] for name in ("tp", "fp", "tn", "fn"))
    if base == "acc":
        return tp + tn, tp + fp + tn + fn
    if base == "tpr":
        return tp, tp + fn
    return tn, tn + fp


def auc_variances(arranged: _engine.Arranged, results: list) -> dict[int, np.ndarray]:
    """DeLong's variance of every slot's AUC, for the attributes ``k`` with metrics (NaN where a
    slot has fewer than two positives or negatives)."""
    rows = [k for k, result in enumerate(results) if result.rows]
    return {k: variances_of(parts) for k, parts in _placements.placement_sums(arranged, rows).items()}


def variances_of(parts: list[np.ndarray]) -> np.ndarray:
    """DeLong's variance of each slot from its placement sums over consecutive ranges (or partitions
    of a distributed sort) of the sorted order."""
    return np.array([delong_variance(*slot) for slot in combined(parts)])


def combined(parts: list[np.ndarray]) -> list[tuple[int, int, int, int, int]]:
    """Per slot ``(P, N, sum a, sum a^2, sum b^2)`` as Python integers, from the sums of
    ``kernels.delong.placement_sums`` over consecutive ranges of the sorted order (or partitions of
    a distributed sort): a range's ``a`` values grow by twice the slot's negatives before it, its
    ``b`` values by twice the positives before it, and ``sum b = 2 P N - sum a`` within a range."""
    totals = [[0, 0, 0, 0, 0] for _ in range(len(parts[0]))]
    for part in parts:
        for total, (p, n, a, a2_high, a2_low, b2_high, b2_low) in zip(totals, part.tolist()):
            p_before, n_before = total[0], total[1]
            a2 = (a2_high << 31) + a2_low  # kernels.delong.LOW_BITS
            b2 = (b2_high << 31) + b2_low
            b = 2 * p * n - a
            total[3] += a2 + 4 * n_before * a + 4 * n_before * n_before * p
            total[4] += b2 + 4 * p_before * b + 4 * p_before * p_before * n
            total[2] += a + 2 * n_before * p
            total[0] += p
            total[1] += n
    return [tuple(total) for total in totals]


def delong_variance(positives: int, negatives: int, sum_a: int, sum_a2: int, sum_b2: int) -> float:
    """``S10 / P + S01 / N`` from one slot's sums (:func:`combined`), in exact integers until the
    last division.

    With ``a`` a positive's ``2 n_below + n_tied``, its placement value's deviation from the AUC times
    ``2 P N`` is ``P a - U2`` (``U2 = sum a``), so ``(P - 1) S10 (2 P N)^2 = P (P sum a^2 - U2^2)``;
    with ``b`` a negative's ``2 p_below + p_tied``, its deviation times ``2 P N`` is ``N (2 P - b) -
    U2``, and ``sum (2 P - b) = U2`` gives ``(N - 1) S01 (2 P N)^2 = N (N sum (2 P - b)^2 - U2^2)``.
    """
    p, n = positives, negatives
    if p < 2 or n < 2:
        return math.nan
    sum_b = 2 * p * n - sum_a
    c2 = 4 * p * p * n - 4 * p * sum_b + sum_b2  # sum over negatives of (2 P - b)^2
    spread10 = p * sum_a2 - sum_a * sum_a  # (P - 1) S10 (2 P N)^2 / P
    spread01 = n * c2 - sum_a * sum_a
    return (spread10 / (p - 1) + spread01 / (n - 1)) / float(2 * p * n) ** 2


def _columns(result, keys) -> dict[str, np.ndarray]:
    """The slots' values of ``keys`` from an attribute's rows."""
    position = {key: j for j, key in enumerate(result.keys)}
    return {key: np.array([row[position[key]] for row in result.rows]) for key in keys}


def intervals(arranged: _engine.Arranged, results: list, level: float, warnings: list[str],
              p_adjust: str | None) -> dict[str, Any]:
    """``report.ci["analytic"]`` of :func:`~fairmedfm_fast.evaluate` (see :func:`from_variances`)."""
    return from_variances(auc_variances(arranged, results), results, level, warnings, p_adjust)


def from_variances(variances: dict[int, np.ndarray], results: list, level: float, warnings: list[str],
                   p_adjust: str | None) -> dict[str, Any]:
    """``report.ci["analytic"]`` from each attribute's slots' AUC variances: ``by_group``
    (``auc_se``, then ``<key>_lo`` / ``<key>_hi`` of each of :data:`KEYS`) and ``summary`` (per
    attribute, ``<gap>_lo``, ``<gap>_hi`` and the critical value ``<gap>_c`` of each of
    :data:`GAPS`, and the TNR gap itself), with ``level``, ``p_adjust`` and how each critical value
    was found (``"critical"``: attribute -> gap -> method)."""
    import pandas as pd

    z = z_value(level)
    group_rows, summary_rows, methods = [], {}, {}
    for k, result in enumerate(results):
        g = len(result.groups)
        valid = np.zeros(g, bool)
        valid[result.valid] = True
        columns: dict[str, np.ndarray] = {}
        if k in variances:
            values = _columns(result, ("auc", *(c + s for c in ("tp", "fp", "tn", "fn") for s in ("", BEST))))
            variance = variances[k][:g]
            se = np.sqrt(variance)
            auc = values["auc"][:g]
            columns["auc_se"] = se
            columns["auc_lo"], columns["auc_hi"] = np.clip(auc - z * se, 0, 1), np.clip(auc + z * se, 0, 1)
            for key in KEYS[1:]:
                x, n = counts_of(values, key)
                columns[f"{key}_lo"], columns[f"{key}_hi"] = wilson(x[:g], n[:g], z)
            for i in result.valid:
                if math.isnan(variance[i]):
                    p, n = int(values["tp"][i] + values["fn"][i]), int(values["tn"][i] + values["fp"][i])
                    warnings.append(f"{result.name}={result.groups[i]}: no DeLong standard error of its AUC "
                                    f"(it has {p} positive{'s' * (p != 1)} and {n} negative{'s' * (n != 1)}; "
                                    "the variance needs two of each), so its analytic AUC interval is NaN; "
                                    "as a small group it takes no part in the gap intervals")
            tested = _findings.tested_groups(result)  # small groups define no gap interval (report.gaps)
            summary_rows[result.name], methods[result.name] = _gap_intervals(values, variance, tested, level)
            # DeLong's normal interval needs many positives and negatives: a small group's is NaN (at an
            # AUC of 0 or 1 it would have width 0); its Wilson intervals stay (they hold at any size).
            small = np.isin(np.arange(g), [i for i in result.valid if i not in tested])
            if small.any():
                columns["auc_lo"], columns["auc_hi"] = (np.where(small, math.nan, columns[side])
                                                        for side in ("auc_lo", "auc_hi"))
        else:
            summary_rows[result.name] = {}
        for i, group in enumerate(result.groups):
            row = {"attribute": result.name, "group": group}
            for name, column in columns.items():
                row[name] = float(column[i]) if valid[i] else math.nan
            group_rows.append(row)
    names = ["auc_se", *(f"{key}_{side}" for key in KEYS for side in ("lo", "hi"))]
    by_group = pd.DataFrame(group_rows, columns=["attribute", "group", *names]).set_index(["attribute", "group"])
    summary = pd.DataFrame.from_dict(summary_rows, orient="index", columns=[
        "tnr-gap", *(f"{gap}_{part}" for gap, _ in GAPS for part in ("lo", "hi", "c"))])
    summary.index.name = "attribute"
    return {"level": level, "by_group": by_group, "summary": summary, "p_adjust": p_adjust, "critical": methods}


def _gap_intervals(values: dict[str, np.ndarray], variance: np.ndarray, valid: list[int], level: float
                   ) -> tuple[dict[str, float], dict[str, str]]:
    """One attribute's gap intervals (over its evaluable groups) and how each ``c`` was found."""
    row: dict[str, float] = {}
    methods: dict[str, str] = {}
    if len(valid) < 2:
        return row, methods
    index = np.asarray(valid)
    i, j = np.triu_indices(len(index), 1)
    tnr = values["tn" + BEST][index] / (values["tn" + BEST][index] + values["fp" + BEST][index])
    row["tnr-gap"] = float(tnr.max() - tnr.min())
    for gap, key in GAPS:
        if key == "auc":
            v = variance[index]
            c, methods[gap] = normal_critical_value(v, level)
            if np.isnan(v).any():
                lo = hi = math.nan
            else:
                auc = values["auc"][index]
                lo, hi = simultaneous_interval(auc[i] - auc[j], np.sqrt(v[i] + v[j]), c)
        else:
            x, n = (np.asarray(a, np.float64)[index] for a in counts_of(values, key))
            p = x / n
            c, methods[gap] = normal_critical_value(p * (1 - p) / n, level)
            lo, hi = pair_bounds(*newcombe(x[i], n[i], x[j], n[j], c))
        row[f"{gap}_lo"], row[f"{gap}_hi"], row[f"{gap}_c"] = lo, hi, c
    return row, methods


def pair_columns(report: Any, attribute: tuple, metric: str, groups: list) -> dict[str, np.ndarray] | None:
    """For :meth:`FairnessReport.pairwise`: ``(groups x groups)`` matrices ``difference_se``,
    ``p_value_analytic``, ``difference_lo_analytic`` and ``difference_hi_analytic`` of ``metric``
    (one of :data:`KEYS`) between the named groups of ``attribute`` (its index prefix in
    ``by_group``); None when the report has no analytic intervals or the metric none."""
    tasks = getattr(report, "tasks", None)
    if tasks:
        report, attribute = tasks[attribute[0]], attribute[1:]
    analytic = (report.ci or {}).get("analytic") if isinstance(report.ci, dict) else None
    if analytic is None or metric not in KEYS:
        return None
    z = z_value(analytic["level"])
    key = attribute[0] if len(attribute) == 1 else attribute
    table = report.by_group.loc[key].loc[groups]
    estimate = table[metric].to_numpy(np.float64)
    d = estimate[:, None] - estimate[None, :]
    with np.errstate(divide="ignore", invalid="ignore"):
        if metric == "auc":
            se = analytic["by_group"].loc[key].loc[groups, "auc_se"].to_numpy(np.float64)
            se = np.sqrt(se[:, None] ** 2 + se[None, :] ** 2)
            lo, hi = d - z * se, d + z * se
            test = se
        else:
            x, n = (np.asarray(a, np.float64) for a in counts_of({c: table[c].to_numpy() for c in table.columns},
                                                                  metric))
            p = x / n
            se = np.sqrt((p * (1 - p) / n)[:, None] + (p * (1 - p) / n)[None, :])
            lo, hi = newcombe(x[:, None], n[:, None], x[None, :], n[None, :], z)
            pooled = (x[:, None] + x[None, :]) / (n[:, None] + n[None, :])
            test = np.sqrt(pooled * (1 - pooled) * (1 / n[:, None] + 1 / n[None, :]))
        p_value = np.where(test > 0, np.vectorize(math.erfc)(np.abs(d / test) / math.sqrt(2)),
                           np.where(d == 0, 1.0, 0.0))
    p_value[np.isnan(d) | np.isnan(test)] = np.nan
    np.fill_diagonal(p_value, np.nan)  # a group against itself: difference 0, nothing to test
    for matrix in (se, lo, hi):
        np.fill_diagonal(matrix, 0.0)
        matrix[np.isnan(d)] = np.nan  # a group without a value (an attribute with no metrics)
    return {"difference_se": se, "p_value_analytic": p_value, "difference_lo_analytic": lo,
            "difference_hi_analytic": hi}
