"""``report.ci`` and ``report.p_values`` of a classification report: bootstrap intervals and
permutation p-values of every group and summary column, from the sorted samples."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .._engine import classification as _engine
from .._engine import resample as _resample
from .._registry import metrics as _metric_registry
from .._report.assembly import with_gaps
from .._report.frame import FairnessReport
from .._statistics import analytic as _analytic
from .._statistics import findings as _findings
from .._statistics import gap_interval as _gap_interval
from .._util import progress as _progress
from .assess import AttributeResult, summarize


def with_uncertainty(report: FairnessReport, results: list[AttributeResult], flagged: dict, samples, analytic_samples,
                     *, n_boot: int, ci: float, n_permutations: int, random_state: Any, threshold: float | None,
                     stratify: str | None, p_adjust: str | None, progress: bool | None, warnings: list[str],
                     extra: Sequence[str], seed: Any, interval: str | None) -> None:
    """The intervals and p-values asked for, into an assembled report (in memory and the accumulator):
    bootstrap and permutations from ``samples`` (:func:`resample_into`), the analytic intervals from
    ``analytic_samples`` (one row per sample), then the report's gaps with them."""
    resample_into(report, samples, results, n_boot, ci, n_permutations, random_state, threshold, stratify,
                  p_adjust, progress, warnings, extra, seed=seed)
    if interval == "analytic":
        samples = analytic_samples() if callable(analytic_samples) else analytic_samples
        report.ci = {"level": float(ci), "n_boot": n_boot, **(report.ci or {}),
                     "analytic": _analytic.intervals(samples, results, float(ci), warnings, p_adjust)}
    with_gaps(report, results, flagged, p_adjust, float(ci))


def resample_into(report: FairnessReport, arranged: _engine.Arranged, results: list[AttributeResult], n_boot: int,
                  ci: float, n_permutations: int, random_state: Any, threshold: float | None, stratify: str | None,
                  p_adjust: str | None, progress: bool | None, warnings: list[str], extra: Sequence[str],
                  seed: Any = None) -> None:
    """``report.ci`` (with ``n_boot``) and ``report.p_values`` (with ``n_permutations``) from the
    samples ``arranged`` and the point estimates ``results``; the gaps' bounds are the simultaneous
    intervals, and a warning says when ``n_permutations`` is too few for the adjustment. ``seed``:
    the one drawn from ``random_state`` already (evaluate records it in the settings)."""
    if not (n_boot or n_permutations):
        return
    seed = _resample.seed_from(random_state) if seed is None else seed
    if n_boot:
        report.ci = _intervals(arranged, results, n_boot, float(ci), seed, threshold, stratify, progress,
                               warnings, report.replicates, extra)
        _findings.simultaneous_gaps(results, report.replicates, report.ci["summary"], float(ci))
        report.ci["gap_interval"] = _gap_interval.LABEL
    if n_permutations:
        report.p_values = _resample.with_adjusted(
            _p_values(arranged, results, n_permutations, seed, progress, report.replicates, extra), p_adjust)
        raw = report.p_values[[c for c in report.p_values.columns if not c.endswith(f"_{p_adjust}")]] \
            if p_adjust else report.p_values
        note = _findings.permutation_warning(raw, n_permutations, p_adjust, 1 - float(ci))
        if note:
            warnings.append(note)
            import warnings as python_warnings

            python_warnings.warn(note, UserWarning, stacklevel=4)  # the caller of evaluate (or result)


