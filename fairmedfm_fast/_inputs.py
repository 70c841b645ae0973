"""From what users have to what kernels take: uint8 labels, float scores, integer group codes.

Everything here runs once per call, on whole arrays or on the (few) distinct group values; no
Python loop touches individual samples. Validation happens here, so kernels can trust their input.
"""
from __future__ import annotations

import datetime
import itertools
import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ._lazy_pandas import is_na, is_pandas, pd

Bins = Mapping[str, int | Sequence[float]]
#: What the API says about missing labels and scores (the command line leaves such rows out).
MISSING_RULE = ("drop those samples or fill them in (the command line leaves such rows out with a note, as "
                "fairmedfm score does)")
#: A numeric attribute with more distinct values than this looks continuous and must be binned.
MAX_NUMERIC_GROUPS = 20


# ---------------------------------------------------------------------------------------------
# Generic conversion
# ---------------------------------------------------------------------------------------------

def _is_arrow(values: Any) -> bool:
    module = type(values).__module__
    return module.startswith("pyarrow")


def _is_polars(values: Any) -> bool:
    return type(values).__module__.startswith("polars")


def to_numpy(values: Any, name: str) -> np.ndarray:
    """A NumPy array from a list, NumPy array, pandas, pyarrow or polars object, or a tensor.

    Tensors (PyTorch, on any device; TensorFlow; JAX) are converted through their own methods, so
    no framework is imported here.
    """
    if values is None:
        raise ValueError(f"{name} is missing: pass one value per sample")
    if isinstance(values, np.ndarray):
        array = values
    elif hasattr(values, "detach") and hasattr(values, "cpu"):  # PyTorch, any device
        array = values.detach().cpu().numpy()
    elif is_pandas(values, "Series", "DataFrame", "Index"):
        array = values.to_numpy()
    elif _is_arrow(values):
        if hasattr(values, "num_columns"):  # Table / RecordBatch
            array = np.column_stack([_arrow_to_numpy(column) for column in values.columns])
        else:
            array = _arrow_to_numpy(values)
    elif hasattr(values, "to_numpy"):  # polars and other array libraries
        array = values.to_numpy()
    elif hasattr(values, "numpy"):  # TensorFlow
        array = values.numpy()
    else:
        try:
            array = np.asarray(values)
        except (ValueError, TypeError) as error:
            raise ValueError(f"{name} could not be read as an array ({error}); pass a list, a NumPy "
                             "array or a pandas Series with one value per sample") from None
    array = np.asarray(array)
    if array.ndim == 0:
        raise ValueError(f"{name} must hold one value per sample, got the scalar {shown(array.item())}")
    return array


def _arrow_to_numpy(values: Any) -> np.ndarray:
    import pyarrow as pa

    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks() if values.num_chunks != 1 else values.chunk(0)
    if pa.types.is_dictionary(values.type):
        values = values.dictionary_decode()
    return values.to_numpy(zero_copy_only=False)


def shown(value: Any) -> str:
    """``value`` as users write it: NumPy scalars and arrays as Python values (``1``, not ``np.int64(1)``)."""
    if isinstance(value, np.ndarray):
        value = value.tolist()
    elif isinstance(value, np.generic):
        value = value.item()
    elif isinstance(value, (list, tuple)):
        value = type(value)(_plain(item) for item in value)
    elif isinstance(value, Mapping):
        value = {_plain(key): _plain(item) for key, item in value.items()}
    return repr(value)


def _preview(values: Any, limit: int = 6) -> str:
    values = list(values[:limit + 1])
    shown = ", ".join(repr(v.item() if isinstance(v, np.generic) else v) for v in values[:limit])
    return f"[{shown}{', ...' if len(values) > limit else ''}]"


def _length(values: Any) -> int:
    if isinstance(values, Mapping):
        first = next(iter(values.values()), None)
        return 0 if first is None else len(first)
    if hasattr(values, "shape") and len(values.shape) > 0:
        return int(values.shape[0])
    return len(values)


