"""Masks: per-sample Dice and per-label Dice, counted on a thread pool.

From whatever the user has (a list of arrays or tensors, a stacked array, file paths in a list or
a pandas Series) to the three voxel counts per sample that Dice needs. The counting itself is in
:mod:`fairmedfm_fast.kernels.segmentation`; reading mask files and the foreground rule (an interval
in the mask's own dtype) are :mod:`fairmedfm_fast._mask_files`. This module flattens each pair of
masks into views with the same element order, and spreads the work over a thread pool (the
kernels release the GIL): across samples, and across chunks of a single large volume.

Nothing is modified and no boolean mask is ever made. Masks are read where they are (flat views),
except: small masks (32 kB per pair or less) are copied end to end so that one kernel
call counts many of them; the rare dtypes the kernels do not take (float16, non-native byte order)
are converted; and when the two masks of a pair are laid out differently (one C-ordered, one
Fortran-ordered), one is copied into the other's order.
"""
from __future__ import annotations

import math
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._util.progress import Progress
from .._util.threads import executor, resolve_n_jobs
from .arrays import preview, shown, to_numpy
from .mask_files import REAL_TYPES, Rule, foreground_rule, is_path, kernel_array, load_mask, numpy_foreground

# Work is cut into pieces of at least this many bytes before it is given to threads.
_MIN_TASK_BYTES = 1 << 22
# Pairs of masks smaller than this are copied end to end (at most _MAX_GROUP per copy), so that
# one kernel call counts many; larger ones are counted where they are.
_SMALL_PAIR_BYTES = 1 << 15
_MAX_GROUP = 256
# At most this many bytes of such copies exist at a time.
_COPY_BUDGET = 1 << 28


# ---------------------------------------------------------------------------------------------
# One mask per sample
# ---------------------------------------------------------------------------------------------

class ShapeMismatch(ValueError):
    """The two masks of a sample have different shapes."""


class Masks:
    """One mask per sample: either a stacked numeric array or a list of items (arrays or paths)."""

    def __init__(self, masks: Any, name: str):
        import pandas as pd

        if masks is None:
            raise ValueError(f"{name} is missing: pass one mask per sample (a list, a stacked array or a "
                             "column of file paths)")
        if is_path(masks):
            raise ValueError(f"{name} is the single path {str(masks)!r}; pass one mask per sample: a list, "
                             "a stacked array or a column of file paths")
        self.name = name
        self.stack: np.ndarray | None = None
        self.items: Sequence[Any] | None = None
        if isinstance(masks, pd.Series):
            self.items = list(masks)
        elif isinstance(masks, (list, tuple)):
            self.items = list(masks)
        else:
            array = to_numpy(masks, name)
            if array.dtype.kind in "biuf" and array.ndim >= 2:
                self.stack = array
            elif array.dtype.kind in "biuf":
                raise ValueError(f"{name} is a 1-D array of {len(array)} numbers, not one mask per sample; "
                                 "pass a (n_samples, ...) array, a list of arrays, or file paths")
            else:
                self.items = array  # paths, objects, or scalars (which fail per sample)

    def __len__(self) -> int:
        return len(self.stack) if self.stack is not None else len(self.items)

    def small_stack(self) -> np.ndarray | None:
        """The masks as one stacked array: the given one, or a copy of a list of small NumPy masks
        of one shape and dtype (one copy instead of a Python step per sample); else None."""
        if self.stack is not None or self.items is None or len(self.items) == 0:
            return self.stack
        first = self.items[0]
        if (type(first) is not np.ndarray or first.dtype.kind not in "biuf" or first.ndim == 0
                or first.nbytes * 2 > _SMALL_PAIR_BYTES or first.nbytes * len(self.items) * 2 > _COPY_BUDGET):
            return None
        shape, dtype = first.shape, first.dtype
        if all(type(item) is np.ndarray and item.shape == shape and item.dtype == dtype for item in self.items):
            return np.stack(self.items)
        return None

    def has_paths(self) -> bool:
        return self.items is not None and any(type(item) is not np.ndarray and is_path(item)
                                              for item in self.items)

    def load(self, i: int) -> np.ndarray:
        item = self.stack[i] if self.stack is not None else self.items[i]
        if type(item) is np.ndarray and item.ndim:
            return item.squeeze() if 1 in item.shape else item
        return load_mask(item, f"{self.name}[{i}]")


