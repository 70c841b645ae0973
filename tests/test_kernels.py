"""The Numba kernels against the slow references of ``reference.py`` (and the references against the oracle).

Every kernel is called the way the API layer calls it: one stable sort of the scores, the code matrix
(K, n) with -1 for a missing attribute value, slots laid out as (groups of grouping 0, its overall,
groups of grouping 1, ...). Inputs come from ``strategies.cases`` (ties, all-equal scores, scores on
bin edges and at 0 and 1, single-label and single-sample groups, 1 to 50 groups, missing values) in
float64 and float32, contiguous, read-only and strided (non-contiguous) layouts.
"""
import math
import os
import subprocess
import sys
import tempfile
import textwrap
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import reference as ref
from hypothesis import example, given, note, settings
from hypothesis import strategies as st
from sklearn.metrics import roc_auc_score
from strategies import LAYOUTS, Case, cases, with_layout

from fairmedfm_fast.kernels import calibration, ranking

# Subprocesses start outside the checkout, so that they import the installed package (kernels/ is
# installed as fairmedfm_fast.kernels) rather than the source folder from the working directory.
OUTSIDE_REPO = tempfile.gettempdir()

SCORE_DTYPES = (np.float64, np.float32)
VARIANTS = {"abs": 0, "squared": 1, "rmse": 2}


def log_loss_sums(scores, labels, codes, n_groups):
    """Per slot, the sum of ``y log p + (1 - y) log(1 - p)`` (clamped logs), from the two BCE kernels."""
    return -calibration.slot_sums(calibration.log_loss_terms(scores, labels), codes, n_groups)


def _prepare(case: Case, layout: str, dtype):
    """Kernel inputs in the requested dtype and layout, plus the float64 scores the reference should see."""
    scores = case.scores.astype(dtype)
    exact = scores.astype(np.float64)  # what the kernel's values are, exactly
    order = np.argsort(scores, kind="stable")
    inputs = {
        "scores": with_layout(scores, layout),
        "labels": with_layout(case.labels, layout),
        "codes": with_layout(case.codes, layout),
        "sorted_scores": with_layout(scores[order], layout),
        "sorted_labels": with_layout(case.labels[order], layout),
        "sorted_codes": with_layout(case.codes[:, order], layout),
    }
    note(f"kind={case.kind} n={case.n} n_groups={case.n_groups.tolist()} notes={case.notes} "
         f"layout={layout} dtype={np.dtype(dtype).name}")
    return inputs, exact


def _snapshot(inputs):
    return {name: np.array(value, copy=True) for name, value in inputs.items()}


def _assert_unchanged(inputs, before):
    for name, value in inputs.items():
        np.testing.assert_array_equal(value, before[name], err_msg=f"kernel modified its input {name}")


layouts = st.sampled_from(LAYOUTS)
dtypes = st.sampled_from(SCORE_DTYPES)


# --- the references themselves, against scikit-learn and the oracle -----------------------------------

@given(case=cases(max_n=120, max_groupings=1, max_groups=1))
def test_reference_agrees_with_sklearn_and_oracle(case):
    from fairmedfm import metrics as oracle

    scores, labels = case.scores, case.labels.astype(np.int64)
    if labels.min() == labels.max():
        assert math.isnan(ref.pairwise_auc(scores, labels))
        return
    assert ref.pairwise_auc(scores, labels) == pytest.approx(roc_auc_score(labels, scores), abs=1e-12)
    assert ref.best_f1_threshold(scores, labels)[0] == oracle.find_threshold(scores, labels)
    assert ref.binary_cross_entropy(scores, labels) == pytest.approx(
        oracle.binary_cross_entropy(scores, labels), rel=1e-12, abs=1e-12)
    for variant in VARIANTS:
        assert ref.calibration_error(scores, labels, variant=variant) == pytest.approx(
            oracle.expected_calibration_error(scores, labels, metric_variant=variant), rel=1e-12, abs=1e-14)
    np.testing.assert_array_equal(ref.equal_width_edges(scores), pd.cut(scores, 10, retbins=True, labels=False)[1])
    report = oracle.binary_classification_report(scores, labels, threshold=0.5)
    mine = ref.group_report(scores, labels, 0.5)
    for key in ref.METRICS:
        assert mine[key] == pytest.approx(report[key], rel=1e-12, abs=1e-12), key


