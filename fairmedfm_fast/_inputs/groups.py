"""Sensitive attributes as integer group codes: one code per sample (intp, -1 where the value is
missing) and the group names in report order.

Columns are coded by ``pandas.factorize``, by their categories, or straight from an Arrow
dictionary; numeric attributes are binned by cut points or quantiles, and several attributes
combine into the intersectional one. The conversion of other inputs is :mod:`fairmedfm_fast._inputs`.
"""
from __future__ import annotations

import datetime
import itertools
import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

from .._util.lazy_pandas import is_na, is_pandas, pd
from .._util.threads import on_threads, resolve_n_jobs
from .arrays import check_memory, is_arrow, is_polars, shown, to_numpy

Bins = Mapping[str, int | Sequence[float]]
#: A numeric attribute with more distinct values than this looks continuous and must be binned.
MAX_NUMERIC_GROUPS = 20
#: Columns of this many values and more are coded side by side on threads.
PARALLEL_FROM = 1 << 18
#: Columns shorter than this count their codes with ``np.bincount``; longer ones with a kernel.
TABLE_CODES_BELOW = 1 << 16


@dataclass
class Attribute:
    """One sensitive attribute: a group code per sample and the group names in report order."""

    name: str
    codes: np.ndarray  # -1 where the value is missing; the narrowest signed type (int8 up to 127 groups)
    groups: list[str]
    # when bins left fewer than two groups: what the bins were and how to get more groups
    bins_note: str | None = None
    edges: tuple[float, ...] | None = None  # the cut points as used, for an attribute grouped by bins

    @property
    def n_groups(self) -> int:
        return len(self.groups)


def one_group_warning(attribute: Attribute) -> str | None:
    """The warning for an attribute whose samples all fall in one group (or none), else None."""
    if attribute.n_groups >= 2:
        return None
    where = f"one group ({attribute.groups[0]!r})" if attribute.groups else "no group"
    note = f"; {attribute.bins_note}" if attribute.bins_note else ""
    return f"{attribute.name}: every sample falls in {where}, so the attribute has no summary metrics{note}"


@dataclass(frozen=True)
class CodedAttributes:
    """Attributes already validated and coded (once, for many calls): :func:`encode_attributes`
    hands them back unchanged, so that their group order is kept exactly."""

    attributes: tuple[Attribute, ...]


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


def _column(values: Any, name: str) -> Column:
    """One attribute's values: a pandas Series (pandas, pyarrow or polars input, whose dtype says
    how to code it) or a 1-D NumPy array (anything else), without a Python object per sample.

    Strings that pandas cannot hold as they are (Arrow string views) or that NumPy converts slowly (a
    list of str) come as a categorical Series of their distinct values in report order
    (:func:`_coded_text`), which codes, names and cuts into bins as the strings would."""
    if is_pandas(values, "Series"):
        return values.reset_index(drop=True)
    if type(values) is list:
        text = _list_codes(values)
        if text is not None:
            return pd.Series(_coded_text(*text), name=name, copy=False)
    if is_polars(values):
        text = _polars_category_codes(values)
        if text is not None:
            return pd.Series(_coded_text(*text), name=name, copy=False)
        values = _polars_arrow(values)
    if is_arrow(values):
        import pyarrow as pa

        if isinstance(values, pa.ChunkedArray):
            values = values.combine_chunks() if values.num_chunks != 1 else values.chunk(0)
        if pa.types.is_string_view(values.type):
            text = _view_codes(values)
            if text is not None:
                return pd.Series(_coded_text(*text), name=name, copy=False)
            values = values.cast(pa.large_string())
        return pd.Series(pd.arrays.ArrowExtensionArray(values), name=name, copy=False)
    array = to_numpy(values, name)
    if array.ndim != 1:
        array = array.reshape(len(array), -1)
        if array.shape[1] != 1:
            raise ValueError(f"{name} must hold one value per sample, got shape {array.shape}")
        array = array[:, 0]
    return array


