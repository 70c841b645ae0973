"""``evaluate``: every metric of every group of one to three attributes, on 1M and 10M samples."""
import numpy as np

from . import _data
from ._common import IMPLEMENTATIONS, REGISTRY, prepared, skip_slow_reference, slow, warm_classification


@slow
class Evaluate:
    """The full report. 10,000 samples is where fairmedfm 0.4.2 runs beside it."""

    params = ([10_000, 1_000_000, 10_000_000], [1, 3], [2, 50], list(IMPLEMENTATIONS))
    param_names = ["n_samples", "n_attributes", "n_groups", "implementation"]

    def setup(self, n_samples, n_attributes, n_groups, implementation):
        skip_slow_reference(implementation, n_samples)
        case = _data.classification(n_samples, n_attributes, n_groups)
        self.call = prepared("evaluate", implementation, case, warm_classification(n_attributes, n_groups))
        self.scores = case.y_score

    def time_evaluate(self, n_samples, n_attributes, n_groups, implementation):
        self.call()


class EvaluateSmall:
    """``evaluate`` on 1,000 samples (per-epoch logging; issue 12 asks for at most 1 ms a call), alone and
    with both report frames read (they are made on first access), beside ``auc_gap`` on the same input."""

    params = ([1_000], [1, 3], list(IMPLEMENTATIONS))
    param_names = ["n_samples", "n_attributes", "implementation"]

    def setup(self, n_samples, n_attributes, implementation):
        case = _data.classification(n_samples, n_attributes, 5)
        self.call = prepared("evaluate", implementation, case)
        self.auc_gap = prepared("auc_gap", implementation, case)

    def time_evaluate(self, n_samples, n_attributes, implementation):
        self.call()

    def time_evaluate_and_frames(self, n_samples, n_attributes, implementation):
        report = self.call()
        report.summary, report.by_group  # noqa: B018 - made on this first read

    def time_auc_gap(self, n_samples, n_attributes, implementation):
        self.auc_gap()


class EvaluateManyGroups:
    """Thousands of groups (scanners, sites, intersectional cells): ``evaluate`` alone, then with
    ``report.by_group`` and ``report.to_dict()`` made from it. Issue 28 asks that the report's per-group
    tables take at most twice ``evaluate``'s own time at 4,000 groups (they were quadratic: 40 s)."""

    params = ([100_000], [4_000])
    param_names = ["n_samples", "n_groups"]

    def setup(self, n_samples, n_groups):
        case = _data.classification(n_samples, 1, n_groups)
        self.call = prepared("evaluate", "fast", case)
        self.call().by_group  # noqa: B018 - imports pandas and builds the frame code once

    def time_evaluate(self, n_samples, n_groups):
        self.call()

    def time_evaluate_and_by_group(self, n_samples, n_groups):
        self.call().by_group  # noqa: B018 - made on this first read

    def time_evaluate_and_to_dict(self, n_samples, n_groups):
        self.call().to_dict()


@slow
class EvaluateLowerBound:
    """``np.sort`` of the same scores as :class:`Evaluate`: the ratio to it is what the targets state."""

    params = [1_000_000, 10_000_000]
    param_names = ["n_samples"]

    def setup(self, n_samples):
        self.scores = _data.classification(n_samples, 1, 2).y_score

    def time_sort_scores(self, n_samples):
        np.sort(self.scores)


@slow
class EvaluateInputKinds:
    """Three attributes given as pandas categorical columns or as string columns (factorized by the API)."""

    params = ([1_000_000], ["category", "str"])
    param_names = ["n_samples", "kind"]

    def setup(self, n_samples, kind):
        self.evaluate = REGISTRY["evaluate"].function("fast")
        warm = warm_classification(3, 5)
        self.evaluate(warm.y_true, warm.y_score, warm.sensitive(kind))
        case = _data.classification(n_samples, 3, 5)
        self.arguments = (case.y_true, case.y_score, case.sensitive(kind))

    def time_evaluate(self, n_samples, kind):
        self.evaluate(*self.arguments)


@slow
class EvaluateMemory:
    """Peak memory of the process (inputs included) around one ``evaluate`` of three attributes."""

    params = ([100_000, 1_000_000, 10_000_000], list(IMPLEMENTATIONS))
    param_names = ["n_samples", "implementation"]

    def setup(self, n_samples, implementation):
        skip_slow_reference(implementation, n_samples)
        case = _data.classification(n_samples, 3, 50)
        self.call = prepared("evaluate", implementation, case, warm_classification(3, 50))

    def peakmem_evaluate(self, n_samples, implementation):
        self.call()


@slow
class EvaluateAnalytic:
    """``evaluate`` of three categorical attributes with ``interval="analytic"`` (DeLong, Wilson and the
    simultaneous gap intervals) beside plain ``evaluate`` and beside ``n_boot=50`` bootstrap resamples,
    on the same input (issue 30: at most 1.3x plain at 10M; n_boot=1000 costs about 20x the n_boot=50
    row)."""

    params = [1_000_000, 10_000_000]
    param_names = ["n_samples"]

    def setup(self, n_samples):
        import fairmedfm_fast

        case = _data.classification(n_samples, 3, 10)
        self.arguments = (case.y_true, case.y_score, case.sensitive("category"))
        self.evaluate = fairmedfm_fast.evaluate
        warm = warm_classification(3, 10)
        self.evaluate(warm.y_true, warm.y_score, warm.sensitive("category"), interval="analytic", n_boot=2)
        self.evaluate(*self.arguments, interval="analytic")

    def time_evaluate(self, n_samples):
        self.evaluate(*self.arguments)

    def time_evaluate_analytic(self, n_samples):
        self.evaluate(*self.arguments, interval="analytic")

    def time_evaluate_bootstrap_50(self, n_samples):
        self.evaluate(*self.arguments, n_boot=50, random_state=0, progress=False)
