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

from fairmedfm_fast.kernels import calibration, sweeps


def _sorted(case, dtype):
    scores = case.scores.astype(dtype)
    order = np.argsort(scores, kind="stable")
    note(f"kind={case.kind} n={case.n} n_groups={case.n_groups.tolist()} dtype={np.dtype(dtype).name}")
    return (scores[order], case.labels[order], np.ascontiguousarray(case.codes[:, order]),
            scores.astype(np.float64)[order])


def _sweep(scores, labels, codes, n_groups, thresholds, weights=None):
    """Both passes as the engine runs them; cuts at ``searchsorted(scores, t, "right")``."""
    positions = [int(np.searchsorted(scores, t, "right")) for t in thresholds]
    cuts = np.empty((len(n_groups), len(positions)), np.int64)
    cuts[:] = sorted(positions)
    terms = calibration.log_loss_terms(scores, labels)
    first = sweeps.ranked_sums(scores, labels, codes, n_groups, terms, cuts, weights)
    count, positives, _, low, high = first[:5]
    edges = calibration.equal_width_edges(low, high, 10)
    starts = np.cumsum(n_groups + 1) - 1
    second = sweeps.ranked_bins(scores, labels, codes, n_groups, positives[starts],
                                count[starts] - positives[starts], edges, True, weights)
    return first, second, sorted(positions), positions


@settings(deadline=None)
@given(case=cases(), dtype=st.sampled_from([np.float64, np.float32]), data=st.data())
def test_sweeps_match_references(case, dtype, data):
    scores, labels, codes, exact = _sorted(case, dtype)
    pick = float(exact[data.draw(st.integers(0, case.n - 1))])
    thresholds = [0.5, pick]  # a score itself: predictions are score > t
    first, second, ordered, positions = _sweep(scores, labels, codes, case.n_groups, thresholds)
    count, positives, u2, low, high, loss, pos_cut, neg_cut = first
    best, pos_at, neg_at, bin_count, bin_labels, bin_scores = second
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
    for got, expected in zip([*weighted[0], *weighted[1]], [*plain[0], *plain[1]]):
        np.testing.assert_allclose(np.asarray(got, np.float64), np.asarray(expected, np.float64), rtol=1e-12,
                                   atol=1e-12, equal_nan=True)


@settings(deadline=None, max_examples=60)
@given(case=cases(max_n=80), data=st.data())
def test_best_f1_sweep_matches_ranking_kernel(case, data):
    """ranked_bins's F1 sweep (which rules out most blocks by a bound before dividing, and counts
    the groups below the best threshold after the sweep) against ranking.best_f1_thresholds, with
    real-valued weights: the same thresholds and the same counts below them, bit for bit."""
    from fairmedfm_fast.kernels import ranking

    scores, labels, codes, _ = _sorted(case, np.float64)
    weights = np.array(data.draw(st.lists(st.sampled_from([0.0, 0.3, 1.0, 2.5]), min_size=case.n,
                                          max_size=case.n)), np.float64)
    for w in (None, weights):
        count, positives = sweeps.ranked_sums(scores, labels, codes, case.n_groups, np.empty(0),
                                              np.zeros((len(case.n_groups), 0), np.int64), w)[:2]
        overall = np.cumsum(case.n_groups + 1) - 1
        n_pos, n_neg = positives[overall], (count - positives)[overall]
        best, pos_at, neg_at = sweeps.ranked_bins(scores, labels, codes, case.n_groups, n_pos, n_neg,
                                                  np.empty((0, 1)), True, w)[:3]
        expected = ranking.best_f1_thresholds(scores, labels, codes, n_pos, n_neg, None, None, w)[0]
        np.testing.assert_array_equal(best, expected)
        for k, slot, mask in case.slots():
            below = mask[np.argsort(case.scores, kind="stable")] & (scores <= best[k])
            ww = np.ones(case.n) if w is None else w
            y = labels.astype(bool)
            if not np.isnan(best[k]):
                assert pos_at[slot] == pytest.approx(ww[below & y].sum(), rel=1e-12, abs=1e-12)
                assert neg_at[slot] == pytest.approx(ww[below & ~y].sum(), rel=1e-12, abs=1e-12)
