"""The Dask backend's first pass and its global plan: each partition's columns read once and surveyed
(label values, score range and sketch, the group values of each attribute and their combinations), then
one plan from all surveys: the labels checked, the score type decided, and the global group codes of
every attribute (in the in-memory order) that the sort and the sums use. ``dask.py`` runs the passes.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from .._engine import classification as _engine
from .._inputs import arrays as _inputs
from .._inputs import groups as _groups
from .._inputs import value_codes as _codes
from .assess import range_conversion
from .dask_memory import release_reader_memory

#: Label values each partition reports (enough to validate labels and tell two classes from more).
LABEL_VALUES = 64
#: Score quantiles each partition reports (at least), from which the sort boundaries are chosen.
SKETCH = 64
#: Attribute combinations (missing values included) up to which the intersectional codes come from a
#: table of every combination rather than a search.
DENSE_CELLS = 1 << 22
#: Distinct values of an attribute with quantile bins that the exact quantiles may gather.
QUANTILE_VALUES = 1_000_000



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
    return _codes.encode_values(values, _groups.MAX_NUMERIC_GROUPS if _codes.is_numeric(values) else None)


# ---------------------------------------------------------------------------------------------
# Pass 1: survey
# ---------------------------------------------------------------------------------------------

@dataclass
class Columns:
    label: str
    score: str
    sensitive: list[str]
    bins: dict[str, Any]  # attribute -> cut points (list) or number of quantile groups (int)
    intersectional: bool
    pos_label: Any
    sketch: int = SKETCH  # score quantiles per partition: enough for the partitions of the sort


#: One partition's columns as arrays (:func:`local_columns`): raw labels, scores as numbers, per attribute its
#: local codes (the narrowest integer type) and group names (None: too many numbers), per attribute
#: its categories (None: not categorical). A tuple, so that Dask measures its size.
LocalColumns = tuple[np.ndarray, np.ndarray, list[tuple[np.ndarray, list[str]] | None], list[list[str] | None]]


def local_columns(part: pd.DataFrame, columns: Columns) -> LocalColumns:
    """The columns of one partition that the survey and the sort read, read once: the survey's tasks
    and the sort's take them from the worker's memory (``dask.persist``) instead of the files."""
    raw = _labels(part[columns.label], columns.label)
    scores = _numbers(part[columns.score], f"score column {columns.score!r}")
    encoded, categories = [], []
    for name in columns.sensitive:
        values = _attribute_column(part, name)
        is_categorical = isinstance(values.dtype, pd.CategoricalDtype)
        categories.append([_codes.group_name(v) for v in values.cat.categories.tolist()] if is_categorical
                          else None)
        item = _local_codes(values, name, columns.bins.get(name))
        if item is not None:
            codes, names = item
            item = (codes.astype(_engine.code_dtype(len(names)), copy=False), names)
        encoded.append(item)
    release_reader_memory()  # what reading the earlier partitions left in pyarrow's pool
    return raw, scores, encoded, categories


def survey(local: LocalColumns, columns: Columns) -> dict[str, Any]:
    """What the global checks and codes need to know about one partition, in a few kilobytes."""
    raw, scores, encoded, categories = local
    n = len(raw)
    distinct = pd.unique(raw)[:LABEL_VALUES]
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


def value_counts(part: pd.DataFrame, names: list[str]) -> dict[str, pd.Series | None]:
    """Per attribute with quantile bins, the counts of its present values (None: too many)."""
    counts = {}
    for name in names:
        values = _attribute_column(part, name)
        _groups.binned(values, [0.0], name)  # only its check that the values are numbers
        numeric = pd.to_numeric(values, errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
        found = pd.Series(numeric[~np.isnan(numeric)]).value_counts(sort=False)
        counts[name] = found if len(found) <= QUANTILE_VALUES else None
    return counts


def _present_combinations(local: list[tuple[np.ndarray, list[str]]]) -> list[tuple[str, ...]]:
    """Name tuples of the attribute combinations present in a partition (rows with every value)."""
    widths = [len(names) for _, names in local]
    space = math.prod(width + 1 for width in widths)
    key = _groups.combination_keys([codes for codes, _ in local], widths, np.int32 if space < 2**31 else np.int64)
    # a count per combination where there are few (no sort), else the distinct keys
    keys = np.flatnonzero(np.bincount(key, minlength=space)) if space <= DENSE_CELLS else np.unique(key)
    found = []
    for value in keys.tolist():
        parts = _groups.key_codes(value, widths)
        if min(parts) >= 0:  # rows with every value
            found.append(tuple(names[code] for (_, names), code in zip(local, parts)))
    return found


# ---------------------------------------------------------------------------------------------
# Global plan from the surveys
# ---------------------------------------------------------------------------------------------

@dataclass
class Plan:
    """Everything the partitions need to turn their rows into kernel inputs with global codes."""

    columns: Columns
    score_type: str  # "probability" or "logit", applied per partition with the global decision
    score_dtype: np.dtype
    groups: list[list[str]]  # global group names per attribute, report order
    combined: list[tuple[int, ...]] = field(default_factory=list)  # intersectional groups as code tuples
    code_dtype: np.dtype = field(default_factory=lambda: np.dtype(np.intp))
    all_samples: bool = False  # add a grouping of every sample (no attribute is complete)
    conversion: dict = field(default_factory=dict)  # facts of a sigmoid conversion, for transform_note


def _check_labels(surveys: list[dict], columns: Columns) -> tuple[dict[str, Any], int]:
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


def score_decision(surveys: list[dict], columns: Columns, score_type: str) -> tuple[str, np.dtype, dict]:
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


def quantile_cut_points(counts: list[pd.Series], quantiles: int, name: str) -> list[float]:
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


def global_plan(surveys: list[dict], columns: Columns, meta: pd.DataFrame, score_type: str
          ) -> tuple[Plan, dict[str, Any]]:
    """Validate globally (in the order of the in-memory ``evaluate``) and fix the global codes."""
    n = sum(s["n"] for s in surveys)
    if n == 0:
        raise ValueError("the Dask DataFrame has no rows: pass one row per sample")
    label_info, positives = _check_labels(surveys, columns)
    mode, dtype, score_info = score_decision(surveys, columns, score_type)
    groups: list[list[str]] = []
    missing = []
    for j, name in enumerate(columns.sensitive):
        parts = [s["groups"][j] for s in surveys]
        spec = columns.bins.get(name)
        present = set().union(*(p for p in parts if p))
        numeric = spec is None and _codes.is_numeric(meta[name])
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
    plan = Plan(columns, mode, dtype, groups, combined, _engine.code_dtype(max(sizes, default=1)),
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
        return _codes.report_order(present, bin_labels=full)
    dtype = column.dtype
    if not isinstance(dtype, pd.CategoricalDtype) or has_missing:
        return _codes.report_order(present)
    known = [] if dtype.categories is None else list(dtype.categories)
    if known and "__UNKNOWN_CATEGORIES__" not in known:
        names = [_codes.group_name(value) for value in known]
    else:
        names = [label for part in categories if part for label in part]
    known_names = set(names)  # the partitions' groups are among the categories: none comes after them
    return [label for label in _codes.report_order(present, categories=names) if label in known_names]
