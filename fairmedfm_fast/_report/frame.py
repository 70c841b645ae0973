"""The result object of :func:`fairmedfm_fast.evaluate` and :func:`fairmedfm_fast.evaluate_segmentation`."""
from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from .._util.lazy_pandas import pd

__all__ = ["FairnessReport", "summary_frame", "group_frame", "columns_frame"]


class _Frame:
    """A report's frame, held as the frame or as a function that makes it on first read."""

    def __set_name__(self, owner, name: str) -> None:
        self._held = "_" + name

    def __get__(self, report, owner=None):
        if report is None:
            return self
        frame = getattr(report, self._held)
        if callable(frame):
            frame = frame()
            setattr(report, self._held, frame)
        return frame

    def __set__(self, report, frame) -> None:
        setattr(report, self._held, frame)


class FairnessReport:
    """Fairness of a model across the groups of one or more sensitive attributes.

    Attributes
    ----------
    task : str
        ``"cls"`` (binary classification) or ``"seg"`` (segmentation).
    summary : pandas.DataFrame
        One row per attribute: ``n`` (samples with a value for it), ``n_groups`` (groups that could
        be evaluated) and the fairness metrics. An attribute with fewer than two evaluable groups
        has only ``n`` and ``n_groups``.
    by_group : pandas.DataFrame
        One row per (attribute, group): the group's sample count ``n``, its metrics, and
        ``skipped``, the reason a group was left out of the gaps (None when it was not).
    overall : dict
        Metrics on all samples.
    warnings : list of str
        How the input was read, which samples and groups were left out, and why.
    metadata : dict
        Facts about the input, e.g. ``n_samples``, the positive label, the score transform.
    ci : dict or None
        With ``n_boot``: ``{"level", "n_boot", "summary", "by_group"}``, where ``summary`` and
        ``by_group`` are frames with the index of ``summary`` / ``by_group`` and a ``<column>_lo``
        and ``<column>_hi`` percentile bound for each metric. NaN where a metric is undefined and
        for a small group (``by_group["small_group"]``: its resamples cannot show its uncertainty).
        The gap columns' bounds are simultaneous intervals of the gap among the groups that are not
        small (``gaps["value"]``; the summary's gap when no group is small).
        With ``interval="analytic"`` it also holds ``"analytic"``: ``{"level", "by_group",
        "summary", "p_adjust", "critical"}`` (DeLong, Wilson and simultaneous gap intervals; see
        :func:`~fairmedfm_fast.evaluate`), and ``"summary"`` / ``"by_group"`` only when ``n_boot``
        was given too.
    p_values : pandas.DataFrame or None
        With ``n_permutations``: per attribute, the permutation p-value of each gap (``auc-gap``,
        ``acc-gap``, ``bce-gap``, ``ece-gap``, ``eo``, and ``eod`` as ``1 - eod``) among the groups
        that are not small, and with ``p_adjust`` (``"holm"`` by default) ``<column>_<p_adjust>``,
        adjusted over every gap and attribute of the report together.
    gaps : pandas.DataFrame or None
        Classification (every kind of report: ``evaluate``, ``evaluate_tasks``, the accumulator, Dask,
        voxels): one row per (attribute, gap column) and ``worst-auc``. ``value`` is the gap among
        the groups that are not small (the headline of the page), with the groups that define it
        (``high_group``, ``low_group`` and their values), its simultaneous interval ``lo`` / ``hi``
        (NaN without ``n_boot`` or ``interval="analytic"``), ``p_value``, ``p_adjusted``,
        ``test_significant`` (the adjusted p-value at most ``1 - ci``; None without
        ``n_permutations`` or when too few were drawn to reach it), ``interval_excludes`` (the
        interval rules out equal groups) and ``significant`` (the test, with the interval agreeing
        when there is one). ``value_all_groups`` is the summary's value (fairmedfm's, every group),
        with ``high_group_all`` / ``low_group_all``; ``small_group`` says a small group defines it,
        and ``not_estimable`` why (e.g. "rural_clinic has 1 positive and 2 negatives"): such a gap is
        never tested nor called significant. A report of ``evaluate_tasks`` has a leading ``task``
        level. None for segmentation.
    tasks : dict of str -> FairnessReport or None
        For a report of :func:`~fairmedfm_fast.evaluate_tasks`: each task's own report (its
        ``summary``, ``by_group``, ``ci`` and ``p_values`` are the rows of that task here).

    Notes
    -----
    The keyword-only ``curves``, ``dice_data`` and ``metric_data`` hand :meth:`plot` what it draws:
    :func:`~fairmedfm_fast.evaluate` passes each attribute's ROC and reliability summaries, recorded
    while it had the samples sorted (bounded in size: at most about a thousand ROC points and ten
    bins a group, however many samples), :func:`~fairmedfm_fast.evaluate_segmentation` the per-image
    values (references, not copies).

    The constructor takes ``summary`` and ``by_group`` as frames or as functions that make them;
    such a frame is made when it is first read.
    """

    __module__ = "fairmedfm_fast.report"  # its public place, which pickles and reprs name

    summary = _Frame()
    by_group = _Frame()
    gaps = _Frame()

    def __init__(self, task: str, summary: pd.DataFrame | Callable[[], pd.DataFrame],
                 by_group: pd.DataFrame | Callable[[], pd.DataFrame], overall: dict[str, Any],
                 attribute_overall: dict[str, dict[str, Any]], warnings: list[str], metadata: dict[str, Any],
                 *, tasks: dict[str, FairnessReport] | None = None, curves: list | None = None,
                 dice_data: tuple | None = None, metric_data: dict[str, np.ndarray] | None = None):
        self.task = task
        self.tasks = tasks
        # A frame, or a function that makes it on first access: a report that is never looked at
        # costs no pandas (importing it takes about 0.5 s, a frame about 0.3 ms).
        self._summary = summary
        self._by_group = by_group
        self.overall = overall
        self.warnings = warnings
        self.metadata = metadata
        self._attribute_overall = attribute_overall
        self.ci: dict[str, Any] | None = None
        #: Classification: one row per (attribute, gap column) and worst-auc, with the groups that define it,
        #: its interval, p-value and significance (fairmedfm_fast._findings.gap_frame); None otherwise.
        self._gaps = None
        self.p_values: pd.DataFrame | None = None
        #: Resampled values of the evaluable groups, {(kind, attribute, metric): array (resamples,
        #: groups)} with kind "boot" or "perm", kept by evaluate for :meth:`pairwise`.
        self.replicates: dict[tuple[str, str, str], np.ndarray] = {}
        # What the pictures (fairmedfm_fast._pictures) draw: from evaluate, each attribute's
        # _pictures.CurveSource (the engine's bounded Curves, no per-sample array); from
        # evaluate_segmentation, (per-image Dice, the attributes) and {metric: per-image values}.
        self._curves = curves
        self._dice_data = dice_data
        self._metric_data = metric_data

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dictionary (NaN becomes None), one entry per attribute (per task and attribute
        for a report of :func:`~fairmedfm_fast.evaluate_tasks`)."""
        from .._version import __version__

        if self.tasks:
            return {"fairmedfm_fast_version": __version__, "task": self.task, "metadata": jsonable(self.metadata),
                    "tasks": {name: {key: value for key, value in report.to_dict().items()
                                     if key not in ("fairmedfm_fast_version", "task")}
                              for name, report in self.tasks.items()},
                    "warnings": list(self.warnings)}
        attributes = {}
        present = set(self.by_group.index.get_level_values(0))
        for attribute, row in self.summary.iterrows():
            groups = self.by_group.loc[attribute] if attribute in present else self.by_group.iloc[:0]
            # every group's row at once (a row at a time costs about 0.5 ms per group)
            entry = {"n": int(row["n"]), "summary": jsonable(row.drop(["n", "n_groups"]).to_dict()),
                     "groups": {str(group): jsonable(values) for group, values in _group_rows(groups)}}
            if attribute in self._attribute_overall:
                entry["overall"] = jsonable(self._attribute_overall[attribute])
            attributes[str(attribute)] = entry
        out = {"fairmedfm_fast_version": __version__, "task": self.task, "metadata": jsonable(self.metadata),
               "overall": jsonable(self.overall), "attributes": attributes, "warnings": list(self.warnings)}
        if self.ci is not None:
            out["ci"] = _ci_dict(self.ci)
        if self.p_values is not None:
            out["p_values"] = jsonable(self.p_values.to_dict(orient="index"))
        if self._gaps is not None:
            gaps: dict[str, dict] = {}
            for (attribute, column), row in self.gaps.to_dict(orient="index").items():
                gaps.setdefault(str(attribute), {})[column] = jsonable(row)
            out["gaps"] = gaps
        return out

    def to_json(self, path: str | Path | None = None, indent: int = 2) -> str:
        """The report as JSON text (see :meth:`to_dict`); with ``path``, also written there (its folder
        made when missing), as in fairmedfm 0.4.2."""
        text = json.dumps(self.to_dict(), indent=indent, allow_nan=False)
        if path is not None:
            path = Path(path)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text + "\n")
        return text

    # -- pictures (fairmedfm_fast._pictures; matplotlib through the optional "plot" extra) --------

    def plot(self, kind: str = "roc", attributes: str | list[str] | None = None, *, task: str | None = None,
             metric: str | None = None):
        """A matplotlib figure of the report.

        Parameters
        ----------
        kind : {"roc", "reliability", "bars", "dice", "pairwise", "forest"}, default "roc"
            ``"roc"``: each group's ROC curve, with its operating point at the attribute's best-F1
            threshold; ``"reliability"``: each group's reliability diagram over its ECE bins;
            ``"bars"``: the per-group metrics as bars (with intervals when the report has them);
            ``"dice"``: each group's per-sample Dice distribution (segmentation reports);
            ``"pairwise"``: a heat map of :meth:`pairwise` differences per attribute;
            ``"forest"``: each group's value with its interval, one panel per metric.
        attributes : str or list of str, optional
            Attributes to draw; all by default.
        task : str, optional
            For a report of :func:`~fairmedfm_fast.evaluate_tasks`: the task to draw (needed when
            it holds more than one).
        metric : str, optional
            The metric of ``kind="pairwise"`` (default ``"auc"``, or ``"mean_dice"``).

        Returns
        -------
        matplotlib.figure.Figure
            Save it with ``figure.savefig("roc.png")``. Needs matplotlib (``pip install matplotlib``).
        """
        from . import pictures as _pictures

        report = self._one_task(task)
        if kind == "pairwise":
            return _pictures.plot_pairwise(report, attributes, metric)
        return _pictures.plot(report, kind, attributes)

    def _one_task(self, task: str | None) -> FairnessReport:
        if not self.tasks:
            if task is not None:
                raise ValueError(f"task={task!r} applies to reports of evaluate_tasks; this report has one task")
            return self
        if task is None and len(self.tasks) == 1:
            return next(iter(self.tasks.values()))
        if task not in self.tasks:
            raise ValueError(f"task={task!r}: pass the task to draw, one of {list(self.tasks)}")
        return self.tasks[task]

    def pairwise(self, metric: str | None = None) -> pd.DataFrame:
        """Differences of ``metric`` between every pair of groups of each attribute.

        Parameters
        ----------
        metric : str, optional
            A per-group column of ``by_group`` (default ``"auc"`` for classification, ``"mean_dice"``
            for segmentation).

        Returns
        -------
        pandas.DataFrame
            Indexed by (attribute, group, other), with ``difference`` = the value of ``group`` minus
            the value of ``other`` over groups that are not skipped; ``difference_lo`` /
            ``difference_hi`` (bootstrap percentile interval) and ``p_value`` (permutation test)
            when :func:`~fairmedfm_fast.evaluate` or :func:`~fairmedfm_fast.evaluate_segmentation`
            made the report with ``n_boot`` / ``n_permutations``; ``difference_se``,
            ``p_value_analytic`` (z-test) and ``difference_lo_analytic`` / ``difference_hi_analytic``
            for ``auc``, ``acc``, ``tpr`` and ``tnr`` (and their ``@best_f1``) when it was made with
            ``interval="analytic"`` (``p_value_analytic_<p_adjust>`` beside them, adjusted over every
            distinct pair of the frame, when ``p_adjust`` was given). ``p_value_<p_adjust>``: the
            permutation p-values adjusted over every distinct pair of the frame (a family of its own).
            ``small_group``: one of the two groups is small; such a pair has no interval and no
            adjusted p-value. One attribute's matrix:
            ``report.pairwise("auc").loc["race", "difference"].unstack()``.
        """
        from .._statistics.pairwise import pairwise

        return pairwise(self, metric)

    def to_html(self, path: str | Path | None = None, figures: bool | list[str] = True) -> str:
        """The report as one self-contained HTML page (figures inlined as PNG, nothing fetched).

        Holds the warnings, the summary and per-group tables and, with ``figures`` (True: the kinds
        that suit the task, or a list of kinds), the figures of :meth:`plot`. Returns the HTML text
        and writes it to ``path`` when given.
        """

        from . import html as _html

        return _html.write_html(self, path, figures)

    def scalars(self) -> dict[str, float]:
        """Every summary number as one flat ``{name: float}``, for training loggers (Lightning's
        ``log_dict``, MLflow's ``log_metrics``, Weights & Biases, TensorBoard).

        Keys are ``<column>/<attribute>`` with the summary column's ``-`` written ``_``
        (``auc_gap/race``, ``worst_auc/race``, ``eod/sex``, ``n/sex``); with ``n_permutations``
        also ``p_<column>/<attribute>``. An index of several levels (tasks) joins them with ``/``.
        NaN stays NaN.
        """
        flat: dict[str, float] = {}
        frames = [("", self.summary)] + ([("p_", self.p_values)] if self.p_values is not None else [])
        for prefix, frame in frames:
            for name, row in zip(frame.index.tolist(), frame.itertuples(index=False)):
                where = "/".join(map(str, name)) if isinstance(name, tuple) else str(name)
                for column, value in zip(frame.columns, row):
                    if isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool):
                        flat[f"{prefix}{str(column).replace('-', '_')}/{where}"] = float(value)
        return flat

    def __repr__(self) -> str:
        head = f"FairnessReport({self.task}, attributes: {', '.join(map(str, self.summary.index))})"
        lines = [head, self.summary.to_string(float_format=lambda v: f"{v:.4f}")]
        lines.extend(f"warning: {message}" for message in self.warnings)
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        import html

        notes = "".join(f"<p><b>warning:</b> {html.escape(message)}</p>" for message in self.warnings)
        return self.summary.to_html(float_format=lambda v: f"{v:.4f}") + notes


def _group_rows(groups: pd.DataFrame) -> list[tuple[Any, dict[str, Any]]]:
    """(group, {column: value}) of each row of one attribute's ``by_group`` rows, in order."""
    columns = list(groups.columns)
    values = zip(*(groups[column].tolist() for column in columns)) if columns else ((),) * len(groups)
    return [(group, dict(zip(columns, row))) for group, row in zip(groups.index, values)]


def summary_frame(summaries: dict[str, dict[str, Any]]) -> pd.DataFrame:
    """One row per attribute, ``n`` and ``n_groups`` first, other columns in order of appearance.

    The same frame as ``pd.DataFrame.from_dict(summaries, orient="index")`` (NaN where an attribute
    lacks a column), built column by column: the record-wise constructors cost about 0.5 ms, which
    per-epoch logging of small inputs notices.
    """
    names = list(summaries)
    columns = list(dict.fromkeys(["n", "n_groups", *(key for values in summaries.values() for key in values)]))
    data = {column: _numbers([summaries[name].get(column, math.nan) for name in names]) for column in columns}
    return pd.DataFrame(data, index=pd.Index(names, name="attribute"))


def group_frame(rows: list[dict[str, Any]]) -> pd.DataFrame:
    """One row per (attribute, group): ``n``, the metrics, then ``skipped``.

    The same frame as ``pd.DataFrame(rows).set_index(["attribute", "group"])`` with the columns
    reordered, built without factorizing the index (which costs about 1 ms per call).
    """
    keys = dict.fromkeys(key for row in rows for key in row)
    middle = [key for key in keys if key not in ("attribute", "group", "n", "skipped")]
    data = {column: [row.get(column, math.nan) for row in rows] for column in ["n", *middle, "skipped"]}
    return columns_frame([row["attribute"] for row in rows], [row["group"] for row in rows], data)


def columns_frame(attributes: list[Any], groups: list[Any], data: dict[str, list[Any]]) -> pd.DataFrame:
    """The frame of :func:`group_frame` from its columns: the attribute and group of each row, and
    ``data``, column name -> the row values (in frame order)."""
    levels, codes = zip(_level(attributes), _level(groups), strict=True)
    index = pd.MultiIndex(levels=levels, codes=codes, names=["attribute", "group"], verify_integrity=False)
    return pd.DataFrame({column: _numbers(values) for column, values in data.items()}, index=index)


def _numbers(values: list[Any]) -> Any:
    """A column of Python ints and floats as the NumPy array pandas would make of it (int64 when all are
    ints, else float64), which pandas takes about twice as fast as the list; other columns as they are."""
    if values and all(type(value) is float or type(value) is int for value in values):  # bools are not ints here
        return np.array(values)
    return values


def _level(values: list[Any]) -> tuple[pd.Index, np.ndarray]:
    """The level and codes that ``MultiIndex.from_arrays`` gives: pandas' sorted unique values
    (numbers before text in a mixed level), or the order of appearance when they cannot be ordered."""
    if all(type(value) is str for value in values):  # the usual case, without pandas' factorize
        unique = sorted(set(values))
        position = {value: i for i, value in enumerate(unique)}
        return pd.Index(unique), np.array([position[value] for value in values], dtype=np.intp)
    array = pd.Index(values)
    try:
        codes, unique = pd.factorize(array, sort=True)
    except TypeError:
        codes, unique = pd.factorize(array, sort=False)
    return unique, codes


def _ci_dict(ci: dict[str, Any]) -> dict[str, Any]:
    """``report.ci`` for JSON: the bootstrap frames (when there) and the analytic ones (when asked for)."""
    out = {"level": ci["level"], "n_boot": ci["n_boot"]}
    if ci.get("summary") is not None:
        out["summary"] = jsonable(ci["summary"].to_dict(orient="index"))
        out["by_group"] = {f"{a}={g}": jsonable(row) for (a, g), row in ci["by_group"].to_dict(orient="index").items()}
    if ci.get("analytic") is not None:
        analytic = ci["analytic"]
        out["analytic"] = {"summary": jsonable(analytic["summary"].to_dict(orient="index")),
                           "by_group": {f"{a}={g}": jsonable(row) for (a, g), row in
                                        analytic["by_group"].to_dict(orient="index").items()},
                           "critical": analytic["critical"]}
    return out


def jsonable(values: Any) -> Any:
    """``values`` (dicts and lists of them too) with NumPy scalars as Python ones and NaN or infinity as
    None, for JSON."""
    if isinstance(values, dict):
        return {str(key): jsonable(value) for key, value in values.items()}
    if isinstance(values, (list, tuple)):
        return [jsonable(value) for value in values]
    if isinstance(values, np.generic):
        values = values.item()
    if isinstance(values, float) and not math.isfinite(values):
        return None
    return values
