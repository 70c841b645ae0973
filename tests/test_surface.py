"""Surface distances (HD95, HD, ASSD, NSD) per sample and per group: against medpy 0.5 (``hd95``,
``hd``, ``assd``), against brute force over all pairs of surface voxels (``reference.py``: MONAI's
directed-percentile Hausdorff and its ``compute_surface_dice``), the empty-mask conventions, and
``evaluate_segmentation(metrics=...)`` against group means computed by hand."""
import math
import warnings

import numpy as np
import pytest
import reference
from hypothesis import given
from hypothesis import strategies as st
from medpy.metric import binary as medpy

import fairmedfm_fast as fm
from fairmedfm_fast._engine import surface as _surface
from fairmedfm_fast.kernels import surface as kernels

TOLERANCE = 1e-9


def measure(pred, true, spacing=None, percentile=95.0, tolerance=1.0, definition="medpy", label=None):
    options = _surface.Options(percentile, tolerance, definition, spacing)
    return _surface.measure_pair(0, np.asarray(pred), np.asarray(true), None, label, 0.5, options)


@st.composite
def mask_pairs(draw, max_side=9):
    """Two non-empty masks of 1 to 3 axes, a spacing, and a layout (C, Fortran, dtype)."""
    ndim = draw(st.integers(1, 3))
    shape = tuple(draw(st.lists(st.integers(2, max_side), min_size=ndim, max_size=ndim)))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    kind = draw(st.sampled_from(["random", "blob", "thin", "single", "full"]))
    masks = []
    for _ in range(2):
        if kind == "random":
            mask = rng.random(shape) < rng.uniform(0.1, 0.9)
        elif kind == "blob":
            grid = np.indices(shape).astype(float)
            centre = [rng.uniform(0, n - 1) for n in shape]
            mask = sum((g - c) ** 2 for g, c in zip(grid, centre)) <= rng.uniform(0.5, max(shape)) ** 2
        elif kind == "thin":  # one-voxel-thick line or plane
            mask = np.zeros(shape, bool)
            axis = rng.integers(ndim)
            index = [slice(None)] * ndim
            index[axis] = rng.integers(shape[axis])
            mask[tuple(index)] = True
        elif kind == "single":
            mask = np.zeros(shape, bool)
            mask[tuple(rng.integers(n) for n in shape)] = True
        else:  # touches every border
            mask = np.ones(shape, bool)
            if rng.random() < 0.5:
                mask[tuple(rng.integers(n) for n in shape)] = False
        if not mask.any():
            mask[tuple(rng.integers(n) for n in shape)] = True
        masks.append(mask)
    spacing = tuple(draw(st.lists(st.sampled_from([1.0, 0.5, 0.7, 1.3, 2.5, 3.0]), min_size=ndim, max_size=ndim)))
    return masks[0], masks[1], spacing, draw(st.sampled_from(["C", "F", "uint8", "float"]))


def _layout(mask, layout):
    if layout == "F":
        return np.asfortranarray(mask)
    if layout == "uint8":
        return mask.astype(np.uint8) * 3
    if layout == "float":
        return mask.astype(np.float32)
    return mask


@given(mask_pairs())
def test_against_medpy_and_brute_force(case):
    a, b, spacing, layout = case
    row = measure(_layout(a, layout), _layout(b, layout), spacing=spacing, tolerance=1.5)
    expected = [medpy.hd95(a, b, spacing), medpy.hd(a, b, spacing), medpy.assd(a, b, spacing)]
    np.testing.assert_allclose(row[3:6], expected, rtol=0, atol=TOLERANCE)
    assert row[6] == pytest.approx(reference.surface_dice(a, b, spacing, 1.5), abs=TOLERANCE)
    assert tuple(row[:3]) == (a.sum(), b.sum(), (a & b).sum())
    monai = measure(a, b, spacing=spacing, definition="monai")
    assert monai[3] == pytest.approx(reference.monai_hausdorff(a, b, spacing), abs=TOLERANCE)


