"""One fairness number per call, like ``sklearn.metrics``: for training logs, model selection and
``sklearn.metrics.make_scorer``.

Each function computes only what its number needs (``auc_gap`` sorts and counts; ``bce_gap`` does
not even sort). With several attribute columns in ``sensitive_features``, their combinations are
the groups (e.g. ``"F & >=60"``). When the number cannot be computed (fewer than two groups with
both labels) the result is NaN and the reasons are issued as ``UserWarning``.

The functions are made from the summary columns' registry entries (``_metric_registry.SUMMARIES``,
those with a ``function``): their signatures, docstrings and the column each returns. They are real
functions (compiled from a template once, at import), so calls cost no more than a hand-written one.
"""
from __future__ import annotations

import math
import warnings
from typing import Any

from . import _engine, _groups, _metric_registry
from .evaluation import assess, check_min_group_size, prepare, require_both_labels, transform_note


def _classification(column: str, y_true: Any, y_score: Any, sensitive_features: Any, pos_label: Any,
                    score_type: str, score_column: int | None, bins: _groups.Bins | None,
                    sample_weight: Any = None, threshold: float | None = None,
                    min_group_size: int | None = None) -> float:
    min_group_size = check_min_group_size(min_group_size)
    notes: list[str] = []
    prepared, sensitive_features = prepare(y_true, y_score, sensitive_features, pos_label, score_type,
                                           score_column, notes, sample_weight, threshold)
    presort = None
    wanted = _metric_registry.needs(column)
    if len(prepared.labels) >= _engine.THREADED_FROM and _engine.needs_sort(wanted, prepared.threshold):
        presort = _engine.Presort(prepared.scores, prepared.labels, prepared.weights)  # sorts while the attribute is coded
    attribute = _groups.one_attribute(sensitive_features, len(prepared.labels), bins)
    notes.extend(transform_note(prepared.metadata))
    require_both_labels(prepared.labels)
    result = assess(prepared, [attribute], notes, wanted=wanted, with_overall=False,
                    threshold=prepared.threshold, weights=prepared.weights, presort=presort,
                    min_group_size=min_group_size)[0][0]
    for message in notes:
        warnings.warn(message, UserWarning, stacklevel=3)
    value = result.summary.get(column, math.nan)
    return float(value)


_PARAMETERS = """
Parameters
----------
y_true : array-like of shape (n_samples,) or (n_samples, n_classes)
    0/1, booleans, one-hot rows, or any labels with ``pos_label``.
y_score : array-like of shape (n_samples,) or (n_samples, n_classes)
    Probabilities, logits, or a per-class matrix (``predict_proba``, softmax or logits).
sensitive_features : array-like, Series, DataFrame or dict
    Group of each sample; several columns are combined into intersectional groups.
pos_label, score_type, score_column, bins
    As in :func:`fairmedfm_fast.evaluate`.
sample_weight : array-like of shape (n_samples,), optional
    Extension: a non-negative weight per sample.{threshold}
min_group_size : int, optional
    Extension: groups with fewer samples are left out (as in :func:`fairmedfm_fast.evaluate`).

Returns
-------
float
    NaN (with a ``UserWarning``) when fewer than two groups have both labels.
"""
_THRESHOLD = """
threshold : float, optional
    Extension: a fixed decision threshold (e.g. chosen on validation data) instead of the best-F1
    threshold of these samples. Predictions are ``score > threshold``."""

_TEMPLATE = """
def {name}(y_true: Any, y_score: Any, *, sensitive_features: Any, pos_label: Any = None,
           score_type: str = "auto", score_column: int | None = None, bins: _groups.Bins | None = None,
           sample_weight: Any = None,{threshold} min_group_size: int | None = None) -> float:
    return _classification({column!r}, y_true, y_score, sensitive_features, pos_label, score_type,
                           score_column, bins, sample_weight, {threshold_value}, min_group_size)
"""


def _make(summary: _metric_registry.Summary):
    """The one-number function of a summary column's entry, with its signature and docstring."""
    at_threshold = summary.at_threshold
    source = _TEMPLATE.format(name=summary.function, column=summary.column,
                              threshold=" threshold: float | None = None," if at_threshold else "",
                              threshold_value="threshold" if at_threshold else "None")
    namespace: dict[str, Any] = {}
    # compiled under this module's ``from __future__ import annotations``: the annotations stay text
    exec(compile(source, f"<{__name__}.{summary.function}>", "exec"), globals(), namespace)  # noqa: S102
    function = namespace[summary.function]
    function.__doc__ = summary.doc + "\n" + _PARAMETERS.format(threshold=_THRESHOLD if at_threshold else "")
    return function


#: The one-number functions, in the order of the summary columns they return.
FUNCTIONS = {summary.function: _make(summary) for summary in _metric_registry.SUMMARIES if summary.function}
globals().update(FUNCTIONS)
__all__ = list(FUNCTIONS)
