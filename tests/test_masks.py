"""Dice from masks: the fused count kernels, the foreground rule, mask files, threads, errors,
and dice_per_label. Per-sample Dice is compared with fairmedfm 0.4.2 (whose Dice from masks is
``fairmedfm._inputs.dice_scores``) and with the plain NumPy reference below."""
import os
import subprocess
import sys
import tempfile
import textwrap
import tracemalloc
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from fairmedfm import _inputs as oracle
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from fairmedfm_fast._inputs import mask_files as _mask_files
from fairmedfm_fast._inputs import masks as _masks
from fairmedfm_fast._util import threads as _threads
from fairmedfm_fast.kernels import segmentation as kernels
from fairmedfm_fast.segmentation import dice_per_label, dice_scores

# Subprocesses start outside the checkout, so that they import the installed package (kernels/ is
# installed as fairmedfm_fast.kernels) rather than the source folder from the working directory.
OUTSIDE_REPO = tempfile.gettempdir()


def reference_foreground(mask, label, threshold, prediction):
    """The foreground rule of SEMANTICS.md, spelled out."""
    mask = np.squeeze(np.asarray(mask))
    if label is not None:
        return mask == label
    if mask.dtype == bool:
        return mask
    if prediction and mask.dtype.kind == "f" and mask.size > 0 and np.all((mask >= 0) & (mask <= 1)):
        return mask >= threshold
    return mask > 0


def reference_dice(preds, trues, label=None, mask_threshold=0.5, empty_score=1.0):
    scores = []
    for pred, true in zip(preds, trues):
        p = reference_foreground(pred, label, mask_threshold, True)
        t = reference_foreground(true, label, mask_threshold, False)
        total = int(p.sum()) + int(t.sum())
        scores.append(empty_score if total == 0 else 2 * int((p & t).sum()) / total)
    return np.array(scores, dtype=np.float64)


def check(preds, trues, **options):
    """Same Dice as the oracle and the reference, bit for bit; returns it."""
    expected = oracle.dice_scores(preds, trues, **options)
    got = dice_scores(preds, trues, **options)
    assert got.dtype == np.float64
    np.testing.assert_array_equal(got, expected)
    listed_p = preds if isinstance(preds, (list, pd.Series)) else list(preds)
    listed_t = trues if isinstance(trues, (list, pd.Series)) else list(trues)
    if all(not isinstance(m, (str, Path)) for m in list(listed_p) + list(listed_t)):
        np.testing.assert_array_equal(got, reference_dice(listed_p, listed_t, **options))
    return got


rng = np.random.default_rng(20261130)


def binary(shape, p=0.3, dtype=np.uint8):
    return (rng.random(shape) < p).astype(dtype)


# ---------------------------------------------------------------------------------------------
# Against the oracle: dtypes, dimensions, rules
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("shape", [(6, 9, 11), (4, 7, 8, 5)], ids=["2d", "3d"])
@pytest.mark.parametrize("dtype", [bool, np.uint8, np.int16, np.int64, np.float32, np.float64])
def test_binary_masks_stacked_and_listed(shape, dtype):
    preds, trues = binary(shape, dtype=dtype), binary(shape, dtype=dtype)
    preds[0] = trues[0]  # a perfect sample
    check(preds, trues)
    check(list(preds), list(trues))
    check(tuple(preds), list(trues))


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
@pytest.mark.parametrize("threshold", [0.5, 0.3, 0.7, np.float64(0.7), 1, 0.0, float("nan")])
def test_probability_predictions(dtype, threshold):
    preds = rng.random((5, 12, 13)).astype(dtype)
    preds[1, 0, :4] = np.array([0.3, 0.7, 0.5, 0], dtype=dtype)  # values right at the thresholds
    preds[2] *= 3  # not within [0, 1]: > 0 instead
    preds[3, 0, 0] = np.nan  # NaN: not a probability map either
    preds[4] -= 0.5
    trues = binary((5, 12, 13))
    check(preds, trues, mask_threshold=threshold)
    check(list(preds), list(trues), mask_threshold=threshold)


def test_float32_threshold_compared_in_float32():
    # float32(0.7) < 0.7: NumPy compares a float32 mask with a Python float in float32 (NEP 50),
    # so the value float32(0.7) is foreground at threshold 0.7 but not at np.float64(0.7).
    value = np.float32(0.7)
    assert float(value) < 0.7
    preds = np.full((1, 4), value, np.float32)
    trues = np.ones((1, 4), np.uint8)
    assert check(preds, trues, mask_threshold=0.7)[0] == 1.0
    assert check(preds, trues, mask_threshold=np.float64(0.7))[0] == 0.0