def memory_bytes() -> int:
    """This machine's physical memory in bytes (1 TiB when the system does not say)."""
    import os

    try:
        return int(os.sysconf("SC_PAGE_SIZE")) * int(os.sysconf("SC_PHYS_PAGES"))
    except (AttributeError, ValueError, OSError):
        return 1 << 40


def _size(n_bytes: float) -> str:
    for unit in ("bytes", "KiB", "MiB", "GiB", "TiB"):
        if n_bytes < 1024 or unit == "TiB":
            return f"{n_bytes:.3g} {unit}"
        n_bytes /= 1024
    return ""


def check_memory(name: str, count: int, bytes_each: int, what: str, example: str) -> None:
    """A ValueError naming the argument ``name`` when ``count`` times ``bytes_each`` bytes (the work
    it asks for, ``what``) would not fit in this machine's memory; checked before anything is allocated."""
    need = int(count) * int(bytes_each)  # Python integers: no overflow for 10**30
    total = memory_bytes()
    if need > total:
        raise ValueError(f"{name}={shown(count)} would need {_size(need)} of memory for {what} ({_size(bytes_each)} "
                         f"each), more than this machine's {_size(total)}; use fewer, e.g. {example}")


# ---------------------------------------------------------------------------------------------
# Pairing of pandas inputs
# ---------------------------------------------------------------------------------------------

def pandas_index(value: Any) -> pd.Index | None:
    """The index of a pandas input (or of the first pandas column of a mapping), else None."""
    if is_pandas(value, "Series", "DataFrame"):
        return value.index
    if isinstance(value, Mapping):
        for item in value.values():
            if is_pandas(item, "Series", "DataFrame"):
                return item.index
    return None


def _is_range_index(index: pd.Index | None) -> bool:
    return index is not None and index.equals(pd.RangeIndex(len(index)))


def _reindexed(value: Any, reference: pd.Index) -> Any:
    """``value`` reordered to ``reference`` when it holds the same unique labels in another order."""
    if not isinstance(value, (pd.Series, pd.DataFrame)):
        return value
    index = value.index
    if (len(index) != len(reference) or index.equals(reference) or not index.is_unique
            or not index.isin(reference).all()):
        return value
    return value.loc[reference]


def align_by_index(named: dict[str, Any], notes: list[str]) -> tuple:
    """Inputs paired by position, except pandas inputs whose index is the same set of labels in a
    different order: those are reordered to the first pandas input's index (with a note).

    If either index is the default ``0, 1, 2, ...``, which pairing is meant is unclear (a shuffled
    table next to model outputs wrapped in a fresh Series looks just like it), so a ValueError
    explains both ways of choosing.
    """
    values = dict(named)
    reference_name = next((name for name, value in values.items() if pandas_index(value) is not None), None)
    if reference_name is None:
        return tuple(values.values())
    reference = pandas_index(values[reference_name])
    if not reference.is_unique:
        return tuple(values.values())
    for name, value in values.items():
        if name == reference_name:
            continue
        if isinstance(value, Mapping):
            moved = {key: _reindexed(item, reference) for key, item in value.items()}
            changed = any(moved[key] is not item for key, item in value.items())
        else:
            moved = _reindexed(value, reference)
            changed = moved is not value
        if not changed:
            continue
        if _is_range_index(reference) or _is_range_index(pandas_index(value)):
            raise ValueError(
                f"{name} holds the same index labels as {reference_name} but in another order, and one "
                "of them has the default index 0, 1, 2, ..., so the pairing of samples is ambiguous. "
                f"Pair by label with {name}.loc[{reference_name}.index], or by position with "
                f"{name}.to_numpy() (or reset_index(drop=True) on both)")
        notes.append(f"{name} was paired with {reference_name} by index label (same labels, different "
                     "order)")
        values[name] = moved
    return tuple(values.values())


# ---------------------------------------------------------------------------------------------
# Labels and scores
# ---------------------------------------------------------------------------------------------

def _plain(value: Any) -> Any:
    return value.item() if isinstance(value, np.generic) else value


