"""Fairness evaluation of binary classifiers: :func:`evaluate` and the shared assessment core."""
from __future__ import annotations

import math
import warnings as _warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property, partial
from typing import Any

import numpy as np

from . import (
    _analytic,
    _engine,
    _findings,
    _gap_interval,
    _groups,
    _inputs,
    _metric_registry,
    _pictures,
    _progress,
    _resample,
)
from .report import FairnessReport, columns_frame, summary_frame

__all__ = ["FairnessReport", "evaluate"]


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


def _warn(messages: Sequence[str]) -> None:
    """Each message as a Python ``UserWarning`` too, pointed at the caller of the public function."""
    for message in messages:
        _warnings.warn(message, UserWarning, stacklevel=3)


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
    summary: dict[str, Any]
    threshold: float  # decision threshold of the @best_f1 metrics
    keys: tuple[str, ...] = ()  # the per-group metrics
    rows: list[tuple] = field(default_factory=list)  # per slot, the value of each of ``keys``
    curves: _engine.Curves | None = None  # what the pictures draw (evaluate and the accumulator record it)
    first_slot: int = 0  # the attribute's first slot in ``curves``

    @cached_property
    def by_group(self) -> dict[int, dict[str, Any]]:
        """Group index -> metrics, of the evaluable groups (made when first read, by the by_group frame,
        and kept: the frame reads it once per group)."""
        return {i: dict(zip(self.keys, self.rows[i])) for i in self.valid} if self.rows else {}


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
            per_metric = {key: column[:g] for key, column in zip(keys, columns) if key in _metric_registry.SUMMARY_READS}
        else:
            per_metric = {key: [column[i] for i in valid] for key, column in zip(keys, columns)
                          if key in _metric_registry.SUMMARY_READS}
        summary.update(summarize(overall, per_metric))
    group_counts = counts[:g] if grouping.count.dtype.kind in "iu" else [int(count) for count in counts[:g]]
    return AttributeResult(name, n, attribute.groups, group_counts, valid, skipped, overall, summary,
                           grouping.threshold, keys, rows, grouping.curves, grouping.first_slot)


def too_small(min_group_size: int) -> str:
    """The ``skipped`` reason of a group below ``min_group_size``."""
    return f"fewer than {min_group_size} samples"


def check_min_group_size(min_group_size: Any) -> int | None:
    if min_group_size is None:
        return None
    if isinstance(min_group_size, bool) or not isinstance(min_group_size, (int, np.integer)) or min_group_size < 1:
        raise ValueError(f"min_group_size must be a positive integer (groups with fewer samples are skipped) "
                         f"or None; got {min_group_size!r}")
    return int(min_group_size)


def summarize(overall: Mapping[str, float], groups: Mapping[str, Sequence[float]]) -> dict[str, float]:
    """The FairMedFM summary columns that the given metrics determine (see
    :func:`_metric_registry.summarize`, which makes every column from its registry entry).

    Gaps are the largest minus the smallest group value; ``eo`` is the TPR gap and ``eod`` is
    ``1 - (TPR gap + TNR gap) / 2``, both at the best-F1 threshold. A column over the groups is NaN
    when a group's value is NaN.
    """
    return _metric_registry.summarize(overall, groups)


