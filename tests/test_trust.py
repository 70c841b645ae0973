"""Audits that can be trusted (#13): per-attribute bootstrap strata, stratify=None, min_group_size,
adjusted p-values and progress bars."""
import io
import json
import sys

import numpy as np
import pandas as pd
import pytest

import fairmedfm_fast as fm
from fairmedfm_fast import cli
from fairmedfm_fast._engine import classification as _engine
from fairmedfm_fast._engine import resample as _resample
from fairmedfm_fast._util import progress as _progress
from fairmedfm_fast.kernels import resampling


def _audit_data(n=3000, seed=0):
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < 0.35).astype(int)
    s = np.clip(rng.random(n) * 0.7 + 0.3 * y * rng.random(n), 0, 1)
    race = rng.choice(list("ABCDE"), n, p=[0.4, 0.3, 0.2, 0.09, 0.01])
    race = np.where(rng.random(n) < 0.02, None, race).astype(object)  # a few missing values
    frame = pd.DataFrame({"race": race, "sex": rng.choice(["F", "M"], n),
                          "age": rng.choice(["<40", "40-60", ">=60"], n),
                          "site": rng.choice([f"s{i}" for i in range(30)], n)})
    return y, s, frame


# ---------------------------------------------------------------------------------------------
# Per-attribute strata
# ---------------------------------------------------------------------------------------------

def test_an_attributes_intervals_do_not_depend_on_the_other_attributes():
    y, s, frame = _audit_data()
    options = {"n_boot": 40, "n_permutations": 30, "random_state": 3, "progress": False}
    alone = fm.evaluate(y, s, frame[["race"]], **options)
    for columns in (["race", "sex", "age", "site"], ["site", "age", "race", "sex"]):
        beside = fm.evaluate(y, s, frame[columns], **options)
        pd.testing.assert_frame_equal(alone.ci["by_group"].loc[["race"]], beside.ci["by_group"].loc[["race"]],
                                      check_exact=True)
        pd.testing.assert_frame_equal(alone.ci["summary"].loc[["race"]], beside.ci["summary"].loc[["race"]],
                                      check_exact=True)
        pd.testing.assert_frame_equal(alone.p_values.loc[["race"]], beside.p_values.loc[["race"]],
                                      check_exact=True)
    # a rare group (9%) keeps an interval of its own size: about as wide alone as beside 30 sites; the
    # rarest (1%: 9 positives) is a small group, whose resamples show no uncertainty: NaN
    assert np.isfinite(alone.ci["by_group"].loc[("race", "D"), "auc_lo"])
    assert alone.by_group.loc[("race", "E"), "small_group"]
    assert alone.ci["by_group"].loc[("race", "E")].filter(like="_lo").isna().all()
    other_seed = fm.evaluate(y, s, frame[["race"]], **{**options, "random_state": 4})
    assert not other_seed.ci["summary"].equals(alone.ci["summary"])


def test_segmentation_intervals_do_not_depend_on_the_other_attributes():
    _, _, frame = _audit_data(800)
    dice = np.random.default_rng(1).uniform(0.6, 1.0, 800)
    options = {"dice": dice, "n_boot": 30, "n_permutations": 20, "random_state": 5}
    alone = fm.evaluate_segmentation(frame[["race"]], **options)
    beside = fm.evaluate_segmentation(frame[["sex", "site", "race"]], **options)
    for key in ("by_group", "summary"):
        pd.testing.assert_frame_equal(alone.ci[key].loc[["race"]], beside.ci[key].loc[["race"]], check_exact=True)
    pd.testing.assert_frame_equal(alone.p_values.loc[["race"]], beside.p_values.loc[["race"]], check_exact=True)


def test_streams_are_stable_and_distinct():
    seed = _resample.seed_from(7)
    assert _resample.stream(seed, "bootstrap", "race") == _resample.stream(seed, "bootstrap", "race")
    streams = {_resample.stream(seed, purpose, name) for purpose in ("bootstrap", "permutation")
               for name in ("race", "sex", "")}
    assert len(streams) == 6
    # a fixed value: the same in every process (no salted hash())
    assert int(_resample.stream(np.uint64(1), "bootstrap", "race")) == int(
        np.random.SeedSequence([1, int.from_bytes(__import__("hashlib").blake2b(
            b"bootstrap\x00race", digest_size=8).digest(), "little")]).generate_state(1, np.uint64)[0])


