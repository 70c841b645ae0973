"""One column's values as integer group codes in report order: the coders of
:mod:`fairmedfm_fast._inputs.groups`, one per kind of column.

Text is coded from its buffers by ``kernels.coding`` (NumPy ``U`` and ``S`` arrays as fixed-width rows,
Arrow strings and string views, polars' physical category codes), str objects by pandas' string hash
table, integers over a short range by a bincount, categorical columns and Arrow dictionaries by their
own codes, and anything else by ``pandas.factorize``; every coder hands back the names of the groups
in the one report order (:func:`report_order`).
"""
from __future__ import annotations

import datetime
import math
import sys
from functools import lru_cache
from typing import Any

import numpy as np

from .._util.lazy_pandas import is_na, is_pandas, pd
from .._util.threads import on_threads, resolve_n_jobs
from .arrays import is_arrow, is_polars, to_numpy

#: Columns shorter than this count their codes with ``np.bincount``; longer ones with a kernel.
TABLE_CODES_BELOW = 1 << 16


def group_name(value: Any) -> str | None:
    """Name of a group value: None when missing; whole floats without ".0"."""
    if value is None or (isinstance(value, float) and math.isnan(value)) or is_na(value):
        return None
    if isinstance(value, (float, np.floating)) and float(value).is_integer():
        return str(int(value))
    return str(value)


def order_key(name: str):
    try:
        return (0, float(name), "")
    except ValueError:
        return (1, 0.0, name)


def report_order(present, *, bin_labels=None, categories=None, has_missing: bool = False) -> list[str]:
    """The group names ``present`` in report order: the one rule of every backend (in memory, the
    accumulator, Dask). Bins in the order of their intervals; a categorical column's groups in the order
    of its ``categories`` (first occurrence; names not among them after, as given), unless a value is
    missing: fairmedfm 0.4.2 then names the groups through ``Series.map``, which drops the categorical
    dtype, so they are sorted like any other names; else numbers first, by value, then text."""
    if bin_labels is not None:
        wanted = set(present)
        return [label for label in bin_labels if label in wanted]
    if categories is not None and not has_missing:
        wanted = set(present)
        ordered = list(dict.fromkeys(label for label in categories if label in wanted))
        placed = set(ordered)
        return ordered + [name for name in present if name not in placed]
    return sorted(dict.fromkeys(present), key=order_key)


#: :func:`order_key` of group names (text), remembered: a name that is not a number costs an exception.
_name_order = lru_cache(maxsize=4096)(order_key)


Column = "pd.Series | np.ndarray"


def column_values(values: Any, name: str) -> Column:
    """One attribute's values: a pandas Series (pandas, pyarrow or polars input, whose dtype says
    how to code it) or a 1-D NumPy array (anything else), without a Python object per sample.

    Strings that pandas cannot hold as they are (Arrow string views) or that NumPy converts slowly (a
    list of str) come as a categorical Series of their distinct values in report order
    (:func:`coded_text`), which codes, names and cuts into bins as the strings would."""
    if is_pandas(values, "Series"):
        return values.reset_index(drop=True)
    text, values = read_column(values)
    if text is not None:
        return pd.Series(coded_text(*text), name=name, copy=False)
    if is_arrow(values):
        return pd.Series(pd.arrays.ArrowExtensionArray(values), name=name, copy=False)
    array = to_numpy(values, name)
    if array.ndim != 1:
        array = array.reshape(len(array), -1)
        if array.shape[1] != 1:
            raise ValueError(f"{name} must hold one value per sample, got shape {array.shape}")
        array = array[:, 0]
    return array


def read_column(values: Any) -> tuple[tuple[np.ndarray, list[str]] | None, Any]:
    """Codes in report order and the group names of text that is coded as it is read (a list of str,
    a polars Categorical, Arrow string views: see :func:`column_values`), else None; and the values,
    as a pyarrow array (one chunk) where they were polars or pyarrow."""
    if type(values) is list:
        return list_codes(values), values
    if is_polars(values):
        text = _polars_category_codes(values)
        if text is not None:
            return text, values
        values = _polars_arrow(values)
    if is_arrow(values):
        import pyarrow as pa

        if isinstance(values, pa.ChunkedArray):
            values = values.combine_chunks() if values.num_chunks != 1 else values.chunk(0)
        if pa.types.is_string_view(values.type):
            text = _view_codes(values)
            if text is not None:
                return text, values
            values = values.cast(pa.large_string())
    return None, values


