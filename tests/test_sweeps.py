"""The fused sweeps of kernels/sweeps.py against the slow references of ``reference.py``, with and
without weights (integer weights must equal repeated samples)."""
import math

import numpy as np
import pandas as pd
import pytest
import reference as ref
from hypothesis import given, note, settings
from hypothesis import strategies as st
from strategies import cases

from fairmedfm_fast._engine import classification as _engine
from fairmedfm_fast.kernels import calibration, sweeps


def _sorted(case, dtype):
    scores = case.scores.astype(dtype)
    order = np.argsort(scores, kind="stable")
    note(f"kind={case.kind} n={case.n} n_groups={case.n_groups.tolist()} dtype={np.dtype(dtype).name}")
    return (scores[order], case.labels[order], np.ascontiguousarray(case.codes[:, order]),
            scores.astype(np.float64)[order])


def _sweep(scores, labels, codes, n_groups, thresholds, weights=None):
    """The fused pass and the best-F1 sweep as the engine runs them for groupings with missing
    values (one grouping a call), cuts at ``searchsorted(scores, t, "right")``; each output
    concatenated over the groupings."""
    positions = [int(np.searchsorted(scores, t, "right")) for t in thresholds]
    cuts = np.array(sorted(positions), np.int64)
    terms = calibration.log_loss_terms(scores, labels)
    parts = []
    for k in range(len(n_groups)):
        row, size = codes[k:k + 1], n_groups[k:k + 1]
        low, high = sweeps.score_ends(scores, row, size, weights)
        marks = sweeps.bin_marks(scores, calibration.equal_width_edges(low, high, 10), size)
        first = sweeps.ranked_sums(scores, labels, row, size, terms, cuts, marks, 10, 0, len(scores), weights)
        count, positives = first[:2]
        second = sweeps.best_f1_sweep(scores, labels, row, size, positives[-1:], count[-1:] - positives[-1:],
                                      weights)
        parts.append((*first, low, high, *second))
    return [np.concatenate(values) for values in zip(*parts)], sorted(positions), positions


@settings(deadline=None)
@given(case=cases(), dtype=st.sampled_from([np.float64, np.float32]), data=st.data())
def test_sweeps_match_references(case, dtype, data):
    scores, labels, codes, exact = _sorted(case, dtype)
    pick = float(exact[data.draw(st.integers(0, case.n - 1))])
    thresholds = [0.5, pick]  # a score itself: predictions are score > t
    sums, ordered, positions = _sweep(scores, labels, codes, case.n_groups, thresholds)
    count, positives, u2, loss, pos_cut, neg_cut, bin_count, bin_labels, bin_scores, low, high, best, pos_at, neg_at = sums
    ece = calibration.calibration_error(bin_count, bin_labels, bin_scores, 0)
    for k, slot, mask in case.slots():
        s, y = case.scores.astype(dtype).astype(np.float64)[mask], case.labels[mask]
        assert count[slot] == mask.sum() and positives[slot] == y.sum()
        assert u2[slot] == ref.pairwise_u2(s, y), f"slot {slot}"
        for threshold, position in zip(thresholds, positions):
            j = ordered.index(position)
            tn, fp, fn, tp = ref.confusion_counts(s, y, threshold)
            assert (positives[slot] - pos_cut[slot, j], count[slot] - positives[slot] - neg_cut[slot, j]) == (tp, fp)
        if not mask.any():
            assert math.isnan(low[slot]) and math.isnan(ece[slot])
            continue
        assert (low[slot], high[slot]) == (s.min(), s.max())
        assert loss[slot] / count[slot] == pytest.approx(ref.binary_cross_entropy(s, y), rel=1e-12)
        assert ece[slot] == pytest.approx(ref.calibration_error(s, y), rel=1e-12, abs=1e-15)
        np.testing.assert_array_equal(bin_count[slot], np.bincount(pd.cut(s, 10, labels=False), minlength=10))
        present = codes[k] >= 0
        expected, _ = ref.best_f1_threshold(exact[present], labels[present])
        assert best[k] == expected, f"grouping {k}"  # bit-exact: a score, lowest among equal F1
        tn, fp, fn, tp = ref.confusion_counts(s, y, best[k])
        assert (positives[slot] - pos_at[slot], count[slot] - positives[slot] - neg_at[slot]) == (tp, fp)