def test_drawn_samples_are_the_stratified_bootstrap_counts():
    rng = np.random.default_rng(0)
    n = 500
    codes = rng.integers(-1, 4, n).astype(np.int8)
    scores, labels = np.sort(rng.random(n)), rng.integers(0, 2, n).astype(np.uint8)
    terms, weights = rng.random(n), rng.uniform(0.5, 2.0, n)
    members, starts = _resample._strata(codes, n)
    for resample in range(5):
        counts = np.zeros(n)
        resampling.stratified_bootstrap_counts(members, starts, np.uint64(9), resample, counts)
        assert np.all(counts[codes < 0] == 0)
        assert np.array_equal(np.bincount(codes[codes >= 0], weights=counts[codes >= 0]),
                              np.bincount(codes[codes >= 0]).astype(float))  # every group keeps its size
        drawn = np.flatnonzero(counts)
        rows = np.stack([codes, (codes * 7) % 5])  # a second code row goes to its own block
        for tally, limit in ((np.uint8, 255), (np.int64, n)):  # narrow and wide counts agree
            out = [np.empty(n), np.empty(n, np.uint8), np.empty(2 * n, np.int8), np.empty(n), np.empty(n)]
            in_order = np.empty(n, tally)
            m = resampling.drawn_samples(members, starts, np.uint64(9), resample, scores, labels, rows, terms,
                                         weights, *out, np.empty(n, tally), in_order, limit)
            assert m == len(drawn) and np.array_equal(in_order, counts)
            assert np.array_equal(out[0][:m], scores[drawn]) and np.array_equal(out[1][:m], labels[drawn])
            assert np.array_equal(out[2][:2 * m].reshape(2, m), rows[:, drawn])
            assert np.array_equal(out[3][:m], terms[drawn])
            assert np.array_equal(out[4][:m], counts[drawn] * weights[drawn])


def test_drawn_samples_measure_like_the_counts_as_weights():
    # The kernels on the drawn samples only give the numbers of the kernels on every sample weighted by
    # its draw count (zero-weight samples take no part in any metric).
    rng = np.random.default_rng(2)
    n = 3000
    y = rng.integers(0, 2, n).astype(np.uint8)
    s = np.round(rng.random(n), 2)  # ties
    codes = rng.integers(-1, 3, n)
    arranged = _engine.arrange(s, y, [codes], [3])
    plan = _resample._Plan(arranged.codes, ["a"], np.uint64(4), "attribute", "bootstrap")
    for r in range(3):
        part, weights = plan.drawn(0, r, arranged, arranged.log_loss_terms())
        every = plan.counts(0, r)
        full = _engine.measure(arranged, None, weights=every, sample_counts=False)[0]
        drawn = _engine.measure(part, None, weights=weights, sample_counts=False)[0]
        for key, values in full.values.items():
            np.testing.assert_allclose(drawn.values[key], values, rtol=1e-12, atol=1e-12, err_msg=key)


def test_dice_interval_covers_a_known_gap_with_a_rare_group():
    # Groups A and B (49.5% each) differ by 0.1 in mean Dice; group R (1%, ~30 samples) lies between.
    # The 95% intervals of delta_dice and of R's mean cover the truth in 90-99% of 200 trials.
    means = {"A": 0.85, "B": 0.75, "R": 0.80}
    rng = np.random.default_rng(7)
    gap_covered = rare_covered = 0
    trials = 200
    for trial in range(trials):
        group = rng.choice(["A", "B", "R"], 3000, p=[0.495, 0.495, 0.01])
        dice = pd.Series(group).map(means).to_numpy() + 0.04 * np.sqrt(3) * rng.uniform(-1, 1, len(group))
        report = fm.evaluate_segmentation({"g": group}, dice=dice, n_boot=100, random_state=trial, progress=False)
        lo, hi = report.ci["summary"].loc["g", ["delta_dice_lo", "delta_dice_hi"]]
        gap_covered += lo <= 0.1 <= hi
        lo, hi = report.ci["by_group"].loc[("g", "R"), ["mean_dice_lo", "mean_dice_hi"]]
        rare_covered += lo <= 0.8 <= hi
    assert 0.90 * trials <= gap_covered <= 0.99 * trials, gap_covered
    assert 0.90 * trials <= rare_covered <= 0.99 * trials, rare_covered


