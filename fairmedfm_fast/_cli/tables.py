"""Prediction and metadata tables for the command line, read with pyarrow.

A table is opened first (:func:`open_table`), which learns its column names without reading the data,
so that the command line can work out which columns it needs; :meth:`Table.read` then reads only
those. CSV/TSV (multithreaded), Parquet, Feather/Arrow IPC and JSON Lines are read by pyarrow; JSON
and Excel go through pandas, as they are small in practice. Text formats may be gzip-compressed.

The columns come back as a :class:`pyarrow.Table`; nothing here creates a Python object per row.
Where pyarrow's type inference differs from pandas' (which ``fairmedfm score`` uses), the column is
brought to what pandas would have made of it, so that groups, labels and join keys read the same:
dates and times stay text, ``True``/``False`` are booleans but ``1``/``0`` are integers, and the
same spellings of a missing value (``NA``, ``null``, ``None``, empty, ...) are missing.
"""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["Table", "TableError", "open_table", "FORMATS"]

# pandas.read_csv's default spellings of a missing value.
_NA_VALUES = ["", "#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan", "1.#IND", "1.#QNAN",
              "<NA>", "N/A", "NA", "NULL", "NaN", "None", "n/a", "nan", "null"]
_TRUE_VALUES = ["True", "TRUE", "true"]
_FALSE_VALUES = ["False", "FALSE", "false"]

# Suffix (lower case, without .gz) -> format.
_SUFFIXES = {
    ".csv": "csv", ".tsv": "tsv", ".tab": "tsv", ".txt": "tsv",
    ".jsonl": "jsonl", ".ndjson": "jsonl", ".json": "json",
    ".parquet": "parquet", ".pq": "parquet",
    ".feather": "feather", ".arrow": "feather", ".ipc": "feather",
    ".xlsx": "excel", ".xlsm": "excel", ".xls": "excel",
}
# Bytes per block when pyarrow reads CSV and JSON Lines in parallel.
_BLOCK_SIZE = 1 << 24
FORMATS = ".csv, .tsv, .parquet, .feather, .arrow, .json, .jsonl or .xlsx (text formats may end in .gz)"
_TEXT = {"csv", "tsv", "jsonl", "json"}


class TableError(ValueError):
    """A table that cannot be read; the message says which file and what to do."""


def table_format(path: Path) -> str:
    """The format of ``path`` from its extension, or raise :class:`TableError`."""
    name = path.name.lower()
    compressed = name.endswith(".gz")
    stem = name[:-3] if compressed else name
    suffix = stem[stem.rfind("."):] if "." in stem else ""
    kind = _SUFFIXES.get(suffix)
    if kind is None or (compressed and kind not in _TEXT):
        raise TableError(f"cannot tell the format of {str(path)!r} from its extension; "
                         f"use {FORMATS}")
    return kind


def open_table(path, role: str = "table") -> Table:
    """Open ``path`` (its column names only); ``role`` names it in error messages."""
    path = Path(path)
    kind = table_format(path)
    if not path.exists():
        raise TableError(f"{role} {str(path)!r} does not exist; check the path")
    if path.is_dir():
        raise TableError(f"{role} {str(path)!r} is a directory; give a file ({FORMATS})")
    reader = {"csv": _CSV, "tsv": _CSV, "parquet": _Parquet, "feather": _Feather, "jsonl": _JSONLines,
              "json": _Pandas, "excel": _Pandas}[kind]
    try:
        return reader(path, kind, role)
    except TableError:
        raise
    except ImportError as exc:
        package = exc.name or "openpyxl"
        raise TableError(f"reading {role} {str(path)!r} needs {package}: pip install {package} "
                         '(or pip install ".[io]" in a clone of fairmedfm_fast)') from None
    except Exception as exc:  # noqa: BLE001 - every reader failure becomes one clear message
        raise _unreadable(path, kind, role, exc) from None


def _unreadable(path: Path, kind: str, role: str, exc: BaseException) -> TableError:
    detail = " ".join(str(exc).split()).rstrip(".") or type(exc).__name__
    if len(detail) > 300:
        detail = detail[:297] + "..."
    return TableError(f"cannot read {role} {str(path)!r} as {kind.upper() if kind != 'excel' else 'Excel'}: "
                      f"{detail}; check that the file is complete and in that format")


class Table:
    """An opened table: ``columns`` (names, in file order) and :meth:`read`."""

    def __init__(self, path: Path, kind: str, role: str):
        self.path, self.kind, self.role = path, kind, role
        self.columns: list[str] = []
        #: Columns stored as dictionaries (pandas categoricals): their dictionary order is the group order.
        self.categorical: set[str] = set()

    def read(self, columns, groups=()) -> pa.Table:
        """The named columns (in that order) as a pyarrow Table.

        Text columns named in ``groups`` may come back dictionary-encoded (Parquet reads them so
        directly, without building a string per row); unlike the columns in :attr:`categorical`,
        the order of those dictionaries means nothing.
        """
        wanted = list(dict.fromkeys(columns))
        try:
            table = self._read(wanted, set(groups))
        except TableError:
            raise
        except MemoryError:
            raise
        except Exception as exc:  # noqa: BLE001
            raise _unreadable(self.path, self.kind, self.role, exc) from None
        return table.select(wanted)

    def _read(self, columns: list[str], groups: set = frozenset()) -> pa.Table:  # pragma: no cover
        raise NotImplementedError