@settings(deadline=None, max_examples=50)
@given(case=cases(max_n=60), data=st.data())
def test_integer_weights_equal_repeated_samples(case, data):
    scores, labels, codes, _ = _sorted(case, np.float64)
    weights = np.array(data.draw(st.lists(st.integers(0, 3), min_size=case.n, max_size=case.n)), np.float64)
    if not weights.any():
        weights[0] = 1.0
    repeat = weights.astype(np.int64)
    weighted = _sweep(scores, labels, codes, case.n_groups, [0.5], weights)
    plain = _sweep(np.repeat(scores, repeat), np.repeat(labels, repeat),
                   np.ascontiguousarray(np.repeat(codes, repeat, axis=1)), case.n_groups, [0.5])
    for got, expected in zip(weighted[0], plain[0]):
        np.testing.assert_allclose(np.asarray(got, np.float64), np.asarray(expected, np.float64), rtol=1e-12,
                                   atol=1e-12, equal_nan=True)


@settings(deadline=None, max_examples=60)
@given(case=cases(max_n=80), data=st.data())
def test_best_f1_sweep_matches_ranking_kernel(case, data):
    """best_f1_sweep (which rules out most blocks by a bound before dividing, and counts
    the groups below the best threshold after the sweep) against ranking.best_f1_thresholds, with
    real-valued weights: the same thresholds and the same counts below them, bit for bit."""
    from fairmedfm_fast.kernels import ranking

    scores, labels, codes, _ = _sorted(case, np.float64)
    weights = np.array(data.draw(st.lists(st.sampled_from([0.0, 0.3, 1.0, 2.5]), min_size=case.n,
                                          max_size=case.n)), np.float64)
    for w in (None, weights):
        count, positives = _sweep(scores, labels, codes, case.n_groups, [], w)[0][:2]
        overall = np.cumsum(case.n_groups + 1) - 1
        n_pos, n_neg = positives[overall], (count - positives)[overall]
        best, pos_at, neg_at = sweeps.best_f1_sweep(scores, labels, codes, case.n_groups, n_pos, n_neg, w)
        expected = ranking.best_f1_thresholds(scores, labels, codes, n_pos, n_neg, None, None, w)[0]
        np.testing.assert_array_equal(best, expected)
        for k, slot, mask in case.slots():
            below = mask[np.argsort(case.scores, kind="stable")] & (scores <= best[k])
            ww = np.ones(case.n) if w is None else w
            y = labels.astype(bool)
            if not np.isnan(best[k]):
                assert pos_at[slot] == pytest.approx(ww[below & y].sum(), rel=1e-12, abs=1e-12)
                assert neg_at[slot] == pytest.approx(ww[below & ~y].sum(), rel=1e-12, abs=1e-12)