def binary_labels(y_true: Any, pos_label: Any = None) -> tuple[np.ndarray, dict[str, Any]]:
    """0/1 labels as uint8, from booleans, 0/1 numbers, one-hot rows, or any values with ``pos_label``."""
    raw = to_numpy(y_true, "y_true")
    labels = raw
    if labels.ndim == 2 and labels.shape[1] > 1:  # one-hot (or per-class scores): the argmax class
        labels = labels.argmax(axis=1)
    if len(labels) == 0:
        raise ValueError("y_true is empty: pass one label per sample")
    labels = labels.reshape(len(labels), -1)
    if labels.shape[1] != 1:
        raise ValueError(f"y_true must hold one label per sample (or one-hot rows), got shape {raw.shape}")
    labels = labels[:, 0]
    info: dict[str, Any] = {}
    if pos_label is not None:
        is_positive = np.asarray(labels == pos_label)
        if is_positive.shape != labels.shape or not is_positive.any():
            raise ValueError(f"pos_label={shown(pos_label)} does not occur in y_true, whose values include "
                             f"{_preview(pd.unique(labels))}; pass one of those")
        info["pos_label"] = _plain(pos_label)
        if len(pd.unique(labels)) > 2:
            info["one_vs_rest"] = True
        return is_positive.astype(np.uint8), info
    kind = labels.dtype.kind
    if kind == "b":
        return labels.astype(np.uint8), info
    if kind in "iu" and labels.min() >= 0 and labels.max() <= 1:
        return labels.astype(np.uint8), info
    if kind == "f" and bool(np.all((labels == 0) | (labels == 1))):
        return labels.astype(np.uint8), info
    if kind == "f" and np.isnan(labels).any():
        where = np.flatnonzero(np.isnan(labels))
        raise ValueError(f"y_true has {len(where)} missing values (NaN or null) at samples {_preview(where)}; "
                         f"{MISSING_RULE}")
    values = pd.unique(labels)
    try:
        values = np.sort(values)
    except TypeError:  # mixed types: as they come
        pass
    raise ValueError(f"y_true has values {_preview(values)}, not only 0/1 or booleans; pass pos_label= "
                     "to name the positive class (every other value counts as negative)")


def _in_unit_interval(values: np.ndarray) -> bool:
    return bool(values.size) and values.min() >= 0 and values.max() <= 1


def numeric(values: np.ndarray, what: str, dtype: Any = None) -> np.ndarray:
    """``values`` when they are booleans or numbers, else as float64 (e.g. numbers in an object
    array); a ValueError naming ``what`` (and ``dtype``, the user's dtype) when they are not numbers."""
    if values.dtype.kind in "biuf":
        return values
    try:
        return values.astype(np.float64)
    except (ValueError, TypeError):
        raise ValueError(f"{what} must be numeric, got dtype {values.dtype if dtype is None else dtype} with "
                         f"values {_preview(values.ravel())}") from None


def label_from_text(value: str, boolean: bool, number: bool) -> Any:
    """A label written on the command line (``--pos-label``) as a value of the label column's type:
    True/False for a boolean column, an int or float for a numeric one, the text otherwise."""
    if boolean:
        return value.strip().lower() in ("1", "true", "yes")
    if not number:
        return value
    try:
        parsed = float(value)
    except ValueError:
        raise ValueError(f"--pos-label {value!r} is not a number, but the label column holds numbers; give one "
                         "of its values, e.g. --pos-label 1") from None
    return int(parsed) if parsed.is_integer() else parsed