def test_truth_is_never_a_probability_map():
    trues = np.array([[0.2, 0.6, 0.0, 1.0]])
    preds = np.array([[1, 1, 0, 0]], np.uint8)
    assert check(preds, trues)[0] == pytest.approx(2 * 2 / (2 + 3))


@pytest.mark.parametrize("label", [0, 1, 2, 3, 7, np.int64(2), 2.0, 2.5, -1, 300, True, np.float32(2)])
@pytest.mark.parametrize("dtype", [np.uint8, np.int32, np.int64, np.float32, bool])
def test_multiclass_label(label, dtype):
    preds = rng.integers(0, 4, (5, 10, 6)).astype(dtype)
    trues = rng.integers(0, 4, (5, 10, 6)).astype(dtype)
    check(preds, trues, label=label)
    check(list(preds), list(trues), label=label)


def test_float_label_compared_in_mask_dtype():
    masks = np.array([[np.float32(0.1), 0, 0.2]], np.float32)
    assert check(masks, masks, label=0.1)[0] == 1.0  # float32(0.1) == 0.1 for NumPy
    assert check(masks, masks, label=np.float64(0.1), empty_score=0.0)[0] == 0.0


@pytest.mark.parametrize("empty_score", [1.0, 0.0, 0.25, np.nan])
def test_both_empty(empty_score):
    preds = np.zeros((3, 5, 5), np.uint8)
    trues = np.zeros((3, 5, 5), np.uint8)
    trues[2, 1, 1] = 1
    got = check(preds, trues, empty_score=empty_score)
    assert got[2] == 0.0
    probability = np.zeros((2, 4, 4), np.float32)
    check(probability, np.zeros((2, 4, 4), bool), empty_score=empty_score)
    check([np.zeros((0,)), np.zeros((0, 3))], [np.zeros((0,)), np.zeros((0, 3))], empty_score=empty_score)


def test_no_samples():
    for preds, trues in [(np.zeros((0, 3, 3)), np.zeros((0, 3, 3))), ([], []), ((), [])]:
        got = check(preds, trues)
        assert got.shape == (0,)


def test_mixed_dtypes_and_shapes_in_lists():
    preds = [binary((8, 8), dtype=bool), rng.random((3, 4, 5)), rng.integers(0, 3, (7,)),
             rng.random((1, 6, 6)).astype(np.float32), binary((2, 2), dtype=np.int8)]
    trues = [binary((8, 8)), binary((3, 4, 5), dtype=np.float64), binary((7,), dtype=bool),
             binary((6, 6, 1)), binary((2, 2), dtype=np.uint16)]
    check(preds, trues)


def test_length_one_axes_are_dropped():
    check(binary((4, 1, 6, 7)), binary((4, 6, 7)))
    check(binary((3, 6, 7)), binary((3, 6, 1, 7, 1)))
    check([binary((1, 5, 5))], [binary((5, 5, 1))])


@pytest.mark.parametrize("layout", ["fortran", "mixed", "strided", "reversed", "transposed"])
def test_memory_layouts(layout):
    p = rng.random((3, 14, 9, 6)).astype(np.float32)
    t = binary((3, 14, 9, 6), dtype=bool)
    if layout == "fortran":
        p, t = np.asfortranarray(p), np.asfortranarray(t)
    elif layout == "mixed":
        p = np.asfortranarray(p)
    elif layout == "strided":
        p, t = p[:, ::2, :, ::3], t[:, ::2, :, ::3]
    elif layout == "reversed":
        p, t = p[:, ::-1], t[:, :, ::-1]
    else:
        p, t = p.transpose(0, 3, 1, 2), t.transpose(0, 3, 1, 2)
    check(p, t)
    check(list(p), list(t))
    check([np.asfortranarray(x) for x in p], list(t))


def test_read_only_and_memory_mapped(tmp_path):
    p, t = binary((3, 10, 10)), binary((3, 10, 10), dtype=bool)
    np.save(tmp_path / "p.npy", p)
    np.save(tmp_path / "t.npy", np.asfortranarray(t))
    mp = np.load(tmp_path / "p.npy", mmap_mode="r")
    mt = np.load(tmp_path / "t.npy", mmap_mode="r")
    assert not mp.flags.writeable
    check(mp, mt)
    check(list(mp), list(mt))
    frozen = p.copy()
    frozen.flags.writeable = False
    check(frozen, t)


