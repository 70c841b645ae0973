"""Voxel-level fairness of score maps: exact per-group AUC, best-F1, ECE and BCE in bounded memory.

:func:`evaluate_voxels` gives the report of :func:`fairmedfm_fast.evaluate` on every voxel of every
map (groups are per image) without flattening them into one array: records are staged per
score bucket (the high bits of the score's bit pattern), each bucket is sorted on its own and swept
in ascending order carrying the counts of the buckets before it. ``docs/voxels.md`` explains the
method and its exactness.
"""
from __future__ import annotations

import os
import threading
import warnings as _warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from .._engine import classification as _engine
from .._engine import one_grouping as _one_grouping
from .._engine import voxels as voxel_passes
from .._inputs import arrays as _inputs
from .._inputs import groups as _groups
from .._inputs import mask_files as _mask_files
from .._registry import metrics as _metric_registry
from .._report.assembly import asked, assemble
from .._report.frame import FairnessReport
from .._util.progress import Progress
from .._util.threads import executor, resolve_n_jobs
from .assess import attribute_result
from .checks import check_threshold

__all__ = ["VoxelAccumulator", "evaluate_voxels"]

_FLOAT32, _UINT8, _FLOAT64 = voxel_passes.FLOAT32, voxel_passes.UINT8, voxel_passes.FLOAT64
_LOW_BITS = voxel_passes.LOW_BITS
_N_BUCKETS = voxel_passes.N_BUCKETS
_MODE_NAMES = {_FLOAT32: "float32", _UINT8: "uint8 (value / 255)", _FLOAT64: "float64"}
#: Records staged per thread before they are sorted into buckets: at most this many, at least
#: _MIN_STAGE, and all threads' stages together at most 1/_STAGE_SHARE of ``max_memory``.
_STAGE = 1 << 23
_MIN_STAGE = 1 << 16
_STAGE_SHARE = 8
#: Bytes a staged record takes at most: its bucket id (2) and the record (4, or 8 with float64 maps).
_STAGE_BYTES = 10
_NO_KEY = np.iinfo(np.int64).max
#: More windows than this (each one more read of the maps) get a warning naming a larger max_memory.
_MANY_WINDOWS = 10
#: Windows from this many records are swept on several threads.
_PARALLEL_SWEEP = 1 << 20


#: The passes (``_metric_registry.PASSES``) whose sums this backend makes: those of the bucket
#: sweep, and the order-free sums of a per-sample term (added up per image as each map is read).
PASSES = frozenset({"counts", "ranks", "log_loss", "ece_bins", "confusion", "slot_sums"})


def check_metrics(metrics: Any) -> tuple[str, ...]:
    """The validated opt-in ``metrics`` (as :func:`fairmedfm_fast.evaluate` takes them) whose sums
    this backend makes; a ValueError names any other."""
    names = _metric_registry.check_metrics(metrics)
    for name in names:
        missing = sorted(_metric_registry.passes(frozenset({name})) - PASSES)
        if missing:
            raise ValueError(f"metrics={name!r} is not available in evaluate_voxels: it needs "
                             f"{_metric_registry.PASSES[missing[0]]}, which the bucket sweep does not make; leave "
                             "it out, or pass the voxels as samples to fairmedfm_fast.evaluate")
    return names


def _term_entries(metrics: tuple[str, ...]) -> tuple:
    """The registry entries of the per-sample-term sums that ``metrics`` read."""
    return _metric_registry.sums_made_by("slot_sums", frozenset(metrics))


def _image_term_sums(entries: tuple, bits: np.ndarray, mode: int, truth: np.ndarray, roi: np.ndarray) -> list[float]:
    """One image's sum of each entry's per-sample term over its voxels (those of its ROI)."""
    scores, labels = _score_values(bits, mode), (truth != 0).view(np.uint8)
    if len(roi):
        inside = roi != 0
        scores, labels = scores[inside], labels[inside]
    return [float(np.sum(_engine.term_values(entry, labels, scores))) for entry in entries]


def _score_values(bits: np.ndarray, mode: int) -> np.ndarray:
    """The scores of key ``bits`` as :func:`fairmedfm_fast.evaluate` would read the voxels."""
    if mode == _UINT8:
        return bits / 255.0
    return bits.view(np.float32 if mode == _FLOAT32 else np.float64)


def parse_memory(max_memory: Any) -> int:
    """Bytes from ``max_memory``: a number of bytes, a text such as ``"2GB"`` or ``"512 MiB"``, or None
    (half the memory available now)."""
    if max_memory is None:
        return _available_memory() // 2
    if isinstance(max_memory, (int, np.integer)) and not isinstance(max_memory, bool) and max_memory > 0:
        return int(max_memory)
    if isinstance(max_memory, str):
        text = max_memory.strip().upper().replace(" ", "").removesuffix("B").removesuffix("I")
        factor = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}.get(text[-1:], 1)
        number = text[:-1] if text[-1:] in "KMGT" else text
        try:
            value = float(number) * factor
        except ValueError:
            value = 0
        if value > 0:
            return int(value)
    raise ValueError(f"max_memory must be a number of bytes or a text such as '2GB', got {max_memory!r}")


def _available_memory() -> int:
    try:
        with open("/proc/meminfo") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 8 << 30


def _score_bits(score_map: np.ndarray, where: str) -> tuple[np.ndarray, int]:
    """The flattened map as key bits and its mode."""
    dtype = score_map.dtype
    if dtype == np.uint8:
        return score_map.ravel(), _UINT8
    if dtype == np.float16:
        score_map = score_map.astype(np.float32)
        dtype = score_map.dtype
    if dtype.kind == "f" and dtype.itemsize == 4:
        return np.ascontiguousarray(score_map, np.float32).ravel().view(np.uint32), _FLOAT32
    if dtype.kind in "biuf":
        return np.ascontiguousarray(score_map, np.float64).ravel().view(np.uint64), _FLOAT64
    raise ValueError(f"{where} must be a numeric score map (float32, float64, float16 or uint8), got dtype {dtype}")