def positive_scores(y_score: Any, score_type: str = "auto", score_column: int | None = None,
                    pos_label: Any = None) -> tuple[np.ndarray, dict[str, Any]]:
    """Positive-class probabilities (float32 kept as float32) from probabilities, logits, or a
    (samples, classes) array of either."""
    if score_type not in ("auto", "probability", "logit"):
        raise ValueError(f"score_type={score_type!r} is not one of 'auto', 'probability', 'logit'")
    scores = numeric(to_numpy(y_score, "y_score"), "y_score")
    if scores.dtype != np.float32:
        scores = scores.astype(np.float64, copy=False)
    if scores.ndim == 2 and scores.shape[1] == 1:
        scores = scores[:, 0]
    if scores.ndim > 2:
        raise ValueError(f"y_score must be one score per sample or a (samples, classes) array, got shape "
                         f"{scores.shape}")
    if scores.size == 0:
        raise ValueError("y_score is empty: pass one score per sample")
    nan = np.isnan(scores)
    if nan.any():
        where = np.flatnonzero(nan.reshape(len(scores), -1).any(axis=1))
        raise ValueError(f"y_score has {len(where)} missing values (NaN or null) at samples {_preview(where)}; "
                         f"{MISSING_RULE}")
    info: dict[str, Any] = {}
    if scores.ndim == 1:
        probability = _in_unit_interval(scores)
        if score_type == "probability" and not probability:
            raise ValueError(f"score_type='probability' but y_score ranges over [{scores.min()}, "
                             f"{scores.max()}]; pass score_type='logit' or 'auto' for logits")
        if score_type == "logit" or not probability:
            scores = 1 / (1 + np.exp(-scores.astype(np.float64)))
            info["score_transform"] = "sigmoid"
        return scores, info
    scores = scores.astype(np.float64, copy=False)
    n_classes = scores.shape[1]
    valid = f"the valid columns of y_score (shape {scores.shape}) are {list(range(n_classes))}"
    if score_column is not None:
        try:  # fairmedfm takes int(score_column): 1, 1.0 and "1" work there
            column = int(score_column)
        except (TypeError, ValueError):
            column = None
        if column is None or isinstance(score_column, (bool, np.bool_)) or column != float(score_column):
            raise ValueError(f"score_column={shown(score_column)} is not a column position; {valid}: pass the "
                             "position (from 0) of the positive class")
    elif n_classes == 2:
        column = 1
    elif isinstance(pos_label, (int, np.integer)) and not isinstance(pos_label, bool):
        column = int(pos_label)
    else:
        raise ValueError(f"y_score has {n_classes} columns; pass score_column= (the column of the "
                         "positive class) or an integer pos_label")
    if not 0 <= column < n_classes:
        raise ValueError(f"score_column={column} is out of range; {valid}")
    rows_sum_to_one = _in_unit_interval(scores) and np.allclose(scores.sum(axis=1), 1, atol=1e-3)
    if score_type == "logit" or (score_type == "auto" and not rows_sum_to_one):
        shifted = np.exp(scores - scores.max(axis=1, keepdims=True))
        scores = shifted / shifted.sum(axis=1, keepdims=True)
        info["score_transform"] = "softmax"
    info["score_column"] = column
    return scores[:, column], info


def class_column(y_true: Any, y_score: Any, pos_label: Any) -> int | None:
    """Column of ``pos_label`` in a (samples, classes) score array, classes in sorted order."""
    shape = getattr(y_score, "shape", None)
    if shape is None:
        shape = np.shape(y_score)
    if len(shape) != 2 or shape[1] < 2:
        return None
    labels = to_numpy(y_true, "y_true")
    if labels.ndim != 1:
        return None
    classes = np.sort(pd.unique(labels))
    if len(classes) != shape[1]:
        return None
    matches = np.flatnonzero(classes == pos_label)
    return int(matches[0]) if len(matches) else None


# ---------------------------------------------------------------------------------------------
# Sensitive attributes -> integer codes
# ---------------------------------------------------------------------------------------------

@dataclass
class Attribute:
    """One sensitive attribute: a group code per sample and the group names in report order."""

    name: str
    codes: np.ndarray  # intp, -1 where the value is missing
    groups: list[str]

    @property
    def n_groups(self) -> int:
        return len(self.groups)


@dataclass(frozen=True)
class CodedAttributes:
    """Attributes already validated and coded (once, for many calls): :func:`encode_attributes`
    hands them back unchanged, so that their group order is kept exactly."""

    attributes: tuple[Attribute, ...]


def group_name(value: Any) -> str | None:
    """Name of a group value: None when missing; whole floats without ".0"."""
    if value is None or (isinstance(value, float) and math.isnan(value)) or is_na(value):
        return None
    if isinstance(value, (float, np.floating)) and float(value).is_integer():
        return str(int(value))
    return str(value)


