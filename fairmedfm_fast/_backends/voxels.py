"""Voxel-level fairness of score maps: exact per-group AUC, best-F1, ECE and BCE in bounded memory.

:func:`evaluate_voxels` gives the report of :func:`fairmedfm_fast.evaluate` on every voxel of every
map (groups are per image) without flattening them into one array: records are staged per
score bucket (the high bits of the score's bit pattern), each bucket is sorted on its own and swept
in ascending order carrying the counts of the buckets before it. ``docs/voxels.md`` explains the
method and its exactness.
"""
from __future__ import annotations

import functools
import threading
import warnings as _warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .._engine import classification as _engine
from .._engine import voxels as voxel_passes
from .._inputs import arrays as _inputs
from .._inputs import groups as _groups
from .._inputs import mask_files as _mask_files
from .._registry import metrics as _metric_registry
from .._report.frame import FairnessReport
from .._util.threads import executor, resolve_n_jobs
from . import voxel_sources as _sources
from . import voxel_sweep as _sweep
from .checks import check_threshold

__all__ = ["VoxelAccumulator", "evaluate_voxels"]

_FLOAT32, _UINT8, _FLOAT64 = voxel_passes.FLOAT32, voxel_passes.UINT8, voxel_passes.FLOAT64
_LOW_BITS = voxel_passes.LOW_BITS
_N_BUCKETS = voxel_passes.N_BUCKETS
_MODE_NAMES = voxel_passes.MODE_NAMES
#: Records staged per thread before they are sorted into buckets: at most this many, at least
#: _MIN_STAGE, and all threads' stages together at most 1/_STAGE_SHARE of ``max_memory``.
_STAGE = 1 << 23
_MIN_STAGE = 1 << 16
_STAGE_SHARE = 8
#: Bytes a staged record takes at most: its bucket id (2) and the record (4, or 8 with float64 maps).
_STAGE_BYTES = 10
#: More windows than this (each one more read of the maps) get a warning naming a larger max_memory.
_MANY_WINDOWS = 10


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
        self._layout = _sweep.Layout(sensitive_features, bins, intersectional)
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
        self.totals[:, 2] = _sweep.NO_KEY
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
        sweep = _sweep.Sweep(self._layout, self._mode if self._mode is not None else _FLOAT32, self.totals,
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
    source = _sources.Source(score_maps, true_masks, roi_masks)
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
        _sources.add_maps(accumulator, source, n_images, jobs, progress)
        sweep = _sweep.Sweep(accumulator._layout, _mode_of(accumulator), accumulator.totals, accumulator.threshold,
                       accumulator._optional())
        sweep.window(*accumulator._records(), 0, jobs)
        return sweep.report({"windows": 1})
    # Count the voxels per bucket first, then read the maps once per window of buckets.
    histograms: dict[int, np.ndarray] = {}
    modes: dict[int, int] = {}
    lock = threading.Lock()

    _sources.run_all(source, n_images, functools.partial(_count_map, accumulator, histograms, modes, lock), jobs,
                     progress)
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
        _sources.add_maps(part, source, n_images, jobs, progress)
        arena = part._arena
        if sweep is None:
            sweep = _sweep.Sweep(part._layout, _mode_of(part), part.totals, part.threshold, accumulator._optional())
        sweep.window(*part._records(), lo, jobs)
    for note in notes:
        _warnings.warn(note, UserWarning, stacklevel=2)
    return sweep.report({"windows": len(windows)}, notes)


def _count_map(accumulator: VoxelAccumulator, histograms: dict[int, np.ndarray], modes: dict[int, int],
               lock: threading.Lock, i: int, score_map: Any, true_mask: Any, roi: Any) -> None:
    """The first read of map ``i`` (maps read once per window): its voxels per bucket into this thread's
    histogram, its mode, and the opt-in metrics' per-image sums."""
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