@given(mask_pairs(max_side=7), st.floats(0, 100))
def test_kernel_distances_and_any_percentile(case, percentile):
    a, b, spacing, _ = case
    a3, b3 = (m.reshape((1,) * (3 - m.ndim) + m.shape).astype(np.uint8) for m in (a, b))
    full = np.ones(3)
    full[3 - a.ndim:] = spacing
    expected_ab = reference.directed_surface_distances(a, b, spacing)
    expected_ba = reference.directed_surface_distances(b, a, spacing)
    for budget in (8, 0):  # outward search, and the lower envelope along axis 1 from the first query
        d_ab, d_ba = kernels.surface_distances(a3, b3, full, a.ndim, budget)
        np.testing.assert_allclose(d_ab, expected_ab, rtol=0, atol=TOLERANCE)
        np.testing.assert_allclose(d_ba, expected_ba, rtol=0, atol=TOLERANCE)
    for definition, expected in (("medpy", reference.pooled_hausdorff(a, b, spacing, percentile)),
                                 ("monai", reference.monai_hausdorff(a, b, spacing, percentile))):
        assert measure(a, b, spacing, percentile, definition=definition)[3] == pytest.approx(expected, abs=TOLERANCE)


def test_distant_surfaces_take_the_envelope_path():
    """Far-apart masks exceed the per-plane search budget, so the lower-envelope pass runs."""
    a = np.zeros((6, 40, 60), bool)
    b = np.zeros_like(a)
    a[1:3, 2:5, 1:4] = True
    b[3:6, 30:39, 40:59] = True
    b[0, 39, 0] = True
    for spacing in ((1.0, 1.0, 1.0), (2.5, 0.7, 1.3)):
        row = measure(a, b, spacing)
        np.testing.assert_allclose(row[3:6], [medpy.hd95(a, b, spacing), medpy.hd(a, b, spacing),
                                              medpy.assd(a, b, spacing)], rtol=0, atol=TOLERANCE)


def test_larger_volume_against_medpy():
    rng = np.random.default_rng(3)
    grid = np.indices((30, 34, 28)).astype(float)
    a = ((grid[0] - 15) ** 2 + (grid[1] - 17) ** 2 / 1.5 + (grid[2] - 14) ** 2) < 100
    b = ((grid[0] - 13) ** 2 + (grid[1] - 19) ** 2 + (grid[2] - 14) ** 2 / 0.8) < 90
    b ^= rng.random(b.shape) < 0.01  # speckle far from the surface too
    spacing = (1.5, 0.8, 0.8)
    row = measure(a, b, spacing)
    np.testing.assert_allclose(row[3:6], [medpy.hd95(a, b, spacing), medpy.hd(a, b, spacing),
                                          medpy.assd(a, b, spacing)], rtol=0, atol=TOLERANCE)


def test_foreground_rules_follow_dice():
    rng = np.random.default_rng(0)
    labels_p, labels_t = rng.integers(0, 3, (8, 9, 7)), rng.integers(0, 3, (8, 9, 7))
    a, b = labels_p == 2, labels_t == 2
    np.testing.assert_allclose(measure(labels_p, labels_t, label=2)[3:6],
                               [medpy.hd95(a, b), medpy.hd(a, b), medpy.assd(a, b)], atol=TOLERANCE)
    probability = rng.random((8, 9, 7))
    row = measure(probability, b)
    assert row[0] == (probability >= 0.5).sum()
    assert row[3] == pytest.approx(medpy.hd95(probability >= 0.5, b), abs=TOLERANCE)
    logits = probability * 4 - 2  # not in [0, 1]: foreground where > 0
    assert measure(logits, b)[0] == (logits > 0).sum()
    assert measure(np.swapaxes(labels_p, 0, 2), np.swapaxes(labels_t, 0, 2), label=2)[3] == pytest.approx(
        medpy.hd95(np.swapaxes(a, 0, 2), np.swapaxes(b, 0, 2)), abs=TOLERANCE)


def _cohort(n=16, seed=0, shape=(14, 16, 15)):
    rng = np.random.default_rng(seed)
    grid = np.indices(shape).astype(float)
    preds, trues = [], []
    for _ in range(n):
        radius = rng.uniform(2.5, 5)
        trues.append(sum((g - 7) ** 2 for g in grid) < radius ** 2)
        shift = rng.integers(-2, 3, 3)
        preds.append(sum((g - 7 - s) ** 2 for g, s in zip(grid, shift)) < (radius + rng.uniform(-1, 1)) ** 2)
    return preds, trues, rng.choice(["F", "M", "X"], n)


