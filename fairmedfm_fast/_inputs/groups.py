"""Sensitive attributes as integer group codes: one code per sample (intp, -1 where the value is
missing) and the group names in report order.

The one group coder of every backend: the attributes are read from whatever holds them (a DataFrame,
a mapping, Arrow and polars tables, arrays), each column is coded by
:func:`~fairmedfm_fast._inputs.value_codes.encode_values` or binned by cut points or quantiles here,
and several attributes combine into the intersectional one (whole columns by :func:`combine`; met in
pieces, by the accumulator's batches and Dask's partitions, through :func:`combination_keys`).
"""
from __future__ import annotations

import itertools
import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._util.lazy_pandas import is_pandas, pd
from .._util.threads import cores_shared, on_threads, resolve_n_jobs
from .arrays import check_memory, is_arrow, is_polars, shown, to_numpy
from .value_codes import (
    Column,
    coded_text,
    column_values,
    encode_values,
    group_name,
    is_arrow_text,
    is_numeric,
    list_codes,
    narrowest,
    order_key,
    read_column,
)

Bins = Mapping[str, int | Sequence[float]]
#: A numeric attribute with more distinct values than this looks continuous and must be binned.
MAX_NUMERIC_GROUPS = 20
#: Columns of this many values and more are coded side by side on threads.
PARALLEL_FROM = 1 << 18


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



def _deferred(values: Any) -> bool:
    """Whether a column is converted in :func:`_attribute` (on the coding threads) rather than at once:
    pyarrow and polars columns (whose conversion releases the GIL), and lists of str (whose coding by
    pandas' hash table releases it in part)."""
    return is_arrow(values) or is_polars(values) or (type(values) is list and bool(values)
                                                     and isinstance(values[0], str))


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
        # except pyarrow and polars columns, which keep their own types, and lists of str (converted
        # later, on the coding threads: :func:`_deferred`).
        columns = []
        for key, value in features.items():
            if not (isinstance(value, np.ndarray) and value.ndim == 1):
                value = _mapping_value(value, f"sensitive_features[{key!r}]")
                if not _deferred(value):
                    value = column_values(value, f"sensitive_features[{key!r}]")
            columns.append((str(key), value))
        return columns
    recoded = _recoded(features)
    if recoded is not None:
        return [("sensitive", recoded)]
    if type(features) is list and (text := list_codes(features)) is not None:
        return [("sensitive", pd.Series(coded_text(*text), name="sensitive", copy=False))]
    if is_polars(features):
        if hasattr(features, "get_columns"):  # DataFrame
            return [(str(column.name), column) for column in features.get_columns()]
        return [(str(features.name) if features.name else "sensitive", features)]
    if is_arrow(features) and hasattr(features, "column_names"):  # Table / RecordBatch
        return [(str(name), features.column(i)) for i, name in enumerate(features.column_names)]
    if is_arrow(features):
        return [("sensitive", _arrow_column(features, "sensitive_features"))]
    array = to_numpy(features, "sensitive_features")
    if array.ndim == 1:
        return [("sensitive", array)]
    if array.ndim == 2:
        return [(f"sensitive_{i}", array[:, i]) for i in range(array.shape[1])]
    raise ValueError(f"sensitive_features must be one value per sample or a (samples, attributes) table, "
                     f"got shape {array.shape}")


def attribute_columns(sensitive_features: Any) -> list[tuple[str, Column]]:
    """(attribute name, values) of each column, as :func:`encode_attributes` names and reads them
    before coding: a DataFrame's Arrow-backed text as its pandas array, a mapping's values as NumPy
    arrays or as the pyarrow and polars columns they are."""
    return _columns(sensitive_features)


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
                 else is_arrow_text(getattr(array, "_pa_array", None)))
        columns.append((str(name), array if plain else frame.iloc[:, i]))
    return columns


def _column_names(index: pd.Index) -> list:
    """``index.tolist()``, read from its Arrow array where it has one without nulls (pandas 3's text
    names: a fifth of the time)."""
    array = getattr(getattr(index, "_values", None), "_pa_array", None)
    if array is not None and not array.null_count:
        return array.to_pylist()
    return index.tolist()



def _arrow_column(value: Any, where: str) -> Any:
    """A pyarrow column as it is; a ValueError naming ``where`` for another pyarrow object (a scalar)."""
    if not hasattr(value, "__len__"):
        raise ValueError(f"{where} is a pyarrow {type(value).__name__}, not one value per sample; pass a pyarrow "
                         "Array or ChunkedArray (or a NumPy array, a list, ...)")
    return value


def _mapping_value(value: Any, where: str) -> Any:
    """One value of a mapping of attributes: pyarrow and polars columns and lists of strings as they
    are (see :func:`column_values`), a bare pandas Categorical by its codes (:func:`_recoded`), anything
    else as a 1-D NumPy array."""
    if _deferred(value):
        return _arrow_column(value, where) if is_arrow(value) else value
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
        # each column's share of the threads for its pieces (value_codes._kernel_codes): at least 2, which
        # balances 3 columns on 2 cores, and no more than the cores over the columns on a large machine
        share = max(2, -(-n_threads // len(columns)))

        def coded(name: str, values: Column) -> Attribute:
            with cores_shared(share):
                return _attribute(name, values, bins.get(name))

        attributes = on_threads([lambda name=name, values=values: coded(name, values) for name, values in columns],
                                n_threads)
    else:
        attributes = [_attribute(name, values, bins.get(name)) for name, values in columns]
    if intersectional and len(attributes) > 1:
        attributes.append(combine(attributes))  # its name is longer than any other: no clash
    return attributes


def _attribute(name: str, values: Column, bins: Any) -> Attribute:
    """One attribute column coded: cut at ``bins`` when given, else by its distinct values."""
    if not isinstance(values, np.ndarray) and _deferred(values):
        text, values = read_column(values)
        if text is None:  # (a list comes from a mapping: named as its value)
            values = column_values(values, f"sensitive_features[{name!r}]" if type(values) is list else name)
        elif bins is None:  # coded as read: in report order already
            return Attribute(name, *text)
        else:  # (cut into bins as the strings would be: they are not numbers)
            values = pd.Series(coded_text(*text), name=name, copy=False)
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
    return [(name, is_numeric(column_values(values, name) if _deferred(values) else values))
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
            values = column_values(values, name)
        dtype = values.dtype
        if isinstance(dtype, pd.CategoricalDtype):
            dtype = dtype.categories.dtype
        kind = _KINDS.get(getattr(dtype, "kind", "O"))
        if kind is None:  # objects, strings: what they hold
            inferred = pd.api.types.infer_dtype(values, skipna=True)
            kind = _INFERRED.get(inferred, "text")
        kinds.append((name, kind))
    return kinds