def _polars_arrow(values: Any) -> Any:
    """A polars Series as Arrow: its strings as the string views polars holds (no copy; pandas cannot
    hold them: :func:`_column` codes them), anything else as ``to_arrow()`` gives it."""
    if str(values.dtype) in ("String", "Utf8"):
        try:
            import polars

            return values.to_arrow(compat_level=polars.CompatLevel.newest())
        except (AttributeError, TypeError):  # a polars without compatibility levels (before 1.0)
            pass
    return values.to_arrow()


def _polars_category_codes(values: Any) -> tuple[np.ndarray, list[str]] | None:
    """Codes in order of first occurrence and the names of a polars Categorical or Enum Series without
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
        codes, firsts = _row_codes(rows)
        names = values.gather(firsts).cast(str).to_list()
    except (AttributeError, TypeError, ValueError):  # a polars of other names or types
        return None
    if any(not isinstance(name, str) for name in names):
        return None
    return codes, names


def _view_codes(array: Any) -> tuple[np.ndarray, list[str]] | None:
    """Codes in order of first occurrence and the distinct strings of an Arrow string_view array, from
    its 16-byte views by ``kernels.coding.row_codes``: when it has no null and every string is at
    most 12 bytes long, the view holds the length and the bytes (padded with zeros: were they not,
    two views of one string would name one group twice, which :func:`_coded_text` merges); else None."""
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
    codes, firsts = _row_codes(views)
    return codes, [array[i].as_py() for i in firsts.tolist()]  # (pyarrow has no take of views)


def _list_codes(values: list) -> tuple[np.ndarray, list[str]] | None:
    """Codes in order of first occurrence and the distinct strings of a list of str, by pandas' string
    hash table (:func:`_string_codes`); None for a list that NumPy reads otherwise than as these
    strings (what ``to_numpy`` gives, and fairmedfm 0.4.2 reads): values other than str (NumPy makes
    text of numbers; None is missing), or a string that ends in NUL (NumPy strips trailing NULs)."""
    if not values or not isinstance(values[0], str):
        return None
    array = np.fromiter(values, object, len(values))  # faster than np.array(values, dtype=object)
    coded = _string_codes(array)
    if coded is None or any(value.endswith("\x00") for value in coded[1]):
        return None
    return coded


def _coded_text(codes: np.ndarray, uniques: list) -> pd.Categorical:
    """A categorical of the strings ``uniques`` (which may repeat) and codes into them, its categories
    the distinct names in report order: what encode_values makes of the same strings."""
    ordered = sorted(set(uniques), key=_name_order)
    position = {name: i for i, name in enumerate(ordered)}
    lookup = narrowest(np.array([position[name] for name in uniques], np.intp), len(ordered))
    try:  # the codes are valid by construction: no pass to check them (pandas 2.1 on)
        return pd.Categorical.from_codes(np.take(lookup, codes), categories=ordered, validate=False)
    except TypeError:
        return pd.Categorical.from_codes(np.take(lookup, codes), categories=ordered)


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


def _deferred(values: Any) -> bool:
    """Whether a column is converted in :func:`_attribute` (on the coding threads: the conversion
    releases the GIL) rather than at once: pyarrow and polars columns."""
    return is_arrow(values) or is_polars(values)


def _columns(sensitive_features: Any) -> list[tuple[str, Column]]:
    """(attribute name, values) pairs, named as a pandas DataFrame of the same input would be."""
    features = sensitive_features
    if isinstance(features, np.ndarray) and features.ndim == 1:  # the common case, first
        return [("sensitive", features)]
    # pandas columns keep their index: coding reads their values only (a reset_index costs more)
    if is_pandas(features, "DataFrame"):
        return _frame_columns(features)
    if is_pandas(features, "Series"):
        return [(str(features.name) if features.name else "sensitive", features)]
    if isinstance(features, Mapping):
        # Values of a mapping are taken as plain arrays (as a DataFrame built from them would be),
        # except pyarrow and polars columns, which keep their own types (and are converted later, on
        # the coding threads: :func:`_deferred`).
        columns = []
        for key, value in features.items():
            if not (isinstance(value, np.ndarray) and value.ndim == 1):
                value = _mapping_value(value, f"sensitive_features[{key!r}]")
                if not _deferred(value):
                    value = _column(value, f"sensitive_features[{key!r}]")
            columns.append((str(key), value))
        return columns
    recoded = _recoded(features)
    if recoded is not None:
        return [("sensitive", recoded)]
    if type(features) is list and (text := _list_codes(features)) is not None:
        return [("sensitive", pd.Series(_coded_text(*text), name="sensitive", copy=False))]
    if is_polars(features):
        if hasattr(features, "get_columns"):  # DataFrame
            return [(str(column.name), column) for column in features.get_columns()]
        return [(str(features.name) if features.name else "sensitive", features)]
    if is_arrow(features) and hasattr(features, "column_names"):  # Table / RecordBatch
        return [(str(name), features.column(i)) for i, name in enumerate(features.column_names)]
    if is_arrow(features):
        return [("sensitive", features)]
    array = to_numpy(features, "sensitive_features")
    if array.ndim == 1:
        return [("sensitive", array)]
    if array.ndim == 2:
        return [(f"sensitive_{i}", array[:, i]) for i in range(array.shape[1])]
    raise ValueError(f"sensitive_features must be one value per sample or a (samples, attributes) table, "
                     f"got shape {array.shape}")


def _frame_columns(frame: pd.DataFrame) -> list[tuple[str, Column]]:
    """(name, values) of each column of a DataFrame: numbers, booleans and Arrow-backed text as the
    column's own array (``DataFrame._get_column_array``, where pandas has it), every other column as
    a Series. Making a Series costs pandas 3 about 30 us a column, more than coding 1,000 values;
    these arrays are coded exactly as their Series would be."""
    take = getattr(frame, "_get_column_array", None)
    if take is None:
        return [(str(name), column) for name, column in frame.items()]
    columns = []
    for i, name in enumerate(_column_names(frame.columns)):
        array = take(i)
        plain = (array.dtype.kind in "biuf" if isinstance(array, np.ndarray)
                 else _is_arrow_text(getattr(array, "_pa_array", None)))
        columns.append((str(name), array if plain else frame.iloc[:, i]))
    return columns


def _column_names(index: pd.Index) -> list:
    """``index.tolist()``, read from its Arrow array where it has one without nulls (pandas 3's text
    names: a fifth of the time)."""
    array = getattr(getattr(index, "_values", None), "_pa_array", None)
    if array is not None and not array.null_count:
        return array.to_pylist()
    return index.tolist()


def _is_arrow_text(array: Any) -> bool:
    """Whether ``array`` is a pyarrow (chunked) array of strings."""
    return array is not None and array.type.id in (_TEXT_OFFSETS or _text_offsets())


def _mapping_value(value: Any, where: str) -> Any:
    """One value of a mapping of attributes: pyarrow and polars columns and lists of strings as they
    are (see :func:`_column`), a bare pandas Categorical by its codes (:func:`_recoded`), anything
    else as a 1-D NumPy array."""
    if _deferred(value) or (type(value) is list and value and isinstance(value[0], str)):
        return value
    recoded = _recoded(value)
    return recoded if recoded is not None else to_numpy(value, where).ravel()


def _recoded(values: Any) -> pd.Series | None:
    """A bare pandas Categorical of strings (or other objects) as fairmedfm 0.4.2 sees it: as plain
    values, whose groups are sorted like any others (not in category order). Returned as a
    categorical Series whose categories are in that order, so that its codes serve directly instead
    of the strings being hashed; None for anything else (or when two categories share a name)."""
    if not is_pandas(values, "Categorical") or values.categories.dtype.kind not in "OT":
        return None
    names = [group_name(value) for value in values.categories.tolist()]
    if None in names or len(set(names)) < len(names):
        return None
    order = sorted(range(len(names)), key=lambda j: order_key(names[j]))
    rank = np.full(len(names) + 1, -1, np.intp)  # code -1 (missing) stays -1
    rank[order] = np.arange(len(names))
    codes = rank[values.codes]
    return pd.Series(pd.Categorical.from_codes(codes, categories=values.categories[order]), copy=False)


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


#: Slots of the hash table that codes text (NumPy, Arrow) at first; one with room for every value is
#: made when more than half of them fill.
TEXT_TABLE_SLOTS = 1024


def _text_array_codes(array: np.ndarray) -> tuple[np.ndarray, list]:
    """Codes in order of first occurrence (int32) and the distinct values (``str`` for a ``U`` array,
    ``bytes`` for an ``S`` array) of a NumPy text array, by ``kernels.coding.row_codes`` on its
    buffer: each value is a fixed-width row of code points (``U``) or bytes (``S``), padded with
    zeros, so equal values are equal rows (NumPy strips trailing NULs from both) and no Python object
    is made but for the distinct values."""
    array = np.ascontiguousarray(array)
    n, size = len(array), array.dtype.itemsize
    if size == 0:  # U0 / S0: every value is empty
        return np.zeros(n, np.int32), array[:1].tolist()
    # code points as they are (short text of small code points then folds into one exact key); bytes
    # in the widest words that tile the value
    word = np.dtype(np.uint32) if array.dtype.kind == "U" else next(
        np.dtype(word) for word in (np.uint64, np.uint32, np.uint8) if size % np.dtype(word).itemsize == 0)
    rows = array.view(word).reshape(n, size // word.itemsize)
    rows.flags.writeable = False  # one signature, whether the user's array is read-only or not
    codes, firsts = _row_codes(rows)
    return codes, array[firsts].tolist()


def _row_codes(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``kernels.coding.row_codes`` of read-only ``rows``: a table of :data:`TEXT_TABLE_SLOTS`, and one
    with room for every row when more than half its slots fill."""
    coding = _kernels()
    codes, firsts = coding.row_codes(rows, TEXT_TABLE_SLOTS)
    if len(rows) and not len(firsts):
        codes, firsts = coding.row_codes(rows, _room_for(len(rows)))
    return codes, firsts


