"""One-grouping statistics for fairmedfm's legacy functions (``metrics.py``) and the ECE bins of the
backends that count their own (voxels, the Dask ranges): the same kernels as ``classification.measure``,
so that their numbers stay bit-identical to evaluate's.
"""
from __future__ import annotations

import numpy as np

from .loaded import kernel_modules
from .sorting import sort_scores

#: Equal-width bins of the ECE (fairmedfm's).
ECE_BINS = 10


def best_f1_threshold(scores: np.ndarray, labels: np.ndarray) -> float:
    """The threshold of the best F1 over all samples (``ranking.best_f1_thresholds``: the lowest
    among ties, a sample positive at ``score >= threshold``)."""
    ranking = kernel_modules()[0]
    order, sorted_scores = sort_scores(scores)
    codes = np.zeros((1, len(scores)), np.int8)
    positives = np.array([int(np.count_nonzero(labels))], np.int64)
    negatives = np.array([len(labels)], np.int64) - positives
    return float(ranking.best_f1_thresholds(sorted_scores, labels[order], codes, positives, negatives)[0][0])


def log_loss_sum(scores: np.ndarray, labels: np.ndarray) -> float:
    """The summed BCE terms of all samples (``labels`` may be soft, float64)."""
    calibration = kernel_modules()[1]
    codes = np.zeros((1, len(scores)), np.int8)
    return float(calibration.slot_sums(calibration.log_loss_terms(scores, labels), codes, np.array([1], np.int64))[0])


def calibration_error_of(scores: np.ndarray, labels: np.ndarray, n_bins: int, variant: int,
                         quantile_edges: np.ndarray | None = None) -> float:
    """ECE of all samples over ``n_bins`` equal-width bins of the scores' range, or over the bins
    of ``quantile_edges`` (the lowest edge included, as ``pandas.qcut``); ``variant`` as in
    :func:`calibration_error`."""
    calibration = kernel_modules()[1]
    codes = np.zeros((1, len(scores)), np.intp)
    sizes = np.array([1], np.int64)
    if quantile_edges is None:
        _, _, low, high = calibration.score_ranges(scores, np.zeros(len(scores), np.uint8), codes, sizes)
        edges = calibration.equal_width_edges(low, high, int(n_bins))
    else:
        edges = np.tile(quantile_edges, (2, 1))
    bins = calibration.binned_calibration(scores, labels, codes, sizes, edges, quantile_edges is not None)
    return float(calibration.calibration_error(*bins, variant)[0])


def ece_edges(low: np.ndarray, high: np.ndarray, n_bins: int = ECE_BINS) -> np.ndarray:
    """Per slot, the edges of ``n_bins`` equal-width ECE bins over [low, high] (NaN where empty)."""
    return kernel_modules()[1].equal_width_edges(low, high, n_bins)


def calibration_error(count: np.ndarray, label_sum: np.ndarray, score_sum: np.ndarray, variant: int = 0
                      ) -> np.ndarray:
    """Per slot, the ECE from its bin sums (``variant`` 0 absolute, 1 squared, 2 root of squared
    differences); NaN for an empty slot."""
    return kernel_modules()[1].calibration_error(count, label_sum, score_sum, variant)
