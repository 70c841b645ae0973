"""Exact fairness metrics on Dask: datasets larger than one machine, Parquet read out of core.

:func:`evaluate` takes a ``dask.dataframe.DataFrame`` and returns the same
:class:`~fairmedfm_fast.FairnessReport` as :func:`fairmedfm_fast.evaluate` on the same rows, without
collecting the rows into one process:

1. A survey pass (one small summary per partition): label values, score range, the group values of
   each attribute (and their combinations), a score sketch for the range boundaries. The columns it
   reads stay in the workers' memory (``dask.persist``) for the sort: the files are read once. Where
   the rows would not fit (``dask_memory.passes_for_memory``), the files are read again in passes
   instead, each sorting a share of the score ranges (``dask_routing.routed`` with ``keep``).
2. One distributed sort by score, of compact records (``kernels.records``): each partition packs its
   rows (the score's order-preserving key, the label and the global group codes: one 64-bit word for
   float32 scores, two for float64) and splits them by score ranges whose bounds are scores, so
   that equal scores never straddle two ranges; the task of range ``r`` takes piece ``r`` of every
   partition (Dask's ordinary transfers, nothing on disk) and sorts it. Rows whose codes need
   more than 64 bits are sorted as frames (``set_index``) instead.
3. Per sorted range, the engine's fused pass as in memory (``_ranges.range_sums``), in the same task
   as the range's sort. What a range needs of the others comes from the routing's counts (each
   partition counts its rows per range and slot, and finds each slot's lowest and highest score):
   the global ECE bin edges, bit-identical to the in-memory ones, and the counts of the ranges below
   and above it (the best-F1 sweep and the summed precision start from them). The ranges' sums then
   join as the in-memory engine joins those of consecutive ranges (``_ranges.from_ranges``): added,
   the U of a range credited with its positives times the negatives below it, and each grouping's
   best-F1 threshold the best of the ranges' candidates, the lowest range's on ties.

Only per-partition summaries, whose size is the number of groups, travel to the client. See the
user guide's "Dask and out-of-core data" page for running on a cluster.
"""
from __future__ import annotations

import contextlib
import functools
import glob
import logging
import math
import os
import warnings
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np
import pandas as pd

from .._engine import classification as _engine
from .._engine import ranges as _ranges
from .._engine import records as _records
from .._engine import resample as _resample
from .._inputs import groups as _groups
from .._registry import metrics as _metric_registry
from .._report.assembly import asked, assemble, with_gaps
from .._report.frame import FairnessReport
from .._statistics import analytic as _analytic
from .._statistics import findings as _findings
from .._util.progress import Progress, check
from . import dask_memory as _memory
from . import dask_routing as _routing
from . import dask_survey as _survey
from .assess import as_python, attribute_result, transform_note
from .checks import check_interval, check_threshold

__all__ = ["evaluate", "read_parquet"]

_SCORE, _LABEL = "score", "label"
#: Loggers of ``distributed`` that note every shuffle at WARNING ("Shuffle ... initialized by task ...",
#: "... deactivated due to stimulus ..."): routine for our sort, so raised to ERROR during our calls.
_ROUTINE_LOGGERS = ("distributed.shuffle",)


def import_dask():
    try:
        import dask
        import dask.dataframe as dd
    except ImportError:  # pragma: no cover - depends on the environment
        raise ImportError("fairmedfm_fast.dask needs dask and distributed: pip install 'dask[dataframe]' "
                          "distributed (or pip install '.[dask]' in a clone of fairmedfm_fast)") from None
    return dask, dd


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """Within the block, :data:`_ROUTINE_LOGGERS` log only errors (in this process: the scheduler of a
    ``LocalCluster``, and the workers of one without processes); their levels are restored after it.
    Other loggers, and these outside our calls, are left as the user set them."""
    loggers = [logging.getLogger(name) for name in _ROUTINE_LOGGERS]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(max(logger.getEffectiveLevel(), logging.ERROR))
    try:
        yield
    finally:
        for logger, level in zip(loggers, levels):
            logger.setLevel(level)