def evaluate(y_true: Any, y_score: Any, sensitive_features: Any, *, pos_label: Any = None,
             score_type: str = "auto", score_column: int | None = None, bins: _groups.Bins | None = None,
             intersectional: bool = False, threshold: float | None = None, sample_weight: Any = None,
             n_boot: int = 0, ci: float = 0.95, n_permutations: int = 0,
             random_state: Any = None, min_group_size: int | None = None, stratify: str | None = "attribute",
             p_adjust: str | None = None, progress: bool | None = None,
             metrics: Sequence[str] | None = None, interval: str | None = None) -> FairnessReport:
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
    threshold : float, optional
        Extension: a fixed decision threshold (e.g. chosen on validation data with
        :func:`fairmedfm_fast.metrics.find_threshold`) for the ``@best_f1`` metrics, instead of
        the best-F1 threshold of the evaluated data. Predictions are ``score > threshold``.
    sample_weight : array-like of shape (n_samples,), optional
        Extension: non-negative weight of each sample in every metric (``n`` still counts samples).
    n_boot : int, default 0
        Extension: bootstrap resamples for percentile intervals in ``report.ci``; the best-F1
        threshold is chosen again in each resample.
    ci : float, default 0.95
        Coverage of the bootstrap intervals.
    n_permutations : int, default 0
        Extension: permutations of the group labels for a p-value of each gap in
        ``report.p_values``.
    random_state : int, numpy Generator or None
        Seed of the resampling; results depend on it only (not on the number of threads).
    min_group_size : int, optional
        Extension: groups with fewer samples are skipped (reason ``"fewer than N samples"``), keep
        their ``n`` in ``by_group`` and stay out of the gaps. None keeps every group.
    stratify : {"attribute", None}, default "attribute"
        Extension: ``"attribute"`` draws each attribute's resamples within that attribute's groups
        (a missing value is a group of its own), from a stream of ``random_state`` and the
        attribute's name, so its intervals do not depend on the other attributes. None resamples
        all samples (as fairlearn does); a group that loses every sample in a resample is
        undefined in it, and ``report.ci["by_group"]["n_empty"]`` counts those resamples.
    p_adjust : {None, "holm", "bonferroni"}
        Extension: adjust the permutation p-values over every gap and attribute of the report;
        the adjusted values sit beside the raw ones (``auc-gap_holm``, ...).
    progress : bool, optional
        Extension: a progress bar of the resamples on stderr. None shows it on a terminal or in a
        notebook when the work takes more than about two seconds.
    metrics : list of str, optional
        Extension: opt-in metrics beside fairmedfm's, any of ``"ap"`` (average precision, as
        scikit-learn's ``average_precision_score``), ``"brier"`` (Brier score), ``"selection_rate"``,
        ``"fpr"``, ``"fnr"`` (at 0.5 and ``@best_f1``); summary columns ``ap-gap``, ``brier-gap``,
        ``dp`` (demographic parity difference), ``fpr-gap``, ``fnr-gap``, the last three at the
        ``@best_f1`` threshold. None (default) gives exactly fairmedfm's columns.
    interval : {None, "analytic"}
        Extension: ``"analytic"`` adds intervals at level ``ci`` computed from the one sort, with no
        resampling, in ``report.ci["analytic"]``: DeLong standard errors and intervals of each
        group's AUC, Wilson intervals of accuracy, TPR and TNR (at 0.5 and ``@best_f1``),
        simultaneous intervals of ``auc-gap``, ``acc-gap``, ``eo`` and the TNR gap (none for
        ``eod``), and ``difference_se`` / ``p_value_analytic`` columns in
        :meth:`~FairnessReport.pairwise`. Independent of ``n_boot`` (both may be asked for); not
        with ``sample_weight``. The README's "Analytic intervals" section says what each assumes.

    Returns
    -------
    FairnessReport
        ``summary`` per attribute (``overall-auc``, ``overall-acc``, ``overall-bce``,
        ``overall-ece``, ``worst-auc``, the gaps, ``eod`` and ``eo``), ``by_group`` with sample
        counts and skip reasons, ``overall``, ``warnings`` and ``metadata``; ``ci`` and
        ``p_values`` when asked for. The README's "Metrics" section defines each number.
    """
    warnings: list[str] = []
    prepared, sensitive_features = prepare(y_true, y_score, sensitive_features, pos_label, score_type,
                                           score_column, warnings, sample_weight, threshold)
    n = len(prepared.labels)
    threshold, weights = prepared.threshold, prepared.weights
    n_boot = check_count(n_boot, "n_boot")
    n_permutations = check_count(n_permutations, "n_permutations")
    min_group_size = check_min_group_size(min_group_size)
    _resample.check_options(stratify, p_adjust)
    progress = _progress.check(progress)
    check_interval(interval, sample_weight)
    extra = _metric_registry.optional_keys(_metric_registry.check_metrics(metrics))
    if not (isinstance(ci, (float, int)) and 0 < ci < 1):
        raise ValueError(f"ci must be a coverage strictly between 0 and 1, such as 0.95; got {_inputs.shown(ci)}")
    presort = _engine.Presort(prepared.scores, prepared.labels, weights)  # sorts while the attributes are coded
    attributes = _groups.encode_attributes(sensitive_features, n, bins, intersectional)
    check_resampling(attributes, n_boot, n_permutations, 2 * len(_resample.INTERVAL_METRICS) + 13)
    conversion_note = transform_note(prepared.metadata, prepared.conversion)
    warnings.extend(conversion_note)
    _warn(conversion_note)  # also a UserWarning, as the one-number functions give it
    require_both_labels(prepared.labels)
    results, overall, arranged = assess(prepared, attributes, warnings, wanted=with_default(extra),
                                        threshold=threshold, weights=weights, presort=presort,
                                        min_group_size=min_group_size, curves=True)
    flagged = {result.name: _findings.small_groups(result) for result in results}
    for result in results:
        warnings.extend(_findings.small_group_warnings(result, flagged[result.name]))
    metadata = {**prepared.metadata, "n_samples": n}
    if threshold is not None:
        metadata["threshold"] = threshold
    if weights is not None:
        metadata["sample_weight"] = True
    if min_group_size is not None:
        metadata["min_group_size"] = min_group_size
    if extra:
        metadata["metrics"] = list(_metric_registry.check_metrics(metrics))
    seed = _resample.seed_from(random_state) if n_boot or n_permutations else None
    metadata.update(_findings.settings(
        results, attributes, threshold=threshold, random_state=random_state, seed=seed, n_boot=n_boot,
        n_permutations=n_permutations, ci=ci, stratify=stratify, p_adjust=p_adjust, intersectional=intersectional,
        metrics=_metric_registry.check_metrics(metrics) if metrics else [], n_samples=n))
    report = classification_report(results, overall, warnings, metadata, flagged=flagged)
    resample_into(report, arranged, results, n_boot, ci, n_permutations, random_state, threshold, stratify,
                  p_adjust, progress, warnings, extra, seed=seed)
    if interval == "analytic":
        report.ci = {"level": float(ci), "n_boot": n_boot, **(report.ci or {}),
                     "analytic": _analytic.intervals(arranged, results, float(ci), warnings, p_adjust)}
    with_gaps(report, results, flagged, p_adjust, float(ci))
    return report


def check_interval(interval: Any, sample_weight: Any) -> None:
    if not (interval is None or (isinstance(interval, str) and interval == "analytic")):
        raise ValueError(f"interval must be None or 'analytic' (DeLong, Wilson and Newcombe intervals from the "
                         f"one sort); got {_inputs.shown(interval)}")
    if interval is not None and sample_weight is not None:
        raise ValueError("interval='analytic' does not take sample_weight (DeLong's and Wilson's formulas count "
                         "samples); leave sample_weight out, or use n_boot for bootstrap intervals with weights")


def resample_into(report: FairnessReport, arranged: _engine.Arranged, results: list[AttributeResult], n_boot: int,
                  ci: float, n_permutations: int, random_state: Any, threshold: float | None, stratify: str | None,
                  p_adjust: str | None, progress: bool | None, warnings: list[str], extra: Sequence[str],
                  seed: Any = None) -> None:
    """``report.ci`` (with ``n_boot``) and ``report.p_values`` (with ``n_permutations``) from the
    samples ``arranged`` and the point estimates ``results``; the gaps' bounds are the simultaneous
    intervals, and a warning says when ``n_permutations`` is too few for the adjustment. ``seed``:
    the one drawn from ``random_state`` already (evaluate records it in the settings)."""
    if not (n_boot or n_permutations):
        return
    seed = _resample.seed_from(random_state) if seed is None else seed
    if n_boot:
        report.ci = _intervals(arranged, results, n_boot, float(ci), seed, threshold, stratify, progress,
                               warnings, report.replicates, extra)
        _findings.simultaneous_gaps(results, report.replicates, report.ci["summary"], float(ci))
        report.ci["gap_interval"] = _gap_interval.LABEL
    if n_permutations:
        report.p_values = _resample.with_adjusted(
            _p_values(arranged, results, n_permutations, seed, progress, report.replicates, extra), p_adjust)
        raw = report.p_values[[c for c in report.p_values.columns if not c.endswith(f"_{p_adjust}")]] \
            if p_adjust else report.p_values
        note = _findings.permutation_warning(raw, n_permutations, p_adjust, 1 - float(ci))
        if note:
            warnings.append(note)
            import warnings as python_warnings

            python_warnings.warn(note, UserWarning, stacklevel=3)


def with_default(extra: Sequence[str]) -> set[str] | None:
    """The per-group keys to compute: fairmedfm's (None) and the opt-in ``extra`` keys."""
    return {*_engine.all_keys(), *extra} if extra else None


