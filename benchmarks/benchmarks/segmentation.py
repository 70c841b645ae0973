"""Segmentation family: Dice of uint8 volume pairs (128^3, 256^3, 512x512x256), in memory and from files.

A benchmark whose function fairmedfm_fast does not have is skipped (asv shows n/a).
"""
import inspect

import numpy as np

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
    """``evaluate_segmentation``, ``dice_gap`` and the per-pair Dice (``dice_scores``) from masks."""

    params = (list(VOLUMES), SOURCES, list(IMPLEMENTATIONS))
    param_names = ["volume", "source", "implementation"]

    def setup(self, volume, source, implementation):
        for name in ("evaluate_segmentation", "dice_gap", "dice_scores"):
            REGISTRY[name].function(implementation)  # NotImplementedError (skip) when missing
        case, warm = _case(volume, source), _case(volume, source, small=True)
        self.evaluate = prepared("evaluate_segmentation", implementation, case, warm)
        self.dice_gap = prepared("dice_gap", implementation, case, warm)
        self.dice_scores = prepared("dice_scores", implementation, case, warm)

    def time_evaluate_segmentation(self, volume, source, implementation):
        self.evaluate()

    def time_dice_gap(self, volume, source, implementation):
        self.dice_gap()

    def time_dice_scores(self, volume, source, implementation):
        self.dice_scores()

    def peakmem_evaluate_segmentation(self, volume, source, implementation):
        self.evaluate()


@slow
class DiceKernel:
    """The voxel-counting kernel on one in-memory uint8 pair, one thread, beside a NumPy sum of the same
    bytes (the lower bound: any Dice reads every voxel of both masks once)."""

    params = list(VOLUMES)
    param_names = ["volume"]

    def setup(self, volume):
        try:
            from fairmedfm_fast.kernels.segmentation import overlap_counts
        except ImportError:
            raise NotImplementedError("fairmedfm_fast.kernels.segmentation is not available") from None
        self.overlap_counts = overlap_counts
        shape, _ = VOLUMES[volume]
        case = _data.segmentation(shape, 1)
        self.pred, self.true = case.pred[0].reshape(-1), case.true[0].reshape(-1)
        self.starts = np.array([0, self.pred.size], np.int64)
        self.out = np.zeros((1, 3), np.int64)
        self.time_overlap_counts(volume)

    def time_overlap_counts(self, volume):
        one, top = np.uint8(1), np.uint8(255)
        self.overlap_counts(self.pred, self.true, self.starts, one, top, one, top, self.out)

    def time_numpy_sum(self, volume):
        sum_mask_bytes([self.pred, self.true])


@slow
class ReadNifti:
    """Dice of 10 pairs of 256^3 ``.nii.gz`` volumes (20 files) read with 1 and 2 threads (``n_jobs``)."""

    params = [1, 2]
    param_names = ["n_jobs"]

    def setup(self, n_jobs):
        function = REGISTRY["dice_scores"].function("fast")
        if "n_jobs" not in inspect.signature(function).parameters:
            raise NotImplementedError("dice_scores has no n_jobs")
        self.function = function
        warm = _case("128^3", ".nii.gz", small=True)  # NotImplementedError without nibabel
        self.case = _data.mask_files((256, 256, 256), 10, ".nii.gz")
        function(warm.pred, warm.true, n_jobs=n_jobs)

    def time_read_nifti(self, n_jobs):
        self.function(self.case.pred, self.case.true, n_jobs=n_jobs)