@pytest.mark.parametrize("per_sample", [False, True])
def test_evaluate_segmentation_group_means_by_hand(per_sample):
    preds, trues, sex = _cohort()
    spacing = (1.2, 0.9, 2.0)
    given = np.tile(spacing, (len(preds), 1)) if per_sample else spacing
    report = fm.evaluate_segmentation({"sex": sex}, pred_masks=preds, true_masks=trues, spacing=given,
                                      metrics=["dice", "hd95", "hd", "assd", "nsd"], nsd_tolerance=2.0)
    per_sample = {
        "hd95": [medpy.hd95(p, t, spacing) for p, t in zip(preds, trues)],
        "hd": [medpy.hd(p, t, spacing) for p, t in zip(preds, trues)],
        "assd": [medpy.assd(p, t, spacing) for p, t in zip(preds, trues)],
        "nsd": [reference.surface_dice(p, t, spacing, 2.0) for p, t in zip(preds, trues)],
    }
    plain = fm.evaluate_segmentation({"sex": sex}, pred_masks=preds, true_masks=trues)
    for column in plain.summary.columns:  # the Dice part is the default report
        assert report.summary[column].iloc[0] == pytest.approx(plain.summary[column].iloc[0], abs=TOLERANCE)
    for metric, values in per_sample.items():
        values = np.array(values)
        means = {g: values[sex == g].mean() for g in ("F", "M", "X")}
        for g, mean in means.items():
            assert report.by_group.loc[("sex", g), f"mean_{metric}"] == pytest.approx(mean, abs=TOLERANCE)
        summary = report.summary.loc["sex"]
        worst = min(means.values()) if metric == "nsd" else max(means.values())
        assert summary[f"mean_{metric}"] == pytest.approx(values.mean(), abs=TOLERANCE)
        assert summary[f"worst_{metric}"] == pytest.approx(worst, abs=TOLERANCE)
        assert summary[f"delta_{metric}"] == pytest.approx(max(means.values()) - min(means.values()), abs=TOLERANCE)
        assert summary[f"std_{metric}"] == pytest.approx(np.std(list(means.values())), abs=TOLERANCE)
        assert report.overall[f"mean_{metric}"] == pytest.approx(values.mean(), abs=TOLERANCE)


def test_default_and_dice_only_are_fairmedfm_report():
    preds, trues, sex = _cohort(8)
    plain = fm.evaluate_segmentation({"sex": sex}, pred_masks=preds, true_masks=trues)
    listed = fm.evaluate_segmentation({"sex": sex}, pred_masks=preds, true_masks=trues, metrics=["dice"])
    assert plain.summary.equals(listed.summary) and plain.by_group.equals(listed.by_group)
    assert plain.metadata == listed.metadata


def test_without_dice_and_other_percentile():
    preds, trues, sex = _cohort(8, seed=2)
    report = fm.evaluate_segmentation({"sex": sex}, pred_masks=preds, true_masks=trues, metrics=["hd95"],
                                      percentile=90, hd_definition="monai")
    assert list(report.summary.columns) == ["n", "n_groups", "mean_hd90", "worst_hd90", "delta_hd90", "std_hd90"]
    assert list(report.by_group.columns) == ["n", "mean_hd90", "skipped"]
    values = np.array([reference.monai_hausdorff(p, t, (1, 1, 1), 90) for p, t in zip(preds, trues)])
    assert report.overall["mean_hd90"] == pytest.approx(values.mean(), abs=TOLERANCE)


