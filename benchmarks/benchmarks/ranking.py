"""Ranking family: group AUC (``auc_gap``), the best-F1 threshold sweep, and the kernels under them."""
import numpy as np

from . import _data
from ._common import IMPLEMENTATIONS, prepared, skip_slow_reference, slow, warm_classification


class AucGap:
    """``auc_gap`` on one attribute; 1,000 samples is the per-call latency case (after warm-up)."""

    params = ([1_000, 100_000, 1_000_000], [2, 50], list(IMPLEMENTATIONS))
    param_names = ["n_samples", "n_groups", "implementation"]
    timeout = 300

    def setup(self, n_samples, n_groups, implementation):
        skip_slow_reference(implementation, n_samples)
        case = _data.classification(n_samples, 1, n_groups)
        self.call = prepared("auc_gap", implementation, case, warm_classification(1, n_groups))

    def time_auc_gap(self, n_samples, n_groups, implementation):
        self.call()


@slow
class AucGapIntersectional:
    """``auc_gap`` with three attribute columns: their combinations (``n_groups`` x 2 x 4) are compared."""

    params = ([10_000, 1_000_000], [2, 50], list(IMPLEMENTATIONS))
    param_names = ["n_samples", "n_groups", "implementation"]

    def setup(self, n_samples, n_groups, implementation):
        skip_slow_reference(implementation, n_samples)
        case = _data.classification(n_samples, 3, n_groups)
        self.call = prepared("auc_gap", implementation, case, warm_classification(3, n_groups))

    def time_auc_gap(self, n_samples, n_groups, implementation):
        self.call()


class FindThreshold:
    """``metrics.find_threshold``: the best-F1 sweep over the distinct scores."""

    params = ([1_000, 100_000, 1_000_000], list(IMPLEMENTATIONS))
    param_names = ["n_samples", "implementation"]
    timeout = 300

    def setup(self, n_samples, implementation):
        case = _data.classification(n_samples)
        self.call = prepared("find_threshold", implementation, case, warm_classification(1, 2))

    def time_find_threshold(self, n_samples, implementation):
        self.call()


@slow
class RankingKernels:
    """The ranking kernels on pre-sorted arrays, beside the sort they need (the lower bound)."""

    params = ([1_000_000, 10_000_000], [1, 3])
    param_names = ["n_samples", "n_attributes"]

    def setup(self, n_samples, n_attributes):
        from fairmedfm_fast.kernels import ranking

        self.ranking = ranking
        self.scores = _data.classification(n_samples, n_attributes, 5).y_score
        self.arrays = self._arrays(_data.classification(n_samples, n_attributes, 5))
        self._run_all(self._arrays(warm_classification(n_attributes, 5)))
        from fairmedfm_fast._engine.classification import sort_scores  # private: the test catches a rename

        self.sort_scores = sort_scores
        sort_scores(self.scores)  # compiles the payload sort

    @staticmethod
    def _arrays(case):
        scores, labels, codes = case.sorted_arrays()
        n_pos = np.array([labels.sum()] * codes.shape[0], np.int64)
        n_neg = labels.shape[0] - n_pos
        thresholds = np.tile(np.array([0.5, 0.3]), (codes.shape[0], 1))
        return scores, labels, codes, case.n_groups, n_pos, n_neg, thresholds

    def _run_all(self, arrays):
        scores, labels, codes, n_groups, n_pos, n_neg, thresholds = arrays
        self.ranking.rank_statistics(scores, labels, codes, n_groups)
        self.ranking.best_f1_thresholds(scores, labels, codes, n_pos, n_neg)
        self.ranking.confusion_above(scores, labels, codes, n_groups, thresholds)

    def time_sort_scores(self, n_samples, n_attributes):
        """``np.sort`` of the scores: the lower bound."""
        np.sort(self.scores)

    def time_argsort_scores(self, n_samples, n_attributes):
        """``np.argsort``, what a plain implementation would use to order labels and codes."""
        np.argsort(self.scores)

    def time_packed_sort(self, n_samples, n_attributes):
        """The order the package actually computes (the radix sort on the scores' full bits)."""
        self.sort_scores(self.scores)

    def time_rank_statistics(self, n_samples, n_attributes):
        scores, labels, codes, n_groups = self.arrays[:4]
        self.ranking.rank_statistics(scores, labels, codes, n_groups)

    def time_best_f1_thresholds(self, n_samples, n_attributes):
        scores, labels, codes, _, n_pos, n_neg, _ = self.arrays
        self.ranking.best_f1_thresholds(scores, labels, codes, n_pos, n_neg)

    def time_confusion_above(self, n_samples, n_attributes):
        scores, labels, codes, n_groups, _, _, thresholds = self.arrays
        self.ranking.confusion_above(scores, labels, codes, n_groups, thresholds)
