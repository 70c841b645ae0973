"""Arrow tables as the inputs of ``evaluate``, for the command line.

:class:`Layout` joins the predictions table with a metadata table and reads only the columns in
use; the functions turn Arrow columns into labels, scores, sensitive attributes and file paths
without a Python object per row. pyarrow and pandas are imported inside the functions, so that
importing this module (``fairmedfm-fast --help``) costs nothing.
"""
from __future__ import annotations

from pathlib import Path

from .columns import ID_NAMES, UsageError, normalize, preview


class Layout:
    """The columns the user sees (the predictions table, joined with the metadata table if given).

    Knows, for each visible column, which table and which source column it comes from, so that only
    the columns in use are read, and reads and joins them in :meth:`read`.
    """

    def __init__(self, predictions, metadata=None, on=None):
        self.predictions, self.metadata = predictions, metadata
        self.origin = {name: ("left", name) for name in predictions.columns}
        self.columns = list(predictions.columns)
        self.notes = []
        self.join = None  # counts of the last join, for the report's settings
        if metadata is None:
            return
        left_names, right_names = predictions.columns, metadata.columns
        if on and "=" in on:
            left, right = (part.strip() for part in on.split("=", 1))
        elif on:
            left = right = on
        else:
            shared = [c for c in left_names if c in set(right_names)]
            candidates = [c for c in shared if normalize(c) in ID_NAMES] or shared
            if len(candidates) != 1:
                raise UsageError(
                    "cannot tell which column joins the predictions and the metadata "
                    f"({'shared columns: ' + ', '.join(shared) if shared else 'they share no column name'}); "
                    "pass --on COLUMN, or --on PRED_COLUMN=METADATA_COLUMN")
            left = right = candidates[0]
        if left not in left_names:
            raise UsageError(f"--on: the predictions table has no column {left!r}; its columns are: "
                             f"{preview(left_names)}")
        if right not in right_names:
            raise UsageError(f"--on: the metadata table has no column {right!r}; its columns are: "
                             f"{preview(right_names)}")
        self.left_key, self.right_key = left, right
        taken = set(left_names)
        for name in right_names:
            if name == right and left == right:
                continue
            visible = name + "_metadata" if name in taken else name
            self.origin[visible] = ("right", name)
            self.columns.append(visible)

    def is_categorical(self, name) -> bool:
        """Whether the visible column ``name`` is stored as a categorical (groups in category order)."""
        side, source = self.origin[name]
        return source in (self.predictions if side == "left" else self.metadata).categorical

    def read(self, wanted, groups=()):
        """The ``wanted`` visible columns as a pyarrow Table, joined if there is metadata.

        Columns in ``groups`` (the sensitive attributes) may come back dictionary-encoded.
        """
        import pyarrow as pa

        wanted = list(dict.fromkeys(wanted))
        left = [self.origin[name][1] for name in wanted if self.origin[name][0] == "left"]
        left_groups = [self.origin[name][1] for name in groups if self.origin[name][0] == "left"]
        if self.metadata is None:
            return self.predictions.read(left, left_groups).select(wanted)
        import pyarrow.compute as pc

        from .tables import key_strings

        right = [self.origin[name][1] for name in wanted if self.origin[name][0] == "right"]
        right_groups = [self.origin[name][1] for name in groups if self.origin[name][0] == "right"]
        left_table = self.predictions.read(left + [self.left_key], set(left_groups) - {self.left_key})
        right_table = self.metadata.read(right + [self.right_key], set(right_groups) - {self.right_key})
        left_keys = key_strings(left_table[self.left_key])
        right_keys = key_strings(right_table[self.right_key])
        n_distinct = pc.count_distinct(right_keys, mode="all").as_py()
        if n_distinct < len(right_keys):
            counts = pc.value_counts(right_keys)
            repeated = counts.filter(pc.greater(counts.field("counts"), 1)).field("values")[:3].to_pylist()
            raise UsageError(f"the metadata column {self.right_key!r} repeats values ({', '.join(map(repr, repeated))}"
                             f"{', ...' if len(right_keys) - n_distinct > 3 else ''}); each sample needs exactly "
                             "one metadata row: remove the duplicates or join on another column with --on")
        position = pc.index_in(left_keys, value_set=right_keys, skip_nulls=False)
        matched = position.is_valid()
        n_matched = pc.sum(matched).as_py() or 0
        if n_matched == 0:
            raise UsageError(
                f"no row of the predictions matches the metadata on {self.left_key!r}={self.right_key!r} "
                f"(predictions: {examples(left_keys)}; metadata: {examples(right_keys)}); check --on, "
                "and that both tables write the IDs the same way")
        take = position.filter(matched)
        columns = {}
        for name in wanted:
            side, source = self.origin[name]
            if side == "left":
                column = left_keys if source == self.left_key else left_table[source]
                columns[name] = column.filter(matched) if n_matched < len(left_table) else column
            else:
                column = right_keys if source == self.right_key else right_table[source]
                columns[name] = column.take(take)
        self.join = {"on": self.left_key if self.left_key == self.right_key else f"{self.left_key}={self.right_key}",
                     "prediction_rows": len(left_table), "metadata_rows": len(right_table), "joined_rows": n_matched}
        self.notes.append(f"joined the predictions with the metadata on {self.left_key!r}={self.right_key!r}: "
                          f"{n_matched} rows")
        if n_matched < len(left_table):
            self.notes.append(f"{len(left_table) - n_matched} prediction rows have no metadata row and were "
                              "left out")
        return pa.table(columns)