def _polars_arrow(values: Any) -> Any:
    """A polars Series as Arrow: its strings as the string views polars holds (no copy; pandas cannot
    hold them: :func:`column_values` codes them), anything else as ``to_arrow()`` gives it."""
    if str(values.dtype) in ("String", "Utf8"):
        try:
            import polars

            return values.to_arrow(compat_level=polars.CompatLevel.newest())
        except (AttributeError, TypeError):  # a polars without compatibility levels (before 1.0)
            pass
    return values.to_arrow()


def _polars_category_codes(values: Any) -> tuple[np.ndarray, list[str]] | None:
    """Codes in report order and the group names of a polars Categorical or Enum Series without
    nulls, from its physical codes (no copy) by ``kernels.coding.row_codes``, its categories named by
    their first samples (as ``to_arrow``'s dictionary, whose entries are sorted all the same, would
    name them, at a third of the time); None for any other Series, or where polars lacks these."""
    if str(values.dtype).split("(")[0] not in ("Categorical", "Enum") or not len(values):
        return None
    try:
        if values.null_count():
            return None
        physical = values.to_physical().to_numpy()
        if physical.dtype.kind != "u" or physical.ndim != 1:
            return None
        rows = np.ascontiguousarray(physical).reshape(len(physical), 1)
        rows = rows.view(np.uint32) if rows.dtype.itemsize == 4 else rows.astype(np.uint32)
        rows.flags.writeable = False  # the signature of text rows

        def names_at(firsts: list[int]) -> list:
            return values.gather(firsts).cast(str).to_list()

        coded = _kernel_codes(len(rows), _rows_coder(rows), names_at)
    except (AttributeError, TypeError, ValueError):  # a polars of other names or types
        return None
    if any(not isinstance(name, str) for name in coded[1]):
        return None
    return coded


def _view_codes(array: Any) -> tuple[np.ndarray, list[str]] | None:
    """Codes in report order and the group names of an Arrow string_view array, from its 16-byte
    views by ``kernels.coding.row_codes``: when it has no null and every string is at most 12 bytes
    long, the view holds the length and the bytes (padded with zeros: were they not, two views of one
    string would name one group twice, which :func:`_kernel_codes` merges); else None."""
    n = len(array)
    if not n or array.null_count:
        return None
    buffers = array.buffers()
    buffer = buffers[1]
    if any(data is not None and data.size for data in buffers[2:]):  # a string past 12 bytes, here or not
        lengths = np.frombuffer(buffer, np.uint32)[4 * array.offset:4 * (array.offset + n):4]  # little-endian
        if int(lengths.max()) > 12:
            return None
    views = np.frombuffer(buffer, np.uint64).reshape(-1, 2)[array.offset:array.offset + n]
    views.flags.writeable = False  # (Arrow's buffers read as writable): the signature of bytes rows

    def names_at(firsts: list[int]) -> list[str]:
        return [array[i].as_py() for i in firsts]  # (pyarrow has no take of views)

    return _kernel_codes(n, _rows_coder(views), names_at)


def list_codes(values: list) -> tuple[np.ndarray, list[str]] | None:
    """Codes in report order and the group names of a list of str, by pandas' string hash table
    (:func:`_string_codes`); None for a list that NumPy reads otherwise than as these strings (what
    ``to_numpy`` gives, and fairmedfm 0.4.2 reads): values other than str (NumPy makes text of
    numbers; None is missing), or a string that ends in NUL (NumPy strips trailing NULs)."""
    if not values or not isinstance(values[0], str):
        return None
    array = np.fromiter(values, object, len(values))  # faster than np.array(values, dtype=object)
    coded = _string_codes(array)
    if coded is None or any(value.endswith("\x00") for value in coded[1]):
        return None
    codes, ordered = _in_report_order(*coded, None)
    return narrowest(codes, len(ordered)), ordered