def _order_key(name: str):
    try:
        return (0, float(name), "")
    except ValueError:
        return (1, 0.0, name)


Column = "pd.Series | np.ndarray"


def _column(values: Any, name: str) -> Column:
    """One attribute's values: a pandas Series (pandas, pyarrow or polars input, whose dtype says
    how to code it) or a 1-D NumPy array (anything else), without a Python object per sample."""
    if is_pandas(values, "Series"):
        return values.reset_index(drop=True)
    if _is_polars(values):
        values = values.to_arrow()
    if _is_arrow(values):
        import pyarrow as pa

        if isinstance(values, pa.ChunkedArray):
            values = values.combine_chunks() if values.num_chunks != 1 else values.chunk(0)
        return pd.Series(pd.arrays.ArrowExtensionArray(values), name=name, copy=False)
    array = to_numpy(values, name)
    if array.ndim != 1:
        array = array.reshape(len(array), -1)
        if array.shape[1] != 1:
            raise ValueError(f"{name} must hold one value per sample, got shape {array.shape}")
        array = array[:, 0]
    return array


def _columns(sensitive_features: Any) -> list[tuple[str, Column]]:
    """(attribute name, values) pairs, named as a pandas DataFrame of the same input would be."""
    features = sensitive_features
    if is_pandas(features, "DataFrame"):
        return [(str(name), features.iloc[:, i].reset_index(drop=True))
                for i, name in enumerate(features.columns)]
    if is_pandas(features, "Series"):
        name = str(features.name) if features.name else "sensitive"
        return [(name, features.reset_index(drop=True))]
    if isinstance(features, Mapping):
        # Values of a mapping are taken as plain arrays (as a DataFrame built from them would be),
        # except pyarrow and polars columns, which keep their own types.
        return [(str(key), _column(value if _is_arrow(value) or _is_polars(value)
                                   else to_numpy(value, f"sensitive_features[{key!r}]").ravel(),
                                   f"sensitive_features[{key!r}]"))
                for key, value in features.items()]
    if _is_polars(features):
        if hasattr(features, "get_columns"):  # DataFrame
            return [(str(column.name), _column(column, str(column.name))) for column in features.get_columns()]
        name = str(features.name) if features.name else "sensitive"
        return [(name, _column(features, name))]
    if _is_arrow(features) and hasattr(features, "column_names"):  # Table / RecordBatch
        return [(str(name), _column(features.column(i), str(name)))
                for i, name in enumerate(features.column_names)]
    if _is_arrow(features):
        return [("sensitive", _column(features, "sensitive"))]
    array = to_numpy(features, "sensitive_features")
    if array.ndim == 1:
        return [("sensitive", array)]
    if array.ndim == 2:
        return [(f"sensitive_{i}", array[:, i]) for i in range(array.shape[1])]
    raise ValueError(f"sensitive_features must be one value per sample or a (samples, attributes) table, "
                     f"got shape {array.shape}")


def _is_numeric(values: Column) -> bool:
    if isinstance(values, np.ndarray):
        return values.dtype.kind in "iufc"
    dtype = values.dtype
    return pd.api.types.is_numeric_dtype(dtype) and not pd.api.types.is_bool_dtype(dtype)


def _is_arrow_dictionary(values: Column) -> bool:
    dtype = getattr(values, "dtype", None)
    pyarrow_type = getattr(dtype, "pyarrow_dtype", None)
    if pyarrow_type is None:
        return False
    import pyarrow as pa

    return pa.types.is_dictionary(pyarrow_type)


def _small_range(array: np.ndarray) -> bool:
    span = int(array.max()) - int(array.min())
    return span <= max(1 << 16, 2 * len(array))


