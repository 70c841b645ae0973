"""What a classification report concludes about its gaps: which groups define them, their simultaneous
intervals, their significance, the small groups, and the settings the report was made with.

Kept beside the oracle's numbers: nothing here changes a value of ``summary`` or ``by_group``.
"""
from __future__ import annotations

import math
import platform
import warnings
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


def tested_groups(result, small: Mapping[int, Any] | None = None) -> list[int]:
    """The evaluable groups that are not small (``small``: :func:`small_groups` of ``result``): those
    whose gaps are tested and get intervals. A small group defines no gap that the report calls
    significant (one rule for the findings, ``report.gaps``, the intervals, the pairwise frame and
    the heat map)."""
    small = small_groups(result) if small is None else small
    return [i for i in result.valid if i not in small]


def simultaneous_gaps(results, replicates: Mapping, summary, level: float,
                      flagged: Mapping[str, Mapping[int, Any]] | None = None) -> None:
    """Replace the percentile bounds of every gap column of ``summary`` (the ``ci["summary"]`` frame,
    in place) by the simultaneous interval over the pairs of the groups that are not small (see
    :mod:`._gap_interval`), from the bootstrap replicates that ``evaluate`` kept: the interval of the
    gap among those groups (``report.gaps["value_not_small"]``; the summary's value when no group is
    small). A small group's resamples barely move its values (one positive: every resample that
    defines its AUC gives the same value), so they would bound nothing."""
    for result in results:
        if len(result.valid) < 2 or result.name not in summary.index:
            continue
        small = flagged[result.name] if flagged is not None and result.name in flagged else small_groups(result)
        keep = np.isin(result.valid, tested_groups(result, small))
        if not keep.all() and "worst-auc_lo" in summary.columns and ("boot", result.name, "auc") in replicates:
            # the worst AUC among the groups that are not small, as report.gaps gives it: percentiles
            worst = replicates[("boot", result.name, "auc")][:, keep]
            with np.errstate(invalid="ignore"), warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)  # every group undefined: NaN
                tail = (1 - level) / 2 * 100
                bounds = np.nanpercentile(np.min(worst, axis=1), [tail, 100 - tail]) if keep.sum() >= 2 \
                    else [math.nan, math.nan]
            summary.loc[result.name, ["worst-auc_lo", "worst-auc_hi"]] = [float(b) for b in bounds]
        for column, reads in gap_reads().items():
            if f"{column}_lo" not in summary.columns or not all(("boot", result.name, k) in replicates for k in reads):
                continue
            if keep.sum() < 2:
                summary.loc[result.name, [f"{column}_lo", f"{column}_hi"]] = [math.nan, math.nan]
                continue
            observed = np.stack([_observed(result, key)[keep] for key in reads])
            draws = np.stack([replicates[("boot", result.name, key)][:, keep] for key in reads], axis=1)
            d, se, c = _gap_interval.from_replicates(observed, draws, level)
            bounds = [_gap_interval.simultaneous_interval(d[m], se[m], c) for m in range(len(reads))]
            # A gap of values within [0, 1] (every metric but the cross-entropy) is at most 1.
            bounds = [(lo, hi if key == "bce" else min(hi, 1.0)) for (lo, hi), key in zip(bounds, reads)]
            if column == "eod":  # 1 - (TPR gap + TNR gap) / 2, from the two gaps' joint intervals
                lo, hi = 1 - (bounds[0][1] + bounds[1][1]) / 2, 1 - (bounds[0][0] + bounds[1][0]) / 2
            else:
                lo, hi = bounds[0]
            summary.loc[result.name, [f"{column}_lo", f"{column}_hi"]] = [lo, hi]