def test_non_native_byte_order_and_object_arrays():
    p = binary((3, 6, 6), dtype=">i4")
    t = rng.random((3, 6, 6)).astype(">f8")
    check(p, t)
    check(list(p), list(t))
    objects = [np.array([[1, 0], [2, 0]], dtype=object)]
    check(objects, [np.array([[1, 1], [0, 0]])])


def test_string_label_uses_numpy():
    masks = [np.array(["a", "b", "a"]), np.array([1, 2, 3])]
    check(masks, masks, label="a")


class FakeTensor:
    """Quacks like a torch tensor on a GPU: detach().cpu().numpy()."""

    def __init__(self, array):
        self.array = array

    def detach(self):
        return self

    def cpu(self):
        return self

    def numpy(self):
        return self.array


def test_tensors():
    p, t = rng.random((3, 8, 8)).astype(np.float32), binary((3, 8, 8))
    expected = oracle.dice_scores(p, t)
    np.testing.assert_array_equal(dice_scores(FakeTensor(p), FakeTensor(t)), expected)
    np.testing.assert_array_equal(dice_scores([FakeTensor(x) for x in p], list(t)), expected)


def test_inputs_are_not_modified():
    p, t = rng.random((3, 8, 8)), binary((3, 8, 8), dtype=bool)
    p_copy, t_copy = p.copy(), t.copy()
    dice_scores(p, t)
    dice_scores(list(p), list(t), label=1)
    np.testing.assert_array_equal(p, p_copy)
    np.testing.assert_array_equal(t, t_copy)


def test_no_temporary_masks():
    # A pair of 8 MB masks in the same layout is counted without allocating anything mask-sized.
    shape = (1, 128, 128, 256)
    cases = [(binary(shape), binary(shape)), (binary(shape, dtype=bool), binary(shape, dtype=bool)),
             (np.asfortranarray(binary(shape[1:])), np.asfortranarray(binary(shape[1:])))]
    dice_scores(*cases[0], n_jobs=1)  # compile outside the measurement
    for p, t in cases:
        stacked = p.ndim == 4
        tracemalloc.start()
        dice_scores(p if stacked else [p], t if stacked else [t], n_jobs=2)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        assert peak < p.nbytes // 16


# ---------------------------------------------------------------------------------------------
# Property tests of the kernels against NumPy
# ---------------------------------------------------------------------------------------------

_SPECIAL_FLOATS = [0.0, -0.0, 0.5, 1.0, 0.3, 0.1, 2.0, -1.0, np.nan, np.inf, 5e-324, 1e-45, 0.49999997]


@st.composite
def mask_pairs(draw):
    # few dtype pairs: each one compiles the kernels again
    dtype = draw(st.sampled_from([np.bool_, np.uint8, np.int16, np.int64, np.float32, np.float64]))
    true_dtype = draw(st.sampled_from([dtype, np.uint8]))
    shape = draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=7))
    n = draw(st.integers(1, 4))

    def elements(dt):
        if np.dtype(dt).kind == "f":
            return st.one_of(st.sampled_from(_SPECIAL_FLOATS), st.floats(-2, 2, width=np.dtype(dt).itemsize * 8))
        if np.dtype(dt).kind == "b":
            return st.booleans()
        info = np.iinfo(dt)
        return st.integers(max(info.min, -3), min(info.max, 4))

    preds = draw(hnp.arrays(dtype, (n,) + shape, elements=elements(dtype)))
    trues = draw(hnp.arrays(true_dtype, (n,) + shape, elements=elements(true_dtype)))
    label = draw(st.one_of(st.none(), st.integers(-1, 4), st.sampled_from([0.5, 1.0, np.float32(0.1), True])))
    threshold = draw(st.one_of(st.sampled_from(_SPECIAL_FLOATS), st.floats(0, 1)))
    return preds, trues, label, threshold


@settings(deadline=None)
@given(mask_pairs(), st.integers(1, 3))
def test_dice_matches_numpy_reference(case, n_jobs):
    preds, trues, label, threshold = case
    with np.errstate(invalid="ignore"):
        expected = reference_dice(list(preds), list(trues), label=label, mask_threshold=threshold)
    np.testing.assert_array_equal(dice_scores(preds, trues, label=label, mask_threshold=threshold,
                                              n_jobs=n_jobs), expected)
    np.testing.assert_array_equal(dice_scores(list(preds), list(trues), label=label, mask_threshold=threshold),
                                  expected)
    # one mask with an extra axis of length 1: the lists cannot be stacked, each pair is checked alone
    uneven = [preds[0][..., None]] + list(preds[1:])
    np.testing.assert_array_equal(dice_scores(uneven, list(trues), label=label, mask_threshold=threshold,
                                              n_jobs=n_jobs), expected)


