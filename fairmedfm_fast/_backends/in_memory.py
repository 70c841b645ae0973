"""Fairness evaluation of binary classifiers: :func:`evaluate` (its parts are the modules it imports:
inputs and assessment in ``_assess``, option checks in ``_checks``, the report in
``_classification_report``, intervals and p-values in ``_uncertainty``)."""
from __future__ import annotations

import warnings as _warnings
from collections.abc import Sequence
from typing import Any

from .._engine import classification as _engine
from .._engine import resample as _resample
from .._inputs import arrays as _inputs
from .._inputs import groups as _groups
from .._registry import metrics as _metric_registry
from .._report.assembly import asked, assemble
from .._report.frame import FairnessReport
from .._util import progress as _progress
from .assess import assess, prepare, transform_note, with_default
from .checks import check_count, check_interval, check_min_group_size, check_resampling, require_both_labels
from .uncertainty import with_uncertainty

__all__ = ["FairnessReport", "evaluate"]


def _warn(messages: Sequence[str]) -> None:
    """Each message as a Python ``UserWarning`` too, pointed at the caller of the public function."""
    for message in messages:
        _warnings.warn(message, UserWarning, stacklevel=3)


def evaluate(y_true: Any, y_score: Any, sensitive_features: Any, *, pos_label: Any = None,
             score_type: str = "auto", score_column: int | None = None, bins: _groups.Bins | None = None,
             intersectional: bool = False, threshold: float | None = None, sample_weight: Any = None,
             n_boot: int = 0, ci: float = 0.95, n_permutations: int = 0,
             random_state: Any = None, min_group_size: int | None = None, stratify: str | None = "attribute",
             p_adjust: str | None = "holm", progress: bool | None = None,
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
        ``"auto"`` reads scores within [0, 1] as probabilities and others as logits (saying so in
        ``report.warnings`` and as a ``UserWarning``); ``"logit"`` converts them as asked, noted in
        ``report.warnings`` only, as fairmedfm 0.4.2's ``evaluate`` does.
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
        ``report.p_values``. Under the default ``p_adjust="holm"`` a gap can be significant only
        when ``(n_permutations + 1) * alpha`` reaches the number of tests (about 6 per attribute):
        below that ``report.gaps["significant"]`` is None and a warning says how many are needed.
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
    p_adjust : {"holm", "bonferroni", None}, default "holm"
        Extension: the family-wise adjustment behind every "significant" of the report. The gap
        tests of every attribute together are one family (``report.p_values`` holds the adjusted
        values beside the raw ones: ``auc-gap_holm``, ...; ``report.gaps`` reads them); the
        differences between pairs of groups (:meth:`~FairnessReport.pairwise`) are another. None:
        each test on its own (every p-value below ``1 - ci`` is then called significant).
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
        with ``sample_weight``. The user guide's "Uncertainty" page says what each assumes.

    Returns
    -------
    FairnessReport
        ``summary`` per attribute (``overall-auc``, ``overall-acc``, ``overall-bce``,
        ``overall-ece``, ``worst-auc``, the gaps, ``eod`` and ``eo``), ``by_group`` with sample
        counts and skip reasons, ``overall``, ``warnings`` and ``metadata``; ``ci`` and
        ``p_values`` when asked for. The user guide's "Metrics" page defines each number.
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
    check_resampling(attributes, n_boot, n_permutations, _resample.RESAMPLED_PER_GROUP)
    conversion_note = transform_note(prepared.metadata, prepared.conversion)
    warnings.extend(conversion_note)
    if score_type != "logit":  # a conversion the caller did not ask for: a UserWarning too (logits asked for: none)
        _warn(conversion_note)
    require_both_labels(prepared.labels)
    results, overall, arranged = assess(prepared, attributes, warnings, wanted=with_default(extra),
                                        threshold=threshold, weights=weights, presort=presort,
                                        min_group_size=min_group_size, curves=True)
    chosen = _metric_registry.check_metrics(metrics) if extra else ()
    metadata = {**prepared.metadata, "n_samples": n, **asked(threshold, weights is not None, min_group_size, chosen)}
    seed = _resample.seed_from(random_state) if n_boot or n_permutations else None
    report, flagged = assemble(results, overall, warnings, metadata, attributes=attributes, settings=dict(
        threshold=threshold, random_state=random_state, seed=seed, n_boot=n_boot, n_permutations=n_permutations,
        ci=ci, stratify=stratify, p_adjust=p_adjust, intersectional=intersectional,
        metrics=_metric_registry.check_metrics(metrics) if metrics else [], n_samples=n))
    with_uncertainty(report, results, flagged, arranged, arranged, n_boot=n_boot, ci=ci, n_permutations=n_permutations,
                     random_state=random_state, threshold=threshold, stratify=stratify, p_adjust=p_adjust,
                     progress=progress, warnings=warnings, extra=extra, seed=seed, interval=interval)
    return report
