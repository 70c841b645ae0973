"""kernels/rank_sums.py (AUC's sums without a sorted copy of the samples) against a search-based
count of the (positive, negative) pairs, and the engine's use of it for auc_gap."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from reference import pairwise_u2
from strategies import SPECIAL_FLOAT64

import fairmedfm_fast as fm
from fairmedfm_fast._engine import classification as _engine
from fairmedfm_fast.kernels import rank_sums


def _bits(scores):
    return scores.view(np.uint64 if scores.dtype.itemsize == 8 else np.uint32)


def _expected(scores, labels, codes, n_groups):
    """Count, positives and u2 of each group and of all present samples: for every positive, twice the
    negatives below it plus those tied with it (np.searchsorted on the group's sorted negatives)."""
    values = scores.astype(np.float64)
    count, positives, u2 = (np.zeros(n_groups + 1, np.int64) for _ in range(3))
    for slot in range(n_groups + 1):
        here = codes == slot if slot < n_groups else codes >= 0
        negatives = np.sort(values[here & (labels == 0)])
        positive_scores = values[here & (labels == 1)]
        below = np.searchsorted(negatives, positive_scores, "left")
        up_to = np.searchsorted(negatives, positive_scores, "right")
        count[slot], positives[slot] = here.sum(), len(positive_scores)
        u2[slot] = int((below + up_to).sum())
    return count, positives, u2


def _check(scores, labels, codes, n_groups, n_threads=1):
    got = rank_sums.rank_sums(_bits(scores), labels, codes, n_groups, n_threads)
    assert got is not None
    for value, expected in zip(got, _expected(scores, labels, codes, n_groups)):
        np.testing.assert_array_equal(value, expected)


def _payload(n, n_groups, seed):
    rng = np.random.default_rng(seed)
    return rng.integers(0, 2, n).astype(np.uint8), rng.integers(-1, n_groups, n).astype(np.int8)


@settings(max_examples=150, deadline=None)
@given(values=st.lists(st.one_of(SPECIAL_FLOAT64, st.floats(allow_nan=False, width=64)), max_size=200),
       n_groups=st.integers(1, 9), seed=st.integers(0, 2**16))
def test_float64_any_values(values, n_groups, seed):
    # negative scores, -0.0 beside 0.0, subnormals, infinities
    scores = np.array(values, np.float64)
    _check(scores, *_payload(len(scores), n_groups, seed), n_groups)


@settings(max_examples=60, deadline=None)
@given(values=st.lists(st.floats(allow_nan=False, width=32), max_size=200), seed=st.integers(0, 2**16))
def test_float32(values, seed):
    scores = np.array(values, np.float32)
    _check(scores, *_payload(len(scores), 4, seed), 4)


@settings(max_examples=60, deadline=None)
@given(low=hnp.arrays(np.uint32, st.integers(1, 300), elements=st.integers(0, 64)), negative=st.booleans(),
       seed=st.integers(0, 2**16))
def test_float64_differing_only_in_low_32_bits(low, negative, seed):
    high = np.uint64(np.array(-0.75 if negative else 0.75).view(np.uint64)) & np.uint64(0xFFFFFFFF00000000)
    scores = (high | low.astype(np.uint64)).view(np.float64)
    _check(scores, *_payload(len(scores), 3, seed), 3)


@pytest.mark.parametrize("scores", [
    np.full(1000, 0.25), np.zeros(1000), np.full(1000, -0.0), np.where(np.arange(1000) % 2, 0.0, -0.0),
    np.linspace(-3, 3, 5000), np.array([], np.float64), np.array([0.5]),
], ids=["all-tied", "zeros", "negative-zeros", "signed-zeros", "negative-linspace", "empty", "one"])
def test_fixed_cases(scores):
    _check(scores, *_payload(len(scores), 3, 0), 3)


def test_small_cases_against_pairs():
    rng = np.random.default_rng(5)
    for _ in range(30):
        n = int(rng.integers(1, 40))
        scores = np.round(rng.standard_normal(n), 1)
        labels, codes = _payload(n, 2, int(rng.integers(1 << 16)))
        count, positives, u2 = rank_sums.rank_sums(_bits(scores), labels, codes, 2)
        for slot in range(3):
            here = codes == slot if slot < 2 else codes >= 0
            assert u2[slot] == pairwise_u2(scores[here], labels[here])


@settings(max_examples=25, deadline=None)
@given(kind=st.sampled_from(["uniform", "clustered", "low-bits", "normal", "ties", "one-value-a-group"]),
       n=st.integers(2_000, 40_000), n_groups=st.sampled_from([1, 5, 127]), seed=st.integers(0, 2**16))
def test_large_buckets(kind, n, n_groups, seed):
    """Buckets of thousands of samples: a second digit, then one insertion sort over the bucket or,
    with crowded sub-buckets, insertion or LSD sorts of each."""
    rng = np.random.default_rng(seed)
    scores = {"uniform": lambda: rng.random(n),
              "clustered": lambda: rng.choice([0.1, 0.5, 0.9], n) + rng.random(n) * 1e-9,
              "low-bits": lambda: (np.uint64(np.array(0.75).view(np.uint64))
                                   + rng.integers(0, 1 << 20, n).astype(np.uint64)).view(np.float64),
              "normal": lambda: rng.standard_normal(n) * 4,
              "ties": lambda: np.round(rng.random(n), 3),
              "one-value-a-group": lambda: np.repeat(rng.random(4), n // 4 + 1)[:n]}[kind]()
    _check(scores, *_payload(n, n_groups, seed), n_groups)
    _check(scores.astype(np.float32), *_payload(n, n_groups, seed + 1), n_groups)


@settings(max_examples=60, deadline=None)
@given(values=st.lists(st.one_of(SPECIAL_FLOAT64, st.floats(allow_nan=False, width=64), st.sampled_from([0.25, -0.25])),
                       max_size=300),
       n_threads=st.integers(2, 5), seed=st.integers(0, 2**16))
def test_threads_share_each_step(values, n_threads, seed):
    # pieces of 8 samples: key range, counts and scatter split among threads, then runs of buckets whose
    # U each thread counts from its own start
    scores = np.array(values, np.float64)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(rank_sums, "PIECE", 8)
        _check(scores, *_payload(len(scores), 4, seed), 4, n_threads)


def test_threads_on_large_inputs():
    rng = np.random.default_rng(2)
    n = rank_sums.PIECE * 2 + 12345
    scores = np.concatenate([rng.random(n // 2), np.round(rng.standard_normal(n - n // 2), 3)])
    scores[::97] = -0.0
    _check(scores, *_payload(n, 5, 2), 5, 2)


def test_payload_that_does_not_fit():
    # keys spanning all 64 bits leave 11 bits beside the bucket's key bits: 1,024 groups need 12
    scores = np.array([-1e308, 1e308, 0.5, -0.5] * 10)
    labels = np.tile(np.array([0, 1], np.uint8), 20)
    assert rank_sums.rank_sums(_bits(scores), labels, np.arange(40, dtype=np.int16), 1024) is None
    assert rank_sums.rank_sums(_bits(scores), labels, np.arange(40, dtype=np.int16), 1023) is not None


@pytest.mark.filterwarnings("ignore")  # groups of one label
@pytest.mark.parametrize("n_groups", [3, 5000])
def test_auc_gap_takes_it_and_agrees_with_the_sort(monkeypatch, n_groups):
    # auc_gap on a large input goes through rank_sums (5,000 groups with scores from 0 to 1: the
    # payload does not fit, and the engine sorts); the same numbers as the sorted sweep of evaluate.
    rng = np.random.default_rng(n_groups)
    n = _engine.RADIX_FROM + 5000
    scores = np.round(rng.random(n), 2)
    scores[:3] = [0.0, 1.0, 5e-324]
    labels = rng.integers(0, 2, n)
    groups = np.char.add("g", rng.integers(0, n_groups, n).astype(str))  # strings: any number of groups
    results = []
    real = rank_sums.rank_sums
    monkeypatch.setattr(rank_sums, "rank_sums", lambda *a: results.append(real(*a)) or results[-1])
    gap = fm.auc_gap(labels, scores, sensitive_features=groups)
    assert len(results) == 1 and (results[0] is None) == (n_groups > 4095)
    aucs = fm.evaluate(labels, scores, {"g": groups}).by_group["auc"].dropna()
    assert gap == pytest.approx(aucs.max() - aucs.min(), abs=1e-12)