def _mangle(names: list[str]) -> list[str]:
    """Column names as pandas makes them: blanks become 'Unnamed: i', repeats get '.1', '.2', ..."""
    out: list[str] = []
    uses: dict[str, int] = {}
    for i, name in enumerate(names):
        name = name if name != "" else f"Unnamed: {i}"
        count = uses.get(name, 0)
        while count:  # taken: try name.count, and so on
            uses[name] = count + 1
            name = f"{name}.{count}"
            count = uses.get(name, 0)
        uses[name] = 1
        out.append(name)
    return out


class _CSV(Table):
    def __init__(self, path, kind, role):
        super().__init__(path, kind, role)
        import pyarrow.csv as pacsv

        self._csv = pacsv
        self._parse = pacsv.ParseOptions(delimiter="\t" if kind == "tsv" else ",")
        reader = pacsv.open_csv(path, parse_options=self._parse,
                                read_options=pacsv.ReadOptions(use_threads=False),
                                convert_options=self._convert(None))
        try:
            header = reader.schema.names
        finally:
            reader.close()
        self.columns = _mangle(header)
        self._renamed = self.columns != header

    def _convert(self, columns, types=None):
        return self._csv.ConvertOptions(
            include_columns=columns, column_types=types, null_values=_NA_VALUES, strings_can_be_null=True,
            quoted_strings_can_be_null=True, true_values=_TRUE_VALUES, false_values=_FALSE_VALUES)

    def _read_csv(self, columns, types=None):
        options = self._csv.ReadOptions(use_threads=True, block_size=_BLOCK_SIZE,
                                        column_names=self.columns if self._renamed else None,
                                        skip_rows=1 if self._renamed else 0)
        return self._csv.read_csv(self.path, read_options=options, parse_options=self._parse,
                                  convert_options=self._convert(columns, types))

    def _read(self, columns, groups=frozenset()):
        try:
            table = self._read_csv(columns)
        except pa.ArrowInvalid as exc:
            if "conversion error" not in str(exc):
                raise
            # pyarrow guessed a column's type from the first block and a later value does not fit:
            # read everything as text and infer per column as pandas does.
            table = self._read_csv(columns, {name: pa.string() for name in columns})
            return pa.table({name: _infer_text(table[name]) for name in columns})
        binary = [name for name in columns if pa.types.is_binary(table.schema.field(name).type)]
        if binary:
            raise TableError(f"{self.role} {str(self.path)!r}: column {binary[0]!r} is not UTF-8 text; save the "
                             "table as UTF-8 (e.g. in pandas: to_csv(..., encoding='utf-8'))")
        temporal = [name for name in columns if pa.types.is_temporal(table.schema.field(name).type)]
        if temporal:  # pandas keeps dates and times as text
            text = self._read_csv(temporal, {name: pa.string() for name in temporal})
            for name in temporal:
                table = table.set_column(table.schema.get_field_index(name), name, text[name])
        return table


def _infer_text(column: pa.ChunkedArray) -> pa.ChunkedArray:
    """A text column as integers, floats or booleans when every value is one, as pandas.read_csv."""
    present = column.drop_null() if column.null_count else column
    if len(present) == 0:
        return column
    if pc.all(pc.is_in(present, value_set=pa.array(_TRUE_VALUES + _FALSE_VALUES))).as_py():
        return pc.is_in(column, value_set=pa.array(_TRUE_VALUES))
    for target in (pa.int64(), pa.float64()):
        if target == pa.int64() and column.null_count:
            continue  # pandas makes integers with missing values floats
        try:
            return pc.cast(column, target)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            continue
    return column


def _is_text(kind: pa.DataType) -> bool:
    return pa.types.is_string(kind) or pa.types.is_large_string(kind)


def _dictionary_fields(schema: pa.Schema) -> set:
    return {field.name for field in schema if pa.types.is_dictionary(field.type)}


def _pandas_index_columns(schema: pa.Schema) -> set:
    """Columns that hold a pandas index (restored as the index, not a column, by pandas)."""
    metadata = schema.pandas_metadata or {}
    return {name for name in metadata.get("index_columns", []) if isinstance(name, str)}


class _Parquet(Table):
    def __init__(self, path, kind, role):
        super().__init__(path, kind, role)
        import pyarrow.parquet as pq

        self._pq = pq
        self._schema = schema = pq.read_schema(path)
        hidden = _pandas_index_columns(schema)
        self.columns = [name for name in schema.names if name not in hidden]
        self.categorical = _dictionary_fields(schema)

    def _read(self, columns, groups=frozenset()):
        text = [name for name in columns if name in groups and _is_text(self._schema.field(name).type)]
        # ParquetFile rather than read_table, which imports pyarrow.dataset (half a second).
        with self._pq.ParquetFile(self.path, memory_map=True, read_dictionary=text or None) as source:
            return source.read(columns=columns, use_threads=True)


