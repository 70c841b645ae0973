"""kernels/coding.py against np.bincount, and the categorical and Arrow-dictionary coding of large
columns that uses it."""
import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from fairmedfm_fast._inputs import groups as _groups
from fairmedfm_fast._inputs import value_codes as _codes
from fairmedfm_fast.kernels import coding


@settings(max_examples=60, deadline=None)
@given(n_codes=st.integers(1, 40), data=st.data())
def test_code_counts(n_codes, data):
    dtype = data.draw(st.sampled_from([np.int8, np.int16, np.intp]))
    codes = data.draw(hnp.arrays(dtype, st.integers(0, 300), elements=st.integers(-1, n_codes - 1)))
    np.testing.assert_array_equal(coding.code_counts(codes, n_codes),
                                  np.bincount(codes[codes >= 0].astype(np.intp), minlength=n_codes))


def test_large_categorical_and_dictionary_columns():
    # from 65,536 values the presence of each category is counted by the kernel: unused categories
    # are dropped and missing values stay -1
    rng = np.random.default_rng(0)
    n = 70_000
    codes = rng.integers(-1, 4, n)  # category "d" (code 4) is never used
    categorical = pd.Series(pd.Categorical.from_codes(codes, categories=["a", "b", "c", "x", "d"]))
    got, names = _codes.encode_values(categorical)
    assert names == ["a", "b", "c", "x"]
    np.testing.assert_array_equal(got, codes)
    dictionary = pa.DictionaryArray.from_arrays(pa.array(np.where(codes < 0, None, codes).tolist(), pa.int32()),
                                                pa.array(["x", "b", "a", "c", "d"]))
    got, names = _codes.encode_values(pd.Series(pd.arrays.ArrowExtensionArray(dictionary)))
    assert names == ["a", "b", "c", "x"]
    expected = np.array([3, 1, 0, 2, -1])[codes]  # x b a c -> report order a b c x; -1 stays -1
    np.testing.assert_array_equal(got, expected)


def _buffers(array):
    _, offsets, data = array.buffers()
    offsets = np.frombuffer(offsets, np.int64 if pa.types.is_large_string(array.type) else np.int32)
    data = np.frombuffer(data, np.uint8) if data is not None else np.empty(0, np.uint8)
    return offsets[array.offset:array.offset + len(array) + 1], data


def _coded(kernel, *arguments, dtype=np.int32):
    """(codes, firsts) of a coding kernel that writes its codes into an array of ``dtype``."""
    codes = np.full(len(arguments[0]) - (kernel is coding.text_codes), 99, dtype)
    return codes, kernel(*arguments, codes)


