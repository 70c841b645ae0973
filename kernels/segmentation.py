"""Segmentation kernels: the voxel counts behind Dice, with the foreground rule fused in.

Dice needs three numbers per (prediction, truth) pair: the foreground voxels of the prediction
``|P|``, of the truth ``|T|``, and of both ``|P and T|``. The kernels count them in one pass over
the two masks, deciding "foreground" voxel by voxel, so no boolean mask is ever materialised.

Every foreground rule of the API layer is a *closed interval* ``lo <= v <= hi`` in the mask's own
dtype:

- booleans (passed as their uint8 view) and "any value > 0" on integers: ``[1, max]``;
- ``v > 0`` on floats: ``[smallest positive subnormal, +inf]`` (NaN is never foreground);
- ``v == label``: ``[label, label]``, or an empty interval (``lo > hi``) when no value of the
  dtype equals the label;
- ``v >= threshold`` on floats: ``[threshold, +inf]``.

The interval form is branch-free, so LLVM vectorises the loop and a uint8 pair runs at memory
speed. A float prediction is only a probability map when all its values lie in [0, 1], which is
unknown until the whole mask has been read; :func:`probability_overlap_counts` therefore counts
under both candidate rules at once and the caller picks one afterwards.

Masks arrive flattened into one contiguous 1-D buffer per side, cut into *segments* by
``starts`` (segment ``s`` is ``starts[s]:starts[s + 1]``): the flat view of a stack of masks (equal
segments), many small masks copied end to end, one mask, or one chunk of a mask. Counts are int64
and exact; the counts of a mask's chunks add up to the mask's.
"""
import numpy as np

from ._jit import inline_kernel, kernel


@inline_kernel
def inside(v, low, high):
    """The interval rule: ``low <= v <= high``, as 0 or 1 without a branch (NaN is never inside)."""
    return (v >= low) & (v <= high)


@inline_kernel
def segment_pair(pred, true, starts, row):
    """Segment ``row`` of both sides: ``pred`` and ``true`` over ``starts[row]:starts[row + 1]``."""
    return pred[starts[row]:starts[row + 1]], true[starts[row]:starts[row + 1]]


@kernel
def overlap_counts(pred, true, starts, pred_low, pred_high, true_low, true_high, out):
    """Foreground counts of every segment pair under interval rules.

    Parameters
    ----------
    pred, true : contiguous arrays of shape (n_voxels,), any integer or float dtype (booleans
        as uint8). The two may differ in dtype.
    starts : int64 array of shape (n_segments + 1,), non-decreasing, within ``0 .. n_voxels``
    pred_low, pred_high, true_low, true_high : scalars of the matching array's dtype
        A voxel is foreground when ``low <= v <= high``.
    out : int64 array of shape (n_segments, 3), written
        ``|P|``, ``|T|`` and ``|P and T|`` of each segment.
    """
    for row in range(starts.shape[0] - 1):
        p, t = segment_pair(pred, true, starts, row)
        n_pred = 0
        n_true = 0
        n_both = 0
        for i in range(p.shape[0]):
            in_pred = inside(p[i], pred_low, pred_high)
            in_true = inside(t[i], true_low, true_high)
            n_pred += in_pred
            n_true += in_true
            n_both += in_pred & in_true
        out[row, 0] = n_pred
        out[row, 1] = n_true
        out[row, 2] = n_both


@kernel
def probability_overlap_counts(pred, true, starts, threshold, smallest_positive, true_low, true_high, out):
    """Counts of a float prediction under both the probability rule and the ``> 0`` rule.

    Parameters
    ----------
    pred : contiguous float32 or float64 array of shape (n_voxels,)
    true : contiguous array of shape (n_voxels,), any integer or float dtype
    starts : int64 array of shape (n_segments + 1,), as in :func:`overlap_counts`
    threshold : scalar of ``pred``'s dtype
        Probability rule: foreground when ``v >= threshold``.
    smallest_positive : scalar of ``pred``'s dtype
        The smallest positive value of the dtype, so that ``v >= smallest_positive`` is ``v > 0``.
    true_low, true_high : scalars of ``true``'s dtype, the truth's interval rule
    out : int64 array of shape (n_segments, 6), written
        Per segment: voxels within [0, 1] (NaN is not), ``|P|`` at the threshold, ``|P|`` for
        ``v > 0``, ``|T|``, ``|P and T|`` at the threshold, ``|P and T|`` for ``v > 0``. A mask
        is a probability map when the first count equals its number of voxels (and that is not 0).
    """
    zero = pred.dtype.type(0)
    one = pred.dtype.type(1)
    for row in range(starts.shape[0] - 1):
        p, t = segment_pair(pred, true, starts, row)
        n_unit = 0
        n_thresholded = 0
        n_positive = 0
        n_true = 0
        both_thresholded = 0
        both_positive = 0
        for i in range(p.shape[0]):
            v = p[i]
            in_unit = inside(v, zero, one)
            above = v >= threshold
            positive = v >= smallest_positive
            in_true = inside(t[i], true_low, true_high)
            n_unit += in_unit
            n_thresholded += above
            n_positive += positive
            n_true += in_true
            both_thresholded += above & in_true
            both_positive += positive & in_true
        out[row, 0] = n_unit
        out[row, 1] = n_thresholded
        out[row, 2] = n_positive
        out[row, 3] = n_true
        out[row, 4] = both_thresholded
        out[row, 5] = both_positive


@kernel
def value_range(values):
    """Smallest and largest value of a non-empty integer array of shape (n,), as int64."""
    low = values[0]
    high = values[0]
    for i in range(values.shape[0]):
        v = values[i]
        low = min(low, v)
        high = max(high, v)
    return np.int64(low), np.int64(high)


@kernel
def label_counts(pred, true, offset, n_bins):
    """Per-label voxel counts of two integer label maps, in one pass.

    Parameters
    ----------
    pred, true : integer arrays of shape (n,), C-contiguous (booleans as uint8)
    offset : int
        Label ``offset + b`` is counted in bin ``b``; every value of both maps must fall in
        ``offset .. offset + n_bins - 1``.
    n_bins : int

    Returns
    -------
    counts : int64 array of shape (3, n_bins)
        For each label: voxels of ``pred`` equal to it, of ``true`` equal to it, and voxels
        where both equal it (the diagonal of the label-pair histogram, the only part Dice needs).
    """
    counts = np.zeros((3, n_bins), np.int64)
    for i in range(pred.shape[0]):
        p = np.int64(pred[i]) - offset
        t = np.int64(true[i]) - offset
        counts[0, p] += 1
        counts[1, t] += 1
        if p == t:
            counts[2, p] += 1
    return counts