@settings(deadline=None, max_examples=60)
@given(case=cases(max_n=400), data=st.data())
def test_complete_groupings_in_one_pass_equal_each_alone(case, data):
    """Groupings without missing values share one pass (and its overall slot); every sum, floats
    included, is the same bit for bit as in a pass of that grouping alone, with or without weights,
    BCE terms, cuts and bins."""
    scores, labels, codes, _ = _sorted(case, np.float64)
    codes = np.ascontiguousarray(np.where(codes < 0, 0, codes))  # complete
    weights = data.draw(st.sampled_from([None, "counts"]))
    if weights is not None:
        weights = np.array(data.draw(st.lists(st.integers(0, 3), min_size=case.n, max_size=case.n)), np.float64)
    terms = calibration.log_loss_terms(scores, labels) if data.draw(st.booleans()) else None
    cuts = np.unique(np.searchsorted(scores, [0.25, 0.5], "right")).astype(np.int64)
    low, high = sweeps.score_ends(scores, codes, case.n_groups, weights)
    edges = calibration.equal_width_edges(low, high, 10) if data.draw(st.booleans()) else None
    n_bins = 1 if edges is None else 10
    marks = None if edges is None else sweeps.bin_marks(scores, edges, case.n_groups)
    together = sweeps.ranked_sums(scores, labels, codes, case.n_groups, terms, cuts, marks, n_bins, 0, len(scores),
                                   weights)
    starts = np.concatenate(([0], np.cumsum(case.n_groups + 1)))
    for k in range(len(case.n_groups)):
        window = slice(starts[k], starts[k + 1])
        alone_marks = None if edges is None else sweeps.bin_marks(scores, edges[window], case.n_groups[k:k + 1])
        alone = sweeps.ranked_sums(scores, labels, codes[k:k + 1], case.n_groups[k:k + 1], terms, cuts,
                                   alone_marks, n_bins, 0, len(scores), weights)
        for got, expected in zip(together, alone):
            np.testing.assert_array_equal(got[window], expected)


def test_sums_fold_with_many_groups():
    """With more groups than FOLD / 8 the pass folds its plain running sums less often; BCE and ECE
    still match the compensated references."""
    rng = np.random.default_rng(3)
    n, groups = 20_000, 400
    scores = np.sort(rng.random(n))
    labels = (rng.random(n) < scores).astype(np.uint8)
    codes = rng.integers(0, groups, (1, n))
    sizes = np.array([groups], np.int64)
    terms = calibration.log_loss_terms(scores, labels)
    low, high = sweeps.score_ends(scores, codes, sizes)
    marks = sweeps.bin_marks(scores, calibration.equal_width_edges(low, high, 10), sizes)
    count, _, _, loss, _, _, bin_count, bin_labels, bin_scores = sweeps.ranked_sums(
        scores, labels, codes, sizes, terms, np.empty(0, np.int64), marks, 10, 0, n)
    ece = calibration.calibration_error(bin_count, bin_labels, bin_scores, 0)
    for group in (0, 7, groups - 1):
        mask = codes[0] == group
        assert loss[group] / count[group] == pytest.approx(ref.binary_cross_entropy(scores[mask], labels[mask]),
                                                           rel=1e-12)
        assert ece[group] == pytest.approx(ref.calibration_error(scores[mask], labels[mask]), rel=1e-12, abs=1e-15)


@settings(deadline=None, max_examples=40)
@given(case=cases(max_n=200))
def test_best_f1_sweep_without_codes_equals_one_group(case):
    """The shared best-F1 sweep reads no codes (``sorted_codes=None``): the same as one group of all samples."""
    scores, labels, _, _ = _sorted(case, np.float64)
    n_pos = np.array([labels.sum()], np.int64)
    one = np.zeros((1, case.n), np.int8)
    expected = sweeps.best_f1_sweep(scores, labels, one, np.ones(1, np.int64), n_pos, case.n - n_pos)
    got = sweeps.best_f1_sweep(scores, labels, None, np.ones(1, np.int64), n_pos, case.n - n_pos)
    for g, e in zip(got, expected):
        np.testing.assert_array_equal(g, e)