@st.composite
def segments(draw, dtype, elements=None):
    """A flat array and segment starts cutting it into 1 to 4 (possibly empty) pieces."""
    values = draw(hnp.arrays(dtype, st.integers(0, 400), elements=elements))
    cuts = sorted(draw(st.lists(st.integers(0, len(values)), min_size=0, max_size=3)))
    return values, np.array([0, *cuts, len(values)], np.int64)


def reference_counts(p, t, starts):
    return np.array([[p[a:b].sum(), t[a:b].sum(), (p[a:b] & t[a:b]).sum()]
                     for a, b in zip(starts[:-1], starts[1:])], np.int64).reshape(-1, 3)


@settings(deadline=None)
@given(segments(np.uint8), st.integers(0, 255), st.integers(0, 255), st.integers(0, 255), st.integers(0, 255))
def test_overlap_counts_kernel(case, p_low, p_high, t_low, t_high):
    pred, starts = case
    true = pred[::-1].copy()
    out = np.zeros((len(starts) - 1, 3), np.int64)
    u8 = np.uint8
    kernels.overlap_counts(pred, true, starts, u8(p_low), u8(p_high), u8(t_low), u8(t_high), out)
    p = (pred >= p_low) & (pred <= p_high)
    t = (true >= t_low) & (true <= t_high)
    np.testing.assert_array_equal(out, reference_counts(p, t, starts))


@settings(deadline=None)
@given(segments(np.float32, st.one_of(st.sampled_from(_SPECIAL_FLOATS), st.floats(-1, 2, width=32))),
       st.floats(0, 1, width=32))
def test_probability_kernel(case, threshold):
    pred, starts = case
    true = (np.arange(pred.size) % 3 == 0).astype(np.uint8)
    out = np.zeros((len(starts) - 1, 6), np.int64)
    tiny = np.nextafter(np.float32(0), np.float32(1))
    kernels.probability_overlap_counts(pred, true, starts, np.float32(threshold), tiny, np.uint8(1),
                                       np.uint8(255), out)
    with np.errstate(invalid="ignore"):
        unit = (pred >= 0) & (pred <= 1)
        above, positive = pred >= np.float32(threshold), pred > 0
    t = true > 0
    first = reference_counts(unit, above, starts)
    second = reference_counts(positive, t, starts)
    both = reference_counts(above, t, starts)
    expected = np.stack([first[:, 0], first[:, 1], second[:, 0], second[:, 1], both[:, 2], second[:, 2]], axis=1)
    np.testing.assert_array_equal(out, expected)


def test_small_masks_are_counted_in_groups(monkeypatch):
    monkeypatch.setattr(_masks, "_MAX_GROUP", 7)
    monkeypatch.setattr(_masks, "_COPY_BUDGET", 2000)
    preds = [rng.random((int(s), 5)).astype(np.float32) * (1 + (i % 4 == 0)) for i, s in
             enumerate(rng.integers(0, 30, 40))]
    trues = [binary(p.shape, dtype=bool if i % 2 else np.uint8) for i, p in enumerate(preds)]
    preds[5] = np.asfortranarray(rng.random((6, 7)))
    trues[5] = binary((6, 7))
    for n_jobs in (1, 3):
        np.testing.assert_array_equal(dice_scores(preds, trues, n_jobs=n_jobs), oracle.dice_scores(preds, trues))


@pytest.mark.parametrize("dtype", [bool, np.uint8, np.int16, np.uint64, np.int64, np.float32, np.float64])
@pytest.mark.parametrize("label", [None, 1, 2.0, 0.5, 300])
def test_rule_bounds_have_the_mask_dtype(dtype, label):
    # so that the kernels compare in the mask's own type (no widening, one compiled version)
    kernel_dtype = _mask_files.kernel_array(np.zeros(1, dtype)).dtype
    for prediction in (True, False):
        rule = _mask_files.foreground_rule(np.dtype(dtype), kernel_dtype, label, 0.5, prediction)
        assert type(rule.low) is kernel_dtype.type and type(rule.high) is kernel_dtype.type