def tested_summary(result, small: Mapping[int, Any]) -> dict[str, float]:
    """The summary columns over the groups that are not small: ``result.summary`` itself when no
    evaluable group is small (fairmedfm's values, bit for bit), NaN columns with fewer than two."""
    tested = tested_groups(result, small)
    if len(tested) == len(result.valid):
        return dict(result.summary)
    if len(tested) < 2:
        return {}
    where = {key: j for j, key in enumerate(result.keys)}
    values = {key: [float(result.rows[i][j]) for i in tested] for key, j in where.items()}
    return _metric_registry.summarize({}, values)


def raw_p_values(p_values, p_adjust: str | None):
    """The columns of ``report.p_values`` that are raw p-values (not ``<column>_<p_adjust>``)."""
    if p_values is None or not p_adjust:
        return p_values
    return p_values[[c for c in p_values.columns if not str(c).endswith(f"_{p_adjust}")]]


def tests_in_family(p_values) -> int:
    """The tests of a family: the finite raw p-values of ``p_values``."""
    return int(np.isfinite(p_values.to_numpy(dtype=np.float64)).sum())


def at_level(p: float, alpha: float) -> bool:
    """A test rejects when its (adjusted) p-value is at most ``alpha`` (a permutation p-value
    ``(1 + k) / (1 + B)`` is at most ``alpha`` with probability at most ``alpha`` under the null), with
    room for the rounding of ``tests x p``."""
    return p <= alpha * (1 + 1e-9)


def reachable(tests: int, n_permutations: int, p_adjust: str | None, alpha: float) -> bool:
    """Whether a permutation p-value can reach ``alpha`` after the adjustment over ``tests`` tests: the
    smallest p-value is 1 / (n_permutations + 1), times ``tests`` under Holm or Bonferroni (the smallest
    adjusted p-value of both). True when the count is not known (``n_permutations`` 0)."""
    if not n_permutations or not tests:
        return True
    return at_level((tests if p_adjust else 1) / (n_permutations + 1), alpha)


def permutations_needed(tests: int, p_adjust: str | None, alpha: float) -> int:
    """The fewest permutations whose smallest adjusted p-value reaches ``alpha``."""
    return math.ceil((tests if p_adjust else 1) / alpha) - 1


def permutation_warning(p_values, n_permutations: int, p_adjust: str | None, alpha: float) -> str | None:
    """A warning when no p-value can fall below ``alpha`` (after the adjustment): the smallest
    reachable p-value is 1 / (n_permutations + 1), times the number of tests under the adjustment."""
    tests = tests_in_family(p_values)
    if reachable(tests, n_permutations, p_adjust, alpha):
        return None
    needed = permutations_needed(tests, p_adjust, alpha)
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


#: The columns of ``report.gaps``, in order.
GAP_COLUMNS = ("value", "metric", "high_group", "high", "low_group", "low", "lo", "hi", "p_value", "p_adjusted",
               "test_significant", "interval_excludes", "significant", "small_group", "not_estimable",
               "value_all_groups", "high_group_all", "low_group_all")