# ---------------------------------------------------------------------------------------------
# Flattening a pair in a common element order
# ---------------------------------------------------------------------------------------------

def _c_order_axes(array: np.ndarray, first: int) -> list[int]:
    """Axes from ``first`` on, by decreasing stride, i.e. the order that makes ``array`` C-ordered."""
    axes = list(range(first, array.ndim))
    return sorted(axes, key=lambda axis: -abs(array.strides[axis]))


def flat_pair(pred: np.ndarray, true: np.ndarray, keep_first: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Both arrays as contiguous 1-D arrays with the same element order.

    Views whenever both arrays are contiguous in the same axis order (C, Fortran, or any other);
    otherwise the array that is not is copied into the other's order. With ``keep_first``, axis 0
    (the samples of a stack) stays outermost, so that each sample is one contiguous stretch.
    """
    first = 1 if keep_first else 0
    if not (pred.flags.c_contiguous and true.flags.c_contiguous):
        for reference in (pred, true):
            axes = list(range(first)) + _c_order_axes(reference, first)
            p, t = pred.transpose(axes), true.transpose(axes)
            if p.flags.c_contiguous or t.flags.c_contiguous:
                break
        pred, true = np.ascontiguousarray(p), np.ascontiguousarray(t)
    return pred.reshape(-1), true.reshape(-1)


# ---------------------------------------------------------------------------------------------
# Counting
# ---------------------------------------------------------------------------------------------

_KERNELS = None


def _kernels():
    """The kernel module, imported (and numba with it) on first use."""
    global _KERNELS
    if _KERNELS is None:
        from ..kernels import segmentation

        _KERNELS = segmentation
    return _KERNELS


class _Block:
    """Masks of some samples that share dtypes and rules, flat and end to end, for one kernel.

    ``pred`` and ``true`` are contiguous 1-D arrays; sample ``samples[s]`` is the segment
    ``starts[s]:starts[s + 1]`` of both. Kernel counts accumulate in ``counts``.
    """

    def __init__(self, samples: np.ndarray, pred: np.ndarray, true: np.ndarray, starts: np.ndarray,
                 pred_rule: Rule, true_rule: Rule):
        self.samples = samples
        self.pred = pred
        self.true = true
        self.starts = starts
        self.pred_rule = pred_rule
        self.true_rule = true_rule
        width = 6 if pred_rule.kind == "probability" else 3
        self.counts = np.zeros((len(starts) - 1, width), np.int64)

    @classmethod
    def single(cls, sample: int, pred: np.ndarray, true: np.ndarray, rules: tuple[Rule, Rule]) -> _Block:
        return cls(np.array([sample]), pred, true, np.array([0, pred.size], np.int64), *rules)

    @property
    def bytes_per_voxel(self) -> int:
        return self.pred.itemsize + self.true.itemsize

    def count(self, first: int, last: int, start: int | None = None, stop: int | None = None) -> np.ndarray:
        """Counts of segments ``first:last``, or of voxels ``start:stop`` of segment ``first``
        (a partial count of one large mask)."""
        pred, true = self.pred, self.true
        if start is None:
            starts = self.starts[first:last + 1]
        else:
            pred, true = pred[start:stop], true[start:stop]
            starts = np.array([0, stop - start], np.int64)
        out = np.zeros((len(starts) - 1, self.counts.shape[1]), np.int64)
        p, t = self.pred_rule, self.true_rule
        if p.kind == "probability":
            _kernels().probability_overlap_counts(pred, true, starts, p.low, p.high, t.low, t.high, out)
        else:
            _kernels().overlap_counts(pred, true, starts, p.low, p.high, t.low, t.high, out)
        return out

    def result(self) -> np.ndarray:
        """``|P|, |T|, |P and T|`` per segment."""
        c = self.counts
        if self.pred_rule.kind != "probability":
            return c
        sizes = np.diff(self.starts)
        probability = (c[:, 0] == sizes) & (sizes > 0)
        return np.where(probability[:, None], c[:, [1, 3, 4]], c[:, [2, 3, 5]])


# A piece of work: (block, first segment, last segment, first voxel, last voxel); voxels only
# when one large segment is cut into chunks.
_Piece = tuple  # (_Block, int, int, int | None, int | None)


def _pieces(block: _Block, target: int) -> list[tuple[_Piece, int]]:
    """The block cut into pieces of about ``target`` bytes, with their sizes."""
    sizes = np.diff(block.starts) * block.bytes_per_voxel
    cumulative = np.concatenate(([0], np.cumsum(sizes)))
    large = np.flatnonzero(sizes > target)
    pieces: list[tuple[_Piece, int]] = []
    segment, n = 0, len(sizes)
    while segment < n:
        if sizes[segment] > target:  # one large mask: contiguous chunks of its voxels
            first = int(block.starts[segment])
            edges = np.linspace(first, int(block.starts[segment + 1]), -(-int(sizes[segment]) // target) + 1)
            edges = edges.astype(np.int64)
            pieces.extend(((block, segment, segment + 1, int(a), int(b)), int(b - a) * block.bytes_per_voxel)
                          for a, b in zip(edges[:-1], edges[1:]))
            segment += 1
            continue
        end = int(np.searchsorted(cumulative, cumulative[segment] + target, side="left"))
        following = large[np.searchsorted(large, segment):]
        end = min(max(end, segment + 1), n, int(following[0]) if len(following) else n)
        pieces.append(((block, segment, end, None, None), int(cumulative[end] - cumulative[segment])))
        segment = end
    return pieces


def _batches(blocks: list[_Block], n_jobs: int) -> list[list[_Piece]]:
    """The work cut into batches of similar size, about four per thread, none tiny: a stack by
    samples, one large volume into chunks of voxels, runs of small masks together."""
    total = sum(block.pred.nbytes + block.true.nbytes for block in blocks)
    target = max(_MIN_TASK_BYTES, total // (4 * n_jobs) + 1)
    batches: list[list[_Piece]] = []
    current: list[_Piece] = []
    size = 0
    for block in blocks:
        for piece, nbytes in _pieces(block, target):
            current.append(piece)
            size += nbytes
            if size >= target:
                batches.append(current)
                current, size = [], 0
    if current:
        batches.append(current)
    return batches


def _run_batch(batch: list[_Piece]) -> list[np.ndarray]:
    return [block.count(first, last, start, stop) for block, first, last, start, stop in batch]


def count_blocks(blocks: list[_Block], n_jobs: int) -> None:
    """Fill every block's counts, in parallel when there is enough work.

    Called with ``n_jobs > 1`` only from the caller's thread, never from a task of the shared pool.
    """
    batches = _batches(blocks, n_jobs)
    if n_jobs == 1 or len(batches) <= 1:
        results = [_run_batch(batch) for batch in batches]
    else:
        pool = executor(min(n_jobs, len(batches)))
        futures = [pool.submit(_run_batch, batch) for batch in batches]
        wait(futures)  # all of them, even when one fails
        results = [future.result() for future in futures]
    for batch, counts in zip(batches, results):
        for (block, first, last, _, _), piece_counts in zip(batch, counts):
            block.counts[first:last] += piece_counts


@dataclass
class _Pair:
    """One sample's masks, checked: flat arrays and their rules, or counts made with NumPy."""

    pred: np.ndarray | None = None
    true: np.ndarray | None = None
    rules: tuple[Rule, Rule] | None = None
    key: tuple | None = None
    counts: tuple[int, int, int] | None = None


def _check_shapes(i: int, pred: np.ndarray, true: np.ndarray) -> None:
    if pred.shape != true.shape:
        raise ShapeMismatch(f"sample {i}: the predicted mask has shape {pred.shape} but the ground-truth mask has "
                         f"shape {true.shape}; each pair of masks must have the same shape (after dropping "
                         "axes of length 1)")


def _rules(pred_dtype: np.dtype, true_dtype: np.dtype, kernel_pred: np.dtype, kernel_true: np.dtype,
           label: Any, threshold: Any, cache: dict | None) -> tuple[Rule | None, Rule | None]:
    key = (pred_dtype, true_dtype)
    if cache is not None and key in cache:
        return cache[key]
    rules = (foreground_rule(pred_dtype, kernel_pred, label, threshold, prediction=True),
             foreground_rule(true_dtype, kernel_true, label, threshold, prediction=False))
    if cache is not None:
        cache[key] = rules
    return rules


def prepare_pair(i: int, pred: np.ndarray, true: np.ndarray, label: Any, threshold: Any,
                 cache: dict | None = None) -> _Pair:
    """Check one sample's masks and set them up for counting (``i`` is its index, for errors;
    ``cache`` keeps the rules of dtype pairs already seen)."""
    kp, kt = kernel_array(pred), kernel_array(true)
    p_rule = t_rule = None
    if kp is not None and kt is not None:
        p_rule, t_rule = _rules(pred.dtype, true.dtype, kp.dtype, kt.dtype, label, threshold, cache)
    if p_rule is None or t_rule is None:
        p = numpy_foreground(pred, label, threshold, prediction=True)
        t = numpy_foreground(true, label, threshold, prediction=False)
        _check_shapes(i, p, t)
        return _Pair(counts=(int(np.count_nonzero(p)), int(np.count_nonzero(t)),
                             int(np.count_nonzero(np.logical_and(p, t)))))
    _check_shapes(i, pred, true)
    flat_p, flat_t = flat_pair(kp, kt)
    return _Pair(flat_p, flat_t, (p_rule, t_rule), (pred.dtype, true.dtype))


def _block_waves(pairs: list[_Pair]):
    """Kernel blocks for checked pairs, in waves: a large mask on its own (no copy), small masks
    of the same dtypes copied end to end so that one kernel call counts many, and never more than
    ``_COPY_BUDGET`` bytes of copies in one wave."""
    wave, groups = [], {}
    for i, pair in enumerate(pairs):
        if pair.pred is None:
            continue
        if pair.pred.nbytes + pair.true.nbytes >= _SMALL_PAIR_BYTES:
            wave.append(_Block.single(i, pair.pred, pair.true, pair.rules))
        else:
            groups.setdefault(pair.key, []).append(i)
    copied = 0
    for members in groups.values():
        for run in range(0, len(members), _MAX_GROUP):
            chosen = members[run:run + _MAX_GROUP]
            preds = [pairs[i].pred for i in chosen]
            sizes = np.fromiter((p.size for p in preds), np.int64, len(preds))
            block = _Block(np.array(chosen), np.concatenate(preds), np.concatenate([pairs[i].true for i in chosen]),
                           np.concatenate(([0], np.cumsum(sizes))), *pairs[chosen[0]].rules)
            wave.append(block)
            copied += block.pred.nbytes + block.true.nbytes
            if copied >= _COPY_BUDGET:
                yield wave
                wave, copied = [], 0
    if wave:
        yield wave


def _stacked_block(preds: np.ndarray, trues: np.ndarray, label: Any, threshold: Any) -> _Block | None:
    """The whole stack as one block (flat views), or None when it has to go sample by sample."""
    kp, kt = kernel_array(preds), kernel_array(trues)
    if kp is None or kt is None:
        return None
    p_rule, t_rule = _rules(preds.dtype, trues.dtype, kp.dtype, kt.dtype, label, threshold, None)
    if p_rule is None or t_rule is None:
        return None

    def squeezed(array: np.ndarray) -> np.ndarray:
        return array.reshape((len(array),) + tuple(n for n in array.shape[1:] if n != 1))

    kp, kt = squeezed(kp), squeezed(kt)
    n = len(kp)
    if n:
        _check_shapes(0, kp[0], kt[0])
    flat_p, flat_t = flat_pair(kp, kt, keep_first=True)
    starts = np.arange(n + 1, dtype=np.int64) * (flat_p.size // n if n else 0)
    return _Block(np.arange(n), flat_p, flat_t, starts, p_rule, t_rule)


def overlap_counts(pred_masks: Any, true_masks: Any, *, label: Any = None, mask_threshold: Any = 0.5,
                   n_jobs: Any = None, progress: bool | None = None) -> np.ndarray:
    """``|P|, |T|, |P and T|`` per sample, int64 array of shape (n_samples, 3); ``progress``: a bar
    of the files read (see :mod:`fairmedfm_fast._progress`)."""
    preds, trues = Masks(pred_masks, "pred_masks"), Masks(true_masks, "true_masks")
    if len(preds) != len(trues):
        raise ValueError(f"pred_masks has {len(preds)} masks but true_masks has {len(trues)}; pass one "
                         "predicted and one ground-truth mask per sample")
    n_jobs = resolve_n_jobs(n_jobs)
    n = len(preds)
    stacked_p = preds.small_stack()
    stacked_t = trues.small_stack() if stacked_p is not None else None
    if stacked_p is not None and stacked_t is not None:
        block = _stacked_block(stacked_p, stacked_t, label, mask_threshold)
        if block is not None:
            count_blocks([block], n_jobs)
            return block.result()
    counts = np.zeros((n, 3), np.int64)
    cache: dict = {}

    def prepare(i: int) -> _Pair:
        try:
            return prepare_pair(i, preds.load(i), trues.load(i), label, mask_threshold, cache)
        except ShapeMismatch as error:
            files = [f"{m.name}[{i}] = {m.items[i]}" for m in (preds, trues) if m.items is not None and is_path(m.items[i])]
            raise ShapeMismatch(f"{error} ({'; '.join(files)})" if files else str(error)) from None

    from_files = preds.has_paths() or trues.has_paths()
    if not from_files or n < n_jobs:
        # In memory (or a few files, read in parallel): check every pair, then count in parallel.
        if from_files and n > 1:
            pairs = _in_order(prepare, n, n_jobs, Progress(n, "reading masks", False))
        else:
            pairs = [prepare(i) for i in range(n)]
        for i, pair in enumerate(pairs):
            if pair.counts is not None:
                counts[i] = pair.counts
        for blocks in _block_waves(pairs):
            count_blocks(blocks, n_jobs)
            for block in blocks:
                counts[block.samples] = block.result()
        return counts

    # Many files: each thread reads a pair and counts it, so only n_jobs pairs are in memory.
    def read_and_count(i: int) -> np.ndarray:
        pair = prepare(i)
        if pair.counts is not None:
            return np.asarray(pair.counts, np.int64)
        block = _Block.single(i, pair.pred, pair.true, pair.rules)
        count_blocks([block], 1)
        return block.result()[0]

    for i, row in enumerate(_in_order(read_and_count, n, n_jobs, Progress(n, "reading masks", progress, "pair"))):
        counts[i] = row
    return counts


def _in_order(function, n: int, n_jobs: int, progress: Progress) -> list[Any]:
    """``[function(i) for i in range(n)]`` on a thread pool; the error of the lowest failing ``i``
    is raised (as a loop would), and work not yet started is then cancelled."""
    results: list[Any] = [None] * n
    if n_jobs == 1:
        try:
            for i in range(n):
                results[i] = function(i)
                progress.update()
        finally:
            progress.close()
        return results
    failed = threading.Event()

    def guarded(i: int):
        if failed.is_set():
            return None
        try:
            return function(i)
        except BaseException:
            failed.set()
            raise

    pool = ThreadPoolExecutor(max_workers=max(1, min(n_jobs, n)))
    try:
        futures = [pool.submit(guarded, i) for i in range(n)]
        for i, future in enumerate(futures):
            error = future.exception()
            if error is not None:
                raise error
            results[i] = future.result()
            progress.update()
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
        progress.close()
    return results


def dice_from_counts(counts: np.ndarray, empty_score: Any) -> np.ndarray:
    """``2 |P and T| / (|P| + |T|)`` per row, ``empty_score`` where both masks are empty."""
    total = counts[:, 0] + counts[:, 1]
    empty = total == 0
    with np.errstate(divide="ignore", invalid="ignore"):
        scores = (2 * counts[:, 2]) / total
    if empty.any():
        scores[empty] = empty_score
    return scores


def check_empty_score(empty_score: Any) -> None:
    if not isinstance(empty_score, REAL_TYPES):
        raise ValueError(f"empty_score={shown(empty_score)} must be a number: the Dice given to a sample whose "
                         "predicted and ground-truth masks are both empty (1.0 or 0.0)")


def dice_scores(pred_masks: Any, true_masks: Any, *, label: Any = None, mask_threshold: Any = 0.5,
                empty_score: Any = 1.0, n_jobs: Any = None, progress: bool | None = None) -> np.ndarray:
    """Dice of every (prediction, truth) pair of masks, float64 array of shape (n_samples,).

    See :func:`fairmedfm_fast.segmentation.dice_scores` for the parameters.
    """
    check_empty_score(empty_score)
    counts = overlap_counts(pred_masks, true_masks, label=label, mask_threshold=mask_threshold, n_jobs=n_jobs,
                            progress=progress)
    return dice_from_counts(counts, empty_score)


def map_pairs(function, pred_masks: Any, true_masks: Any, n_jobs: Any = None,
              progress: bool | None = None) -> list[Any]:
    """``[function(i, pred_i, true_i, true_item_i) for every sample]`` on a thread pool, in order.

    Each thread reads one pair and hands it over (``true_item_i`` is what was given for the
    ground truth of sample ``i``: a path or an array); the error of the lowest failing sample is
    raised, and a progress bar appears as for Dice (see :mod:`fairmedfm_fast._progress`).
    """
    preds, trues = Masks(pred_masks, "pred_masks"), Masks(true_masks, "true_masks")
    if len(preds) != len(trues):
        raise ValueError(f"pred_masks has {len(preds)} masks but true_masks has {len(trues)}; pass one "
                         "predicted and one ground-truth mask per sample")
    n = len(preds)

    def one(i: int) -> Any:
        item = trues.stack[i] if trues.stack is not None else trues.items[i]
        return function(i, preds.load(i), trues.load(i), item)

    return _in_order(one, n, min(resolve_n_jobs(n_jobs), max(n, 1)), Progress(n, "reading masks", progress, "pair"))


def mask_notes(counts: np.ndarray, pred_masks: Any, true_masks: Any, label: Any, empty_score: Any,
               sample: int = 16) -> list[str]:
    """Warnings about Dice from masks that would otherwise pass unnoticed: a ``label`` found in no
    mask, pairs whose masks are both empty, and (without ``label``) masks with several labels,
    looked for in the first ``sample`` pairs."""
    notes = []
    n = len(counts)
    empty = int(np.count_nonzero(counts[:, 0] + counts[:, 1] == 0))
    if n and label is not None and empty == n:
        notes.append(f"label={shown(label)} occurs in no mask (predicted or ground truth), so every sample got "
                     f"empty_score={shown(empty_score)}; check the label (masks saved as images often use 255)")
    elif empty:
        notes.append(f"{empty} of {n} samples have an empty predicted and an empty ground-truth mask and got "
                     f"empty_score={shown(empty_score)}")
    if label is None:
        for masks, name in ((true_masks, "true_masks"), (pred_masks, "pred_masks")):
            found = _several_labels(Masks(masks, name), min(n, sample))
            if found:
                notes.append(f"{found}; without label= every non-zero value is foreground, so these labels were "
                             "merged into one: pass label= to evaluate one class")
                break
    return notes


def _several_labels(masks: Masks, limit: int) -> str | None:
    """``"true_masks[3] holds the labels [1, 2]"`` for the first of ``limit`` masks with more than one
    non-zero value (integers, or whole-number floats above 1), else None."""
    for i in range(limit):
        mask = masks.load(i)
        if mask.dtype.kind not in "iuf" or mask.size == 0:
            continue
        high = mask.max()
        if not high > 1 or (mask.dtype.kind == "f" and not float(high).is_integer()):
            continue
        if np.any((mask > 0) & (mask < high)):
            labels = np.unique(mask[mask > 0])
            return f"{masks.name}[{i}] holds the labels {preview(labels)}"
    return None


# ---------------------------------------------------------------------------------------------
# Dice of every label of a pair of label maps
# ---------------------------------------------------------------------------------------------

#: Integer label maps whose values span at most this many labels are counted in one histogram pass.
MAX_HISTOGRAM_BINS = 1 << 20


def _integral(label: Any) -> int | None:
    """``label`` as an int when it is a whole number (so that an integer can equal it), else None."""
    if isinstance(label, (bool, int, np.bool_, np.integer)):
        return int(label)
    if isinstance(label, (float, np.floating)) and math.isfinite(label) and float(label).is_integer():
        return int(label)
    return None


def _plain(value: Any) -> Any:
    return value.item() if isinstance(value, np.generic) else value


def dice_per_label(pred: Any, true: Any, labels: Any = None) -> dict[Any, float]:
    """Dice of each label of a pair of label maps; see :func:`fairmedfm_fast.dice_per_label`."""
    p = load_mask(pred, "pred")
    t = load_mask(true, "true")
    if p.shape != t.shape:
        raise ValueError(f"pred has shape {p.shape} but true has shape {t.shape}; the two label maps must have "
                         "the same shape (after dropping axes of length 1)")
    if labels is None:
        wanted = None
    elif isinstance(labels, (list, tuple)):
        wanted = list(labels)
    elif np.ndim(labels) == 0:  # one label
        wanted = [labels]
    else:
        wanted = to_numpy(labels, "labels").ravel().tolist()
    kp, kt = kernel_array(p), kernel_array(t)
    if (kp is not None and kt is not None and kp.dtype.kind in "iu" and kt.dtype.kind in "iu"
            and np.uint64 not in (kp.dtype, kt.dtype) and p.size):
        kernels = _kernels()
        flat_p, flat_t = flat_pair(kp, kt)
        low_p, high_p = kernels.value_range(flat_p)
        low_t, high_t = kernels.value_range(flat_t)
        low, high = min(low_p, low_t), max(high_p, high_t)
        if high - low < MAX_HISTOGRAM_BINS:
            # one pass: per label, voxels in pred, in true, and in both
            counts = kernels.label_counts(flat_p, flat_t, low, high - low + 1)
            if wanted is None:
                present = np.flatnonzero(counts[0] + counts[1])
                present = present[present + low != 0]
                return {int(b + low): _dice(counts[:, b]) for b in present}
            result = {}
            for label in wanted:
                value = _integral(label)
                inside = value is not None and low <= value <= high
                result[_plain(label)] = _dice(counts[:, value - low] if inside else np.zeros(3, np.int64))
            return result
    if wanted is None:
        values = np.union1d(_distinct(p), _distinct(t)).tolist()
        wanted = [v for v in values if v == v and v != 0]  # neither NaN nor background
    return {_plain(label): _label_dice(p, t, label) for label in wanted}


def _distinct(mask: np.ndarray) -> np.ndarray:
    values = np.unique(np.asarray(mask).ravel())
    return values.astype(np.float64) if values.dtype.kind in "biuf" else values


def _label_dice(pred: np.ndarray, true: np.ndarray, label: Any) -> float:
    """Dice of one label (``mask == label``), counted by the kernel where it can."""
    pair = prepare_pair(0, pred, true, label, 0.5)
    if pair.counts is not None:
        return _dice(np.asarray(pair.counts, np.int64))
    block = _Block.single(0, pair.pred, pair.true, pair.rules)
    count_blocks([block], 1)
    return _dice(block.result()[0])


def _dice(counts: np.ndarray) -> float:
    return float(dice_from_counts(np.asarray(counts, np.int64).reshape(1, 3), 1.0)[0])