def test_chunked_counting_of_one_volume(monkeypatch):
    monkeypatch.setattr(_masks, "_MIN_TASK_BYTES", 1000)
    p = rng.random((1, 37, 41, 23)).astype(np.float32)
    t = binary((1, 37, 41, 23))
    expected = oracle.dice_scores(p, t)
    for n_jobs in (1, 2, 5):
        np.testing.assert_array_equal(dice_scores(p, t, n_jobs=n_jobs), expected)
        np.testing.assert_array_equal(dice_scores(list(p), list(t), n_jobs=n_jobs), expected)
    many_p = [binary((int(s), 9)) for s in rng.integers(1, 300, 50)]
    many_t = [binary(m.shape, dtype=bool) for m in many_p]
    np.testing.assert_array_equal(dice_scores(many_p, many_t, n_jobs=3), oracle.dice_scores(many_p, many_t))


# ---------------------------------------------------------------------------------------------
# Files
# ---------------------------------------------------------------------------------------------

def _write(path: Path, array: np.ndarray) -> Path:
    name = path.name
    if name.endswith(".npy"):
        np.save(path, array)
    elif name.endswith(".npz"):
        np.savez(path, mask=array, other=np.zeros(3))
    elif name.endswith((".nii", ".nii.gz")):
        import nibabel

        image = nibabel.Nifti1Image(array, np.eye(4))
        if array.dtype == np.float32:
            image.header.set_slope_inter(0.5, 0.25)  # read back as 0.5 * stored + 0.25
        nibabel.save(image, str(path))
    else:
        from PIL import Image

        Image.fromarray(array).save(path)
    return path


def _file_masks(tmp_path, suffix, n=3):
    """Predicted and true masks of ``n`` samples saved as ``suffix`` files."""
    preds, trues = [], []
    for i in range(n):
        if suffix in (".nii", ".nii.gz"):
            p = rng.random((9, 8, 7)).astype(np.float32)  # probabilities
            t = rng.integers(0, 3, (9, 8, 7)).astype(np.int16)
        elif suffix in (".npy", ".npz"):
            p = rng.random((1, 10, 12))
            t = binary((10, 12), dtype=bool)
        elif suffix == ".rgb.png":
            p = (rng.random((10, 12, 3)) * 255).astype(np.uint8)
            t = (binary((10, 12, 3)) * 255).astype(np.uint8)
        elif suffix == ".gif":
            p = (binary((10, 12)) * 200).astype(np.uint8)
            t = (binary((10, 12)) * 200).astype(np.uint8)
        else:
            p = (rng.random((10, 12)) * 255).astype(np.uint8)
            t = (binary((10, 12)) * 255).astype(np.uint8)
        name = suffix if suffix != ".rgb.png" else ".png"
        preds.append(_write(tmp_path / f"pred{i}{name}", p))
        trues.append(_write(tmp_path / f"true{i}{name}", t))
    return preds, trues


SUFFIXES = [".npy", ".npz", ".png", ".rgb.png", ".jpg", ".jpeg", ".bmp", ".gif", ".tif", ".tiff", ".nii",
            ".nii.gz"]


@pytest.mark.parametrize("suffix", SUFFIXES)
def test_every_file_type(tmp_path, suffix):
    preds, trues = _file_masks(tmp_path, suffix)
    expected = check(preds, trues)
    assert np.all(np.isfinite(expected))
    check([str(p) for p in preds], [str(t) for t in trues])
    check(pd.Series([str(p) for p in preds], name="pred"), pd.Series(trues, name="true"))
    check(np.array([str(p) for p in preds]), [str(t) for t in trues])
    if suffix in (".nii", ".nii.gz"):
        check(preds, trues, label=2)
        check(preds, trues, mask_threshold=0.8)


def test_nifti_2_and_corrupt_gzip(tmp_path):
    import nibabel

    volume = rng.integers(0, 3, (6, 5, 4)).astype(np.int16)
    nibabel.save(nibabel.Nifti2Image(volume, np.eye(4)), str(tmp_path / "two.nii.gz"))
    np.testing.assert_array_equal(_mask_files.read_mask_file(tmp_path / "two.nii.gz"), volume)
    # unscaled data: a read-only view of the decompressed bytes, as nibabel's array
    read = _mask_files.read_mask_file(tmp_path / "two.nii.gz")
    assert read.dtype == np.int16 and not read.flags.writeable
    big = nibabel.Nifti1Image(volume, np.eye(4), header=nibabel.Nifti1Header(endianness=">"))
    nibabel.save(big, str(tmp_path / "big.nii.gz"))
    read = _mask_files.read_mask_file(tmp_path / "big.nii.gz")
    expected = oracle.read_array_file(tmp_path / "big.nii.gz")
    assert read.dtype == expected.dtype and read.dtype.byteorder == ">"
    np.testing.assert_array_equal(read, volume)
    check([tmp_path / "big.nii.gz"], [volume])
    nibabel.save(nibabel.Nifti1Image(volume, np.eye(4)), str(tmp_path / "plain.nii"))
    (tmp_path / "plain.nii.gz").write_bytes((tmp_path / "plain.nii").read_bytes())  # not gzipped
    with pytest.raises(Exception):  # noqa: B017 - the oracle raises whatever its reader raises
        oracle.read_array_file(tmp_path / "plain.nii.gz")
    with pytest.raises(_mask_files.MaskFileError, match="plain.nii.gz .*not a gzip file"):  # one type for bad files
        _mask_files.read_mask_file(tmp_path / "plain.nii.gz")