def more_distinct_than(values: np.ndarray, limit: int) -> bool:
    """Whether float32 or float64 ``values`` (no NaN, no -0.0: equal values have equal bits) hold more
    than ``limit`` distinct values, by ``kernels.coding.more_distinct_than`` on their bits, which stops
    at the first value past them (continuous scores: after about ``limit`` values, a tenth of the time
    of a sort)."""
    return bool(_kernels().more_distinct_than(values.view(np.uint32 if values.dtype.itemsize == 4 else np.uint64),
                                              limit))


def _room_for(n: int) -> int:
    """Slots of a hash table that holds ``n`` distinct values (at most half full): a power of two."""
    return max(TEXT_TABLE_SLOTS, 1 << (2 * n - 1).bit_length())


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


def _arrow_text_codes(values: Column) -> tuple[np.ndarray, list[str]] | None:
    """Codes and distinct strings (in order of first occurrence, as ``pandas.factorize``) of an
    Arrow-backed string column without missing values, by ``kernels.coding.text_codes`` on its
    offsets and bytes (Arrow's dictionary encoding takes about three times as long on large columns,
    and pandas' wrapping of it costs ten times the work on small ones); None for any other column."""
    array = getattr(values, "_pa_array", None)  # pandas' Arrow-backed array (a Series' array below)
    if array is None:
        array = getattr(getattr(values, "array", None), "_pa_array", None)
        if array is None:
            return None
    offset_type = (_TEXT_OFFSETS or _text_offsets()).get(array.type.id)
    if offset_type is None or array.null_count:
        return None
    coding = _kernels()
    if getattr(array, "num_chunks", None) is not None:  # a ChunkedArray
        array = array.chunk(0) if array.num_chunks == 1 else array.combine_chunks()
    _, offsets, data = array.buffers()
    offsets = np.frombuffer(offsets, offset_type)[array.offset:array.offset + len(array) + 1]
    data = np.frombuffer(data, np.uint8) if data is not None else np.empty(0, np.uint8)
    codes, firsts = coding.text_codes(offsets, data, TEXT_TABLE_SLOTS)
    if len(offsets) > 1 and not len(firsts):  # more than half the slots: a table with room for every value
        codes, firsts = coding.text_codes(offsets, data, _room_for(len(offsets) - 1))
    # each distinct string from its first sample's bytes (valid UTF-8, as Arrow holds them)
    return codes, [data[offsets[i]:offsets[i + 1]].tobytes().decode() for i in firsts.tolist()]


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
        return _in_report_order(*text, None)
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
    # are sorted like any other values. We follow it (see the README).
    if is_pandas(values, "Series") and isinstance(values.dtype, pd.CategoricalDtype):
        return _in_report_order(*_categorical_codes(values))
    if _is_arrow_dictionary(values):
        return _in_report_order(*_dictionary_codes(values))
    raw_codes, distinct = pd.factorize(values, use_na_sentinel=True)
    if max_distinct is not None and len(distinct) > max_distinct:
        return None
    return _in_report_order(raw_codes, [group_name(value) for value in distinct.tolist()], None)