# ---------------------------------------------------------------------------------------------
# Pass 2: kernel inputs with global codes, sorted by score
# ---------------------------------------------------------------------------------------------

def _code_names(plan: _survey.Plan) -> list[str]:
    k = len(plan.groups) + (1 if plan.combined else 0) + (1 if plan.all_samples else 0)
    return [f"c{j}" for j in range(k)]


def _prepare(part: pd.DataFrame, plan: _survey.Plan) -> pd.DataFrame:
    """One partition as a frame of kernel inputs (the sort of frames, where records cannot hold the codes)."""
    scores, labels, rows = _routing.rows_of(_survey.local_columns(part, plan.columns), plan)
    frame = {_SCORE: scores, _LABEL: labels}
    for name, row in zip(_code_names(plan), rows):
        frame[name] = row.astype(plan.code_dtype)
    return pd.DataFrame(frame)


def _boundaries(surveys: list[dict], plan: _survey.Plan, npartitions: int) -> list[float]:
    """Score values that split the sorted rows into about equal partitions (as probabilities).

    Rows go to partition ``i`` when ``boundary[i] <= score < boundary[i + 1]``: a function of the
    score alone, so equal scores always land in the same partition.
    """
    points = np.concatenate([s["sketch"] for s in surveys if s["sketch"].size])
    weights = np.concatenate([np.full(s["sketch"].size, s["n"] / s["sketch"].size)
                              for s in surveys if s["sketch"].size])
    order = np.argsort(points, kind="stable")
    points, cumulative = points[order], np.cumsum(weights[order])
    wanted = cumulative[-1] * np.arange(1, npartitions) / npartitions
    inner = points[np.minimum(np.searchsorted(cumulative, wanted), len(points) - 1)]
    if plan.score_type == "logit":
        inner = 1 / (1 + np.exp(-inner))
    inner = np.unique(inner.astype(plan.score_dtype).astype(np.float64))
    return [-math.inf, *inner[np.isfinite(inner)].tolist(), math.inf]


# ---------------------------------------------------------------------------------------------
# The sort by score: records routed by score range
# ---------------------------------------------------------------------------------------------

#: Whether the fallback to the sort of frames has been announced in this process.
_told_fallback = False


def _layout(plan: _survey.Plan, sizes: np.ndarray) -> _records.Layout | None:
    """The records of this plan's rows, or None (with one warning per process) when a row's label and
    codes need more than 64 bits: then the rows are sorted as frames (``set_index``)."""
    global _told_fallback
    shifts, pay_bits = [], 1
    for size in sizes.tolist():  # code + 1 in 0..size: size.bit_length() bits
        shifts.append(pay_bits)
        pay_bits += max(int(size).bit_length(), 1)
    if pay_bits > 64:
        if not _told_fallback:
            _told_fallback = True
            warnings.warn(f"fairmedfm_fast.dask: a row's label and group codes need {pay_bits} bits, more than a "
                          "64-bit record holds (many groupings with many groups each); the rows are sorted as "
                          "pandas frames instead, which moves more bytes and takes longer", RuntimeWarning,
                          stacklevel=4)
        return None
    key_bits = 8 * plan.score_dtype.itemsize
    pay_dtype = None if key_bits + pay_bits <= 64 else np.dtype(np.uint32 if pay_bits <= 32 else np.uint64)
    return _records.Layout(plan.score_dtype, plan.code_dtype, tuple(shifts), pay_bits, pay_dtype)


def _row_bytes(plan: _survey.Plan, layout: _records.Layout, sizes: np.ndarray) -> _memory.RowBytes:
    """Bytes a row takes in each stage of the sort of records (:mod:`.dask_memory`)."""
    record = 8 + (0 if layout.pay_dtype is None else layout.pay_dtype.itemsize)
    return _memory.row_bytes(plan.score_dtype.itemsize, record, plan.code_dtype.itemsize, len(plan.groups),
                             len(sizes))


