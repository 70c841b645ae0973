"""evaluate_voxels and VoxelAccumulator equal evaluate on the flattened voxels (groups per image).

Every comparison is against :func:`fairmedfm_fast.evaluate` (itself checked against fairmedfm 0.4.2)
on the same values, one sample per voxel, within 1e-12; AUC also against scikit-learn.
"""
from __future__ import annotations

import pickle
import re
import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

import fairmedfm_fast as fm

TOL = 1e-12


def make_maps(seed=0, n_images=14, shape=(6, 5), levels=40, dtype=np.float32):
    """Score maps with ties within and across images, masks, and two attributes (one with a gap)."""
    rng = np.random.default_rng(seed)
    truth = rng.random((n_images, *shape)) < 0.35
    scores = np.clip(0.3 * truth + 0.7 * rng.random((n_images, *shape)), 0, 1)
    if levels:
        scores = np.round(scores * levels) / levels  # ties, and scores on ECE bin edges
    scores[0, 0, :2] = (0.0, 1.0)
    groups = pd.DataFrame({"sex": rng.choice(["F", "M"], n_images),
                           "site": rng.choice(["a", "b", "c"], n_images)})
    groups.loc[[0, 1], "sex"] = ["F", "M"]
    groups.loc[3, "site"] = None
    return scores.astype(dtype), truth, groups


def flat_values(scores):
    """What evaluate gets for these maps: uint8 v as v / 255, other dtypes as they are."""
    if scores.dtype == np.uint8:
        return scores.reshape(-1) / 255.0
    return scores.reshape(-1)