@settings(deadline=None, max_examples=60)
@given(case=cases(), data=st.data())
def test_ranges_join_to_one_pass(case, data):
    """The pass over consecutive ranges (each starting a tie block), joined as the engine joins them,
    gives the counts, U and cut counts of one pass over all samples exactly, its float sums to 1e-12."""
    scores, labels, codes, _ = _sorted(case, np.float64)
    starts = np.flatnonzero(np.r_[True, scores[1:] != scores[:-1]])  # where tie blocks start
    inner = sorted(set(data.draw(st.lists(st.sampled_from(starts.tolist()), max_size=3))) - {0})
    bounds = [0, *inner, case.n]
    complete = codes.min(axis=1) >= 0
    rows = np.flatnonzero(complete) if complete.any() else np.array([0])
    codes, sizes = np.ascontiguousarray(codes[rows]), case.n_groups[rows]
    terms = calibration.log_loss_terms(scores, labels)
    cuts = np.unique(np.r_[0, np.searchsorted(scores, [0.3, 0.6], "right"), case.n]).astype(np.int64)
    low, high = sweeps.score_ends(scores, codes, sizes)
    marks = sweeps.bin_marks(scores, calibration.equal_width_edges(low, high, 10), sizes)
    whole = sweeps.ranked_sums(scores, labels, codes, sizes, terms, cuts, marks, 10, 0, case.n)
    joined = _engine.joined_sums([sweeps.ranked_sums(scores, labels, codes, sizes, terms, cuts, marks, 10, a, b)
                              for a, b in zip(bounds[:-1], bounds[1:])])
    for j, (got, expected) in enumerate(zip(joined, whole)):
        if j in (3, 8):  # loss and bin score sums: floats added in another order
            np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)
        else:
            np.testing.assert_array_equal(got, expected)


def test_engine_split_does_not_change_the_report(monkeypatch):
    """``evaluate`` with the sorted order read as 3 ranges equals the single pass (counts and AUC
    exactly, BCE and ECE to 1e-12), on one thread or several."""
    import fairmedfm_fast as fm

    rng = np.random.default_rng(5)
    n = 300_000  # threaded from 2**18 samples
    y = (rng.random(n) < 0.3).astype(int)
    s = np.round(rng.random(n), 3)  # ties everywhere, also at the range bounds
    attributes = {"site": rng.integers(0, 4, n), "sex": rng.integers(0, 2, n)}
    monkeypatch.setattr(_engine, "SPLIT_FROM", n + 1)
    one = fm.evaluate(y, s, attributes)
    monkeypatch.setattr(_engine, "SPLIT_FROM", 1000)
    monkeypatch.setattr(_engine, "SPLIT", 3)
    assert len(_engine.split_ranges(np.sort(s))) == 3
    for jobs in ("1", "2"):
        monkeypatch.setenv("FAIRMEDFM_FAST_N_JOBS", jobs)
        split = fm.evaluate(y, s, attributes)
        pd.testing.assert_frame_equal(split.by_group, one.by_group, rtol=1e-12, atol=1e-14)
        pd.testing.assert_frame_equal(split.summary, one.summary, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_bin_marks_are_the_first_samples_above_each_edge(dtype):
    # float32 scores are searched as float32: the positions must be those of the float64 comparison,
    # also for edges between two float32 values, on one, and at the ends
    rng = np.random.default_rng(3)
    scores = np.sort(np.round(rng.random(3000), 3).astype(dtype))
    as64 = scores.astype(np.float64)
    n_groups = np.array([2, 3], np.int64)
    picks = as64[rng.integers(0, len(scores), (7, 4))]
    edges = np.concatenate([picks, np.nextafter(picks, np.inf), np.nextafter(picks, -np.inf),
                            np.full((7, 1), -1.0), np.full((7, 1), 2.0)], axis=1)
    edges.sort(axis=1)
    edges[1] = np.nan  # an empty slot: no marks
    positions, slots, numbers = sweeps.bin_marks(scores, edges, n_groups)
    expected = sorted((int(np.searchsorted(as64, edges[s, e], "right")), s, e)
                      for s in (0, 2, 3, 4, 5) for e in range(edges.shape[1]))  # slot 6 is an overall slot
    assert sorted(zip(positions.tolist(), slots.tolist(), numbers.tolist())) == expected
    assert positions.tolist() == sorted(positions.tolist())
    assert positions.dtype == slots.dtype == numbers.dtype == np.int64