def test_empty_mask_conventions():
    a = np.zeros((6, 7, 5), bool)
    a[2:4, 2:5, 1:3] = True
    empty = np.zeros_like(a)
    preds, trues = [a, empty, empty, a], [a, a, empty, a]
    groups = ["x", "x", "y", "y"]
    report = fm.evaluate_segmentation(groups, pred_masks=preds, true_masks=trues, metrics=["dice", "hd95", "nsd"],
                                      nsd_tolerance=1.0)
    assert report.metadata["both_masks_empty"] == 1 and report.metadata["one_mask_empty"] == 1
    assert any("both masks empty" in w for w in report.warnings)
    assert any("exactly one empty mask" in w for w in report.warnings)
    values = report._metric_data
    np.testing.assert_array_equal(values["hd95"], [0.0, np.nan, np.nan, 0.0])
    np.testing.assert_array_equal(values["nsd"], [1.0, 0.0, np.nan, 1.0])
    np.testing.assert_array_equal(values["dice"], [1.0, 0.0, 1.0, 1.0])
    diagonal = math.sqrt(6 ** 2 + 7 ** 2 + 5 ** 2)
    for option, expected in (("inf", np.inf), ("diagonal", diagonal), (50.0, 50.0)):
        got = fm.evaluate_segmentation(groups, pred_masks=preds, true_masks=trues, metrics=["hd95", "assd"],
                                       empty_distance=option, empty_score={"hd95": 0.0, "assd": 0.0})
        np.testing.assert_array_equal(got._metric_data["hd95"], [0.0, expected, 0.0, 0.0])
        assert not any("both masks empty" in w for w in got.warnings)
    spaced = fm.evaluate_segmentation(groups, pred_masks=preds, true_masks=trues, metrics=["hd"],
                                      empty_distance="diagonal", spacing=(2.0, 1.0, 0.5))
    assert spaced._metric_data["hd"][1] == pytest.approx(math.sqrt(12 ** 2 + 7 ** 2 + 2.5 ** 2))


def test_nifti_spacing_from_header(tmp_path):
    nibabel = pytest.importorskip("nibabel")
    preds, trues, sex = _cohort(6, seed=5)
    zooms = (0.8, 0.8, 2.5)
    pred_paths, true_paths = [], []
    for i, (p, t) in enumerate(zip(preds, trues)):
        for mask, paths, name in ((p, pred_paths, "pred"), (t, true_paths, "true")):
            image = nibabel.Nifti1Image(mask.astype(np.uint8), np.diag([*zooms, 1.0]))
            image.header.set_zooms(zooms)
            path = tmp_path / f"{name}{i}.nii.gz"
            nibabel.save(image, str(path))
            paths.append(str(path))
    report = fm.evaluate_segmentation({"sex": sex}, pred_masks=pred_paths, true_masks=true_paths,
                                      metrics=["hd95", "assd"])
    zooms = tuple(float(z) for z in nibabel.load(true_paths[0]).header.get_zooms())  # float32 in the header
    expected = [medpy.hd95(p, t, zooms) for p, t in zip(preds, trues)]
    np.testing.assert_allclose(report._metric_data["hd95"], expected, rtol=0, atol=TOLERANCE)
    in_memory = fm.evaluate_segmentation({"sex": sex}, pred_masks=preds, true_masks=trues, metrics=["hd95", "assd"],
                                         spacing=zooms)
    np.testing.assert_allclose(in_memory._metric_data["assd"], report._metric_data["assd"], rtol=0, atol=TOLERANCE)


def test_nifti_spacing_reads_the_header_nibabel_load_reads(tmp_path):
    # nifti_spacing parses the leading bytes only; its zooms must be nibabel.load's, checks and fixes included
    import gzip
    import struct

    nibabel = pytest.importorskip("nibabel")
    from fairmedfm_fast._inputs import mask_files as _mask_files

    volume = np.zeros((5, 4, 1, 3), np.uint8)
    files = {}
    for name, image in (("one", nibabel.Nifti1Image(volume, np.diag([0.8, 1.5, 2.5, 1.0]))),
                        ("two", nibabel.Nifti2Image(volume, np.diag([0.7, 0.9, 3.0, 1.0]))),
                        ("big", nibabel.Nifti1Image(volume, np.diag([0.5, 0.6, 0.7, 1.0]),
                                                    header=nibabel.Nifti1Header(endianness=">")))):
        nibabel.save(image, str(tmp_path / f"{name}.nii"))
        files[name] = (tmp_path / f"{name}.nii").read_bytes()
    raw = bytearray(files["one"])
    raw[76 + 4:76 + 16] = struct.pack("<3f", -0.8, 0.0, 2.5)  # pixdim[1:4]: nibabel fixes to abs, and 0 to 1
    files["fixed"] = bytes(raw)
    paths = []
    for name, data in files.items():
        for suffix, content in ((".nii", data), (".nii.gz", gzip.compress(data))):
            path = tmp_path / f"{name}-x{suffix}"
            path.write_bytes(content)
            paths.append(path)
    long_name = tmp_path / "named.nii.gz"  # a gzip header longer than the bytes first read
    with open(long_name, "wb") as handle, gzip.GzipFile("x" * 9000, "wb", fileobj=handle) as stream:
        stream.write(files["two"])
    paths.append(long_name)
    for path in paths:
        header = nibabel.load(str(path)).header
        expected = tuple(float(z) for size, z in zip(header.get_data_shape(), header.get_zooms()) if size != 1)
        assert _mask_files.nifti_spacing(path) == expected, path.name
        assert _mask_files.nifti_spacing(str(path)) == expected
    assert _mask_files.nifti_spacing(tmp_path / "fixed-x.nii.gz")[:2] == (pytest.approx(0.8), 1.0)