def classification_report(results: list[AttributeResult], overall: dict[str, Any], warnings: list[str],
                          metadata: dict[str, Any], *,
                          flagged: dict[str, dict[int, Any]] | None = None) -> FairnessReport:
    """The report of :func:`evaluate` from the per-attribute results; ``flagged``: each attribute's small
    groups (found here, with their warnings, when not given), a ``small_group`` column of ``by_group``
    after ``skipped``. The pictures draw the results' ``curves`` when every result has them."""
    summaries = {result.name: result.summary for result in results}
    attribute_overall = {result.name: result.overall for result in results}
    # The frames (and the rows of by_group) are made on first access (pandas is not imported until then).
    if flagged is None:  # dask, voxels: flagged here
        flagged = {result.name: _findings.small_groups(result) for result in results}
        for result in results:
            warnings.extend(_findings.small_group_warnings(result, flagged[result.name]))
    by_group = partial(_with_small_groups, partial(_by_group_frame, results), results, flagged)
    curves = None
    if results and all(result.curves is not None for result in results):
        curves = [_pictures.CurveSource(result.name, result.groups, result.counts, result.n, result.threshold,
                                        result.curves, result.first_slot) for result in results]
    report = FairnessReport("cls", partial(summary_frame, summaries), by_group, overall,
                            attribute_overall, warnings, metadata, curves=curves)
    with_gaps(report, results, flagged)
    return report


