"""Surface distances (issue 18): HD95, ASSD and NSD of one in-memory pair beside medpy's ``hd95``,
agreement with medpy, and ``evaluate_segmentation`` with four metrics from ``.nii.gz`` files with 1 and
2 threads. Benchmarks skip (asv shows n/a) where fairmedfm_fast has no surface metrics or medpy is
missing."""
import os

from . import _data
from ._common import slow

VOLUMES = {"128^3": (128, 128, 128), "256^3": (256, 256, 256)}
METRICS = ["hd95", "assd", "nsd"]


def _surface_scores():
    try:
        from fairmedfm_fast.segmentation import surface_scores
    except ImportError:
        raise NotImplementedError("fairmedfm_fast has no surface_scores") from None
    return surface_scores


def _medpy():
    try:
        from medpy.metric import binary
    except ImportError:
        raise NotImplementedError("medpy is not installed") from None
    return binary


@slow
class SurfacePair:
    """One pair: fairmedfm_fast's HD95 + ASSD + NSD on one thread ("fast") or medpy's ``hd95`` alone."""

    params = (list(VOLUMES), ["fast", "medpy"])
    param_names = ["volume", "implementation"]

    def setup(self, volume, implementation):
        case = _data.segmentation(VOLUMES[volume], 1)
        self.pred, self.true = case.pred[0], case.true[0]
        if implementation == "fast":
            scores = _surface_scores()
            warm = _data.segmentation((16, 16, 16), 1)
            scores(warm.pred, warm.true, metrics=METRICS, nsd_tolerance=2.0, n_jobs=1)
            self.run = lambda: scores([self.pred], [self.true], metrics=METRICS, nsd_tolerance=2.0, n_jobs=1)
        else:
            medpy = _medpy()
            self.run = lambda: medpy.hd95(self.pred, self.true)

    def time_surface_pair(self, volume, implementation):
        self.run()


class SurfaceAgreement:
    """Largest difference from medpy's ``hd95`` and ``assd`` on one 64^3 pair (must be <= 1e-9)."""

    def setup(self):
        self.scores, self.medpy = _surface_scores(), _medpy()
        case = _data.segmentation((64, 64, 48), 1)
        self.pred, self.true = case.pred[0], case.true[0]

    def track_medpy_difference(self):
        spacing = (0.8, 1.0, 2.5)
        ours = self.scores([self.pred], [self.true], metrics=["hd95", "assd"], spacing=spacing, n_jobs=1)
        return max(abs(ours["hd95"][0] - self.medpy.hd95(self.pred, self.true, spacing)),
                   abs(ours["assd"][0] - self.medpy.assd(self.pred, self.true, spacing)))


@slow
class SurfaceFiles:
    """``evaluate_segmentation`` with dice, hd95, assd and nsd on 20 pairs of 128^3 ``.nii.gz`` files."""

    params = [1, 2]
    param_names = ["n_jobs"]

    def setup(self, n_jobs):
        _surface_scores()
        import fairmedfm_fast as fm

        try:
            import nibabel  # noqa: F401
        except ImportError:
            raise NotImplementedError("reading .nii.gz needs nibabel") from None
        self.case = _data.mask_files((128, 128, 128), 20, ".nii.gz")
        self.previous = os.environ.get("FAIRMEDFM_FAST_N_JOBS")
        os.environ["FAIRMEDFM_FAST_N_JOBS"] = str(n_jobs)

        def run():
            return fm.evaluate_segmentation({"group": self.case.groups}, pred_masks=self.case.pred,
                                            true_masks=self.case.true, metrics=["dice", "hd95", "assd", "nsd"],
                                            nsd_tolerance=2.0)

        self.run = run
        warm = _data.mask_files((16, 16, 16), 2, ".nii.gz")
        fm.evaluate_segmentation({"group": warm.groups}, pred_masks=warm.pred, true_masks=warm.true,
                                 metrics=["dice", "hd95", "assd", "nsd"], nsd_tolerance=2.0)

    def teardown(self, n_jobs):
        if self.previous is None:
            os.environ.pop("FAIRMEDFM_FAST_N_JOBS", None)
        else:
            os.environ["FAIRMEDFM_FAST_N_JOBS"] = self.previous

    def time_evaluate_four_metrics(self, n_jobs):
        self.run()