def _encode_values(values: Column, max_distinct: int | None = None) -> tuple[np.ndarray, list[str]] | None:
    """Codes (intp, -1 missing) in report order, and the group names, of one attribute column.

    None when the column has more than ``max_distinct`` distinct values (checked before any name is
    made, so a continuous column fails fast). Names come from the distinct values as Python objects,
    exactly as ``pandas.Series.map`` would hand them over.
    """
    if isinstance(values, np.ndarray) and (values.dtype.kind in "mM" or (
            values.dtype.kind == "O" and len(values)
            and isinstance(values[0], (datetime.datetime, datetime.timedelta, np.datetime64, np.timedelta64)))):
        # Dates and durations are named as pandas names them ('2020-01-01 00:00:00', '517 days
        # 00:00:00'), whatever NumPy unit they come in; factorizing the raw array would give integers.
        values = pd.Series(values, copy=False)
    # Category order is the report order, except when the column has a missing value: fairmedfm
    # 0.4.2 then names the groups through Series.map, which drops the categorical dtype, so they
    # are sorted like any other values. We follow it (see the README).
    if (is_pandas(values, "Series") and isinstance(values.dtype, pd.CategoricalDtype)
            and not values.isna().any()):
        raw_codes = values.cat.codes.to_numpy()
        names = [group_name(value) for value in values.cat.categories.tolist()]
        present = np.bincount(raw_codes, minlength=len(names)) > 0  # no missing value: codes >= 0
        ordered: list[str] = []
        for name, here in zip(names, present):
            if here and name is not None and name not in ordered:
                ordered.append(name)
    elif _is_arrow_dictionary(values):
        # An Arrow dictionary column is already coded: its indices are the codes (null -> -1).
        import pyarrow as pa
        import pyarrow.compute as pc

        column = values.array._pa_array
        column = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
        if isinstance(column, pa.ChunkedArray):  # no chunks at all
            column = pa.array([], column.type)
        raw_codes = pc.fill_null(column.indices.cast(pa.int64()), -1).to_numpy(zero_copy_only=False).astype(np.intp)
        names = [group_name(value) for value in column.dictionary.to_pylist()]
        used = np.bincount(raw_codes[raw_codes >= 0], minlength=len(names)) > 0
        names = [name if here else None for name, here in zip(names, used)]
        ordered = sorted({name for name in names if name is not None}, key=_order_key)
    else:
        array = values if isinstance(values, np.ndarray) else None
        if array is None and values.dtype.kind in "iu" and not isinstance(values.dtype, pd.api.extensions.ExtensionDtype):
            array = values.to_numpy()
        if array is not None and array.dtype.kind in "iu" and len(array) and _small_range(array):
            # Integers over a short range: offsets and a bincount instead of hashing every value.
            low = int(array.min())
            offsets = (array - low).astype(np.intp, copy=False)
            present_offsets = np.flatnonzero(np.bincount(offsets))
            if max_distinct is not None and len(present_offsets) > max_distinct:
                return None
            position = np.full(int(present_offsets[-1]) + 1, -1, np.intp)
            position[present_offsets] = np.arange(len(present_offsets))
            raw_codes = position[offsets]
            uniques = (present_offsets + low).astype(array.dtype).tolist()
        elif array is not None and array.dtype.kind in "US" and len(array) <= 100_000:
            distinct, raw_codes = np.unique(array, return_inverse=True)  # sorting beats hashing when small
            if max_distinct is not None and len(distinct) > max_distinct:
                return None
            uniques = distinct.tolist()
        else:
            raw_codes, distinct = pd.factorize(values, use_na_sentinel=True)
            if max_distinct is not None and len(distinct) > max_distinct:
                return None
            uniques = distinct.tolist()
        names = [group_name(value) for value in uniques]
        ordered = sorted({name for name in names if name is not None}, key=_order_key)
    position = {name: i for i, name in enumerate(ordered)}
    lookup = np.array([position.get(name, -1) if name is not None else -1 for name in names] + [-1],
                      dtype=np.intp)
    raw_codes = np.asarray(raw_codes).ravel()
    if np.array_equal(lookup[:-1], np.arange(len(names))):  # already in report order (e.g. categories)
        return raw_codes.astype(np.intp), ordered
    # code -1 (missing) indexes the trailing -1 of the lookup table
    return lookup[raw_codes], ordered


def _bin_edges_label(edge: float) -> str:
    return f"{edge:.4g}"


