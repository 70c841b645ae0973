"""The classification core shared by the evaluation functions: inputs prepared (:func:`prepare`),
every attribute measured by one engine call (:func:`assess`), each attribute's groups, skips and
summary (:func:`attribute_result`, :func:`summarize`)."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._engine import classification as _engine
from .._inputs import arrays as _inputs
from .._inputs import groups as _groups
from .._registry import metrics as _metric_registry
from .._report.assembly import AttributeResult
from .checks import check_threshold, sample_weights


@dataclass
class Prepared:
    """Validated classification inputs."""

    labels: np.ndarray
    scores: np.ndarray
    metadata: dict[str, Any]
    notes: list[str] = field(default_factory=list)
    weights: np.ndarray | None = None
    threshold: float | None = None
    conversion: dict[str, Any] = field(default_factory=dict)  # facts of a sigmoid conversion (transform_note)


def prepare(y_true: Any, y_score: Any, sensitive_features: Any, pos_label: Any, score_type: str,
            score_column: int | None, notes: list[str], sample_weight: Any = None,
            threshold: Any = None) -> tuple[Prepared, Any]:
    """Pair, validate and convert labels, scores and weights; returns them and the paired attributes."""
    named = {"y_true": y_true, "y_score": y_score, "sensitive_features": sensitive_features}
    if sample_weight is not None:
        named["sample_weight"] = sample_weight
    paired = _inputs.align_by_index(named, notes)  # in the order of ``named``
    y_true, y_score = paired[0], paired[1]
    labels, label_info = _inputs.binary_labels(y_true, pos_label)
    if score_column is None and pos_label is not None:
        score_column = _inputs.class_column(y_true, y_score, pos_label)
    conversion: dict[str, Any] = {}
    scores, score_info = _inputs.positive_scores(y_score, score_type, score_column, pos_label, conversion)
    if len(labels) != len(scores):
        raise ValueError(f"y_true has {len(labels)} samples but y_score has {len(scores)}; pass one label "
                         "and one score per sample")
    weights = None if sample_weight is None else sample_weights(paired[3], len(labels))
    if conversion:  # the logits are needed only here: keep the facts, not the array
        logits = conversion.pop("logits")
        conversion["tied"], conversion["logit_auc"] = _inputs.sigmoid_ties(logits, labels, weights)
        conversion["unit"] = bool(logits.min() >= 0 and logits.max() <= 1)
    metadata = {**label_info, **score_info} if label_info else score_info
    prepared = Prepared(labels, scores, metadata, notes, weights, check_threshold(threshold), conversion)
    return prepared, paired[2]


def range_conversion(score_type: str, low: float, high: float) -> dict[str, Any]:
    """The facts of a sigmoid conversion that :func:`transform_note` reads, from the scores' range
    alone (for backends that never hold every score: the logits that the sigmoid ties are not counted)."""
    return {"score_type": score_type, "percent": score_type == "auto" and low >= 0 and 1 < high <= 100,
            "unit": low >= 0 and high <= 1, "tied": 0}


def transform_note(metadata: Mapping[str, Any], conversion: Mapping[str, Any] | None = None) -> list[str]:
    """The warning about scores read as logits (one message), with what ``conversion`` (of
    :func:`prepare`) knows: scores that look like percentages, logits that the sigmoid tied."""
    transform = metadata.get("score_transform")
    if not transform:
        return []
    conversion = conversion or {}
    if transform != "sigmoid" or not conversion:
        return [f"y_score was read as logits and turned into probabilities with a {transform}; pass "
                "score_type='probability' if the scores already are probabilities"]
    if conversion["score_type"] == "logit":
        note = "y_score was read as logits (score_type='logit') and turned into probabilities with a sigmoid"
        if conversion["unit"]:
            note += "; pass score_type='probability' if the scores already are probabilities"
    else:
        note = ("y_score has values outside [0, 1], so it was read as logits and turned into probabilities with "
                "a sigmoid")
        if conversion["percent"]:
            note += ("; but its values lie within [0, 100], as percentages do, and the sigmoid turns every score "
                     "above about 37 into 1.0: divide the scores by 100 if they are percentages, or pass "
                     "score_type='logit' if they really are logits")
    if conversion["tied"]:
        note += (f"; the sigmoid made {conversion['tied']} samples with distinct scores equal in float64, so "
                 "the metrics (on the probabilities, as in fairmedfm 0.4.2) count them as ties: the AUC of all "
                 f"samples on y_score as given is {conversion['logit_auc']:.6g}")
    return [note]


def as_python(value: Any) -> Any:
    if isinstance(value, np.integer):
        return int(value)
    return float(value)


def _python_values(values: np.ndarray) -> list:
    """``[as_python(v) for v in values]``, by one ``tolist``."""
    return values.tolist() if values.dtype.kind in "iuf" else values.astype(np.float64).tolist()


def assess(prepared: Prepared, attributes: list[_groups.Attribute], warnings: list[str],
           wanted: set[str] | None = None, with_overall: bool = True, threshold: float | None = None,
           weights: np.ndarray | None = None, presort: _engine.Presort | None = None,
           min_group_size: int | None = None, curves: bool = False
           ) -> tuple[list[AttributeResult], dict, _engine.Arranged]:
    """Metrics of every attribute (and of all samples when ``with_overall``) in one engine call.

    Appends the notes about missing values, skipped groups and empty summaries to ``warnings``.
    ``threshold`` replaces each attribute's best-F1 threshold for the ``@best_f1`` metrics;
    groups of fewer than ``min_group_size`` samples are skipped; ``curves``: each result also gets
    what the pictures draw (``AttributeResult.curves``).
    """
    labels = prepared.labels
    rows = [attribute.codes for attribute in attributes]
    sizes = [attribute.n_groups for attribute in attributes]
    # "All samples" is the present-samples slot of any attribute without missing values; only when
    # every attribute has some does it need a grouping of its own.
    complete = None
    if with_overall:
        complete = next((k for k, attribute in enumerate(attributes) if attribute.codes.min(initial=0) >= 0), None)
    if with_overall and complete is None:
        rows.append(np.zeros(len(labels), np.intp))
        sizes.append(1)
        complete = len(rows) - 1
    arranged, groupings = _engine.arrange_and_measure(prepared.scores, labels, rows, sizes, weights, wanted, threshold,
                                                      presort, curves)
    overall = {}
    if with_overall:
        overall = {key: as_python(values[-1]) for key, values in groupings[complete].values.items()}
    results = []
    for attribute, grouping in zip(attributes, groupings):
        results.append(attribute_result(attribute, grouping, len(labels), warnings, min_group_size))
    return results, overall, arranged


def attribute_result(attribute: _groups.Attribute, grouping: _engine.Grouping, n_samples: int,
                      warnings: list[str], min_group_size: int | None = None) -> AttributeResult:
    name, g = attribute.name, attribute.n_groups
    # The per-slot arrays are short (a slot per group): Python lists beat NumPy calls on them.
    counts = grouping.count.tolist()
    n = int(counts[g])
    missing = n_samples - n
    if missing:
        warnings.append(f"{name}: {missing} samples have no value for this attribute and were left out of it")
    positives, negatives = grouping.positives[:g].tolist(), grouping.negatives[:g].tolist()
    least = min_group_size or 0
    skipped: dict[int, str] = {}
    if least:
        for i in range(g):
            if counts[i] < least:
                skipped[i] = too_small(min_group_size)
                warnings.append(f"{name}={attribute.groups[i]}: skipped, {skipped[i]} (it has {int(counts[i])}; "
                                f"min_group_size={min_group_size})")
    valid = [i for i in range(g) if positives[i] > 0 and negatives[i] > 0 and i not in skipped]
    if len(valid) + len(skipped) < g:  # groups with one label only
        for i in range(g):
            if i in skipped or (positives[i] > 0 and negatives[i] > 0):
                continue
            skipped[i] = f"only label {1 if positives[i] else 0}"
            warnings.append(f"{name}={attribute.groups[i]}: skipped, {skipped[i]} among its "
                            f"{int(counts[i])} samples (AUC, TPR and TNR need both labels)")
    overall: dict[str, Any] = {}
    keys: tuple[str, ...] = ()
    rows: list[tuple] = []
    summary: dict[str, Any] = {"n": n, "n_groups": len(valid)}
    if len(valid) < 2:
        warnings.append(_groups.one_group_warning(attribute) or f"{name}: fewer than two groups have both "
                        "labels, so the attribute has no summary metrics")
    else:
        # Python numbers from whole arrays at once (as as_python: ints stay ints, the rest floats)
        keys = tuple(grouping.values)
        columns = [array.tolist() if array.dtype.kind in "iuf" else _python_values(array)
                   for array in grouping.values.values()]
        rows = list(zip(*columns))  # a tuple of every metric per slot
        overall = dict(zip(keys, rows[g]))
        # the groups' values of the metrics that summary columns read
        if len(valid) == g:  # every group evaluable: the first g slots
            per_metric = {key: column[:g] for key, column in zip(keys, columns) if key in _metric_registry.REGISTRY.summary_reads}
        else:
            per_metric = {key: [column[i] for i in valid] for key, column in zip(keys, columns)
                          if key in _metric_registry.REGISTRY.summary_reads}
        summary.update(summarize(overall, per_metric))
    group_counts = counts[:g] if grouping.count.dtype.kind in "iu" else [int(count) for count in counts[:g]]
    return AttributeResult(name, n, attribute.groups, group_counts, valid, skipped, overall, summary,
                           grouping.threshold, keys, rows, grouping.curves, grouping.first_slot)


def too_small(min_group_size: int) -> str:
    """The ``skipped`` reason of a group below ``min_group_size``."""
    return f"fewer than {min_group_size} samples"


def summarize(overall: Mapping[str, float], groups: Mapping[str, Sequence[float]]) -> dict[str, float]:
    """The FairMedFM summary columns that the given metrics determine (see
    :func:`_metric_registry.summarize`, which makes every column from its registry entry).

    Gaps are the largest minus the smallest group value; ``eo`` is the TPR gap and ``eod`` is
    ``1 - (TPR gap + TNR gap) / 2``, both at the best-F1 threshold. A column over the groups is NaN
    when a group's value is NaN.
    """
    return _metric_registry.summarize(overall, groups)


def with_default(extra: Sequence[str]) -> set[str] | None:
    """The per-group keys to compute: fairmedfm's (None) and the opt-in ``extra`` keys."""
    return {*_engine.all_keys(), *extra} if extra else None
