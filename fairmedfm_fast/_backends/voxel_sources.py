"""The score maps of :func:`fairmedfm_fast.evaluate_voxels` as given (stacked arrays, lists, file paths),
with their true and ROI masks: each item read where it is, the items run on a pool of threads, and added
to a :class:`~fairmedfm_fast.VoxelAccumulator` (``voxels.py``) in one pass or two.
"""
from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from .._util.progress import Progress
from .._util.threads import executor


class Source:
    """The maps, masks and ROIs of every image, read as often as the windows need."""

    def __init__(self, score_maps: Any, true_masks: Any, roi_masks: Any):
        self.pairs: Callable[[], Iterable] | None = None
        self.length: int | None = None
        self.roi = roi_masks
        if true_masks is None:  # an iterable (or a callable returning one) of (score_map, true_mask) pairs
            if callable(score_maps):
                self.pairs = score_maps
            elif isinstance(score_maps, Iterable) and iter(score_maps) is not score_maps:
                self.pairs = lambda: iter(score_maps)
            elif isinstance(score_maps, Iterable):  # an iterator: read once, every record held
                self.pairs = lambda: score_maps
                self.one_shot = True
            else:
                raise ValueError("true_masks is missing: pass one ground-truth mask per score map, or pass an "
                                 "iterable of (score_map, true_mask) pairs as score_maps")
            return
        self.maps = stack_or_list(score_maps, "score_maps")
        self.masks = stack_or_list(true_masks, "true_masks")
        self.length = len(self.maps)
        if len(self.masks) != self.length:
            raise ValueError(f"score_maps has {self.length} maps but true_masks has {len(self.masks)}; pass one "
                             "mask per map")

    one_shot = False

    def items(self) -> Iterable[tuple[int, Any, Any, Any]]:
        rois = None if self.roi is None else stack_or_list(self.roi, "roi_masks")
        if self.pairs is not None:
            for i, pair in enumerate(self.pairs()):
                if not isinstance(pair, (tuple, list)) or len(pair) != 2:
                    raise ValueError(f"score_maps item {i} is not a (score_map, true_mask) pair")
                yield i, pair[0], pair[1], None if rois is None else rois[i]
            return
        for i in range(self.length):
            yield i, self.maps[i], self.masks[i], None if rois is None else rois[i]

    def record_bytes(self) -> int:
        """Bytes per voxel record of in-memory maps: 8 for float64 maps, else 4 (few groups assumed)."""
        first = self.maps[0] if len(self.maps) else None
        return 8 if first is not None and first.dtype.itemsize == 8 else 4

    def known_voxels(self) -> int | None:
        """Voxels of in-memory maps (None when they are files or streamed)."""
        if self.pairs is not None:
            return None
        if isinstance(self.maps, np.ndarray):
            return int(self.maps.size)
        if all(isinstance(item, np.ndarray) for item in self.maps):
            return int(sum(item.size for item in self.maps))
        return None


def stack_or_list(values: Any, name: str) -> Any:
    if isinstance(values, np.ndarray) and values.dtype.kind in "biuf":
        if values.ndim < 2:
            raise ValueError(f"{name} is a {values.ndim}-D array, not one map per image; pass a (n_images, ...) "
                             "array, a list of arrays, or file paths")
        return values
    if isinstance(values, (str, os.PathLike)):
        raise ValueError(f"{name} is the single path {str(values)!r}; pass one map per image")
    try:
        return list(values)
    except TypeError:
        raise ValueError(f"{name} must be a stacked array, a list of arrays or of file paths, got "
                         f"{type(values).__name__}") from None


def run_all(source: Source, n_images: int, work: Callable[[int, Any, Any, Any], None], n_jobs: int,
             progress: Any) -> None:
    """``work(i, score_map, true_mask, roi)`` for every image, on ``n_jobs`` threads."""
    bar = Progress(source.length, "reading maps", bool(progress), "map")  # a bar only when asked
    seen = 0

    def checked(item):
        i, score_map, true_mask, roi = item
        if i >= n_images:
            raise ValueError(f"score_maps has more maps than sensitive_features has rows ({n_images}); pass one "
                             "row of attributes per image")
        work(i, score_map, true_mask, roi)

    try:
        if n_jobs == 1:
            for item in source.items():
                checked(item)
                seen += 1
                bar.update(1)
        else:
            pool = executor(n_jobs)
            pending = []
            for item in source.items():
                pending.append(pool.submit(checked, item))
                if len(pending) >= 2 * n_jobs:
                    pending.pop(0).result()
                    seen += 1
                    bar.update(1)
            for future in pending:
                future.result()
                seen += 1
                bar.update(1)
    finally:
        bar.close()
    if seen != n_images:
        raise ValueError(f"score_maps has {seen} maps but sensitive_features has {n_images} rows; pass one row of "
                         "attributes per image")


def add_maps(accumulator: Any, source: Source, n_images: int, n_jobs: int, progress: Any) -> None:
    """Every map of ``source`` into ``accumulator``: in-memory maps in two passes straight into the
    buckets, others read once and staged."""
    if source.known_voxels() is None:
        run_all(source, n_images, lambda i, s, t, r: accumulator.add(s, t, i, r), n_jobs, progress)
        return
    bar = Progress(source.length, "reading maps", bool(progress), "map")  # a bar only when asked
    try:
        accumulator._add_all(list(source.items()), n_jobs, lambda: bar.update(1))
    finally:
        bar.close()
