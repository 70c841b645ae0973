"""Differences between every pair of groups of a report (:meth:`FairnessReport.pairwise`).

The FairMedFM gaps compare only the best and the worst group. An audit often needs every pair:
which sites differ from which. The point differences come from ``by_group``; the intervals and
p-values come from the report's bootstrap and permutation replicates when it kept them.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from . import analytic as _analytic

#: by_group columns that are counts or labels, not metrics.
NOT_METRICS = frozenset(("n", "skipped", "tn", "fp", "fn", "tp", "tn@best_f1", "fp@best_f1", "fn@best_f1",
                         "tp@best_f1"))


def metric_columns(by_group: pd.DataFrame) -> list[str]:
    return [c for c in by_group.columns if c not in NOT_METRICS and pd.api.types.is_numeric_dtype(by_group[c])]


def default_metric(task: str) -> str:
    return "auc" if task == "cls" else "mean_dice"


def pairwise(report: Any, metric: str | None = None) -> pd.DataFrame:
    """Per attribute, ``metric`` of each group minus ``metric`` of each other group.

    Returns a frame indexed by (attribute, group, other) (with a leading ``task`` level for a
    report of :func:`~fairmedfm_fast.evaluate_tasks`) holding ``difference`` = value of ``group``
    minus value of ``other``, over the groups that are not skipped (a group against itself gives
    0). ``.unstack()`` of one attribute's rows gives the matrix. With bootstrap replicates (``n_boot``) it adds
    ``difference_lo`` and ``difference_hi``, the percentile interval of the difference; with
    permutation replicates (``n_permutations``), ``p_value``, the share of permutations whose
    absolute difference is at least the observed one (the groups of the attribute exchangeable), and
    ``p_value_<p_adjust>`` adjusted over every distinct pair of the frame (its own family, apart
    from the report's gap tests). ``small_group``: one of the two groups is small
    (``by_group["small_group"]``); such a pair has no interval (NaN: resamples of so few positives or
    negatives cannot show the uncertainty) and no adjusted p-value, and is never called significant.
    """
    metric = default_metric(report.task) if metric is None else metric
    by_group = report.by_group
    available = metric_columns(by_group)
    if metric not in available:
        raise ValueError(f"metric={metric!r} is not a per-group metric of this report; use one of {available}")
    prefix_levels = list(by_group.index.names[:-2])  # ["task"] for a report of several tasks, else []
    rows: list[dict[str, Any]] = []
    keys = by_group.index.droplevel(-1).unique()
    for key in keys:
        table = by_group.loc[key]
        valid = table["skipped"].isna() if "skipped" in table.columns else np.ones(len(table), bool)
        values = table.loc[valid, metric]
        groups = list(values.index)
        numbers = values.to_numpy(dtype=np.float64)  # read once: .iloc per pair costs microseconds each
        small = table.loc[valid, "small_group"].to_numpy(dtype=bool) if "small_group" in table.columns else None
        prefix = key if isinstance(key, tuple) else (key,)
        boot, perm = (_replicates(report, kind, prefix, metric) for kind in ("boot", "perm"))
        analytic = _analytic.pair_columns(report, prefix, metric, groups) if report.task == "cls" else None
        level = (report.ci or {}).get("level", 0.95)
        for i, group in enumerate(groups):
            for j, other in enumerate(groups):  # the diagonal (0) too, so that unstack() is square
                row = {**dict(zip([*prefix_levels, "attribute"], prefix)), "group": group, "other": other,
                       "difference": float(numbers[i] - numbers[j])}
                either = small is not None and bool(small[i] or small[j])
                if boot is not None:
                    lo, hi = _interval(boot[:, i] - boot[:, j], level) if not either else (math.nan, math.nan)
                    row["difference_lo"], row["difference_hi"] = lo, hi
                if perm is not None:
                    row["p_value"] = _p_value(perm[:, i] - perm[:, j], row["difference"])
                if analytic is not None:
                    row.update((name, float(matrix[i, j])) for name, matrix in analytic.items())
                    if either:
                        row.update((name, math.nan) for name in analytic if "_lo" in name or "_hi" in name)
                if small is not None:
                    row["small_group"] = either
                rows.append(row)
    index = [*prefix_levels, "attribute", "group", "other"]
    if not rows:
        return pd.DataFrame(columns=["difference"], index=pd.MultiIndex.from_arrays([[]] * len(index), names=index))
    frame = pd.DataFrame(rows)
    method = _analytic_adjustment(report)
    if method and "p_value_analytic" in frame.columns:
        frame[f"p_value_analytic_{method}"] = _adjusted_pairs(frame, index, method, "p_value_analytic")
    method = _permutation_adjustment(report)
    if method and "p_value" in frame.columns:
        frame[f"p_value_{method}"] = _adjusted_pairs(frame, index, method, "p_value")
    return frame.drop(columns=index).set_axis(_ordered_index(frame, index))


def _analytic_adjustment(report: Any) -> str | None:
    """The ``p_adjust`` of the report's analytic intervals (of its first task for several tasks)."""
    tasks = getattr(report, "tasks", None)
    report = next(iter(tasks.values())) if tasks else report
    ci = report.ci if isinstance(report.ci, dict) else {}
    return (ci.get("analytic") or {}).get("p_adjust")


def _permutation_adjustment(report: Any) -> str | None:
    """The ``p_adjust`` of the report's permutation tests (of its first task for several tasks)."""
    tasks = getattr(report, "tasks", None)
    report = next(iter(tasks.values())) if tasks else report
    return (getattr(report, "metadata", None) or {}).get("p_adjust")


def _adjusted_pairs(frame: pd.DataFrame, index: list[str], method: str, column: str) -> np.ndarray:
    """``column`` (p-values) adjusted over every distinct pair of groups of the frame that are not small
    (each pair once, both of its orders given the adjusted value; NaN for a pair with a small group)."""
    from .._engine.resample import adjusted

    keys = [tuple(key[:-2]) + tuple(sorted((str(key[-2]), str(key[-1])))) for key in
            frame[index].itertuples(index=False, name=None)]
    first = {}
    for row, key in enumerate(keys):
        first.setdefault(key, row)
    rows = np.array(list(first.values()))
    p = frame[column].to_numpy(np.float64).copy()
    p[(frame["group"] == frame["other"]).to_numpy()] = np.nan  # a group against itself: nothing tested
    if "small_group" in frame.columns:
        p[frame["small_group"].to_numpy(dtype=bool)] = np.nan  # out of the family
    once = np.full(len(rows), np.nan)
    once[:] = adjusted(p[rows], method)
    by_key = dict(zip(first, once))
    return np.array([by_key[key] for key in keys])


def _ordered_index(frame: pd.DataFrame, names: list[str]) -> pd.MultiIndex:
    """The index with each level in report order (order of appearance), so that its codes are sorted
    and ``.loc`` on it is fast and warning-free (``set_index`` would sort the levels as text)."""
    levels, codes = [], []
    for name in names:
        values = frame[name].tolist()
        position = {value: i for i, value in enumerate(dict.fromkeys(values))}
        levels.append(list(position))
        codes.append([position[value] for value in values])
    return pd.MultiIndex(levels=levels, codes=codes, names=names)


def _replicates(report: Any, kind: str, prefix: tuple, metric: str) -> np.ndarray | None:
    """(resamples, valid groups) values of ``metric`` kept by the report, or None."""
    tasks = getattr(report, "tasks", None)
    if tasks:
        report, prefix = tasks[prefix[0]], prefix[1:]
    return (getattr(report, "replicates", None) or {}).get((kind, *prefix, metric))


def _interval(values: np.ndarray, level: float) -> tuple[float, float]:
    finite = values[np.isfinite(values)]
    if not len(finite):
        return math.nan, math.nan
    tail = (1 - level) / 2 * 100
    lo, hi = np.percentile(finite, [tail, 100 - tail])
    return float(lo), float(hi)


def _p_value(null: np.ndarray, observed: float) -> float:
    finite = null[np.isfinite(null)]
    if not len(finite) or not math.isfinite(observed):
        return math.nan
    # The observed split counts as one of the permutations (never 0).
    return float((1 + np.count_nonzero(np.abs(finite) >= abs(observed) - 1e-12)) / (1 + len(finite)))
