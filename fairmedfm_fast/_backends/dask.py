"""Exact fairness metrics on Dask: datasets larger than one machine, Parquet read out of core.

:func:`evaluate` takes a ``dask.dataframe.DataFrame`` and returns the same
:class:`~fairmedfm_fast.FairnessReport` as :func:`fairmedfm_fast.evaluate` on the same rows, without
collecting the rows into one process:

1. A survey pass (one small summary per partition): label values, score range, the group values of
   each attribute (and their combinations), a score sketch for the range boundaries. The columns it
   reads stay in the workers' memory (``dask.persist``) for the sort: the files are read once.
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
README section "Dask and out-of-core data" for running on a cluster.
"""
from __future__ import annotations

import contextlib
import functools
import glob
import logging
import math
import operator
import os
import uuid
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from .._engine import classification as _engine
from .._engine import ranges as _ranges
from .._engine import records as _records
from .._engine import resample as _resample
from .._inputs import arrays as _inputs
from .._inputs import groups as _groups
from .._registry import metrics as _metric_registry
from .._report.assembly import asked, assemble, with_gaps
from .._report.frame import FairnessReport
from .._statistics import analytic as _analytic
from .._statistics import findings as _findings
from .._util.progress import Progress, check
from .assess import as_python, attribute_result, range_conversion, transform_note
from .checks import check_interval, check_threshold

__all__ = ["evaluate", "evaluate_segmentation", "read_parquet"]

#: Label values each partition reports (enough to validate labels and tell two classes from more).
_LABEL_VALUES = 64
#: Score quantiles each partition reports (at least), from which the sort boundaries are chosen.
_SKETCH = 64
#: Attribute combinations (missing values included) up to which the intersectional codes come from a
#: table of every combination rather than a search.
_DENSE_CELLS = 1 << 22
#: Distinct values of an attribute with quantile bins that the exact quantiles may gather.
_QUANTILE_VALUES = 1_000_000
_SCORE, _LABEL = "score", "label"
#: Loggers of ``distributed`` that note every shuffle at WARNING ("Shuffle ... initialized by task ...",
#: "... deactivated due to stimulus ..."): routine for our sort, so raised to ERROR during our calls.
_ROUTINE_LOGGERS = ("distributed.shuffle",)


def _dask():
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
# Columns of one partition
# ---------------------------------------------------------------------------------------------

def _numbers(series: pd.Series, what: str) -> np.ndarray:
    """A numeric column as a NumPy array (nullable and Arrow numbers with NaN for missing)."""
    dtype = series.dtype
    if isinstance(dtype, pd.api.extensions.ExtensionDtype) and pd.api.types.is_numeric_dtype(dtype) \
            and not pd.api.types.is_bool_dtype(dtype):
        return series.to_numpy(dtype=np.float64, na_value=np.nan)
    return _inputs.numeric(_inputs.to_numpy(series, what), what, series.dtype)


def _labels(series: pd.Series, label: str) -> np.ndarray:
    return _inputs.to_numpy(series, f"label column {label!r}")


def _attribute_column(part: pd.DataFrame, name: str) -> pd.Series:
    return part[name].reset_index(drop=True)


def _local_codes(values: pd.Series, name: str, spec: Any) -> tuple[np.ndarray, list[str]] | None:
    """Codes and present group names of one partition of an attribute (None: too many numbers)."""
    if spec is not None:
        return _groups.binned(values, spec, name)
    return _groups.encode_values(values, _groups.MAX_NUMERIC_GROUPS if _groups.is_numeric(values) else None)


# ---------------------------------------------------------------------------------------------
# Pass 1: survey
# ---------------------------------------------------------------------------------------------

@dataclass
class _Columns:
    label: str
    score: str
    sensitive: list[str]
    bins: dict[str, Any]  # attribute -> cut points (list) or number of quantile groups (int)
    intersectional: bool
    pos_label: Any
    sketch: int = _SKETCH  # score quantiles per partition: enough for the partitions of the sort


#: One partition's columns as arrays (:func:`_local`): raw labels, scores as numbers, per attribute its
#: local codes (the narrowest integer type) and group names (None: too many numbers), per attribute
#: its categories (None: not categorical). A tuple, so that Dask measures its size.
_LocalColumns = tuple[np.ndarray, np.ndarray, list[tuple[np.ndarray, list[str]] | None], list[list[str] | None]]


def _local(part: pd.DataFrame, columns: _Columns) -> _LocalColumns:
    """The columns of one partition that the survey and the sort read, read once: the survey's tasks
    and the sort's take them from the worker's memory (``dask.persist``) instead of the files."""
    raw = _labels(part[columns.label], columns.label)
    scores = _numbers(part[columns.score], f"score column {columns.score!r}")
    encoded, categories = [], []
    for name in columns.sensitive:
        values = _attribute_column(part, name)
        is_categorical = isinstance(values.dtype, pd.CategoricalDtype)
        categories.append([_groups.group_name(v) for v in values.cat.categories.tolist()] if is_categorical
                          else None)
        item = _local_codes(values, name, columns.bins.get(name))
        if item is not None:
            codes, names = item
            item = (codes.astype(_engine.code_dtype(len(names)), copy=False), names)
        encoded.append(item)
    return raw, scores, encoded, categories