def test_stratify_none_counts_resamples_where_a_group_is_empty():
    rng = np.random.default_rng(3)
    n = 300
    y = rng.integers(0, 2, n)
    s = np.clip(0.3 * y + 0.7 * rng.random(n), 0, 1)
    g = np.array(["a"] * 148 + ["b"] * 148 + ["tiny"] * 4, dtype=object)
    y[-4:] = [0, 1, 0, 1]
    report = fm.evaluate(y, s, {"g": g}, n_boot=200, random_state=0, stratify=None, progress=False)
    empty = report.ci["by_group"]["n_empty"]
    # P(a group of 4 of 300 loses every sample) = (1 - 4/300)^300 ~ 1.8%: a few of 200
    assert empty.loc[("g", "tiny")] > 0 and empty.loc[("g", "a")] == 0
    assert any("tiny: no sample in" in w for w in report.warnings)
    assert report.ci["stratify"] is None
    # plain resampling serves every attribute with the same resamples: still invariant
    both = fm.evaluate(y, s, {"h": rng.choice(["x", "y"], n), "g": g}, n_boot=200, random_state=0, stratify=None,
                       progress=False)
    pd.testing.assert_frame_equal(report.ci["summary"].loc[["g"]], both.ci["summary"].loc[["g"]], check_exact=True)
    seg = fm.evaluate_segmentation({"g": g}, dice=rng.random(n), n_boot=200, random_state=0, stratify=None)
    assert seg.ci["by_group"]["n_empty"].loc[("g", "tiny")] > 0


@pytest.mark.parametrize("bad, message", [({"stratify": "joint"}, "stratify"), ({"p_adjust": "fdr"}, "p_adjust"),
                                          ({"min_group_size": 0}, "min_group_size"),
                                          ({"min_group_size": 2.5}, "min_group_size"),
                                          ({"progress": "yes"}, "progress")])
def test_bad_options_name_themselves(bad, message):
    y, s, frame = _audit_data(100)
    with pytest.raises(ValueError, match=message):
        fm.evaluate(y, s, frame[["sex"]], n_boot=2, n_permutations=2, **bad)
    with pytest.raises(ValueError, match=message):
        fm.evaluate_segmentation(frame[["sex"]], dice=np.full(100, 0.5), **bad)


# ---------------------------------------------------------------------------------------------
# min_group_size
# ---------------------------------------------------------------------------------------------

def _manual_gaps(by_group, keep):
    rows = by_group[keep]
    gap = lambda column: rows[column].max() - rows[column].min()  # noqa: E731
    return {"worst-auc": rows["auc"].min(), "auc-gap": gap("auc"), "acc-gap": gap("acc@best_f1"),
            "bce-gap": gap("bce"), "ece-gap": gap("ece"), "eo": gap("tpr@best_f1"),
            "eod": 1 - (gap("tpr@best_f1") + gap("tnr@best_f1")) / 2}


@pytest.mark.filterwarnings("ignore::UserWarning")  # the one-number functions' notes
def test_min_group_size_equals_a_manual_filter():
    y, s, frame = _audit_data(2000)
    plain = fm.evaluate(y, s, frame[["race", "sex"]])
    report = fm.evaluate(y, s, frame[["race", "sex"]], min_group_size=100)
    small = plain.by_group["n"] < 100
    assert small.loc["race"].any() and not small.loc["sex"].any()
    pd.testing.assert_series_equal(report.by_group["n"], plain.by_group["n"])  # every group keeps its n
    assert (report.by_group.loc[small, "skipped"] == "fewer than 100 samples").all()
    assert report.by_group.loc[small, "auc"].isna().all()
    metrics = [c for c in plain.by_group.columns if c != "skipped"]
    pd.testing.assert_frame_equal(report.by_group.loc[~small, metrics], plain.by_group.loc[~small, metrics],
                                  check_dtype=False)
    expected = _manual_gaps(plain.by_group.loc["race"], ~small.loc["race"])
    for column, value in expected.items():
        assert report.summary.loc["race", column] == pytest.approx(value, abs=1e-12), column
    assert report.summary.loc["race", "n_groups"] == (~small.loc["race"]).sum()
    pd.testing.assert_series_equal(report.summary.loc["sex"], plain.summary.loc["sex"])
    assert report.metadata["min_group_size"] == 100
    assert any("fewer than 100 samples" in w for w in report.warnings)
    # the one-number functions agree with the report
    assert fm.auc_gap(y, s, sensitive_features=frame["race"], min_group_size=100) == pytest.approx(
        expected["auc-gap"], abs=1e-12)
    assert fm.equalized_odds_score(y, s, sensitive_features=frame["race"], min_group_size=100) == pytest.approx(
        expected["eod"], abs=1e-12)
    # None is fairmedfm's behaviour exactly
    pd.testing.assert_frame_equal(fm.evaluate(y, s, frame[["race", "sex"]], min_group_size=None).summary,
                                  plain.summary)