def _nonzero_bytes(mask: np.ndarray, where: str) -> np.ndarray:
    """A mask as flattened uint8, nonzero where the mask is (``> 0``, booleans as they are)."""
    if mask.dtype == bool or mask.dtype == np.uint8:
        return np.ascontiguousarray(mask).ravel().view(np.uint8)
    if mask.dtype.kind not in "iuf":
        raise ValueError(f"{where} must be a numeric or boolean mask, got dtype {mask.dtype}")
    return (mask > 0).ravel().view(np.uint8)


def _check_values(index: int, totals: np.ndarray, offset: int) -> None:
    """Raise when the map's ``totals`` (see the kernels' ``encode_map``) saw an invalid score."""
    if totals[4] >= 0:
        raise ValueError(f"score map of image {index} has values outside [0, 1] or NaN (e.g. voxel "
                         f"{int(totals[4]) + offset} of the flattened map); pass probabilities, e.g. apply a "
                         "sigmoid to logits")


class _Stage:
    """One thread's staging arrays: records of several maps, sorted into buckets when full."""

    def __init__(self, record_type: np.dtype, capacity: int):
        self.bucket = np.empty(capacity, np.uint16)
        self.record = np.empty(capacity, record_type)
        self.position = np.zeros(1, np.int64)

    @property
    def fill(self) -> int:
        return int(self.position[0])

    @fill.setter
    def fill(self, value: int) -> None:
        self.position[0] = value


