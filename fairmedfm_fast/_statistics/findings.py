"""What a classification report concludes about its gaps: which groups define them, their simultaneous
intervals, their significance, the small groups, and the settings the report was made with.

Kept beside the oracle's numbers: nothing here changes a value of ``summary`` or ``by_group``.
"""
from __future__ import annotations

import math
import platform
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from .._registry import metrics as _metric_registry
from . import gap_interval as _gap_interval

#: A group with fewer positives or fewer negatives than this is flagged ``small_group``. With fewer
#: than 10 samples of a class one sample moves the group's TPR (or TNR) by more than 0.1 and its AUC
#: by more than 0.1 as well (an AUC is a mean over the pairs of a positive and a negative), and the
#: bootstrap standard error of the AUC exceeds about 0.1: the group can define a gap by chance alone.
SMALL_CLASS = 10

def gap_reads() -> dict[str, tuple[str, ...]]:
    """Summary columns that are gaps between groups (registered metrics' too), and the per-group keys
    they read."""
    return {summary.column: summary.reads for summary in _metric_registry.REGISTRY.summaries
            if summary.kind == "gap" or summary.column == "eod"}


def within_label() -> tuple[str, ...]:
    """Gaps whose permutation test shuffles the groups within each class: those of metrics that
    depend on the scores given the label (``PerGroup.given_label``: AUC, TPR, TNR, FPR, FNR); the
    others shuffle the groups among all samples."""
    return tuple(column for column, reads in gap_reads().items()
                 if all(_metric_registry.given_label(key) for key in reads))


def small_groups(result) -> dict[int, tuple[float, float]]:
    """Evaluable groups with fewer than SMALL_CLASS positives or negatives: index -> (positives, negatives)."""
    if not result.rows:
        return {}
    where = {key: j for j, key in enumerate(result.keys)}
    out = {}
    for i in result.valid:
        row = result.rows[i]
        positives, negatives = row[where["tp"]] + row[where["fn"]], row[where["tn"]] + row[where["fp"]]
        if min(positives, negatives) < SMALL_CLASS:
            out[i] = (positives, negatives)
    return out


#: Small groups named in an attribute's warning; the rest are counted (by_group["small_group"] has all).
NAMED_SMALL = 5


def small_group_warnings(result, flagged: Mapping[int, tuple[float, float]]) -> list[str]:
    """One warning per attribute (thousands of scanners must not give thousands of lines): the first
    :data:`NAMED_SMALL` small groups with their class counts, and how many more there are."""
    if not flagged:
        return []
    named = [f"{result.groups[i]} ({_count(p)} positives, {_count(n)} negatives)"
             for i, (p, n) in list(flagged.items())[:NAMED_SMALL]]
    more = len(flagged) - len(named)
    listed = ", ".join(named) + (f" and {more} more" if more else "")
    which = "group has" if len(flagged) == 1 else f"{len(flagged)} groups have"
    return [f"{result.name}: small_group, {which} fewer than {SMALL_CLASS} positives or negatives: {listed}; "
            "their AUC, TPR and TNR rest on few samples, and a gap they define may be chance "
            "(by_group['small_group'] flags them)"]


def _count(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:.4g}"


def _observed(result, key: str) -> np.ndarray:
    j = result.keys.index(key)
    return np.array([result.rows[i][j] for i in result.valid], np.float64)


def simultaneous_gaps(results, replicates: Mapping, summary, level: float) -> None:
    """Replace the percentile bounds of every gap column of ``summary`` (the ``ci["summary"]`` frame,
    in place) by the simultaneous interval over the pairs of groups (see :mod:`._gap_interval`),
    from the bootstrap replicates that ``evaluate`` kept."""
    for result in results:
        if len(result.valid) < 2 or result.name not in summary.index:
            continue
        small = np.isin(result.valid, list(small_groups(result)))  # the same for every gap column
        for column, reads in gap_reads().items():
            if f"{column}_lo" not in summary.columns or not all(("boot", result.name, k) in replicates for k in reads):
                continue
            observed = np.stack([_observed(result, key) for key in reads])
            draws = np.stack([replicates[("boot", result.name, key)] for key in reads], axis=1)
            # A small group's resamples barely move its AUC, TPR or TNR (one positive: every resample
            # that defines them gives the same value), so its pairs bound nothing: the gap may be as
            # large as the metric allows.
            left_out = np.stack([small & _metric_registry.given_label(key) for key in reads])
            d, se, c = _gap_interval.from_replicates(observed, draws, level, left_out)
            bounds = [_gap_interval.simultaneous_interval(d[m], se[m], c) for m in range(len(reads))]
            bounds = [(0.0 if math.isnan(lo) else lo, 1.0) if out.any() else (lo, hi)
                      for (lo, hi), out in zip(bounds, left_out)]
            # A gap of values within [0, 1] (every metric but the cross-entropy) is at most 1.
            bounds = [(lo, hi if key == "bce" else min(hi, 1.0)) for (lo, hi), key in zip(bounds, reads)]
            if column == "eod":  # 1 - (TPR gap + TNR gap) / 2, from the two gaps' joint intervals
                lo, hi = 1 - (bounds[0][1] + bounds[1][1]) / 2, 1 - (bounds[0][0] + bounds[1][0]) / 2
            else:
                lo, hi = bounds[0]
            summary.loc[result.name, [f"{column}_lo", f"{column}_hi"]] = [lo, hi]