@pytest.mark.filterwarnings("ignore::UserWarning")  # the one-number functions' notes
def test_min_group_size_in_segmentation():
    _, _, frame = _audit_data(2000)
    dice = np.random.default_rng(4).uniform(0.5, 1.0, 2000)
    report = fm.evaluate_segmentation(frame[["race"]], dice=dice, min_group_size=100, n_boot=20, random_state=0)
    plain = fm.evaluate_segmentation(frame[["race"]], dice=dice)
    small = plain.by_group["n"] < 100
    assert small.any()
    pd.testing.assert_series_equal(report.by_group["n"], plain.by_group["n"])
    assert (report.by_group.loc[small, "skipped"] == "fewer than 100 samples").all()
    means = plain.by_group.loc[~small, "mean_dice"]
    assert report.summary.loc["race", "delta_dice"] == pytest.approx(means.max() - means.min(), abs=1e-12)
    assert report.summary.loc["race", "mean_dice"] == pytest.approx(plain.summary.loc["race", "mean_dice"])
    assert report.ci["by_group"].loc[small[small].index, "mean_dice_lo"].isna().all()
    assert fm.dice_gap(dice, sensitive_features=frame["race"], min_group_size=100) == pytest.approx(
        means.max() - means.min(), abs=1e-12)


def test_min_group_size_on_the_command_line(tmp_path, capsys):
    y, s, frame = _audit_data(1500)
    table = frame[["race", "sex"]].assign(label=y, prob=s)
    table.to_csv(tmp_path / "t.csv", index=False)
    capsys.readouterr()
    assert cli.main(["score", str(tmp_path / "t.csv"), "--sensitive", "race", "sex", "--min-group-size", "80"]) is None
    out, err = capsys.readouterr()
    printed = json.loads(out)
    read = pd.read_csv(tmp_path / "t.csv")
    api = fm.evaluate(read["label"], read["prob"], read[["race", "sex"]], min_group_size=80)
    for attribute in ("race", "sex"):
        for column, value in api.summary.loc[attribute].dropna().items():
            if column not in ("n", "n_groups"):
                assert printed[attribute][column] == pytest.approx(value, abs=1e-12), (attribute, column)
    assert "fewer than 80 samples" in err
    capsys.readouterr()
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["score", str(tmp_path / "t.csv"), "--sensitive", "race", "--min-group-size", "0"])
    assert exit_info.value.code == 2


# ---------------------------------------------------------------------------------------------
# Adjusted p-values
# ---------------------------------------------------------------------------------------------

def _holm_reference(p):
    """Holm (1979), step by step: the i-th smallest p (1-based) is multiplied by m - i + 1, capped at 1,
    and no adjusted value may be smaller than the one before it in that order."""
    p = list(p)
    m = len(p)
    order = sorted(range(m), key=lambda i: (p[i], i))
    adjusted, running = [0.0] * m, 0.0
    for rank, i in enumerate(order, start=1):
        running = max(running, min(1.0, (m - rank + 1) * p[i]))
        adjusted[i] = running
    return adjusted


@pytest.mark.parametrize("seed", range(5))
def test_holm_against_a_reference(seed):
    rng = np.random.default_rng(seed)
    p = np.round(rng.random(17) ** 3, 2)  # ties, small values
    p[rng.integers(0, 17, 3)] = np.nan
    ours = _resample.adjusted(p, "holm")
    finite = ~np.isnan(p)
    assert np.isnan(ours[~finite]).all()
    np.testing.assert_allclose(ours[finite], _holm_reference(p[finite]), rtol=0, atol=1e-15)
    np.testing.assert_allclose(_resample.adjusted(p, "bonferroni")[finite],
                               np.minimum(1, p[finite] * finite.sum()), rtol=0, atol=1e-15)


def test_holm_worked_example():
    # m = 4: 0.01 * 4, max(0.04, 0.02 * 3), max(0.06, 0.03 * 2), max(0.06, 0.5)
    np.testing.assert_allclose(_resample.adjusted(np.array([0.03, 0.01, 0.5, 0.02]), "holm"), [0.06, 0.04, 0.5, 0.06])