# --- ranking ------------------------------------------------------------------------------------------

@given(case=cases(), layout=layouts, dtype=dtypes)
@example(case=Case(np.array([0.5, 0.5, 0.5, 0.5]), np.array([0, 1, 0, 1], np.uint8),
                   np.array([[0, 0, 1, 1]], np.intp), np.array([2], np.int64), "constant"),
         layout="contiguous", dtype=np.float64)
def test_rank_statistics(case, layout, dtype):
    inputs, exact = _prepare(case, layout, dtype)
    before = _snapshot(inputs)
    count, positives, u2 = ranking.rank_statistics(inputs["sorted_scores"], inputs["sorted_labels"],
                                                   inputs["sorted_codes"], case.n_groups)
    _assert_unchanged(inputs, before)
    n_slots = int(case.n_groups.sum() + len(case.n_groups))
    assert count.shape == positives.shape == u2.shape == (n_slots,)
    for _, slot, mask in case.slots():
        assert count[slot] == mask.sum()
        assert positives[slot] == case.labels[mask].sum()
        assert u2[slot] == ref.pairwise_u2(exact[mask], case.labels[mask]), f"slot {slot}"
        n_pos, n_neg = positives[slot], count[slot] - positives[slot]
        if n_pos and n_neg:
            auc = u2[slot] / (2 * n_pos * n_neg)
            assert auc == pytest.approx(roc_auc_score(case.labels[mask], exact[mask]), abs=1e-12)


@given(case=cases(), layout=layouts, dtype=dtypes)
def test_best_f1_thresholds(case, layout, dtype):
    inputs, exact = _prepare(case, layout, dtype)
    present = case.codes >= 0
    n_pos = np.array([case.labels[p].sum() for p in present], np.int64)
    n_neg = present.sum(axis=1).astype(np.int64) - n_pos
    before = _snapshot(inputs)
    thresholds, best = ranking.best_f1_thresholds(inputs["sorted_scores"], inputs["sorted_labels"],
                                                  inputs["sorted_codes"], n_pos, n_neg)
    _assert_unchanged(inputs, before)
    assert thresholds.shape == best.shape == (case.codes.shape[0],)
    for k, p in enumerate(present):
        if not p.any():
            assert math.isnan(thresholds[k])
            continue
        expected_threshold, expected_f1 = ref.best_f1_threshold(exact[p], case.labels[p])
        # Bit-exact: the threshold is one of the scores and the F1 tie-break depends on exact equality.
        assert thresholds[k] == expected_threshold, f"grouping {k}"
        assert best[k] == expected_f1, f"grouping {k}"


def test_best_f1_tie_break_picks_lowest_threshold():
    # F1 is the same (2/3) at thresholds 0.2 (TP=1, FP=... ) and others; the reference decides.
    scores = np.array([0.1, 0.2, 0.3, 0.4, 0.4, 0.9])
    labels = np.array([0, 1, 0, 1, 0, 1], np.uint8)
    expected = ref.best_f1_threshold(scores, labels)
    codes = np.zeros((1, 6), np.intp)
    thresholds, best = ranking.best_f1_thresholds(scores, labels, codes, np.array([3]), np.array([3]))
    assert (thresholds[0], best[0]) == expected
    # Two candidate thresholds with exactly the same counts pattern: F1 equal, the lower must win.
    scores = np.array([0.2, 0.8])
    labels = np.array([1, 1], np.uint8)
    thresholds, best = ranking.best_f1_thresholds(scores, labels, np.zeros((1, 2), np.intp),
                                                  np.array([2]), np.array([0]))
    assert thresholds[0] == 0.2 and best[0] == ref.f1_score(2, 0, 2)


@given(tp=st.integers(0, 10**6), fp=st.integers(0, 10**6), extra=st.integers(0, 10**6))
def test_f1_at_matches_formula_bitwise(tp, fp, extra):
    n_pos = tp + extra
    assert ranking.f1_at(tp, fp, n_pos) == ref.f1_score(tp, fp, n_pos)