def _survey(local: _LocalColumns, columns: _Columns) -> dict[str, Any]:
    """What the global checks and codes need to know about one partition, in a few kilobytes."""
    raw, scores, encoded, categories = local
    n = len(raw)
    distinct = pd.unique(raw)[:_LABEL_VALUES]
    found = 0
    if columns.pos_label is not None:
        matches = np.flatnonzero(np.asarray(raw == columns.pos_label))
        found = len(matches)
        if found:
            distinct = np.concatenate([distinct, raw[matches[:1]]])
    nan_labels = int(np.isnan(raw).sum()) if raw.dtype.kind == "f" else 0
    ones = int(np.count_nonzero(raw == 1)) if raw.dtype.kind in "biuf" else 0

    nan_scores = int(np.isnan(scores).sum()) if scores.dtype.kind == "f" else 0
    present = scores[~np.isnan(scores)] if nan_scores else scores
    if present.size:
        low, high = float(present.min()), float(present.max())
        # from an evenly strided sample of at most 32 values per quantile: the boundaries only balance
        # the ranges (any boundaries give the same report)
        sample = present[::max(1, present.size // (32 * columns.sketch))].astype(np.float64)
        sketch = np.quantile(sample, np.linspace(0, 1, columns.sketch + 1))
    else:
        low, high, sketch = math.inf, -math.inf, np.empty(0)

    groups = [None if item is None else item[1] for item in encoded]
    missing = [0 if item is None else int(np.count_nonzero(item[0] < 0)) for item in encoded]
    combos: list[tuple[str, ...]] = []
    if columns.intersectional and len(columns.sensitive) > 1 and all(item is not None for item in encoded):
        combos = _present_combinations(encoded)
    return {"n": n, "labels": distinct, "label_nan": nan_labels, "label_ones": ones, "label_found": found,
            "score_nan": nan_scores, "score_low": low, "score_high": high, "score_dtype": scores.dtype,
            "sketch": sketch, "groups": groups, "missing": missing, "combos": combos,
            "categories": categories}


def _value_counts(part: pd.DataFrame, names: list[str]) -> dict[str, pd.Series | None]:
    """Per attribute with quantile bins, the counts of its present values (None: too many)."""
    counts = {}
    for name in names:
        values = _attribute_column(part, name)
        _groups.binned(values, [0.0], name)  # only its check that the values are numbers
        numeric = pd.to_numeric(values, errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
        found = pd.Series(numeric[~np.isnan(numeric)]).value_counts(sort=False)
        counts[name] = found if len(found) <= _QUANTILE_VALUES else None
    return counts


def _present_combinations(local: list[tuple[np.ndarray, list[str]]]) -> list[tuple[str, ...]]:
    """Name tuples of the attribute combinations present in a partition (rows with every value)."""
    space = math.prod(len(names) + 1 for _, names in local)
    key = np.zeros(len(local[0][0]), np.int32 if space < 2**31 else np.int64)
    for codes, names in local:  # code + 1: 0 for a missing value; in place, no temporary per step
        key *= len(names) + 1
        key += codes
        key += 1
    # a count per combination where there are few (no sort), else the distinct keys
    keys = np.flatnonzero(np.bincount(key, minlength=space)) if space <= _DENSE_CELLS else np.unique(key)
    found = []
    for value in keys.tolist():
        parts = []
        for _, names in reversed(local):
            width = len(names) + 1
            parts.append(value % width - 1)
            value //= width
        if min(parts) >= 0:  # rows with every value
            found.append(tuple(names[code] for (_, names), code in zip(local, reversed(parts))))
    return found


# ---------------------------------------------------------------------------------------------
# Global plan from the surveys
# ---------------------------------------------------------------------------------------------

@dataclass
class _Plan:
    """Everything the partitions need to turn their rows into kernel inputs with global codes."""

    columns: _Columns
    score_type: str  # "probability" or "logit", applied per partition with the global decision
    score_dtype: np.dtype
    groups: list[list[str]]  # global group names per attribute, report order
    combined: list[tuple[int, ...]] = field(default_factory=list)  # intersectional groups as code tuples
    code_dtype: np.dtype = field(default_factory=lambda: np.dtype(np.intp))
    all_samples: bool = False  # add a grouping of every sample (no attribute is complete)
    conversion: dict = field(default_factory=dict)  # facts of a sigmoid conversion, for transform_note


def _check_labels(surveys: list[dict], columns: _Columns) -> tuple[dict[str, Any], int]:
    """Label validation with the rules of the in-memory ``evaluate``; returns metadata and positives."""
    name = columns.label
    distinct = pd.unique(np.concatenate([s["labels"] for s in surveys]))
    if columns.pos_label is None and distinct.dtype.kind == "f":
        nan = sum(s["label_nan"] for s in surveys)
        if nan:
            raise ValueError(f"label column {name!r} has {nan} missing values (NaN or null); "
                             f"{_inputs.MISSING_RULE}, e.g. ddf.dropna(subset=[{name!r}])")
    try:
        _, info = _inputs.binary_labels(distinct, columns.pos_label)
    except ValueError as error:
        raise ValueError(f"label column {name!r}: {error}") from None
    key = "label_found" if columns.pos_label is not None else "label_ones"
    return info, sum(s[key] for s in surveys)


def _score_decision(surveys: list[dict], columns: _Columns, score_type: str) -> tuple[str, np.dtype, dict]:
    if score_type not in ("auto", "probability", "logit"):
        raise ValueError(f"score_type={score_type!r} is not one of 'auto', 'probability', 'logit'")
    nan = sum(s["score_nan"] for s in surveys)
    if nan:
        raise ValueError(f"score column {columns.score!r} has {nan} missing values (NaN or null); "
                         f"{_inputs.MISSING_RULE}, e.g. ddf.dropna(subset=[{columns.score!r}])")
    low = min(s["score_low"] for s in surveys)
    high = max(s["score_high"] for s in surveys)
    probability = low >= 0 and high <= 1
    if score_type == "probability" and not probability:
        raise _inputs.not_probabilities(f"the score column {columns.score!r}", low, high)
    raw_dtype = surveys[0]["score_dtype"]
    if score_type == "logit" or not probability:
        return "logit", np.dtype(np.float64), {"score_transform": "sigmoid"}
    return "probability", np.dtype(np.float32 if raw_dtype == np.float32 else np.float64), {}


def _conversion(surveys: list[dict], score_type: str, mode: str) -> dict[str, Any]:
    """What the in-memory ``evaluate`` knows of a sigmoid conversion, from the survey's range (ties that
    the sigmoid makes between logits are not counted here: that needs the sorted scores)."""
    if mode != "logit":
        return {}
    return range_conversion(score_type, min(s["score_low"] for s in surveys), max(s["score_high"] for s in surveys))


def _quantile_cut_points(counts: list[pd.Series], quantiles: int, name: str) -> list[float]:
    """``numpy.quantile`` (linear) of the present values from their global value counts, exactly."""
    if any(c is None for c in counts):
        raise ValueError(f"bins[{name!r}]={quantiles}: attribute {name!r} has too many distinct values for "
                         "exact quantiles on Dask; give cut points instead, e.g. bins={"
                         f"{name!r}: [40, 60]}}")
    merged = pd.concat(counts).groupby(level=0, sort=True).sum() if counts else pd.Series([], dtype=np.int64)
    if merged.empty:
        raise ValueError(f"bins[{name!r}]: attribute {name!r} has no values to take quantiles of")
    values = merged.index.to_numpy(dtype=np.float64)
    ends = np.cumsum(merged.to_numpy())  # rank r (0-based) holds values[searchsorted(ends, r, "right")]
    n = int(ends[-1])
    q = np.linspace(0, 1, int(quantiles) + 1)[1:-1]
    # numpy's "linear" method: virtual index (n - 1) * q, then its _lerp of the two neighbours.
    virtual = (n - 1) * q
    below = np.floor(virtual)
    above = np.minimum(below + 1, n - 1)
    gamma = virtual - below
    a = values[np.searchsorted(ends, below.astype(np.int64), side="right")]
    b = values[np.searchsorted(ends, above.astype(np.int64), side="right")]
    difference = b - a
    result = a + difference * gamma
    upper = gamma >= 0.5
    result[upper] = (b - difference * (1 - gamma))[upper]
    return np.unique(result).tolist()


def _plan(surveys: list[dict], columns: _Columns, meta: pd.DataFrame, score_type: str
          ) -> tuple[_Plan, dict[str, Any]]:
    """Validate globally (in the order of the in-memory ``evaluate``) and fix the global codes."""
    n = sum(s["n"] for s in surveys)
    if n == 0:
        raise ValueError("the Dask DataFrame has no rows: pass one row per sample")
    label_info, positives = _check_labels(surveys, columns)
    mode, dtype, score_info = _score_decision(surveys, columns, score_type)
    groups: list[list[str]] = []
    missing = []
    for j, name in enumerate(columns.sensitive):
        parts = [s["groups"][j] for s in surveys]
        spec = columns.bins.get(name)
        present = set().union(*(p for p in parts if p))
        numeric = spec is None and _groups.is_numeric(meta[name])
        if any(p is None for p in parts) or (numeric and len(present) > _groups.MAX_NUMERIC_GROUPS):
            raise ValueError(
                f"attribute {name!r} looks continuous (more than {_groups.MAX_NUMERIC_GROUPS} distinct "
                f"numbers); group it with bins={{{name!r}: [40, 60]}} (cut points) or bins={{{name!r}: 4}} "
                "(quantile groups)")
        missing.append(sum(s["missing"][j] for s in surveys))
        groups.append(_global_order(name, meta[name], present, spec, [s["categories"][j] for s in surveys],
                                    missing[-1] > 0))
    if positives == 0 or positives == n:
        raise ValueError(f"label column {columns.label!r} has only label {1 if positives else 0} ({n} "
                         "samples); fairness metrics need both positive and negative samples")
    combined: list[tuple[int, ...]] = []
    sizes = [len(g) for g in groups]
    if columns.intersectional and len(groups) > 1:
        position = [{g: i for i, g in enumerate(names)} for names in groups]
        cells = {combo for s in surveys for combo in s["combos"]}
        combined = sorted(tuple(position[j][g] for j, g in enumerate(cell)) for cell in cells)
        sizes.append(len(combined))
    plan = _Plan(columns, mode, dtype, groups, combined, _engine.code_dtype(max(sizes, default=1)),
                 all_samples=all(m > 0 for m in missing), conversion=_conversion(surveys, score_type, mode))
    return plan, {**label_info, **score_info, "n_samples": n}


def _global_order(name: str, column: pd.Series, present: set[str], cut_points: list[float] | None,
                  categories: list[list[str] | None], has_missing: bool) -> list[str]:
    """Group names in the order of the in-memory report.

    Categorical columns without missing values follow their categories: those of the Dask meta when
    it knows them, else (Parquet dictionaries, read per file) the union of the partitions'
    categories in partition order, as pyarrow unifies the dictionaries of a dataset read into one
    table. With a missing value they are sorted, as in memory (fairmedfm's rule).
    """
    if cut_points is not None:
        edges = sorted(float(edge) for edge in cut_points)
        _, full = _groups.binned(pd.Series([-np.inf, *edges]), list(edges), name)
        return [label for label in full if label in present]
    dtype = column.dtype
    if not isinstance(dtype, pd.CategoricalDtype) or has_missing:
        return sorted(present, key=_groups.order_key)
    known = [] if dtype.categories is None else list(dtype.categories)
    if known and "__UNKNOWN_CATEGORIES__" not in known:
        names = [_groups.group_name(value) for value in known]
    else:
        names = [label for part in categories if part for label in part]
    ordered: list[str] = []
    for label in names:
        if label in present and label not in ordered:
            ordered.append(label)
    return ordered


# ---------------------------------------------------------------------------------------------
# Pass 2: kernel inputs with global codes, sorted by score
# ---------------------------------------------------------------------------------------------

def _code_names(plan: _Plan) -> list[str]:
    k = len(plan.groups) + (1 if plan.combined else 0) + (1 if plan.all_samples else 0)
    return [f"c{j}" for j in range(k)]


def _rows(local: _LocalColumns, plan: _Plan) -> tuple[np.ndarray, np.ndarray, list[np.ndarray]]:
    """One partition as kernel inputs: probabilities, 0/1 labels and one global code row per grouping."""
    columns = plan.columns
    raw, numbers, encoded, _ = local
    n = len(raw)
    if columns.pos_label is not None:
        labels = np.asarray(raw == columns.pos_label).astype(np.uint8)
    else:
        labels = raw.astype(np.uint8)
    if n:
        scores = _inputs.positive_scores(numbers, plan.score_type)[0].astype(plan.score_dtype, copy=False)
    else:
        scores = np.empty(0, plan.score_dtype)
    rows = []
    for (codes, local_names), names in zip(encoded, plan.groups):
        position = {group: i for i, group in enumerate(names)}
        # in the narrow type of the records' codes: a gather into int64 wrote 8 bytes a row
        lookup = np.array([position[group] for group in local_names] + [-1], plan.code_dtype)
        rows.append(lookup[codes])
    if plan.combined:
        rows.append(_combined_codes(rows, plan))
    if plan.all_samples:
        rows.append(np.zeros(n, plan.code_dtype))
    return scores, labels, rows


def _prepare(part: pd.DataFrame, plan: _Plan) -> pd.DataFrame:
    """One partition as a frame of kernel inputs (the sort of frames, where records cannot hold the codes)."""
    scores, labels, rows = _rows(_local(part, plan.columns), plan)
    frame = {_SCORE: scores, _LABEL: labels}
    for name, row in zip(_code_names(plan), rows):
        frame[name] = row.astype(plan.code_dtype)
    return pd.DataFrame(frame)


def _combined_codes(rows: list[np.ndarray], plan: _Plan) -> np.ndarray:
    """Codes of the intersectional attribute: the index of each row's combination among those present."""
    widths = [len(names) + 1 for names in plan.groups]  # code + 1: 0 for a missing value
    space = math.prod(widths)
    key = np.zeros(len(rows[0]), np.int32 if space < 2**31 else np.int64)
    for row, width in zip(rows, widths):  # in place: no temporary array per step
        key *= width
        key += row
        key += 1
    cells = np.zeros(len(plan.combined), np.int64)  # ascending, as the combinations are
    for i, cell in enumerate(plan.combined):
        value = 0
        for code, width in zip(cell, widths):
            value = value * width + code + 1
        cells[i] = value
    if space <= _DENSE_CELLS:  # one gather from a table of every combination
        table = np.full(space, -1, plan.code_dtype)
        table[cells] = np.arange(len(cells))
        return table[key]
    codes = np.searchsorted(cells, key)
    found = codes < len(cells)
    found[found] = cells[codes[found]] == key[found]
    return np.where(found, codes, -1)


def _boundaries(surveys: list[dict], plan: _Plan, npartitions: int) -> list[float]:
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


def _layout(plan: _Plan, sizes: np.ndarray) -> _records.Layout | None:
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


def _pack(local: _LocalColumns, *, plan: _Plan, layout: _records.Layout, bounds: np.ndarray, sizes: np.ndarray) -> tuple:
    """One partition's rows (:func:`_local`) as records, split by score range: a tuple of one piece per
    range (the words, or the keys and payloads), each sent whole to the task that sorts its range,
    then the partition's counts: per range and slot its negatives and positives (R, n_slots, 2), and
    per slot the lowest and highest score's key (n_slots, 2; see ``kernels.records``)."""
    return _records.route(*_rows(local, plan), layout, bounds, sizes)


def _counted(counts: list[tuple[np.ndarray, np.ndarray]], *, dtype: np.dtype) -> tuple[np.ndarray, ...]:
    """Per range and slot the samples and positives (R, n_slots), per slot the lowest and highest
    score (NaN where empty), from the partitions' counts (:func:`_pack`)."""
    tally = sum(c[0] for c in counts)
    low = np.minimum.reduce([c[1][:, 0] for c in counts])
    high = np.maximum.reduce([c[1][:, 1] for c in counts])
    count = tally[:, :, 0] + tally[:, :, 1]
    empty = count.sum(axis=0) == 0
    low, high = _records.key_scores(low, dtype), _records.key_scores(high, dtype)
    low[empty] = high[empty] = np.nan
    return count, tally[:, :, 1], low, high


def _summed(summaries: list[tuple[np.ndarray, ...]]) -> tuple[np.ndarray, ...]:
    """:func:`_counted` from each sorted range's ``_ranges.range_summary`` (the sort of frames)."""
    count, positives, low, high = (np.stack(values) for values in zip(*summaries))
    return count, positives, np.fmin.reduce(low, axis=0), np.fmax.reduce(high, axis=0)


def _range_plan(counted: tuple[np.ndarray, ...], *, sizes: np.ndarray, n: int, thresholds: list[float], sweep: bool,
                extra: tuple[str, ...], analytic: bool, entries: tuple) -> _ranges.RangePlan:
    return _ranges.range_plan(*counted, sizes, n, thresholds, sweep, extra, analytic, entries)


def _sorted_range(pieces: list, layout: _records.Layout, sizes: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The records of one score range (a piece from each partition) as the sorted kernel inputs: scores,
    labels and codes (K, n). One word a row: a sort of the words (NumPy's, SIMD where the CPU has it)
    is the sort by score, then by label and codes; two words: the in-memory sort
    (``_engine.arrange``) of the unpacked rows."""
    two = layout.pay_dtype is not None
    words = np.concatenate([piece[0] if two else piece for piece in pieces]) if pieces else np.empty(0, np.uint64)
    pays = np.concatenate([piece[1] for piece in pieces]) if two and pieces else np.empty(0, layout.pay_dtype or
                                                                                       np.uint64)
    if not two:
        words.sort()  # a fresh array (concatenate copies): the pieces stay as they were
    scores, labels, codes = _records.unpack(words, pays, layout, len(sizes))
    if two:
        arranged = _engine.arrange(scores, labels, list(codes), sizes.tolist())
        scores, labels, codes = arranged.scores, arranged.labels, arranged.codes
    return scores, labels, codes


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


def _range_sums(rows: tuple[np.ndarray, np.ndarray, np.ndarray], plan: _ranges.RangePlan, index: int
                ) -> dict[str, Any]:
    """The engine's sums of one sorted range (``_ranges.range_sums``), with its first and last score."""
    scores, labels, codes = rows
    sums = _ranges.range_sums(scores, labels, codes, plan, index)
    sums["first"] = float(scores[0]) if len(scores) else math.nan
    sums["last"] = float(scores[-1]) if len(scores) else math.nan
    return sums


def _sorted_sums(pieces: list, plan: _ranges.RangePlan, index: int, *, layout: _records.Layout) -> dict[str, Any]:
    """One range's records sorted (:func:`_sorted_range`) and summed (:func:`_range_sums`) in one task:
    its sorted arrays live only as long as the task."""
    return _range_sums(_sorted_range(pieces, layout, plan.sizes), plan, index)


def _routed(local: list, holders: list[str | None], plan: _Plan, layout: _records.Layout, bounds: np.ndarray,
            sizes: np.ndarray, make_plan: Callable[[tuple], _ranges.RangePlan]) -> tuple[Any, list[Any]]:
    """The sort of records and the ranges' sums as one graph over the persisted columns ``local``: per
    partition a routing task (:func:`_pack`) and a selection of each of its pieces, both on the worker
    that holds the partition (``holders``; else the scheduler may send the whole tuple to an idle
    worker), the range plan from the routing counts, and a sort-and-sum task per range
    (:func:`_sorted_sums`). Returns the plan's Delayed and the ranges'.

    The graph is written as a mapping: built as Delayed objects (one per piece), the P x R
    selections kept the client busy merging graphs, 1.3 to 1.8 s at 50 partitions and 50 ranges,
    while the workers waited."""
    from dask.delayed import Delayed
    from dask.highlevelgraph import HighLevelGraph, MaterializedLayer

    token = uuid.uuid4().hex  # keys "fairmedfm-pack-<token>" etc.: the dashboard shows the kind
    pack_name, piece_name, sums_name = (f"fairmedfm-{kind}-{token}" for kind in ("pack", "piece", "sums"))
    n_ranges, n_parts = len(bounds) + 1, len(local)
    pack = functools.partial(_pack, plan=plan, layout=layout, bounds=bounds, sizes=sizes)
    per_worker: dict[str | None, tuple[dict, list]] = {}
    for p, (item, holder) in enumerate(zip(local, holders)):
        tasks, items = per_worker.setdefault(holder, ({}, []))
        tasks[(pack_name, p)] = (pack, item.key)
        for r in range(n_ranges + 1):  # the last: the partition's counts
            tasks[(piece_name, p, r)] = (operator.getitem, (pack_name, p), r)
        items.append(item)
    routed = []
    for j, (holder, (tasks, items)) in enumerate(per_worker.items()):
        annotations = None if holder is None else {"workers": [holder], "allow_other_workers": True}
        layer = f"fairmedfm-route-{j}-{token}"
        graph = HighLevelGraph.from_collections(layer, MaterializedLayer(tasks, annotations=annotations),
                                                dependencies=items)
        routed.append(Delayed(next(iter(tasks)), graph, layer=layer))
    counted_key, plan_key = (f"fairmedfm-counted-{token}", 0), (f"fairmedfm-range-plan-{token}", 0)
    tasks = {counted_key: (functools.partial(_counted, dtype=plan.score_dtype),
                           [(piece_name, p, n_ranges) for p in range(n_parts)]),
             plan_key: (make_plan, counted_key)}
    sums = functools.partial(_sorted_sums, layout=layout)
    for r in range(n_ranges):
        tasks[(sums_name, r)] = (sums, [(piece_name, p, r) for p in range(n_parts)], plan_key, r)
    graph = HighLevelGraph.from_collections(sums_name, MaterializedLayer(tasks), dependencies=routed)
    return (Delayed(plan_key, graph, layer=sums_name),
            [Delayed((sums_name, r), graph, layer=sums_name) for r in range(n_ranges)])


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
    _, dd = _dask()
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
             ci: float = 0.95, p_adjust: str | None = None) -> FairnessReport:
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
        Score ranges of the sort (default: the partitions of ``ddf``). Each must fit in a worker's
        memory: its records (8 bytes a row for float32 scores, 12 or 16 for float64), then its kernel
        arrays (score, label and one code per grouping: about ``5 + groupings`` bytes a row).
    progress : bool, optional
        A bar of the partitions' passes on stderr (per partition on a distributed cluster); None
        shows it on a terminal or in a notebook when the work takes more than about two seconds.
    metrics : list of str, optional
        Opt-in metrics beside fairmedfm's (``"ap"``, ``"brier"``, ``"selection_rate"``, ``"fpr"``,
        ``"fnr"``), as in :func:`fairmedfm_fast.evaluate`.
    interval, ci, p_adjust : optional
        ``interval="analytic"``: DeLong, Wilson and simultaneous gap intervals at level ``ci`` in
        ``report.ci["analytic"]``, as in :func:`fairmedfm_fast.evaluate` (each partition adds its
        placement sums; ``p_adjust`` adjusts the pairwise p-values).

    Returns
    -------
    FairnessReport
        Equal (within 1e-9) to ``fairmedfm_fast.evaluate(df[label], df[score], df[sensitive], ...)``
        on the same rows.
    """
    dask, _ = _dask()
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
                         npartitions, bar, metrics, (float(ci), p_adjust) if interval else None)


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


def _evaluate(dask: Any, ddf: Any, label: str, score: str, names: list[str], bins: dict, intersectional: bool,
              pos_label: Any, score_type: str, threshold: float | None, npartitions: int | None,
              bar: Progress, metrics: Sequence[str] = (), analytic: tuple[float, str | None] | None = None
              ) -> FairnessReport:
    ddf = ddf[list(dict.fromkeys([label, score, *names]))]
    meta = ddf._meta
    quantile = [name for name, spec in bins.items() if isinstance(spec, (int, np.integer))]
    if quantile:
        counts = _computed(dask, [dask.delayed(_value_counts)(part, quantile) for part in ddf.to_delayed()], bar)
        for name in quantile:
            bins[name] = _quantile_cut_points([c[name] for c in counts], int(bins[name]), name)
    target = npartitions or ddf.npartitions
    columns = _Columns(label, score, names, bins, intersectional, pos_label,
                       min(10_000, max(_SKETCH, -(-4 * target // ddf.npartitions))))
    # each partition read once: kept in its worker's memory for the survey and the sort
    local = dask.persist(*[dask.delayed(_local)(part, columns) for part in ddf.to_delayed()])
    holders = _holders(local)
    surveys = []
    for item, holder in zip(local, holders):
        with _on(dask, holder):
            surveys.append(dask.delayed(_survey)(item, columns))
    surveys = _computed(dask, surveys, bar)
    plan, metadata = _plan(list(surveys), columns, meta, score_type)

    sizes = np.array([len(g) for g in plan.groups] + ([len(plan.combined)] if plan.combined else [])
                     + ([1] if plan.all_samples else []), np.int64)
    divisions = _boundaries(list(surveys), plan, target)
    layout = _layout(plan, sizes)
    extra = _metric_registry.optional_keys(metrics)
    make_plan = functools.partial(_range_plan, sizes=sizes, n=metadata["n_samples"],
                                  thresholds=[0.5] if threshold is None else [0.5, threshold], sweep=threshold is None,
                                  extra=tuple(extra), analytic=analytic is not None,
                                  entries=_ranges.sum_entries(tuple(extra)))
    if layout is not None:  # records routed by score range, each range sorted where it lands
        bounds = _records.bits(np.array(divisions[1:-1], plan.score_dtype))
        ranged, sums = _routed(local, holders, plan, layout, bounds, sizes, make_plan)
    else:  # the sort of frames
        code_names = _code_names(plan)
        frame_meta = pd.DataFrame({_SCORE: np.empty(0, plan.score_dtype), _LABEL: np.empty(0, np.uint8),
                                   **{name: np.empty(0, plan.code_dtype) for name in code_names}})
        ordered = ddf.map_partitions(_prepare, plan, meta=frame_meta).set_index(_SCORE, divisions=divisions)
        ranges = [dask.delayed(_arrays)(part, code_names) for part in ordered.to_delayed()]
        counted = dask.delayed(_summed)([dask.delayed(_ranges.range_summary)(rows[0], rows[1], rows[2], sizes)
                                         for rows in ranges])
        ranged = dask.delayed(make_plan)(counted)
        sums = [dask.delayed(_range_sums)(rows, ranged, r) for r, rows in enumerate(ranges)]
    done = _computed(dask, [ranged, *sums], bar)
    ranged, sums = done[0], done[1:]
    groupings = _groupings(list(sums), ranged, threshold)
    metadata.update(asked(threshold, metrics=metrics))
    report, results = _report(plan, groupings, metadata)
    if analytic is not None:
        starts = np.concatenate(([0], np.cumsum(sizes + 1)))
        variances = {k: _analytic.variances_of([part["placement"][starts[k]:starts[k + 1]] for part in sums])
                     for k, result in enumerate(results) if result.rows}
        report.ci = {"level": analytic[0], "n_boot": 0,
                     "analytic": _analytic.from_variances(variances, results, analytic[0], report.warnings,
                                                          analytic[1])}
        report.metadata.update(ci=analytic[0], p_adjust=analytic[1])
        # report.gaps with the analytic gap intervals, as evaluate's
        with_gaps(report, results, {r.name: _findings.small_groups(r) for r in results}, analytic[1], analytic[0])
    return report


def _report(plan: _Plan, groupings: list[_engine.Grouping], metadata: dict[str, Any]
            ) -> tuple[FairnessReport, list]:
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
        stratify="attribute", p_adjust=None, intersectional=bool(plan.columns.intersectional),
        metrics=list(metadata.get("metrics", [])), n_samples=n), bins=plan.columns.bins)
    return report, results


def read_parquet(path: str | os.PathLike, columns: Sequence[str] | None = None, **options: Any):
    """A Dask DataFrame over Parquet files: a file, a directory of them, or a glob pattern.

    Every worker must be able to open the paths (a shared file system or object store URL such as
    ``s3://bucket/predictions/``); nothing is read on the client but the Parquet footers.
    ``options`` go to ``dask.dataframe.read_parquet``.
    """
    _, dd = _dask()
    text = os.fspath(path)
    if "://" not in text:
        if glob.has_magic(text):
            files = sorted(glob.glob(text))
            if not files:
                raise ValueError(f"no file matches {text!r}; give a Parquet file, a directory or a glob "
                                 "such as 'predictions/*.parquet'")
            return dd.read_parquet(files, columns=list(columns) if columns else None, **options)
        if not os.path.exists(text):
            raise ValueError(f"{text!r} does not exist; give a Parquet file, a directory or a glob such as "
                             "'predictions/*.parquet'")
    return dd.read_parquet(text, columns=list(columns) if columns else None, **options)


# ---------------------------------------------------------------------------------------------
# Segmentation: Dice on the workers, next to the mask files
# ---------------------------------------------------------------------------------------------

DiceFunction = Callable[..., np.ndarray]


def _default_dice() -> DiceFunction:
    try:
        from .segmentation import dice_scores
    except ImportError:
        raise ImportError("this build of fairmedfm_fast has no mask reader (fairmedfm_fast.segmentation); "
                          "pass dice_function=, a function (pred_paths, true_paths, label=, "
                          "mask_threshold=, empty_score=) -> Dice per pair") from None
    return dice_scores


def _mask_paths(part: pd.DataFrame, pred_mask: str, true_mask: str, base: str | None) -> list[list[str]]:
    """The predicted and ground-truth mask paths of one partition's rows."""
    paths = []
    for column in (pred_mask, true_mask):
        values = part[column].tolist()
        for value in values:
            if not isinstance(value, str) or not value:
                raise ValueError(f"column {column!r} has {value!r} where a mask file path should be; every "
                                 "sample needs both mask files")
        paths.append([value if base is None else os.path.join(base, value) for value in values])
    return paths


def _partition_measures(part: pd.DataFrame, names: list[str], pred_mask: str, true_mask: str, base: str | None,
                        label: Any, mask_threshold: float, options: Any) -> pd.DataFrame:
    """The attributes ``names`` of one partition's rows beside the per-sample table of
    :func:`fairmedfm_fast._surface.measure` (voxel counts, surface distances, NSD, diagonal) of its
    mask pairs, computed where the partition lives."""
    from .._engine import surface as _surface

    columns = [f"__{column}__" for column in _surface.COLUMNS]
    if len(part) == 0:
        table = np.empty((0, len(columns)))
    else:
        paths = _mask_paths(part, pred_mask, true_mask, base)
        table = _surface.measure(paths[0], paths[1], label=label, mask_threshold=mask_threshold, options=options,
                                 n_jobs=1)
    return part[names].assign(**dict(zip(columns, table.T)))


def _partition_dice(part: pd.DataFrame, pred_mask: str, true_mask: str, base: str | None,
                    dice_function: DiceFunction | None, options: dict[str, Any]) -> pd.Series:
    """Dice of one partition's mask pairs, computed where the partition lives."""
    if len(part) == 0:
        return pd.Series(np.empty(0), index=part.index, dtype=np.float64)
    paths = _mask_paths(part, pred_mask, true_mask, base)
    function = dice_function or _default_dice()
    if dice_function is None:
        options = {**options, "n_jobs": 1}  # one task per worker thread already
    return pd.Series(np.asarray(function(paths[0], paths[1], **options), np.float64), index=part.index)


def evaluate_segmentation(ddf: Any, *, sensitive: str | Sequence[str], dice: str | None = None,
                          pred_mask: str | None = None, true_mask: str | None = None, label: Any = None,
                          mask_threshold: float = 0.5, empty_score: float = 1.0, base: str | None = None,
                          bins: _groups.Bins | None = None, intersectional: bool = False,
                          dice_function: DiceFunction | None = None, **options: Any) -> FairnessReport:
    """Fairness of a segmentation model from a Dask DataFrame of mask paths (or Dice scores).

    The masks are read and compared on the workers, partition by partition (each worker must be able
    to open the paths: a shared file system, or the files placed next to the worker that holds the
    partition). What comes back to the client is one Dice score and the attribute values per sample;
    the report is then :func:`fairmedfm_fast.evaluate_segmentation` of those, so it is the same.

    Parameters
    ----------
    ddf : dask.dataframe.DataFrame
        One row per sample.
    sensitive : str or list of str
        The attribute columns.
    dice : str, optional
        A column of Dice scores already computed (then no mask is read).
    pred_mask, true_mask : str, optional
        Columns of predicted and ground-truth mask file paths (``.npy``, ``.npz``, images, NIfTI).
    label, mask_threshold, empty_score
        As in :func:`fairmedfm_fast.evaluate_segmentation`.
    base : str, optional
        Folder that relative paths are relative to (as the workers see it).
    bins, intersectional
        As in :func:`fairmedfm_fast.evaluate_segmentation`.
    dice_function : callable, optional
        ``f(pred_paths, true_paths, label=, mask_threshold=, empty_score=)`` returning the Dice of each
        pair; defaults to :func:`fairmedfm_fast.segmentation.dice_scores` (one thread per task).
    **options
        Passed on to :func:`fairmedfm_fast.evaluate_segmentation` (e.g. ``n_boot``, ``ci``,
        ``n_permutations``, ``random_state``, ``progress``: also a line with the time spent reading
        the masks on the workers). ``metrics=`` beyond Dice (``"hd95"``, ``"hd"``, ``"assd"``,
        ``"nsd"``) are measured on the workers too (8 numbers a sample come back); ``spacing=`` is
        then one size per axis, or None for each ground-truth NIfTI header's zooms.

    Returns
    -------
    FairnessReport
    """
    _, dd = _dask()
    if not isinstance(ddf, dd.DataFrame):
        raise ValueError(f"ddf must be a dask.dataframe.DataFrame, got {type(ddf).__name__}")
    names = [sensitive] if isinstance(sensitive, str) else [str(name) for name in sensitive or []]
    if not names:
        raise ValueError("sensitive names no column: pass the attribute columns, e.g. sensitive=['sex']")
    if (dice is not None) == (pred_mask is not None or true_mask is not None) or \
            (dice is None and (pred_mask is None or true_mask is None)):
        raise ValueError("give either dice= (a column of Dice scores) or both pred_mask= and true_mask= "
                         "(columns of mask file paths)")
    wanted = [dice] if dice is not None else [pred_mask, true_mask]
    columns = [str(c) for c in ddf.columns]
    for option, name in zip(("dice",) if dice is not None else ("pred_mask", "true_mask"), wanted):
        if name not in columns:
            raise ValueError(f"{option}={name!r} is not a column of ddf; its columns are {columns[:30]}")
    unknown = [name for name in names if name not in columns]
    if unknown:
        raise ValueError(f"sensitive={unknown[0]!r} is not a column of ddf; its columns are {columns[:30]}")
    if dice is None and _beyond_dice(options, empty_score):
        return _surface_report(ddf, names, pred_mask, true_mask, base, label, mask_threshold, empty_score, bins,
                               intersectional, dice_function, options)
    if dice is None:
        reading = {"label": label, "mask_threshold": mask_threshold, "empty_score": empty_score}
        scores = ddf.map_partitions(_partition_dice, pred_mask, true_mask, base, dice_function, reading,
                                    meta=pd.Series(dtype=np.float64))
        with Progress(None, "dask: reading masks", check(options.get("progress"))):
            table = ddf[names].assign(**{"__dice__": scores}).compute()
        values = table.pop("__dice__")
    else:
        table = ddf[list(dict.fromkeys([*names, dice]))].compute()
        values = table[dice]
    from .segmentation import evaluate_segmentation as in_memory  # not the package root: no circle

    report = in_memory(table[names].reset_index(drop=True), dice=values.to_numpy(), bins=bins,
                       intersectional=intersectional, **options)
    if dice is None:  # what the in-memory function records when it reads the masks itself
        report.metadata.update({"dice_from_masks": True, "empty_score": empty_score, "label": label})
    return report


def _beyond_dice(options: dict[str, Any], empty_score: Any) -> bool:
    """Whether ``metrics=`` asks for more than the Dice scores (as the in-memory function decides)."""
    if options.get("metrics") is None:
        return False
    from .._engine import surface as _surface

    wanted = _surface.check_options(options["metrics"], options.get("percentile", 95.0), options.get("nsd_tolerance"),
                                    options.get("hd_definition", "medpy"), options.get("empty_distance", "nan"))
    return wanted != ["dice"] or isinstance(empty_score, dict)


def _surface_report(ddf: Any, names: list[str], pred_mask: str, true_mask: str, base: str | None, label: Any,
                    mask_threshold: float, empty_score: Any, bins: Any, intersectional: bool,
                    dice_function: DiceFunction | None, options: dict[str, Any]) -> FairnessReport:
    """``metrics=`` beyond Dice: each worker measures its partition's pairs (voxel counts, surface
    distances, NSD: one row of 8 numbers per sample), and the client makes the in-memory report of
    those rows, so every metric, warning and empty-mask rule is the in-memory one."""
    from .._engine import surface as _surface
    from .segmentation import evaluate_segmentation as in_memory  # not the package root: no circle

    if dice_function is not None:
        raise ValueError("dice_function= gives Dice only; drop it to get metrics= beyond Dice from the masks")
    spacing = options.get("spacing")
    if spacing is not None and np.ndim(spacing) != 1:
        raise ValueError(f"spacing has shape {np.shape(spacing)}; on Dask pass one size per axis (or none: each "
                         "ground-truth NIfTI header's zooms are read on the workers)")
    nsd_tolerance = options.get("nsd_tolerance")
    measuring = _surface.Options(float(options.get("percentile", 95.0)),
                                 math.nan if nsd_tolerance is None else float(nsd_tolerance),
                                 options.get("hd_definition", "medpy"), spacing)
    columns = [f"__{column}__" for column in _surface.COLUMNS]
    meta = ddf._meta[names].assign(**{name: np.empty(0) for name in columns})
    ddf = ddf[list(dict.fromkeys([*names, pred_mask, true_mask]))]
    measures = ddf.map_partitions(_partition_measures, names, pred_mask, true_mask, base, label, mask_threshold,
                                  measuring, meta=meta)
    with Progress(None, "dask: reading masks", check(options.get("progress"))):
        table = measures.compute()
    measured = _surface.Measured(table[columns].to_numpy(np.float64))
    return in_memory(table[names].reset_index(drop=True), pred_masks=measured, true_masks=measured, label=label,
                     mask_threshold=mask_threshold, empty_score=empty_score, bins=bins, intersectional=intersectional,
                     **options)


# ---------------------------------------------------------------------------------------------
# Command line: fairmedfm-fast score PATH --engine dask [--scheduler ADDRESS]
# ---------------------------------------------------------------------------------------------