def _intervals(arranged, results: list[AttributeResult], n_boot: int, level: float, seed, threshold,
               stratify: str | None, progress: bool | None, warnings: list[str], replicates: dict,
               extra: Sequence[str] = ()) -> dict:
    import pandas as pd

    kept: dict = {}
    by_group, summaries, columns, empty = _resample.bootstrap(
        arranged, [r.name for r in results], [r.valid for r in results], summarize, n_boot, level, seed, threshold,
        stratify, progress, kept, extra)
    _keep(replicates, "boot", results, kept)
    keys = [*_resample.INTERVAL_METRICS, *(m + _engine.BEST for m in _resample.INTERVAL_METRICS), *extra]
    group_rows, summary_rows = [], {}
    for result, bounds, summary_bounds, n_empty in zip(results, by_group, summaries, empty):
        valid = set(result.valid)
        for i, group in enumerate(result.groups):
            row = {"attribute": result.name, "group": group}
            for j, key in enumerate(keys):
                lo, hi = bounds[i, j]
                row[f"{key}_lo"], row[f"{key}_hi"] = (float(lo), float(hi)) if i in valid else (np.nan,) * 2
            if stratify is None:
                row["n_empty"] = int(n_empty[i])
                if n_empty[i] and i in valid:
                    warnings.append(f"{result.name}={group}: no sample in {int(n_empty[i])} of {n_boot} bootstrap "
                                    "resamples (stratify=None); it is undefined there and left out of their gaps")
            group_rows.append(row)
        if len(result.valid) >= 2:
            summary_rows[result.name] = {f"{c}_{side}": float(summary_bounds[j, k])
                                         for j, c in enumerate(columns) for k, side in enumerate(("lo", "hi"))}
        else:
            summary_rows[result.name] = {}
    summary = pd.DataFrame.from_dict(summary_rows, orient="index",
                                     columns=[f"{c}_{side}" for c in columns for side in ("lo", "hi")])
    summary.index.name = "attribute"
    groups = pd.DataFrame(group_rows).set_index(["attribute", "group"])
    return {"level": level, "n_boot": n_boot, "stratify": stratify, "summary": summary, "by_group": groups}


def _keep(replicates: dict, kind: str, results: list[AttributeResult], kept: dict) -> None:
    """Resampled values of the evaluable groups, by (kind, attribute, metric), for report.pairwise()."""
    for result in results:
        if result.name in kept and len(result.valid) >= 2:
            keys, values = kept[result.name]
            for j, key in enumerate(keys):
                replicates[(kind, result.name, key)] = values[:, result.valid, j]


def _p_values(arranged, results: list[AttributeResult], n_permutations: int, seed, progress: bool | None,
              replicates: dict, extra: Sequence[str] = ()):
    import pandas as pd

    rows = {}
    tested = [k for k, result in enumerate(results) if len(result.valid) >= 2]
    # Two sets of permutations: the groups shuffled among all samples, and within each class for the
    # gaps of metrics that condition on the label (auc-gap, eo, eod, ...; _findings.within_label).
    with _progress.Progress(2 * n_permutations * len(tested), "permutations", progress, unit="permutation") as bar:
        for k, result in enumerate(results):
            if k not in tested:
                rows[result.name] = {}
                continue
            stream = _resample.stream(seed, "permutation", result.name)
            kept: list = []
            rows[result.name] = _resample.permutation_pvalues(arranged, k, result.valid, result.summary, summarize,
                                                              n_permutations, stream, result.threshold, bar, kept,
                                                              extra)
            within = _resample.permutation_pvalues(
                arranged, k, result.valid, result.summary, summarize, n_permutations,
                _resample.stream(seed, "permutation within labels", result.name), result.threshold, bar, kept, extra,
                within_labels=True)
            rows[result.name].update({c: within[c] for c in _findings.within_label() if c in within})
            keys, plain = kept[0]
            conditional = kept[1][1]
            for j, key in enumerate(keys):  # pairwise p-values of label-conditional metrics from the latter
                if _metric_registry.given_label(key):
                    plain[:, :, j] = conditional[:, :, j]
            _keep(replicates, "perm", [result], {result.name: (keys, plain)})
    columns = _metric_registry.tested_columns(extra)
    frame = pd.DataFrame.from_dict(rows, orient="index", columns=columns)
    frame.index.name = "attribute"
    return frame