@given(case=cases(), layout=layouts, dtype=dtypes, data=st.data())
def test_confusion_above(case, layout, dtype, data):
    inputs, exact = _prepare(case, layout, dtype)
    k_count = case.codes.shape[0]
    picks = [float(exact[data.draw(st.integers(0, case.n - 1))]) for _ in range(k_count)]
    thresholds = np.array([[0.5, pick, 0.0, 1.0] for pick in picks])  # a score itself: > is strict
    before = _snapshot(inputs)
    pos_above, neg_above = ranking.confusion_above(inputs["scores"], inputs["labels"], inputs["codes"],
                                                   case.n_groups, thresholds)
    _assert_unchanged(inputs, before)
    for k, slot, mask in case.slots():
        for t, threshold in enumerate(thresholds[k]):
            tn, fp, fn, tp = ref.confusion_counts(exact[mask], case.labels[mask], threshold)
            assert (pos_above[slot, t], neg_above[slot, t]) == (tp, fp), f"slot {slot} threshold {threshold}"


# --- calibration --------------------------------------------------------------------------------------

@given(case=cases(), layout=layouts, dtype=dtypes)
def test_score_ranges_and_edges(case, layout, dtype):
    inputs, exact = _prepare(case, layout, dtype)
    count, positives, low, high = calibration.score_ranges(inputs["scores"], inputs["labels"], inputs["codes"],
                                                           case.n_groups)
    edges = calibration.equal_width_edges(low, high, 10)
    assert edges.shape == (len(count), 11)
    for _, slot, mask in case.slots():
        assert count[slot] == mask.sum()
        assert positives[slot] == case.labels[mask].sum()
        if not mask.any():
            assert math.isnan(low[slot]) and math.isnan(high[slot])
            assert np.isnan(edges[slot]).all()
            continue
        assert (low[slot], high[slot]) == (exact[mask].min(), exact[mask].max())
        # Bit-identical to pandas.cut's own edges: a score on an edge must fall in the same bin.
        _, pandas_edges = pd.cut(exact[mask], 10, retbins=True, labels=False)
        np.testing.assert_array_equal(edges[slot], pandas_edges, err_msg=f"slot {slot}")
        np.testing.assert_array_equal(edges[slot], ref.equal_width_edges(exact[mask]))


@pytest.mark.parametrize("n_bins", [1, 3, 10, 17])
@given(low=st.floats(-1e6, 1e6, allow_subnormal=True), width=st.sampled_from([0.0, 1e-300, 1e-12, 0.1, 1.0, 7e5]))
@example(low=0.0, width=0.0)
@example(low=0.0, width=1.0)
@example(low=-0.0, width=0.0)
@example(low=5e-324, width=0.0)
def test_equal_width_edges_match_pandas_bitwise(n_bins, low, width):
    high = low + width
    edges = calibration.equal_width_edges(np.array([low]), np.array([high]), n_bins)
    np.testing.assert_array_equal(edges[0], ref.equal_width_edges([low, high], n_bins))
    try:
        _, pandas_edges = pd.cut(np.array([low, high]), n_bins, retbins=True, labels=False)
    except ValueError:  # pandas refuses duplicate edges (a subnormal range), the oracle with it
        return
    np.testing.assert_array_equal(edges[0], pandas_edges)


@pytest.mark.parametrize("variant", list(VARIANTS))
@given(case=cases(), layout=layouts, dtype=dtypes)
def test_equal_width_calibration_error(variant, case, layout, dtype):
    inputs, exact = _prepare(case, layout, dtype)
    _, _, low, high = calibration.score_ranges(inputs["scores"], inputs["labels"], inputs["codes"], case.n_groups)
    edges = calibration.equal_width_edges(low, high, 10)
    before = _snapshot(inputs)
    count, label_sum, score_sum = calibration.binned_calibration(inputs["scores"], inputs["labels"],
                                                                 inputs["codes"], case.n_groups, edges, False)
    _assert_unchanged(inputs, before)
    ece = calibration.calibration_error(count, label_sum, score_sum, VARIANTS[variant])
    for _, slot, mask in case.slots():
        # pandas.cut edges lie below the minimum: every present sample is in exactly one bin.
        assert count[slot].sum() == mask.sum()
        if not mask.any():
            assert math.isnan(ece[slot])
            continue
        expected = ref.calibration_error(exact[mask], case.labels[mask], variant=variant)
        assert ece[slot] == pytest.approx(expected, rel=1e-12, abs=1e-15), f"slot {slot}"
        # Bin membership, not only the total: counts per bin as pandas.cut assigns them.
        bins = pd.cut(exact[mask], 10, labels=False)
        np.testing.assert_array_equal(count[slot], np.bincount(bins, minlength=10), err_msg=f"slot {slot}")


