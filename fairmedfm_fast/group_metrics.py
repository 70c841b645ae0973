"""One fairness number per call, like ``sklearn.metrics``: for training logs, model selection and
``sklearn.metrics.make_scorer``.

Each function computes only what its number needs (``auc_gap`` sorts and counts; ``bce_gap`` does
not even sort). With several attribute columns in ``sensitive_features``, their combinations are
the groups (e.g. ``"F & >=60"``). When the number cannot be computed (fewer than two groups with
both labels) the result is NaN and the reasons are issued as ``UserWarning``.
"""
from __future__ import annotations

import math
import warnings
from typing import Any

from . import _engine, _groups, _metric_registry
from .evaluation import assess, check_min_group_size, prepare, require_both_labels, transform_note

__all__ = [
    "auc_gap", "worst_group_auc", "accuracy_gap", "bce_gap", "ece_gap", "equal_opportunity_difference",
    "equalized_odds_score",
]



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
    notes.extend(transform_note(prepared.metadata, prepared.conversion))
    require_both_labels(prepared.labels)
    result = assess(prepared, [attribute], notes, wanted=wanted, with_overall=False,
                    threshold=prepared.threshold, weights=prepared.weights, presort=presort,
                    min_group_size=min_group_size)[0][0]
    for message in notes:
        warnings.warn(message, UserWarning, stacklevel=3)
    value = result.summary.get(column, math.nan)
    return float(value)


def auc_gap(y_true: Any, y_score: Any, *, sensitive_features: Any, pos_label: Any = None, score_type: str = "auto",
            score_column: int | None = None, bins: _groups.Bins | None = None, sample_weight: Any = None,
            min_group_size: int | None = None) -> float:
    """Largest minus smallest group ROC AUC (0 is fair).

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
        Extension: a non-negative weight per sample.
    min_group_size : int, optional
        Extension: groups with fewer samples are left out (as in :func:`fairmedfm_fast.evaluate`).

    Returns
    -------
    float
        NaN (with a ``UserWarning``) when fewer than two groups have both labels.
    """
    return _classification("auc-gap", y_true, y_score, sensitive_features, pos_label, score_type, score_column,
                           bins, sample_weight, None, min_group_size)


def worst_group_auc(y_true: Any, y_score: Any, *, sensitive_features: Any, pos_label: Any = None,
                    score_type: str = "auto", score_column: int | None = None,
                    bins: _groups.Bins | None = None, sample_weight: Any = None,
            min_group_size: int | None = None) -> float:
    """Lowest group ROC AUC (higher is better). Parameters as in :func:`auc_gap`."""
    return _classification("worst-auc", y_true, y_score, sensitive_features, pos_label, score_type, score_column,
                           bins, sample_weight, None, min_group_size)


def accuracy_gap(y_true: Any, y_score: Any, *, sensitive_features: Any, pos_label: Any = None,
                 score_type: str = "auto", score_column: int | None = None,
                 bins: _groups.Bins | None = None, sample_weight: Any = None, threshold: float | None = None,
                 min_group_size: int | None = None) -> float:
    """Largest minus smallest group accuracy at the best overall F1 threshold (0 is fair).

    Parameters as in :func:`auc_gap`. Predictions are ``score > threshold``. Extension:
    ``threshold=`` fixes the decision threshold (e.g. chosen on validation data) instead.
    """
    return _classification("acc-gap", y_true, y_score, sensitive_features, pos_label, score_type, score_column,
                           bins, sample_weight, threshold, min_group_size)


def bce_gap(y_true: Any, y_score: Any, *, sensitive_features: Any, pos_label: Any = None, score_type: str = "auto",
            score_column: int | None = None, bins: _groups.Bins | None = None, sample_weight: Any = None,
            min_group_size: int | None = None) -> float:
    """Largest minus smallest group binary cross-entropy (0 is fair). Parameters as in :func:`auc_gap`."""
    return _classification("bce-gap", y_true, y_score, sensitive_features, pos_label, score_type, score_column,
                           bins, sample_weight, None, min_group_size)


def ece_gap(y_true: Any, y_score: Any, *, sensitive_features: Any, pos_label: Any = None, score_type: str = "auto",
            score_column: int | None = None, bins: _groups.Bins | None = None, sample_weight: Any = None,
            min_group_size: int | None = None) -> float:
    """Largest minus smallest group expected calibration error (0 is fair).

    Parameters as in :func:`auc_gap`. Each group's 10 equal-width bins span its own score range.
    """
    return _classification("ece-gap", y_true, y_score, sensitive_features, pos_label, score_type, score_column,
                           bins, sample_weight, None, min_group_size)


def equal_opportunity_difference(y_true: Any, y_score: Any, *, sensitive_features: Any, pos_label: Any = None,
                                 score_type: str = "auto", score_column: int | None = None,
                                 bins: _groups.Bins | None = None, sample_weight: Any = None, threshold: float | None = None,
                 min_group_size: int | None = None) -> float:
    """Largest minus smallest group true positive rate at the best-F1 threshold (``eo``; 0 is fair).

    Parameters as in :func:`auc_gap`; ``threshold=`` (extension) fixes the decision threshold.
    """
    return _classification("eo", y_true, y_score, sensitive_features, pos_label, score_type, score_column, bins, sample_weight, threshold, min_group_size)


def equalized_odds_score(y_true: Any, y_score: Any, *, sensitive_features: Any, pos_label: Any = None,
                         score_type: str = "auto", score_column: int | None = None,
                         bins: _groups.Bins | None = None, sample_weight: Any = None, threshold: float | None = None,
                 min_group_size: int | None = None) -> float:
    """``1 - (TPR gap + TNR gap) / 2`` at the best-F1 threshold (``eod``; 1 is fair).

    A score, not a difference: fairlearn's ``equalized_odds_difference`` is 0 when fair.
    Parameters as in :func:`auc_gap`; ``threshold=`` (extension) fixes the decision threshold.
    """
    return _classification("eod", y_true, y_score, sensitive_features, pos_label, score_type, score_column, bins, sample_weight, threshold, min_group_size)
