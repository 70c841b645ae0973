"""Many tasks in one call: :func:`evaluate_tasks`.

A chest X-ray model scores 14 findings; a benchmark scores many models on one label. Calling
:func:`fairmedfm_fast.evaluate` once per task validates and codes the sensitive attributes again
each time. :func:`evaluate_tasks` pairs the inputs, validates and codes the attributes once, and
evaluates the tasks on a pool of threads (the kernels release the GIL). The per-task reports are
joined into one :class:`~fairmedfm_fast.FairnessReport` whose tables have a leading ``task`` level.
"""
from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from .._engine.memory import reusing
from .._inputs import arrays as _inputs
from .._inputs import groups as _groups
from .._report.assembly import PER_TASK as PER_TASK
from .._report.assembly import stack_tasks as combine
from .._report.frame import FairnessReport
from .._util.threads import cores_shared, resolve_n_jobs
from .in_memory import evaluate

__all__ = ["evaluate_tasks"]


def evaluate_tasks(y_true: Any, y_score: Any, sensitive_features: Any, *, pos_label: Any = None,
                   bins: _groups.Bins | None = None, intersectional: bool = False, n_jobs: int | None = None,
                   **options: Any) -> FairnessReport:
    """Fairness of several tasks (labels or models) across the same groups, in one call.

    Parameters
    ----------
    y_true : array-like of shape (n_samples, n_tasks) or (n_samples,)
        One label column per task (a multi-label table), or one label column shared by every score
        column (several models on one label). Unlike :func:`~fairmedfm_fast.evaluate`, a 2-D
        ``y_true`` is read as tasks, never as one-hot rows.
    y_score : array-like of shape (n_samples, n_tasks)
        One score column per task (probabilities or logits, as in ``evaluate``). When ``y_true`` and
        ``y_score`` are both tables with named columns (pandas, polars, pyarrow), columns are paired
        by name; otherwise by position.
    sensitive_features : DataFrame, dict, Series, array-like, pyarrow Table or polars DataFrame
        As in ``evaluate``; validated and coded once for every task.
    pos_label, bins, intersectional
        As in ``evaluate``.
    n_jobs : int, optional
        Threads that evaluate tasks side by side (default: ``$FAIRMEDFM_FAST_N_JOBS``, else all cores).
        Each task's own threads (its sort, its resamples) are its share of them: ``n_jobs`` divided by
        the tasks run at once.
    **options
        Every other keyword of ``evaluate`` (``score_type``, ``threshold``, ``sample_weight``,
        ``n_boot``, ``ci``, ``n_permutations``, ``random_state``, ...), applied to each task.
        ``p_adjust`` (``"holm"`` by default) adjusts each task's gap tests as one family, as
        ``evaluate`` does for that task: not over the tasks together.

    Returns
    -------
    FairnessReport
        ``summary`` indexed by (task, attribute) and ``by_group`` by (task, attribute, group);
        ``ci`` and ``p_values`` likewise when asked for, and ``gaps`` by (task, attribute, column). ``tasks`` maps each evaluated task to its
        own report (the same as ``evaluate`` on that task); ``metadata["skipped_tasks"]`` names the
        tasks whose labels are all of one class, which are reported, not raised. ``metadata`` holds
        the settings as ``evaluate`` records them, once where every task has the same value and as
        ``{task: value}`` for ``best_f1_threshold``, ``samples_dropped`` and any setting that
        differs between tasks.
    """
    return combine(*each_task(y_true, y_score, sensitive_features, pos_label=pos_label, bins=bins,
                              intersectional=intersectional, n_jobs=n_jobs, **options))