@pytest.mark.parametrize("n_bins", [2, 5, 10])
@given(case=cases(kinds=("continuous", "ties", "extremes", "edges")), dtype=dtypes)
def test_quantile_calibration_error(n_bins, case, dtype):
    from fairmedfm.metrics import expected_calibration_error

    inputs, exact = _prepare(case, "contiguous", dtype)
    slots = list(case.slots())
    edges = np.full((len(slots), n_bins + 1), np.nan)
    usable = {}
    for _, slot, mask in slots:
        if not mask.any():
            continue
        try:
            edges[slot] = ref.quantile_edges(exact[mask], n_bins)
            usable[slot] = mask
        except ValueError:  # pandas.qcut refuses duplicate edges; the API must raise there too
            pass
    count, label_sum, score_sum = calibration.binned_calibration(inputs["scores"], inputs["labels"],
                                                                 inputs["codes"], case.n_groups, edges, True)
    ece = calibration.calibration_error(count, label_sum, score_sum, 0)
    for slot, mask in usable.items():
        assert count[slot].sum() == mask.sum(), "qcut includes the lowest edge: every sample has a bin"
        expected = ref.calibration_error(exact[mask], case.labels[mask], n_bins, quantile=True)
        assert ece[slot] == pytest.approx(expected, rel=1e-12, abs=1e-15)
        oracle = expected_calibration_error(exact[mask], case.labels[mask], num_bins=n_bins, quantile_bins=True)
        assert ece[slot] == pytest.approx(oracle, rel=1e-12, abs=1e-15)


@given(case=cases(kinds=("continuous", "ties", "extremes", "constant", "edges")), layout=layouts, dtype=dtypes)
def test_log_loss_sums(case, layout, dtype):
    inputs, exact = _prepare(case, layout, dtype)
    before = _snapshot(inputs)
    sums = log_loss_sums(inputs["scores"], inputs["labels"], inputs["codes"], case.n_groups)
    _assert_unchanged(inputs, before)
    for _, slot, mask in case.slots():
        if not mask.any():
            assert sums[slot] == 0.0
            continue
        bce = -sums[slot] / mask.sum()
        assert np.isfinite(bce)
        assert bce == pytest.approx(ref.binary_cross_entropy(exact[mask], case.labels[mask]), rel=1e-12, abs=1e-14)


def test_log_loss_clamps_at_minus_100():
    scores = np.array([0.0, 1.0, 0.0, 1.0])
    labels = np.array([1, 0, 0, 1], np.uint8)
    codes = np.array([[0, 0, 1, 1]], np.intp)
    sums = log_loss_sums(scores, labels, codes, np.array([2], np.int64))
    np.testing.assert_array_equal(sums, [-200.0, 0.0, -200.0])


def test_log_loss_sums_are_compensated():
    # One clamped term of -100 followed by 1000 terms of about -1.1e-16: a naive float sum loses every small
    # term (below half an ulp of 100); compensated summation keeps them.
    p = np.nextafter(1.0, 0.0)  # log(p) = -1.1e-16
    scores = np.array([0.0] + [p] * 1000)
    labels = np.ones(1001, np.uint8)
    codes = np.zeros((1, 1001), np.intp)
    sums = log_loss_sums(scores, labels, codes, np.array([1], np.int64))
    exact = math.fsum([-100.0] + [math.log(p)] * 1000)
    naive = -100.0
    for _ in range(1000):
        naive += math.log(p)
    assert naive != exact  # the case does discriminate
    assert sums[0] == pytest.approx(exact, rel=1e-16, abs=0)
    assert sums[1] == pytest.approx(exact, rel=1e-16, abs=0)


