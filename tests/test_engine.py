"""The one sort and the engine on inputs large enough for the packed-word sort (n >= 65,536)."""
import numpy as np
import pytest
from sklearn.metrics import roc_auc_score

import fairmedfm_fast as fm
from fairmedfm_fast import _engine
from fairmedfm_fast.kernels import ranking

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
    order, sorted_scores = _engine.sort_scores(scores, ranking)
    assert sorted_scores.dtype == scores.dtype
    np.testing.assert_array_equal(sorted_scores, np.sort(scores))
    np.testing.assert_array_equal(scores[order], sorted_scores)
    assert np.array_equal(np.sort(order), np.arange(N))


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
