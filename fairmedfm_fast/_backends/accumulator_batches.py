"""What :class:`~fairmedfm_fast._backends.accumulator.FairnessAccumulator` reads of one batch beside
its samples: the batch's weights, the category names of its categorical columns, the checks that a
later batch reads as the first did (scores of one type, rows of probabilities), and the text columns
whose coding waits for more batches (:func:`text_columns`, :func:`joined_columns`).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .._inputs import arrays as _inputs
from .._inputs import groups as _groups
from .._inputs import value_codes as _codes
from .checks import sample_weights


def batch_weights(sample_weight: Any, n: int) -> np.ndarray:
    """A batch's validated float64 weights: as ``evaluate`` checks them, except that one batch may
    weigh nothing (``result`` checks that some sample has weight)."""
    weights = _inputs.to_numpy(sample_weight, "sample_weight")
    if weights.dtype.kind in "biuf" and weights.size == n and not np.any(weights):
        return np.zeros(n)
    return sample_weights(weights, n)


def categorical_names(sensitive_features: Any, names: list[str]) -> list[list[str] | None]:
    """Per attribute, the category names of a pandas categorical column (None for other columns)."""
    pd = _inputs.pd
    if not _inputs.is_pandas(sensitive_features, "DataFrame", "Series"):
        return [None] * len(names)
    if _inputs.is_pandas(sensitive_features, "Series"):
        dtypes = [sensitive_features.dtype]
    else:  # each column's dtype from its array: no Series made (iloc costs 0.2 ms a column, .dtypes 80 us)
        take = getattr(sensitive_features, "_get_column_array", None)
        dtypes = ([take(i).dtype for i in range(sensitive_features.shape[1])] if take is not None
                  else sensitive_features.dtypes.tolist())
    out: list[list[str] | None] = []
    for k in range(len(names)):
        if k < len(dtypes) and isinstance(dtypes[k], pd.CategoricalDtype):
            out.append([_codes.group_name(value) for value in dtypes[k].categories.tolist()])
        else:
            out.append(None)
    return out


def text_columns(sensitive_features: Any, names: list[str], n: int) -> list[Any] | None:
    """A batch's attribute columns as text that coding cannot reject, to be coded later with other
    batches' (:func:`joined_columns`): when the batch is a DataFrame or a dict of the attributes
    ``names``, in order, each column ``n`` values of text without a missing value (an Arrow-backed
    pandas column or a pyarrow string array, kept as the pyarrow array, which cannot change; a NumPy
    ``U`` or ``S`` array, copied). None for any other batch, which is read at once (and raises there
    if it must)."""
    if not (isinstance(sensitive_features, dict) or _inputs.is_pandas(sensitive_features, "DataFrame")):
        return None
    columns = _groups.attribute_columns(sensitive_features)
    if [name for name, _ in columns] != names:
        return None
    kept = []
    for _, values in columns:
        if len(values) != n:
            return None
        if isinstance(values, np.ndarray):
            if values.dtype.kind not in "US" or values.ndim != 1:
                return None
            kept.append(values.copy())
            continue
        array = _codes.arrow_text(values)
        if array is None:
            return None
        kept.append(array)
    return kept


def text_form(columns: list[Any]) -> tuple:
    """What :func:`joined_columns` needs alike in the batches it joins: each column's NumPy kind, or
    Arrow's type."""
    return tuple(column.dtype.kind if isinstance(column, np.ndarray) else column.type for column in columns)


def joined_columns(batches: list[list[Any]], names: list[str]) -> dict[str, Any]:
    """The columns of several batches' :func:`text_columns` (of one :func:`text_form`), joined:
    attribute name -> one array."""
    import pyarrow as pa

    return {name: np.concatenate(pieces) if isinstance(pieces[0], np.ndarray) else pa.concat_arrays(pieces)
            for name, pieces in zip(names, zip(*batches))}


def require_rows_sum_to_one(y_score: Any) -> None:
    scores = _inputs.numeric(_inputs.to_numpy(y_score, "y_score"), "y_score").astype(np.float64)
    if not (scores.size and scores.min() >= 0 and scores.max() <= 1 and np.allclose(scores.sum(axis=1), 1, atol=1e-3)):
        raise ValueError("the first batch's score rows were read as probabilities (rows that sum to one), and this "
                         "batch's rows do not sum to one; pass score_type='logit' (or 'probability') to the "
                         "accumulator so that every batch is read alike")


def widest(span: tuple[float, float] | None, other: tuple[float, float] | None) -> tuple[float, float] | None:
    """The smallest range holding both ranges (None: no range)."""
    if span is None or other is None:
        return other if span is None else span
    return min(span[0], other[0]), max(span[1], other[1])


PLURAL = {"probability": "probabilities", "logit": "logits"}


def reads_as_other(y_score: Any, column: int | None, pos_label: Any) -> bool:
    """Whether a batch that does not fit the first batch's score type reads as scores of another type
    (and not, say, scores with NaN, which fit no type)."""
    try:
        _inputs.positive_scores(y_score, "auto", column, pos_label, {})
    except ValueError:
        return False
    return True