def _text_codes(values: Column) -> tuple[np.ndarray, list[str]] | None:
    """Codes in order of first occurrence and the names of a text column without missing values: a
    NumPy ``U`` or ``S`` array (:func:`_text_array_codes`), an Arrow-backed one
    (:func:`_arrow_text_codes`) or an object array of str (:func:`_string_codes`); None for others."""
    if not isinstance(values, np.ndarray):
        return _arrow_text_codes(values)  # str values, named as they are
    kind = values.dtype.kind
    if kind == "U":
        return _text_array_codes(values)  # str values
    if kind == "S" or (kind == "O" and len(values) and isinstance(values[0], str)):
        text = _text_array_codes(values) if kind == "S" else _string_codes(values)
        if text is not None:  # bytes ("b'F'") and str values named as pandas.factorize's would be
            return text[0], [group_name(value) for value in text[1]]
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


def _bin_edges_label(edge: float) -> str:
    return f"{edge:.4g}"


def binned(values: pd.Series, spec: Any, column: str, edges_out: list | None = None) -> tuple[np.ndarray, list[str]]:
    """Codes and names of a numeric attribute grouped by cut points or into quantile groups; the cut
    points as used (quantiles computed) are appended to ``edges_out`` when given."""
    codes, groups, _ = _binned(values, spec, column, edges_out)
    return codes, groups


