"""DeLong's covariance of two models' AUCs on the same samples (DeLong, DeLong and Clarke-Pearson,
1988), per group: what the analytic comparison of two models needs.

Each positive's *placement* under a model is the share of the negatives it outscores (ties count
one half), each negative's the share of the positives that outscore it; a model's AUC is the mean of
either. Over the positives, the 2 x 2 sample covariance of the two models' placements (``S10``) and
over the negatives that of theirs (``S01``) give the covariance of the two AUCs,
``S10 / n_positives + S01 / n_negatives``. Placements come from two sorts per model and group
(``numpy.searchsorted``), in O(n log n).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class PairedAUC:
    """Per group (rows; the last row: every sample), two models' AUCs and their covariance."""

    auc: np.ndarray  # (groups + 1, 2); NaN where a group lacks a positive or a negative
    covariance: np.ndarray  # (groups + 1, 2, 2); NaN where a group has fewer than 2 of either

    def difference(self, weights: np.ndarray) -> tuple[float, float]:
        """The value and standard error of ``sum(weights[g, k] * auc[g, k])``: a linear combination of
        the AUCs of both models in several groups (groups are disjoint samples: independent)."""
        weights = np.asarray(weights, np.float64)
        used = np.flatnonzero(np.any(weights != 0, axis=1))
        value = float(np.sum(weights[used] * self.auc[used]))
        variance = float(sum(weights[g] @ self.covariance[g] @ weights[g] for g in used))
        return value, float(np.sqrt(variance)) if variance >= 0 else float("nan")


def placements(scores: np.ndarray, labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each positive's and each negative's placement (see the module notes), in sample order."""
    positive, negative = scores[labels == 1], scores[labels == 0]
    below = np.sort(negative)
    above = np.sort(positive)
    v10 = (np.searchsorted(below, positive, "left") + np.searchsorted(below, positive, "right")) / (2 * len(below))
    v01 = (2 * len(above) - np.searchsorted(above, negative, "left") - np.searchsorted(above, negative, "right")) / (
        2 * len(above))
    return v10, v01


def paired_auc(scores_a: np.ndarray, scores_b: np.ndarray, labels: np.ndarray, codes: np.ndarray,
               n_groups: int) -> PairedAUC:
    """Two models' AUCs and their DeLong covariance in each of ``n_groups`` groups (``codes``: -1 for
    a sample in none) and over every sample (the last row)."""
    auc = np.full((n_groups + 1, 2), np.nan)
    covariance = np.full((n_groups + 1, 2, 2), np.nan)
    for g in range(n_groups + 1):
        chosen = slice(None) if g == n_groups else codes == g
        y = labels[chosen]
        m = int(np.count_nonzero(y))
        n = len(y) - m
        if m == 0 or n == 0:
            continue
        a10, a01 = placements(scores_a[chosen], y)
        b10, b01 = placements(scores_b[chosen], y)
        auc[g] = a10.mean(), b10.mean()
        if m > 1 and n > 1:
            covariance[g] = np.cov(np.vstack([a10, b10])) / m + np.cov(np.vstack([a01, b01])) / n
    return PairedAUC(auc, covariance)