def test_nifti_gzip_with_several_members(tmp_path):
    # The one-shot inflate sizes its buffer from the gzip trailer, which covers the last member only;
    # a file of several members (e.g. from `cat a.gz b.gz`) must still read whole.
    import gzip

    import nibabel

    volume = rng.integers(0, 3, (7, 6, 5)).astype(np.uint8)
    nibabel.save(nibabel.Nifti1Image(volume, np.eye(4)), str(tmp_path / "one.nii"))
    raw = (tmp_path / "one.nii").read_bytes()
    (tmp_path / "two.nii.gz").write_bytes(gzip.compress(raw[:200]) + gzip.compress(raw[200:]))
    np.testing.assert_array_equal(_mask_files.read_mask_file(tmp_path / "two.nii.gz"), volume)
    np.testing.assert_array_equal(oracle.read_array_file(tmp_path / "two.nii.gz"), volume)


def test_files_mixed_with_arrays_and_many_files_in_threads(tmp_path):
    preds, trues = _file_masks(tmp_path, ".npy", n=25)
    preds = [np.load(p) if i % 3 == 0 else p for i, p in enumerate(preds)]
    check(preds, trues)
    for n_jobs in (1, 2, 4):
        np.testing.assert_array_equal(dice_scores(preds, trues, n_jobs=n_jobs), oracle.dice_scores(preds, trues))


def test_npy_files_are_memory_mapped(tmp_path):
    path = _write(tmp_path / "m.npy", binary((1, 6, 7)))
    array = _mask_files.read_mask_file(path)
    assert array.shape == (6, 7)
    assert not array.flags.writeable  # a read-only memory map, not a copy


def test_progress_on_a_terminal(tmp_path, monkeypatch, capfd):
    preds, trues = _file_masks(tmp_path, ".npy", n=4)
    dice_scores(preds, trues, n_jobs=2)
    assert capfd.readouterr().err == ""  # not a terminal
    dice_scores(preds, trues, n_jobs=2, progress=True)
    captured = capfd.readouterr()
    assert "reading masks" in captured.err and "4/4" in captured.err and captured.out == ""


def test_missing_optional_dependency(tmp_path, monkeypatch):
    preds, trues = _file_masks(tmp_path, ".nii.gz", n=1)
    monkeypatch.setitem(sys.modules, "nibabel", None)
    with pytest.raises(ImportError, match=r'needs the optional dependency .nibabel.: pip install nibabel'):
        dice_scores(preds, trues)
    with pytest.raises(ImportError):
        oracle.dice_scores(preds, trues)


# ---------------------------------------------------------------------------------------------
# Errors: the same kind as the oracle, naming the sample
# ---------------------------------------------------------------------------------------------

def both_raise(error, preds, trues, match, n_jobs=None, **options):
    with pytest.raises(error):
        oracle.dice_scores(preds, trues, **options)
    with pytest.raises(error, match=match):
        dice_scores(preds, trues, n_jobs=n_jobs, **options)


@pytest.mark.parametrize("n_jobs", [1, 2])
def test_missing_file_names_file_and_sample(tmp_path, n_jobs, monkeypatch):
    monkeypatch.setenv(_threads.N_JOBS_ENV, str(n_jobs))
    preds, trues = _file_masks(tmp_path, ".npy", n=4)
    preds[2] = tmp_path / "nowhere.npy"
    both_raise(FileNotFoundError, preds, trues, r"pred_masks\[2\].*nowhere\.npy")
    trues[1] = str(tmp_path / "gone.png")
    both_raise(FileNotFoundError, preds, trues, r"true_masks\[1\].*gone\.png")


