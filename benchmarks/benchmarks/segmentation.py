"""Segmentation family: Dice of uint8 volume pairs (128^3, 256^3, 512x512x256), in memory and from files.

``evaluate_segmentation`` and ``dice_gap`` come with the segmentation work; until fairmedfm_fast has them,
every benchmark here is skipped (asv shows n/a).
"""
import inspect

from . import _data
from ._baselines import sum_mask_bytes
from ._common import IMPLEMENTATIONS, REGISTRY, prepared, slow

# volume name -> (shape, number of (prediction, truth) pairs)
VOLUMES = {
    "128^3": ((128, 128, 128), 8),
    "256^3": ((256, 256, 256), 4),
    "512x512x256": ((512, 512, 256), 2),
}
SOURCES = ["memory", ".npy", ".nii.gz"]


def _case(volume: str, source: str, small: bool = False):
    shape, n_cases = VOLUMES[volume]
    if small:
        shape, n_cases = (16, 16, 16), 2
    if source == "memory":
        return _data.segmentation(shape, n_cases)
    if source == ".nii.gz":
        try:
            import nibabel  # noqa: F401
        except ImportError:
            raise NotImplementedError("reading .nii.gz needs nibabel") from None
    return _data.mask_files(shape, n_cases, source)


@slow
class Segmentation:
    """``evaluate_segmentation`` and ``dice_gap`` from masks; two groups of pairs."""

    params = (list(VOLUMES), SOURCES, list(IMPLEMENTATIONS))
    param_names = ["volume", "source", "implementation"]

    def setup(self, volume, source, implementation):
        for name in ("evaluate_segmentation", "dice_gap"):
            REGISTRY[name].function(implementation)  # NotImplementedError (skip) when missing
        case, warm = _case(volume, source), _case(volume, source, small=True)
        self.evaluate = prepared("evaluate_segmentation", implementation, case, warm)
        self.dice_gap = prepared("dice_gap", implementation, case, warm)

    def time_evaluate_segmentation(self, volume, source, implementation):
        self.evaluate()

    def time_dice_gap(self, volume, source, implementation):
        self.dice_gap()

    def peakmem_evaluate_segmentation(self, volume, source, implementation):
        self.evaluate()


@slow
class MaskBytes:
    """The lower bound of any Dice: a NumPy sum over every mask byte of the in-memory case."""

    params = list(VOLUMES)
    param_names = ["volume"]

    def setup(self, volume):
        case = _case(volume, "memory")
        self.masks = case.pred + case.true

    def time_numpy_sum(self, volume):
        sum_mask_bytes(self.masks)


@slow
class ReadNifti:
    """``evaluate_segmentation`` on 20 ``.nii.gz`` volumes (10 pairs of 128^3) with 1 and 2 reading threads."""

    params = [1, 2]
    param_names = ["n_jobs"]

    def setup(self, n_jobs):
        function = REGISTRY["evaluate_segmentation"].function("fast")
        if "n_jobs" not in inspect.signature(function).parameters:
            raise NotImplementedError("evaluate_segmentation has no n_jobs")
        self.function = function
        self.case = _data.mask_files((128, 128, 128), 10, ".nii.gz")
        warm = _case("128^3", ".nii.gz", small=True)
        function(warm.groups, pred_masks=warm.pred, true_masks=warm.true, n_jobs=n_jobs)

    def time_read_nifti(self, n_jobs):
        case = self.case
        self.function(case.groups, pred_masks=case.pred, true_masks=case.true, n_jobs=n_jobs)