class VoxelAccumulator:
    """Voxel records of score maps, added one map at a time, evaluated exactly by :meth:`result`.

    Parameters
    ----------
    sensitive_features : DataFrame, dict, Series or array-like with one row per image
        The attributes of each image (missing values leave the image out of that attribute).
    bins, intersectional, threshold
        As in :func:`fairmedfm_fast.evaluate`; quantile ``bins`` are quantiles over images.
    n_jobs : int, optional
        Threads of :meth:`result`'s preparation (default: all cores).
    metrics : list of str, optional
        Opt-in metrics, as in :func:`evaluate_voxels`.

    Notes
    -----
    Memory grows by 4 bytes per voxel (float32, float16 or uint8 maps; 8 for float64 maps and for
    more than 32,768 group combinations). :meth:`merge` adds another accumulator's records (for
    example one from another process, received pickled), so a data-parallel evaluation reduces to
    one report that equals the report of all maps together.
    """

    __module__ = "fairmedfm_fast.voxels"  # its public place, which pickles and reprs name

    def __init__(self, sensitive_features: Any, *, bins: _groups.Bins | None = None, intersectional: bool = False,
                 threshold: float | None = None, n_jobs: int | None = None, metrics: Any = None,
                 _window: tuple[int, int] | None = None, _capacity: int = 0, _reuse: np.ndarray | None = None,
                 _stage_records: int | None = None, _terms: bool = True):
        self.metrics = check_metrics(metrics)
        self._layout = _Layout(sensitive_features, bins, intersectional)
        self.threshold = check_threshold(threshold)
        # per image, the sums of the per-sample terms that the opt-in metrics read (made as each map
        # is read: by one accumulator of a windowed evaluation, ``_terms``)
        self._terms = _term_entries(self.metrics) if _terms else ()
        self.image_sums = np.zeros((self._layout.n_images, len(self._terms)))
        self.n_jobs = resolve_n_jobs(n_jobs)
        self._window = _window
        self._mode: int | None = None
        self._capacity = _capacity  # records expected (the arena is made at that size)
        self._arena: np.ndarray | None = None
        self._reuse = _reuse  # an earlier window's arena, written again (no new pages)
        self._used = 0
        self._starts: list[np.ndarray] = []
        self._stages: dict[int, _Stage] = {}
        self._stage_records = _stage_records or _STAGE
        self._lock = threading.Lock()
        self._room = threading.Condition(self._lock)  # flushes writing into the arena: self._writing
        self._writing = 0
        self.totals = np.zeros((self._layout.n_images, 5), np.int64)
        self.totals[:, 2] = _NO_KEY
        self.totals[:, 3:] = -1

    @property
    def n_images(self) -> int:
        return self._layout.n_images

    # -- adding maps --------------------------------------------------------------------------

    def add(self, score_map: Any, true_mask: Any, image_index: int, roi_mask: Any = None) -> None:
        """Add the voxels of one image.

        Parameters
        ----------
        score_map : array-like or path of any shape
            Probabilities within [0, 1] (float32, float64, float16), or uint8 values ``v`` meaning
            ``v / 255``.
        true_mask : array-like or path of the same shape; foreground where nonzero
        image_index : int, the image's row in ``sensitive_features``
        roi_mask : array-like or path of the same shape, optional; only its nonzero voxels count
        """
        index = self._image_index(image_index)
        prepared = self._prepare(index, score_map, true_mask, roi_mask)
        self._add_terms(index, *prepared)
        self._encode(index, *prepared)

    def update(self, score_map: Any, true_mask: Any, image_index: int, roi_mask: Any = None) -> None:
        """Add the voxels of one image: :meth:`add` under the name torchmetrics and
        :class:`~fairmedfm_fast.FairnessAccumulator` use."""
        self.add(score_map, true_mask, image_index, roi_mask)

    def _prepare(self, index: int, score_map: Any, true_mask: Any, roi_mask: Any) -> tuple[np.ndarray, ...]:
        """Key bits, label bytes and ROI bytes (empty: no ROI) of one image, checked."""
        where = f"score_map of image {index}"
        scores = _mask_files.load_mask(score_map, where)
        truth = _mask_files.load_mask(true_mask, f"true_mask of image {index}")
        if scores.shape != truth.shape:
            raise ValueError(f"image {index}: score map shape {scores.shape} differs from true mask shape "
                             f"{truth.shape}; pass a mask of the map's shape")
        roi = None
        if roi_mask is not None:
            roi = _mask_files.load_mask(roi_mask, f"roi_mask of image {index}")
            if roi.shape != scores.shape:
                raise ValueError(f"image {index}: roi mask shape {roi.shape} differs from score map shape "
                                 f"{scores.shape}; pass an ROI of the map's shape")
        bits, mode = _score_bits(scores, where)
        with self._lock:
            if self._mode is None:
                self._mode = mode
                self._check_layout()
        if mode != self._mode:
            raise ValueError(f"{where} has dtype {scores.dtype}, but earlier maps were {_MODE_NAMES[self._mode]}; "
                             "pass every map with one dtype (e.g. all float32)")
        truth = _nonzero_bytes(truth, f"true_mask of image {index}")
        roi = np.empty(0, np.uint8) if roi is None else _nonzero_bytes(roi, f"roi_mask of image {index}")
        return bits, truth, roi

    def _add_terms(self, index: int, bits: np.ndarray, truth: np.ndarray, roi: np.ndarray) -> None:
        """The image's sums of each per-sample term of ``self._terms`` (over its ROI)."""
        if self._terms and self._mode is not None:
            self.image_sums[index] = _image_term_sums(self._terms, bits, self._mode, truth, roi)

    def _add_all(self, items: list[tuple[int, Any, Any, Any]], n_jobs: int, done: Callable[[], None]) -> None:
        """Add maps that can be read twice, in two passes and no staging: count the voxels of each
        bucket, then write every record straight into its bucket. Blocks of consecutive images
        run on ``n_jobs`` threads, each block with its own part of every bucket."""
        blocks = [block for block in np.array_split(np.arange(len(items)), n_jobs) if len(block)]
        if not blocks:
            return
        pool = executor(len(blocks))
        lo = hi = 0

        def count(block: np.ndarray) -> np.ndarray:
            histogram = None
            for j in block.tolist():
                index = items[j][0]
                bits, truth, roi = self._prepare(*items[j])
                self._add_terms(index, bits, truth, roi)
                if histogram is None:
                    histogram = np.zeros(_N_BUCKETS[self._mode], np.int64)
                voxel_passes.count_map(bits, truth, roi, self._mode, histogram, self.totals[index])
                _check_values(index, self.totals[index], 0)
            return histogram

        def scatter(block: np.ndarray, position: np.ndarray) -> None:
            for j in block.tolist():
                index = items[j][0]
                bits, truth, roi = self._prepare(*items[j])
                voxel_passes.scatter_map(bits, truth, roi, self._mode, int(self._layout.image_cells[index]) << 1,
                                         self._layout.payload_bits, lo, hi, self._arena, position)
                done()

        histograms = [job.result() for job in [pool.submit(count, block) for block in blocks]]
        if self._mode is None:
            return
        lo, hi = self._bounds()
        counts = np.stack(histograms)[:, lo:hi]
        starts = np.zeros(hi - lo + 1, np.int64)
        np.cumsum(counts.sum(axis=0), out=starts[1:])
        starts += self._used
        total = int(starts[-1] - self._used)
        self._reserve(total, self._record_type)
        positions = starts[:-1] + np.cumsum(counts, axis=0) - counts  # each block after the blocks before it
        for job in [pool.submit(scatter, block, position) for block, position in zip(blocks, positions)]:
            job.result()
        self._starts.append(starts)
        self._used += total

    def _image_index(self, image_index: Any) -> int:
        if isinstance(image_index, bool) or not isinstance(image_index, (int, np.integer)) \
                or not 0 <= image_index < self.n_images:
            raise ValueError(f"image_index must be an integer from 0 to {self.n_images - 1} (a row of "
                             f"sensitive_features), got {image_index!r}")
        return int(image_index)

    def _check_layout(self) -> None:
        low = _LOW_BITS[self._mode]
        if low + self._layout.payload_bits > 64:
            raise ValueError(f"{self._layout.n_cells} combinations of groups are too many for float64 maps "
                             "(at most 32,768); pass float32 maps or fewer attributes")
        self._record_type = np.dtype(np.uint32 if low + self._layout.payload_bits <= 32 else np.uint64)

    def _stage(self) -> _Stage:
        key = threading.get_ident()
        stage = self._stages.get(key)
        if stage is None:
            with self._lock:
                stage = self._stages[key] = _Stage(self._record_type, min(self._stage_records, _STAGE))
        return stage

    def _bounds(self) -> tuple[int, int]:
        return self._window or (0, _N_BUCKETS[self._mode])

    def _encode(self, index: int, bits: np.ndarray, truth: np.ndarray, roi: np.ndarray) -> None:
        stage = self._stage()
        lo, hi = self._bounds()
        payload = int(self._layout.image_cells[index]) << 1
        totals = self.totals[index]
        step = len(stage.record)
        for start in range(0, len(bits), step):
            part = slice(start, start + step)
            if stage.fill + len(bits[part]) > len(stage.record):
                self._flush(stage)
            voxel_passes.encode_map(bits[part], truth[part], roi[part] if len(roi) else roi, self._mode, payload,
                                    self._layout.payload_bits, lo, hi, stage.bucket, stage.record, stage.position,
                                    totals)
            _check_values(index, totals, start)

    def _flush(self, stage: _Stage) -> None:
        if stage.fill:
            lo, hi = self._bounds()
            with self._room:  # claim a part of the arena; it moves (grows) only while no flush writes
                self._reserve(stage.fill, stage.record.dtype)
                arena, offset = self._arena, self._used
                self._used += stage.fill
                self._writing += 1
            try:  # flushes of several threads sort their records at once
                starts = voxel_passes.stage_by_bucket(stage.bucket, stage.record, stage.fill, hi - lo, arena, offset)
            finally:
                with self._room:
                    self._writing -= 1
                    self._room.notify_all()
            with self._lock:
                self._starts.append(starts)
            stage.fill = 0

    def _reserve(self, n: int, dtype: np.dtype) -> None:
        """Room for ``n`` more records in the arena (made at the expected size, else doubled, once no
        flush writes into it; called with ``self._room`` held when threads flush)."""
        while self._writing and self._used + n > len(self._arena):
            self._room.wait()
        if self._arena is None:
            size = max(n, self._capacity)
            reuse, self._reuse = self._reuse, None
            fits = reuse is not None and reuse.dtype == dtype and len(reuse) >= size
            self._arena = reuse if fits else np.empty(size, dtype)
        elif self._used + n > len(self._arena):
            grown = np.empty(max(self._used + n, 2 * len(self._arena)), dtype)
            grown[: self._used] = self._arena[: self._used]
            self._arena = grown

    def _flush_all(self) -> None:
        for stage in self._stages.values():
            self._flush(stage)
        self._stages.clear()

    # -- combining and evaluating ----------------------------------------------------------------

    def merge(self, other: VoxelAccumulator) -> VoxelAccumulator:
        """Add the records of ``other`` (same attributes, same window, disjoint maps); returns self."""
        if other._layout.n_images != self._layout.n_images or other._window != self._window:
            raise ValueError("other accumulator was made for different images; merge accumulators made "
                             "with the same sensitive_features")
        if other.metrics != self.metrics:
            raise ValueError(f"other accumulator computes metrics={list(other.metrics)}, this one "
                             f"{list(self.metrics)}; merge accumulators made with the same metrics")
        if other._mode is not None:
            if self._mode is None:
                self._mode = other._mode
                self._check_layout()
            elif other._mode != self._mode:
                raise ValueError(f"other accumulator holds {_MODE_NAMES[other._mode]} maps, this one "
                                 f"{_MODE_NAMES[self._mode]}; merge accumulators of one map dtype")
        other._flush_all()
        if other._used:
            with self._lock:
                self._reserve(other._used, other._arena.dtype)
                self._arena[self._used: self._used + other._used] = other._arena[: other._used]
                self._starts.extend(starts + self._used for starts in other._starts)
                self._used += other._used
        self.totals[:, :2] += other.totals[:, :2]
        self.image_sums += other.image_sums
        self.totals[:, 2] = np.minimum(self.totals[:, 2], other.totals[:, 2])
        self.totals[:, 3] = np.maximum(self.totals[:, 3], other.totals[:, 3])
        return self

    def __getstate__(self) -> dict:
        self._flush_all()
        state = self.__dict__.copy()
        del state["_lock"], state["_room"], state["_stages"]
        state["_reuse"] = None
        if self._arena is not None:  # only the used part travels
            state["_arena"] = self._arena[: self._used]
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()
        self._room = threading.Condition(self._lock)
        self._stages = {}

    def result(self) -> FairnessReport:
        """The report of :func:`fairmedfm_fast.evaluate` on every voxel added (groups per image)."""
        if self._window is not None:
            raise RuntimeError("internal error: a windowed accumulator is swept by evaluate_voxels")
        sweep = _Sweep(self._layout, self._mode if self._mode is not None else _FLOAT32, self.totals,
                       self.threshold, self._optional())
        sweep.window(*self._records(), 0, self.n_jobs)
        return sweep.report({})

    def _optional(self) -> tuple:
        """What the report needs of the opt-in metrics: their names, and each per-sample-term
        sum's entry with its per-image sums."""
        return self.metrics, tuple(zip(self._terms, self.image_sums.T))

    def _records(self) -> tuple[np.ndarray | None, list[np.ndarray]]:
        """The staged records and the bucket starts of each chunk of them."""
        self._flush_all()
        return self._arena, self._starts


