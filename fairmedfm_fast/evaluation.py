"""Fairness evaluation of binary classifiers: :func:`evaluate` and the shared assessment core."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from . import _engine, _inputs
from .report import FairnessReport, group_frame, summary_frame

__all__ = ["FairnessReport", "evaluate"]


@dataclass
class Prepared:
    """Validated classification inputs."""

    labels: np.ndarray
    scores: np.ndarray
    metadata: dict[str, Any]
    notes: list[str] = field(default_factory=list)


def prepare(y_true: Any, y_score: Any, sensitive_features: Any, pos_label: Any, score_type: str,
            score_column: int | None, notes: list[str]) -> tuple[Prepared, Any]:
    """Pair, validate and convert labels and scores; returns them and the paired attributes."""
    y_true, y_score, sensitive_features = _inputs.align_by_index(
        {"y_true": y_true, "y_score": y_score, "sensitive_features": sensitive_features}, notes)
    labels, label_info = _inputs.binary_labels(y_true, pos_label)
    if score_column is None and pos_label is not None:
        score_column = _inputs.class_column(y_true, y_score, pos_label)
    scores, score_info = _inputs.positive_scores(y_score, score_type, score_column, pos_label)
    if len(labels) != len(scores):
        raise ValueError(f"y_true has {len(labels)} samples but y_score has {len(scores)}; pass one label "
                         "and one score per sample")
    return Prepared(labels, scores, {**label_info, **score_info}, notes), sensitive_features


def transform_note(metadata: Mapping[str, Any]) -> list[str]:
    transform = metadata.get("score_transform")
    if not transform:
        return []
    return [f"y_score was read as logits and turned into probabilities with a {transform}; pass "
            "score_type='probability' if the scores already are probabilities"]


def require_both_labels(labels: np.ndarray) -> None:
    positives = int(np.count_nonzero(labels))
    if positives == 0 or positives == len(labels):
        only = 1 if positives else 0
        raise ValueError(f"y_true has only label {only} ({len(labels)} samples); fairness metrics need both "
                         "positive and negative samples")


@dataclass
class AttributeResult:
    """What the report says about one attribute."""

    name: str
    n: int
    groups: list[str]
    counts: list[int]
    valid: list[int]  # indices of evaluable groups
    skipped: dict[int, str]  # group index -> reason
    overall: dict[str, Any]  # metrics on the attribute's present samples (empty when not evaluable)
    by_group: dict[int, dict[str, Any]]  # group index -> metrics
    summary: dict[str, Any]


def _as_python(value: Any) -> Any:
    if isinstance(value, np.integer):
        return int(value)
    return float(value)


def assess(prepared: Prepared, attributes: list[_inputs.Attribute], warnings: list[str],
           wanted: set[str] | None = None, with_overall: bool = True) -> tuple[list[AttributeResult], dict]:
    """Metrics of every attribute (and of all samples when ``with_overall``) in one engine call.

    Appends the notes about missing values, skipped groups and empty summaries to ``warnings``.
    """
    labels = prepared.labels
    rows = [attribute.codes for attribute in attributes]
    sizes = [attribute.n_groups for attribute in attributes]
    # "All samples" is the present-samples slot of any attribute without missing values; only when
    # every attribute has some does it need a grouping of its own.
    complete = next((k for k, attribute in enumerate(attributes) if attribute.codes.min(initial=0) >= 0), None)
    if with_overall and complete is None:
        rows.append(np.zeros(len(labels), np.intp))
        sizes.append(1)
        complete = len(rows) - 1
    groupings = _engine.compute(prepared.scores, labels, rows, sizes, wanted)
    overall = {}
    if with_overall:
        overall = {key: _as_python(values[-1]) for key, values in groupings[complete].values.items()}
    results = []
    for attribute, grouping in zip(attributes, groupings):
        results.append(_attribute_result(attribute, grouping, len(labels), warnings))
    return results, overall


def _attribute_result(attribute: _inputs.Attribute, grouping: _engine.Grouping, n_samples: int,
                      warnings: list[str]) -> AttributeResult:
    name, g = attribute.name, attribute.n_groups
    n = int(grouping.count[g])
    missing = n_samples - n
    if missing:
        warnings.append(f"{name}: {missing} samples have no value for this attribute and were left out of it")
    positives, negatives = grouping.positives[:g], grouping.negatives[:g]
    both = (positives > 0) & (negatives > 0)
    valid = np.flatnonzero(both).tolist()
    skipped = {i: f"only label {1 if positives[i] else 0}" for i in np.flatnonzero(~both).tolist()}
    for i, reason in skipped.items():
        warnings.append(f"{name}={attribute.groups[i]}: skipped, {reason} among its "
                        f"{int(grouping.count[i])} samples (AUC, TPR and TNR need both labels)")
    overall: dict[str, Any] = {}
    by_group: dict[int, dict[str, Any]] = {}
    summary: dict[str, Any] = {"n": n, "n_groups": len(valid)}
    if len(valid) < 2:
        warnings.append(f"{name}: fewer than two groups have both labels, so the attribute has no summary "
                        "metrics")
    else:
        overall = {key: _as_python(values[g]) for key, values in grouping.values.items()}
        by_group = {i: {key: _as_python(values[i]) for key, values in grouping.values.items()} for i in valid}
        per_metric = {key: [by_group[i][key] for i in valid] for key in grouping.values}
        summary.update(summarize(overall, per_metric))
    return AttributeResult(name, n, attribute.groups, [int(c) for c in grouping.count[:g]], valid, skipped,
                           overall, by_group, summary)


def summarize(overall: Mapping[str, float], groups: Mapping[str, Sequence[float]]) -> dict[str, float]:
    """The FairMedFM summary columns that the given metrics determine.

    Gaps are the largest minus the smallest group value; ``eo`` is the TPR gap and ``eod`` is
    ``1 - (TPR gap + TNR gap) / 2``, both at the best-F1 threshold.
    """
    def gap(key: str) -> float:
        return float(max(groups[key]) - min(groups[key]))

    columns = (
        ("overall-auc", ("auc",), (), lambda: float(overall["auc"])),
        ("overall-acc", ("acc@best_f1",), (), lambda: float(overall["acc@best_f1"])),
        ("overall-bce", ("bce",), (), lambda: float(overall["bce"])),
        ("overall-ece", ("ece",), (), lambda: float(overall["ece"])),
        ("worst-auc", (), ("auc",), lambda: float(min(groups["auc"]))),
        ("auc-gap", (), ("auc",), lambda: gap("auc")),
        ("acc-gap", (), ("acc@best_f1",), lambda: gap("acc@best_f1")),
        ("bce-gap", (), ("bce",), lambda: gap("bce")),
        ("ece-gap", (), ("ece",), lambda: gap("ece")),
        ("eod", (), ("tpr@best_f1", "tnr@best_f1"),
         lambda: float(1 - (gap("tpr@best_f1") + gap("tnr@best_f1")) / 2)),
        ("eo", (), ("tpr@best_f1",), lambda: gap("tpr@best_f1")),
    )
    return {name: value() for name, in_overall, in_groups, value in columns
            if all(key in overall for key in in_overall) and all(key in groups for key in in_groups)}


def evaluate(y_true: Any, y_score: Any, sensitive_features: Any, *, pos_label: Any = None,
             score_type: str = "auto", score_column: int | None = None, bins: _inputs.Bins | None = None,
             intersectional: bool = False) -> FairnessReport:
    """Fairness of a binary classifier across the groups of one or more sensitive attributes.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,) or (n_samples, n_classes)
        Ground truth: 0/1, booleans, one-hot rows, or any labels together with ``pos_label``.
    y_score : array-like of shape (n_samples,) or (n_samples, n_classes)
        Positive-class probabilities or logits, or a matrix of per-class probabilities or logits.
        Lists, NumPy, pandas, pyarrow, polars and tensors (PyTorch on any device) all work.
    sensitive_features : DataFrame, dict, Series, array-like, pyarrow Table or polars DataFrame
        One or more attributes; a missing value leaves the sample out of that attribute only.
    pos_label : scalar, optional
        The positive class of ``y_true`` (one-vs-rest when there are more than two classes).
    score_type : {"auto", "probability", "logit"}
        ``"auto"`` reads scores within [0, 1] as probabilities and others as logits.
    score_column : int, optional
        Column of the positive class in a (n_samples, n_classes) ``y_score``.
    bins : dict, optional
        Groups for numeric attributes: cut points (``{"age": [40, 60]}``) or a number of quantile
        groups (``{"age": 4}``). Needed for numeric attributes with more than 20 distinct values.
    intersectional : bool, default False
        Also evaluate the combination of all attributes (groups such as ``"F & >=60"``).

    Returns
    -------
    FairnessReport
        ``summary`` per attribute (``overall-auc``, ``overall-acc``, ``overall-bce``,
        ``overall-ece``, ``worst-auc``, the gaps, ``eod`` and ``eo``), ``by_group`` with sample
        counts and skip reasons, ``overall``, ``warnings`` and ``metadata``. The README's
        "Metrics" section defines each number.
    """
    warnings: list[str] = []
    prepared, sensitive_features = prepare(y_true, y_score, sensitive_features, pos_label, score_type,
                                           score_column, warnings)
    attributes = _inputs.encode_attributes(sensitive_features, len(prepared.labels), bins, intersectional)
    warnings.extend(transform_note(prepared.metadata))
    require_both_labels(prepared.labels)
    results, overall = assess(prepared, attributes, warnings)
    summaries: dict[str, dict[str, Any]] = {}
    rows: list[dict[str, Any]] = []
    attribute_overall: dict[str, dict[str, Any]] = {}
    for result in results:
        summaries[result.name] = result.summary
        attribute_overall[result.name] = result.overall
        for i, group in enumerate(result.groups):
            rows.append({"attribute": result.name, "group": group, "n": result.counts[i],
                         **result.by_group.get(i, {}), "skipped": result.skipped.get(i)})
    metadata = {**prepared.metadata, "n_samples": len(prepared.labels)}
    return FairnessReport("cls", summary_frame(summaries), _by_group_frame(rows), overall, attribute_overall,
                          warnings, metadata)


def _by_group_frame(rows: list[dict[str, Any]]):
    if rows:
        return group_frame(rows)
    import pandas as pd

    index = pd.MultiIndex.from_arrays([[], []], names=["attribute", "group"])
    return pd.DataFrame({"n": pd.Series([], dtype=np.int64), "skipped": pd.Series([], dtype=object)}, index=index)