def each_task(y_true: Any, y_score: Any, sensitive_features: Any, *, pos_label: Any = None,
              bins: _groups.Bins | None = None, intersectional: bool = False, n_jobs: int | None = None,
              **options: Any) -> tuple[dict[str, FairnessReport], dict[str, str], list[str], int]:
    """:func:`evaluate_tasks` before its reports are joined: ``(reports, skipped, notes, n_samples)``,
    each task's report by name, the skipped tasks' reasons, the notes on how the inputs were paired
    (``compare_models`` reads the reports alone)."""
    if "score_column" in options:
        raise ValueError("score_column does not apply to evaluate_tasks: each column of y_score is a task; "
                         "select the columns to evaluate before the call")
    notes: list[str] = []
    named = {"y_true": y_true, "y_score": y_score, "sensitive_features": sensitive_features}
    if options.get("sample_weight") is not None:
        named["sample_weight"] = options["sample_weight"]
    paired = dict(zip(named, _inputs.align_by_index(named, notes)))
    label_names, label_columns = _columns(paired["y_true"], "y_true")
    score_names, score_columns = _columns(paired["y_score"], "y_score")
    names, pairs = _pair(label_names, label_columns, score_names, score_columns)
    n = len(score_columns[0])
    if "sample_weight" in paired:
        options["sample_weight"] = _inputs.to_numpy(paired["sample_weight"], "sample_weight")
    attributes = _groups.encode_attributes(paired["sensitive_features"], n, bins, intersectional)
    coded = _groups.CodedAttributes(tuple(attributes))  # each task's evaluate takes them as they are

    skipped: dict[str, str] = {}
    runnable = []
    for name, (labels, scores) in zip(names, pairs):
        reason = _one_class(labels, pos_label)
        if reason:
            skipped[name] = reason
        else:
            runnable.append((name, labels, scores))

    def one(task: tuple[str, Any, Any]) -> FairnessReport:
        name, labels, scores = task
        try:
            with cores_shared(inner), reusing(held.setdefault(threading.get_ident(), {})):
                report = evaluate(labels, scores, coded, pos_label=pos_label, **options)
        except ValueError as error:
            raise ValueError(f"task {name!r}: {error}") from None
        report.metadata["intersectional"] = bool(intersectional)  # it was handed the coded intersections
        return report

    cores = resolve_n_jobs(n_jobs)
    workers = min(cores, max(len(runnable), 1))
    inner = max(1, cores // workers)  # each task's own threads: the tasks share the cores
    held: dict[int, dict] = {}  # each worker's large arrays, reused by its next task (freed on return)
    if workers > 1:
        from concurrent.futures import ThreadPoolExecutor

        # A pool of its own: each evaluate may use the package's shared pool for its resamples.
        with ThreadPoolExecutor(workers, thread_name_prefix="fairmedfm_fast-task") as pool:
            reports = list(pool.map(one, runnable))
    else:
        reports = [one(task) for task in runnable]
    return {name: report for (name, _, _), report in zip(runnable, reports)}, skipped, notes, n


def _columns(values: Any, name: str) -> tuple[list[str] | None, list[Any]]:
    """Column names (None when the input has none) and 1-D columns of a table, matrix or vector."""
    if isinstance(values, pd.DataFrame):
        return [str(c) for c in values.columns], [values.iloc[:, j].to_numpy() for j in range(values.shape[1])]
    if hasattr(values, "column_names") and hasattr(values, "column"):  # pyarrow Table
        return list(values.column_names), [_inputs.to_numpy(values.column(c), name) for c in values.column_names]
    if hasattr(values, "columns") and hasattr(values, "get_column"):  # polars DataFrame
        return list(values.columns), [values.get_column(c).to_numpy() for c in values.columns]
    if isinstance(values, Mapping):
        return [str(k) for k in values], [_inputs.to_numpy(v, f"{name}[{k!r}]") for k, v in values.items()]
    array = _inputs.to_numpy(values, name)
    if array.ndim == 1:
        return None, [array]
    if array.ndim != 2:
        raise ValueError(f"{name} must be 1-D (one column) or 2-D (one column per task); got shape {array.shape}")
    return None, [array[:, j] for j in range(array.shape[1])]


def _pair(label_names, labels, score_names, scores) -> tuple[list[str], list[tuple[Any, Any]]]:
    """Task names and (labels, scores) pairs: by name for two named tables, else by position."""
    if not scores:
        raise ValueError("y_score has no columns: pass one score column per task")
    if len(labels) == 1 and len(scores) >= 1:  # several models on one label
        names = score_names or [f"task_{j}" for j in range(len(scores))]
        pairs = [(labels[0], column) for column in scores]
    elif label_names is not None and score_names is not None:
        if set(label_names) != set(score_names):
            raise ValueError(f"y_true and y_score are paired by column name, but y_true has {label_names} and "
                             f"y_score has {score_names}; give both the same names, or pass NumPy arrays to "
                             "pair the columns by position")
        names = label_names
        column = dict(zip(score_names, scores))
        pairs = [(label, column[task]) for task, label in zip(label_names, labels)]
    else:
        if len(labels) != len(scores):
            raise ValueError(f"y_true has {len(labels)} columns but y_score has {len(scores)}; pass one label "
                             "column per score column, or one label column for every score column")
        names = label_names or score_names or [f"task_{j}" for j in range(len(scores))]
        pairs = list(zip(labels, scores))
    if len(set(names)) != len(names):
        raise ValueError(f"task names must be distinct; got {names}")
    lengths = {len(label) for label, _ in pairs} | {len(score) for _, score in pairs}
    if len(lengths) > 1:
        raise ValueError(f"every label and score column needs one value per sample; got lengths {sorted(lengths)}")
    return names, pairs


def _one_class(labels: Any, pos_label: Any) -> str | None:
    values, _ = _inputs.binary_labels(labels, pos_label)
    positives = int(np.count_nonzero(values))
    if positives == 0 or positives == len(values):
        return f"only label {1 if positives else 0} among its {len(values)} samples"
    return None
