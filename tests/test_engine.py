"""The one sort and the engine on inputs large enough for the packed-word sort (n >= 65,536), and the
small inputs' sort."""
import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import roc_auc_score

import fairmedfm_fast as fm
from fairmedfm_fast._engine import classification as _engine
from fairmedfm_fast._engine import sorting as _sorting
from fairmedfm_fast.kernels import sorting

N = 70_000


@pytest.mark.parametrize("make", [
    lambda rng: rng.random(N),
    lambda rng: np.round(rng.random(N), 3),  # heavy ties
    lambda rng: 0.5 + rng.integers(0, 40, N) * 1e-13,  # equal high 32 bits, different low bits
    lambda rng: rng.random(N).astype(np.float32),
    lambda rng: np.where(rng.random(N) < 0.5, -0.0, 1.0) * rng.integers(0, 2, N),  # -0.0 and 0.0
    lambda rng: np.concatenate([np.zeros(N // 2), rng.random(N - N // 2)]),
], ids=["distinct", "ties", "low-bits", "float32", "signed-zero", "many-zeros"])
def test_sort_scores_matches_numpy(make):
    scores = make(np.random.default_rng(0))
    order, sorted_scores = _engine.sort_scores(scores)
    assert sorted_scores.dtype == scores.dtype
    np.testing.assert_array_equal(sorted_scores, np.sort(scores))
    np.testing.assert_array_equal(scores[order], sorted_scores)
    assert np.array_equal(np.sort(order), np.arange(N))


@pytest.mark.parametrize("make", [
    lambda rng, n: rng.random(n),
    lambda rng, n: rng.integers(0, 5, n) / 4.0,  # heavy ties
    lambda rng, n: 0.5 + rng.integers(0, 1 << 20, n) * 2.0 ** -52,  # equal but for the lowest 16 bits or more
    lambda rng, n: 0.5 + rng.permutation(n) * 2.0 ** -52,  # the lowest 16 bits in any order
    lambda rng, n: rng.random(n).astype(np.float32),
    lambda rng, n: np.where(rng.random(n) < 0.5, -0.0, 1.0) * rng.integers(0, 2, n),  # -0.0 and 0.0
    lambda rng, n: rng.normal(size=n),  # negative scores
    lambda rng, n: rng.random(2 * n)[::2],  # strided
], ids=["distinct", "ties", "low-bits", "low-bits-shuffled", "float32", "signed-zero", "negative", "strided"])
@pytest.mark.parametrize("n", [0, 1, 2, 1000, _engine.RADIX_FROM - 1])
def test_small_sort_is_the_stable_argsort(make, n):
    # below RADIX_FROM one np.sort of packed (bits, position) words, else argsort: argsort's order either way
    scores = make(np.random.default_rng(n), n)
    order, sorted_scores = _engine.sort_scores(scores)
    expected = np.argsort(scores, kind="stable")
    np.testing.assert_array_equal(order, expected)
    assert sorted_scores.dtype == scores.dtype
    assert sorted_scores.tobytes() == scores[expected].tobytes()


def test_large_evaluate_matches_per_group_references():
    rng = np.random.default_rng(1)
    y = (rng.random(N) < 0.3).astype(int)
    s = np.round(np.clip(rng.random(N) * 0.8 + 0.2 * y, 0, 1), 4)
    g = rng.integers(0, 5, N)
    report = fm.evaluate(y, s, {"site": g})
    for group in range(5):
        mask = g == group
        assert report.by_group.loc[("site", str(group)), "auc"] == pytest.approx(
            roc_auc_score(y[mask], s[mask]), rel=1e-12)
    precision_recall = [(np.sum(y[s >= t]) / np.sum(s >= t), np.sum(y[s >= t]) / y.sum()) for t in np.unique(s)]
    f1 = [2 * p * r / (p + r + 1e-8) for p, r in precision_recall]
    best = np.unique(s)[int(np.argmax(f1))]
    predicted = s > best
    assert report.summary.loc["site", "overall-acc"] == pytest.approx(np.mean(predicted == y), rel=1e-12)


@pytest.mark.parametrize("wide", [False, True], ids=["carried", "wide-codes"])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("n_jobs", ["1", "2", "3"])
def test_threaded_passes_give_the_same_report(monkeypatch, n_jobs, weighted, wide):
    # From THREADED_FROM samples the sort (carrying labels and codes, or, with weights or codes
    # wider than int8, the index), the BCE terms and the sweeps (a grouping a task) share the
    # threads; with one thread allowed (or below the size) everything runs inline. The reports
    # must be identical.
    rng = np.random.default_rng(2)
    y = (rng.random(N) < 0.4).astype(int)
    s = np.round(rng.random(N) * 0.7 + 0.3 * y, 3)
    s[::5] = rng.random(len(s[::5]))  # distinct scores too
    groups = {"site": rng.integers(0, 4, N), "sex": rng.choice(["F", "M"], N),
              "age": np.where(rng.random(N) < 0.05, np.nan, rng.integers(0, 3, N))}
    if wide:
        groups["hospital"] = rng.integers(0, 300, N).astype(str)
    weights = rng.random(N) * 3 if weighted else None
    inline = fm.evaluate(y, s, groups, sample_weight=weights)
    monkeypatch.setattr(_sorting, "THREADED_FROM", 1000)
    monkeypatch.setattr(sorting, "PIECE", 1000)
    monkeypatch.setenv("FAIRMEDFM_FAST_N_JOBS", n_jobs)
    assert _sorting.is_threaded(N) == (n_jobs != "1")
    threaded = fm.evaluate(y, s, groups, sample_weight=weights)
    pd.testing.assert_frame_equal(threaded.summary, inline.summary, check_exact=True)
    pd.testing.assert_frame_equal(threaded.by_group, inline.by_group, check_exact=True)


def test_background_job_reraises_its_error():
    for threaded in (True, False):
        job = _engine._Background(lambda: 1 / 0, threaded)
        with pytest.raises(ZeroDivisionError):
            job.result()
        assert _engine._Background(lambda: 7, threaded).result() == 7


def test_bad_thread_count_in_environment_is_a_clear_error(monkeypatch):
    monkeypatch.setattr(_sorting, "THREADED_FROM", 10)
    monkeypatch.setenv("FAIRMEDFM_FAST_N_JOBS", "lots")
    with pytest.raises(ValueError, match="FAIRMEDFM_FAST_N_JOBS"):
        fm.auc_gap([0, 1] * 10, np.linspace(0, 1, 20), sensitive_features=[0, 1] * 10)


def _scores_of(kind, rng, n):
    if kind == "low-32-bits":  # equal high 32 bits: the sort must read all 64
        high = np.uint64(np.array(0.625).view(np.uint64)) & np.uint64(0xFFFFFFFF00000000)
        return (high | rng.integers(0, 1 << 12, n).astype(np.uint64)).view(np.float64)
    if kind == "subnormal":
        return rng.choice([0.0, 5e-324, 1e-310, 2.2250738585072014e-308, 1e-300, 0.5, 1.0], n)
    if kind == "signed-zero":
        return np.where(rng.random(n) < 0.5, -0.0, 0.0) + np.where(rng.random(n) < 0.3, rng.random(n), 0.0)
    if kind == "all-tied":
        return np.full(n, 0.375)
    return rng.standard_normal(n) * 3  # negative: logits, put through the sigmoid (with a warning)


@pytest.mark.parametrize("threaded", [False, True], ids=["one-thread", "threads"])
@pytest.mark.parametrize("kind", ["low-32-bits", "subnormal", "signed-zero", "all-tied", "negative"])
def test_radix_path_matches_oracle(monkeypatch, kind, threaded):
    # Inputs large enough for the carrying radix sort (and, with "threads", for every threaded step),
    # against fairmedfm 0.4.2 within 1e-9.
    from compare import check

    rng = np.random.default_rng(7)
    n = _engine.RADIX_FROM + 3001
    scores = _scores_of(kind, rng, n)
    labels = (rng.random(n) < 0.4).astype(int)
    groups = pd.DataFrame({"site": rng.integers(0, 4, n).astype(str),
                           "sex": pd.Categorical(rng.choice(["M", "F"], n), categories=["M", "F"])})
    if threaded:
        monkeypatch.setattr(_sorting, "THREADED_FROM", 1000)
        monkeypatch.setattr(sorting, "PIECE", 1000)
        monkeypatch.setenv("FAIRMEDFM_FAST_N_JOBS", "2")
    check("evaluate", labels, scores, groups)


@pytest.mark.parametrize("missing", [True, False], ids=["one-grouping-with-missing", "all-complete"])
@pytest.mark.parametrize("n_jobs", ["1", "2"])
def test_one_best_f1_sweep_for_the_complete_groupings(monkeypatch, n_jobs, missing):
    # Groupings without missing values share one best-F1 sweep over all samples; their counts at the
    # threshold come from the first pass's prefix counts. Reports identical to a sweep per grouping.
    rng = np.random.default_rng(11)
    n = _engine.RADIX_FROM + 2000
    y = (rng.random(n) < 0.3).astype(int)
    s = np.round(rng.random(n) * 0.6 + 0.4 * y, 3)
    groups = {"site": rng.integers(0, 4, n), "sex": rng.choice(["F", "M"], n),
              "age": np.where(rng.random(n) < (0.05 if missing else 0.0), np.nan, rng.integers(0, 3, n)),
              "ward": rng.integers(0, 6, n)}
    monkeypatch.setattr(_sorting, "THREADED_FROM", 1000)
    monkeypatch.setenv("FAIRMEDFM_FAST_N_JOBS", n_jobs)
    calls = []
    real = _engine._shared_best_f1
    monkeypatch.setattr(_engine, "_shared_best_f1", lambda *a: calls.append(real(*a)) or calls[-1])
    shared = fm.evaluate(y, s, groups)
    assert calls and calls[0] is not None and list(calls[0][2]) == [True, True, not missing, True]
    monkeypatch.setattr(_engine, "_shared_best_f1", lambda *a: None)
    apart = fm.evaluate(y, s, groups)
    pd.testing.assert_frame_equal(shared.summary, apart.summary, check_exact=True)
    pd.testing.assert_frame_equal(shared.by_group, apart.by_group, check_exact=True)


@pytest.mark.parametrize("n_slots", [1, 11, 3000])
def test_curve_cuts_are_the_tie_block_starts_or_equal_steps_with_the_fixed_positions(n_slots):
    # the definition, one position at a time: 0, n, the fixed positions, and every tie-block start
    # (few samples) or the start of the tie block holding each of the equal steps i * n // most
    rng = np.random.default_rng(n_slots)
    for n in (1, 2, 50, 997, 998, 1000, 1003, 4000):
        scores = np.sort(np.round(rng.random(n), int(rng.integers(1, 4))))
        fixed = sorted({int(scores.searchsorted(t, "right")) for t in (0.25, 0.5, 2.0)})
        most = max(_engine.CURVE_LEAST, min(_engine.CURVE_POINTS, _engine.CURVE_CELLS // n_slots)) - 3
        if n <= most:
            inner = {i for i in range(1, n) if scores[i] != scores[i - 1]}
        else:
            inner = {int(scores.searchsorted(scores[i * n // most], "left")) for i in range(1, most)}
        expected = sorted({0, n, *fixed, *inner})
        cuts = _engine._curve_cuts(scores, n_slots, fixed)
        assert cuts.dtype == np.int64
        assert cuts.tolist() == expected