def _binned(values: pd.Series, spec: Any, column: str, edges_out: list | None = None
            ) -> tuple[np.ndarray, list[str], str | None]:
    """:func:`binned`, and a note on the bins made when fewer than two of them have samples."""
    if not is_pandas(values, "Series"):  # a NumPy or pandas array
        values = pd.Series(values, copy=False)
    numeric = pd.to_numeric(values, errors="coerce")
    if numeric.notna().sum() < values.notna().sum():
        bad = pd.unique(values[numeric.isna() & values.notna()].to_numpy())[:3].tolist()  # distinct examples
        raise ValueError(f"bins[{column!r}]: attribute {column!r} has non-numeric values such as {bad}, so it "
                         "cannot be binned; remove it from bins")
    numeric = numeric.to_numpy(dtype=np.float64, na_value=np.nan)
    if isinstance(spec, (int, np.integer)):
        if spec < 2:
            raise ValueError(f"bins[{column!r}]={shown(spec)}: a number of quantile groups must be at least 2")
        check_memory(f"bins[{column!r}]", spec, 24, "the quantile cut points", f"bins={{{column!r}: 4}}")
        present = numeric[~np.isnan(numeric)]
        if present.size == 0:
            raise ValueError(f"bins[{column!r}]: attribute {column!r} has no values to take quantiles of")
        cut_points = np.unique(np.quantile(present, np.linspace(0, 1, int(spec) + 1)[1:-1]))
    else:
        if isinstance(spec, (str, bytes)) or not isinstance(spec, (Sequence, np.ndarray)):
            raise ValueError(f"bins[{column!r}]={shown(spec)}: give cut points such as [40, 60] or a number of "
                             "quantile groups such as 4")
        cut_points = spec
    try:
        edges = sorted(float(edge) for edge in cut_points)
    except (TypeError, ValueError):
        raise ValueError(f"bins[{column!r}]={shown(spec)}: cut points must be numbers, e.g. [40, 60]") from None
    if edges_out is not None:
        edges_out.extend(edges)
    if not edges:
        raise ValueError(f"bins[{column!r}] is empty: give at least one cut point, e.g. [40, 60]")
    if any(math.isnan(edge) for edge in edges) or len(set(edges)) < len(edges):
        raise ValueError(f"bins[{column!r}]={shown(spec)}: cut points must be distinct numbers")
    labels = ([f"<{_bin_edges_label(edges[0])}"]
              + [f"{_bin_edges_label(a)}-{_bin_edges_label(b)}" for a, b in itertools.pairwise(edges)]
              + [f">={_bin_edges_label(edges[-1])}"])
    if len(set(labels)) < len(labels):
        raise ValueError(f"bins[{column!r}]={shown(spec)}: cut points too close to name the groups apart "
                         f"({labels}); use fewer or rounder cut points")
    # Intervals [a, b): the group is the number of cut points <= value; +inf and NaN are missing.
    codes = np.searchsorted(np.asarray(edges), numeric, side="right").astype(np.intp)
    codes[np.isnan(numeric) | (numeric == np.inf)] = -1
    counts = np.bincount(codes[codes >= 0], minlength=len(labels))
    present = counts > 0
    compact = np.cumsum(present) - 1
    lookup = np.append(np.where(present, compact, -1), -1).astype(np.intp)
    note = None
    if np.count_nonzero(present) < 2:
        made = ", ".join(f"{label!r} ({count:,} samples)" for label, count in zip(labels, counts.tolist()))
        points = "[" + ", ".join(map(_bin_edges_label, edges)) + "]"
        cuts = "one cut point" if len(edges) == 1 else f"{len(edges)} cut points"
        if isinstance(spec, (int, np.integer)):
            note = (f"the {int(spec)} quantile groups of {column!r} are {cuts}, {points}, which made {made}; give "
                    f"cut points instead, e.g. bins={{{column!r}: [40, 60]}}")
        else:
            note = (f"bins[{column!r}]={points} is {cuts}, which made {made}; for quantile groups pass a number "
                    f"of groups, e.g. bins={{{column!r}: 4}}")
    return lookup[codes], [label for label, here in zip(labels, present) if here], note