def with_gaps(report: FairnessReport, results: list[AttributeResult], flagged: dict[str, dict[int, Any]],
              p_adjust: str | None = None, level: float = 0.95) -> None:
    """``report.gaps`` (made on first read) from the results, the small groups ``flagged`` and the
    report's intervals and p-values as they are now: call it again once ``report.ci`` or
    ``report.p_values`` is set."""
    report.gaps = partial(_findings.gap_frame, results, flagged, report.ci, report.p_values, p_adjust, 1 - level)


def _with_small_groups(by_group, results: list[AttributeResult], flagged: dict[str, dict[int, Any]]):
    frame = by_group()
    frame["small_group"] = [i in flagged.get(result.name, {}) for result in results for i in range(len(result.groups))]
    return frame


def check_threshold(threshold: Any) -> float | None:
    if threshold is None:
        return None
    try:
        value = float(threshold)
    except (TypeError, ValueError):
        raise ValueError(f"threshold must be a number such as 0.5, got {_inputs.shown(threshold)}") from None
    if not 0 <= value <= 1:  # also NaN
        raise ValueError(f"threshold={_inputs.shown(threshold)} is outside [0, 1]; the scores are probabilities "
                         "and a sample is predicted positive when its score > threshold, so give a threshold "
                         "such as 0.5")
    return value