def gap_frame(results, flagged: Mapping[str, Mapping[int, Any]], ci: dict | None, p_values, p_adjust: str | None,
              alpha: float, n_permutations: int = 0):
    """One row per (attribute, gap column) and ``worst-auc``: the gap among the groups that are not
    small (``value``, the groups that define it, its interval and test), and fairmedfm's value over
    every evaluable group (``value_all_groups``, the summary's) with the groups behind it.

    ``test_significant``: the permutation p-value (adjusted over the report's gap tests when
    ``p_adjust``) is at most ``alpha``; None without permutations, or when ``n_permutations`` is too
    few for any p-value to reach ``alpha`` after the adjustment. ``interval_excludes``: the interval
    excludes the fair value (0 for a gap, 1 for eod); None without one. ``significant``: the test
    says so and the interval, when there is one, agrees. ``small_group``: a small group defines
    ``value_all_groups``, which is then not estimable (``not_estimable`` says why) and never called
    significant.
    """
    import pandas as pd

    raw = raw_p_values(p_values, p_adjust)
    testable = raw is None or reachable(tests_in_family(raw), n_permutations, p_adjust, alpha)
    rows = []
    for result in results:
        if len(result.valid) < 2:
            continue
        small = flagged.get(result.name, {})
        tested = tested_groups(result, small)
        summary = tested_summary(result, small)
        gaps = gap_reads()
        columns = ["worst-auc", *(column for column in gaps if column in result.summary)]
        for column in columns:
            reads = gaps.get(column, ("auc",))
            row = {"attribute": result.name, "column": column, "metric": reads[0],
                   **_defined_by(result, tested, reads[0], column, summary.get(column, math.nan))}
            everything = _defined_by(result, result.valid, reads[0], column, result.summary[column])
            row["value_all_groups"] = everything["value"]
            row["high_group_all"], row["low_group_all"] = everything["high_group"], everything["low_group"]
            defining = [i for i in everything.pop("_defining") if i in small]
            row.pop("_defining")
            row["small_group"] = bool(defining)
            row["not_estimable"] = "; ".join(f"{result.groups[i]} has {_classes(*small[i])}" for i in defining) \
                if defining else None
            row["lo"] = row["hi"] = math.nan
            bounds = _gap_bounds(ci, column)
            if bounds is not None and result.name in bounds.index:
                row["lo"] = float(bounds.loc[result.name, f"{column}_lo"])
                row["hi"] = float(bounds.loc[result.name, f"{column}_hi"])
            row["interval_excludes"] = _excludes(column, row["lo"], row["hi"])
            row["p_value"] = row["p_adjusted"] = math.nan
            row["test_significant"] = None
            if p_values is not None and column in p_values.columns and result.name in p_values.index:
                p = float(p_values.loc[result.name, column])
                adjusted = float(p_values.loc[result.name, f"{column}_{p_adjust}"]) if p_adjust else p
                row["p_value"], row["p_adjusted"] = p, adjusted
                if testable and not math.isnan(adjusted):
                    row["test_significant"] = at_level(adjusted, alpha)
            row["significant"] = row["test_significant"] and row["interval_excludes"] is not False \
                if row["test_significant"] is not None else None
            rows.append(row)
    return pd.DataFrame(rows, columns=["attribute", "column", *GAP_COLUMNS]).set_index(["attribute", "column"])


def _defined_by(result, groups: Sequence[int], key: str, column: str, value: float) -> dict[str, Any]:
    """``value`` of ``column`` over ``groups`` and the groups with the largest and smallest ``key``
    (for ``worst-auc``, the smallest only); ``_defining``: their indices."""
    out = {"value": float(value), "high_group": None, "high": math.nan, "low_group": None, "low": math.nan,
           "_defining": []}
    if len(groups) < 2:  # as the summary: a value over two groups or more
        out["value"] = math.nan
        return out
    j = result.keys.index(key)
    values = np.array([result.rows[i][j] for i in groups], np.float64)
    top, bottom = (groups[i] for i in _extremes(values))
    out.update(low_group=result.groups[bottom], low=float(values.min()), _defining=[bottom])
    if column != "worst-auc":
        out.update(high_group=result.groups[top], high=float(values.max()), _defining=[top, bottom])
    return out


def _classes(positives: float, negatives: float) -> str:
    return (f"{_count(positives)} positive{'s' * (positives != 1)} and "
            f"{_count(negatives)} negative{'s' * (negatives != 1)}")


def _excludes(column: str, lo: float, hi: float) -> bool | None:
    """Whether the interval [lo, hi] of ``column`` excludes its fair value (0 for a gap, 1 for eod);
    None without an interval (or for a column that is not a difference, such as ``worst-auc``)."""
    entry = _metric_registry.REGISTRY.summary.get(column)
    fair = _metric_registry.KINDS[entry.kind].fair if entry is not None else None
    if fair is None or not (math.isfinite(lo) and math.isfinite(hi)):
        return None
    return bool(lo > fair or hi < fair)


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