def intersection_names(combinations: list[tuple[str, ...]], attributes: list[str]) -> list[str]:
    """Names of intersectional groups ("F & >=60"), distinct: when values that contain " & "
    themselves make two combinations read the same ("x & y" with "z", and "x" with "y & z"),
    such values are put in parentheses."""
    joined = [" & ".join(parts) for parts in combinations]
    if len(set(joined)) < len(joined):
        joined = [" & ".join(f"({part})" if " & " in part else part for part in parts) for parts in combinations]
        repeated = sorted(name for name, count in Counter(joined).items() if count > 1)
        if repeated:  # a guard: parentheses have told every case tried apart
            raise ValueError(f"intersectional groups of {attributes} would share the names {repeated}; rename "
                             "the attribute values so that they do not contain ' & '")
    return joined


def combination_keys(codes: Sequence[np.ndarray], widths: Sequence[int], dtype: Any = np.int64) -> np.ndarray:
    """Each sample's combination of group codes as one integer, for the backends that meet groups in
    pieces (the accumulator's batches, Dask's partitions): mixed radix, digit ``k`` is the code + 1 in
    base ``widths[k] + 1`` (0 where the value is missing). :func:`key_codes` reads a key back."""
    # Horner's rule on the codes, in place (no temporary per step), and the +1 of every digit added
    # once at the end as their sum in the same radix: one pass less per attribute
    key = np.asarray(codes[0]).astype(dtype)
    ones = 1
    for more, width in zip(codes[1:], widths[1:]):
        key *= width + 1
        key += more
        ones = ones * (width + 1) + 1
    key += ones
    return key