def coded_text(codes: np.ndarray, ordered: list[str]) -> pd.Categorical:
    """A categorical of codes into the group names ``ordered`` (distinct, in report order): what
    encode_values makes of the same strings."""
    try:  # the codes are valid by construction: no pass to check them (pandas 2.1 on)
        return pd.Categorical.from_codes(codes, categories=ordered, validate=False)
    except TypeError:
        return pd.Categorical.from_codes(codes, categories=ordered)


def _string_codes(array: np.ndarray) -> tuple[np.ndarray, list[str]] | None:
    """``pandas.factorize`` of an object array whose values are all str, by the string hash table that
    it uses for them, without its check that they are (a pass over the objects): the table gives
    code -1 to any value that is not a str, and then None is returned; None too where pandas has no
    such table."""
    try:
        from pandas._libs.hashtable import StringHashTable

        uniques, codes = StringHashTable(1024).factorize(array, na_sentinel=-1, ignore_na=True)
    except (ImportError, AttributeError, TypeError):
        return None
    if len(codes) and codes.min() < 0:
        return None
    return codes, uniques.tolist()



def is_arrow_text(array: Any) -> bool:
    """Whether ``array`` is a pyarrow (chunked) array of strings."""
    return array is not None and array.type.id in (_TEXT_OFFSETS or _text_offsets())



def is_numeric(values: Column) -> bool:
    dtype = values.dtype
    if isinstance(dtype, np.dtype):  # what pandas' is_numeric_dtype and not is_bool_dtype say of it
        return dtype.kind in "iufc"
    if isinstance(dtype, (pd.StringDtype, pd.CategoricalDtype)):  # never numbers (and cheaper to tell)
        return False
    return pd.api.types.is_numeric_dtype(dtype) and not pd.api.types.is_bool_dtype(dtype)


def _is_arrow_dictionary(values: Column) -> bool:
    dtype = getattr(values, "dtype", None)
    pyarrow_type = getattr(dtype, "pyarrow_dtype", None)
    if pyarrow_type is None:
        return False
    import pyarrow as pa

    return pa.types.is_dictionary(pyarrow_type)


def _small_range(low: int, high: int, n: int) -> bool:
    return high - low <= max(1 << 16, 2 * n)


#: Slots of the hash table that codes text (NumPy, Arrow) at first, into int8 codes; when more than
#: 127 values (or half the slots) fill it, the column is coded again into int32 codes by a table with
#: room for every value.
TEXT_TABLE_SLOTS = 256
#: Text columns of this many values and more are coded in pieces side by side on threads.
PIECES_FROM = 1 << 18


