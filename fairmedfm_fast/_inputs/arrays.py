"""From what users have to what kernels take: uint8 labels, float scores, plain arrays; the
sensitive attributes' group codes are :mod:`fairmedfm_fast._groups`.

Everything here runs once per call, on whole arrays or on the (few) distinct group values; no
Python loop touches individual samples. Validation happens here, so kernels can trust their input.
"""
from __future__ import annotations

import math
import sys
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

import numpy as np

from .._util.lazy_pandas import is_pandas, pd

#: What the API says about missing labels and scores (the command line leaves such rows out).
MISSING_RULE = ("drop those samples or fill them in (the command line leaves such rows out with a note, as "
                "fairmedfm score does)")


# ---------------------------------------------------------------------------------------------
# Generic conversion
# ---------------------------------------------------------------------------------------------

def is_arrow(values: Any) -> bool:
    module = type(values).__module__
    return module.startswith("pyarrow")


def is_polars(values: Any) -> bool:
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
        array = _torch_to_numpy(values)
    elif is_pandas(values, "Series", "DataFrame", "Index"):
        array = values.to_numpy()
    elif is_arrow(values):
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


#: PyTorch dtypes that NumPy has no type for, and the type they are read as (exactly: every
#: bfloat16 value is a float32 value).
_TORCH_UPCAST = {"torch.bfloat16": "float32"}


def _torch_to_numpy(tensor: Any) -> np.ndarray:
    """A PyTorch tensor (any device, with or without grad) as NumPy: moved to the CPU once; bfloat16
    (the usual mixed-precision type, which NumPy lacks) read as float32, which holds it exactly."""
    tensor = tensor.detach()
    upcast = _TORCH_UPCAST.get(str(getattr(tensor, "dtype", "")))
    if upcast is not None:
        import torch  # present: the tensor is one of its objects

        tensor = tensor.to(device="cpu", dtype=getattr(torch, upcast))
    return tensor.cpu().numpy()


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


def preview(values: Any, limit: int = 6) -> str:
    """The first ``limit`` values as error messages show them: ``[0.2, 1.5, ...]`` (NumPy scalars as
    Python values). The one preview of values in the package."""
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
    if not need:
        return
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
    given = tuple(named.values())
    if "pandas" not in sys.modules:  # no input can be a pandas object
        return given
    for value in given:
        if not isinstance(value, np.ndarray):
            break
    else:  # NumPy arrays have no index
        return given
    indexes = [(name, index) for name, value in named.items() if (index := pandas_index(value)) is not None]
    if len(indexes) < 2:  # nothing to pair by label
        return given
    values = dict(named)
    reference_name, reference = indexes[0]
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
    if labels.ndim != 1:
        labels = labels.reshape(len(labels), -1)
        if labels.shape[1] != 1:
            raise ValueError(f"y_true must hold one label per sample (or one-hot rows), got shape {raw.shape}")
        labels = labels[:, 0]
    info: dict[str, Any] = {}
    if pos_label is not None:
        is_positive = np.asarray(labels == pos_label)
        if is_positive.shape != labels.shape or not is_positive.any():
            raise ValueError(f"pos_label={shown(pos_label)} does not occur in y_true, whose values include "
                             f"{preview(pd.unique(labels))}; pass one of those")
        info["pos_label"] = _plain(pos_label)
        if len(pd.unique(labels)) > 2:
            info["one_vs_rest"] = True
        return is_positive.astype(np.uint8), info
    kind = labels.dtype.kind
    if kind == "b":
        return labels.astype(np.uint8), info
    # 0 <= labels <= 1 in one pass: a negative integer read as unsigned is above 1 (a comparison and a
    # count cost a third of a max() on small arrays)
    if kind in "iu" and not np.count_nonzero(labels.view(_unsigned(labels.dtype)) > 1):
        return labels.astype(np.uint8), info
    if kind == "f" and bool(np.all((labels == 0) | (labels == 1))):
        return labels.astype(np.uint8), info
    if kind == "f" and np.isnan(labels).any():
        where = np.flatnonzero(np.isnan(labels))
        raise ValueError(f"y_true has {len(where)} missing values (NaN or null) at samples {preview(where)}; "
                         f"{MISSING_RULE}")
    values = pd.unique(labels)
    try:
        values = np.sort(values)
    except TypeError:  # mixed types: as they come
        pass
    raise ValueError(f"y_true has values {preview(values)}, not only 0/1 or booleans; name the positive class "
                     f"with pos_label, e.g. pos_label={shown(_plain(values[-1]))} (every other value counts as "
                     "negative)")


@lru_cache(maxsize=64)
def _unsigned(dtype: np.dtype) -> np.dtype:
    """The unsigned integer type of the integer type ``dtype`` (same size and byte order)."""
    return np.dtype(dtype.str.replace("i", "u"))


_FLOAT32 = np.dtype(np.float32)


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
                         f"values {preview(values.ravel())}") from None


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


def _positive_column(score_column: Any, pos_label: Any, n_classes: int, valid: str) -> int:
    """The column of the positive class in a (samples, classes) ``y_score``: ``score_column``, else the
    second of two, else an integer ``pos_label``; ``valid`` says which columns there are."""
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
    return column


