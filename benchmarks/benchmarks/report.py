"""``FairnessReport.to_html``: the findings page of a report with bootstrap intervals (issue: under 2 s for
200,000 samples, four attributes and ``n_boot=200``), beside ``evaluate`` of the same input without them."""
import warnings

import numpy as np

from . import _data
from ._common import slow


@slow
class ReportPage:
    params = [200_000]
    param_names = ["n_samples"]

    def setup(self, n_samples):
        import fairmedfm_fast

        case = _data.classification(n_samples, 3, 5)
        sensitive = case.sensitive()
        rng = np.random.default_rng(0)
        sensitive["age"] = rng.uniform(18, 95, case.n_samples)  # a fourth attribute, binned
        self.arguments = (case.y_true, case.y_score, sensitive)
        self.evaluate = fairmedfm_fast.evaluate
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            self.report = fairmedfm_fast.evaluate(*self.arguments, bins={"age": [40, 65]}, n_boot=200,
                                                  random_state=0)
        self.report.to_html()  # imports matplotlib and draws once

    def time_to_html(self, n_samples):
        self.report.to_html()

    def time_evaluate_without_intervals(self, n_samples):
        self.evaluate(*self.arguments, bins={"age": [40, 65]})