def test_bootstrap_and_permutations_cover_every_metric():
    preds, trues, sex = _cohort(12, seed=7)
    report = fm.evaluate_segmentation({"sex": sex}, pred_masks=preds, true_masks=trues, metrics=["dice", "assd"],
                                      n_boot=30, n_permutations=30, random_state=0)
    assert {"mean_assd_lo", "worst_assd_hi", "delta_assd_lo", "std_assd_hi", "mean_dice_lo"} <= set(
        report.ci["summary"].columns)
    assert {"mean_assd_lo", "mean_assd_hi", "mean_dice_lo"} <= set(report.ci["by_group"].columns)
    # p_adjust="holm" by default: each column's adjusted values beside it
    assert list(report.p_values.columns) == ["delta_dice", "delta_dice_holm", "std_dice", "std_dice_holm",
                                             "delta_assd", "delta_assd_holm", "std_assd", "std_assd_holm"]
    summary = report.ci["summary"].loc["sex"]
    assert summary["mean_assd_lo"] <= report.summary.loc["sex", "mean_assd"] <= summary["mean_assd_hi"]


@pytest.mark.parametrize("kwargs, message", [
    ({"metrics": ["dice", "hd96"]}, "metrics="),
    ({"metrics": ["nsd"]}, "nsd_tolerance"),
    ({"metrics": ["hd95"], "percentile": 101}, "percentile"),
    ({"metrics": ["hd95"], "hd_definition": "itk"}, "hd_definition"),
    ({"metrics": ["hd95"], "empty_distance": "max"}, "empty_distance"),
    ({"metrics": ["hd95"], "spacing": (1.0, 2.0)}, "spacing"),
    ({"metrics": ["hd95"], "spacing": (1.0, -2.0, 1.0)}, "spacing"),
    ({"metrics": ["hd95"], "spacing": [(1.0, 1.0, 1.0)] * 2}, "spacing has 2 rows"),
    ({"metrics": ["hd95"], "spacing": [(1.0, 1.0, 1.0)] * 5}, "spacing has 5 rows"),
    ({"metrics": ["hd95"], "spacing": "1mm"}, "spacing"),
])
def test_bad_options(kwargs, message):
    preds, trues, sex = _cohort(4)
    with pytest.raises(ValueError, match=message):
        fm.evaluate_segmentation({"sex": sex}, pred_masks=preds, true_masks=trues, **kwargs)


def test_distances_need_masks():
    with pytest.raises(ValueError, match="needs masks"):
        fm.evaluate_segmentation(["a", "b"], dice=[0.5, 0.7], metrics=["hd95"])


def test_inputs_are_not_modified_and_threads_agree(monkeypatch):
    preds, trues, sex = _cohort(10, seed=9)
    copies = [p.copy() for p in preds]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        monkeypatch.setenv("FAIRMEDFM_FAST_N_JOBS", "1")
        one = fm.evaluate_segmentation({"sex": sex}, pred_masks=preds, true_masks=trues, metrics=["hd95", "nsd"],
                                       nsd_tolerance=1.0)
        monkeypatch.setenv("FAIRMEDFM_FAST_N_JOBS", "3")
        three = fm.evaluate_segmentation({"sex": sex}, pred_masks=preds, true_masks=trues, metrics=["hd95", "nsd"],
                                         nsd_tolerance=1.0)
    assert one.summary.equals(three.summary)
    assert all(np.array_equal(p, c) for p, c in zip(preds, copies))


