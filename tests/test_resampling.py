"""Bootstrap intervals, permutation tests, fixed thresholds and sample weights (evaluate extensions)."""
import os
import subprocess
import sys
import tempfile
import textwrap
import warnings

import fairmedfm
import numpy as np
import pandas as pd
import pytest
from scipy import stats

import fairmedfm_fast as fm
from fairmedfm_fast._engine import resample as _resample
from fairmedfm_fast.kernels import resampling

METRIC_COLUMNS = ["auc", "acc", "bce", "ece", "tpr", "tnr", "auc@best_f1", "acc@best_f1", "bce@best_f1",
                  "ece@best_f1", "tpr@best_f1", "tnr@best_f1", "tn", "fp", "fn", "tp", "tn@best_f1",
                  "fp@best_f1", "fn@best_f1", "tp@best_f1"]


def _data(n, seed=0, ties=False):
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < 0.35).astype(int)
    s = np.clip(rng.random(n) * 0.7 + 0.3 * y * rng.random(n), 0, 1)
    if ties:
        s = np.round(s, 1)
    groups = pd.DataFrame({"sex": rng.choice(["F", "M"], n), "site": rng.choice(["a", "b", "c"], n)})
    return y, s, groups


def _oracle(*args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fairmedfm.evaluate(*args, **kwargs)


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("ties", [False, True])
def test_integer_weights_equal_the_resampled_data_in_fairmedfm(seed, ties):
    # A bootstrap resample is a vector of draw counts; weighting by it must give fairmedfm's numbers on
    # the resampled rows (ECE bins from each group's own range in the resample, threshold re-chosen).
    y, s, groups = _data(400, seed, ties)
    rng = np.random.default_rng(100 + seed)
    index = rng.integers(0, len(y), len(y))
    counts = np.bincount(index, minlength=len(y)).astype(float)
    fast = fm.evaluate(y, s, groups, sample_weight=counts)
    oracle = _oracle(y[index], s[index], groups.iloc[index].reset_index(drop=True))
    summary_columns = [c for c in oracle.summary.columns if c != "n"]
    pd.testing.assert_frame_equal(fast.summary[summary_columns], oracle.summary[summary_columns],
                                  check_exact=False, rtol=1e-9, atol=1e-12, check_dtype=False)
    pd.testing.assert_frame_equal(fast.by_group[METRIC_COLUMNS], oracle.by_group[METRIC_COLUMNS],
                                  check_exact=False, rtol=1e-9, atol=1e-12, check_dtype=False)
    for key, value in oracle.overall.items():
        assert fast.overall[key] == pytest.approx(value, rel=1e-9, abs=1e-12), key


def test_stratified_counts_keep_every_stratum_size():
    members = np.array([3, 0, 5, 1, 2, 4, 6], np.intp)
    starts = np.array([0, 3, 7], np.intp)
    for resample in range(20):
        out = np.empty(7)
        resampling.stratified_bootstrap_counts(members, starts, np.uint64(7), resample, out)
        assert out[[3, 0, 5]].sum() == 3 and out[[1, 2, 4, 6]].sum() == 4
        assert np.all(out == np.round(out)) and np.all(out >= 0)


def test_draws_are_uniform_within_each_stratum():
    # 4,000 resamples of strata of 3 and 5: every member is drawn once per resample on average
    members = np.arange(8, dtype=np.intp)
    starts = np.array([0, 3, 8], np.intp)
    total = np.zeros(8)
    out = np.empty(8)
    for resample in range(4000):
        resampling.stratified_bootstrap_counts(members, starts, np.uint64(5), resample, out)
        total += out
    assert stats.chisquare(total[:3]).pvalue > 1e-4 and stats.chisquare(total[3:]).pvalue > 1e-4


def test_paired_and_single_picks_fill_only_their_stratum():
    # Strata of up to 2**32 samples take two picks from each random number, larger ones one (a float).
    key = np.uint64(resampling._stream_key(np.uint64(3), 1))  # a Python int here: uint64, as in the kernels
    for paired in (True, False):
        for end in (104, 105):  # even and odd sizes
            tally = np.zeros(110, np.int64)
            resampling._draw_stratum(key, 4, end, tally, paired)
            assert tally.sum() == end - 4 and not tally[:4].any() and not tally[end:].any()
            assert (tally[4:end] > 0).sum() > 0.5 * (end - 4)


def test_rejected_picks_draw_again_within_range():
    # Lemire's multiply-shift rejects the few 32-bit values that would favour some picks; those draw
    # again from a second stream, so every pick is exactly uniform and still a function of its number.
    key = np.uint64(12345)
    assert 0 <= resampling._below(np.uint64(0), np.uint64(3), key, 7) < 3  # 0 * 3 mod 2**32 < 2**32 mod 3
    size = np.uint64(3 * 2**30)  # a quarter of all values are rejected
    bits = np.random.default_rng(0).integers(0, 2**32, 4000, dtype=np.uint64)
    picks = np.array([resampling._below(b, size, key, d) for d, b in enumerate(bits)])
    assert picks.min() >= 0 and picks.max() < int(size)
    again = np.array([resampling._below(b, size, key, d) for d, b in enumerate(bits)])
    assert np.array_equal(picks, again)
    assert stats.chisquare(np.bincount(picks // 2**30, minlength=3)).pvalue > 1e-4


def test_a_count_past_the_narrow_tally_is_counted_again_wide(monkeypatch):
    # A uint8 tally holds counts up to 255; past its limit the kernel returns -1 without writing, and
    # the resample is counted again in a wide tally: the same draws, so the same intervals.
    rng = np.random.default_rng(1)
    n = 200
    codes = rng.integers(0, 3, n).astype(np.int8)
    members, starts = _resample._strata(codes, n)
    out = [np.full(n, 7.0), np.zeros(n, np.uint8), np.zeros(n, np.int8), np.zeros(n), np.zeros(n)]
    m = resampling.drawn_samples(members, starts, np.uint64(1), 0, rng.random(n), np.zeros(n, np.uint8),
                                 codes[None], rng.random(n), None, *out, np.empty(n, np.uint8), np.empty(n, np.uint8), 1)
    assert m == -1 and np.all(out[0] == 7.0)  # some sample is drawn twice: past a limit of 1
    y, s, groups = _data(400)
    narrow = fm.evaluate(y, s, groups, n_boot=20, random_state=3)
    monkeypatch.setattr(_resample, "NARROW_LIMIT", 1)
    wide = fm.evaluate(y, s, groups, n_boot=20, random_state=3)
    for key in ("by_group", "summary"):
        pd.testing.assert_frame_equal(narrow.ci[key], wide.ci[key], check_exact=True)


_NO_JIT_DRAWS = textwrap.dedent("""
    import warnings
    import numpy as np
    import numba
    assert numba.config.DISABLE_JIT, "NUMBA_DISABLE_JIT was not honoured"
    from fairmedfm_fast._engine import resample as _resample
    from fairmedfm_fast.kernels import resampling

    warnings.simplefilter("ignore")  # SplitMix64 wraps around on purpose
    rng = np.random.default_rng(3)
    for n, n_groups, missing in [(1, 1, 0), (2, 2, 0), (7, 3, 1), (30, 4, 1), (30, 1, 0)]:
        codes = rng.integers(-missing, n_groups, n).astype(np.int8)
        rows = np.stack([codes, codes[::-1]])
        members, starts = _resample._strata(codes, n)
        for resample in range(3):
            counts = np.empty(n)
            resampling.stratified_bootstrap_counts(members, starts, np.uint64(2), resample, counts)
            out = [np.empty(n), np.empty(n, np.uint8), np.empty(2 * n, np.int8), np.empty(n), np.empty(n)]
            m = resampling.drawn_samples(members, starts, np.uint64(2), resample, rng.random(n),
                                         np.zeros(n, np.uint8), rows, rng.random(n), None, *out,
                                         np.empty(n, np.uint8), np.empty(n, np.uint8), 255)
            drawn = np.flatnonzero(counts)
            assert m == len(drawn) and np.array_equal(out[2][:2 * m].reshape(2, m), rows[:, drawn])
            assert np.array_equal(out[4][:m], counts[drawn])
    print("ok")
""")


def test_draws_without_jit():
    # Python mode raises on out-of-bounds indexing that compiled code would not notice (the filter
    # writes every sample's values before it knows whether the sample is drawn).
    env = {**os.environ, "NUMBA_DISABLE_JIT": "1"}
    result = subprocess.run([sys.executable, "-c", _NO_JIT_DRAWS], cwd=tempfile.gettempdir(), env=env,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip() == "ok"


def test_permuted_codes_keep_missing_in_place_and_group_sizes():
    codes = np.array([0, 1, -1, 2, 0, -1, 1, 1], np.int8)
    out = np.empty_like(codes)
    seen = set()
    for permutation in range(30):
        resampling.permuted_codes(codes, np.uint64(3), permutation, out)
        assert np.array_equal(out == -1, codes == -1)
        assert np.array_equal(np.bincount(out[out >= 0]), np.bincount(codes[codes >= 0]))
        seen.add(tuple(out))
    assert len(seen) > 10  # actually shuffles


def test_bootstrap_does_not_depend_on_thread_count(monkeypatch):
    y, s, groups = _data(600)
    reports = []
    for workers in (1, 2):
        monkeypatch.setenv("FAIRMEDFM_FAST_N_JOBS", str(workers))
        reports.append(fm.evaluate(y, s, groups, n_boot=40, n_permutations=30, random_state=11))
    pd.testing.assert_frame_equal(reports[0].ci["summary"], reports[1].ci["summary"], check_exact=True)
    pd.testing.assert_frame_equal(reports[0].ci["by_group"], reports[1].ci["by_group"], check_exact=True)
    pd.testing.assert_frame_equal(reports[0].p_values, reports[1].p_values, check_exact=True)
    other = fm.evaluate(y, s, groups, n_boot=40, random_state=12)
    assert not reports[0].ci["summary"].equals(other.ci["summary"])


def test_bootstrap_leaves_the_point_estimates_alone():
    y, s, groups = _data(500)
    plain = fm.evaluate(y, s, groups)
    boot = fm.evaluate(y, s, groups, n_boot=20, n_permutations=10, random_state=0, p_adjust=None)
    pd.testing.assert_frame_equal(plain.summary, boot.summary)
    pd.testing.assert_frame_equal(plain.by_group, boot.by_group)
    assert plain.ci is None and plain.p_values is None
    lo, hi = boot.ci["summary"]["auc-gap_lo"], boot.ci["summary"]["auc-gap_hi"]
    assert (lo <= hi).all()
    assert list(boot.p_values.columns) == ["auc-gap", "acc-gap", "bce-gap", "ece-gap", "eo", "eod"]
    assert ((boot.p_values > 0) & (boot.p_values <= 1)).all().all()
    assert "ci" in boot.to_dict() and "p_values" in boot.to_dict()


def _auc_gap_sample(rng, n):
    # Group A: AUC = Phi(1.5 / sqrt 2) ~ 0.856; group B: Phi(0.5 / sqrt 2) ~ 0.638 (binormal model).
    group = rng.integers(0, 2, n)
    y = rng.integers(0, 2, n)
    shift = np.where(group == 0, 1.5, 0.5)
    logits = rng.normal(size=n) + y * shift
    return y, 1 / (1 + np.exp(-logits)), np.where(group == 0, "A", "B")


def test_bootstrap_interval_covers_the_true_gap():
    true_gap = stats.norm.cdf(1.5 / np.sqrt(2)) - stats.norm.cdf(0.5 / np.sqrt(2))
    rng = np.random.default_rng(2024)
    covered = 0
    trials = 200
    for trial in range(trials):
        y, p, g = _auc_gap_sample(rng, 400)
        report = fm.evaluate(y, p, {"g": g}, n_boot=150, random_state=trial)
        lo, hi = report.ci["summary"].loc["g", ["auc-gap_lo", "auc-gap_hi"]]
        covered += lo <= true_gap <= hi
    assert 0.90 * trials <= covered <= 0.99 * trials, covered


def test_permutation_p_values_are_uniform_without_a_gap():
    rng = np.random.default_rng(5)
    p_values = []
    for trial in range(120):
        n = 200
        y = rng.integers(0, 2, n)
        s = np.clip(0.3 * y + 0.7 * rng.random(n), 0, 1)
        g = rng.choice(["a", "b"], n)  # independent of everything: no true gap
        report = fm.evaluate(y, s, {"g": g}, n_permutations=99, random_state=trial)
        p_values.append(report.p_values.loc["g", "auc-gap"])
    statistic = stats.kstest(p_values, "uniform").statistic
    assert statistic < 0.2, statistic


def test_fixed_threshold_replaces_the_best_f1_threshold():
    y, s, groups = _data(500)
    report = fm.evaluate(y, s, groups, threshold=0.5)
    for column in ("acc", "tpr", "tnr", "tp", "fp"):
        pd.testing.assert_series_equal(report.by_group[f"{column}@best_f1"], report.by_group[column],
                                       check_names=False)
    assert report.metadata["threshold"] == 0.5
    gap = fm.accuracy_gap(y, s, sensitive_features=groups["sex"], threshold=0.5)
    assert gap == pytest.approx(report.summary.loc["sex", "acc-gap"], rel=1e-12)


@pytest.mark.parametrize("bad, message", [
    ({"n_boot": -1}, "n_boot"), ({"n_boot": 1.5}, "n_boot"), ({"ci": 1.0}, "ci"),
    ({"n_permutations": "10"}, "n_permutations"), ({"threshold": float("nan")}, "threshold"),
    ({"threshold": "high"}, "threshold"), ({"sample_weight": [1.0, 2.0]}, "sample_weight"),
    ({"random_state": -3, "n_boot": 2}, "random_state"),
])
def test_bad_resampling_arguments_name_themselves(bad, message):
    y, s, groups = _data(100)
    with pytest.raises(ValueError, match=message):
        fm.evaluate(y, s, groups, **bad)


def test_negative_or_nan_sample_weights_are_refused():
    y, s, groups = _data(50)
    for weights in (-np.ones(50), np.full(50, np.nan), np.zeros(50)):
        with pytest.raises(ValueError, match="sample_weight"):
            fm.evaluate(y, s, groups, sample_weight=weights)


def test_segmentation_bootstrap_and_permutations():
    rng = np.random.default_rng(3)
    n = 240
    dice = np.clip(rng.normal(0.8, 0.1, n), 0, 1)
    sex = rng.choice(["F", "M"], n)
    plain = fm.evaluate_segmentation({"sex": sex}, dice=dice)
    report = fm.evaluate_segmentation({"sex": sex}, dice=dice, n_boot=300, n_permutations=99, random_state=4)
    pd.testing.assert_frame_equal(plain.summary, report.summary)
    summary = report.ci["summary"].loc["sex"]
    for column in ("mean_dice", "min_dice", "max_dice", "delta_dice", "std_dice", "es_dice"):
        assert summary[f"{column}_lo"] <= summary[f"{column}_hi"]
    # Each group mean's interval holds the observed mean; resampling keeps group sizes, so the overall
    # mean's interval is about the standard error of the mean wide.
    for group, row in report.ci["by_group"].loc["sex"].iterrows():
        observed = report.by_group.loc[("sex", group), "mean_dice"]
        assert row["mean_dice_lo"] <= observed <= row["mean_dice_hi"]
    width = summary["mean_dice_hi"] - summary["mean_dice_lo"]
    assert 2 * 1.96 * dice.std() / np.sqrt(n) == pytest.approx(width, rel=0.3)
    assert 0 < report.p_values.loc["sex", "delta_dice"] <= 1
    again = fm.evaluate_segmentation({"sex": sex}, dice=dice, n_boot=300, n_permutations=99, random_state=4)
    pd.testing.assert_frame_equal(report.ci["by_group"], again.ci["by_group"], check_exact=True)
    pd.testing.assert_frame_equal(report.p_values, again.p_values, check_exact=True)
    # A real difference between groups gives a small p-value.
    shifted = np.where(sex == "F", np.clip(dice + 0.1, 0, 1), dice)
    assert fm.evaluate_segmentation({"sex": sex}, dice=shifted, n_permutations=99,
                                    random_state=0).p_values.loc["sex", "delta_dice"] <= 0.02
