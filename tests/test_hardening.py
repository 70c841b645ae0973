"""Bad inputs and files, oracle corners, and defaults that hide mistakes (issue 15, one test or more each)."""
from __future__ import annotations

import gzip
import json
import re
import warnings

import numpy as np
import pandas as pd
import pytest

import fairmedfm_fast as fm
from fairmedfm_fast import cli

fairmedfm = pytest.importorskip("fairmedfm")

Y = np.array([0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1])
P = np.array([.1, .9, .2, .8, .3, .7, .4, .6, .45, .55, .35, .65])
G = np.array([0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2])


def _groups(report, attribute):
    return list(report.by_group.loc[attribute].index)


def _quiet(function, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return function(*args, **kwargs)


def run_cli(argv, capsys):
    capsys.readouterr()
    try:
        result = cli.main([str(a) for a in argv])
        code = 0
    except SystemExit as exc:
        result, code = None, exc.code
    out, err = capsys.readouterr()
    return code, out, err, result


# ------------------------------------------------------------------------------------------------
# 1. datetime64 / timedelta64 attributes are named as pandas names them


@pytest.mark.parametrize("unit", ["Y", "M", "W", "D", "h", "m", "s", "ms", "us", "ns"])
@pytest.mark.parametrize("kind", ["datetime64", "timedelta64"])
def test_dates_and_durations_are_named_as_pandas_names_them(kind, unit):
    values = np.array([0, 517, -3])[G].astype(f"{kind}[{unit}]")
    ours = _quiet(fm.evaluate, Y, P, {"t": values})
    theirs = _quiet(fairmedfm.evaluate, Y, P, {"t": values})
    assert _groups(ours, "t") == _groups(theirs, "t")
    assert not any(name.lstrip("-").isdigit() for name in _groups(ours, "t"))  # not raw integers
    assert ours.summary.loc["t", "auc-gap"] == pytest.approx(theirs.summary.loc["t", "auc-gap"], abs=1e-12)


def test_not_a_time_is_missing():
    values = np.array(["2020-01-01", "2021-01-01", "NaT"])[G].astype("datetime64[D]")
    report = _quiet(fm.evaluate, Y, P, {"t": values})
    assert _groups(report, "t") == ["2020-01-01 00:00:00", "2021-01-01 00:00:00"]  # fairmedfm adds 'NaT'
    assert report.summary.loc["t", "n"] == 8


# ------------------------------------------------------------------------------------------------
# 2. cli.main raises SystemExit with the status, as fairmedfm's main does


def test_main_exits_like_fairmedfm_main(tmp_path, capsys):
    from fairmedfm import cli as oracle_cli

    frame = pd.DataFrame({"prob": P, "label": Y, "sex": np.array(["F", "M", "X"])[G]})
    frame.to_csv(tmp_path / "p.csv", index=False)
    cases = [["score", tmp_path / "p.csv"],  # success: None
             ["score", tmp_path / "p.csv", "--sensitive", "race"],  # input error: 2
             ["score", tmp_path / "nothing.csv"],  # missing file: 2
             ["score", "--task", "nope"],  # usage error: 2
             ["--version"]]  # 0
    for argv in cases:
        argv = [str(a) for a in argv]
        outcomes = []
        for main in (cli.main, oracle_cli.main):
            capsys.readouterr()
            try:
                outcomes.append(("returned", main(argv)))
            except SystemExit as exc:
                outcomes.append(("exit", exc.code))
        assert outcomes[0] == outcomes[1], argv
    capsys.readouterr()


def test_console_entry_point_still_exits_with_the_status(tmp_path, monkeypatch):
    import atexit

    codes, handlers_run = [], []
    monkeypatch.setattr(cli.os, "_exit", codes.append)
    # cli.run runs the exit handlers before os._exit; running this process's real ones here would
    # shut down pools that later tests use (dask's default thread pool registers one).
    monkeypatch.setattr(atexit, "_run_exitfuncs", lambda: handlers_run.append(True))
    monkeypatch.setattr(cli.sys, "argv", ["fairmedfm-fast", "score", str(tmp_path / "missing.csv")])
    cli.run()
    monkeypatch.setattr(cli.sys, "argv", ["fairmedfm-fast", "--version"])
    cli.run()
    assert codes == [2, 0] and handlers_run == [True, True]


# ------------------------------------------------------------------------------------------------
# 4. threshold outside [0, 1]


@pytest.mark.parametrize("threshold", [1.5, -0.1, 7, float("nan"), np.float64(2)])
def test_threshold_outside_the_unit_interval_is_an_error(threshold):
    with pytest.raises(ValueError, match=r"threshold=.*outside \[0, 1\]"):
        fm.evaluate(Y, P, G, threshold=threshold)
    with pytest.raises(ValueError, match="threshold"):
        fm.accuracy_gap(Y, P, sensitive_features=G, threshold=threshold)
    assert fm.evaluate(Y, P, G, threshold=1).metadata["threshold"] == 1.0


def test_cli_threshold_outside_the_unit_interval_exits_2(tmp_path, capsys):
    pd.DataFrame({"prob": P, "label": Y, "sex": G}).to_csv(tmp_path / "p.csv", index=False)
    code, out, err, _ = run_cli(["score", tmp_path / "p.csv", "--threshold", "7"], capsys)
    assert code == 2 and out == ""
    assert len(err.splitlines()) == 1 and "--threshold" in err and "[0, 1]" in err


# ------------------------------------------------------------------------------------------------
# 5. an invalid score_column


@pytest.mark.parametrize("column", ["one", 1.5, None.__class__, True])
def test_invalid_score_column_names_the_argument_and_the_valid_columns(column):
    scores = np.column_stack([1 - P, P * 0.5, P * 0.5])
    with pytest.raises(ValueError, match=r"score_column=.*valid columns .* are \[0, 1, 2\]"):
        fm.evaluate(Y, scores, G, score_column=column)


def test_score_columns_fairmedfm_accepts_still_work():
    scores = np.column_stack([1 - P, P])
    expected = fm.evaluate(Y, scores, G, score_column=1).summary
    for column in (1.0, "1", np.int64(1)):
        pd.testing.assert_frame_equal(fm.evaluate(Y, scores, G, score_column=column).summary, expected)
    with pytest.raises(ValueError, match=r"score_column=5 is out of range; .* are \[0, 1\]"):
        fm.evaluate(Y, scores, G, score_column=5)


# ------------------------------------------------------------------------------------------------
# 9. values in messages as users wrote them


def test_messages_show_values_as_users_wrote_them():
    messages = []
    calls = [
        lambda: fm.metrics.classification_fairness(P[:4], Y[:4] * 0 + np.array([0, 1, 0, 0]), np.int64([0, 0, 1, 1])),
        lambda: fm.evaluate(Y, P, G, pos_label=np.int64(7)),
        lambda: fm.evaluate(Y, P, G, threshold=np.float64(1.5)),
        lambda: fm.evaluate(Y, P, G, n_boot=np.int64(-1)),
        lambda: fm.evaluate(Y, P, G, ci=np.float64(2.0)),
        lambda: fm.evaluate(Y, P, {"age": P * 100}, bins={"age": np.int64(1)}),
        lambda: fm.evaluate(Y, P, {"age": P * 100}, bins={"age": [np.float64(1), np.float64(1)]}),
        lambda: fm.evaluate(Y, np.column_stack([1 - P, P]), G, score_column=np.float64(0.5)),
        lambda: fm.evaluate_segmentation(G, pred_masks=[np.ones(3)] * 12, true_masks=[np.ones(3)] * 12,
                                         mask_threshold=np.str_("x")),
        lambda: fm.evaluate_segmentation(G, pred_masks=[np.ones(3)] * 12, true_masks=[np.ones(3)] * 12,
                                         empty_score=np.str_("x")),
    ]
    for call in calls:
        with pytest.raises(ValueError) as info, warnings.catch_warnings():
            warnings.simplefilter("ignore")
            call()
        messages.append(str(info.value))
    assert "group 1 has only label 0" in messages[0]
    for message in messages:
        assert not re.search(r"np\.\w+\(", message), message


# ------------------------------------------------------------------------------------------------
# 13. to_json(path) writes the file and returns the text, as fairmedfm 0.4.2 does


def test_to_json_with_a_path_writes_the_file_and_returns_the_text(tmp_path):
    report = fm.evaluate(Y, P, G)
    written = report.to_json(tmp_path / "out" / "r.json")  # the folder is made
    assert isinstance(written, str) and written == report.to_json()
    assert json.loads((tmp_path / "out" / "r.json").read_text()) == json.loads(written)
    segmentation = fm.evaluate_segmentation(G, dice=P)
    text = segmentation.to_json(tmp_path / "s.json")
    assert json.loads(text) == json.loads((tmp_path / "s.json").read_text())


def _unused():  # keep imports used by later sections
    return gzip


# ------------------------------------------------------------------------------------------------
# 6. work that cannot fit in memory is refused before anything is allocated


@pytest.mark.parametrize("argument,value", [("n_boot", 10**30), ("n_boot", 2**40), ("n_permutations", 10**30),
                                            ("n_permutations", 2**40)])
def test_huge_resampling_counts_name_the_argument(argument, value, monkeypatch):
    from fairmedfm_fast._engine import resample as _resample

    for function in ("bootstrap", "permutation_pvalues", "dice_intervals", "dice_permutation_pvalues"):
        monkeypatch.setattr(_resample, function, None)  # the check comes before any resampling
    with pytest.raises(ValueError, match=rf"{argument}={value} would need .* of memory"):
        fm.evaluate(Y, P, G, **{argument: value})
    with pytest.raises(ValueError, match=rf"{argument}={value} would need"):
        fm.evaluate_segmentation(G, dice=P, **{argument: value})


def test_huge_number_of_quantile_groups_names_the_bins(monkeypatch):
    with pytest.raises(ValueError, match=r"bins\['age'\]=1000000000000 would need .* memory"):
        fm.evaluate(Y, P, {"age": P * 100}, bins={"age": 10**12})
    expected = fm.evaluate(Y, P, G, n_boot=20, n_permutations=20, random_state=0)
    monkeypatch.setattr("fairmedfm_fast._inputs.arrays.memory_bytes", lambda: 1 << 20)
    with pytest.raises(ValueError, match=r"n_boot=5000 would need .* more than this machine's 1 MiB"):
        fm.evaluate(Y, P, G, n_boot=5000)
    # resampling that fits runs in full, as it does with all the memory
    small = fm.evaluate(Y, P, G, n_boot=20, n_permutations=20, random_state=0)
    assert small.ci["n_boot"] == 20 and small.ci["level"] == 0.95
    for part in ("summary", "by_group"):
        pd.testing.assert_frame_equal(small.ci[part], expected.ci[part])
        bounds = small.ci[part]
        lo, hi = bounds.filter(regex="_lo$").to_numpy(float), bounds.filter(regex="_hi$").to_numpy(float)
        assert lo.shape == hi.shape and lo.size and (lo <= hi + 1e-12)[~np.isnan(lo)].all()
    pd.testing.assert_frame_equal(small.p_values, expected.p_values)
    p_values = small.p_values.to_numpy(float)
    # every group is small (2 positives and 2 negatives): no gap among groups that are not small, so
    # nothing is tested (issue 41), and no group has a bootstrap interval
    assert np.isnan(p_values).all() and small.by_group["small_group"].all()
    assert small.ci["by_group"].filter(regex="_(lo|hi)$").isna().all().all()
    assert list(small.ci["summary"].index) == list(small.summary.index) == ["sensitive"]


def test_cli_huge_bootstrap_exits_2(tmp_path, capsys):
    pd.DataFrame({"prob": P, "label": Y, "sex": G}).to_csv(tmp_path / "p.csv", index=False)
    code, out, err, _ = run_cli(["score", tmp_path / "p.csv", "--bootstrap", str(2**40)], capsys)
    assert code == 2 and out == "" and len(err.splitlines()) == 1 and "--bootstrap" in err


# ------------------------------------------------------------------------------------------------
# 7. corrupt, truncated or empty mask files: one error type naming the sample, the path and the reason


def _bad_mask_files(folder):
    import nibabel
    from PIL import Image

    good = np.zeros((6, 6), np.uint8)
    good[1:4, 1:4] = 1
    np.save(folder / "good.npy", good)
    raw = (folder / "good.npy").read_bytes()
    files = {}

    def write(name, data):
        (folder / name).write_bytes(data)
        files[name] = folder / name

    write("empty.npy", b"")
    write("truncated.npy", raw[: len(raw) - 10])
    write("text.npy", b"0 1 1 0\n1 1 0 0\n")
    np.save(folder / "objects.npy", np.array([good, None], dtype=object), allow_pickle=True)
    files["objects.npy"] = folder / "objects.npy"
    np.save(folder / "strings.npy", np.array([["a", "b"], ["c", "d"]]))
    files["strings.npy"] = folder / "strings.npy"
    write("garbage.npz", b"PK\x03\x04 not really a zip")
    np.savez(folder / "full.npz", mask=good)
    write("truncated.npz", (folder / "full.npz").read_bytes()[:-30])
    np.savez(folder / "nothing.npz")
    files["nothing.npz"] = folder / "nothing.npz"
    nibabel.save(nibabel.Nifti1Image(np.zeros((8, 8, 8), np.uint8), np.eye(4)), str(folder / "full.nii.gz"))
    compressed = (folder / "full.nii.gz").read_bytes()
    write("truncated.nii.gz", compressed[: len(compressed) // 2])
    nibabel.save(nibabel.Nifti1Image(np.zeros((8, 8, 8), np.uint8), np.eye(4)), str(folder / "full.nii"))
    write("short.nii.gz", gzip.compress((folder / "full.nii").read_bytes()[:-100]))
    write("empty.nii.gz", b"")
    Image.fromarray(good * 255).save(folder / "full.png")
    png = (folder / "full.png").read_bytes()
    write("truncated.png", png[: len(png) // 2])
    write("garbage.png", b"\x89PNG\r\n\x1a\n garbage")
    write("empty.png", b"")
    (folder / "folder.npy").mkdir()
    files["folder.npy"] = folder / "folder.npy"
    return good, files


@pytest.mark.parametrize("n_jobs", [1, 2])
def test_unreadable_mask_files_name_sample_path_and_reason(tmp_path, monkeypatch, n_jobs):
    pytest.importorskip("nibabel")
    pytest.importorskip("PIL")
    MaskFileError = fm.MaskFileError
    assert "MaskFileError" in fm.__all__

    monkeypatch.setenv("FAIRMEDFM_FAST_N_JOBS", str(n_jobs))
    good, files = _bad_mask_files(tmp_path)
    groups = np.arange(13) % 2
    for path in files.values():
        preds = [tmp_path / "good.npy"] * 12 + [path]
        with pytest.raises(MaskFileError) as info:
            fm.evaluate_segmentation(groups, pred_masks=preds, true_masks=[good] * 13)
        message = str(info.value)
        assert isinstance(info.value, ValueError)
        assert message.startswith("pred_masks[12]: ") and str(path) in message, message
        assert "\n" not in message and len(message) > len(f"pred_masks[12]: {path}") + 10, message


def test_cli_unreadable_mask_file_is_one_line_exit_2(tmp_path, capsys):
    pytest.importorskip("nibabel")
    pytest.importorskip("PIL")
    good, files = _bad_mask_files(tmp_path)
    for name in ("truncated.nii.gz", "objects.npy", "folder.npy", "truncated.png"):
        pd.DataFrame({"pred_mask": ["good.npy", name], "gt_mask": ["good.npy", "good.npy"],
                      "sex": ["F", "M"]}).to_csv(tmp_path / "masks.csv", index=False)
        code, out, err, _ = run_cli(["score", tmp_path / "masks.csv"], capsys)
        assert code == 2 and out == "", err
        assert len(err.splitlines()) == 1 and name in err and "[1]" in err and "bug" not in err, err


# ------------------------------------------------------------------------------------------------
# 8. colliding names


def test_intersections_whose_names_collide_are_made_distinct():
    a = np.array(["x & y", "x", "x & y", "x"] * 3)
    b = np.array(["z", "y & z", "z", "y & z"] * 3)
    y = np.array([0, 0, 1, 1] * 3)
    report = fm.evaluate(y, P, {"a": a, "b": b}, intersectional=True)
    groups = _groups(report, "a & b")
    assert groups == ["x & (y & z)", "(x & y) & z"]  # product order: "x" before "x & y"
    assert list(report.by_group.loc["a & b", "n"]) == [6, 6]
    # names without the separator inside are unchanged (as fairmedfm names them)
    plain = fm.evaluate(y, P, {"a": np.where(a == "x", "x", "w"), "b": b}, intersectional=True)
    assert _groups(plain, "a & b") == ["w & z", "x & y & z"]


def test_intersection_names_with_parentheses_stay_distinct():
    a = np.array(["x & y", "x", "(x & y)"] * 4)
    b = np.array(["z", "y & z", "z"] * 4)
    report = fm.evaluate(np.array([0, 1] * 6), P, {"a": a, "b": b}, intersectional=True)
    assert sorted(_groups(report, "a & b")) == sorted(["(x & y) & z", "x & (y & z)", "((x & y)) & z"])


def test_duplicate_attribute_names_are_an_error():
    frame = pd.DataFrame({"s": G, "t": G})
    frame.columns = ["s", "s"]
    with pytest.raises(ValueError, match="several attributes named 's'"):
        fm.evaluate(Y, P, frame)
    with pytest.raises(ValueError, match="several attributes named '1'"):
        fm.evaluate(Y, P, {1: G, "1": G})
    with pytest.raises(ValueError, match="several attributes named 's'"):
        fm.auc_gap(Y, P, sensitive_features=frame)


# ------------------------------------------------------------------------------------------------
# 10. missing scores: one rule (the API raises; both command-line engines leave the rows out)


def test_missing_scores_are_called_missing_in_the_api():
    import pyarrow as pa

    scores = [0.1, None, 0.2, 0.8, 0.3, 0.7, 0.4, 0.6, 0.45, np.nan, 0.35, 0.65]
    for form in (pa.array(scores, pa.float64()), pd.Series(scores, dtype="float64[pyarrow]"),
                 pd.Series(scores, dtype="Float64"), np.array(scores, dtype=float)):
        with pytest.raises(ValueError, match=r"y_score has 2 missing values \(NaN or null\) at samples \[1, 9\]"):
            fm.evaluate(Y, form, G)
    with pytest.raises(ValueError, match=r"y_true has 1 missing values .* at samples \[3\]"):
        fm.evaluate(np.where(np.arange(12) == 3, np.nan, Y), P, G)
    with pytest.raises(ValueError):  # as the oracle
        fairmedfm.evaluate(Y, np.array(scores, dtype=float), G)


def test_missing_scores_on_the_command_line_in_memory_and_on_dask(tmp_path, capsys):
    distributed = pytest.importorskip("distributed")
    from fairmedfm_fast._cli import dask as _cli_dask

    rng = np.random.default_rng(5)
    n = 400
    frame = pd.DataFrame({"y": rng.integers(0, 2, n).astype(float), "p": rng.random(n),
                          "sex": rng.choice(["F", "M"], n)})
    frame.loc[[3, 30], "p"] = np.nan
    frame.loc[[7], "y"] = np.nan
    frame["p"] = frame["p"].astype("float64[pyarrow]")
    frame.loc[[11], "p"] = None  # an Arrow null
    frame.to_parquet(tmp_path / "t.parquet", index=False)
    argv = ["score", str(tmp_path / "t.parquet"), "--label", "y", "--score", "p", "--sensitive", "sex"]
    code, out, err, _ = run_cli(argv, capsys)
    assert code == 0 and "left out 4 rows with a missing label or score" in err
    with distributed.LocalCluster(n_workers=1, processes=False, dashboard_address=None) as cluster:
        args = cli.build_parser().parse_args(argv + ["--engine", "dask"])
        args.scheduler = cluster.scheduler_address
        report, notes = _cli_dask.score_command(args)
    assert "left out 4 rows with a missing label or score" in notes
    printed = json.loads(out)["sex"]
    for key, value in report.to_dict()["attributes"]["sex"]["summary"].items():
        assert printed[key] == pytest.approx(value, rel=1e-9, abs=1e-12), key


# ------------------------------------------------------------------------------------------------
# 11. segmentation defaults that hide mistakes


def _square(value=1, size=8, dtype=np.uint8):
    mask = np.zeros((size, size), dtype)
    mask[2:5, 2:5] = value
    return mask


def test_label_in_no_mask_warns():
    masks = [_square(255) for _ in range(4)]
    report = fm.evaluate_segmentation(["a", "b"] * 2, pred_masks=masks, true_masks=masks, label=1)
    assert any("label=1 occurs in no mask" in w and "empty_score=1.0" in w for w in report.warnings)
    assert not any("label=" in w for w in fm.evaluate_segmentation(["a", "b"] * 2, pred_masks=masks,
                                                                  true_masks=masks, label=255).warnings)
    with pytest.warns(UserWarning, match="label=1 occurs in no mask"):
        fm.dice_gap(sensitive_features=["a", "b"] * 2, pred_masks=masks, true_masks=masks, label=1)


def test_pairs_with_both_masks_empty_are_counted():
    empty = np.zeros((8, 8), np.uint8)
    preds = [_square(), empty, empty, _square()]
    trues = [_square(), empty, _square(), empty]
    report = fm.evaluate_segmentation(["a", "b"] * 2, pred_masks=preds, true_masks=trues)
    assert [w for w in report.warnings if "empty" in w] == [
        "1 of 4 samples have an empty predicted and an empty ground-truth mask and got empty_score=1.0"]
    clean = fm.evaluate_segmentation(["a", "b"] * 2, pred_masks=[_square()] * 4, true_masks=[_square()] * 4)
    assert not [w for w in clean.warnings if "empty" in w]


def test_multi_label_masks_without_label_warn_once():
    multi = [_square(1) + np.eye(8, dtype=np.uint8) * 2 for _ in range(6)]
    report = fm.evaluate_segmentation(["a", "b"] * 3, pred_masks=multi, true_masks=multi)
    merged = [w for w in report.warnings if "merged" in w]
    assert merged == ["true_masks[0] holds the labels [1, 2, 3]; without label= every non-zero value is "
                      "foreground, so these labels were merged into one: pass label= to evaluate one class"]
    assert not [w for w in fm.evaluate_segmentation(["a", "b"] * 3, pred_masks=multi, true_masks=multi,
                                                     label=2).warnings if "merged" in w]
    scaled = [_square(255)] * 6  # one label saved as 255, and probabilities: nothing to say
    probabilities = [_square(1, dtype=np.float32) * 0.9] * 6
    quiet = fm.evaluate_segmentation(["a", "b"] * 3, pred_masks=probabilities, true_masks=scaled)
    assert not [w for w in quiet.warnings if "merged" in w or "empty" in w]


def test_cli_shape_mismatch_names_both_files(tmp_path, capsys):
    np.save(tmp_path / "p0.npy", _square())
    np.save(tmp_path / "t0.npy", _square())
    np.save(tmp_path / "p1.npy", _square(size=8))
    np.save(tmp_path / "t1.npy", _square(size=9))
    pd.DataFrame({"pred_mask": ["p0.npy", "p1.npy"], "gt_mask": ["t0.npy", "t1.npy"],
                  "sex": ["F", "M"]}).to_csv(tmp_path / "m.csv", index=False)
    code, out, err, _ = run_cli(["score", tmp_path / "m.csv"], capsys)
    assert code == 2 and out == "" and len(err.splitlines()) == 1
    assert "p1.npy" in err and "t1.npy" in err and "(8, 8)" in err and "(9, 9)" in err, err


# ------------------------------------------------------------------------------------------------
# 12. figures with many groups (30 sites)


@pytest.fixture(scope="module")
def thirty_sites():
    pytest.importorskip("matplotlib")
    rng = np.random.default_rng(30)
    n = 3000
    site = rng.integers(0, 30, n)
    y = rng.integers(0, 2, n)
    y[site == 29] = 0  # one site with a single label: skipped
    p = np.clip(0.35 * y + 0.65 * rng.random(n) + 0.01 * (site % 7), 0, 1)
    names = np.array([f"hospital_{i:02d}" for i in range(30)])
    return fm.evaluate(y, p, {"site": names[site]}), names


def _drawn(figure):
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = FigureCanvasAgg(figure)
    canvas.draw()
    return canvas.get_renderer()


def _extent(artist, renderer):
    return artist.get_window_extent(renderer)


def test_many_groups_roc_legend_outside_distinct_styles_and_skipped_marked(thirty_sites):
    report, names = thirty_sites
    figure = report.plot("roc")
    renderer = _drawn(figure)
    (ax,) = figure.get_axes()
    legend = ax.get_legend()
    assert _extent(legend, renderer).x0 >= _extent(ax, renderer).x1  # beside the axes, not over the curves
    assert _extent(ax, renderer).width >= 2 * figure.dpi  # and the axes keep their size
    lines = [line for line in ax.get_lines() if (line.get_gid() or "").startswith("roc:")]
    assert len(lines) == 29
    styles = {(tuple(np.round(__import__("matplotlib").colors.to_rgba(line.get_color()), 4)), line.get_marker())
              for line in lines}
    assert len(styles) == 29  # no two groups look the same
    assert len({line.get_color() for line in lines[:20]}) == 20  # 20 colours before any repeats
    assert "skipped (one label): hospital_29" in ax.get_title()


def test_many_groups_bars_auc_dots_and_readable_ticks(thirty_sites):
    report, names = thirty_sites
    figure = report.plot("bars")
    renderer = _drawn(figure)
    axes = figure.get_axes()
    auc = axes[0]
    assert auc.get_title() == "auc" and not [c for c in auc.containers if hasattr(c, "patches")]
    values = report.by_group.loc["site", "auc"].dropna()
    low, high = auc.get_ylim()
    assert low > 0.3 and low <= values.min() and high >= values.max()  # zoomed, not from 0
    assert "skipped (one label): hospital_29" in auc.get_xlabel()
    for ax in axes:
        boxes = [_extent(label, renderer) for label in ax.get_xticklabels() if label.get_text()]
        assert len(boxes) == 29
        for left, right in zip(boxes, boxes[1:]):
            assert left.x1 <= right.x0 + 0.5, (ax.get_title(), left, right)  # no overlap


def test_html_page_holds_the_command_line_notes(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    frame = pd.DataFrame({"prob": P, "label": Y, "sex": np.array(["F", "M", "X"])[G]})
    frame.loc[4, "prob"] = np.nan
    frame.to_csv(tmp_path / "p.csv", index=False)
    code, _, err, _ = run_cli(["score", tmp_path / "p.csv", "--html", tmp_path / "r.html"], capsys)
    assert code == 0, err
    page = (tmp_path / "r.html").read_text()
    assert "<h2>Notes</h2>" in page and "left out 1 rows with a missing label or score" in page