def _summed(summaries: list[tuple[np.ndarray, ...]]) -> tuple[np.ndarray, ...]:
    """``dask_routing.counted`` from each sorted range's ``_ranges.range_summary`` (the sort of frames)."""
    count, positives, low, high = (np.stack(values) for values in zip(*summaries))
    return count, positives, np.fmin.reduce(low, axis=0), np.fmax.reduce(high, axis=0)


def _range_plan(counted: tuple[np.ndarray, ...], *, sizes: np.ndarray, n: int, thresholds: list[float], sweep: bool,
                extra: tuple[str, ...], analytic: bool, entries: tuple) -> _ranges.RangePlan:
    return _ranges.range_plan(*counted, sizes, n, thresholds, sweep, extra, analytic, entries)


# ---------------------------------------------------------------------------------------------
# Pass 3: kernels per sorted partition
# ---------------------------------------------------------------------------------------------

def _arrays(part: pd.DataFrame, names: list[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    # Writable C-contiguous arrays (pandas hands out read-only views), so that the kernels run the
    # machine code compiled for the in-memory path, from numba's cache.
    scores = np.require(part.index.to_numpy(), requirements=["C", "W"])
    labels = np.require(part[_LABEL].to_numpy(), requirements=["C", "W"])
    codes = np.require(part[names].to_numpy().T, requirements=["C", "W"])
    if len(scores) > 1 and not bool(np.all(scores[1:] >= scores[:-1])):  # pragma: no cover - a dask bug
        order = np.argsort(scores, kind="stable")
        scores, labels, codes = scores[order], labels[order], np.ascontiguousarray(codes[:, order])
    return scores, labels, codes


def _groupings(sums: list[dict[str, Any]], plan: _ranges.RangePlan, fixed_best: float | None
               ) -> list[_engine.Grouping]:
    """Per-slot metrics from the ranges' sums, as ``_engine.compute`` lays them out."""
    last = -math.inf
    for part in sums:  # equal scores never straddle ranges: the joined sweeps rely on it
        if part["first"] == part["first"]:
            if not part["first"] > last:
                raise RuntimeError("the distributed sort left equal scores in two partitions; please report "
                                   "this with your dask version")
            last = part["last"]
    return _ranges.from_ranges(sums, plan, fixed_best)


# ---------------------------------------------------------------------------------------------
# Public functions
# ---------------------------------------------------------------------------------------------

def _check_columns(ddf: Any, label: Any, score: Any, sensitive: Any, bins: Any) -> tuple[list[str], dict]:
    _, dd = import_dask()
    if not isinstance(ddf, dd.DataFrame):
        raise ValueError(f"ddf must be a dask.dataframe.DataFrame, got {type(ddf).__name__}; for pandas or "
                         "NumPy data use fairmedfm_fast.evaluate")
    columns = [str(c) for c in ddf.columns]
    if isinstance(sensitive, str):
        sensitive = [sensitive]
    if sensitive is None or not list(sensitive):
        raise ValueError("sensitive names no column: pass the attribute columns, e.g. sensitive=['sex', 'age']")
    sensitive = [str(name) for name in sensitive]
    for option, names in (("label", [label]), ("score", [score]), ("sensitive", sensitive)):
        unknown = [name for name in names if name not in columns]
        if unknown:
            shown = ", ".join(map(repr, columns[:30])) + (", ..." if len(columns) > 30 else "")
            raise ValueError(f"{option}={unknown[0]!r} is not a column of ddf; its columns are {shown}")
    if bins is not None and not isinstance(bins, dict):
        raise ValueError(f"bins must be a dict such as {{'age': [40, 60]}}, got {type(bins).__name__}")
    bins = {str(key): value for key, value in (bins or {}).items()}
    unknown = sorted(set(bins) - set(sensitive))
    if unknown:
        raise ValueError(f"bins names attribute(s) {unknown} that sensitive does not list; the attributes are "
                         f"{sensitive}")
    for name, spec in bins.items():
        _groups.binned(pd.Series([0.0]), spec, name)  # checks the spec itself
    return sensitive, bins


def evaluate(ddf: Any, *, label: str, score: str, sensitive: str | Sequence[str], bins: _groups.Bins | None = None,
             intersectional: bool = False, pos_label: Any = None, score_type: str = "auto",
             threshold: float | None = None, npartitions: int | None = None,
             progress: bool | None = None, metrics: Sequence[str] | None = None, interval: str | None = None,
             ci: float = 0.95, p_adjust: str | None = "holm") -> FairnessReport:
    """Fairness of a binary classifier from a Dask DataFrame, exactly as :func:`fairmedfm_fast.evaluate`.

    Runs on the active Dask scheduler (a ``distributed.Client`` if one exists). Rows never leave the
    workers: the client receives per-partition sums the size of the number of groups.

    Parameters
    ----------
    ddf : dask.dataframe.DataFrame
        One row per sample, e.g. from :func:`read_parquet` or ``dask.dataframe.read_parquet``.
    label : str
        The ground-truth column: 0/1, booleans, or any values together with ``pos_label``.
    score : str
        The column of positive-class probabilities or logits.
    sensitive : str or list of str
        The attribute columns; a missing value leaves the sample out of that attribute only.
    bins : dict, optional
        Cut points (``{"age": [40, 60]}``) or a number of quantile groups (``{"age": 4}``; exact
        quantiles from the global value counts, for attributes with up to a million distinct values).
    intersectional : bool, default False
        Also evaluate the combination of all attributes.
    pos_label : scalar, optional
        The positive class of ``label`` (one-vs-rest when there are more than two).
    score_type : {"auto", "probability", "logit"}
        ``"auto"`` reads scores within [0, 1] (over all partitions) as probabilities, others as logits.
    threshold : float, optional
        A fixed decision threshold for the ``@best_f1`` metrics instead of each attribute's best-F1
        threshold (as in :func:`fairmedfm_fast.evaluate`).
    npartitions : int, optional
        Score ranges of the sort. By default the partitions of ``ddf``, more where sorting a range
        beside the rows a worker holds would take it past half of its memory limit (the peak is in
        ``docs/dask.md``): a range's records (8 bytes a row for float32 scores, 12 or 16 for
        float64), then its kernel arrays (score, label and one code per grouping).
    progress : bool, optional
        A bar of the partitions' passes on stderr (per partition on a distributed cluster); None
        shows it on a terminal or in a notebook when the work takes more than about two seconds.
    metrics : list of str, optional
        Opt-in metrics beside fairmedfm's (``"ap"``, ``"brier"``, ``"selection_rate"``, ``"fpr"``,
        ``"fnr"``), as in :func:`fairmedfm_fast.evaluate`.
    interval, ci, p_adjust : optional
        ``interval="analytic"``: DeLong, Wilson and simultaneous gap intervals at level ``ci`` in
        ``report.ci["analytic"]``, as in :func:`fairmedfm_fast.evaluate` (each partition adds its
        placement sums; ``p_adjust``, ``"holm"`` by default, adjusts the pairwise p-values).

    Returns
    -------
    FairnessReport
        Equal (within 1e-9) to ``fairmedfm_fast.evaluate(df[label], df[score], df[sensitive], ...)``
        on the same rows.
    """
    dask, _ = import_dask()
    names, bins = _check_columns(ddf, label, score, sensitive, bins)
    threshold = check_threshold(threshold)
    metrics = _metric_registry.check_metrics(metrics)
    check_interval(interval, None)
    _resample.check_options("attribute", p_adjust)
    if not (isinstance(ci, (float, int)) and 0 < ci < 1):
        raise ValueError(f"ci must be a coverage strictly between 0 and 1, such as 0.95; got {ci!r}")
    quantile = any(isinstance(spec, (int, np.integer)) for spec in bins.values())
    tasks = ddf.npartitions * (2 if quantile else 1) + 1 + (npartitions or ddf.npartitions)
    with _quiet(), Progress(tasks, "dask", check(progress), unit="task") as bar:
        return _evaluate(dask, ddf, label, score, names, bins, intersectional, pos_label, score_type, threshold,
                         npartitions, bar, metrics, (float(ci), p_adjust) if interval else None, p_adjust)


def _client() -> Any | None:
    """The ``distributed.Client`` our tasks run on, or None (no distributed client: Dask's local
    schedulers run them in this process)."""
    try:
        from distributed import default_client

        return default_client()
    except (ImportError, ValueError):
        return None


def _holders(items: Sequence[Any]) -> list[str | None]:
    """The worker that holds each persisted item on a distributed cluster (None elsewhere, or unknown)."""
    client = _client()
    if client is None:  # the local scheduler holds them
        return [None] * len(items)
    from distributed import futures_of, wait

    futures = [futures_of(item) for item in items]
    if not all(len(found) == 1 for found in futures):
        return [None] * len(items)
    wait([found[0] for found in futures])
    who = client.who_has([found[0] for found in futures])
    return [next(iter(who.get(found[0].key, ())), None) for found in futures]


def _on(dask: Any, worker: str | None) -> contextlib.AbstractContextManager:
    """Tasks made within run on ``worker`` while it is up (``dask.annotate``; nothing when None): those
    that read a persisted partition, which the scheduler may otherwise send to an idle worker along
    with the partition, and the selections of the pieces of a packed partition."""
    if worker is None:
        return contextlib.nullcontext()
    return dask.annotate(workers=[worker], allow_other_workers=True)


def _computed(dask: Any, items: list, bar: Progress) -> list:
    """``dask.compute(*items)``; ``bar`` advances per finished item on a distributed cluster, else
    by all of them at the end."""
    client = _client() if bar.shown else None
    if client is None:
        out = list(dask.compute(*items))
        bar.update(len(items))
        return out
    from distributed import as_completed

    futures = client.compute(items)
    for _ in as_completed(futures):
        bar.update()
    return client.gather(futures)


def _submitted(dask: Any, items: list) -> Any:
    """``items`` handed to the distributed cluster (their futures), or the items themselves where there
    is none (computed by :func:`_collected`)."""
    client = _client()
    if client is not None:  # unless dask.config sets another scheduler (a test's "sync", say)
        from dask.base import get_scheduler

        if get_scheduler() != client.get:
            client = None
    return (None, items) if client is None else (client, client.compute(items))


def _collected(dask: Any, pending: Any, bar: Progress) -> list:
    """The results of :func:`_submitted`; ``bar`` advances per finished item on a cluster."""
    client, items = pending
    if client is None:
        out = list(dask.compute(*items))
        bar.update(len(items))
        return out
    from distributed import as_completed

    for _ in as_completed(items):
        bar.update()
    return client.gather(items)


def _evaluate(dask: Any, ddf: Any, label: str, score: str, names: list[str], bins: dict, intersectional: bool,
              pos_label: Any, score_type: str, threshold: float | None, npartitions: int | None,
              bar: Progress, metrics: Sequence[str] = (), analytic: tuple[float, str | None] | None = None,
              p_adjust: str | None = "holm") -> FairnessReport:
    ddf = ddf[list(dict.fromkeys([label, score, *names]))]
    meta = ddf._meta
    quantile = [name for name, spec in bins.items() if isinstance(spec, (int, np.integer))]
    if quantile:
        counts = _computed(dask, [dask.delayed(_survey.value_counts)(part, quantile) for part in ddf.to_delayed()], bar)
        for name in quantile:
            bins[name] = _survey.quantile_cut_points([c[name] for c in counts], int(bins[name]), name)
    target = npartitions or ddf.npartitions
    columns = _survey.Columns(label, score, names, bins, intersectional, pos_label,
                       min(10_000, max(_survey.SKETCH, -(-4 * target // ddf.npartitions))))
    passes = 1 if npartitions else _memory.passes_for_memory(_row_count(ddf), _guessed_bytes(meta, score, names),
                                                           _memory.workers_memory(_client()))
    local, holders, surveys = _surveyed(dask, ddf, columns, passes, bar)
    plan, metadata = _survey.global_plan(list(surveys), columns, meta, score_type)

    sizes = np.array([len(g) for g in plan.groups] + ([len(plan.combined)] if plan.combined else [])
                     + ([1] if plan.all_samples else []), np.int64)
    layout = _layout(plan, sizes)
    if npartitions is None and layout is not None:  # enough ranges that sorting one fits in a worker's memory
        most = max(target, columns.sketch * ddf.npartitions // 4)
        target = passes * _memory.ranges_for_memory(-(-metadata["n_samples"] // passes), _row_bytes(plan, layout, sizes),
                                                    _memory.workers_memory(_client()), -(-target // passes),
                                                    max(1, most // passes))
        bar.grow(target - ddf.npartitions + passes - 1)
    divisions = _boundaries(list(surveys), plan, target)
    extra = _metric_registry.optional_keys(metrics)
    make_plan = functools.partial(_range_plan, sizes=sizes, n=metadata["n_samples"],
                                  thresholds=[0.5] if threshold is None else [0.5, threshold], sweep=threshold is None,
                                  extra=tuple(extra), analytic=analytic is not None,
                                  entries=_ranges.sum_entries(tuple(extra)))
    if layout is not None and local is None:  # passes over the files, each sorting a share of the ranges
        bounds = _records.bits(np.array(divisions[1:-1], plan.score_dtype))
        return _finish(plan, *_in_passes(dask, ddf, columns, passes, holders, plan, layout, bounds, sizes, make_plan,
                                         bar), sizes, threshold, metadata, metrics, analytic, p_adjust)
    if layout is not None:  # records routed by score range, each range sorted where it lands
        bounds = _records.bits(np.array(divisions[1:-1], plan.score_dtype))
        ranged, sums = _routing.routed(local, holders, plan, layout, bounds, sizes, make_plan)
        # Submitted, the graph keeps each partition's columns only until its records are packed: this
        # function lets go of them (on a distributed cluster; Dask's local schedulers run it here).
        pending = _submitted(dask, [ranged, *sums])
        del local, ranged, sums
        done = _collected(dask, pending, bar)
        ranged, sums = done[0], done[1:]
        return _finish(plan, ranged, list(sums), sizes, threshold, metadata, metrics, analytic, p_adjust)
    else:  # the sort of frames
        code_names = _code_names(plan)
        frame_meta = pd.DataFrame({_SCORE: np.empty(0, plan.score_dtype), _LABEL: np.empty(0, np.uint8),
                                   **{name: np.empty(0, plan.code_dtype) for name in code_names}})
        ordered = ddf.map_partitions(_prepare, plan, meta=frame_meta).set_index(_SCORE, divisions=divisions)
        ranges = [dask.delayed(_arrays)(part, code_names) for part in ordered.to_delayed()]
        counted = dask.delayed(_summed)([dask.delayed(_ranges.range_summary)(rows[0], rows[1], rows[2], sizes)
                                         for rows in ranges])
        ranged = dask.delayed(make_plan)(counted)
        sums = [dask.delayed(_routing.range_sums)(rows, ranged, r) for r, rows in enumerate(ranges)]
    done = _computed(dask, [ranged, *sums], bar)
    return _finish(plan, done[0], list(done[1:]), sizes, threshold, metadata, metrics, analytic, p_adjust)


def _surveyed(dask: Any, ddf: Any, columns: _survey.Columns, passes: int, bar: Progress
              ) -> tuple[tuple | None, list[str | None], list[dict]]:
    """The partitions' surveys, beside their columns kept in the workers' memory for the sort and the
    worker that holds each (in one pass); in several passes, the columns are read for the survey and
    again by each pass (None, and no holders)."""
    if passes == 1:  # each partition read once: kept in its worker's memory for the survey and the sort
        local = dask.persist(*[dask.delayed(_survey.local_columns)(part, columns) for part in ddf.to_delayed()])
        holders = _holders(local)
        surveys = []
        for item, holder in zip(local, holders):
            with _on(dask, holder):
                surveys.append(dask.delayed(_survey.survey)(item, columns))
        return local, holders, _computed(dask, surveys, bar)
    surveys = [dask.delayed(_survey.survey)(dask.delayed(_survey.local_columns)(part, columns), columns)
               for part in ddf.to_delayed()]
    return None, [None] * ddf.npartitions, _computed(dask, surveys, bar)


def _row_count(ddf: Any) -> int | None:
    """The rows of ``ddf`` where its graph knows them without reading (Parquet metadata, pandas), else None."""
    try:
        lengths = ddf.expr.simplify()._get_lengths()
    except Exception:  # another source, or a dask without expressions: unknown
        return None
    return int(sum(lengths)) if lengths is not None and None not in lengths else None


def _guessed_bytes(meta: pd.DataFrame, score: str, names: list[str]) -> _memory.RowBytes:
    """Bytes a row takes (:mod:`.dask_memory`) as far as the frame's dtypes tell before the survey:
    float32 scores travel in one word, others in two; a byte per attribute's codes."""
    width = 4 if meta[score].dtype == np.float32 else 8
    return _memory.row_bytes(width, 8 if width == 4 else 16, 1, len(names), len(names) + 1)


def _in_passes(dask: Any, ddf: Any, columns: _survey.Columns, passes: int, holders: list, plan: _survey.Plan,
               layout: _records.Layout, bounds: np.ndarray, sizes: np.ndarray, make_plan: Callable, bar: Progress
               ) -> tuple[_ranges.RangePlan, list[dict[str, Any]]]:
    """The sort of records in ``passes`` passes over the files, each reading every partition again and
    packing, sorting and summing the rows of a share of the score ranges (consecutive, about as many
    each): a worker holds a pass's records, not all of them."""
    n_ranges = len(bounds) + 1
    cuts = [n_ranges * j // passes for j in range(passes + 1)]
    warnings.warn(f"fairmedfm_fast.dask: the rows do not fit in the workers' memory at once; the files are read "
                  f"{passes} more times, each pass sorting a share of the score ranges (slower than one pass, "
                  "exact, nothing spilled). More workers or memory (LocalCluster(memory_limit=...)) sort them in one",
                  RuntimeWarning, stacklevel=4)
    ranged, sums = None, []
    for first, stop in zip(cuts[:-1], cuts[1:]):
        local = [dask.delayed(_survey.local_columns)(part, columns) for part in ddf.to_delayed()]
        plan_of, kept = _routing.routed(local, holders, plan, layout, bounds, sizes, make_plan, range(first, stop))
        done = _collected(dask, _submitted(dask, [plan_of, *kept]), bar)
        ranged = done[0] if ranged is None else ranged  # every pass counts every range: the same plan
        sums += done[1:]
    return ranged, sums


def _finish(plan: _survey.Plan, ranged: _ranges.RangePlan, sums: list[dict[str, Any]], sizes: np.ndarray,
            threshold: float | None, metadata: dict[str, Any], metrics: Sequence[str],
            analytic: tuple[float, str | None] | None, p_adjust: str | None) -> FairnessReport:
    """The report from the ranges' sums."""
    groupings = _groupings(sums, ranged, threshold)
    metadata.update(asked(threshold, metrics=metrics))
    report, results = _report(plan, groupings, metadata, p_adjust)
    if analytic is not None:
        _with_analytic(report, results, sums, sizes, *analytic)
    return report


def _with_analytic(report: FairnessReport, results: list, sums: list[dict[str, Any]], sizes: np.ndarray, level: float,
                   p_adjust: str | None) -> None:
    """``interval="analytic"``: the DeLong variances from the ranges' placement sums, the intervals, and
    ``report.gaps`` with the analytic gap intervals, as evaluate's."""
    starts = np.concatenate(([0], np.cumsum(sizes + 1)))
    variances = {k: _analytic.variances_of([part["placement"][starts[k]:starts[k + 1]] for part in sums])
                 for k, result in enumerate(results) if result.rows}
    report.ci = {"level": level, "n_boot": 0,
                 "analytic": _analytic.from_variances(variances, results, level, report.warnings, p_adjust)}
    report.metadata.update(ci=level, p_adjust=p_adjust)
    with_gaps(report, results, {r.name: _findings.small_groups(r) for r in results}, p_adjust, level)


def _report(plan: _survey.Plan, groupings: list[_engine.Grouping], metadata: dict[str, Any],
            p_adjust: str | None = "holm") -> tuple[FairnessReport, list]:
    """The report of ``fairmedfm_fast.evaluate`` from the groupings (its assembly, step by step)."""
    warnings = transform_note(metadata, plan.conversion)
    n = metadata["n_samples"]
    attributes = [_groups.Attribute(name, np.empty(0, np.intp), groups)
                  for name, groups in zip(plan.columns.sensitive, plan.groups)]
    if plan.combined:
        names = _groups.intersection_names([tuple(plan.groups[j][i] for j, i in enumerate(cell))
                                            for cell in plan.combined], list(plan.columns.sensitive))
        attributes.append(_groups.Attribute(" & ".join(plan.columns.sensitive), np.empty(0, np.intp), names))
    complete = len(groupings) - 1 if plan.all_samples else next(
        k for k, grouping in enumerate(groupings) if int(grouping.count[-1]) == n)
    overall = {key: as_python(values[-1]) for key, values in groupings[complete].values.items()}
    results = [attribute_result(attribute, grouping, n, warnings) for attribute, grouping in zip(attributes, groupings)]
    report, _ = assemble(results, overall, warnings, metadata, attributes=attributes, settings=dict(
        threshold=metadata.get("threshold"), random_state=None, seed=None, n_boot=0, n_permutations=0, ci=0.95,
        stratify="attribute", p_adjust=p_adjust, intersectional=bool(plan.columns.intersectional),
        metrics=list(metadata.get("metrics", [])), n_samples=n), bins=plan.columns.bins)
    return report, results


def read_parquet(path: Any, columns: Sequence[str] | None = None, **options: Any):
    """A Dask DataFrame over Parquet files: what ``dask.dataframe.read_parquet`` takes (a file, a
    directory of them, a glob pattern, a list of any of these, a filesystem URL).

    Every worker must be able to open the paths (a shared file system or object store URL such as
    ``s3://bucket/predictions/``); nothing is read on the client but the Parquet footers. Local paths
    are checked first (a path that does not exist, a glob that matches nothing: a ``ValueError`` naming
    it). ``options`` go to ``dask.dataframe.read_parquet``.
    """
    _, dd = import_dask()
    if isinstance(path, (list, tuple)):
        if not path:
            raise ValueError("path is an empty list; give Parquet files, directories or globs")
        files = [name for item in path for found in _local_paths(item) for name in _files_of(found)]
        return dd.read_parquet(files if len(files) > 1 else files[0], columns=list(columns) if columns else None,
                               **options)
    found = _local_paths(path)
    target = found if glob.has_magic(os.fspath(path)) else found[0]
    return dd.read_parquet(target, columns=list(columns) if columns else None, **options)


def _files_of(path: str) -> list[str]:
    """A directory in a list of paths as its Parquet files (sorted, subdirectories included)."""
    if "://" in path or not os.path.isdir(path):
        return [path]
    files = sorted(glob.glob(os.path.join(path, "**", "*.parquet"), recursive=True))
    if not files:
        raise ValueError(f"directory {path!r} holds no .parquet file")
    return files


def _local_paths(path: Any) -> list[str]:
    """The files (or the URL, or the directory) a path names: a glob's matches, sorted; a directory of
    a list its Parquet files."""
    try:
        text = os.fspath(path)
    except TypeError:
        raise ValueError(f"path must be a file, a directory, a glob or a list of them, got {type(path).__name__}") \
            from None
    if "://" in text:
        return [text]
    if glob.has_magic(text):
        files = sorted(glob.glob(text))
        if not files:
            raise ValueError(f"no file matches {text!r}; give a Parquet file, a directory or a glob such as "
                             "'predictions/*.parquet'")
        return files
    if not os.path.exists(text):
        raise ValueError(f"{text!r} does not exist; give a Parquet file, a directory or a glob such as "
                         "'predictions/*.parquet'")
    return [text]