class _Layout:
    """Groupings, their slots, and the cells (distinct code combinations) of the images."""

    def __init__(self, sensitive_features: Any, bins: Any, intersectional: bool):
        self.n_images = _rows(sensitive_features)
        attributes = _groups.encode_attributes(sensitive_features, self.n_images, bins, intersectional)
        self.attributes = attributes
        rows = [attribute.codes for attribute in attributes]
        sizes = [attribute.n_groups for attribute in attributes]
        complete = next((k for k, a in enumerate(attributes) if a.codes.min(initial=0) >= 0), None)
        if complete is None:  # "all voxels" needs a grouping of its own, as in evaluate
            rows.append(np.zeros(self.n_images, np.intp))
            sizes.append(1)
            complete = len(rows) - 1
        self.complete = complete
        self.sizes = np.asarray(sizes, np.int64)
        codes = np.stack(rows) if self.n_images else np.zeros((len(rows), 0), np.intp)
        cell_codes, self.image_cells = np.unique(codes, axis=1, return_inverse=True)
        self.image_cells = self.image_cells.ravel().astype(np.int64)
        self.n_cells = max(cell_codes.shape[1], 1)
        self.payload_bits = max(1, int(2 * self.n_cells - 1).bit_length())
        starts = np.concatenate(([0], np.cumsum(self.sizes + 1)))
        self.n_slots = int(starts[-1])
        k_count = len(sizes)
        self.grouping_slots = np.stack([starts[:-1], starts[1:], starts[1:] - 1], axis=1).astype(np.int64)
        self.cell_slots = np.full((self.n_cells, 2 * k_count), -1, np.int64)
        for k in range(k_count):
            present = cell_codes[k] >= 0
            self.cell_slots[: cell_codes.shape[1], 2 * k] = np.where(present, starts[k] + cell_codes[k], -1)
            self.cell_slots[: cell_codes.shape[1], 2 * k + 1] = np.where(present, starts[k + 1] - 1, -1)

    def slot_matrix(self) -> np.ndarray:
        """(n_cells, n_slots) booleans: which slots each cell belongs to."""
        member = np.zeros((self.n_cells, self.n_slots), bool)
        for j in range(self.cell_slots.shape[1]):
            rows = np.flatnonzero(self.cell_slots[:, j] >= 0)
            member[rows, self.cell_slots[rows, j]] = True
        return member


def _rows(sensitive_features: Any) -> int:
    """Number of rows (images) of the attributes."""
    for attribute in ("shape", "num_rows", "height"):
        value = getattr(sensitive_features, attribute, None)
        if isinstance(value, tuple) and value:
            return int(value[0])
        if isinstance(value, (int, np.integer)):
            return int(value)
    if isinstance(sensitive_features, Mapping):
        if not sensitive_features:
            raise ValueError("sensitive_features has no attributes: pass at least one column of group values")
        return len(next(iter(sensitive_features.values())))
    try:
        return len(sensitive_features)
    except TypeError:
        raise ValueError("sensitive_features must hold one row of attributes per image (a DataFrame, a dict of "
                         f"columns or a list), got {type(sensitive_features).__name__}") from None