@pytest.mark.parametrize("n_jobs", [1, 3])
def test_shape_mismatch_names_sample_and_shapes(tmp_path, n_jobs):
    preds = [binary((5, 5)), binary((5, 5)), binary((5, 6))]
    trues = [binary((5, 5)), binary((5, 5)), binary((6, 5))]
    both_raise(ValueError, preds, trues, r"sample 2.*\(5, 6\).*\(6, 5\)", n_jobs=n_jobs)
    both_raise(ValueError, binary((3, 4, 5)), binary((3, 5, 4)), r"sample 0.*\(4, 5\).*\(5, 4\)")
    # with many files in threads, the lowest failing sample is reported, whatever its error
    files_p, files_t = _file_masks(tmp_path, ".npy", n=30)
    files_p[20] = tmp_path / "missing.npy"
    files_t[7] = binary((3, 3))
    both_raise(ValueError, files_p, files_t, r"sample 7", n_jobs=n_jobs)


def test_other_errors(tmp_path):
    both_raise(ValueError, [binary((3, 3))] * 2, [binary((3, 3))] * 3, r"2 masks.*3")
    both_raise(ValueError, "masks.npy", ["masks.npy"], r"single path")
    both_raise(ValueError, None, [binary((3, 3))], r"pred_masks is missing")
    both_raise(ValueError, [binary((3, 3)), None], [binary((3, 3))] * 2, r"pred_masks\[1\]")
    both_raise(ValueError, [binary((3, 3)), np.array(1)], [binary((3, 3))] * 2, r"pred_masks\[1\]")
    path = tmp_path / "mask.txt"
    path.write_text("0 1")
    both_raise(ValueError, [path], [path], r"unsupported mask file")
    with pytest.raises(ValueError, match="1-D array of 3 numbers"):
        dice_scores(np.array([0.5, 0.2, 0.1]), np.array([1, 0, 1]))
    with pytest.raises(ValueError, match="mask_threshold"):
        dice_scores(rng.random((2, 3)), binary((2, 3)), mask_threshold="high")
    with pytest.raises(ValueError, match="empty_score"):
        dice_scores(binary((2, 3)), binary((2, 3)), empty_score="one")


def test_n_jobs(monkeypatch):
    monkeypatch.delenv(_threads.N_JOBS_ENV, raising=False)
    cores = _threads._cpu_count()
    assert _threads.resolve_n_jobs(None) == cores
    assert _threads.resolve_n_jobs(3) == 3
    assert _threads.resolve_n_jobs(-1) == cores
    monkeypatch.setenv(_threads.N_JOBS_ENV, "2")
    assert _threads.resolve_n_jobs(None) == 2
    assert _threads.resolve_n_jobs(5) == 5
    monkeypatch.setenv(_threads.N_JOBS_ENV, "many")
    with pytest.raises(ValueError, match="FAIRMEDFM_FAST_N_JOBS"):
        _threads.resolve_n_jobs(None)
    for bad in (0, 1.5, "2", True):
        with pytest.raises(ValueError, match="n_jobs"):
            _threads.resolve_n_jobs(bad)


# ---------------------------------------------------------------------------------------------
# dice_per_label
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.uint8, np.int16, np.int64, np.uint64, np.float32, bool])
def test_dice_per_label_matches_one_label_at_a_time(dtype):
    high = 2 if dtype is bool else 6
    pred = rng.integers(0, high, (9, 10, 11)).astype(dtype)
    true = rng.integers(0, high, (9, 10, 11)).astype(dtype)
    if dtype is not bool:
        pred[pred == 4] = 5  # label 4 only in true, label 5 more often in pred
    got = dice_per_label(pred, true)
    present = sorted((set(np.unique(pred).tolist()) | set(np.unique(true).tolist())) - {0})
    assert list(got) == present
    for label, value in got.items():
        assert value == oracle.dice_scores([pred], [true], label=label)[0]


def test_dice_per_label_requested_labels():
    pred = np.array([[0, 1, 2], [2, 2, 0]], np.uint8)
    true = np.array([[0, 1, 1], [2, 0, 0]], np.uint8)
    got = dice_per_label(pred, true, labels=[2, 0, 9, 1.5, -3])
    assert list(got) == [2, 0, 9, 1.5, -3]
    for label in (2, 0, 9, 1.5, -3):
        assert got[label] == oracle.dice_scores([pred], [true], label=label)[0]
    assert got[9] == 1.0  # in neither map: empty_score=1.0 semantics
    assert dice_per_label(pred, true, labels=np.array([1, 2])) == dice_per_label(pred, true, labels=(1, 2))
    assert dice_per_label(np.zeros((3, 3), int), np.zeros((3, 3), int)) == {}
    assert dice_per_label(pred, true, labels=2) == {2: got[2]}
    assert dice_per_label(np.zeros((0, 3), int), np.zeros((0, 3), int), labels=[1]) == {1: 1.0}


