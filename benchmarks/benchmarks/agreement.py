"""``track_``: how far fairmedfm_fast is from fairmedfm 0.4.2 on a small input (the target is <= 1e-9)."""
from . import _data
from ._common import REGISTRY


class Agreement:
    """Largest absolute difference over every number the metric returns (all of ``summary`` and
    ``by_group`` for the reports); ``inf`` when the shapes or the NaN positions differ."""

    params = list(REGISTRY)
    param_names = ["metric"]
    unit = "max abs difference"
    timeout = 300

    def setup(self, metric):
        entry = REGISTRY[metric]
        entry.function("fast")  # NotImplementedError (skip) when missing
        if entry.family == "segmentation":
            self.case = _data.segmentation((24, 24, 24), 6, seed=3)
        elif entry.name == "evaluate":
            self.case = _data.classification(3_000, 3, 5, seed=3)
        else:
            self.case = _data.classification(3_000, 2, 5, seed=3)

    def track_max_abs_difference(self, metric):
        return REGISTRY[metric].disagreement(self.case)
