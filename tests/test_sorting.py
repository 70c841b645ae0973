"""The radix sort of kernels/sorting.py against NumPy's stable argsort, and the engine's arrange on it."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from strategies import SPECIAL_FLOAT64

from fairmedfm_fast._engine import classification as _engine
from fairmedfm_fast._engine import sorting as engine_sorting
from fairmedfm_fast.kernels import sorting


def _bits(scores):
    return scores.view(np.uint64 if scores.dtype.itemsize == 8 else np.uint32)


def _check(scores, labels, codes, n_threads=1):
    expected = np.argsort(scores, kind="stable")
    sorted_bits, sorted_labels, sorted_codes = sorting.sort_carrying(_bits(scores), labels, codes, n_threads)
    sorted_scores = sorted_bits.view(scores.dtype)
    np.testing.assert_array_equal(sorted_scores, scores[expected])  # -0.0 == 0.0
    assert not np.signbit(sorted_scores[sorted_scores == 0]).any()  # -0.0 comes out as 0.0
    np.testing.assert_array_equal(sorted_labels, labels[expected])
    np.testing.assert_array_equal(sorted_codes, codes[:, expected])
    # the same into memory held from an earlier call (full of old bytes): outputs there, equal
    memory = np.full(sorting.MEMORY_BYTES * len(scores) + 3, 0xA5, np.uint8)
    into = sorting.sort_carrying(_bits(scores), labels, codes, n_threads, memory)
    for got, want in zip(into, (sorted_bits, sorted_labels, sorted_codes)):
        np.testing.assert_array_equal(got, want)
    order, order_bits = sorting.sort_order(_bits(scores), n_threads)
    np.testing.assert_array_equal(order, expected)
    np.testing.assert_array_equal(order_bits, sorted_bits)


def _payload(n, n_rows, seed):
    rng = np.random.default_rng(seed)
    return rng.integers(0, 2, n).astype(np.uint8), rng.integers(-1, 127, (n_rows, n)).astype(np.int8)


@settings(max_examples=150, deadline=None)
@given(values=st.lists(st.one_of(SPECIAL_FLOAT64, st.floats(allow_nan=False, width=64)), max_size=200),
       n_rows=st.integers(0, 7), seed=st.integers(0, 2**16))
def test_float64_any_values(values, n_rows, seed):
    scores = np.array(values, np.float64)
    _check(scores, *_payload(len(scores), n_rows, seed))


@settings(max_examples=100, deadline=None)
@given(values=st.lists(st.floats(allow_nan=False, width=32), max_size=200), seed=st.integers(0, 2**16))
def test_float32(values, seed):
    scores = np.array(values, np.float32)
    _check(scores, *_payload(len(scores), 3, seed))


@settings(max_examples=100, deadline=None)
@given(low=hnp.arrays(np.uint32, st.integers(1, 300), elements=st.integers(0, 64)), negative=st.booleans(),
       seed=st.integers(0, 2**16))
def test_float64_differing_only_in_low_32_bits(low, negative, seed):
    high = np.uint64(np.array(-0.75 if negative else 0.75).view(np.uint64)) & np.uint64(0xFFFFFFFF00000000)
    scores = (high | low.astype(np.uint64)).view(np.float64)
    _check(scores, *_payload(len(scores), 2, seed))


@pytest.mark.parametrize("scores", [
    np.full(1000, 0.25), np.zeros(1000), np.full(1000, -0.0), np.where(np.arange(1000) % 2, 0.0, -0.0),
    np.linspace(-3, 3, 5000), np.random.default_rng(0).standard_normal(70_000),
    np.random.default_rng(1).random(70_000).astype(np.float32), np.array([], np.float64),
], ids=["all-tied", "zeros", "negative-zeros", "signed-zeros", "negative-linspace", "normal", "float32", "empty"])
def test_fixed_cases(scores):
    _check(scores, *_payload(len(scores), 3, 0))


@settings(max_examples=100, deadline=None)
@given(values=st.lists(st.one_of(SPECIAL_FLOAT64, st.floats(allow_nan=False, width=64), st.sampled_from([0.25, -0.25])),
                       max_size=300),
       n_threads=st.integers(2, 5), seed=st.integers(0, 2**16))
def test_threads_share_each_step(values, n_threads, seed):
    # pieces of 8 samples: every step (key range, histogram, scatter, buckets, outputs) split among threads
    scores = np.array(values, np.float64)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(sorting, "PIECE", 8)
        _check(scores, *_payload(len(scores), 3, seed), n_threads)


@pytest.mark.parametrize("n_threads", [2, 3])
def test_threads_on_large_inputs(n_threads):
    rng = np.random.default_rng(n_threads)
    n = sorting.PIECE * n_threads + 12345
    scores = np.concatenate([rng.random(n // 2), np.round(rng.standard_normal(n - n // 2), 3)])
    scores[::97] = -0.0
    _check(scores, *_payload(n, 3, n_threads), n_threads)
    _check(scores.astype(np.float32), *_payload(n, 2, n_threads), n_threads)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_engine_arrange_carries_like_argsort(dtype):
    rng = np.random.default_rng(4)
    n = _engine.RADIX_FROM * 2
    scores = np.round(rng.standard_normal(n), 2).astype(dtype)  # negatives and heavy ties
    labels = rng.integers(0, 2, n).astype(np.uint8)
    rows = [rng.integers(-1, 5, n), rng.integers(0, 3, n)]
    arranged = _engine.arrange(scores, labels, rows, [5, 3])
    expected = np.argsort(scores, kind="stable")
    np.testing.assert_array_equal(arranged.scores, scores[expected])
    np.testing.assert_array_equal(arranged.labels, labels[expected])
    for k, row in enumerate(rows):
        np.testing.assert_array_equal(arranged.codes[k], row[expected])


@settings(max_examples=25, deadline=None)
@given(kind=st.sampled_from(["uniform", "clustered", "low-bits", "normal", "ties"]), n=st.integers(2_000, 40_000),
       n_rows=st.sampled_from([1, 3, 4, 7]), seed=st.integers(0, 2**16))
def test_large_buckets(kind, n, n_rows, seed):
    """Inputs whose first-level buckets hold thousands of keys: the second level's width grows with
    the bucket, then runs go to insertion or LSD sorts; 32- and 64-bit payloads."""
    rng = np.random.default_rng(seed)
    scores = {"uniform": lambda: rng.random(n),
              "clustered": lambda: rng.choice([0.1, 0.5, 0.9], n) + rng.random(n) * 1e-9,
              "low-bits": lambda: (np.uint64(np.array(0.75).view(np.uint64))
                                   + rng.integers(0, 1 << 20, n).astype(np.uint64)).view(np.float64),
              "normal": lambda: rng.standard_normal(n) * 4,
              "ties": lambda: np.round(rng.random(n), 3)}[kind]()
    _check(scores, *_payload(n, n_rows, seed))
    _check(scores.astype(np.float32), *_payload(n, n_rows, seed + 1))


def test_words_when_they_fit_else_key_and_payload(monkeypatch):
    # probabilities with 3 small groupings travel as one word; 7 groupings of 127 groups do not fit
    calls = []
    real = sorting._sort_words
    monkeypatch.setattr(sorting, "_sort_words", lambda *a: calls.append(real(*a)) or calls[-1])
    rng = np.random.default_rng(3)
    scores = rng.random(5000)
    _check(scores, rng.integers(0, 2, 5000).astype(np.uint8), rng.integers(-1, 5, (3, 5000)).astype(np.int8))
    assert calls[-1] is not None
    _check(scores, *_payload(5000, 7, 3))
    assert calls[-1] is None


@settings(max_examples=60, deadline=None)
@given(n=st.integers(0, 9_000), widths=st.lists(st.integers(1, 7), min_size=0, max_size=7),
       span=st.tuples(st.integers(0, 9_000), st.integers(0, 9_000)), seed=st.integers(0, 2**16))
def test_pack_payload_matches_shifts(n, widths, span, seed):
    """Each sample's payload is its label at bit 0 and code + 1 (0 for a missing -1) at each row's bit,
    across block boundaries and in every payload width; samples outside start:stop are untouched."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 2, n).astype(np.uint8)
    codes = np.array([rng.integers(-1, (1 << w) - 1, n) for w in widths], np.int8).reshape(len(widths), n)
    shifts = np.cumsum([1, *widths])[:-1].astype(np.uint64)
    start, stop = sorted(min(x, n) for x in span)
    for dtype in (np.uint16, np.uint32, np.uint64):
        if sum(widths) + 1 > 8 * np.dtype(dtype).itemsize:
            continue
        expected = labels.astype(np.uint64)
        for row, at in zip(codes, shifts):
            expected |= (row.astype(np.int64) + 1).astype(np.uint64) << at
        pays = np.full(n, 7, dtype)
        sorting.pack_payload(labels, codes, shifts, start, stop, pays)
        np.testing.assert_array_equal(pays[start:stop], expected[start:stop].astype(dtype))
        assert (pays[:start] == 7).all() and (pays[stop:] == 7).all()


def test_sort_carrying_takes_the_rows_of_one_array_as_they_are():
    # rows of one (K, n) int8 array, in order (the accumulator's report), are sorted without a copy; rows in
    # another order, or of several arrays, are copied first: the same sorted codes either way
    rng = np.random.default_rng(4)
    n = engine_sorting.RADIX_FROM + 5
    codes = rng.integers(-1, 5, (2, n)).astype(np.int8)
    assert engine_sorting._stacked(list(codes), codes.shape) is codes
    assert engine_sorting._stacked(list(codes[::-1]), codes.shape) is None
    assert engine_sorting._stacked([codes[0], codes[1].copy()], codes.shape) is None
    scores, labels = rng.random(n).astype(np.float32), rng.integers(0, 2, n).astype(np.uint8)
    order = np.argsort(scores, kind="stable")
    for rows in (list(codes), [codes[1], codes[0]]):
        _, sorted_labels, sorted_codes = engine_sorting.sort_carrying(scores, labels, rows)
        np.testing.assert_array_equal(sorted_labels, labels[order])
        np.testing.assert_array_equal(sorted_codes, np.stack(rows)[:, order])