def test_command_line_metrics(tmp_path, capsys):
    import json

    import pandas as pd

    from fairmedfm_fast import cli

    preds, trues, sex = _cohort(6, seed=11)
    rows = []
    for i, (p, t) in enumerate(zip(preds, trues)):
        np.save(tmp_path / f"p{i}.npy", p)
        np.save(tmp_path / f"t{i}.npy", t)
        rows.append({"pred_mask": f"p{i}.npy", "gt_mask": f"t{i}.npy", "sex": sex[i]})
    pd.DataFrame(rows).to_csv(tmp_path / "masks.csv", index=False)
    argv = [str(tmp_path / "masks.csv"), "--pred-mask", "pred_mask", "--true-mask", "gt_mask", "--sensitive", "sex"]
    assert cli.main(["score", *argv, "--metrics", "dice", "hd95", "nsd", "--nsd-tolerance", "2",
                     "--spacing", "1", "0.5", "2"]) is None  # success returns None, as fairmedfm's main does
    printed = json.loads(capsys.readouterr().out)["sex"]
    expected = fm.evaluate_segmentation({"sex": sex}, pred_masks=preds, true_masks=trues, spacing=(1, 0.5, 2),
                                        metrics=["dice", "hd95", "nsd"], nsd_tolerance=2).summary.loc["sex"]
    for column in ("mean_dice", "mean_hd95", "worst_hd95", "delta_nsd", "std_nsd"):
        assert printed[column] == pytest.approx(expected[column], abs=TOLERANCE)
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["score", *argv, "--metrics", "nsd"])
    assert exit_info.value.code == 2
    assert "--nsd-tolerance" in capsys.readouterr().err


def test_kernels_without_jit(tmp_path):
    """Pure-Python run of the kernels (NUMBA_DISABLE_JIT=1) on tiny masks: out-of-bounds indexing that
    compiled code would not notice raises here."""
    import os
    import subprocess
    import sys
    import textwrap
    from pathlib import Path

    script = textwrap.dedent("""
        import numba, numpy as np
        assert numba.config.DISABLE_JIT
        import reference
        from fairmedfm_fast._engine import surface as _surface
        from fairmedfm_fast.kernels import surface
        rng = np.random.default_rng(2)
        for shape in ((1, 1, 5), (1, 4, 6), (3, 4, 5), (5, 2, 3)):
            a, b = rng.random(shape) < 0.5, rng.random(shape) < 0.4
            a.flat[0] = b.flat[-1] = True
            for budget in (8, 0):
                d_ab, d_ba = surface.surface_distances(a.astype(np.uint8), b.astype(np.uint8),
                                                       np.array([1.0, 0.7, 1.3]), 3, budget)
                expected = reference.directed_surface_distances(a, b, (1.0, 0.7, 1.3))
                assert np.allclose(d_ab, expected, rtol=0, atol=1e-9), (shape, budget)
            row = _surface.measure_pair(0, a.astype(np.float32), b, None, None, 0.5,
                                        _surface.Options(95.0, 1.0, "monai", (1.0, 0.7, 1.3)))
            assert abs(row[3] - reference.monai_hausdorff(a, b, (1.0, 0.7, 1.3))) <= 1e-9
        print("ok")
    """)
    tests_dir = Path(__file__).resolve().parent
    env = {**os.environ, "NUMBA_DISABLE_JIT": "1",
           "PYTHONPATH": os.pathsep.join(filter(None, [str(tests_dir), os.environ.get("PYTHONPATH", "")]))}
    result = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True,
                            timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip() == "ok"


def test_plot_and_page_per_metric(tmp_path):
    pytest.importorskip("matplotlib")
    preds, trues, sex = _cohort(8, seed=4)
    report = fm.evaluate_segmentation({"sex": sex}, pred_masks=preds, true_masks=trues, metrics=["dice", "hd95", "nsd"],
                                      nsd_tolerance=1.0)
    figure = report.plot("hd95")
    axis = figure.axes[0]
    means = axis.lines[-1].get_ydata()  # the diamonds: group means, in report order
    np.testing.assert_allclose(means, report.by_group["mean_hd95"].to_numpy(), rtol=0, atol=1e-12)
    page = report.to_html(tmp_path / "report.html")
    assert "per-sample HD95" in page and "per-sample NSD" in page