def examples(keys, limit: int = 3) -> str:
    values = keys.drop_null()[:limit].to_pylist()
    return ", ".join(map(repr, values)) if values else "no values"


def is_missing(column):
    import pyarrow.compute as pc

    return pc.is_null(column, nan_is_null=True)


def typed_pos_label(value, column):
    """``--pos-label`` as a value of the label column's type (1 for integers, True for booleans)."""
    if value is None:
        return None
    import pyarrow as pa

    from .._inputs.arrays import label_from_text

    kind = column.type
    if pa.types.is_dictionary(kind):
        kind = kind.value_type
    number = pa.types.is_integer(kind) or pa.types.is_floating(kind) or pa.types.is_null(kind)
    return label_from_text(value, pa.types.is_boolean(kind), number)


def float_matrix(table, names):
    """Several numeric score columns as one (n_samples, n_columns) float64 array."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    out = np.empty((table.num_rows, len(names)), dtype=np.float64)
    for j, name in enumerate(names):
        column = table[name]
        require_numeric(column, name)
        out[:, j] = pc.cast(column, pa.float64()).to_numpy()
    return out


def attribute_values(column, categorical: bool):
    """A sensitive attribute column for ``evaluate``, coded cheaply and named as pandas would be.

    - Columns stored as dictionaries (``categorical``: pandas categoricals saved to Parquet or
      Feather) become pandas Categoricals over the dictionary indices, keeping the category order
      that ``pandas.read_parquet`` gives them.
    - Text columns (dictionary-encoded or not) become Categoricals whose categories are the distinct
      values in group order, so that ``evaluate`` codes them without hashing every row again.
    - Numbers become NumPy arrays (missing values as NaN, as in pandas); anything else stays Arrow.
    """
    import pyarrow as pa

    kind = column.type
    categorical = categorical and pa.types.is_dictionary(kind)  # (a join key is read back as text)
    if pa.types.is_integer(kind) or pa.types.is_floating(kind):
        if isinstance(column, pa.ChunkedArray):
            column = column.combine_chunks() if column.num_chunks != 1 else column.chunk(0)
        return column.to_numpy(zero_copy_only=False)
    text = pa.types.is_string(kind) or pa.types.is_large_string(kind)
    if not (text or (pa.types.is_dictionary(kind) and (categorical or pa.types.is_string(kind.value_type)
                                                         or pa.types.is_large_string(kind.value_type)))):
        return column
    import numpy as np
    import pandas as pd
    import pyarrow.compute as pc

    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks() if column.num_chunks != 1 else column.chunk(0)
    if text:
        column = pc.dictionary_encode(column)
    categories, indices = column.dictionary, column.indices
    if categories.null_count or pc.count_distinct(categories).as_py() < len(categories):
        return column  # unusual dictionaries: let evaluate hash the values
    if indices.null_count:
        codes = pc.fill_null(indices, -1).to_numpy(zero_copy_only=False)
    else:
        codes = indices.to_numpy(zero_copy_only=False)
    if not categorical:  # categories in group order, as evaluate orders values
        from .._inputs.value_codes import order_key

        values = categories.to_pylist()
        order = sorted(range(len(values)), key=lambda i: order_key(values[i]))
        rank = np.empty(len(values) + 1, dtype=np.min_scalar_type(-len(values) - 1))
        rank[order] = np.arange(len(values))
        rank[-1] = -1  # a missing value (code -1) stays missing
        codes = rank[codes]
        categories = categories.take(pa.array(order, pa.int64()))
    return pd.Series(pd.Categorical.from_codes(codes, categories=pd.Index(categories.to_pandas()),
                                               validate=False), copy=False)


def text_labels(column, pos_label, scores, score_column, label):
    """Text (or dictionary) labels as 0/1 without a Python string per row.

    Returns ``(labels, score_column, info)``: booleans for ``pos_label``, the column of the positive
    class among several scores in sorted class order (as ``evaluate`` would pick it), and the
    metadata that ``evaluate`` would have recorded. ``None`` for labels of any other type.
    """
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    kind = column.type
    if pa.types.is_dictionary(kind):
        if not (pa.types.is_string(kind.value_type) or pa.types.is_large_string(kind.value_type)):
            return None
        if isinstance(column, pa.ChunkedArray):
            column = column.unify_dictionaries()
            column = column.chunk(0) if column.num_chunks == 1 else pa.concat_arrays(column.chunks)
    elif pa.types.is_string(kind) or pa.types.is_large_string(kind) or pa.types.is_string_view(kind):
        column = pc.dictionary_encode(column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column)
    else:
        return None
    indices = column.indices.to_numpy(zero_copy_only=False)
    dictionary = column.dictionary.to_pylist()
    present = np.bincount(indices, minlength=len(dictionary)) > 0
    classes = [value for value, here in zip(dictionary, present) if here]
    shown = ", ".join(map(repr, sorted(classes)[:8])) + (", ..." if len(classes) > 8 else "")
    if pos_label is None:
        raise UsageError(f"the label column {label!r} holds {shown}, not 0/1; name the positive class with "
                         "--pos-label VALUE (every other value counts as negative)")
    if pos_label not in classes:
        raise UsageError(f"--pos-label {pos_label!r} does not occur in the label column {label!r}, which holds "
                         f"{shown}; pass one of those")
    positive = indices == dictionary.index(pos_label)
    info = {"pos_label": pos_label}
    if len(classes) > 2:
        info["one_vs_rest"] = True
    if score_column is None and scores > 1 and len(classes) == scores:
        score_column = sorted(classes).index(pos_label)
    return np.asarray(positive), score_column, info


def require_numeric(column, name):
    import pyarrow as pa

    kind = column.type
    if not (pa.types.is_integer(kind) or pa.types.is_floating(kind) or pa.types.is_boolean(kind)
            or pa.types.is_decimal(kind) or pa.types.is_null(kind)):
        import pyarrow.compute as pc

        sample = pc.unique(pc.drop_null(column)).to_pylist()[:3]  # distinct examples, first seen first
        raise UsageError(f"score column {name!r} holds {kind} values such as {sample}, not numbers; "
                         "point --score at the probability or logit columns")


def attributes(layout, table, sensitive):
    """The sensitive attributes for ``evaluate``: a DataFrame when one of them became a pandas
    Categorical (``evaluate`` reads a dict's values as plain arrays, as fairmedfm does, but a
    DataFrame's categorical columns in category order), else a dict of columns."""
    import pyarrow as pa
    import pyarrow.compute as pc

    for name in sensitive:
        column = table[name]
        if pa.types.is_nested(column.type):
            raise UsageError(f"the sensitive attribute {name!r} holds {column.type} values; it needs one plain "
                             "value (a string or a number) per row")
        if column.null_count == len(column) or pc.sum(is_missing(column)).as_py() == len(column):
            raise UsageError(f"the sensitive attribute {name!r} has no values (all {len(column)} rows are "
                             "missing); leave it out of --sensitive")
    columns = {name: attribute_values(table[name], layout.is_categorical(name)) for name in sensitive}
    if not any(type(column).__module__.startswith("pandas") for column in columns.values()):
        return columns
    import numpy as np
    import pandas as pd

    def series(column):
        if type(column).__module__.startswith("pandas") or isinstance(column, np.ndarray):
            return column
        if hasattr(column, "combine_chunks"):
            column = column.combine_chunks()
        return pd.Series(pd.arrays.ArrowExtensionArray(column), copy=False)

    return pd.DataFrame({name: series(column) for name, column in columns.items()}, copy=False)


def file_columns(table, path, options) -> dict:
    """Per ``(option, column)``: the column's file paths, relative to the table's folder."""
    base = Path(path).resolve().parent
    files = {}
    for option, name in options:
        values = table[name].to_pylist()  # one file per sample anyway
        if any(not isinstance(v, str) or not v for v in values):
            row = next(i for i, v in enumerate(values) if not isinstance(v, str) or not v)
            raise UsageError(f"{option} column {name!r} has no file path in row {row + 1} ({values[row]!r}); "
                             "every sample needs a file")
        files[option] = [base / v for v in values]
    return files
