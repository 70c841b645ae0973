"""The one place where a :class:`~fairmedfm_fast.report.FairnessReport` is built, for every backend.

- Classification (in memory, resampled, the accumulator, Dask, voxels): each backend turns its per-group
  sums into per-attribute results (:class:`AttributeResult`, by ``_backends/assess.attribute_result``)
  and hands them to :func:`assemble`, which flags the small groups, records the options and settings in
  the metadata and builds the report (summary and ``by_group`` frames made on first access).
- Segmentation: :func:`segmentation_report`, from each attribute's summary and per-group rows.
- Many tasks: :func:`stack_tasks` joins the per-task reports under a leading ``task`` level.

``tests/test_layout.py`` checks that no other module calls ``FairnessReport(...)``.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cached_property, partial
from typing import Any

import numpy as np

from .._engine import classification as _engine
from .._statistics import findings as _findings
from .._util.lazy_pandas import pd
from . import curves as _curves
from .frame import FairnessReport, columns_frame, group_frame, summary_frame


@dataclass
class AttributeResult:
    """What the report says about one attribute."""

    name: str
    n: int
    groups: list[str]
    counts: list[int]
    valid: list[int]  # indices of evaluable groups
    skipped: dict[int, str]  # group index -> reason
    overall: dict[str, Any]  # metrics on the attribute's present samples (empty when not evaluable)
    summary: dict[str, Any]
    threshold: float  # decision threshold of the @best_f1 metrics
    keys: tuple[str, ...] = ()  # the per-group metrics
    rows: list[tuple] = field(default_factory=list)  # per slot, the value of each of ``keys``
    curves: _engine.Curves | None = None  # what the pictures draw (evaluate and the accumulator record it)
    first_slot: int = 0  # the attribute's first slot in ``curves``

    @cached_property
    def by_group(self) -> dict[int, dict[str, Any]]:
        """Group index -> metrics, of the evaluable groups (made when first read, by the by_group frame,
        and kept: the frame reads it once per group)."""
        return {i: dict(zip(self.keys, self.rows[i])) for i in self.valid} if self.rows else {}


def asked(threshold: float | None = None, weighted: bool = False, min_group_size: int | None = None,
          metrics=()) -> dict[str, Any]:
    """The options a caller set, as a report's metadata records them (in this order)."""
    out: dict[str, Any] = {}
    if threshold is not None:
        out["threshold"] = threshold
    if weighted:
        out["sample_weight"] = True
    if min_group_size is not None:
        out["min_group_size"] = min_group_size
    if metrics:
        out["metrics"] = list(metrics)
    return out


def assemble(results: list[AttributeResult], overall: dict[str, Any], warnings: list[str], metadata: dict[str, Any],
             *, attributes=None, settings: dict[str, Any] | None = None, bins: dict | None = None
             ) -> tuple[FairnessReport, dict[str, dict[int, Any]]]:
    """The report of a classification evaluation from its per-attribute ``results`` and the ``overall``
    values, and each attribute's small groups (for :func:`with_gaps` once intervals are added).

    The small groups' warnings join ``warnings``; ``settings`` (the keyword arguments of
    ``findings.settings`` but the results and ``attributes``; None for a backend without them) and the
    cut points of ``bins`` join ``metadata``.
    """
    flagged = {result.name: _findings.small_groups(result) for result in results}
    for result in results:
        warnings.extend(_findings.small_group_warnings(result, flagged[result.name]))
    if settings is not None:
        metadata.update(_findings.settings(results, attributes, **settings))
    if bins is not None:
        metadata["bins"] = {name: sorted(float(edge) for edge in spec) for name, spec in bins.items()}
    return classification_report(results, overall, warnings, metadata, flagged=flagged), flagged