def test_p_adjust_over_every_gap_and_attribute_of_a_report():
    y, s, frame = _audit_data(600)
    report = fm.evaluate(y, s, frame[["race", "sex"]], n_permutations=30, random_state=0, p_adjust="holm",
                         progress=False)
    raw = report.p_values[list(_resample.GAP_COLUMNS)]
    assert list(report.p_values.columns[:2]) == ["auc-gap", "auc-gap_holm"]
    flat = raw.to_numpy().ravel()
    expected = np.array(_holm_reference(flat[~np.isnan(flat)]))
    got = report.p_values[[c + "_holm" for c in _resample.GAP_COLUMNS]].to_numpy().ravel()
    np.testing.assert_allclose(got[~np.isnan(flat)], expected, atol=1e-15)
    plain = fm.evaluate(y, s, frame[["race", "sex"]], n_permutations=30, random_state=0, p_adjust=None)
    pd.testing.assert_frame_equal(plain.p_values, raw)  # the raw values are unchanged
    seg = fm.evaluate_segmentation(frame[["race", "sex"]], dice=np.random.default_rng(0).random(600),
                                   n_permutations=20, random_state=0, p_adjust="bonferroni")
    assert list(seg.p_values.columns) == ["delta_dice", "delta_dice_bonferroni", "std_dice", "std_dice_bonferroni"]
    np.testing.assert_allclose(seg.p_values["std_dice_bonferroni"], np.minimum(1, 4 * seg.p_values["std_dice"]))


# ---------------------------------------------------------------------------------------------
# Progress
# ---------------------------------------------------------------------------------------------

def test_progress_on_stderr_only(capfd):
    y, s, frame = _audit_data(500)
    fm.evaluate(y, s, frame[["sex", "age"]], n_boot=6, n_permutations=5, random_state=0, progress=True)
    out, err = capfd.readouterr()
    assert out == ""
    # 5 permutations x 2 attributes x 2 sets (groups shuffled among all samples, and within each class)
    assert "bootstrap" in err and "12/12" in err and "permutations" in err and "20/20" in err
    fm.evaluate(y, s, frame[["sex"]], n_boot=6, random_state=0, progress=False)
    fm.evaluate(y, s, frame[["sex"]], n_boot=6, random_state=0)  # None: stderr is not a terminal here
    fm.evaluate_segmentation(frame[["sex"]], dice=np.full(500, 0.7), n_boot=5, n_permutations=5)
    assert capfd.readouterr() == ("", "")
    fm.evaluate_segmentation(frame[["sex"]], dice=np.full(500, 0.7), n_boot=5, progress=True)
    out, err = capfd.readouterr()
    assert out == "" and "5/5" in err


class _Terminal(io.StringIO):
    def isatty(self):
        return True


def test_command_line_bar_with_rate_on_a_terminal(tmp_path, monkeypatch, capsys):
    y, s, frame = _audit_data(400)
    frame[["sex"]].assign(label=y, prob=s).to_csv(tmp_path / "t.csv", index=False)
    argv = ["score", str(tmp_path / "t.csv"), "--sensitive", "sex", "--bootstrap", "8", "--seed", "1"]
    capsys.readouterr()
    assert cli.main(argv) is None
    out, err = capsys.readouterr()
    assert "bootstrap" not in err  # not a terminal: no bar
    terminal = _Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    monkeypatch.setattr(_progress, "DELAY", 0.0)
    assert cli.main(argv) is None
    again = capsys.readouterr().out
    assert json.loads(again) == json.loads(out)  # stdout holds the JSON alone
    shown = terminal.getvalue()
    assert "bootstrap" in shown and "/8 [" in shown and "resample/s" in shown  # a count, a rate, time left


def test_progress_helper_delays_and_counts(monkeypatch):
    terminal = _Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    with _progress.Progress(10, "work") as bar:  # None on a terminal, but quick: nothing shown
        bar.update(10)
    assert terminal.getvalue() == ""
    with _progress.Progress(0, "nothing", True) as bar:
        assert not bar.shown


def test_dask_progress_on_stderr_only(capfd):
    dd = pytest.importorskip("dask.dataframe")
    from fairmedfm_fast import dask as fm_dask

    y, s, frame = _audit_data(600)
    ddf = dd.from_pandas(frame[["sex"]].assign(label=y, prob=s), npartitions=3)
    capfd.readouterr()
    report = fm_dask.evaluate(ddf, label="label", score="prob", sensitive="sex", progress=True)
    out, err = capfd.readouterr()
    assert out == "" and "dask" in err and "7/7" in err  # a survey per partition, the ranges' plan, a pass per range
    assert report.summary.loc["sex", "auc-gap"] == pytest.approx(
        fm.evaluate(y, s, frame[["sex"]]).summary.loc["sex", "auc-gap"], abs=1e-12)
    fm_dask.evaluate(ddf, label="label", score="prob", sensitive="sex")
    assert capfd.readouterr() == ("", "")