def key_codes(key: int, widths: Sequence[int]) -> tuple[int, ...]:
    """The group codes of one :func:`combination_keys` key (-1 where the value is missing)."""
    codes = []
    for width in reversed(widths):
        codes.append(key % (width + 1) - 1)
        key //= width + 1
    return tuple(reversed(codes))


def combine(attributes: list[Attribute]) -> Attribute:
    """The intersectional attribute ("a & b"): combinations that occur, in product order."""
    codes = attributes[0].codes.astype(np.intp)
    names: list[tuple[str, ...]] = [(group,) for group in attributes[0].groups]
    for attribute in attributes[1:]:
        width = attribute.n_groups
        valid = (codes >= 0) & (attribute.codes >= 0)
        combined = np.where(valid, codes * width + attribute.codes, -1)
        n_cells = len(names) * width
        if n_cells <= max(4 * len(combined), 1 << 16):
            present = np.flatnonzero(np.bincount(combined[valid], minlength=n_cells))
            lookup = np.full(n_cells + 1, -1, np.intp)
            lookup[present] = np.arange(len(present))
            codes = lookup[combined]
        else:
            present, inverse = np.unique(combined[valid], return_inverse=True)
            codes = np.full(len(combined), -1, np.intp)
            codes[valid] = inverse
        names = [names[cell // width] + (attribute.groups[cell % width],) for cell in present]
    joined = intersection_names(names, [a.name for a in attributes])
    return Attribute(" & ".join(a.name for a in attributes), narrowest(codes, len(joined)), joined)


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


def encode_attributes(sensitive_features: Any, n_samples: int, bins: Bins | None = None,
                      intersectional: bool = False) -> list[Attribute]:
    """Sensitive attributes as integer group codes, validated.

    Parameters
    ----------
    sensitive_features : DataFrame, dict of name -> values, Series, 1-D or 2-D array, pyarrow
        Table/Array/ChunkedArray, polars DataFrame/Series
    n_samples : int
    bins : dict of attribute -> cut points or number of quantile groups, optional
    intersectional : bool
        Append the combination of all attributes (when there are several).
    """
    if isinstance(sensitive_features, CodedAttributes):
        if bins or intersectional:
            raise ValueError("bins and intersectional apply when the attributes are coded, not to coded attributes")
        return list(sensitive_features.attributes)
    columns = _columns(sensitive_features)
    if not columns:
        raise ValueError("sensitive_features has no attributes: pass at least one column of group values")
    if len(columns) > 1:
        _require_distinct([name for name, _ in columns], "sensitive_features has several attributes named")
    for name, values in columns:
        if len(values) != n_samples:
            raise ValueError(f"sensitive_features: attribute {name!r} has {len(values)} values but there are "
                             f"{n_samples} samples; pass one value per sample")
    if bins is not None and not isinstance(bins, Mapping):
        raise ValueError(f"bins must be a dict such as {{'age': [40, 60]}}, got {type(bins).__name__}")
    if bins:
        known = [name for name, _ in columns]
        unknown = sorted(set(map(str, bins)) - set(known))
        if unknown:
            raise ValueError(f"bins names attribute(s) {unknown} that sensitive_features does not have; "
                             f"its attributes are {known}")
        bins = {str(key): value for key, value in bins.items()}
    else:
        bins = {}
    # Large columns are coded side by side (the coding kernels release the GIL); an error names the
    # first failing column, as coding them in turn would.
    n_threads = resolve_n_jobs() if n_samples >= PARALLEL_FROM and len(columns) > 1 else 1
    if n_threads > 1:
        attributes = on_threads([lambda name=name, values=values: _attribute(name, values, bins.get(name))
                                 for name, values in columns], n_threads)
    else:
        attributes = [_attribute(name, values, bins.get(name)) for name, values in columns]
    if intersectional and len(attributes) > 1:
        attributes.append(combine(attributes))  # its name is longer than any other: no clash
    return attributes


def _attribute(name: str, values: Column, bins: Any) -> Attribute:
    """One attribute column coded: cut at ``bins`` when given, else by its distinct values."""
    if not isinstance(values, np.ndarray) and _deferred(values):
        values = _column(values, name)
    edges: list[float] = []
    if bins is not None:
        codes, groups, note = _binned(values, bins, name, edges)
        return Attribute(name, narrowest(codes, len(groups)), groups, note, tuple(edges))
    encoded = encode_values(values, MAX_NUMERIC_GROUPS if is_numeric(values) else None)
    if encoded is None:
        raise ValueError(
            f"attribute {name!r} looks continuous (more than {MAX_NUMERIC_GROUPS} distinct numbers); "
            f"group it with bins={{{name!r}: [40, 60]}} (cut points) or bins={{{name!r}: 4}} "
            "(quantile groups)")
    codes, groups = encoded
    return Attribute(name, narrowest(codes, len(groups)), groups)


def _require_distinct(names: list[str], problem: str) -> None:
    if len(set(names)) == len(names):
        return
    repeated = sorted(name for name, count in Counter(names).items() if count > 1)
    if repeated:
        raise ValueError(f"{problem} {', '.join(map(repr, repeated))}; every attribute needs its own name in the "
                         "report: rename the columns (e.g. DataFrame.rename or a dict with distinct keys)")


def one_attribute(sensitive_features: Any, n_samples: int, bins: Bins | None = None) -> Attribute:
    """A single attribute: the only one given, or the combination of several."""
    attributes = encode_attributes(sensitive_features, n_samples, bins)
    return attributes[0] if len(attributes) == 1 else combine(attributes)


def numeric_columns(sensitive_features: Any) -> list[tuple[str, bool]]:
    """(name, whether numeric) of each attribute column, as :func:`encode_attributes` names them."""
    return [(name, is_numeric(_column(values, name) if _deferred(values) else values))
            for name, values in _columns(sensitive_features)]



_KINDS = {"b": "bool", "i": "integer", "u": "integer", "f": "float", "c": "complex", "M": "datetime", "m": "duration",
          "U": "text", "S": "text"}
_INFERRED = {"boolean": "bool", "integer": "integer", "floating": "float", "mixed-integer-float": "float",
             "decimal": "float", "complex": "complex", "empty": None}


def column_kinds(sensitive_features: Any) -> list[tuple[str, str | None]]:
    """(name, kind) of each attribute column: "bool", "integer", "float", "text" (or "complex",
    "datetime", ...), None where a column of objects holds no value; a categorical column is of its
    categories' kind. The accumulator checks that a later batch's column is of the first's kind: a
    column read as numbers in one batch and text in another would make two groups of one value."""
    kinds = []
    for name, values in _columns(sensitive_features):
        if _deferred(values):
            values = _column(values, name)
        dtype = values.dtype
        if isinstance(dtype, pd.CategoricalDtype):
            dtype = dtype.categories.dtype
        kind = _KINDS.get(getattr(dtype, "kind", "O"))
        if kind is None:  # objects, strings: what they hold
            inferred = pd.api.types.infer_dtype(values, skipna=True)
            kind = _INFERRED.get(inferred, "text")
        kinds.append((name, kind))
    return kinds