def positive_scores(y_score: Any, score_type: str = "auto", score_column: int | None = None,
                    pos_label: Any = None, details: dict[str, Any] | None = None) -> tuple[np.ndarray, dict[str, Any]]:
    """Positive-class probabilities (float32 kept as float32) from probabilities, logits, or a
    (samples, classes) array of either.

    ``details``, when given, receives facts about a sigmoid conversion for its warning:
    ``"logits"`` (the 1-D scores before it, a reference), ``"score_type"`` and ``"percent"`` (the
    scores look like percentages: within [0, 100], some above 1)."""
    if score_type not in ("auto", "probability", "logit"):
        raise ValueError(f"score_type={score_type!r} is not one of 'auto', 'probability', 'logit'")
    scores = numeric(to_numpy(y_score, "y_score"), "y_score")
    if scores.dtype != _FLOAT32:
        scores = scores.astype(np.float64, copy=False)
    if scores.ndim == 2 and scores.shape[1] == 1:
        scores = scores[:, 0]
    if scores.ndim > 2:
        raise ValueError(f"y_score must be one score per sample or a (samples, classes) array, got shape "
                         f"{scores.shape}")
    if scores.size == 0:
        raise ValueError("y_score is empty: pass one score per sample")
    # NaN shows in the minimum (NaN propagates), which the probability check needs anyway
    low = scores.min()
    if low != low:
        nan = np.isnan(scores)
        where = np.flatnonzero(nan.reshape(len(scores), -1).any(axis=1))
        raise ValueError(f"y_score has {len(where)} missing values (NaN or null) at samples {preview(where)}; "
                         f"{MISSING_RULE}")
    info: dict[str, Any] = {}
    if scores.ndim == 1:
        high = scores.max()
        probability = bool(low >= 0 and high <= 1)
        percent = bool(low >= 0 and 1 < high <= 100)
        if score_type == "probability" and not probability:
            raise not_probabilities("y_score", low, high)
        if score_type == "logit" or not probability:
            logits = scores
            scores = 1 / (1 + np.exp(-scores.astype(np.float64)))
            info["score_transform"] = "sigmoid"
            if details is not None:
                details.update(logits=logits, score_type=score_type, percent=percent and score_type == "auto")
        return scores, info
    scores = scores.astype(np.float64, copy=False)
    n_classes = scores.shape[1]
    valid = f"the valid columns of y_score (shape {scores.shape}) are {list(range(n_classes))}"
    column = _positive_column(score_column, pos_label, n_classes, valid)
    rows_sum_to_one = _in_unit_interval(scores) and np.allclose(scores.sum(axis=1), 1, atol=1e-3)
    if score_type == "logit" or (score_type == "auto" and not rows_sum_to_one):
        shifted = np.exp(scores - scores.max(axis=1, keepdims=True))
        scores = shifted / shifted.sum(axis=1, keepdims=True)
        info["score_transform"] = "softmax"
    info["score_column"] = column
    return scores[:, column], info


def not_probabilities(what: str, low: float, high: float) -> ValueError:
    """The error of score_type='probability' on scores outside [0, 1] (``what``: the scores' name)."""
    if low >= 0 and 1 < high <= 100:
        return ValueError(f"score_type='probability' but {what} ranges over [{low}, {high}], as percentages do: "
                          "divide the scores by 100 to make them probabilities, or pass score_type='logit' if "
                          "they really are logits")
    return ValueError(f"score_type='probability' but {what} ranges over [{low}, {high}]; pass score_type='logit' "
                      "or 'auto' for logits")


def sigmoid_ties(logits: np.ndarray, labels: np.ndarray, weights: np.ndarray | None) -> tuple[int, float]:
    """Samples whose distinct logits the float64 sigmoid made equal, and the AUC on the logits.

    The sigmoid is monotone, so the AUC of the logits is exact where that of the rounded
    probabilities loses the order of the samples it ties (every logit above about 37 becomes 1.0).
    (0, NaN) when the sigmoid tied no distinct logits: one ``np.sort`` of the logits and a pass.
    """
    ranked = np.sort(logits).astype(np.float64, copy=False)
    probabilities = 1 / (1 + np.exp(-ranked))  # the same values as the conversion, in ascending order
    same = probabilities[1:] == probabilities[:-1]
    merged = same & (ranked[1:] != ranked[:-1])
    if not merged.any():
        return 0, math.nan
    block = np.concatenate(([0], np.cumsum(~same)))  # the block of equal probabilities of each sample
    tied = int(np.bincount(block)[np.unique(block[1:][merged])].sum())
    return tied, logit_auc(logits, labels, weights)


def logit_auc(scores: np.ndarray, labels: np.ndarray, weights: np.ndarray | None) -> float:
    """AUC of raw scores (ties count one half): the share of (positive, negative) pairs, by weight,
    in which the positive scores higher."""
    positive = labels > 0
    if weights is None:
        below = np.sort(scores[~positive])
        above = np.sort(scores[positive])  # sorted, the searches below walk memory in order
        if not len(below) or not len(above):
            return math.nan
        lower = np.searchsorted(below, above, "left")
        upper = np.searchsorted(below, above, "right")
        return float((lower.sum() + (upper - lower).sum() / 2) / (len(above) * len(below)))
    order = np.argsort(scores, kind="stable")
    ranked = scores[order]
    w = weights[order]
    pos = np.where(positive[order], w, 0.0)
    neg = w - pos
    starts = np.flatnonzero(np.concatenate(([True], ranked[1:] != ranked[:-1])))
    pos, neg = np.add.reduceat(pos, starts), np.add.reduceat(neg, starts)
    below_blocks = np.cumsum(neg) - neg  # the negative weight of the blocks below each block
    if pos.sum() == 0 or neg.sum() == 0:
        return math.nan
    return float((pos * (below_blocks + neg / 2)).sum() / (pos.sum() * neg.sum()))


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