def classification_report(results: list[AttributeResult], overall: dict[str, Any], warnings: list[str],
                          metadata: dict[str, Any], *,
                          flagged: dict[str, dict[int, Any]] | None = None) -> FairnessReport:
    """The report of :func:`evaluate` from the per-attribute results; ``flagged``: each attribute's small
    groups (found here, with their warnings, when not given), a ``small_group`` column of ``by_group``
    after ``skipped``. The pictures draw the results' ``curves`` when every result has them."""
    summaries = {result.name: result.summary for result in results}
    attribute_overall = {result.name: result.overall for result in results}
    # The frames (and the rows of by_group) are made on first access (pandas is not imported until then).
    if flagged is None:  # dask, voxels: flagged here
        flagged = {result.name: _findings.small_groups(result) for result in results}
        for result in results:
            warnings.extend(_findings.small_group_warnings(result, flagged[result.name]))
    by_group = partial(_with_small_groups, partial(_by_group_frame, results), results, flagged)
    curves = None
    if results and all(result.curves is not None for result in results):
        curves = [_curves.CurveSource(result.name, result.groups, result.counts, result.n, result.threshold,
                                        result.curves, result.first_slot) for result in results]
    report = FairnessReport("cls", partial(summary_frame, summaries), by_group, overall,
                            attribute_overall, warnings, metadata, curves=curves)
    with_gaps(report, results, flagged)
    return report


def with_gaps(report: FairnessReport, results: list[AttributeResult], flagged: dict[str, dict[int, Any]],
              p_adjust: str | None = None, level: float = 0.95, n_permutations: int = 0) -> None:
    """``report.gaps`` (made on first read) from the results, the small groups ``flagged`` and the
    report's intervals and p-values as they are now: call it again once ``report.ci`` or
    ``report.p_values`` is set (``n_permutations``: how many gave the p-values)."""
    report.gaps = partial(_findings.gap_frame, results, flagged, report.ci, report.p_values, p_adjust, 1 - level,
                          n_permutations)


def _with_small_groups(by_group, results: list[AttributeResult], flagged: dict[str, dict[int, Any]]):
    frame = by_group()
    frame["small_group"] = [i in flagged.get(result.name, {}) for result in results for i in range(len(result.groups))]
    return frame


def _by_group_frame(results: list[AttributeResult]):
    """One row per (attribute, group): ``n``, the metrics (NaN where a group is skipped), ``skipped``.

    Built column by column from each attribute's per-slot values, in time linear in the groups.
    """
    if not any(result.groups for result in results):
        import pandas as pd

        index = pd.MultiIndex.from_arrays([[], []], names=["attribute", "group"])
        return pd.DataFrame({"n": pd.Series([], dtype=np.int64), "skipped": pd.Series([], dtype=object)},
                            index=index)
    # metric columns in order of appearance, as the frame of one dict per row orders them
    keys = list(dict.fromkeys(key for result in results if result.rows and result.valid for key in result.keys))
    attributes: list[Any] = []
    groups: list[Any] = []
    data: dict[str, list[Any]] = {"n": [], **{key: [] for key in keys}, "skipped": []}
    for result in results:
        g = len(result.groups)
        attributes += [result.name] * g
        groups += result.groups
        data["n"] += result.counts
        data["skipped"] += [result.skipped.get(i) for i in range(g)]
        if not (result.rows and result.valid):
            for key in keys:
                data[key] += [math.nan] * g
            continue
        position = {key: j for j, key in enumerate(result.keys)}
        every = len(result.valid) == g
        valid = set(result.valid)
        for key in keys:
            j = position.get(key)
            if j is None:
                data[key] += [math.nan] * g
            elif every:
                data[key] += [row[j] for row in result.rows[:g]]
            else:
                data[key] += [row[j] if i in valid else math.nan for i, row in enumerate(result.rows[:g])]
    return columns_frame(attributes, groups, data)