def permutation_warning(p_values, n_permutations: int, p_adjust: str | None, alpha: float) -> str | None:
    """A warning when no p-value can fall below ``alpha`` (after the adjustment): the smallest
    reachable p-value is 1 / (n_permutations + 1), times the number of tests under the adjustment."""
    tests = int(np.isfinite(p_values.to_numpy(dtype=np.float64)).sum())
    if tests == 0:
        return None
    factor = tests if p_adjust else 1
    if factor / (n_permutations + 1) <= alpha:
        return None
    needed = math.ceil(factor / alpha) - 1
    how = f"after the {p_adjust} adjustment over {tests} tests" if p_adjust else "at all"
    return (f"n_permutations={n_permutations} is too few: the smallest p-value it can give is "
            f"1/{n_permutations + 1}, so no gap can be significant at {alpha:g} {how}; use "
            f"n_permutations={needed} or more")


def _gap_bounds(ci: dict | None, column: str):
    """The summary table that holds ``column``'s simultaneous interval: the bootstrap's when ``n_boot``
    was given, else the analytic one's (``interval="analytic"``); None when neither has it."""
    for table in (ci or {}).get("summary"), ((ci or {}).get("analytic") or {}).get("summary"):
        if table is not None and f"{column}_lo" in table.columns:
            return table
    return None


def gap_frame(results, flagged: Mapping[str, Mapping[int, Any]], ci: dict | None, p_values, p_adjust: str | None,
              alpha: float):
    """One row per (attribute, gap column) and ``worst-auc``: the value, the groups that define it, its
    interval, p-value and whether it is significant (permutation p-value, adjusted when asked, < alpha)."""
    import pandas as pd

    rows = []
    for result in results:
        if len(result.valid) < 2:
            continue
        small = flagged.get(result.name, {})
        gaps = gap_reads()
        columns = ["worst-auc", *(column for column in gaps if column in result.summary)]
        for column in columns:
            reads = gaps.get(column, ("auc",))
            values = _observed(result, reads[0])
            top, bottom = (result.valid[i] for i in _extremes(values))
            row = {"attribute": result.name, "column": column, "value": float(result.summary[column]),
                   "metric": reads[0], "high_group": result.groups[top], "high": float(values.max()),
                   "low_group": result.groups[bottom], "low": float(values.min())}
            if column == "worst-auc":
                row["high_group"], row["high"] = None, math.nan
            defining = [bottom] if column == "worst-auc" else [top, bottom]
            row["small_group"] = any(i in small for i in defining)
            row["lo"] = row["hi"] = math.nan
            bounds = _gap_bounds(ci, column)
            if bounds is not None and result.name in bounds.index:
                row["lo"] = float(bounds.loc[result.name, f"{column}_lo"])
                row["hi"] = float(bounds.loc[result.name, f"{column}_hi"])
            row["p_value"] = row["p_adjusted"] = math.nan
            row["significant"] = None
            if p_values is not None and column in p_values.columns and result.name in p_values.index:
                p = float(p_values.loc[result.name, column])
                adjusted = float(p_values.loc[result.name, f"{column}_{p_adjust}"]) if p_adjust else p
                row["p_value"], row["p_adjusted"] = p, adjusted
                row["significant"] = None if math.isnan(adjusted) else bool(adjusted < alpha)
            rows.append(row)
    columns = ["attribute", "column", "value", "metric", "high_group", "high", "low_group", "low", "small_group",
               "lo", "hi", "p_value", "p_adjusted", "significant"]
    return pd.DataFrame(rows, columns=columns).set_index(["attribute", "column"])


#: Group values within this (relative) distance of the largest or smallest count as tied with it.
TIED = 1e-12


def _extremes(values: np.ndarray) -> tuple[int, int]:
    """Positions of the largest and the smallest value: the first in report order of those tied within
    :data:`TIED` (rounding differs between backends, e.g. Dask's partition sums: the groups named
    must not)."""
    if not np.isfinite(values).any():
        return int(np.argmax(values)), int(np.argmin(values))
    high, low = np.nanmax(values), np.nanmin(values)
    tied = TIED * max(1.0, abs(high), abs(low))
    return int(np.flatnonzero(values >= high - tied)[0]), int(np.flatnonzero(values <= low + tied)[0])


def versions() -> dict[str, str]:
    import numba

    from .._version import __version__

    return {"fairmedfm_fast": __version__, "numpy": np.__version__, "numba": numba.__version__,
            "python": platform.python_version()}


def settings(results, attributes: Sequence, *, threshold: float | None, random_state: Any, seed: Any, n_boot: int,
             n_permutations: int, ci: float, stratify: str | None, p_adjust: str | None, intersectional: bool,
             metrics: Sequence[str], n_samples: int) -> dict[str, Any]:
    """The settings of a classification report, for ``report.metadata``."""
    dropped = [{"attribute": result.name, "n": n_samples - result.n, "reason": "no value for this attribute"}
               for result in results if n_samples - result.n]
    return {
        "best_f1_threshold": None if threshold is not None else {r.name: float(r.threshold) for r in results},
        "random_state": random_state if random_state is None or isinstance(random_state, (int, np.integer))
        else type(random_state).__name__,
        "seed": None if seed is None else int(seed),
        "n_boot": n_boot, "n_permutations": n_permutations, "ci": float(ci), "stratify": stratify,
        "p_adjust": p_adjust,
        "bins": {a.name: list(a.edges) for a in attributes if getattr(a, "edges", None) is not None},
        "intersectional": bool(intersectional),
        "metrics": list(metrics),
        "small_group_below": SMALL_CLASS,
        "samples_dropped": dropped,
        "versions": versions(),
    }
