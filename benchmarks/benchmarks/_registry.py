"""One registry, metric name -> (fast, oracle), shared by the asv suite, ``compare.py`` and the tests.

Each :class:`Metric` knows where its function lives in both packages (``fairmedfm_fast`` is a drop-in for
``fairmedfm`` 0.4.2, so the path is the same), how to call it on a case from :mod:`._data`, and how to read
numbers out of the result to check that both implementations agree. Functions are looked up only when
asked for; a name the package does not have yet raises ``NotImplementedError``, which asv reports as a
skipped benchmark.
"""
from __future__ import annotations

import importlib
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

PACKAGES = {"fast": "fairmedfm_fast", "reference": "fairmedfm"}
IMPLEMENTATIONS = tuple(PACKAGES)


def _one_number(case):
    return (case.y_true, case.y_score), {"sensitive_features": case.sensitive()}


def _probabilities(case):
    return (case.y_score, case.y_true), {}


def _evaluate(case):
    return (case.y_true, case.y_score, case.sensitive()), {}


def _masks(case):
    return (case.groups,), {"pred_masks": case.pred, "true_masks": case.true}


def _mask_pairs(case):
    return (case.pred, case.true), {}


def _dice_gap(case):
    return (), {"pred_masks": case.pred, "true_masks": case.true, "sensitive_features": case.groups}


def _scalar(value) -> np.ndarray:
    return np.array([float(value)])


def _report(report) -> np.ndarray:
    """Every number of ``summary`` and ``by_group``, in their order."""
    parts = [frame.select_dtypes("number").to_numpy(np.float64).ravel()
             for frame in (report.summary, report.by_group)]
    return np.concatenate(parts)


@dataclass(frozen=True)
class Metric:
    """A public function of both packages, with how to call it and read its result."""

    name: str
    family: str  # "ranking", "calibration", "evaluate" or "segmentation"
    path: str  # attribute path inside the package, e.g. "auc_gap" or "metrics.find_threshold"
    inputs: Callable[[Any], tuple]  # case -> (args, kwargs)
    read: Callable[[Any], np.ndarray]  # result -> numbers, for agreement checks
    reference_path: str | None = None  # where fairmedfm 0.4.2 has it, when that differs from ``path``

    def function(self, implementation: str) -> Callable:
        """The function of ``implementation`` ("fast" or "reference"); NotImplementedError if absent."""
        package = PACKAGES[implementation]
        path = self.reference_path if implementation == "reference" and self.reference_path else self.path
        module_name, _, attribute = path.rpartition(".")
        try:
            module = importlib.import_module(f"{package}.{module_name}" if module_name else package)
            return getattr(module, attribute)
        except (ImportError, AttributeError) as error:
            raise NotImplementedError(f"{package}.{self.path} is not available: {error}") from None

    def bind(self, implementation: str, case) -> Callable[[], Any]:
        """A no-argument callable that runs the metric on ``case``, inputs prepared beforehand."""
        function = self.function(implementation)
        args, kwargs = self.inputs(case)
        return lambda: function(*args, **kwargs)

    def disagreement(self, case) -> float:
        """Largest absolute difference between the two implementations on ``case`` (NaN == NaN).

        ``inf`` when the results have different shapes or NaN in different places.
        """
        fast = self.read(self.bind("fast", case)())
        reference = self.read(self.bind("reference", case)())
        if fast.shape != reference.shape or not np.array_equal(np.isnan(fast), np.isnan(reference)):
            return math.inf
        finite = ~np.isnan(fast)
        return float(np.max(np.abs(fast[finite] - reference[finite]), initial=0.0))


_METRICS = [
    Metric("auc_gap", "ranking", "auc_gap", _one_number, _scalar),
    Metric("worst_group_auc", "ranking", "worst_group_auc", _one_number, _scalar),
    Metric("accuracy_gap", "ranking", "accuracy_gap", _one_number, _scalar),
    Metric("equal_opportunity_difference", "ranking", "equal_opportunity_difference", _one_number, _scalar),
    Metric("equalized_odds_score", "ranking", "equalized_odds_score", _one_number, _scalar),
    Metric("find_threshold", "ranking", "metrics.find_threshold", _probabilities, _scalar),
    Metric("ece_gap", "calibration", "ece_gap", _one_number, _scalar),
    Metric("bce_gap", "calibration", "bce_gap", _one_number, _scalar),
    Metric("expected_calibration_error", "calibration", "metrics.expected_calibration_error", _probabilities,
           _scalar),
    Metric("binary_cross_entropy", "calibration", "metrics.binary_cross_entropy", _probabilities, _scalar),
    Metric("evaluate", "evaluate", "evaluate", _evaluate, _report),
    Metric("evaluate_segmentation", "segmentation", "evaluate_segmentation", _masks, _report),
    Metric("dice_gap", "segmentation", "dice_gap", _dice_gap, _scalar),
    # Dice of every pair: public in fairmedfm_fast (an extension), private in fairmedfm 0.4.2.
    Metric("dice_scores", "segmentation", "segmentation.dice_scores", _mask_pairs, np.asarray,
           reference_path="_inputs.dice_scores"),
]

REGISTRY: dict[str, Metric] = {metric.name: metric for metric in _METRICS}


def family(name: str) -> list[Metric]:
    """The metrics of one kernel family, in registry order."""
    return [metric for metric in _METRICS if metric.family == name]