def test_dice_per_label_float_maps_files_and_layouts(tmp_path):
    pred = rng.integers(0, 4, (6, 7, 8)).astype(np.float64)
    true = rng.integers(0, 4, (6, 7, 8)).astype(np.float64)
    pred[0, 0, 0] = np.nan
    got = dice_per_label(pred, true)
    assert list(got) == [1.0, 2.0, 3.0]
    for label, value in got.items():
        assert value == oracle.dice_scores([pred], [true], label=label)[0]
    labels = rng.integers(0, 3, (1, 12, 13)).astype(np.int16)
    path = _write(tmp_path / "labels.nii.gz", labels[0])
    other = np.asfortranarray(rng.integers(0, 3, (12, 13)).astype(np.int16))
    assert dice_per_label(path, other) == dice_per_label(labels, np.ascontiguousarray(other))
    wide = np.array([[-70000, 0, 5, 2 ** 40]], np.int64)
    assert dice_per_label(wide, wide) == {-70000: 1.0, 5: 1.0, 2 ** 40: 1.0}


def test_dice_per_label_errors():
    with pytest.raises(ValueError, match=r"\(3, 4\).*\(4, 3\)"):
        dice_per_label(np.zeros((3, 4), int), np.zeros((4, 3), int))
    with pytest.raises(FileNotFoundError, match="nothing.npy"):
        dice_per_label("nothing.npy", np.zeros(3))


# ---------------------------------------------------------------------------------------------
# Without compilation: out-of-bounds indexing that compiled code would not catch
# ---------------------------------------------------------------------------------------------

def test_without_jit():
    script = textwrap.dedent("""
        import numpy as np
        from fairmedfm import _inputs as oracle
        from fairmedfm_fast._inputs import masks as _masks
        from fairmedfm_fast.segmentation import dice_per_label, dice_scores
        _masks._MIN_TASK_BYTES = 64
        rng = np.random.default_rng(0)
        cases = [
            (rng.random((3, 5, 6)).astype(np.float32), rng.random((3, 5, 6)) < 0.4, {}),
            (rng.integers(0, 3, (2, 7, 4)), rng.integers(0, 3, (2, 7, 4)), {"label": 2}),
            ([rng.random((9, 9)) * 2], [np.ones((9, 9), bool)], {"empty_score": 0.0}),
            (np.zeros((2, 3), np.uint8), np.zeros((2, 3), np.uint8), {}),
        ]
        for preds, trues, options in cases:
            for n_jobs in (1, 2):
                got = dice_scores(preds, trues, n_jobs=n_jobs, **options)
                assert np.array_equal(got, oracle.dice_scores(preds, trues, **options)), options
        pred, true = rng.integers(-2, 3, (6, 5)), rng.integers(-2, 3, (6, 5))
        got = dice_per_label(pred, true)
        assert list(got) == [-2, -1, 1, 2]
        for label, value in got.items():
            assert value == oracle.dice_scores([pred], [true], label=label)[0]
        print("ok")
    """)
    env = {**os.environ, "NUMBA_DISABLE_JIT": "1"}
    done = subprocess.run(cwd=OUTSIDE_REPO, args=[sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"


def test_shared_pool_reports_a_failing_batch_and_stays_usable(monkeypatch):
    rng = np.random.default_rng(5)
    preds = [rng.integers(0, 2, (160, 160, 160), dtype=np.uint8) for _ in range(2)]
    trues = [rng.integers(0, 2, (160, 160, 160), dtype=np.uint8) for _ in range(2)]
    expected = _masks.overlap_counts(preds, trues, n_jobs=1)
    original, calls = _masks._run_batch, []

    def failing(batch):
        calls.append(len(batch))
        if len(calls) == 2:
            raise MemoryError("batch failed")
        return original(batch)

    monkeypatch.setattr(_masks, "_run_batch", failing)
    with pytest.raises(MemoryError, match="batch failed"):
        _masks.overlap_counts(preds, trues, n_jobs=2)
    assert len(calls) >= 2  # the work was split over the pool
    monkeypatch.setattr(_masks, "_run_batch", original)
    np.testing.assert_array_equal(_masks.overlap_counts(preds, trues, n_jobs=2), expected)
    assert _threads.executor(2) is _threads.executor(2)