def flat_evaluate(scores, truth, groups, roi=None, **options):
    per_image = scores[0].size
    rows = np.repeat(np.arange(len(groups)), per_image)
    values, labels = flat_values(scores), truth.reshape(-1).astype(np.int64)
    if roi is not None:
        keep = roi.reshape(-1).astype(bool)
        values, labels, rows = values[keep], labels[keep], rows[keep]
    frame = groups.iloc[rows].reset_index(drop=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fm.evaluate(labels, values, frame, **options)


def assert_reports_equal(mine, expected):
    a, b = mine.by_group, expected.by_group
    assert list(a.index) == list(b.index)
    assert list(a.columns) == list(b.columns)
    assert a["skipped"].tolist() == b["skipped"].tolist()
    numbers = a.drop(columns="skipped").astype(float).to_numpy()
    wanted = b.drop(columns="skipped").astype(float).to_numpy()
    np.testing.assert_allclose(numbers, wanted, rtol=0, atol=TOL, equal_nan=True)
    assert list(mine.summary.index) == list(expected.summary.index)
    assert list(mine.summary.columns) == list(expected.summary.columns)
    np.testing.assert_allclose(mine.summary.astype(float).to_numpy(), expected.summary.astype(float).to_numpy(),
                               rtol=0, atol=TOL, equal_nan=True)
    assert mine.overall.keys() == expected.overall.keys()
    np.testing.assert_allclose(list(mine.overall.values()), list(expected.overall.values()), rtol=0, atol=TOL)
    pd.testing.assert_frame_equal(mine.gaps, expected.gaps, check_exact=False, rtol=0, atol=TOL)
    budget_notes = [w for w in mine.warnings if w.startswith("max_memory=")]  # tiny budgets: a slow run
    assert [w for w in mine.warnings if w not in budget_notes] == expected.warnings


def voxel_report(scores, truth, groups, **options):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fm.evaluate_voxels(scores, truth, groups, **options)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
def test_equals_evaluate_on_flattened_voxels(dtype):
    scores, truth, groups = make_maps(dtype=dtype)
    assert_reports_equal(voxel_report(scores, truth, groups), flat_evaluate(scores, truth, groups))


def test_distinct_float_scores_without_ties():
    scores, truth, groups = make_maps(1, levels=0)
    assert_reports_equal(voxel_report(scores, truth, groups), flat_evaluate(scores, truth, groups))


def test_uint8_maps_are_value_over_255():
    scores, truth, groups = make_maps(2, levels=0)
    quantised = np.round(scores * 255).astype(np.uint8)
    report = voxel_report(quantised, truth, groups)
    assert report.metadata["score_dtype"] == "uint8 (value / 255)"
    assert_reports_equal(report, flat_evaluate(quantised, truth, groups))


def test_float64_scores_that_share_their_upper_32_bits():
    scores, truth, groups = make_maps(3, dtype=np.float64)
    scores = 0.5 + np.arange(scores.size).reshape(scores.shape) % 7 * 2.0 ** -50  # one float32, 7 float64 values
    assert_reports_equal(voxel_report(scores, truth, groups), flat_evaluate(scores, truth, groups))


def test_roi_masks_with_an_empty_roi():
    scores, truth, groups = make_maps(4)
    roi = np.random.default_rng(4).random(scores.shape) < 0.6
    roi[5] = False  # one image without any voxel in its ROI
    report = voxel_report(scores, truth, groups, roi_masks=roi)
    assert_reports_equal(report, flat_evaluate(scores, truth, groups, roi=roi))
    assert report.metadata["n_samples"] == roi.sum()


def test_one_class_groups_are_skipped_as_in_evaluate():
    scores, truth, groups = make_maps(5)
    truth[(groups["site"] == "c").to_numpy()] = False  # site c has negatives only
    report = voxel_report(scores, truth, groups)
    assert report.by_group.loc[("site", "c"), "skipped"] == "only label 0"
    assert_reports_equal(report, flat_evaluate(scores, truth, groups))


@pytest.mark.parametrize("max_memory", [1, 3000, "1GB"])
def test_windows_give_the_same_report(max_memory):
    """Tiny budgets cut the score range into many windows (one per bucket with max_memory=1)."""
    scores, truth, groups = make_maps(6, levels=0)
    report = voxel_report(scores, truth, groups, max_memory=max_memory)
    if max_memory == 1:
        assert report.metadata["windows"] > 20
        # ... and say so, with the budget that reads the maps once
        assert re.match(r"max_memory=1 holds 0 voxel records per window; the largest score bucket \(\d+ records\)"
                        r".* read \d+ times .*; max_memory='1MB' holds every record in one window$", report.warnings[0])
    else:
        assert not any(w.startswith("max_memory") for w in report.warnings)
    assert_reports_equal(report, flat_evaluate(scores, truth, groups))
    float64 = scores.astype(np.float64)
    assert_reports_equal(voxel_report(float64, truth, groups, max_memory=max_memory),
                         flat_evaluate(float64, truth, groups))


@pytest.mark.parametrize("options", [{"n_jobs": 3}, {"n_jobs": 2, "max_memory": 2000}, {"n_jobs": 2, "threshold": 0.3}])
def test_sweep_on_several_threads(monkeypatch, options):
    """Bucket ranges swept on their own threads from the counts below them give the same report."""
    from fairmedfm_fast._backends import voxel_sweep

    monkeypatch.setattr(voxel_sweep, "PARALLEL_SWEEP", 0)
    for levels in (0, 5):
        scores, truth, groups = make_maps(12, n_images=20, levels=levels)
        expected = flat_evaluate(scores, truth, groups, threshold=options.get("threshold"))
        assert_reports_equal(voxel_report(scores, truth, groups, **options), expected)


def test_a_large_bucket_ordered_in_two_passes():
    """More than 2**17 voxels in one bucket (float32 scores within [0.5, 0.5 + 2**-8)), ties among them."""
    rng = np.random.default_rng(13)
    scores, truth, groups = make_maps(13, n_images=5, shape=(190, 190))
    scores = (0.5 + rng.integers(0, 1 << 16, scores.shape) * 2.0 ** -24).astype(np.float32)
    scores[1, :40] = scores[1, 0, 0]  # a long run of one score in one image
    for n_jobs in (1, 2):
        assert_reports_equal(voxel_report(scores, truth, groups, n_jobs=n_jobs), flat_evaluate(scores, truth, groups))


def test_many_groups_count_through_each_voxels_cell():
    """More slots than the per-score lanes hold: runs of equal scores add up through the cells' slots."""
    scores, truth, groups = make_maps(14, n_images=60, levels=8)
    groups["site"] = [f"s{i % 40}" for i in range(60)]
    assert_reports_equal(voxel_report(scores, truth, groups), flat_evaluate(scores, truth, groups))


@pytest.mark.parametrize("max_memory", [None, 2000])
def test_streamed_maps_flush_small_stages_on_two_threads(monkeypatch, max_memory):
    """Stages of 50 records: flushes of two threads sort into the arena at once while it grows
    (a one-shot iterator) or into each window's arena (a re-iterable)."""
    from fairmedfm_fast._backends import voxels

    monkeypatch.setattr(voxels, "_STAGE", 50)
    scores, truth, groups = make_maps(15, n_images=30, shape=(9, 8), levels=20)
    pairs = list(zip(scores, truth))
    source = iter(pairs) if max_memory is None else pairs
    report = voxel_report(source, None, groups, n_jobs=2, max_memory=max_memory)
    assert (report.metadata["windows"] > 1) == (max_memory is not None)
    assert_reports_equal(report, flat_evaluate(scores, truth, groups))


@pytest.mark.parametrize("streamed", [False, True])
def test_a_budget_below_the_old_staging_reserve_still_reads_the_maps_once(streamed):
    """Stages are sized to max_memory (and maps in memory need none): 100MB on two threads used to
    leave no room beside 168 MB of stages, and every score bucket became a window (a read of the maps)."""
    scores, truth, groups = make_maps(16, n_images=8, shape=(40, 40), levels=0)
    source = (list(zip(scores, truth)), None) if streamed else (scores, truth)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no warning about the budget either
        report = fm.evaluate_voxels(*source, groups, max_memory="100MB", n_jobs=2)
    assert report.metadata["windows"] == 1
    assert_reports_equal(report, flat_evaluate(scores, truth, groups))
    from fairmedfm_fast._backends import voxels

    assert voxels._staging(100 << 20, 2, True) <= (100 << 20) // voxels._STAGE_SHARE
    assert voxels._staging(100 << 20, 2, False) == 0
    # the budget the warning names is enough: no warning there, a few windows
    with pytest.warns(UserWarning, match=r"max_memory=2000 holds \d+ voxel records per window.* so the maps were "
                                         r"read \d\d+ times .*; max_memory='\d+MB' (holds|makes)") as caught:
        fm.evaluate_voxels(*source, groups, max_memory=2000, n_jobs=2)
    named = re.search(r"max_memory='(\d+)MB' (holds|makes)", str(caught[0].message))
    report = voxel_report(*source, groups, max_memory=int(named[1]) << 20, n_jobs=2)
    assert report.metadata["windows"] <= 10 and not report.warnings[0].startswith("max_memory")


def test_threshold_and_intersectional():
    scores, truth, groups = make_maps(7)
    assert_reports_equal(voxel_report(scores, truth, groups, threshold=0.4, intersectional=True),
                         flat_evaluate(scores, truth, groups, threshold=0.4, intersectional=True))


def test_auc_equals_sklearn_per_group():
    from sklearn.metrics import roc_auc_score

    scores, truth, groups = make_maps(8, levels=12)
    report = voxel_report(scores, truth, groups)
    for sex in ("F", "M"):
        images = (groups["sex"] == sex).to_numpy()
        expected = roc_auc_score(truth[images].reshape(-1), scores[images].reshape(-1))
        assert abs(report.by_group.loc[("sex", sex), "auc"] - expected) < TOL


def test_inputs_as_lists_paths_pairs_and_callables(tmp_path):
    scores, truth, groups = make_maps(9)
    expected = flat_evaluate(scores, truth, groups)
    paths = []
    for i in range(len(scores)):
        np.save(tmp_path / f"s{i}.npy", scores[i])
        np.save(tmp_path / f"t{i}.npy", truth[i])
        paths.append((str(tmp_path / f"s{i}.npy"), str(tmp_path / f"t{i}.npy")))
    pairs = list(zip(scores, truth))
    for given_maps, given_masks, options in (
            (list(scores), list(truth), {}),
            ([p for p, _ in paths], [t for _, t in paths], {}),
            ([p for p, _ in paths], [t for _, t in paths], {"max_memory": 1}),
            (pairs, None, {"max_memory": 1}),
            (lambda: iter(pairs), None, {"max_memory": 1}),
            (iter(pairs), None, {}),
            (list(scores), list(truth), {"n_jobs": 1})):
        assert_reports_equal(voxel_report(given_maps, given_masks, groups, **options), expected)


def test_accumulator_merges_and_pickles():
    scores, truth, groups = make_maps(10, levels=0)
    expected = flat_evaluate(scores, truth, groups)
    first, second = fm.VoxelAccumulator(groups), fm.VoxelAccumulator(groups)
    for i in np.random.default_rng(0).permutation(len(scores)):
        (first if i % 2 else second).add(scores[i], truth[i], i)
    merged = first.merge(pickle.loads(pickle.dumps(second)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert_reports_equal(merged.result(), expected)


def test_bad_inputs_raise_clear_errors():
    scores, truth, groups = make_maps(11)
    bad = scores.copy()
    bad[2, 1, 1] = 1.5
    with pytest.raises(ValueError, match=r"image 2 has values outside \[0, 1\]"):
        fm.evaluate_voxels(bad, truth, groups)
    bad[2, 1, 1] = np.nan
    with pytest.raises(ValueError, match="outside"):
        fm.evaluate_voxels(bad, truth, groups, max_memory=1)
    with pytest.raises(ValueError, match="shape"):
        fm.evaluate_voxels(list(scores), [t[:, :2] for t in truth], groups)
    with pytest.raises(ValueError, match="rows"):
        fm.evaluate_voxels(scores, truth, groups.iloc[:3])
    with pytest.raises(ValueError, match="one dtype"):
        fm.evaluate_voxels([scores[0], scores[1].astype(np.float64)], list(truth[:2]), groups.iloc[:2])
    with pytest.raises(ValueError, match="only label 0"):
        fm.evaluate_voxels(scores, np.zeros_like(truth), groups)
    with pytest.raises(ValueError, match="max_memory"):
        fm.evaluate_voxels(scores, truth, groups, max_memory="lots")
    with pytest.raises(ValueError, match="image_index"):
        fm.VoxelAccumulator(groups).add(scores[0], truth[0], len(groups))
    assert voxel_report(iter(zip(scores, truth)), None, groups, max_memory=1).metadata["windows"] == 1  # read once


@given(seed=st.integers(0, 2**32 - 1), levels=st.sampled_from([0, 3, 10, 255]),
       n_images=st.integers(4, 7), max_memory=st.sampled_from([None, 1]))
def test_random_maps_equal_evaluate(seed, levels, n_images, max_memory):
    scores, truth, groups = make_maps(seed, n_images=n_images, shape=(3, 4), levels=levels)
    truth[0, 0, 0], truth[1, 0, 0] = True, False  # both labels present
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = flat_evaluate(scores, truth, groups)
        assert_reports_equal(voxel_report(scores, truth, groups, max_memory=max_memory), expected)


def test_kernels_without_jit():
    """Pure-Python kernels (NUMBA_DISABLE_JIT=1) catch out-of-bounds indexing that compiled code would not."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    script = (
        "import numba, numpy as np\n"
        "assert numba.config.DISABLE_JIT\n"
        "import fairmedfm_fast.voxels as V\n"
        "V._PARALLEL_SWEEP = 0\n"
        "from test_voxels import make_maps, voxel_report, flat_evaluate, assert_reports_equal\n"
        "s, t, g = make_maps(3, n_images=6, shape=(3, 4), levels=8)\n"
        "for maps in (s, s.astype(np.float64), (s * 255).astype(np.uint8)):\n"
        "    for options in ({}, {'max_memory': 1, 'n_jobs': 2}, {'n_jobs': 2}):\n"
        "        assert_reports_equal(voxel_report(maps, t, g, **options), flat_evaluate(maps, t, g))\n"
        "print('ok')\n")
    tests_dir = Path(__file__).resolve().parent
    env = {**os.environ, "NUMBA_DISABLE_JIT": "1",
           "PYTHONPATH": os.pathsep.join([str(tests_dir.parent), str(tests_dir), os.environ.get("PYTHONPATH", "")])}
    result = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip() == "ok"


def test_command_line_score_maps(tmp_path, capsys):
    """``fairmedfm-fast score maps.csv --score-map ... --true-mask ... --sensitive sex`` prints the voxel report."""
    import json

    from fairmedfm_fast import cli

    scores, truth, groups = make_maps(13)
    rows = []
    for i in range(len(scores)):
        np.save(tmp_path / f"s{i}.npy", scores[i])
        np.save(tmp_path / f"t{i}.npy", truth[i])
        rows.append({"score_path": f"s{i}.npy", "truth_file": f"t{i}.npy", "sex": groups["sex"][i]})
    pd.DataFrame(rows).to_csv(tmp_path / "maps.csv", index=False)
    capsys.readouterr()
    code = cli.main(["score", str(tmp_path / "maps.csv"), "--score-map", "score_path", "--true-mask", "truth_file",
                     "--sensitive", "sex", "--max-memory", "1MB"])
    out, err = capsys.readouterr()
    assert code is None, err  # success returns None, as fairmedfm's main does
    expected = flat_evaluate(scores, truth, groups[["sex"]])
    printed = json.loads(out)
    assert abs(printed["sex"]["auc-gap"] - expected.summary.loc["sex", "auc-gap"]) < TOL
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["score", str(tmp_path / "maps.csv"), "--score-map", "score_path", "--sensitive", "sex"])
    assert exit_info.value.code == 2 and "--true-mask" in capsys.readouterr().err


def test_voxel_report_plots_and_html(tmp_path):
    """Bars, the pairwise heat map and the HTML page need only the tables; ROC and reliability curves
    need per-sample scores, which a voxel report does not keep: a clear error, a note in the page."""
    pytest.importorskip("matplotlib")
    from matplotlib.figure import Figure

    scores, truth, groups = make_maps(9)
    report = voxel_report(scores, truth, groups)
    for kind in ("bars", "pairwise"):
        assert isinstance(report.plot(kind), Figure)
    with pytest.raises(ValueError, match="evaluate_voxels keep no per-voxel scores"):
        report.plot("roc")
    text = report.to_html(tmp_path / "voxels.html")
    assert text.count("<img") == 2 and text.count("keeps none") == 2
    assert "sex" in text and (tmp_path / "voxels.html").exists()


@pytest.mark.parametrize("dtype, max_memory", [(np.float32, None), (np.uint8, None), (np.float64, 3000)])
def test_opt_in_metrics_equal_evaluates(dtype, max_memory):
    """metrics=[...] as in evaluate: the confusion-count metrics from the sweep, the Brier score's
    squared errors summed per image as each map is read (in memory and in windows)."""
    metrics = ["brier", "selection_rate", "fpr", "fnr"]
    scores, truth, groups = make_maps(7, levels=0)
    scores = np.round(scores * 255).astype(np.uint8) if dtype == np.uint8 else scores.astype(dtype)
    roi = np.random.default_rng(7).random(scores.shape) < 0.8
    report = voxel_report(scores, truth, groups, roi_masks=roi, metrics=metrics, max_memory=max_memory)
    assert_reports_equal(report, flat_evaluate(scores, truth, groups, roi=roi, metrics=metrics))
    assert report.metadata["metrics"] == metrics
    assert {"brier", "fpr@best_f1", "dp", "fnr-gap"} <= {*report.by_group.columns, *report.summary.columns}


def test_accumulator_metrics_merge_and_pickle():
    scores, truth, groups = make_maps(8)
    halves = [fm.VoxelAccumulator(groups, metrics=["brier"]) for _ in range(2)]
    for i in range(len(groups)):
        halves[i % 2].add(scores[i], truth[i], i)
    merged = pickle.loads(pickle.dumps(halves[0])).merge(halves[1])
    assert_reports_equal(merged.result(), flat_evaluate(scores, truth, groups, metrics=["brier"]))
    with pytest.raises(ValueError, match="same metrics"):
        fm.VoxelAccumulator(groups).merge(halves[1])
    with pytest.raises(ValueError, match=r"metrics='ap' is not available in evaluate_voxels: it needs "
                                         r"precision\.precision_sums"):
        voxel_report(scores, truth, groups, metrics=["ap"])
    with pytest.raises(ValueError, match="not an opt-in metric"):
        fm.VoxelAccumulator(groups, metrics=["auc"])