def _most(capacity: int, dtype) -> int:
    """The distinct values a kernel's table of ``capacity`` slots codes into ``dtype`` codes."""
    return min(capacity // 2, 127) if np.dtype(dtype).itemsize == 1 else capacity // 2


texts = st.one_of(st.sampled_from(["", "a", "b", "ab", "ba", "12345678", "123456789", "123456780", "F", "M",
                                   "éà", "\x00", "\x00\x00", "x" * 30, "x" * 29 + "y"]), st.text(max_size=12))


@settings(max_examples=80, deadline=None)
@given(values=st.lists(texts, max_size=120), large=st.booleans(), skip=st.integers(0, 3),
       capacity=st.sampled_from([4, 64, 256]), dtype=st.sampled_from([np.int8, np.int32]))
def test_text_codes_against_factorize(values, large, skip, capacity, dtype):
    # strings of up to 8 bytes are compared as packed words, longer ones byte by byte; a sliced array
    # starts at an offset into its buffers; int8 codes hold 127 strings at most
    array = pa.array(["pad"] * skip + values, pa.large_string() if large else pa.string()).slice(skip)
    codes, firsts = _coded(coding.text_codes, *_buffers(array), capacity, dtype=dtype)
    expected, uniques = pd.factorize(np.array(values, dtype=object))
    if len(uniques) > _most(capacity, dtype):
        assert len(firsts) == 0
        return
    np.testing.assert_array_equal(codes, expected)
    assert array.take(pa.array(firsts, pa.int64())).to_pylist() == list(uniques)


short_texts = st.sampled_from(["", "a", "b", "ab", "ba", "F", "M", "g0", "abc", "\x00", "é"])  # at most 3 bytes


@settings(max_examples=60, deadline=None)
@given(head=st.lists(short_texts, min_size=64, max_size=90), tail=st.lists(texts, max_size=60),
       large=st.booleans())
def test_text_codes_of_a_column_that_starts_with_short_strings(head, tail, large):
    # short strings (empty, one NUL, non-ASCII) first, longer ones later: every string's word comes
    # from the same loads, and each distinct string still gets one code
    values = head + tail
    array = pa.array(values, pa.large_string() if large else pa.string())
    codes, firsts = _coded(coding.text_codes, *_buffers(array), 1024)
    expected, uniques = pd.factorize(np.array(values, dtype=object))
    np.testing.assert_array_equal(codes, expected)
    assert array.take(pa.array(firsts, pa.int64())).to_pylist() == list(uniques)


def test_large_arrow_string_column():
    rng = np.random.default_rng(1)
    names = np.array(["white", "black", "asian", "a much longer group name", "other"], dtype=object)
    values = names[rng.integers(0, 5, 70_000)]
    series = pd.Series(pd.arrays.ArrowExtensionArray(pa.chunked_array([values[:30_000], values[30_000:]])))
    got, groups = _codes.encode_values(series)
    expected, expected_groups = _codes.encode_values(values)  # an object array: pandas.factorize
    assert groups == expected_groups
    np.testing.assert_array_equal(got, expected)


def test_small_arrow_string_columns():
    # small Arrow string columns take the same kernel (pandas.factorize costs ten times the work); the
    # names come from the strings' bytes: non-ASCII, empty, long, sliced and chunked arrays
    values = np.array(["é", "b", "", "a much longer group name", "b", "é", "10", "9"], dtype=object)
    expected, expected_groups = _codes.encode_values(values)  # an object array: pandas.factorize
    for array in (pa.array(values), pa.array(values, pa.string()), pa.chunked_array([values[:3], values[3:]]),
                  pa.array(["pad", *values], pa.large_string()).slice(1)):
        got, groups = _codes.encode_values(pd.Series(pd.arrays.ArrowExtensionArray(array)))
        assert groups == expected_groups == ["9", "10", "", "a much longer group name", "b", "é"]
        np.testing.assert_array_equal(got, expected)
    got, groups = _codes.encode_values(pd.Series(values, dtype="str"))  # pandas' own text dtype
    assert groups == expected_groups
    np.testing.assert_array_equal(got, expected)
    with_missing = pd.Series(pd.arrays.ArrowExtensionArray(pa.array(["b", None, "a"])))  # pandas.factorize
    got, groups = _codes.encode_values(with_missing)
    assert groups == ["a", "b"]
    np.testing.assert_array_equal(got, [1, -1, 0])


def test_categories_present_only_after_the_head_or_never():
    # categories are found in the column's head first; one met only at the end is still named, one
    # never met is not
    n = 100_000
    values = np.array(["b", "a"] * (n // 2), dtype=object)
    values[-1] = "late"
    column = pd.Series(pd.Categorical(values, categories=["a", "b", "unused", "late"]))
    codes, groups = _codes.encode_values(column)
    assert groups == ["a", "b", "late"]
    np.testing.assert_array_equal(np.asarray(groups, dtype=object)[codes], values)


@settings(max_examples=60, deadline=None)
@given(widths=st.lists(st.integers(1, 9), min_size=1, max_size=4), data=st.data())
def test_combination_keys_read_back(widths, data):
    # the accumulator's batches and Dask's partitions code intersections with these two: every row's key
    # gives back its codes (-1 missing), and distinct combinations get distinct keys
    n = data.draw(st.integers(1, 50))
    codes = [np.array(data.draw(st.lists(st.integers(-1, w - 1), min_size=n, max_size=n)), np.int8) for w in widths]
    keys = _groups.combination_keys(codes, widths)
    rows = list(zip(*(c.tolist() for c in codes)))
    assert [_groups.key_codes(int(k), widths) for k in keys] == rows
    assert len(set(keys.tolist())) == len(set(rows))
    assert keys.min() >= 0 and keys.max() < np.prod([w + 1 for w in widths])
    assert all(c.dtype == np.int8 for c in codes)  # the inputs are not changed


def _rows(values: np.ndarray) -> np.ndarray:
    """The rows that _inputs.groups hands row_codes for a NumPy text array (read-only)."""
    size = values.dtype.itemsize
    word = np.dtype(np.uint32) if values.dtype.kind == "U" else next(
        np.dtype(w) for w in (np.uint64, np.uint32, np.uint8) if size % np.dtype(w).itemsize == 0)
    rows = np.ascontiguousarray(values).view(word).reshape(len(values), size // word.itemsize)
    rows.flags.writeable = False
    return rows


@settings(max_examples=80, deadline=None)
@given(values=st.lists(texts, min_size=1, max_size=120), as_bytes=st.booleans(), capacity=st.sampled_from([2, 4, 64]),
       dtype=st.sampled_from([np.int8, np.int32]))
def test_row_codes_against_factorize(values, as_bytes, capacity, dtype):
    # NumPy text arrays as rows of code points (U) or of 1-, 4- or 8-byte words (S): short text of
    # small code points is told apart by its folded key alone, other rows word by word
    array = np.array(values)
    if as_bytes:
        array = np.char.encode(array, "utf-8")
    codes, firsts = _coded(coding.row_codes, _rows(array), capacity, dtype=dtype)
    expected, uniques = pd.factorize(array.astype(object))
    if len(uniques) > _most(capacity, dtype):
        assert len(firsts) == 0
        return
    np.testing.assert_array_equal(codes, expected)
    assert array[firsts].tolist() == list(uniques)


@settings(max_examples=60, deadline=None)
@given(data=st.data(), dtype=st.sampled_from([np.uint8, np.uint32, np.uint64]), width=st.integers(1, 12))
def test_row_codes_of_any_words(data, dtype, width):
    # words above the folded key's exact range (2 ** (64 // width)) and rows that fold alike
    high = data.draw(st.sampled_from([1, 3, 255, int(np.iinfo(dtype).max)]))
    distinct = data.draw(hnp.arrays(dtype, (data.draw(st.integers(1, 6)), width), elements=st.integers(0, high)))
    rows = distinct[data.draw(st.lists(st.integers(0, len(distinct) - 1), min_size=1, max_size=80))]
    rows.flags.writeable = False
    codes, firsts = _coded(coding.row_codes, rows, 16)
    keys = [row.tobytes() for row in rows]
    expected, _ = pd.factorize(np.array(keys, dtype=object))
    np.testing.assert_array_equal(codes, expected)
    assert [keys[i] for i in firsts] == list(dict.fromkeys(keys))


latin = st.text(st.characters(max_codepoint=255), max_size=16)  # (NUL, "\xa0", "é", "ÿ" included)


@settings(max_examples=80, deadline=None)
@given(values=st.lists(st.one_of(latin, st.sampled_from(["", "F", "12345678", "123456789", "123456780", "\x00"])),
                       min_size=1, max_size=60),
       repeat=st.integers(1, 90), spoil=st.sampled_from([None, "ş", "中", "x" * 17]), at=st.integers(0, 10**6),
       capacity=st.sampled_from([2, 4, 64, 256]), dtype=st.sampled_from([np.int8, np.int32]))
def test_latin_row_codes_is_row_codes_where_every_code_point_is_below_256(values, repeat, spoil, at, capacity,
                                                                          dtype):
    """``U`` rows of 1 to 16 code points below 256 narrowed to bytes give row_codes' codes and firsts
    (over several blocks of rows: ``repeat``); a code point of 256 or more anywhere (``spoil``), or rows
    wider than 16, give no codes (narrow False); a full table gives no firsts, as row_codes."""
    values = values * repeat
    if spoil is not None:
        values.insert(at % (len(values) + 1), spoil)
    array = np.array(values)
    rows = _rows(array)
    got_codes, (got_firsts, narrow) = _coded(coding.latin_row_codes, rows, capacity, dtype=dtype)
    assert narrow == (spoil is None)
    if not narrow:
        return
    codes, firsts = _coded(coding.row_codes, rows, capacity, dtype=dtype)
    np.testing.assert_array_equal(got_firsts, firsts)
    if len(firsts):
        np.testing.assert_array_equal(got_codes, codes)
        stored = array.tolist()  # (NumPy drops trailing NULs: "\x00" is stored as "")
        expected = list(dict.fromkeys(stored))  # first occurrences, one by one
        assert array[got_firsts].tolist() == expected
        assert [expected[code] for code in got_codes] == stored


def test_latin_rows_read_each_narrowed_row_whole():
    # rows that differ only in their last code point, in their first, or past the eighth; an "ş" (351) in
    # the last block of rows turns the narrowing down, so the coder falls back to row_codes
    values = ["abcdefgh" + tail for tail in ["", "i", "j", "ij", "ji", "ijklmnop"]] + ["bbcdefgh", "abcdefgi"]
    array = np.array(values * 700)
    rows = _rows(array)
    codes, (firsts, narrow) = _coded(coding.latin_row_codes, rows, 64)
    assert narrow and firsts.tolist() == list(range(len(values)))
    np.testing.assert_array_equal(codes, np.tile(np.arange(len(values)), 700))
    mixed = np.append(array, "ş")
    assert not coding.latin_row_codes(_rows(mixed), 64, np.empty(len(mixed), np.int32))[1]
    got, names = _codes.encode_values(mixed)
    assert names == sorted(set(mixed.tolist())) and [names[c] for c in got] == mixed.tolist()


def test_text_arrays_of_every_size_and_many_values(monkeypatch):
    # a table of 4 slots that fills: the coder makes one with room for every value (NumPy and Arrow text)
    monkeypatch.setattr(_codes, "TEXT_TABLE_SLOTS", 4)
    rng = np.random.default_rng(2)
    values = np.array([f"g{i}" for i in range(300)])[rng.integers(0, 300, 5_000)]
    expected = _codes.encode_values(values.astype(object))
    for form in (values, np.char.encode(values, "ascii"), pd.Series(values, dtype="string[pyarrow]")):
        codes, names = _codes.encode_values(form)
        want = [f"b'{name}'" for name in expected[1]] if form.dtype.kind == "S" else expected[1]
        assert sorted(names) == sorted(want)
        if form.dtype.kind != "S":
            assert names == expected[1]
            np.testing.assert_array_equal(codes, expected[0])


@settings(max_examples=40, deadline=None)
@given(n_distinct=st.integers(1, 40), n=st.integers(1, 200), limit=st.sampled_from([2, 5, 8, 32]),
       dtype=st.sampled_from([np.float32, np.float64]), seed=st.integers(0, 2 ** 32 - 1))
def test_more_distinct_than(n_distinct, n, limit, dtype, seed):
    # the accumulator's test of "more distinct scores than 16 bits hold" (limit 65,536 there)
    rng = np.random.default_rng(seed)
    values = rng.random(n_distinct).astype(dtype)[rng.integers(0, n_distinct, n)]
    assert _codes.more_distinct_than(values, limit) == (len(np.unique(values)) > limit)


def test_tables_of_any_size_are_rounded_up():
    # a capacity between powers of two is rounded up (a table of 10 slots would be written past)
    rows = np.arange(40, dtype=np.uint32).reshape(40, 1)
    rows.flags.writeable = False
    codes, firsts = _coded(coding.row_codes, rows[:8], 10)
    np.testing.assert_array_equal(codes, np.arange(8))
    assert len(_coded(coding.row_codes, rows, 10)[1]) == 0  # 40 values: more than 16 // 2
    array = pa.array([str(i) for i in range(8)], pa.large_string())
    codes, firsts = _coded(coding.text_codes, *_buffers(array), 10)
    np.testing.assert_array_equal(codes, np.arange(8))


@settings(max_examples=40, deadline=None)
@given(data=st.data(), code_type=st.sampled_from([np.int8, np.int16, np.int32]), out_type=st.sampled_from([np.int8, np.int16,
                                                                                                 np.int32]))
def test_remap_codes_against_take(data, code_type, out_type):
    # codes in order of first occurrence to report order, into a new array or (same types) in place
    n_codes = data.draw(st.integers(1, 127))
    codes = data.draw(hnp.arrays(code_type, st.integers(0, 200), elements=st.integers(0, n_codes - 1)))
    lookup = data.draw(hnp.arrays(out_type, n_codes, elements=st.integers(-1, 127)))
    want = np.take(lookup, codes)
    out = np.empty(len(codes), out_type)
    coding.remap_codes(codes, lookup, out)
    np.testing.assert_array_equal(out, want)
    if code_type == out_type:
        coding.remap_codes(codes, lookup, codes)
        np.testing.assert_array_equal(codes, want)


@settings(max_examples=30, deadline=None)
@given(data=st.data(), n_jobs=st.integers(1, 4), form=st.sampled_from(["U", "S", "arrow", "polars", "polars category"]))
def test_text_coded_in_pieces(data, n_jobs, form):
    # long columns are coded in pieces on threads: a value met only in a later piece, pieces that meet
    # the values in other orders, and more than 127 values in all (int8 codes in each piece, wider in
    # the whole; or a piece of more than 127: int32 codes) give the codes and names of one table
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_codes, "PIECES_FROM", 16)
        patch.setenv("FAIRMEDFM_FAST_N_JOBS", str(n_jobs))
        _check_pieces(data, form)


def _check_pieces(data, form):
    pool = data.draw(st.lists(st.text(max_size=10), min_size=1, max_size=300, unique=True))
    picks = data.draw(st.lists(st.integers(0, len(pool) - 1), min_size=1, max_size=600))
    # the values, then again in reverse (later pieces meet them in another order), then one never met before
    late = max(pool, key=len) + "\u2603"
    values = np.array([pool[i] for i in picks + picks[::-1]] + [late], dtype=object)
    expected, expected_names = _codes.encode_values(values)  # an object array: pandas' hash table
    if form in ("U", "S"):
        column = values.astype(str)
        if form == "S":
            column = np.char.encode(column, "utf-8")
            expected_names = None
        if any(value.endswith("\x00") for value in values):  # NumPy strips trailing NULs: another column
            return
    elif form == "arrow":
        column = pd.Series(values, dtype="string[pyarrow]")
    else:
        pl = pytest.importorskip("polars")
        column = pl.Series(values.tolist(), dtype=pl.Categorical if form == "polars category" else pl.String)
        column = _codes.column_values(column, "a")
    codes, names = _codes.encode_values(column)
    if expected_names is None:  # S arrays: bytes, named as pandas names them
        assert sorted(names) == sorted(str(value.encode()) for value in set(values))
        np.testing.assert_array_equal(np.asarray(names, dtype=object)[codes],
                                      [str(value.encode()) for value in values])
        return
    assert names == expected_names
    np.testing.assert_array_equal(codes, expected)
    assert codes.dtype == np.dtype(np.int8 if len(names) <= 127 else np.int16)


@settings(max_examples=40, deadline=None)
@given(data=st.data(), n_groupings=st.integers(1, 4), n_cells=st.integers(1, 40))
def test_split_keys_against_numpy(data, n_groupings, n_cells):
    # the accumulator's keys (cell * 2 + label) as labels and each grouping's code of the cell (-1 missing)
    keys = data.draw(hnp.arrays(np.uint32, st.integers(0, 300), elements=st.integers(0, 2 * n_cells - 1)))
    cell_codes = data.draw(hnp.arrays(np.int8, (n_groupings, n_cells), elements=st.integers(-1, 127)))
    labels, codes = np.empty(len(keys), np.uint8), np.empty((n_groupings, len(keys)), np.int8)
    coding.split_keys(keys, cell_codes, labels, codes, 0, len(keys))
    np.testing.assert_array_equal(labels, keys & 1)
    np.testing.assert_array_equal(codes, cell_codes[:, (keys >> 1).astype(np.intp)])


def _table_of(names: list[str], capacity: int):
    """A ``known_text`` table of ``capacity`` slots (a power of two) holding ``names`` (group = position),
    filled by ``add_text``."""
    pool = np.frombuffer("".join(names).encode(), np.uint8).copy()
    slots = (np.full(capacity, -1, np.int32), np.zeros(capacity, np.uint64), np.full(capacity, -1, np.int64),
             np.zeros(capacity, np.int64))
    at = 0
    for group, name in enumerate(names):
        size = len(name.encode())
        coding.add_text(pool, at, size, group, *slots)
        at += size
    return slots, pool


_TABLE_TEXT = st.text(st.sampled_from(["a", "b", " ", "é", "中", "\x00", "x"]), max_size=19)


@settings(max_examples=60, deadline=None)
@given(data=st.data(), names=st.lists(_TABLE_TEXT, min_size=1, max_size=12, unique=True),
       large=st.booleans(), sliced=st.booleans(), stride=st.integers(1, 50))
def test_known_text_finds_each_string_of_its_table_and_stops_at_others(data, names, large, sliced, stride):
    # strings that differ only in trailing spaces or NULs, past the eighth byte, or not at all in their first
    # 8 bytes are told apart; a string outside the table stops the pass there, after the rows before it
    known = names[:data.draw(st.integers(1, len(names)))]
    values = data.draw(st.lists(st.sampled_from(names), max_size=60))
    slots, pool = _table_of(known, 1 << (4 * len(known) - 1).bit_length())  # a power of two, at most half full
    array = pa.array(["pad", *values] if sliced else values, pa.large_string() if large else pa.string())
    if sliced:
        array = array.slice(1)
    offsets, text = _codes.text_buffers(array)
    first = data.draw(st.integers(0, len(values)))
    combined = np.full(len(values), 7, np.int32)
    stop = coding.known_text(offsets, text, first, stride, *slots, pool, combined)
    unknown = [i for i in range(first, len(values)) if values[i] not in known]
    assert stop == (unknown[0] if unknown else len(values))
    expected = np.full(len(values), 7, np.int32)
    for i in range(first, stop):
        expected[i] += stride * known.index(values[i])
    np.testing.assert_array_equal(combined, expected)


@settings(max_examples=40, deadline=None)
@given(data=st.data(), n_combinations=st.integers(1, 30))
def test_cell_keys_against_numpy(data, n_combinations):
    # keys = cell * 2 + label until the first combination without a cell
    cell_of = data.draw(hnp.arrays(np.int32, n_combinations, elements=st.integers(-1, 1000)))
    combined = data.draw(hnp.arrays(np.int32, st.integers(0, 200), elements=st.integers(0, n_combinations - 1)))
    labels = data.draw(hnp.arrays(np.uint8, len(combined), elements=st.integers(0, 1)))
    first = data.draw(st.integers(0, len(combined)))
    keys = np.full(len(combined), 99, np.uint32)
    stop = coding.cell_keys(combined, cell_of, labels, first, keys)
    missing = [i for i in range(first, len(combined)) if cell_of[combined[i]] < 0]
    assert stop == (missing[0] if missing else len(combined))
    expected = np.full(len(combined), 99, np.uint32)
    expected[first:stop] = cell_of[combined[first:stop]].astype(np.uint32) * 2 + labels[first:stop]
    np.testing.assert_array_equal(keys, expected)


def test_split_keys_in_pieces_on_threads(monkeypatch):
    # the report's keys split in pieces on threads equal one pass
    rng = np.random.default_rng(3)
    keys = rng.integers(0, 2 * 12, 5000).astype(np.uint32)
    cell_codes = rng.integers(-1, 5, (2, 12)).astype(np.int8)
    monkeypatch.setattr(_codes, "PIECES_FROM", 64)
    monkeypatch.setattr(_codes, "resolve_n_jobs", lambda: 3)
    labels, codes = np.empty(5000, np.uint8), np.empty((2, 5000), np.int8)
    _codes.split_keys(keys, cell_codes, labels, codes)
    np.testing.assert_array_equal(labels, keys & 1)
    np.testing.assert_array_equal(codes, cell_codes[:, (keys >> 1).astype(np.intp)])