def sample_weights(sample_weight: Any, n: int) -> np.ndarray | None:
    """Validated float64 sample weights, or None."""
    if sample_weight is None:
        return None
    weights = _inputs.to_numpy(sample_weight, "sample_weight")
    if weights.dtype.kind not in "biuf":
        raise ValueError(f"sample_weight must be numeric, got dtype {weights.dtype}")
    weights = weights.astype(np.float64).ravel()
    if len(weights) != n:
        raise ValueError(f"sample_weight has {len(weights)} values but there are {n} samples; pass one "
                         "weight per sample")
    if not np.isfinite(weights).all() or (weights < 0).any():
        raise ValueError("sample_weight must be finite and non-negative; "
                         f"got values such as {_inputs.preview(weights[~np.isfinite(weights) | (weights < 0)])}")
    if not weights.any():
        raise ValueError("sample_weight is zero for every sample; at least one sample needs weight")
    return weights


def check_resampling(attributes: list[_groups.Attribute], n_boot: int, n_permutations: int, per_group: int) -> None:
    """A ValueError naming ``n_boot`` or ``n_permutations`` when their results would not fit in memory:
    ``per_group`` float64 values per group and resample (and as many summary values per attribute),
    ``len(_resample.GAP_COLUMNS)`` per permutation."""
    values = sum(attribute.n_groups + 1 for attribute in attributes) * per_group
    _inputs.check_memory("n_boot", n_boot, 8 * values, "the bootstrap results", "n_boot=1000")
    _inputs.check_memory("n_permutations", n_permutations, 8 * len(_resample.GAP_COLUMNS), "the permuted gaps",
                         "n_permutations=1000")


