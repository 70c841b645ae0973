"""kernels/records.py: samples packed into 64-bit records, grouped by score range, and unpacked, against
NumPy (the Dask backend's sort moves these records between workers)."""
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import SPECIAL_FLOAT64

from fairmedfm_fast.kernels import records


def _bits(values):
    return values.view(np.uint64 if values.dtype.itemsize == 8 else np.uint32)


def _route(scores, labels, codes, sizes, bounds, two_words):
    shifts, pay_bits = [], 1
    for size in sizes:
        shifts.append(pay_bits)
        pay_bits += max(int(size).bit_length(), 1)
    shifts = np.array(shifts, np.uint64)
    n = len(scores)
    first = np.empty(len(bounds) + 2, np.int64)
    words = np.empty(n, np.uint64)
    pays = np.empty(n if two_words else 0, np.uint64 if pay_bits > 32 else np.uint32)
    n_slots = int(sum(size + 1 for size in sizes))
    tally = np.empty((len(bounds) + 1, n_slots, 2), np.int64)
    ends = np.empty((n_slots, 2), np.uint64)
    records.route_records(_bits(scores), labels, codes, shifts, _bits(bounds), pay_bits, np.empty(n, np.int32), first,
                          words, pays, np.array(sizes, np.int64), tally, ends)
    _check_counts(scores, labels, codes, sizes, bounds, tally, ends)
    return words, pays, first, pay_bits, shifts


def _check_counts(scores, labels, codes, sizes, bounds, tally, ends):
    """Per range and slot the samples and positives, per slot the lowest and highest score, by NumPy."""
    ranges = np.searchsorted(bounds, scores, side="right")
    start = 0
    for k, size in enumerate(sizes):
        for slot, members in [(start + g, codes[k] == g) for g in range(size)] + [(start + size, codes[k] >= 0)]:
            for r in range(len(bounds) + 1):
                here = members & (ranges == r)
                assert tally[r, slot, 0] == np.count_nonzero(here & (labels == 0))
                assert tally[r, slot, 1] == np.count_nonzero(here & (labels == 1))
            low, high = records.key_scores(ends[slot], scores.dtype)
            if members.any():
                assert low == scores[members].min() and high == scores[members].max()
                assert not np.signbit(low) or low != 0
            else:
                assert ends[slot, 0] == np.uint64(2**64 - 1) and ends[slot, 1] == 0
        start += size + 1


def _unpack(words, pays, pay_bits, shifts, dtype, n_rows, code_type):
    n = len(words)
    scores, labels, codes = np.empty(n, dtype), np.empty(n, np.uint8), np.empty((n_rows, n), code_type)
    records.unpack_records(words, pays, pay_bits, shifts, _bits(scores), labels, codes)
    return scores, labels, codes


def _check(scores, labels, codes, sizes, bounds, two_words):
    bounds = np.unique(bounds)  # ascending, -0.0 and 0.0 as one
    words, pays, first, pay_bits, shifts = _route(scores, labels, codes, sizes, bounds, two_words)
    # range r holds the samples bounds[r - 1] <= score < bounds[r], in input order
    ranges = np.searchsorted(bounds, scores, side="right")
    order = np.argsort(ranges, kind="stable")
    np.testing.assert_array_equal(first, np.concatenate(([0], np.cumsum(np.bincount(ranges, minlength=len(bounds) + 1)))))
    got = _unpack(words, pays, pay_bits, shifts, scores.dtype, len(codes), codes.dtype)
    np.testing.assert_array_equal(got[0], scores[order])  # -0.0 == 0.0
    assert not np.signbit(got[0][got[0] == 0]).any()
    np.testing.assert_array_equal(got[1], labels[order])
    np.testing.assert_array_equal(got[2], np.maximum(codes[:, order], -1))
    if not two_words:  # sorted words: ascending score, then label, then codes
        words = words.copy()
        words.sort()
        got = _unpack(words, pays, pay_bits, shifts, scores.dtype, len(codes), codes.dtype)
        keys = [labels, *(np.maximum(row, -1) for row in codes), scores + 0.0]  # the last key first
        expected = np.lexsort(keys)
        np.testing.assert_array_equal(got[0], scores[expected])
        np.testing.assert_array_equal(got[1], labels[expected])
        np.testing.assert_array_equal(got[2], np.maximum(codes[:, expected], -1))


def _payload(n, sizes, seed, code_type=np.int8):
    rng = np.random.default_rng(seed)
    codes = np.stack([rng.integers(-2, size, n) for size in sizes]).astype(code_type) if sizes else \
        np.empty((0, n), code_type)
    return rng.integers(0, 2, n).astype(np.uint8), codes


@settings(deadline=None)
@given(values=st.lists(st.floats(0, 1, width=32), max_size=120), cuts=st.lists(st.integers(0, 200), max_size=6),
       sizes=st.lists(st.integers(1, 100), max_size=4), seed=st.integers(0, 2**16))
def test_float32_one_word(values, cuts, sizes, seed):
    scores = np.round(np.array(values, np.float32) * 8) / 8  # many ties
    # bounds on tied values (and beyond them): a tie never straddles two ranges
    bounds = np.array([scores[c % len(scores)] if len(scores) else 0.5 for c in cuts], np.float32)
    _check(scores, *_payload(len(scores), sizes, seed), sizes, bounds, two_words=False)


@settings(deadline=None)
@given(values=st.lists(st.one_of(SPECIAL_FLOAT64, st.floats(allow_nan=False, width=64)), max_size=120),
       cuts=st.lists(st.floats(allow_nan=False), max_size=5),
       sizes=st.lists(st.integers(1, 30_000), max_size=4), seed=st.integers(0, 2**16))
def test_float64_two_words(values, cuts, sizes, seed):
    scores = np.array(values, np.float64)
    bounds = np.array([*cuts, *scores[:2]], np.float64)
    _check(scores, *_payload(len(scores), sizes, seed, np.int32), sizes, bounds, two_words=True)


def test_float32_wide_payload_two_words_and_negative_scores():
    rng = np.random.default_rng(5)
    scores = np.round(rng.normal(0, 3, 5000), 1).astype(np.float32)
    scores[:10] = -0.0
    sizes = [2**20, 2**12, 3]  # 1 + 21 + 13 + 2 bits: a second word
    _check(scores, *_payload(len(scores), sizes, 6, np.int32), sizes, np.array([-1.0, 0.0, 0.0, 2.5], np.float32),
           two_words=True)


@settings(deadline=None, max_examples=60)
@given(values=st.lists(st.one_of(SPECIAL_FLOAT64, st.floats(allow_nan=False, width=64)), min_size=1, max_size=400),
       picks=st.lists(st.integers(0, 10_000), min_size=1, max_size=300), seed=st.integers(0, 2**16))
def test_many_bounds_over_wide_and_narrow_key_spans(values, picks, seed):
    # Up to 300 bounds, many of them equal to scores (a key exactly on a bound), over spans from a few
    # keys to every float (the directory's buckets from one key to 2**52): the range of each sample
    # is np.searchsorted's.
    scores = np.array(values, np.float64)
    bounds = scores[[p % len(scores) for p in picks]]
    labels, codes = _payload(len(scores), [3], seed, np.int32)
    _check(scores, labels, codes, [3], bounds, two_words=True)
    narrow = (0.5 + np.arange(len(scores)) % 7 * np.float32(2**-24)).astype(np.float32)  # 7 adjacent keys
    _check(narrow, labels, codes.astype(np.int8), [3], narrow[[p % len(narrow) for p in picks]], two_words=False)