def test_calibration_score_sums_are_compensated():
    # 4000 scores in the top bin (0.9, 1]: a naive running sum drifts by several ulps, the compensated sum
    # stays within one ulp of the exactly rounded sum.
    rng = np.random.default_rng(2)
    top = 0.9 + 0.1 * rng.random(4000)
    scores = np.concatenate([[0.0, 1.0], top])
    labels = np.zeros(scores.shape[0], np.uint8)
    codes = np.zeros((1, scores.shape[0]), np.intp)
    n_groups = np.array([1], np.int64)
    _, _, low, high = calibration.score_ranges(scores, labels, codes, n_groups)
    edges = calibration.equal_width_edges(low, high, 10)
    count, _, score_sum = calibration.binned_calibration(scores, labels, codes, n_groups, edges, False)
    in_top = scores[scores > edges[0, -2]]
    assert count[0, -1] == len(in_top)
    exact = math.fsum(in_top)
    naive = 0.0
    for value in in_top:
        naive += value
    ulp = np.spacing(exact)
    assert abs(naive - exact) > 2 * ulp  # the case does discriminate
    for slot in (0, 1):
        assert abs(score_sum[slot, -1] - exact) <= ulp


def test_kernels_accept_arrow_zero_copy_buffers():
    pa = pytest.importorskip("pyarrow")
    scores = pa.array([0.1, 0.9, 0.4, 0.4, 0.8]).to_numpy(zero_copy_only=True)
    labels = pa.array([0, 1, 0, 1, 1], pa.uint8()).to_numpy(zero_copy_only=True)
    assert not scores.flags.writeable and not labels.flags.writeable
    codes = np.zeros((1, 5), np.intp)
    codes.setflags(write=False)
    count, positives, u2 = ranking.rank_statistics(np.sort(scores), labels[np.argsort(scores, kind="stable")],
                                                   codes, np.array([1], np.int64))
    assert u2[0] == ref.pairwise_u2(scores, labels)
    sums = log_loss_sums(scores, labels, codes, np.array([1], np.int64))
    assert -sums[0] / 5 == pytest.approx(ref.binary_cross_entropy(scores, labels), rel=1e-14)


# --- Python-mode run: out-of-bounds indexing raises instead of reading garbage ----------------------

_NO_JIT_SCRIPT = textwrap.dedent("""
    import numpy as np
    import numba
    assert numba.config.DISABLE_JIT, "NUMBA_DISABLE_JIT was not honoured"
    import reference as ref
    from fairmedfm_fast.kernels import calibration, delong, ranking

    rng = np.random.default_rng(7)
    for n, n_groups in [(1, [1]), (2, [2]), (9, [3, 1]), (25, [4, 2, 5])]:
        scores = rng.choice([0.0, 0.25, 0.5, 1.0, 0.3], n)
        labels = (rng.random(n) < 0.5).astype(np.uint8)
        codes = np.stack([rng.integers(-1, g, n) for g in n_groups]).astype(np.intp)
        ng = np.array(n_groups, np.int64)
        order = np.argsort(scores, kind="stable")
        count, positives, u2 = ranking.rank_statistics(scores[order], labels[order], codes[:, order], ng)
        placed = delong.placement_sums(scores[order], labels[order], codes[:, order], ng, 0, n, False)
        complete = np.maximum(codes[:, order], 0)
        assert (delong.placement_sums(scores[order], labels[order], complete, ng, 0, n, True)
                == delong.placement_sums(scores[order], labels[order], complete, ng, 0, n, False)).all()
        present = codes >= 0
        n_pos = np.array([labels[p].sum() for p in present], np.int64)
        n_neg = present.sum(axis=1) - n_pos
        thresholds, best = ranking.best_f1_thresholds(scores[order], labels[order], codes[:, order], n_pos, n_neg)
        pos_above, neg_above = ranking.confusion_above(scores, labels, codes, ng,
                                                       np.column_stack([np.full(len(ng), 0.5), thresholds]))
        _, _, low, high = calibration.score_ranges(scores, labels, codes, ng)
        for n_bins in (1, 10):
            edges = calibration.equal_width_edges(low, high, n_bins)
            c, p, s = calibration.binned_calibration(scores, labels, codes, ng, edges, False)
            for variant in (0, 1, 2):
                calibration.calibration_error(c, p, s, variant)
        sums = calibration.slot_sums(calibration.log_loss_terms(scores, labels), codes, ng)
        slot = 0
        for k, g_count in enumerate(n_groups):
            for g in list(range(g_count)) + [None]:
                mask = present[k] if g is None else codes[k] == g
                assert count[slot] == mask.sum()
                assert u2[slot] == ref.pairwise_u2(scores[mask], labels[mask])
                assert list(placed[slot, :3]) == [positives[slot], count[slot] - positives[slot], u2[slot]]
                slot += 1
            if present[k].any():
                assert thresholds[k] == ref.best_f1_threshold(scores[present[k]], labels[present[k]])[0]
    print("ok")
""")