def check_count(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
        raise ValueError(f"{name} must be a non-negative integer (0 turns it off), got {_inputs.shown(value)}")
    return int(value)


def _intervals(arranged, results: list[AttributeResult], n_boot: int, level: float, seed, threshold,
               stratify: str | None, progress: bool | None, warnings: list[str], replicates: dict,
               extra: Sequence[str] = ()) -> dict:
    import pandas as pd

    kept: dict = {}
    by_group, summaries, columns, empty = _resample.bootstrap(
        arranged, [r.name for r in results], [r.valid for r in results], summarize, n_boot, level, seed, threshold,
        stratify, progress, kept, extra)
    _keep(replicates, "boot", results, kept)
    keys = [*_resample.INTERVAL_METRICS, *(m + _engine.BEST for m in _resample.INTERVAL_METRICS), *extra]
    group_rows, summary_rows = [], {}
    for result, bounds, summary_bounds, n_empty in zip(results, by_group, summaries, empty):
        valid = set(result.valid)
        for i, group in enumerate(result.groups):
            row = {"attribute": result.name, "group": group}
            for j, key in enumerate(keys):
                lo, hi = bounds[i, j]
                row[f"{key}_lo"], row[f"{key}_hi"] = (float(lo), float(hi)) if i in valid else (np.nan,) * 2
            if stratify is None:
                row["n_empty"] = int(n_empty[i])
                if n_empty[i] and i in valid:
                    warnings.append(f"{result.name}={group}: no sample in {int(n_empty[i])} of {n_boot} bootstrap "
                                    "resamples (stratify=None); it is undefined there and left out of their gaps")
            group_rows.append(row)
        if len(result.valid) >= 2:
            summary_rows[result.name] = {f"{c}_{side}": float(summary_bounds[j, k])
                                         for j, c in enumerate(columns) for k, side in enumerate(("lo", "hi"))}
        else:
            summary_rows[result.name] = {}
    summary = pd.DataFrame.from_dict(summary_rows, orient="index",
                                     columns=[f"{c}_{side}" for c in columns for side in ("lo", "hi")])
    summary.index.name = "attribute"
    groups = pd.DataFrame(group_rows).set_index(["attribute", "group"])
    return {"level": level, "n_boot": n_boot, "stratify": stratify, "summary": summary, "by_group": groups}


def _keep(replicates: dict, kind: str, results: list[AttributeResult], kept: dict) -> None:
    """Resampled values of the evaluable groups, by (kind, attribute, metric), for report.pairwise()."""
    for result in results:
        if result.name in kept and len(result.valid) >= 2:
            keys, values = kept[result.name]
            for j, key in enumerate(keys):
                replicates[(kind, result.name, key)] = values[:, result.valid, j]


def _p_values(arranged, results: list[AttributeResult], n_permutations: int, seed, progress: bool | None,
              replicates: dict, extra: Sequence[str] = ()):
    import pandas as pd

    rows = {}
    tested = [k for k, result in enumerate(results) if len(result.valid) >= 2]
    # Two sets of permutations: the groups shuffled among all samples, and within each class for the
    # gaps of metrics that condition on the label (auc-gap, eo, eod, ...; _findings.WITHIN_LABEL).
    with _progress.Progress(2 * n_permutations * len(tested), "permutations", progress, unit="permutation") as bar:
        for k, result in enumerate(results):
            if k not in tested:
                rows[result.name] = {}
                continue
            stream = _resample.stream(seed, "permutation", result.name)
            kept: list = []
            rows[result.name] = _resample.permutation_pvalues(arranged, k, result.valid, result.summary, summarize,
                                                              n_permutations, stream, result.threshold, bar, kept,
                                                              extra)
            within = _resample.permutation_pvalues(
                arranged, k, result.valid, result.summary, summarize, n_permutations,
                _resample.stream(seed, "permutation within labels", result.name), result.threshold, bar, kept, extra,
                within_labels=True)
            rows[result.name].update({c: within[c] for c in _findings.WITHIN_LABEL if c in within})
            keys, plain = kept[0]
            conditional = kept[1][1]
            for j, key in enumerate(keys):  # pairwise p-values of label-conditional metrics from the latter
                if key.split("@")[0] in ("auc", "tpr", "tnr", "fpr", "fnr"):
                    plain[:, :, j] = conditional[:, :, j]
            _keep(replicates, "perm", [result], {result.name: (keys, plain)})
    columns = _metric_registry.tested_columns(extra)
    frame = pd.DataFrame.from_dict(rows, orient="index", columns=columns)
    frame.index.name = "attribute"
    return frame


def _by_group_frame(results: list[AttributeResult]):
    """One row per (attribute, group): ``n``, the metrics (NaN where a group is skipped), ``skipped``.

    Built column by column from each attribute's per-slot values, in time linear in the groups.
    """
    if not any(result.groups for result in results):
        import pandas as pd

        index = pd.MultiIndex.from_arrays([[], []], names=["attribute", "group"])
        return pd.DataFrame({"n": pd.Series([], dtype=np.int64), "skipped": pd.Series([], dtype=object)},
                            index=index)
    # metric columns in order of appearance, as the frame of one dict per row orders them
    keys = list(dict.fromkeys(key for result in results if result.rows and result.valid for key in result.keys))
    attributes: list[Any] = []
    groups: list[Any] = []
    data: dict[str, list[Any]] = {"n": [], **{key: [] for key in keys}, "skipped": []}
    for result in results:
        g = len(result.groups)
        attributes += [result.name] * g
        groups += result.groups
        data["n"] += result.counts
        data["skipped"] += [result.skipped.get(i) for i in range(g)]
        if not (result.rows and result.valid):
            for key in keys:
                data[key] += [math.nan] * g
            continue
        position = {key: j for j, key in enumerate(result.keys)}
        every = len(result.valid) == g
        valid = set(result.valid)
        for key in keys:
            j = position.get(key)
            if j is None:
                data[key] += [math.nan] * g
            elif every:
                data[key] += [row[j] for row in result.rows[:g]]
            else:
                data[key] += [row[j] if i in valid else math.nan for i, row in enumerate(result.rows[:g])]
    return columns_frame(attributes, groups, data)