def _binned(values: pd.Series, spec: Any, column: str) -> tuple[np.ndarray, list[str]]:
    """Codes and names of a numeric attribute grouped by cut points or into quantile groups."""
    if isinstance(values, np.ndarray):
        values = pd.Series(values, copy=False)
    numeric = pd.to_numeric(values, errors="coerce")
    if numeric.notna().sum() < values.notna().sum():
        bad = values[numeric.isna() & values.notna()].head(3).tolist()
        raise ValueError(f"bins[{column!r}]: attribute {column!r} has non-numeric values such as {bad}, so it "
                         "cannot be binned; remove it from bins")
    numeric = numeric.to_numpy(dtype=np.float64, na_value=np.nan)
    if isinstance(spec, (int, np.integer)):
        if spec < 2:
            raise ValueError(f"bins[{column!r}]={shown(spec)}: a number of quantile groups must be at least 2")
        check_memory(f"bins[{column!r}]", spec, 24, "the quantile cut points", f"bins={{{column!r}: 4}}")
        present = numeric[~np.isnan(numeric)]
        if present.size == 0:
            raise ValueError(f"bins[{column!r}]: attribute {column!r} has no values to take quantiles of")
        cut_points = np.unique(np.quantile(present, np.linspace(0, 1, int(spec) + 1)[1:-1]))
    else:
        if isinstance(spec, (str, bytes)) or not isinstance(spec, (Sequence, np.ndarray)):
            raise ValueError(f"bins[{column!r}]={shown(spec)}: give cut points such as [40, 60] or a number of "
                             "quantile groups such as 4")
        cut_points = spec
    try:
        edges = sorted(float(edge) for edge in cut_points)
    except (TypeError, ValueError):
        raise ValueError(f"bins[{column!r}]={shown(spec)}: cut points must be numbers, e.g. [40, 60]") from None
    if not edges:
        raise ValueError(f"bins[{column!r}] is empty: give at least one cut point, e.g. [40, 60]")
    if any(math.isnan(edge) for edge in edges) or len(set(edges)) < len(edges):
        raise ValueError(f"bins[{column!r}]={shown(spec)}: cut points must be distinct numbers")
    labels = ([f"<{_bin_edges_label(edges[0])}"]
              + [f"{_bin_edges_label(a)}-{_bin_edges_label(b)}" for a, b in itertools.pairwise(edges)]
              + [f">={_bin_edges_label(edges[-1])}"])
    if len(set(labels)) < len(labels):
        raise ValueError(f"bins[{column!r}]={shown(spec)}: cut points too close to name the groups apart "
                         f"({labels}); use fewer or rounder cut points")
    # Intervals [a, b): the group is the number of cut points <= value; +inf and NaN are missing.
    codes = np.searchsorted(np.asarray(edges), numeric, side="right").astype(np.intp)
    codes[np.isnan(numeric) | (numeric == np.inf)] = -1
    present = np.bincount(codes[codes >= 0], minlength=len(labels)) > 0
    compact = np.cumsum(present) - 1
    lookup = np.append(np.where(present, compact, -1), -1).astype(np.intp)
    return lookup[codes], [label for label, here in zip(labels, present) if here]


def intersection_names(combinations: list[tuple[str, ...]], attributes: list[str]) -> list[str]:
    """Names of intersectional groups ("F & >=60"), distinct: when values that contain " & "
    themselves make two combinations read the same ("x & y" with "z", and "x" with "y & z"),
    such values are put in parentheses."""
    joined = [" & ".join(parts) for parts in combinations]
    if len(set(joined)) < len(joined):
        joined = [" & ".join(f"({part})" if " & " in part else part for part in parts) for parts in combinations]
        repeated = sorted(name for name, count in Counter(joined).items() if count > 1)
        if repeated:  # a guard: parentheses have told every case tried apart
            raise ValueError(f"intersectional groups of {attributes} would share the names {repeated}; rename "
                             "the attribute values so that they do not contain ' & '")
    return joined