def _text_array_codes(array: np.ndarray) -> tuple[np.ndarray, list]:
    """Codes in report order and the group names of a NumPy text array, by
    ``kernels.coding.row_codes`` on its buffer: each value is a fixed-width row of code points
    (``U``) or bytes (``S``), padded with zeros, so equal values are equal rows (NumPy strips
    trailing NULs from both) and no Python object is made but for the distinct values (``str`` of a
    ``U`` array; of an ``S`` array, ``bytes`` named as pandas names them: "b'F'")."""
    array = np.ascontiguousarray(array)
    n, size = len(array), array.dtype.itemsize
    if size == 0:  # U0 / S0: every value is empty
        return np.zeros(n, np.int8), [group_name(value) for value in array[:1].tolist()]
    # code points as they are (short text of small code points then folds into one exact key); bytes
    # in the widest words that tile the value
    word = np.dtype(np.uint32) if array.dtype.kind == "U" else next(
        np.dtype(word) for word in (np.uint64, np.uint32, np.uint8) if size % np.dtype(word).itemsize == 0)
    rows = array.view(word).reshape(n, size // word.itemsize)
    rows.flags.writeable = False  # one signature, whether the user's array is read-only or not

    if array.dtype.kind == "U":
        def names_at(firsts: list[int]) -> list:
            return array[firsts].tolist()  # str, named as they are
    else:
        def names_at(firsts: list[int]) -> list:
            return [group_name(value) for value in array[firsts].tolist()]

    return _kernel_codes(n, _rows_coder(rows, array.dtype.kind == "U"), names_at)


#: ``U`` values of this many code points (at most 16) are coded by ``kernels.coding.latin_row_codes``
#: first (1M values, one thread: 3.7 -> 2.6 ms for ``U8``, 2.9 -> 2.2 ms for ``U5``; ``U1`` took 1.1 ms
#: by ``row_codes``, 2.0 ms narrowed).
LATIN_WIDTHS = range(3, 17)


def _rows_coder(rows: np.ndarray, code_points: bool = False):
    """:func:`_kernel_codes`' coder of a piece of ``rows`` (read-only) by ``kernels.coding.row_codes``;
    rows of ``code_points`` (a ``U`` array) of :data:`LATIN_WIDTHS` are narrowed to bytes first, where
    every code point is below 256 (``latin_row_codes``; the bytes are read as little-endian words)."""
    coding = _kernels()
    if code_points and rows.shape[1] in LATIN_WIDTHS and sys.byteorder == "little":
        def code(start: int, stop: int, capacity: int, codes: np.ndarray) -> np.ndarray:
            firsts, narrowed = coding.latin_row_codes(rows[start:stop], capacity, codes)
            return firsts if narrowed else coding.row_codes(rows[start:stop], capacity, codes)
        return code
    return lambda start, stop, capacity, codes: coding.row_codes(rows[start:stop], capacity, codes)


def _kernel_codes(n: int, code_piece, names_at) -> tuple[np.ndarray, list[str]]:
    """Codes in report order (the narrowest type) and the group names of ``n`` text values coded by a
    kernel of ``kernels.coding``: ``code_piece(start, stop, capacity, codes)`` codes values
    ``start:stop`` into ``codes`` (their codes in order of first occurrence) by a table of ``capacity``
    slots and returns the first value of each code (from ``start``), or nothing when the table filled;
    ``names_at(positions)`` names the values at those positions (equal names merge into one group).

    Long columns are coded in pieces on threads, each piece by a table of its own (the kernels
    release the GIL); every piece's codes are then mapped to report order, the position of their
    names among all the pieces' names sorted, by ``kernels.coding.remap_codes`` (in place where the
    types allow)."""
    if n < PIECES_FROM:  # one piece, on this thread
        codes = np.empty(n, np.int8)
        firsts = code_piece(0, n, TEXT_TABLE_SLOTS, codes)
        if n and not len(firsts):  # more values than int8 codes (or the table) hold
            codes = np.empty(n, np.int32)
            firsts = code_piece(0, n, _room_for(n), codes)
        return _report_codes(codes, [(0, n)], names_at(firsts.tolist()), [0])
    parts = _pieces(n)
    for wide in (False, True):  # int8 codes; when they do not hold the values, int32
        codes = np.empty(n, np.int32 if wide else np.int8)
        tasks = [lambda a=a, b=b, wide=wide, codes=codes: code_piece(
                     a, b, _room_for(b - a) if wide else TEXT_TABLE_SLOTS, codes[a:b]) for a, b in parts]
        firsts = on_threads(tasks, len(tasks))
        if all(len(first) or a == b for first, (a, b) in zip(firsts, parts)):
            break
    names: list = []  # the pieces' names one after the other (a name met by several pieces repeats)
    starts = []
    for first, (a, _) in zip(firsts, parts):
        starts.append(len(names))
        names.extend(names_at((first + a).tolist()))
    return _report_codes(codes, parts, names, starts)


def _pieces(n: int) -> list[tuple[int, int]]:
    """``n`` values as pieces of at least ``PIECES_FROM // 2``, one per thread at most: (start, stop) each."""
    n_pieces = max(1, min(resolve_n_jobs(), n // (PIECES_FROM // 2)))
    bounds = [n * j // n_pieces for j in range(n_pieces + 1)]
    return list(zip(bounds[:-1], bounds[1:]))


def _report_codes(codes: np.ndarray, parts: list[tuple[int, int]], names: list, starts: list[int]
                  ) -> tuple[np.ndarray, list[str]]:
    """:func:`_kernel_codes`' codes of the pieces ``parts`` (each into the names ``names[starts[j]:]``)
    as codes in report order, and the group names."""
    if len(names) <= _REMEMBERED_NAMES:  # the same names again (batches, repeated calls)
        ordered, lookup = _sorted_lookup(tuple(names))
        ordered = list(ordered)
    else:
        ordered = _sorted_names(names)
        lookup = _lookup(names, ordered)
    out_type = _narrowest_type(len(ordered))
    if lookup is None:  # every name at its own position: one piece (or pieces of disjoint names)
        if len(parts) == 1 and codes.dtype == out_type:
            return codes, ordered  # first occurrence is report order already
        lookup = np.arange(len(names), dtype=out_type)
        lookup.flags.writeable = False  # as the remembered lookups: one kernel signature
    out = codes if codes.dtype == out_type else np.empty(len(codes), out_type)
    coding = _kernels()
    for start, (a, b) in zip(starts, parts):  # each piece's codes index its names among all of them
        coding.remap_codes(codes[a:b], lookup[start:], out[a:b])
    return out, ordered


def remapped(codes: np.ndarray, lookup: np.ndarray) -> np.ndarray:
    """``np.take(lookup, codes)`` of non-negative codes: by ``kernels.coding.remap_codes`` on large int16
    or int32 codes into an int32 lookup (np.take first widens the codes to intp: three times as long)."""
    if len(codes) < TABLE_CODES_BELOW or codes.dtype not in (np.int16, np.int32) or lookup.dtype != np.int32:
        return np.take(lookup, codes)
    out = np.empty(len(codes), np.int32)
    _kernels().remap_codes(codes, lookup, out)
    return out


def split_keys(keys: np.ndarray, cell_codes: np.ndarray, labels: np.ndarray, codes: np.ndarray) -> None:
    """``kernels.coding.split_keys``: the accumulator's keys (``cell * 2 + label``, uint32) as labels and
    each grouping's int8 code, ``cell_codes`` (K, cells) giving each cell's; in pieces on threads
    from ``PIECES_FROM`` keys."""
    coding = _kernels()
    parts = _pieces(len(keys)) if len(keys) >= PIECES_FROM else [(0, len(keys))]
    on_threads([lambda a=a, b=b: coding.split_keys(keys, cell_codes, labels, codes, a, b) for a, b in parts],
               len(parts))


def _room_for(n: int) -> int:
    """Slots of a hash table that holds ``n`` distinct values (at most half full): a power of two."""
    return max(TEXT_TABLE_SLOTS, 1 << (2 * n - 1).bit_length())


def more_distinct_than(values: np.ndarray, limit: int) -> bool:
    """Whether float32 or float64 ``values`` (no NaN, no -0.0: equal values have equal bits) hold more
    than ``limit`` distinct values, by ``kernels.coding.more_distinct_than`` on their bits, which stops
    at the first value past them (continuous scores: after about ``limit`` values, a tenth of the time
    of a sort)."""
    return bool(_kernels().more_distinct_than(values.view(np.uint32 if values.dtype.itemsize == 4 else np.uint64),
                                              limit))


def _integer_codes(array: np.ndarray, low: int, high: int, max_distinct: int | None
                   ) -> tuple[np.ndarray, list[str]] | None:
    """Codes and names of integers within +-2**53 over a short range: the distinct values in
    ascending order (which is the report order of their names), by offsets and a bincount."""
    offsets = array.astype(np.intp, copy=False)
    present, codes = _offset_codes(offsets - low if low else offsets, high - low + 1)
    if max_distinct is not None and len(present) > max_distinct:
        return None
    return codes, [str(value + low) for value in present.tolist()]


def _offset_codes(offsets: np.ndarray, span: int) -> tuple[np.ndarray, np.ndarray]:
    """The distinct values of non-negative integer ``offsets`` (ascending) and each offset's rank
    among them, by a bincount; the offsets themselves when every value up to the largest occurs."""
    counts = np.bincount(offsets, minlength=span)
    present = counts.nonzero()[0]  # np.flatnonzero, without its Python wrapping
    if len(present) == len(counts):
        return present, offsets.astype(np.intp, copy=False)
    return present, (np.cumsum(counts > 0) - 1)[offsets]


#: Samples at the head of a column that :func:`_codes_present` reads first.
_HEAD = 1 << 16


def _codes_present(codes: np.ndarray, n_codes: int) -> np.ndarray:
    """Whether each code ``0 .. n_codes - 1`` occurs: from the column's head when every code occurs
    there (the usual case for categories), else from the counts of the whole column."""
    head = codes[:_HEAD]
    present = np.bincount(head[head >= 0], minlength=n_codes) > 0
    if len(codes) <= _HEAD or present.all():
        return present
    return _code_counts(codes, n_codes) > 0


def _code_counts(codes: np.ndarray, n_codes: int) -> np.ndarray:
    """Samples of each code ``0 .. n_codes - 1``: a kernel on large columns (``np.bincount`` widens
    every code to intp and needs the negative ones taken out first)."""
    if len(codes) < TABLE_CODES_BELOW:
        return np.bincount(codes[codes >= 0], minlength=n_codes)
    return _kernels().code_counts(np.ascontiguousarray(codes), n_codes)


def arrow_text(values: Any) -> Any:
    """The pyarrow string array (one chunk) of an Arrow-backed pandas column or Series, or of a pyarrow
    string array, without a missing value; None for anything else."""
    array = getattr(values, "_pa_array", None)  # pandas' Arrow-backed array (a Series' array below)
    if array is None:
        array = getattr(getattr(values, "array", None), "_pa_array", None)
        if array is None:
            if not is_arrow(values) or not hasattr(values, "type"):
                return None
            array = values
    if not is_arrow_text(array) or array.null_count:
        return None
    if getattr(array, "num_chunks", None) is not None:  # a ChunkedArray
        array = array.chunk(0) if array.num_chunks == 1 else array.combine_chunks()
    return array


def _arrow_text_codes(values: Column) -> tuple[np.ndarray, list[str]] | None:
    """Codes in report order and the group names of an Arrow-backed string column without missing
    values, by ``kernels.coding.text_codes`` on its offsets and bytes (Arrow's dictionary encoding
    takes about three times as long on large columns, and pandas' wrapping of it costs ten times the
    work on small ones); None for any other column."""
    array = arrow_text(values)
    if array is None:
        return None
    coding = _kernels()
    offsets, data = text_buffers(array)

    def code_piece(start: int, stop: int, capacity: int, codes: np.ndarray) -> np.ndarray:
        return coding.text_codes(offsets[start:stop + 1], data, capacity, codes)

    def names_at(firsts: list[int]) -> list[str]:  # the first sample's bytes (valid UTF-8, as Arrow holds them)
        return [data[offsets[i]:offsets[i + 1]].tobytes().decode() for i in firsts]

    return _kernel_codes(len(offsets) - 1, code_piece, names_at)


def text_buffers(array: Any) -> tuple[np.ndarray, np.ndarray]:
    """The offsets (int32 or int64, ``len(array) + 1`` of them) and the UTF-8 bytes of a pyarrow string
    array (one chunk), as NumPy views."""
    _, offsets, data = array.buffers()
    offsets = np.frombuffer(offsets, (_TEXT_OFFSETS or _text_offsets())[array.type.id])[array.offset:array.offset + len(array) + 1]
    return offsets, np.frombuffer(data, np.uint8) if data is not None else np.empty(0, np.uint8)


_coding = None


def _kernels():
    """``kernels.coding``, imported on first use (numba is not imported with the package); an import
    statement in each coder costs a microsecond a call."""
    global _coding
    if _coding is None:
        from ..kernels import coding

        _coding = coding
    return _coding


#: Arrow's type ids of strings -> the type of their offsets (filled on first use: pyarrow imported).
_TEXT_OFFSETS: dict[int, Any] = {}


def _text_offsets() -> dict[int, Any]:
    import pyarrow as pa

    _TEXT_OFFSETS.update({pa.string().id: np.dtype(np.int32), pa.large_string().id: np.dtype(np.int64)})
    return _TEXT_OFFSETS


def _categorical_codes(values: pd.Series) -> tuple[np.ndarray, list, list[str]]:
    """A categorical column's codes (which serve directly either way, -1 where missing), the names of its
    categories and the report order: the categories' own order, or sorted when a value is missing."""
    raw_codes = np.asarray(values.array.codes)  # a read-only view (``.cat.codes`` copies them)
    names = [group_name(value) for value in values.cat.categories.tolist()]
    present = [name for name, here in zip(names, _codes_present(raw_codes, len(names))) if here and name is not None]
    ordered = report_order(present, categories=names, has_missing=bool(len(raw_codes) and raw_codes.min() < 0))
    return raw_codes, names, ordered


def _dictionary_codes(values: pd.Series) -> tuple[np.ndarray, list, list[str]]:
    """An Arrow dictionary column is already coded: its indices are the codes (null -> -1); the names of
    its used entries (None for the others) and their report order."""
    import pyarrow as pa
    import pyarrow.compute as pc

    column = values.array._pa_array
    column = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    if isinstance(column, pa.ChunkedArray):  # no chunks at all
        column = pa.array([], column.type)
    names = [group_name(value) for value in column.dictionary.to_pylist()]
    if column.null_count:
        raw_codes = pc.fill_null(column.indices.cast(pa.int64()), -1).to_numpy(zero_copy_only=False).astype(np.intp)
    else:  # the indices as they are (polars' uint32 too), in one pass to the categories' narrow codes
        raw_codes = column.indices.to_numpy(zero_copy_only=False).astype(_narrowest_type(len(names)))
        raw_codes.flags.writeable = False  # as a categorical's codes: one kernel signature
    used = _codes_present(raw_codes, len(names))
    names = [name if here else None for name, here in zip(names, used)]
    ordered = sorted({name for name in names if name is not None}, key=order_key)
    return raw_codes, names, ordered


def encode_values(values: Column, max_distinct: int | None = None) -> tuple[np.ndarray, list[str]] | None:
    """Codes (a signed integer type, -1 missing) in report order, and the group names, of one
    attribute column.

    None when the column has more than ``max_distinct`` distinct values (checked before any name is
    made, so a continuous column fails fast). Names come from the distinct values as Python objects,
    exactly as ``pandas.Series.map`` would hand them over.
    """
    text = _text_codes(values)  # text first: the usual attribute, and never numbers (no max_distinct)
    if text is not None:
        return text
    array = values if isinstance(values, np.ndarray) else None
    if array is None and values.dtype.kind in "iu" and not isinstance(values.dtype, pd.api.extensions.ExtensionDtype):
        array = values.to_numpy()
    if array is not None and array.dtype.kind in "iu" and len(array):
        # Integers over a short range (whose names sort as the numbers do): offsets and a bincount
        # instead of hashing every value.
        low, high = int(array.min()), int(array.max())
        if -(1 << 53) < low and high < 1 << 53 and _small_range(low, high, len(array)):
            return _integer_codes(array, low, high, max_distinct)
    if isinstance(values, np.ndarray) and (values.dtype.kind in "mM" or (
            values.dtype.kind == "O" and len(values)
            and isinstance(values[0], (datetime.datetime, datetime.timedelta, np.datetime64, np.timedelta64)))):
        # Dates and durations are named as pandas names them ('2020-01-01 00:00:00', '517 days
        # 00:00:00'), whatever NumPy unit they come in; factorizing the raw array would give integers.
        values = pd.Series(values, copy=False)
    # Category order is the report order, except when the column has a missing value: fairmedfm
    # 0.4.2 then names the groups through Series.map, which drops the categorical dtype, so they
    # are sorted like any other values. We follow it (see the guide's inputs page).
    if is_pandas(values, "Series") and isinstance(values.dtype, pd.CategoricalDtype):
        return _in_report_order(*_categorical_codes(values))
    if _is_arrow_dictionary(values):
        return _in_report_order(*_dictionary_codes(values))
    raw_codes, distinct = pd.factorize(values, use_na_sentinel=True)
    if max_distinct is not None and len(distinct) > max_distinct:
        return None
    return _in_report_order(raw_codes, [group_name(value) for value in distinct.tolist()], None)


def _text_codes(values: Column) -> tuple[np.ndarray, list[str]] | None:
    """Codes in report order and the group names of a text column without missing values: a NumPy
    ``U`` or ``S`` array (:func:`_text_array_codes`), an Arrow-backed one (:func:`_arrow_text_codes`)
    or an object array of str (:func:`_string_codes`); None for others."""
    if not isinstance(values, np.ndarray):
        return _arrow_text_codes(values)
    kind = values.dtype.kind
    if kind in "US":
        return _text_array_codes(values)
    if kind == "O" and len(values) and isinstance(values[0], str):
        text = _string_codes(values)
        if text is not None:  # str values, named as pandas.factorize's would be
            return _in_report_order(text[0], [group_name(value) for value in text[1]], None)
    return None


def _in_report_order(raw_codes: np.ndarray, names: list, ordered: list[str] | None
                     ) -> tuple[np.ndarray, list[str]]:
    """Codes into ``names`` (None: a name not reported; code -1: missing) as codes into the report
    order ``ordered`` (by default the names sorted: numbers by value, then text)."""
    raw_codes = np.asarray(raw_codes).ravel()
    if ordered is None and len(names) <= _REMEMBERED_NAMES:  # the same names again (batches, repeated calls)
        ordered, lookup = _sorted_lookup(tuple(names))
        ordered = list(ordered)
    else:
        lookup = _lookup(names, ordered if ordered is not None else _sorted_names(names))
        ordered = ordered if ordered is not None else _sorted_names(names)
    if lookup is None:  # already in report order (e.g. categories)
        return raw_codes, ordered
    # code -1 (missing) indexes the trailing -1 of the lookup table
    return np.take(lookup, raw_codes), ordered


#: Distinct values up to which the report order of a column's names is remembered.
_REMEMBERED_NAMES = 1024


def _sorted_names(names) -> list[str]:
    return sorted({name for name in names if name is not None}, key=_name_order)


def _lookup(names, ordered: list[str]) -> np.ndarray | None:
    """Position in ``ordered`` of each name (-1 for None or a name not there) and a trailing -1, as
    narrow as the codes need (np.take with it: half the time of indexing with 32-bit codes); None when
    every name is at its own position."""
    position = {name: i for i, name in enumerate(ordered)}
    lookup = [position.get(name, -1) if name is not None else -1 for name in names]
    if lookup == list(range(len(names))):
        return None
    table = np.array([*lookup, -1], _narrowest_type(len(ordered)))
    table.flags.writeable = False  # shared by the calls that remember it
    return table


@lru_cache(maxsize=256)
def _sorted_lookup(names: tuple) -> tuple[tuple[str, ...], np.ndarray | None]:
    """:func:`_sorted_names` and :func:`_lookup` of ``names``, remembered."""
    ordered = _sorted_names(names)
    return tuple(ordered), _lookup(names, ordered)



def narrowest(codes: np.ndarray, n_groups: int) -> np.ndarray:
    """Group codes (-1 missing) in the narrowest signed integer type that holds ``n_groups`` groups:
    a 10M-sample attribute of a few groups takes 10 MB instead of 80 MB."""
    return codes.astype(_narrowest_type(n_groups), copy=False)


def _narrowest_type(n_groups: int) -> type:
    for top, dtype in _NARROW:
        if n_groups <= top:
            return dtype
    return np.intp


_NARROW = ((127, np.int8), (32767, np.int16), (2147483647, np.int32))  # np.iinfo(dtype).max costs 1 us a call
