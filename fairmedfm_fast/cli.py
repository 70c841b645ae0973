"""Command line: ``fairmedfm-fast score`` (and ``python -m fairmedfm_fast score``).

The options, defaults, column detection, printed JSON and notes follow ``fairmedfm score`` 0.4.2.
Tables are read with pyarrow (see :mod:`fairmedfm_fast._tables`), only the columns in use, and the
columns reach :func:`fairmedfm_fast.evaluate` as Arrow arrays. This module imports only the standard
library at import time, so that ``--help`` and ``--version`` answer at once.
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

PROG = "fairmedfm-fast"

EPILOG = f"""examples:
  {PROG} score predictions.csv --sensitive sex age --bins age=40,60
  {PROG} score predictions.parquet --metadata patients.csv --on image_id --sensitive sex race
  {PROG} score preds.csv --label diagnosis --pos-label malignant --score prob_benign prob_malignant
  {PROG} score dice.csv --sensitive sex
  {PROG} score masks.csv --pred-mask pred_path --true-mask gt_path --sensitive sex

Columns are recognised by their usual names (label, target, y_true; prob, score, y_score, logit;
prob_0, prob_1, ...; dice; pred_mask, gt_mask) unless named with --label, --score, --dice,
--pred-mask and --true-mask. Tables: CSV, TSV, Parquet, Feather/Arrow, JSON, JSON Lines, Excel;
CSV, TSV and JSON files may be gzip-compressed (.csv.gz)."""

# Column roles and the names (after lower-casing; spaces, dots and dashes read as "_") that find them.
ROLE_NAMES = {
    "label": ("label", "labels", "y_true", "ytrue", "y", "target", "targets", "truth", "true_label",
              "gt", "ground_truth", "groundtruth"),
    "score": ("prob", "probs", "probability", "proba", "p", "y_prob", "y_proba", "pred_prob", "y_score",
              "score", "scores", "prediction", "predictions", "pred", "y_pred", "output", "logit", "logits"),
    "dice": ("dice", "dsc", "dice_score", "dice_coefficient"),
    "pred_mask": ("pred_mask", "mask_pred", "predicted_mask", "prediction_mask", "pred_mask_path",
                  "pred_path", "segmentation"),
    "true_mask": ("true_mask", "gt_mask", "mask_gt", "label_mask", "target_mask", "ground_truth_mask",
                  "gt_mask_path", "gt_path", "mask"),
}
# Numbered score columns (prob_0, prob_1, ... or logit0, logit1, ...) start with one of these.
SCORE_STEMS = ("prob", "probs", "probability", "proba", "p", "y_prob", "y_score", "score", "scores",
               "logit", "logits", "pred", "output")
SENSITIVE_NAMES = ("sex", "gender", "age", "age_group", "race", "ethnicity", "language", "site", "hospital",
                   "scanner", "insurance", "skin_type", "fitzpatrick")
ID_NAMES = ("id", "image_id", "img_id", "image", "image_path", "path", "file", "filename", "file_name", "name",
            "case_id", "patient_id", "subject_id", "sample_id", "study_id")


class UsageError(ValueError):
    """A problem with the command line or the tables, worded for the command line."""


class _Parser(argparse.ArgumentParser):
    """argparse, with its errors as the one line every other error gets."""

    def error(self, message):
        self.exit(2, f"{PROG}: error: {message} (see {self.prog} --help)\n")


def _version() -> str:
    from ._version import __version__

    return __version__


class _Version(argparse.Action):
    """--version, looking the version up only when asked."""

    def __init__(self, option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS, help=None):
        super().__init__(option_strings, dest=dest, default=default, nargs=0, help=help)

    def __call__(self, parser, namespace, values, option_string=None):
        print(f"{PROG} {_version()}")
        parser.exit(0)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``fairmedfm-fast``."""
    parser = _Parser(prog=PROG, description="Fast, exact group-fairness metrics for classification and "
                     "segmentation models (the FairMedFM metrics).")
    parser.add_argument("--version", action=_Version, help="print the version and exit")
    commands = parser.add_subparsers(dest="command", required=True, metavar="{score,warmup}", parser_class=_Parser)
    score = commands.add_parser(
        "score", help="fairness metrics from a table with one row per sample",
        description="Fairness metrics from a table with one row per sample (predictions, labels and "
        "sensitive attributes; or Dice scores or mask files).",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    from . import warmup

    warmup.add_arguments(commands.add_parser(
        "warmup", help="compile every kernel into the on-disk cache (for container images)",
        description=warmup.__doc__.splitlines()[0]))
    score.add_argument("predictions", nargs="?", type=Path, help="the table, one row per sample")
    score.add_argument("--input", "--predictions", dest="input", type=Path, help=argparse.SUPPRESS)

    data = score.add_argument_group("data")
    data.add_argument("--metadata", type=Path, metavar="TABLE",
                      help="a second table with the sensitive attributes, joined to the first on --on")
    data.add_argument("--on", metavar="COLUMN",
                      help="the join column, or PRED_COLUMN=METADATA_COLUMN if it is named differently "
                      "(default: the one ID-like column both tables have)")
    data.add_argument("--sensitive", nargs="+", metavar="COLUMN",
                      help="sensitive attribute columns (default: the columns named sex, gender, age, race, "
                      "ethnicity, site, ...)")
    data.add_argument("--bins", action="append", default=[], metavar="COLUMN=SPEC",
                      help="group a numeric attribute by cut points (age=40,60 gives <40, 40-60, >=60) or "
                      "into quantile groups (age=q4); repeat for several attributes")
    data.add_argument("--intersectional", action="store_true",
                      help="also evaluate the combinations of the attributes (e.g. 'F & >=60')")
    data.add_argument("--task", choices=["auto", "cls", "seg"], default="auto",
                      help="cls (binary classification) or seg (segmentation); default: from the columns")

    cls = score.add_argument_group("classification")
    cls.add_argument("--label", "--label-col", dest="label", metavar="COLUMN", help="the ground-truth column")
    cls.add_argument("--score", "--prob-col", dest="score", nargs="+", metavar="COLUMN",
                     help="the score column (a probability or logit of the positive class), or one column "
                     "per class")
    cls.add_argument("--pos-label", metavar="VALUE",
                     help="the positive class, when the labels are not 0/1 or true/false")
    cls.add_argument("--score-type", choices=["auto", "probability", "logit"], default="auto",
                     help="probabilities, or logits (sigmoid/softmax applied); default: probabilities "
                     "when all scores are within [0, 1]")
    cls.add_argument("--score-column", type=int, metavar="INDEX",
                     help="with several --score columns, the position (from 0) of the positive class "
                     "(default: the column named after --pos-label, else sorted class order)")

    seg = score.add_argument_group("segmentation")
    seg.add_argument("--dice", "--dice-col", dest="dice", metavar="COLUMN", help="a per-sample Dice column")
    seg.add_argument("--pred-mask", metavar="COLUMN",
                     help="a column of predicted mask files (paths relative to the table)")
    seg.add_argument("--true-mask", metavar="COLUMN",
                     help="a column of ground-truth mask files (paths relative to the table)")
    seg.add_argument("--mask-label", metavar="VALUE",
                     help="the class to evaluate in multi-class masks (default: any non-zero value)")
    seg.add_argument("--mask-threshold", type=float, default=0.5, metavar="T",
                     help="foreground threshold for probability masks (default 0.5)")
    seg.add_argument("--empty-score", type=float, default=1.0, metavar="D",
                     help="Dice when both masks of a sample are empty (default 1; torchmetrics gives 0)")

    voxels = score.add_argument_group("voxels (voxel-level classification of score maps, with --true-mask)")
    voxels.add_argument("--score-map", metavar="COLUMN",
                        help="a column of score map files (.npy, .nii.gz, ...; probabilities or uint8 / 255)")
    voxels.add_argument("--roi-mask", metavar="COLUMN", help="a column of ROI mask files: only their voxels count")
    voxels.add_argument("--max-memory", metavar="SIZE", help="memory for the voxel records, e.g. 2GB")

    more = score.add_argument_group("beyond fairmedfm score")
    more.add_argument("--metrics", nargs="+", metavar="M",
                      help="segmentation from masks: any of dice hd95 hd assd nsd, per group (e.g. --metrics dice "
                      "hd95 nsd --nsd-tolerance 2); default: Dice only")
    more.add_argument("--nsd-tolerance", type=float, metavar="MM", help="NSD tolerance, in the unit of the spacing")
    more.add_argument("--percentile", type=float, metavar="P", help="percentile of the hd95 column (default 95)")
    more.add_argument("--spacing", type=float, nargs="+", metavar="S",
                      help="voxel size per axis (default: the NIfTI header of the ground truth, else 1)")
    more.add_argument("--threshold", type=float, metavar="T",
                      help="classification: a fixed decision threshold (e.g. chosen on validation data) for "
                      "the @best_f1 metrics, instead of the best-F1 threshold of this table")
    more.add_argument("--bootstrap", type=int, default=0, metavar="N",
                      help="N bootstrap resamples, each attribute's within its own groups: 95%% intervals "
                      "for every summary metric")
    more.add_argument("--permutations", type=int, default=0, metavar="N",
                      help="N permutations of the group labels: a p-value for every gap")
    more.add_argument("--seed", type=int, metavar="S", help="random seed of --bootstrap and --permutations")
    more.add_argument("--min-group-size", type=int, metavar="N",
                      help="skip groups of fewer than N samples (reported, left out of the gaps)")
    more.add_argument("--p-adjust", choices=["holm", "bonferroni"],
                      help="adjust the --permutations p-values over every gap and attribute")
    more.add_argument("--plot", type=Path, metavar="FILE.png", help="also save a figure (see --plot-kind)")
    more.add_argument("--plot-kind", choices=["roc", "reliability", "bars", "dice"], metavar="KIND",
                      help="roc, reliability, bars or dice (default: roc for classification, dice for "
                      "segmentation)")
    more.add_argument("--html", type=Path, metavar="FILE.html",
                      help="also save a self-contained HTML report (tables, figures, warnings)")

    run = score.add_argument_group("engine")
    run.add_argument("--engine", choices=["memory", "dask"], default="memory",
                     help="'dask' scores a Parquet dataset (a file, a folder or a glob) on a Dask cluster, "
                          "without loading it into this process (needs pip install 'dask[dataframe]' distributed)")
    run.add_argument("--scheduler", metavar="ADDRESS",
                     help="with --engine dask: the Dask scheduler, e.g. tcp://10.0.0.5:8786 (default: a "
                          "local cluster, one worker process per core)")

    out = score.add_argument_group("output")
    out.add_argument("--output", type=Path, metavar="FILE",
                     help="also write the full report (.json) or the per-group table (.csv)")
    out.add_argument("--format", choices=["json", "table"], default="json",
                     help="print the per-attribute summary as JSON (default) or as a table")
    return parser


# ----------------------------------------------------------------------------------------------------
# Progress on a terminal


def _step(what: str):
    """``fairmedfm-fast: <what> ... <time so far>`` on stderr once a step takes over ~2 s (terminals only)."""
    from ._progress import Progress

    return Progress(None, f"{PROG}: {what}")


# ----------------------------------------------------------------------------------------------------
# Columns


def _normalize(name) -> str:
    from ._tables import normalize_name

    return normalize_name(name)


def _preview(columns, limit: int = 30) -> str:
    shown = ", ".join(map(str, columns[:limit]))
    return shown + (f", ... ({len(columns)} columns)" if len(columns) > limit else "")


def find_column(columns, role: str, required: bool = True):
    """The one column whose name is a usual name for ``role``, or None (or an error when required)."""
    names = ROLE_NAMES[role]
    found = [c for c in columns if _normalize(c) in names]
    option = "--" + role.replace("_", "-")
    what = role.replace("_", " ")
    if len(found) > 1:
        raise UsageError(f"more than one column could be the {what} ({', '.join(found)}); "
                         f"pick one with {option}")
    if not found and required:
        raise UsageError(f"found no {what} column; name it with {option} COLUMN (columns: {_preview(columns)})")
    return found[0] if found else None


def find_scores(columns):
    """The score column, or the numbered score columns (prob_0, prob_1, ...) in number order, or None."""
    import re

    single = find_column(columns, "score", required=False)
    if single:
        return [single]
    pattern = re.compile("(" + "|".join(map(re.escape, SCORE_STEMS)) + r")_?(\d+)")
    families: dict = {}
    for column in columns:
        match = pattern.fullmatch(_normalize(column))
        if match:
            families.setdefault(match.group(1), []).append((int(match.group(2)), column))
    if len(families) > 1:
        raise UsageError(f"found several sets of numbered score columns ({', '.join(sorted(families))}); "
                         "pick the columns with --score")
    if families:
        return [column for _, column in sorted(next(iter(families.values())))]
    return None


def find_sensitive(columns):
    found = [c for c in columns if _normalize(c) in SENSITIVE_NAMES]
    if not found:
        raise UsageError("found no sensitive attribute column (sex, age, race, ...); name them with "
                         f"--sensitive COLUMN ... (columns: {_preview(columns)})")
    return found


def require(columns, wanted, option: str) -> None:
    known = set(columns)
    missing = [c for c in wanted if c not in known]
    if missing:
        raise UsageError(f"{option} names {', '.join(map(repr, missing))}, which the table does not have; "
                         f"the columns are: {_preview(columns)}")


def parse_bins(spec: str):
    """``COLUMN=40,60`` (cut points) or ``COLUMN=q4`` (quantile groups) -> (column, points or count)."""
    column, equals, value = spec.partition("=")
    value = value.strip().lower()
    fix = f"write --bins {column or 'COLUMN'}=40,60 (cut points) or --bins {column or 'COLUMN'}=q4 (quartiles)"
    if not column or not equals or not value:
        raise UsageError(f"--bins {spec!r} is not COLUMN=SPEC; {fix}")
    try:
        if value.startswith("q"):
            return column, int(value[1:])
        points = [float(p) for p in value.split(",") if p.strip()]
    except ValueError:
        raise UsageError(f"--bins {spec!r}: {value!r} is neither cut points nor qN; {fix}") from None
    if not points:
        raise UsageError(f"--bins {spec!r} has no cut points; {fix}")
    return column, points


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
        if metadata is None:
            return
        left_names, right_names = predictions.columns, metadata.columns
        if on and "=" in on:
            left, right = (part.strip() for part in on.split("=", 1))
        elif on:
            left = right = on
        else:
            shared = [c for c in left_names if c in set(right_names)]
            candidates = [c for c in shared if _normalize(c) in ID_NAMES] or shared
            if len(candidates) != 1:
                raise UsageError(
                    "cannot tell which column joins the predictions and the metadata "
                    f"({'shared columns: ' + ', '.join(shared) if shared else 'they share no column name'}); "
                    "pass --on COLUMN, or --on PRED_COLUMN=METADATA_COLUMN")
            left = right = candidates[0]
        if left not in left_names:
            raise UsageError(f"--on: the predictions table has no column {left!r}; its columns are: "
                             f"{_preview(left_names)}")
        if right not in right_names:
            raise UsageError(f"--on: the metadata table has no column {right!r}; its columns are: "
                             f"{_preview(right_names)}")
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

        from ._tables import key_strings

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
                f"(predictions: {_examples(left_keys)}; metadata: {_examples(right_keys)}); check --on, "
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
        self.notes.append(f"joined the predictions with the metadata on {self.left_key!r}={self.right_key!r}: "
                          f"{n_matched} rows")
        if n_matched < len(left_table):
            self.notes.append(f"{len(left_table) - n_matched} prediction rows have no metadata row and were "
                              "left out")
        return pa.table(columns)


def _examples(keys, limit: int = 3) -> str:
    values = keys.drop_null()[:limit].to_pylist()
    return ", ".join(map(repr, values)) if values else "no values"


# ----------------------------------------------------------------------------------------------------
# Values


def _missing(column):
    import pyarrow.compute as pc

    return pc.is_null(column, nan_is_null=True)


def typed_pos_label(value, column):
    """``--pos-label`` as a value of the label column's type (1 for integers, True for booleans)."""
    if value is None:
        return None
    import pyarrow as pa

    from ._inputs import label_from_text

    kind = column.type
    if pa.types.is_dictionary(kind):
        kind = kind.value_type
    number = pa.types.is_integer(kind) or pa.types.is_floating(kind) or pa.types.is_null(kind)
    return label_from_text(value, pa.types.is_boolean(kind), number)


def _mask_value(value):
    if value is None:
        return None
    try:
        number = float(value)
    except ValueError:
        return value
    return int(number) if number.is_integer() else number


def _float_matrix(table, names):
    """Several numeric score columns as one (n_samples, n_columns) float64 array."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    out = np.empty((table.num_rows, len(names)), dtype=np.float64)
    for j, name in enumerate(names):
        column = table[name]
        _require_numeric(column, name)
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
        from ._inputs import _order_key

        values = categories.to_pylist()
        order = sorted(range(len(values)), key=lambda i: _order_key(values[i]))
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


def _require_numeric(column, name):
    import pyarrow as pa

    kind = column.type
    if not (pa.types.is_integer(kind) or pa.types.is_floating(kind) or pa.types.is_boolean(kind)
            or pa.types.is_decimal(kind) or pa.types.is_null(kind)):
        import pyarrow.compute as pc

        sample = pc.drop_null(column)[:3].to_pylist()
        raise UsageError(f"score column {name!r} holds {kind} values such as {sample}, not numbers; "
                         "point --score at the probability or logit columns")


# ----------------------------------------------------------------------------------------------------
# The score command


def score(args):
    """Read the table(s), work out the columns and evaluate. Returns ``(report, notes)``."""
    from . import _tables

    path = args.predictions or args.input
    if path is None:
        raise UsageError(f"give the predictions table, e.g. {PROG} score predictions.csv --sensitive sex")
    if args.engine == "dask":
        from .dask import score_command

        return score_command(args)
    if args.scheduler:
        raise UsageError("--scheduler needs --engine dask")
    with _step(f"opening {path}"):
        predictions = _tables.open_table(path, "the predictions table")
        metadata = _tables.open_table(args.metadata, "the metadata table") if args.metadata else None
    layout = Layout(predictions, metadata, args.on)
    columns = layout.columns
    notes = []

    sensitive = list(args.sensitive) if args.sensitive else find_sensitive(columns)
    notes.append(f"sensitive attributes: {', '.join(sensitive)}")
    require(columns, sensitive, "--sensitive")
    bins = dict(parse_bins(spec) for spec in args.bins)
    unknown = [name for name in bins if name not in sensitive]
    if unknown:
        raise UsageError(f"--bins names {', '.join(map(repr, unknown))}, which is not a sensitive attribute "
                         f"({', '.join(sensitive)}); add it to --sensitive or fix the name")

    dice = args.dice or find_column(columns, "dice", required=False)
    pred_mask = args.pred_mask or find_column(columns, "pred_mask", required=False)
    true_mask = args.true_mask or find_column(columns, "true_mask", required=False)
    label = args.label or find_column(columns, "label", required=False)
    scores = args.score or find_scores(columns)
    task = args.task
    if task == "auto" and not args.score_map:
        segmentation = bool(dice or (pred_mask and true_mask))
        classification = bool(label and scores)
        if segmentation and classification:
            raise UsageError("the table has both classification columns (label, score) and segmentation "
                             "columns (Dice or masks); choose with --task cls or --task seg")
        if not (segmentation or classification):
            raise UsageError("found no prediction columns; name them with --label and --score "
                             "(classification), or --dice, or --pred-mask and --true-mask (segmentation); "
                             f"columns: {_preview(columns)}")
        task = "seg" if segmentation else "cls"

    if args.score_map:
        report = _voxels(args, layout, path, sensitive, bins, true_mask, notes)
    elif task == "cls":
        report = _classification(args, layout, sensitive, bins, label, scores, notes)
    else:
        report = _segmentation(args, layout, path, sensitive, bins, dice, pred_mask, true_mask, notes)
    report.metadata["input"] = str(path)
    return report, layout.notes + notes


def _read(layout, wanted, groups):
    with _step("reading " + ", ".join(map(str, filter(None, [
            layout.predictions.path, layout.metadata.path if layout.metadata else None])))):
        return layout.read(wanted, groups)


def _attributes(layout, table, sensitive):
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
        if column.null_count == len(column) or pc.sum(_missing(column)).as_py() == len(column):
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


def _extensions(args, function, task: str) -> dict:
    """Keyword arguments of the options beyond ``fairmedfm score`` that were given."""
    import inspect

    wanted = {}
    if args.threshold is not None:
        wanted["threshold"] = ("--threshold", args.threshold)
    for option, name, value in (("--bootstrap", "n_boot", args.bootstrap),
                                ("--permutations", "n_permutations", args.permutations)):
        if value < 0:
            raise UsageError(f"{option} {value}: give a number of resamples, 0 or more (e.g. {option} 1000)")
        if value:
            wanted[name] = (option, value)
    if args.seed is not None and (args.bootstrap or args.permutations):
        wanted["random_state"] = ("--seed", args.seed)
    if args.min_group_size is not None:
        if args.min_group_size < 1:
            raise UsageError(f"--min-group-size {args.min_group_size}: give a number of samples, 1 or more")
        wanted["min_group_size"] = ("--min-group-size", args.min_group_size)
    if args.p_adjust is not None and args.permutations:
        wanted["p_adjust"] = ("--p-adjust", args.p_adjust)
    for option, name in (("--metrics", "metrics"), ("--nsd-tolerance", "nsd_tolerance"),
                         ("--percentile", "percentile"), ("--spacing", "spacing")):
        if getattr(args, name) is not None:
            wanted[name] = (option, getattr(args, name))
    accepted = inspect.signature(function).parameters
    for name, (option, _) in wanted.items():
        if name not in accepted:
            raise UsageError(f"{option} does not apply to {task} in this version; leave it out")
    return {name: value for name, (_, value) in wanted.items()}


def _classification(args, layout, sensitive, bins, label, scores, notes):
    import pyarrow.compute as pc

    columns = layout.columns
    label = label or find_column(columns, "label")
    if not scores:
        raise UsageError(f"found no score column; name it with --score COLUMN (columns: {_preview(columns)})")
    require(columns, [label, *scores], "--label/--score")
    notes.append(f"classification: label column {label!r}, score column(s) {', '.join(map(repr, scores))}")
    table = _read(layout, [label, *scores, *sensitive], [s for s in sensitive if s not in (label, *scores)])
    for name in scores:
        _require_numeric(table[name], name)
    missing = _missing(table[label])
    for name in scores:
        missing = pc.or_(missing, _missing(table[name]))
    n_missing = pc.sum(missing).as_py() or 0
    if n_missing:
        notes.append(f"left out {n_missing} rows with a missing label or score")
        table = table.filter(pc.invert(missing))
    if table.num_rows == 0:
        raise UsageError(f"no row has both a label ({label!r}) and a score; check the columns")
    if len(scores) == 1:
        y_score = table[scores[0]]
    else:
        y_score = _float_matrix(table, scores)
    score_column = args.score_column
    if score_column is None and args.pos_label is not None and len(scores) > 1:
        wanted = _normalize(args.pos_label)
        named = [i for i, name in enumerate(scores) if wanted in _normalize(name)]
        if len(named) == 1:
            score_column = named[0]
            notes.append(f"positive class {args.pos_label!r}: score column {scores[score_column]!r}")
    y_true, pos_label = table[label], typed_pos_label(args.pos_label, table[label])
    label_info = None
    text = text_labels(y_true, pos_label, len(scores), score_column, label)
    if text is not None:
        y_true, score_column, label_info = text
        pos_label = None
    from . import evaluate

    with _step(f"scoring {table.num_rows:,} samples"):
        report = evaluate(y_true, y_score, _attributes(layout, table, sensitive),
                          pos_label=pos_label, score_type=args.score_type, score_column=score_column,
                          bins=bins or None, intersectional=args.intersectional,
                          **_extensions(args, evaluate, "classification"))
    if label_info is not None:
        report.metadata = {**label_info, **report.metadata}
    return report


def _segmentation(args, layout, path, sensitive, bins, dice, pred_mask, true_mask, notes):
    try:
        from . import evaluate_segmentation
    except (ImportError, AttributeError):
        raise UsageError("this build of fairmedfm_fast cannot evaluate segmentation yet") from None
    columns = layout.columns
    if dice:
        require(columns, [dice], "--dice")
        notes.append(f"segmentation: Dice column {dice!r}")
        table = _read(layout, [dice, *sensitive], [s for s in sensitive if s != dice])
        with _step(f"scoring {table.num_rows:,} samples"):
            return evaluate_segmentation(_attributes(layout, table, sensitive), dice=table[dice],
                                         bins=bins or None, intersectional=args.intersectional,
                                         **_extensions(args, evaluate_segmentation, "segmentation"))
    if not (pred_mask and true_mask):
        raise UsageError("segmentation needs a Dice column (--dice) or both mask columns "
                         "(--pred-mask and --true-mask)")
    require(columns, [pred_mask, true_mask], "--pred-mask/--true-mask")
    notes.append(f"segmentation: masks from the columns {pred_mask!r} and {true_mask!r}")
    table = _read(layout, [pred_mask, true_mask, *sensitive],
                  [s for s in sensitive if s not in (pred_mask, true_mask)])
    masks = _file_columns(table, path, (("--pred-mask", pred_mask), ("--true-mask", true_mask)))
    with _step(f"scoring {table.num_rows:,} samples"):
        return evaluate_segmentation(_attributes(layout, table, sensitive), pred_masks=masks["--pred-mask"],
                                     true_masks=masks["--true-mask"], label=_mask_value(args.mask_label),
                                     mask_threshold=args.mask_threshold, empty_score=args.empty_score,
                                     bins=bins or None, intersectional=args.intersectional,
                                     **_extensions(args, evaluate_segmentation, "segmentation"))


def _file_columns(table, path, options) -> dict:
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


def _voxels(args, layout, path, sensitive, bins, true_mask, notes):
    from .voxels import evaluate_voxels

    if not true_mask:
        raise UsageError("--score-map needs the ground-truth masks: name their column with --true-mask")
    options = [("--score-map", args.score_map), ("--true-mask", true_mask)]
    if args.roi_mask:
        options.append(("--roi-mask", args.roi_mask))
    require(layout.columns, [name for _, name in options], "/".join(option for option, _ in options))
    notes.append(f"voxels: score maps {args.score_map!r}, true masks {true_mask!r}")
    names = [name for _, name in options]
    table = _read(layout, [*names, *sensitive], [s for s in sensitive if s not in names])
    files = _file_columns(table, path, options)
    with _step(f"scoring the voxels of {table.num_rows:,} images"):
        return evaluate_voxels(files["--score-map"], files["--true-mask"], _attributes(layout, table, sensitive),
                               roi_masks=files.get("--roi-mask"), bins=bins or None,
                               intersectional=args.intersectional, threshold=args.threshold,
                               max_memory=args.max_memory)


# ----------------------------------------------------------------------------------------------------
# Entry point

# Python API names in error messages, as the command line spells them.
_API_WORDS = (("pos_label", "--pos-label"), ("score_column", "--score-column"),
              ("mask_threshold", "--mask-threshold"), ("empty_score", "--empty-score"),
              ("nsd_tolerance", "--nsd-tolerance"),
              ("y_true", "the label column"), ("y_score", "the score column"),
              ("sensitive_features", "--sensitive"), ("remove it from bins", "remove it from --bins"),
              ("threshold=", "--threshold "), ("n_boot", "--bootstrap"), ("n_permutations", "--permutations"))


def cli_message(message) -> str:
    """One line, in command-line words (``--bins age=q4`` rather than ``bins={'age': 4}``)."""
    import re

    message = " ".join(str(message).split())
    message = re.sub(r"bins=\{'([^']+)': \[40, 60\]\}", r"--bins \1=40,60", message)
    message = re.sub(r"bins=\{'([^']+)': 4\}", r"--bins \1=q4", message)
    message = re.sub(r"bins\['([^']+)'\]=(\d+)", r"--bins \1=q\2", message)
    message = re.sub(r"bins\['([^']+)'\]=\[([^\]]*)\]", lambda m: f"--bins {m[1]}={m[2].replace(' ', '')}",
                     message)
    message = re.sub(r"bins\['([^']+)'\]", r"--bins \1", message)
    message = re.sub(r"score_type='(\w+)'(?: or '(\w+)')?",
                     lambda m: f"--score-type {m[1]}" + (f" or {m[2]}" if m[2] else ""), message)
    for api, option in _API_WORDS:
        message = message.replace(api + "=", option + " ").replace(api, option)
    return message


def _error(message: str, code: int = 2) -> int:
    print(f"{PROG}: error: {message}", file=sys.stderr, flush=True)
    return code


def main(argv=None) -> None:
    """Run the command line with ``argv`` (default ``sys.argv[1:]``), as ``fairmedfm.cli.main`` does:
    returns None on success and raises ``SystemExit`` with the exit status otherwise (2 for a bad
    command line or input, 1 for an unexpected failure, 130 when interrupted)."""
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser()
    args = parser.parse_args(argv)  # --help and --version exit 0, usage errors exit 2
    try:
        if args.command == "warmup":
            from .warmup import warmup

            code = warmup(args.jobs)
        else:
            code = _run(args)
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        code = 130
    if code:
        raise SystemExit(code)


def run() -> None:
    """The ``fairmedfm-fast`` command (and ``python -m fairmedfm_fast``): :func:`main`, then exit.

    Once the output is written and flushed and the exit handlers (``atexit``) have run, the process
    ends without tearing the interpreter down: freeing numba's loaded kernels and type registries
    and pyarrow's memory pools takes 0.2-0.4 s, longer than scoring a million rows. Every file the
    command writes is closed before :func:`main` returns.
    """
    try:
        main()
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    import atexit

    run_exit_handlers = getattr(atexit, "_run_exitfuncs", None)  # CPython
    if run_exit_handlers is None:
        sys.exit(code)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed or broken stream: nothing more can be written
            pass
    run_exit_handlers()
    os._exit(code)


def _run(args) -> int:
    import warnings

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the report carries its warnings; stderr gets them once
            report, notes = score(args)
            text = _render(report, args.format)  # before any output, so that a failure is one line
            if args.output:
                _write(report, args.output)
            if args.plot:
                _write_plot(report, args.plot, args.plot_kind)
            if args.html:
                report._notes = list(notes)  # the page shows them before the warnings
                _write_file(args.html, "--html", lambda path: report.to_html(path))
    except _OutputError as exc:
        return _error(str(exc))
    except (ValueError, OSError, ImportError, NotImplementedError) as exc:
        return _error(cli_message(exc))
    except MemoryError:
        return _error("out of memory; score fewer rows at a time or read fewer columns", 1)
    except Exception as exc:  # noqa: BLE001 - never a traceback, but a bug is a bug
        if os.environ.get("FAIRMEDFM_FAST_TRACEBACK"):
            raise
        return _error(f"unexpected {type(exc).__name__}: {cli_message(exc)} (this is a bug: please report it; "
                      "set FAIRMEDFM_FAST_TRACEBACK=1 to see where it happened)", 1)
    for note in notes:
        print(f"{PROG}: {note}", file=sys.stderr)
    for warning in report.warnings:
        print(f"{PROG}: warning: {cli_message(warning)}", file=sys.stderr)
    sys.stderr.flush()
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except BrokenPipeError:  # e.g. piped into head
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    return 0


class _OutputError(Exception):
    """--output could not be written."""


def _render(report, form: str) -> str:
    """What goes to stdout: the summary per attribute, as JSON or as a table.

    With --bootstrap or --permutations, each attribute also gets ``"ci"`` (metric -> [low, high])
    and ``"p_values"`` (gap -> p); without them the output is that of ``fairmedfm score``.
    """
    ci, p_values = getattr(report, "ci", None), getattr(report, "p_values", None)
    if form == "table":
        def table(frame):
            return frame.to_string(float_format=lambda v: f"{v:.4f}") + "\n"

        text = table(report.summary)
        if ci is not None:
            text += f"\n{ci['level']:.0%} bootstrap intervals ({ci['n_boot']} resamples)\n" + table(ci["summary"])
        if p_values is not None:
            text += "\npermutation p-values\n" + table(p_values)
        return text
    import json

    result = report.to_dict()
    out = {name: entry["summary"] for name, entry in result["attributes"].items()}
    for name, summary in out.items():
        if "ci" in result and name in result["ci"]["summary"]:
            bounds = result["ci"]["summary"][name]
            summary["ci"] = {key[:-3]: [bounds[key], bounds[key[:-3] + "_hi"]] for key in bounds
                             if key.endswith("_lo")}
        if "p_values" in result and name in result["p_values"]:
            summary["p_values"] = result["p_values"][name]
    return json.dumps(out, indent=2) + "\n"


def _write(report, path: Path) -> None:
    if path.suffix.lower() == ".csv":
        _write_file(path, "--output", report.by_group.to_csv)
    else:
        _write_file(path, "--output", report.to_json)


def _write_plot(report, path: Path, kind) -> None:
    if kind is None:
        kind = "dice" if report.task == "seg" else "roc"
    figure = report.plot(kind)
    try:
        _write_file(path, "--plot", figure.savefig)
    finally:
        import matplotlib.pyplot as plt

        plt.close(figure)


def _write_file(path: Path, option: str, write) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write(path)
    except OSError as exc:
        raise _OutputError(f"cannot write {option} {str(path)!r}: {exc.strerror or exc}; check the folder and "
                           "its permissions") from None


if __name__ == "__main__":
    main()
