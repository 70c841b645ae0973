"""One fairness number per call, like ``sklearn.metrics``: for training logs, model selection and
``sklearn.metrics.make_scorer``.

Each function computes only what its number needs (``auc_gap`` sorts and counts; ``bce_gap`` does
not even sort). With several attribute columns in ``sensitive_features``, their combinations are
the groups (e.g. ``"F & >=60"``). When the number cannot be computed (fewer than two groups with
both labels) the result is NaN and the reasons are issued as ``UserWarning``.

The functions are made from the summary columns' registry entries (``REGISTRY.summaries``, those
with a ``function``): their names, docstrings and the column each returns. Each is an object of one
of two classes (with or without ``threshold=``), whose ``__call__`` is the signature; it pickles as
the column it returns (Dask, process pools), so that registered columns travel too.
"""
from __future__ import annotations

import math
import warnings
from typing import Any

from ._backends.assess import assess, prepare, transform_note
from ._backends.checks import check_min_group_size, require_both_labels
from ._engine import classification as _engine
from ._engine import sorting as _sorting
from ._inputs import groups as _groups
from ._registry import metrics as _metric_registry


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
    if len(prepared.labels) >= _sorting.THREADED_FROM and _engine.needs_sort(wanted, prepared.threshold):
        presort = _engine.Presort(prepared.scores, prepared.labels, prepared.weights)  # sorts while the attribute is coded
    attribute = _groups.one_attribute(sensitive_features, len(prepared.labels), bins)
    notes.extend(transform_note(prepared.metadata, prepared.conversion))
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

class _OneNumber:
    """The one-number function of a summary column (its entry's name and docstring)."""

    def __init__(self, summary: _metric_registry.Summary, name: str):
        self.column = summary.column
        self.__name__ = self.__qualname__ = name
        threshold = _THRESHOLD if summary.at_threshold else ""
        self.__doc__ = summary.doc + "\n" + _PARAMETERS.format(threshold=threshold)

    def __call__(self, y_true: Any, y_score: Any, *, sensitive_features: Any, pos_label: Any = None,
                 score_type: str = "auto", score_column: int | None = None, bins: _groups.Bins | None = None,
                 sample_weight: Any = None, min_group_size: int | None = None) -> float:
        return _classification(self.column, y_true, y_score, sensitive_features, pos_label, score_type,
                               score_column, bins, sample_weight, None, min_group_size)

    def __reduce__(self):
        return function_of, (self.column,)

    def __repr__(self) -> str:
        return f"<function {__name__}.{self.__name__}>"


class _OneNumberAtThreshold(_OneNumber):
    """The one-number function of a column that reads ``@best_f1`` values: ``threshold=`` too."""

    def __call__(self, y_true: Any, y_score: Any, *, sensitive_features: Any, pos_label: Any = None,
                 score_type: str = "auto", score_column: int | None = None, bins: _groups.Bins | None = None,
                 sample_weight: Any = None, threshold: float | None = None,
                 min_group_size: int | None = None) -> float:
        return _classification(self.column, y_true, y_score, sensitive_features, pos_label, score_type,
                               score_column, bins, sample_weight, threshold, min_group_size)


def _make(summary: _metric_registry.Summary, name: str | None = None):
    """The one-number function of a summary column's entry, with its signature and docstring."""
    return (_OneNumberAtThreshold if summary.at_threshold else _OneNumber)(summary, name or summary.function)


_KIND_WORDS = {"gap": "Largest minus smallest group", "worst": "Smallest group", "best": "Largest group",
               "ratio": "Smallest over largest group", "score": "1 minus the group gap of"}


def function_of(column: str):
    """The one-number function of any summary column over the groups, opt-in and registered ones
    included (e.g. ``function_of("ap-gap")``, or ``"npv-gap"`` of :func:`fairmedfm_fast.register_metric`):
    made once from the column's registry entry, with the signature of :func:`auc_gap` (and
    ``threshold=`` when the column reads ``@best_f1`` values)."""
    summary = _metric_registry.REGISTRY.summary.get(column)
    if summary is None and _metric_registry.load_plugins():
        summary = _metric_registry.REGISTRY.summary.get(column)
    if summary is None or summary.kind == "overall":
        names = [s.column for s in _metric_registry.REGISTRY.summaries if s.kind != "overall"]
        raise ValueError(f"column={column!r} is not a summary column over the groups; choose from {names}")
    name = summary.function or column.replace("-", "_").replace("@", "_at_")
    function = FUNCTIONS.get(name) or _MADE.get(column)
    if function is None:
        if not summary.doc:  # a registered column: its docstring from its kind and the metric it reads
            read = ", ".join(f"``{key}``" for key in summary.reads)
            summary = _metric_registry.Summary(summary.column, summary.kind, summary.reads, summary.optional,
                                               doc=f"{_KIND_WORDS[summary.kind]} {read} (``{column}``).")
        function = _MADE[column] = _make(summary, name)
    return function


#: The one-number functions, in the order of the summary columns they return.
FUNCTIONS = {summary.function: _make(summary) for summary in _metric_registry.REGISTRY.summaries if summary.function}
worst_group_auc = FUNCTIONS["worst_group_auc"]
auc_gap = FUNCTIONS["auc_gap"]
accuracy_gap = FUNCTIONS["accuracy_gap"]
bce_gap = FUNCTIONS["bce_gap"]
ece_gap = FUNCTIONS["ece_gap"]
equalized_odds_score = FUNCTIONS["equalized_odds_score"]
equal_opportunity_difference = FUNCTIONS["equal_opportunity_difference"]
_MADE: dict[str, Any] = {}  # by function_of, for the other columns
__all__ = [*FUNCTIONS, "function_of"]
