"""Calibration family: ECE and BCE per group (``ece_gap``, ``bce_gap``) and the kernels under them."""
from . import _data
from ._common import IMPLEMENTATIONS, prepared, skip_slow_reference, slow, warm_classification


class CalibrationGaps:
    """``ece_gap`` and ``bce_gap`` on one attribute."""

    params = ([1_000, 100_000, 1_000_000], [2, 50], list(IMPLEMENTATIONS))
    param_names = ["n_samples", "n_groups", "implementation"]
    timeout = 300

    def setup(self, n_samples, n_groups, implementation):
        skip_slow_reference(implementation, n_samples)
        case = _data.classification(n_samples, 1, n_groups)
        warm = warm_classification(1, n_groups)
        self.ece = prepared("ece_gap", implementation, case, warm)
        self.bce = prepared("bce_gap", implementation, case, warm)

    def time_ece_gap(self, n_samples, n_groups, implementation):
        self.ece()

    def time_bce_gap(self, n_samples, n_groups, implementation):
        self.bce()


class ExpectedCalibrationError:
    """``metrics.expected_calibration_error`` on all samples (10 equal-width bins)."""

    params = ([1_000, 100_000, 1_000_000], list(IMPLEMENTATIONS))
    param_names = ["n_samples", "implementation"]
    timeout = 300

    def setup(self, n_samples, implementation):
        case = _data.classification(n_samples)
        self.call = prepared("expected_calibration_error", implementation, case, warm_classification(1, 2))

    def time_expected_calibration_error(self, n_samples, implementation):
        self.call()


@slow
class CalibrationKernels:
    """The calibration kernels on unsorted arrays (they need no sort)."""

    params = ([1_000_000, 10_000_000], [1, 3])
    param_names = ["n_samples", "n_attributes"]

    def setup(self, n_samples, n_attributes):
        from fairmedfm_fast.kernels import calibration

        self.calibration = calibration
        self.arrays = self._arrays(_data.classification(n_samples, n_attributes, 5))
        self._run_all(self._arrays(warm_classification(n_attributes, 5)))

    def _arrays(self, case):
        _, _, low, high = self.calibration.score_ranges(case.y_score, case.y_true, case.codes, case.n_groups)
        edges = self.calibration.equal_width_edges(low, high, 10)
        return case.y_score, case.y_true, case.codes, case.n_groups, edges

    def _run_all(self, arrays):
        scores, labels, codes, n_groups, edges = arrays
        self.calibration.score_ranges(scores, labels, codes, n_groups)
        sums = self.calibration.binned_calibration(scores, labels, codes, n_groups, edges, False)
        self.calibration.calibration_error(*sums, 0)
        self.calibration.slot_sums(self.calibration.log_loss_terms(scores, labels), codes, n_groups)

    def time_score_ranges(self, n_samples, n_attributes):
        scores, labels, codes, n_groups, _ = self.arrays
        self.calibration.score_ranges(scores, labels, codes, n_groups)

    def time_binned_calibration(self, n_samples, n_attributes):
        scores, labels, codes, n_groups, edges = self.arrays
        self.calibration.binned_calibration(scores, labels, codes, n_groups, edges, False)

    def time_log_loss(self, n_samples, n_attributes):
        """BCE sums: the per-sample terms, then their compensated sum per slot."""
        scores, labels, codes, n_groups, _ = self.arrays
        self.calibration.slot_sums(self.calibration.log_loss_terms(scores, labels), codes, n_groups)
