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
                  p_adjust, progress, warnings, extra, seed=seed, flagged=flagged)
    if interval == "analytic":
        samples = analytic_samples() if callable(analytic_samples) else analytic_samples
        report.ci = {"level": float(ci), "n_boot": n_boot, **(report.ci or {}),
                     "analytic": _analytic.intervals(samples, results, float(ci), warnings, p_adjust)}
    with_gaps(report, results, flagged, p_adjust, float(ci), n_permutations)


def resample_into(report: FairnessReport, arranged: _engine.Arranged, results: list[AttributeResult], n_boot: int,
                  ci: float, n_permutations: int, random_state: Any, threshold: float | None, stratify: str | None,
                  p_adjust: str | None, progress: bool | None, warnings: list[str], extra: Sequence[str],
                  seed: Any = None, flagged: dict | None = None) -> None:
    """``report.ci`` (with ``n_boot``) and ``report.p_values`` (with ``n_permutations``) from the
    samples ``arranged`` and the point estimates ``results``; the gaps' bounds are the simultaneous
    intervals, and a warning says when ``n_permutations`` is too few for the adjustment. ``seed``:
    the one drawn from ``random_state`` already (evaluate records it in the settings). ``flagged``:
    each attribute's small groups, which get no bootstrap interval and take no part in the gaps'
    intervals and tests (found here when not given)."""
    if not (n_boot or n_permutations):
        return
    if flagged is None:
        flagged = {result.name: _findings.small_groups(result) for result in results}
    seed = _resample.seed_from(random_state) if seed is None else seed
    if n_boot:
        report.ci = _intervals(arranged, results, n_boot, float(ci), seed, threshold, stratify, progress,
                               warnings, report.replicates, extra, flagged)
        _findings.simultaneous_gaps(results, report.replicates, report.ci["summary"], float(ci), flagged)
        report.ci["gap_interval"] = _gap_interval.LABEL
    if n_permutations:
        report.p_values = _resample.with_adjusted(
            _p_values(arranged, results, n_permutations, seed, progress, report.replicates, extra, flagged), p_adjust)
        raw = _findings.raw_p_values(report.p_values, p_adjust)
        note = _findings.permutation_warning(raw, n_permutations, p_adjust, 1 - float(ci))
        if note:
            warnings.append(note)
            import warnings as python_warnings

            python_warnings.warn(note, UserWarning, stacklevel=4)  # the caller of evaluate (or result)


def _intervals(arranged, results: list[AttributeResult], n_boot: int, level: float, seed, threshold,
               stratify: str | None, progress: bool | None, warnings: list[str], replicates: dict,
               extra: Sequence[str] = (), flagged: dict | None = None) -> dict:
    import pandas as pd

    kept: dict = {}
    by_group, summaries, columns, empty = _resample.bootstrap(
        arranged, [r.name for r in results], [r.valid for r in results], summarize, n_boot, level, seed, threshold,
        stratify, progress, kept, extra)
    _keep(replicates, "boot", results, kept)
    keys = [*_resample.INTERVAL_METRICS, *(m + _engine.BEST for m in _resample.INTERVAL_METRICS), *extra]
    group_rows, summary_rows = [], {}
    for result, bounds, summary_bounds, n_empty in zip(results, by_group, summaries, empty):
        small = (flagged or {}).get(result.name, {})
        # A small group's resamples cannot show how uncertain its values are (one positive: every
        # resample that defines its AUC gives the same value, a zero-width interval): NaN, said so.
        valid, evaluable = set(_findings.tested_groups(result, small)), set(result.valid)
        if small:
            warnings.append(_small_interval_note(result, small))
        for i, group in enumerate(result.groups):
            row = {"attribute": result.name, "group": group}
            for j, key in enumerate(keys):
                lo, hi = bounds[i, j]
                row[f"{key}_lo"], row[f"{key}_hi"] = (float(lo), float(hi)) if i in valid else (np.nan,) * 2
            if stratify is None:
                row["n_empty"] = int(n_empty[i])
                if n_empty[i] and i in evaluable:
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


def _small_interval_note(result: AttributeResult, small: dict) -> str:
    named = [str(result.groups[i]) for i in list(small)[:_findings.NAMED_SMALL]]
    more = len(small) - len(named)
    listed = ", ".join(named) + (f" and {more} more" if more else "")
    return (f"{result.name}: no bootstrap interval for the small group{'s' * (len(small) > 1)} {listed} "
            "(NaN in ci['by_group'] and in pairwise()): resamples of so few positives or negatives cannot show "
            "how uncertain its values are; its gaps are reported apart, not tested (report.gaps['not_estimable'])")


def _keep(replicates: dict, kind: str, results: list[AttributeResult], kept: dict) -> None:
    """Resampled values of the evaluable groups, by (kind, attribute, metric), for report.pairwise()."""
    for result in results:
        if result.name in kept and len(result.valid) >= 2:
            keys, values = kept[result.name]
            for j, key in enumerate(keys):
                replicates[(kind, result.name, key)] = values[:, result.valid, j]


def _p_values(arranged, results: list[AttributeResult], n_permutations: int, seed, progress: bool | None,
              replicates: dict, extra: Sequence[str] = (), flagged: dict | None = None):
    """Each attribute's permutation p-values of the gaps among its groups that are not small (the
    summary's gaps when none is small)."""
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
            small = (flagged or {}).get(result.name, {})
            groups, observed = _findings.tested_groups(result, small), _findings.tested_summary(result, small)
            rows[result.name] = _resample.permutation_pvalues(arranged, k, groups, observed, summarize,
                                                              n_permutations, stream, result.threshold, bar, kept,
                                                              extra)
            within = _resample.permutation_pvalues(
                arranged, k, groups, observed, summarize, n_permutations,
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