def _combine(attributes: list[Attribute]) -> Attribute:
    """The intersectional attribute ("a & b"): combinations that occur, in product order."""
    codes = attributes[0].codes
    names: list[tuple[str, ...]] = [(group,) for group in attributes[0].groups]
    for attribute in attributes[1:]:
        width = attribute.n_groups
        valid = (codes >= 0) & (attribute.codes >= 0)
        combined = np.where(valid, codes * width + attribute.codes, -1)
        n_cells = len(names) * width
        if n_cells <= max(4 * len(combined), 1 << 16):
            present = np.flatnonzero(np.bincount(combined[valid], minlength=n_cells))
            lookup = np.full(n_cells + 1, -1, np.intp)
            lookup[present] = np.arange(len(present))
            codes = lookup[combined]
        else:
            present, inverse = np.unique(combined[valid], return_inverse=True)
            codes = np.full(len(combined), -1, np.intp)
            codes[valid] = inverse
        names = [names[cell // width] + (attribute.groups[cell % width],) for cell in present]
    joined = intersection_names(names, [a.name for a in attributes])
    return Attribute(" & ".join(a.name for a in attributes), codes.astype(np.intp, copy=False), joined)


def encode_attributes(sensitive_features: Any, n_samples: int, bins: Bins | None = None,
                      intersectional: bool = False) -> list[Attribute]:
    """Sensitive attributes as integer group codes, validated.

    Parameters
    ----------
    sensitive_features : DataFrame, dict of name -> values, Series, 1-D or 2-D array, pyarrow
        Table/Array/ChunkedArray, polars DataFrame/Series
    n_samples : int
    bins : dict of attribute -> cut points or number of quantile groups, optional
    intersectional : bool
        Append the combination of all attributes (when there are several).
    """
    if isinstance(sensitive_features, CodedAttributes):
        if bins or intersectional:
            raise ValueError("bins and intersectional apply when the attributes are coded, not to coded attributes")
        return list(sensitive_features.attributes)
    columns = _columns(sensitive_features)
    if not columns:
        raise ValueError("sensitive_features has no attributes: pass at least one column of group values")
    _require_distinct([name for name, _ in columns], "sensitive_features has several attributes named")
    for name, values in columns:
        if len(values) != n_samples:
            raise ValueError(f"sensitive_features: attribute {name!r} has {len(values)} values but there are "
                             f"{n_samples} samples; pass one value per sample")
    if bins is not None and not isinstance(bins, Mapping):
        raise ValueError(f"bins must be a dict such as {{'age': [40, 60]}}, got {type(bins).__name__}")
    bins = dict(bins or {})
    known = [name for name, _ in columns]
    unknown = sorted(set(map(str, bins)) - set(known))
    if unknown:
        raise ValueError(f"bins names attribute(s) {unknown} that sensitive_features does not have; "
                         f"its attributes are {known}")
    bins = {str(key): value for key, value in bins.items()}
    attributes = []
    for name, values in columns:
        if name in bins:
            codes, groups = _binned(values, bins[name], name)
        else:
            encoded = _encode_values(values, MAX_NUMERIC_GROUPS if _is_numeric(values) else None)
            if encoded is None:
                raise ValueError(
                    f"attribute {name!r} looks continuous (more than {MAX_NUMERIC_GROUPS} distinct numbers); "
                    f"group it with bins={{{name!r}: [40, 60]}} (cut points) or bins={{{name!r}: 4}} "
                    "(quantile groups)")
            codes, groups = encoded
        attributes.append(Attribute(name, codes, groups))
    if intersectional and len(attributes) > 1:
        attributes.append(_combine(attributes))  # its name is longer than any other: no clash
    return attributes


def _require_distinct(names: list[str], problem: str) -> None:
    repeated = sorted(name for name, count in Counter(names).items() if count > 1)
    if repeated:
        raise ValueError(f"{problem} {', '.join(map(repr, repeated))}; every attribute needs its own name in the "
                         "report: rename the columns (e.g. DataFrame.rename or a dict with distinct keys)")


def one_attribute(sensitive_features: Any, n_samples: int, bins: Bins | None = None) -> Attribute:
    """A single attribute: the only one given, or the combination of several."""
    attributes = encode_attributes(sensitive_features, n_samples, bins)
    return attributes[0] if len(attributes) == 1 else _combine(attributes)