def test_kernels_without_jit():
    env = {**os.environ, "NUMBA_DISABLE_JIT": "1"}
    tests_dir = Path(__file__).resolve().parent
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(tests_dir), env.get("PYTHONPATH", "")]))
    result = subprocess.run(cwd=OUTSIDE_REPO, args=[sys.executable, "-c", _NO_JIT_SCRIPT], env=env, capture_output=True, text=True,
                            timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip() == "ok"


def test_no_numba_warnings_on_first_call():
    """A first compilation (a fresh dispatcher, so that nothing compiled earlier in the session hides
    it) gives no warning of any kind, and the helper computes the FairMedFM F1 in its order."""
    from numba import njit

    from fairmedfm_fast.kernels._jit import JIT_OPTIONS

    fresh = njit(**JIT_OPTIONS)(ranking.f1_at.py_func)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        values = [fresh(tp, fp, n_pos) for tp, fp, n_pos in ((1, 1, 2), (0, 0, 3), (3, 0, 3), (2, 5, 0))]
    assert len(fresh.signatures) == 1  # it did compile here
    for (tp, fp, n_pos), value in zip(((1, 1, 2), (0, 0, 3), (3, 0, 3), (2, 5, 0)), values, strict=True):
        precision = tp / (tp + fp) if tp + fp else 0.0
        recall = tp / n_pos if n_pos else 1.0
        assert value == 2.0 * precision * recall / (precision + recall + 1e-8)
    assert values[0] == 2 * 0.5 * 0.5 / (1 + 1e-8) and values[1] == 0.0


# --- optional sample weights: integer weights are repeated samples ------------------------------------

@given(case=cases(max_n=120), data=st.data())
def test_integer_weights_equal_repeated_samples(case, data):
    weights_int = np.asarray(data.draw(st.lists(st.integers(0, 3), min_size=case.n, max_size=case.n)), np.int64)
    weights = weights_int.astype(np.float64)
    note(f"weights={weights_int.tolist()}")
    order = np.argsort(case.scores, kind="stable")
    repeat = np.repeat(np.arange(case.n), weights_int)  # weight 0: the sample is absent
    rep_scores, rep_labels, rep_codes = case.scores[repeat], case.labels[repeat], case.codes[:, repeat]
    rep_order = np.argsort(rep_scores, kind="stable")

    weighted = ranking.rank_statistics(case.scores[order], case.labels[order], case.codes[:, order], case.n_groups,
                                       weights[order])
    plain = ranking.rank_statistics(rep_scores[rep_order], rep_labels[rep_order], rep_codes[:, rep_order],
                                    case.n_groups)
    for w_value, p_value in zip(weighted, plain, strict=True):
        np.testing.assert_array_equal(w_value, p_value.astype(np.float64))

    thresholds = np.column_stack([np.full(len(case.n_groups), 0.5), np.full(len(case.n_groups), 0.25)])
    for w_value, p_value in zip(ranking.confusion_above(case.scores, case.labels, case.codes, case.n_groups,
                                                        thresholds, weights),
                                ranking.confusion_above(rep_scores, rep_labels, rep_codes, case.n_groups, thresholds),
                                strict=True):
        np.testing.assert_array_equal(w_value, p_value.astype(np.float64))

    w_count, w_pos, w_low, w_high = calibration.score_ranges(case.scores, case.labels, case.codes, case.n_groups,
                                                             weights)
    p_count, p_pos, p_low, p_high = calibration.score_ranges(rep_scores, rep_labels, rep_codes, case.n_groups)
    np.testing.assert_array_equal(w_count, p_count.astype(np.float64))
    np.testing.assert_array_equal(w_low, p_low)
    np.testing.assert_array_equal(w_high, p_high)

    edges = calibration.equal_width_edges(p_low, p_high, 10)
    w_cal = calibration.binned_calibration(case.scores, case.labels, case.codes, case.n_groups, edges, False, weights)
    p_cal = calibration.binned_calibration(rep_scores, rep_labels, rep_codes, case.n_groups, edges, False)
    np.testing.assert_array_equal(w_cal[0], p_cal[0].astype(np.float64))
    np.testing.assert_allclose(w_cal[1], p_cal[1], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(w_cal[2], p_cal[2], rtol=1e-12, atol=1e-12)

    terms = calibration.log_loss_terms(case.scores, case.labels)
    np.testing.assert_allclose(calibration.slot_sums(terms, case.codes, case.n_groups, weights),
                               calibration.slot_sums(terms[repeat], rep_codes, case.n_groups), rtol=1e-12, atol=1e-12)

    present = case.codes >= 0
    w_pos_k = np.array([weights[p & (case.labels == 1)].sum() for p in present])
    w_neg_k = np.array([weights[p & (case.labels == 0)].sum() for p in present])
    w_thr, w_best = ranking.best_f1_thresholds(case.scores[order], case.labels[order], case.codes[:, order], w_pos_k,
                                               w_neg_k, weights=weights[order])
    rep_present = rep_codes >= 0
    p_thr, p_best = ranking.best_f1_thresholds(
        rep_scores[rep_order], rep_labels[rep_order], rep_codes[:, rep_order],
        np.array([rep_labels[p].sum() for p in rep_present], np.int64),
        np.array([(1 - rep_labels[p]).sum() for p in rep_present], np.int64))
    np.testing.assert_array_equal(w_thr, p_thr)
    np.testing.assert_array_equal(w_best, p_best)


@settings(max_examples=60, deadline=None)
@given(scores=st.lists(st.one_of(st.floats(0.0, 1.0), st.floats(1e-300, 1e-3), st.floats(0.999, 1.0),
                                 st.sampled_from([0.0, 1.0, 5e-324, 0.5, 1 - 2**-53])), min_size=1, max_size=1500),
       seed=st.integers(0, 2**16), single=st.booleans())
def test_log_loss_terms_within_an_ulp_of_numpy_log(scores, seed, single):
    """The blockwise logarithm is within one ulp of NumPy's for every term (and equal where the log
    meets the -100 clamp); blocks with a zero, a subnormal or a soft label are redone term by term
    with the C library's log, which compiled ``np.log`` calls on a scalar: those terms equal
    ``math.log``'s (the same function) bit for bit. NumPy's own array log may differ from it by an
    ulp (its AVX-512 loop does on about 0.4% of arguments), so it is not the reference there."""
    scores = np.array(scores, np.float32 if single else np.float64)
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 2, len(scores)).astype(np.uint8)
    p = scores.astype(np.float64)
    with np.errstate(divide="ignore"):
        expected = -np.maximum(np.where(labels == 1, np.log(p), np.log(1.0 - p)), -100.0)
    terms = calibration.log_loss_terms(scores, labels)
    assert np.abs(terms.view(np.int64) - expected.view(np.int64)).max() <= 1

    def log(x):  # the C library's log, clamped as the kernel clamps it
        return max(math.log(x), -100.0) if x > 0 else -100.0

    soft = labels.astype(np.float64)
    soft[0] = 0.25
    mixed = calibration.log_loss_terms(scores, soft)
    block = min(len(scores), 512)  # the soft label's block is computed by np.log, term by term
    by_term = [-log(p[i]) if labels[i] else -log(1.0 - p[i]) for i in range(1, block)]
    np.testing.assert_array_equal(mixed[1:block], by_term)
    assert np.abs(mixed[1:block].view(np.int64) - expected[1:block].view(np.int64)).max(initial=0) <= 1
    assert mixed[0] == -(0.25 * log(p[0]) + 0.75 * log(1.0 - p[0]))