class _Sweep:
    """The state carried from bucket to bucket, and the report at the end.

    The kernel works on *canonical* slots: slots with the same cells whose groupings have the same
    samples (for example the "all" slot of every grouping without missing values) share one state,
    copied to the others at the end."""

    def __init__(self, layout: _Layout, mode: int, totals: np.ndarray, threshold: float | None,
                 optional: tuple = ((), ())):
        self.layout, self.mode, self.threshold = layout, mode, threshold
        self.metrics, self.term_sums = optional
        self.totals = totals
        member = layout.slot_matrix()
        cell_totals = np.zeros((layout.n_cells, 2), np.int64)
        np.add.at(cell_totals, layout.image_cells, totals[:, :2])
        self.count = cell_totals[:, 0] @ member.astype(np.int64)
        self.positives = cell_totals[:, 1] @ member.astype(np.int64)
        smallest = np.full(layout.n_cells, _NO_KEY)
        largest = np.full(layout.n_cells, -1)
        np.minimum.at(smallest, layout.image_cells, totals[:, 2])
        np.maximum.at(largest, layout.image_cells, totals[:, 3])
        low = np.full(layout.n_slots, np.nan)
        high = np.full(layout.n_slots, np.nan)
        for s in range(layout.n_slots):
            cells = member[:, s] & (largest >= 0)
            if cells.any():
                low[s] = self.value_of(smallest[cells].min())
                high[s] = self.value_of(largest[cells].max())
        self.edges = _one_grouping.ece_edges(low, high)
        self._canonical(member)
        k_count = len(layout.sizes)
        self.fixed = np.array([0.5] if threshold is None else sorted({0.5, threshold}))
        n_slots = layout.n_slots
        self.state = np.zeros((n_slots, 5), np.int64)
        self.at_or_below = np.zeros((len(self.fixed), n_slots, 2), np.int64)
        self.slot_sums = np.zeros((4, n_slots))
        self.snap_counts = np.zeros((len(self.event_value), 2), np.int64)
        self.snap_sums = np.zeros((len(self.event_value), 2))
        self.cursor = np.zeros(2, np.int64)
        overall = layout.grouping_slots[:, 2]
        self.best = np.zeros((k_count, 4))
        self.best[:, 0] = -np.inf
        self.best[:, 1] = np.nan
        self.best[:, 2] = self.positives[overall]
        self.best[:, 3] = self.count[overall] - self.positives[overall]

    def _canonical(self, member: np.ndarray) -> None:
        """The kernel's layout: canonical slots of each cell and grouping, cells of each slot, events."""
        layout = self.layout
        first_of: dict[bytes, int] = {}
        canon = np.empty(layout.n_slots, np.int64)
        for first, last, overall in layout.grouping_slots.tolist():
            for s in range(first, last):
                key = member[:, s].tobytes() + member[:, overall].tobytes()
                canon[s] = first_of.setdefault(key, s)
        self.canon = canon
        self.all_slot = int(canon[layout.grouping_slots[layout.complete, 2]])  # counted per run, not per cell
        rows = [list(dict.fromkeys(canon[s] for s in row if s >= 0 and canon[s] != self.all_slot))
                for row in layout.cell_slots.tolist()]
        self.cell_slots = np.full((layout.n_cells, max(map(len, rows), default=0)), -1, np.int64)
        for cell, row in enumerate(rows):
            self.cell_slots[cell, :len(row)] = row
        self.group_overall = canon[layout.grouping_slots[:, 2]]
        groups = [sorted(set(canon[first:last].tolist())) for first, last, _ in layout.grouping_slots.tolist()]
        self.group_slots = (np.concatenate(([0], np.cumsum([len(g) for g in groups]))).astype(np.int64),
                            np.array([s for g in groups for s in g], np.int64))
        spread = np.unique(self.cell_slots[self.cell_slots >= 0])
        cells = [np.flatnonzero(member[:, s]) for s in spread]
        self.slot_cells = (spread.astype(np.int64),
                           np.concatenate(([0], np.cumsum([len(c) for c in cells]))).astype(np.int64),
                           np.concatenate(cells + [np.zeros(0, np.intp)]).astype(np.int64))
        unique = np.unique(canon)
        unique = unique[np.isfinite(self.edges[unique, 0])]
        n_edges = self.edges.shape[1]
        value = self.edges[unique].ravel()
        order = np.argsort(value, kind="stable")
        self.event_value = value[order]
        self.event_slot = np.repeat(unique, n_edges)[order]
        self.event_edge = np.tile(np.arange(n_edges), len(unique))[order]

    def value_of(self, key: int) -> float:
        if self.mode == _UINT8:
            return key / 255.0
        if self.mode == _FLOAT32:
            return float(np.array([key], np.uint32).view(np.float32)[0])
        return float(np.array([key], np.uint64).view(np.float64)[0])

    def _arguments(self, target: _Sweep | _Part) -> tuple:
        return (self.mode, _LOW_BITS[self.mode], self.layout.payload_bits, self.cell_slots, self.all_slot,
                self.group_overall, self.group_slots, self.slot_cells, self.event_value, self.event_slot, self.fixed,
                target.state, target.at_or_below, target.slot_sums, target.snap_counts, target.snap_sums,
                target.cursor, target.best)

    def window(self, records: np.ndarray | None, starts: list[np.ndarray], bucket_lo: int, n_jobs: int = 1) -> None:
        """Sweep one window's buckets, after every earlier window: chunk ``c`` of ``records`` holds
        bucket ``bucket_lo + b`` at ``records[starts[c][b]:starts[c][b + 1]]``.

        With ``n_jobs > 1`` the buckets are cut into ranges of about equal size, swept on as many
        threads, each from the counts below its range (a counting pass on that thread), and their
        states combined."""
        if not starts:
            return
        starts = np.stack(starts)
        layout = self.layout
        ranges = _split(starts, n_jobs if len(records) >= _PARALLEL_SWEEP else 1)
        if len(ranges) == 1:
            voxel_passes.sweep_buckets(records, starts, 0, starts.shape[1] - 1, bucket_lo, *self._arguments(self))
            return
        member = layout.slot_matrix().astype(np.int64)
        parts = [_Part(self, self.state[:, :2]) for _ in ranges]

        def sweep(first: int, last: int, part: _Part) -> None:
            if first:  # the counts below the range: the window's earlier buckets, counted on this thread
                cells = voxel_passes.cell_counts(records, starts, 0, first, layout.payload_bits, layout.n_cells)
                part.state[:, :2] += np.stack([cells[:, 1] @ member, cells[:, 0] @ member], axis=1)
            voxel_passes.sweep_buckets(records, starts, first, last, bucket_lo, *self._arguments(part))

        pool = executor(len(ranges))
        for job in [pool.submit(sweep, first, last, part) for (first, last), part in zip(ranges, parts)]:
            job.result()
        self._combine(parts)

    def _combine(self, parts: list[_Part]) -> None:
        """Fold the states of consecutive bucket ranges into the carried state."""
        passed, events = int(self.cursor[1]), int(self.cursor[0])
        for part in parts:
            self.state[:, 2] += part.state[:, 2]
            for k, (first, last, _) in enumerate(self.layout.grouping_slots.tolist()):
                if part.best[k, 0] > self.best[k, 0]:  # strictly better: the earliest range wins ties
                    self.best[k, :2] = part.best[k, :2]
                    self.state[first:last, 3:] = part.state[first:last, 3:]
            reached = int(part.cursor[1])
            if reached > passed:  # the first range past a fixed threshold holds its counts
                self.at_or_below[passed:reached] = part.at_or_below[passed:reached]
                passed = reached
            reached = int(part.cursor[0])
            if reached > events:  # ECE edges passed in this range: its score sums start at the earlier ranges'
                slots = self.event_slot[events:reached]
                self.snap_counts[events:reached] = part.snap_counts[events:reached]
                self.snap_sums[events:reached] = part.snap_sums[events:reached] + self.slot_sums[:2, slots].T
                events = reached
            self.slot_sums = _add_compensated(self.slot_sums, part.slot_sums)
        self.cursor[:] = (events, passed)
        self.state[:, :2] = parts[-1].state[:, :2]

    def _bins(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per slot and ECE bin: samples, positives and the score sum, from the snapshots at its edges."""
        n_slots, n_edges = self.edges.shape
        below = np.zeros((n_slots, n_edges, 2), np.int64)  # at or below each edge; never passed: all
        below[:] = self.state[:, None, :2]
        score = np.zeros((n_slots, n_edges, 2))
        score[:] = self.slot_sums[:2].T[:, None, :]
        passed = int(self.cursor[0])
        where = self.event_slot[:passed], self.event_edge[:passed]
        below[where] = self.snap_counts[:passed]
        score[where] = self.snap_sums[:passed]
        canon = self.canon
        below, score = below[canon], score[canon]
        count = np.diff(below.sum(axis=2), axis=1)
        positives = np.diff(below[:, :, 0], axis=1)
        sums = np.diff(score[:, :, 0], axis=1) + np.diff(score[:, :, 1], axis=1)
        empty = ~np.isfinite(self.edges[:, 0])
        count[empty], positives[empty], sums[empty] = 0, 0, 0.0
        return count, positives, sums

    def report(self, metadata: dict[str, Any], notes: tuple[str, ...] = ()) -> FairnessReport:
        layout = self.layout
        n_voxels = int(self.totals[:, 0].sum())
        n_positive = int(self.totals[:, 1].sum())
        if n_voxels == 0:
            raise ValueError("no voxels to evaluate: every map (within its ROI) is empty; pass non-empty maps "
                             "or ROI masks")
        if n_positive in (0, n_voxels):
            raise ValueError(f"the true masks have only label {1 if n_positive else 0} ({n_voxels} voxels); "
                             "fairness metrics need both positive and negative voxels")
        positives, count = self.positives, self.count
        negatives = count - positives
        canon = self.canon
        state, at_or_below = self.state[canon], self.at_or_below[:, canon]
        bin_count, bin_positives, bin_sums = self._bins()
        ece = _one_grouping.calibration_error(bin_count, bin_positives.astype(np.float64), bin_sums)
        loss = self.slot_sums[2:].sum(axis=0)[canon]
        above = {}
        for f, value in enumerate(self.fixed.tolist()):  # thresholds the sweep never passed: every score below
            below = at_or_below[f] if f < self.cursor[1] else np.stack([positives, negatives], axis=1)
            above[value] = (positives - below[:, 0], negatives - below[:, 1])
        if self.threshold is None:
            thresholds = self.best[:, 1].copy()
            best = (positives - state[:, 3], negatives - state[:, 4])
        else:
            thresholds = np.full(len(layout.sizes), self.threshold)
            best = above[self.threshold]
        confusion = {"": above[0.5], _engine.BEST: best}
        member = layout.slot_matrix().astype(np.float64) if self.term_sums else None
        extra = {}
        for entry, per_image in self.term_sums:  # the images' sums added up per slot
            cells = np.bincount(layout.image_cells, weights=per_image, minlength=layout.n_cells)
            extra[entry.name] = np.where(count > 0, cells @ member, entry.empty)
        keys = {*_engine.all_keys(), *_metric_registry.optional_keys(self.metrics)}
        groupings = _engine.from_counts(layout.sizes, count, positives, negatives, thresholds, keys,
                                        u2=state[:, 2], loss_sums=loss, ece=ece, confusion=confusion, extra=extra)
        warnings: list[str] = list(notes)
        results = [attribute_result(attribute, grouping, n_voxels, warnings)
                   for attribute, grouping in zip(layout.attributes, groupings)]
        overall = {key: _python(values[-1]) for key, values in groupings[layout.complete].values.items()}
        metadata = {"n_samples": n_voxels, "n_images": layout.n_images, "score_dtype": _MODE_NAMES[self.mode],
                    **metadata}
        metadata.update(asked(self.threshold, metrics=self.metrics))
        return assemble(results, overall, warnings, metadata)[0]


class _Part:
    """The state of one range of buckets swept on its own thread, from the counts below it (its
    score and loss sums, and the score sums of its ECE snapshots, start at zero)."""

    def __init__(self, sweep: _Sweep, below: np.ndarray):
        self.state = sweep.state.copy()
        self.state[:, :2] = below
        self.state[:, 2] = 0
        self.at_or_below = sweep.at_or_below.copy()
        self.slot_sums = np.zeros_like(sweep.slot_sums)
        self.snap_counts = sweep.snap_counts.copy()
        self.snap_sums = sweep.snap_sums.copy()
        self.cursor = sweep.cursor.copy()
        self.best = sweep.best.copy()


def _add_compensated(sums: np.ndarray, other: np.ndarray) -> np.ndarray:
    """Rows (sum, compensation, sum, compensation, ...) of ``sums`` plus those of ``other``, compensated."""
    total = sums[0::2] + other[0::2]
    error = np.where(np.abs(sums[0::2]) >= np.abs(other[0::2]), (sums[0::2] - total) + other[0::2],
                     (other[0::2] - total) + sums[0::2])
    out = np.empty_like(sums)
    out[0::2] = total
    out[1::2] = sums[1::2] + other[1::2] + error
    return out


def _split(starts: np.ndarray, n_parts: int) -> list[tuple[int, int]]:
    """Consecutive bucket ranges holding about equal numbers of records."""
    sizes = (starts[:, 1:] - starts[:, :-1]).sum(axis=0)
    cumulative = np.cumsum(sizes)
    total = int(cumulative[-1]) if len(cumulative) else 0
    cuts = [0]
    for j in range(1, n_parts):
        cut = int(np.searchsorted(cumulative, total * j / n_parts)) + 1
        if cuts[-1] < cut < len(sizes):
            cuts.append(cut)
    cuts.append(len(sizes))
    return list(zip(cuts[:-1], cuts[1:]))


def _python(value: Any) -> Any:
    return int(value) if isinstance(value, np.integer) else float(value)


# ---------------------------------------------------------------------------------------------
# Sources of maps
# ---------------------------------------------------------------------------------------------

class _Source:
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
        self.maps = _stack_or_list(score_maps, "score_maps")
        self.masks = _stack_or_list(true_masks, "true_masks")
        self.length = len(self.maps)
        if len(self.masks) != self.length:
            raise ValueError(f"score_maps has {self.length} maps but true_masks has {len(self.masks)}; pass one "
                             "mask per map")

    one_shot = False

    def items(self) -> Iterable[tuple[int, Any, Any, Any]]:
        rois = None if self.roi is None else _stack_or_list(self.roi, "roi_masks")
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


def _stack_or_list(values: Any, name: str) -> Any:
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


def _run_all(source: _Source, n_images: int, work: Callable[[int, Any, Any, Any], None], n_jobs: int,
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


def _add(accumulator: VoxelAccumulator, source: _Source, n_images: int, n_jobs: int, progress: Any) -> None:
    """Every map of ``source`` into ``accumulator``: in-memory maps in two passes straight into the
    buckets, others read once and staged."""
    if source.known_voxels() is None:
        _run_all(source, n_images, lambda i, s, t, r: accumulator.add(s, t, i, r), n_jobs, progress)
        return
    bar = Progress(source.length, "reading maps", bool(progress), "map")  # a bar only when asked
    try:
        accumulator._add_all(list(source.items()), n_jobs, lambda: bar.update(1))
    finally:
        bar.close()


def evaluate_voxels(score_maps: Any, true_masks: Any, sensitive_features: Any, *, roi_masks: Any = None,
                    bins: _groups.Bins | None = None, intersectional: bool = False, threshold: float | None = None,
                    max_memory: Any = None, n_jobs: int | None = None, progress: Any = None,
                    metrics: Sequence[str] | None = None) -> FairnessReport:
    """Voxel-level fairness: :func:`fairmedfm_fast.evaluate` on every voxel of every map, exactly.

    Parameters
    ----------
    score_maps : stacked array (n_images, ...), list of arrays or file paths (``.npy``, ``.nii.gz``, ...),
        or, with ``true_masks=None``, an iterable of ``(score_map, true_mask)`` pairs (or a callable
        returning a fresh one: windows re-read it)
        Probabilities within [0, 1] (float32, float64 or float16), or uint8 maps whose value ``v``
        means ``v / 255``.
    true_masks : like ``score_maps``; a voxel is positive where its mask is nonzero
    sensitive_features : DataFrame, dict, Series or array-like with one row per image
    roi_masks : like ``true_masks``, optional; only voxels where the ROI is nonzero count
    bins, intersectional, threshold
        As in :func:`fairmedfm_fast.evaluate` (quantile ``bins`` are quantiles over images).
    max_memory : int or str, optional
        Memory for the voxel records (4 bytes a voxel; 8 for float64 maps), e.g. ``"2GB"``; default
        half of the available memory. When the records do not fit, the score range is cut into
        windows and the maps are read once to count and once per window.
    n_jobs : int, optional
        Threads that read and stage maps (default: all cores).
    progress : bool, optional
        Show a progress bar per read of the maps (needs tqdm).
    metrics : list of str, optional
        Opt-in metrics beside fairmedfm's, as in :func:`fairmedfm_fast.evaluate`: ``"brier"``,
        ``"selection_rate"``, ``"fpr"``, ``"fnr"`` and registered metrics whose sums the bucket
        sweep makes (the confusion counts, or a per-sample term, added up per image as each map
        is read); not ``"ap"`` (its precision sums walk the voxels from the top score down).

    Returns
    -------
    FairnessReport
        As :func:`fairmedfm_fast.evaluate`'s, with voxel counts in ``n`` (``metadata`` has
        ``n_images`` and ``windows``). See ``docs/voxels.md``.
    """
    source = _Source(score_maps, true_masks, roi_masks)
    budget = parse_memory(max_memory)
    jobs = resolve_n_jobs(n_jobs)
    known = source.known_voxels()
    # Maps in memory go straight into their buckets; others are staged per thread, in stages sized
    # to the budget.
    stage = 0 if known is not None else _stage_records(budget, jobs)
    accumulator = VoxelAccumulator(sensitive_features, bins=bins, intersectional=intersectional,
                                   threshold=threshold, n_jobs=jobs, metrics=metrics, _capacity=known or 0,
                                   _stage_records=stage)
    n_images = accumulator.n_images
    if source.length is not None and source.length != n_images:
        raise ValueError(f"score_maps has {source.length} maps but sensitive_features has {n_images} rows; pass one "
                         "row of attributes per image")
    if source.one_shot or (known is not None and known <= _window_records(budget, jobs, source.record_bytes(), False)):
        _add(accumulator, source, n_images, jobs, progress)
        sweep = _Sweep(accumulator._layout, _mode_of(accumulator), accumulator.totals, accumulator.threshold,
                       accumulator._optional())
        sweep.window(*accumulator._records(), 0, jobs)
        return sweep.report({"windows": 1})
    # Count the voxels per bucket first, then read the maps once per window of buckets.
    histograms: dict[int, np.ndarray] = {}
    modes: dict[int, int] = {}
    lock = threading.Lock()

    def count(i: int, score_map: Any, true_mask: Any, roi: Any) -> None:
        scores = _mask_files.load_mask(score_map, f"score_map of image {i}")
        bits, mode = _score_bits(scores, f"score_map of image {i}")
        roi_bytes = np.empty(0, np.uint8)
        if roi is not None:
            roi_bytes = _nonzero_bytes(_mask_files.load_mask(roi, f"roi_mask of image {i}"), f"roi_mask of image {i}")
            if roi_bytes.size != bits.size:
                raise ValueError(f"image {i}: roi mask has {roi_bytes.size} voxels but the score map has {bits.size}; "
                                 "pass an ROI of the map's shape")
        key = threading.get_ident()
        with lock:
            modes[i] = mode
            histogram = histograms.get(key)
            if histogram is None:
                histogram = histograms[key] = np.zeros(_N_BUCKETS[mode], np.int64)
        if len(histogram) != _N_BUCKETS[mode]:
            raise ValueError(f"score_map of image {i} has dtype {scores.dtype}, unlike earlier maps; pass every "
                             "map with one dtype (e.g. all float32)")
        voxel_passes.count_buckets(bits, roi_bytes, mode, histogram)
        if accumulator._terms:  # the opt-in metrics' per-image sums, on this first read
            truth = _mask_files.load_mask(true_mask, f"true_mask of image {i}")
            if truth.size != bits.size:
                raise ValueError(f"image {i}: score map shape {scores.shape} differs from true mask shape "
                                 f"{truth.shape}; pass a mask of the map's shape")
            truth = _nonzero_bytes(truth, f"true_mask of image {i}")
            accumulator.image_sums[i] = _image_term_sums(accumulator._terms, bits, mode, truth, roi_bytes)

    _run_all(source, n_images, count, jobs, progress)
    mode = next(iter(modes.values()), _FLOAT32)
    histogram = sum(histograms.values()) if histograms else np.zeros(_N_BUCKETS[mode], np.int64)
    record_bytes = 4 if _LOW_BITS[mode] + accumulator._layout.payload_bits <= 32 else 8
    streamed = known is None
    capacity = _window_records(budget, jobs, record_bytes, streamed)
    windows = _plan_windows(histogram, max(1, capacity))
    notes = ()
    if len(windows) > _MANY_WINDOWS:  # slow: say so, with the budget that reads the maps a few times
        notes = (_budget_note(max_memory, capacity, histogram, jobs, record_bytes, streamed, len(windows)),)
    sweep = None
    arena = None
    largest = max(int(histogram[lo:hi].sum()) for lo, hi in windows)
    for lo, hi in windows:
        part = VoxelAccumulator(sensitive_features, bins=bins, intersectional=intersectional, threshold=threshold,
                                n_jobs=jobs, metrics=metrics, _window=(lo, hi), _capacity=largest, _reuse=arena,
                                _stage_records=stage, _terms=False)
        _add(part, source, n_images, jobs, progress)
        arena = part._arena
        if sweep is None:
            sweep = _Sweep(part._layout, _mode_of(part), part.totals, part.threshold, accumulator._optional())
        sweep.window(*part._records(), lo, jobs)
    for note in notes:
        _warnings.warn(note, UserWarning, stacklevel=2)
    return sweep.report({"windows": len(windows)}, notes)


def _budget_note(max_memory: Any, capacity: int, histogram: np.ndarray, jobs: int, record_bytes: int,
                 streamed: bool, n_windows: int) -> str:
    """The warning for a budget that cut the score range into many windows, with the smallest budget
    whose windows hold every bucket and a quarter of the records (at most 9 windows), and the budget
    of a single window."""
    largest, total = int(histogram.max(initial=0)), int(histogram.sum())

    def smallest_budget(records: int) -> int:
        budget = 1
        while _window_records(budget, jobs, record_bytes, streamed) < records:
            budget = max(budget + 1, (records * record_bytes + _staging(budget, jobs, streamed)) * 10 // 9)
        return budget

    def text(budget: int) -> str:
        return f"'{-(-budget // (1 << 20))}MB'"

    few, one = text(smallest_budget(max(largest, -(-total // 4)))), text(smallest_budget(total))
    bucket = (f"; the largest score bucket ({largest:,} records) does not fit in one, which no window can split"
              if capacity < largest else "")
    fix = (f"max_memory={one} holds every record in one window" if few == one else
           f"max_memory={few} makes at most {_MANY_WINDOWS} windows, and {one} one")
    return (f"max_memory={_inputs.shown(max_memory)} holds {max(capacity, 0):,} voxel records per window{bucket}, "
            f"so the maps were read {n_windows + 1} times (once to count, then once per window of score buckets), "
            f"which is slow; {fix}")


def _stage_records(budget: int, jobs: int) -> int:
    """Records in each thread's stage for streamed maps under ``budget`` bytes."""
    return int(min(_STAGE, max(_MIN_STAGE, budget // (_STAGE_SHARE * jobs * _STAGE_BYTES))))


def _staging(budget: int, jobs: int, streamed: bool) -> int:
    """Bytes of every thread's stage (none for maps in memory, which are written straight into buckets)."""
    return jobs * _stage_records(budget, jobs) * _STAGE_BYTES if streamed else 0


def _window_records(budget: int, jobs: int, record_bytes: int, streamed: bool) -> int:
    """Voxel records a window holds: 90% of the budget (the rest for the sweep's buffers and states)
    less the stages."""
    return int(0.9 * budget - _staging(budget, jobs, streamed)) // record_bytes


def _mode_of(accumulator: VoxelAccumulator) -> int:
    return accumulator._mode if accumulator._mode is not None else _FLOAT32


def _plan_windows(histogram: np.ndarray, capacity: int) -> list[tuple[int, int]]:
    """Consecutive bucket ranges of at most ``capacity`` records each (a larger bucket alone)."""
    windows = []
    lo = 0
    total = 0
    for b, size in enumerate(histogram.tolist()):
        if total and total + size > capacity:
            windows.append((lo, b))
            lo, total = b, 0
        total += size
    windows.append((lo, len(histogram)))
    return windows