class _Feather(Table):
    def __init__(self, path, kind, role):
        super().__init__(path, kind, role)
        import pyarrow.feather as feather

        self._feather = feather
        try:
            with pa.memory_map(str(path)) as source:
                schema = pa.ipc.open_file(source).schema
            self._stream = False
        except pa.ArrowInvalid:
            with pa.memory_map(str(path)) as source:
                schema = pa.ipc.open_stream(source).schema
            self._stream = True
        hidden = _pandas_index_columns(schema)
        self.columns = [name for name in schema.names if name not in hidden]
        self.categorical = _dictionary_fields(schema)

    def _read(self, columns, groups=frozenset()):
        if self._stream:
            with pa.memory_map(str(self.path)) as source:
                return pa.ipc.open_stream(source).read_all().select(columns)
        return self._feather.read_table(self.path, columns=columns, memory_map=True)


class _JSONLines(Table):
    """JSON Lines through pyarrow.json, then text columns as pandas.read_json(lines=True) types them."""

    def __init__(self, path, kind, role):
        super().__init__(path, kind, role)
        import pyarrow.json as pajson

        options = pajson.ReadOptions(use_threads=True, block_size=_BLOCK_SIZE)
        self._table = pajson.read_json(path, read_options=options)
        temporal = [field.name for field in self._table.schema if pa.types.is_temporal(field.type)]
        if temporal:  # pandas keeps dates as they are written: read them again as text
            text = pa.schema([(name, pa.string()) for name in temporal])
            names = self._table.schema.names
            self._table = pajson.read_json(path, read_options=options,
                                           parse_options=pajson.ParseOptions(explicit_schema=text)).select(names)
        self.columns = [str(name) for name in self._table.schema.names]

    def _read(self, columns, groups=frozenset()):
        out = {}
        for name in columns:
            column = self._table[name]
            if pa.types.is_string(column.type) or pa.types.is_large_string(column.type):
                column = _json_text(column)
            out[name] = column
        return pa.table(out)


def _json_text(column: pa.ChunkedArray) -> pa.ChunkedArray:
    """pandas.read_json turns text columns whose values all read as numbers into numbers."""
    try:
        as_float = pc.cast(column, pa.float64())
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return column
    if column.null_count == 0:
        try:
            as_int = pc.cast(column, pa.int64())
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            return as_float
        return as_int
    return as_float


class _Pandas(Table):
    """JSON and Excel: pandas reads them (as fairmedfm does); the columns then become Arrow arrays."""

    def __init__(self, path, kind, role):
        super().__init__(path, kind, role)
        import pandas as pd

        if kind == "json":
            frame = pd.read_json(path)
        else:
            import openpyxl  # noqa: F401 - a clear message when the io extra is missing

            frame = pd.read_excel(path)
        frame.columns = [str(name) for name in frame.columns]
        self._frame = frame
        self.columns = list(frame.columns)

    def _read(self, columns, groups=frozenset()):
        return pa.table({name: _from_pandas(self._frame[name]) for name in columns})


def _from_pandas(series) -> pa.Array:
    try:
        return pa.array(series, from_pandas=True)
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError):
        # Mixed values (numbers and text): keep them as the text fairmedfm would name the groups by.
        def name(value):
            if value is None or (isinstance(value, float) and np.isnan(value)):
                return None
            if isinstance(value, (float, np.floating)) and float(value).is_integer():
                return str(int(value))
            return str(value)

        return pa.array([name(v) for v in series.tolist()], type=pa.string())


def key_strings(column) -> pa.ChunkedArray:
    """Join keys as text, as pandas' ``astype(str)`` writes them (``1``, ``1.0``, ``True``); missing stays missing."""
    if isinstance(column, pa.Array):
        column = pa.chunked_array([column])
    kind = column.type
    if pa.types.is_dictionary(kind):
        return key_strings(pc.cast(column, kind.value_type))
    if pa.types.is_string(kind):
        return column
    if pa.types.is_large_string(kind) or pa.types.is_string_view(kind):
        return pc.cast(column, pa.string())
    if pa.types.is_boolean(kind):
        return pc.if_else(column, "True", "False")
    if pa.types.is_floating(kind):
        values = column.to_numpy().astype(np.float64)
        missing = np.isnan(values)
        text = values.astype(str)
        return pa.chunked_array([pa.array(text, type=pa.string(), mask=missing)])
    if pa.types.is_null(kind):
        return pa.chunked_array([pa.nulls(len(column), pa.string())])
    return pc.cast(column, pa.string())


_WORD = re.compile(r"[\s\-.]+")


def normalize_name(name: str) -> str:
    """Column name for matching: lower case, spaces, dashes and dots as underscores."""
    return _WORD.sub("_", str(name).strip().lower())