def segmentation_report(summaries: dict[str, dict[str, Any]], rows: list[dict[str, Any]], overall: dict[str, Any],
                        warnings: list[str], metadata: dict[str, Any], *, dice_data: tuple,
                        metric_data: dict[str, np.ndarray] | None) -> FairnessReport:
    """The report of ``evaluate_segmentation`` from each attribute's summary, one row per (attribute,
    group) and the ``overall`` values; ``dice_data`` (the per-sample Dice scores and the attributes) and
    ``metric_data`` (the per-sample values of every requested metric) are what ``report.plot`` draws."""
    return FairnessReport("seg", summary_frame(summaries), _segmentation_groups(rows), overall, {}, warnings,
                          metadata, dice_data=dice_data, metric_data=metric_data)


def scratch_report(report: FairnessReport) -> FairnessReport:
    """A report with ``report``'s tables and nothing else, which resampling fills with one more metric's
    intervals and p-values before they are renamed into ``report``."""
    return FairnessReport(report.task, report.summary, report.by_group, {}, {}, [], {})


def _segmentation_groups(rows: list[dict[str, Any]]):
    if rows:
        return group_frame(rows)
    index = pd.MultiIndex.from_arrays([[], []], names=["attribute", "group"])
    return pd.DataFrame({"n": pd.Series([], dtype=np.int64), "mean_dice": pd.Series([], dtype=np.float64),
                         "skipped": pd.Series([], dtype=object)}, index=index)


#: Settings that ``metadata`` always gives per task (``{task: value}``): they depend on the task's data.
PER_TASK = ("best_f1_threshold", "samples_dropped")


def stack_tasks(tasks: dict[str, FairnessReport], skipped: dict[str, str], notes: list[str], n: int) -> FairnessReport:
    """One report from the per-task reports of ``evaluate_tasks``: every table gains a leading ``task``
    level; the settings the tasks share are given once, the others per task."""
    if not tasks:
        raise ValueError(f"no task can be evaluated: {'; '.join(f'{k}: {v}' for k, v in skipped.items())}")
    warnings = list(notes)
    warnings += [f"task {name!r}: skipped, {reason}" for name, reason in skipped.items()]
    for name, report in tasks.items():
        warnings += [f"task {name!r}: {message}" for message in report.warnings]
    first = next(iter(tasks.values()))
    metadata = {"n_samples": n, "tasks": list(tasks), "skipped_tasks": dict(skipped)}
    for key, value in first.metadata.items():  # the settings, once where the tasks agree
        if key in metadata:
            continue
        values = {name: report.metadata.get(key) for name, report in tasks.items()}
        same = key not in PER_TASK and all(v == value for v in values.values())
        metadata[key] = value if same else values
    combined = FairnessReport(first.task, _stack({k: r.summary for k, r in tasks.items()}),
                              _stack({k: r.by_group for k, r in tasks.items()}),
                              {k: r.overall for k, r in tasks.items()}, {}, warnings, metadata, tasks=tasks)
    if first.ci is not None:
        combined.ci = {"level": first.ci["level"], "n_boot": first.ci["n_boot"],
                       **{key: _stack({k: r.ci[key] for k, r in tasks.items()}) for key in ("summary", "by_group")
                          if first.ci.get(key) is not None}}
        if first.ci.get("analytic") is not None:  # interval="analytic"
            parts = {k: r.ci["analytic"] for k, r in tasks.items()}
            combined.ci["analytic"] = {"level": first.ci["analytic"]["level"],
                                       "p_adjust": first.ci["analytic"]["p_adjust"],
                                       "critical": {k: part["critical"] for k, part in parts.items()},
                                       **{key: _stack({k: part[key] for k, part in parts.items()})
                                          for key in ("summary", "by_group")}}
    if first.p_values is not None:
        combined.p_values = _stack({k: r.p_values for k, r in tasks.items()})
    if first._gaps is not None:  # made on first read, as each task's own
        combined.gaps = lambda: _stack({k: r.gaps for k, r in tasks.items()})
    return combined


def _stack(frames: dict[str, pd.DataFrame]) -> pd.DataFrame:
    return pd.concat(frames, names=["task"])
