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


def _keyed(rng, n, n_cells, widths):
    """Keys ``cell * 2 + label`` over ``n_cells`` cells, and each cell's codes: row k in [-1, 2**w - 2]."""
    cell_codes = np.array([rng.integers(-1, (1 << w) - 1, n_cells) for w in widths], np.int8).reshape(
        len(widths), n_cells)
    keys = (rng.integers(0, n_cells, n) * 2 + rng.integers(0, 2, n)).astype(np.uint32)
    return keys, cell_codes


@settings(max_examples=80, deadline=None)
@given(n=st.integers(0, 3000), n_cells=st.integers(1, 40), widths=st.lists(st.integers(0, 7), max_size=7),
       float64=st.booleans(), ties=st.booleans(), n_threads=st.sampled_from([1, 2]), seed=st.integers(0, 2**16))
def test_sort_keyed_is_sort_carrying_of_the_split_keys(n, n_cells, widths, float64, ties, n_threads, seed):
    """Looking each sample's codes up by its cell sorts as splitting the keys into labels and code rows
    first; probabilities in float32 with codes of up to 20 bits always travel as words."""
    rng = np.random.default_rng(seed)
    keys, cell_codes = _keyed(rng, n, n_cells, widths)
    scores = rng.random(n)
    if ties:
        scores = np.round(scores, 2)
    scores = scores.astype(np.float64 if float64 else np.float32)
    labels, codes = (keys & 1).astype(np.uint8), cell_codes[:, keys >> 1]
    want = sorting.sort_carrying(_bits(scores), labels, codes, n_threads)
    got = sorting.sort_keyed(_bits(scores), keys, cell_codes, n_threads)
    if not float64 and sum(widths) <= 20:
        assert got is not None
    if got is None:
        return
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a, b)
    memory = np.full(sorting.MEMORY_BYTES * n + 3, 0xA5, np.uint8)  # old bytes: the outputs there, equal
    for a, b in zip(sorting.sort_keyed(_bits(scores), keys, cell_codes, n_threads, memory), want):
        np.testing.assert_array_equal(a, b)


@settings(max_examples=40, deadline=None)
@given(n=st.integers(0, 2000), n_cells=st.integers(1, 300), span=st.tuples(st.integers(0, 2000), st.integers(0, 2000)),
       dtype=st.sampled_from([np.uint16, np.uint32, np.uint64]), seed=st.integers(0, 2**16))
def test_pack_keyed_looks_each_payload_up_by_its_cell(n, n_cells, span, dtype, seed):
    rng = np.random.default_rng(seed)
    top = np.iinfo(dtype).max // 2
    cell_pays = (rng.integers(0, min(top, 2**62), n_cells, dtype=np.uint64) * 2).astype(dtype)  # bit 0 free
    keys = (rng.integers(0, n_cells, n) * 2 + rng.integers(0, 2, n)).astype(np.uint32)
    start, stop = sorted(min(x, n) for x in span)
    pays = np.full(n, 7, dtype)
    sorting.pack_keyed(keys, cell_pays, start, stop, pays)
    expected = [int(cell_pays[int(key) >> 1]) | (int(key) & 1) for key in keys[start:stop]]  # one by one
    assert pays[start:stop].tolist() == expected
    assert (pays[:start] == 7).all() and (pays[stop:] == 7).all()


def test_keyed_and_measured_is_arrange_and_measure_of_the_split_keys():
    """The engine's keyed entry: the same arranged samples and metrics as splitting the keys first;
    it declines (None) where its sort does not apply, and the caller splits."""
    rng = np.random.default_rng(5)
    n = engine_sorting.RADIX_FROM + 77
    keys, cell_codes = _keyed(rng, n, 12, [1, 2, 3])
    cell_codes = np.abs(cell_codes)  # no missing codes: every grouping's "all" slot is every sample
    sizes = [int(row.max()) + 1 for row in cell_codes]
    scores = rng.random(n).astype(np.float32)
    labels, rows = (keys & 1).astype(np.uint8), list(cell_codes[:, keys >> 1])
    for wanted, threshold in ((None, None), ({"auc", "ece"}, 0.3)):
        got = _engine.keyed_and_measured(scores, keys, cell_codes, sizes, wanted, threshold, curves=True)
        want = _engine.arrange_and_measure(scores, labels, rows, sizes, None, wanted, threshold, curves=True)
        assert got is not None and got[0].is_sorted
        for field in ("scores", "labels", "codes", "sizes"):
            np.testing.assert_array_equal(getattr(got[0], field), getattr(want[0], field))
        for a, b in zip(got[1], want[1]):
            np.testing.assert_array_equal(a.count, b.count)
            assert a.threshold == b.threshold or np.isnan(a.threshold) and np.isnan(b.threshold)
            assert a.values.keys() == b.values.keys()
            for key in a.values:
                np.testing.assert_array_equal(a.values[key], b.values[key])
    missing = cell_codes.copy()
    missing[0, 3] = -1
    assert _engine.keyed_and_measured(scores, keys, missing, sizes) is None
    assert _engine.keyed_and_measured(scores[:100], keys[:100], cell_codes, sizes) is None  # small: NumPy's sort
    assert _engine.keyed_and_measured(scores, keys, np.tile(cell_codes, (3, 1)), sizes * 3) is None  # 9 rows
    assert _engine.keyed_and_measured(scores, keys, cell_codes, sizes, {"bce", "acc"}) is None  # no sort
    assert _engine.keyed_and_measured(scores, keys, cell_codes, [200, 2, 3]) is None  # int16 codes
