"""The ``score`` command's work, once the command line is parsed: open the table(s), find the
columns and the task, read only the columns in use and call the Python API.

:mod:`fairmedfm_fast.cli` parses the options and writes the output; ``--engine dask`` goes to
:mod:`fairmedfm_fast._cli_dask`. Standard library only at import time.
"""
from __future__ import annotations

from .arrow_columns import (
    Layout,
    attributes,
    file_columns,
    float_matrix,
    is_missing,
    require_numeric,
    text_labels,
    typed_pos_label,
)
from .columns import (
    PROG,
    UsageError,
    choose_task,
    class_score_column,
    extensions,
    find_column,
    mask_value,
    preview,
    require,
    sensitive_and_bins,
)
from .tasks import check_tasks, score_tasks


def step(what: str):
    """``fairmedfm-fast: <what> ... <time so far>`` on stderr once a step takes over ~2 s (terminals only)."""
    from .._util.progress import Progress

    return Progress(None, f"{PROG}: {what}")


def score(args):
    """Read the table(s), work out the columns and evaluate. Returns ``(report, notes)``."""
    from . import tables as _tables

    path = args.predictions or args.input
    check_tasks(args)
    if path is None:
        raise UsageError(f"give the predictions table, e.g. {PROG} score predictions.csv --sensitive sex")
    if args.engine == "dask":
        from .dask import score_command

        return score_command(args)
    if args.scheduler:
        raise UsageError("--scheduler needs --engine dask")
    with step(f"opening {path}"):
        predictions = _tables.open_table(path, "the predictions table")
        metadata = _tables.open_table(args.metadata, "the metadata table") if args.metadata else None
    layout = Layout(predictions, metadata, args.on)
    columns = layout.columns
    notes = []

    sensitive, bins = sensitive_and_bins(args, columns, notes)
    if args.tasks:
        report = score_tasks(args, layout, sensitive, bins, notes, _read)
        report.metadata["input"] = str(path)
        return report, layout.notes + notes
    task, label, scores, dice, pred_mask, true_mask = choose_task(args, columns)

    if args.score_map:
        report = _voxels(args, layout, path, sensitive, bins, true_mask, notes)
    elif task == "cls":
        report = _classification(args, layout, sensitive, bins, label, scores, notes)
    else:
        report = _segmentation(args, layout, path, sensitive, bins, dice, pred_mask, true_mask, notes)
    report.metadata["input"] = str(path)
    if task == "cls" and not args.score_map:
        _record_inputs(report, args, path, layout)
    return report, layout.notes + notes


def _record_inputs(report, args, path, layout) -> None:
    """The input tables, the join and its counts, and the rows the command line left out, in the settings."""
    join = layout.join
    report.metadata["inputs"] = {"predictions": str(path), "metadata": None if args.metadata is None else str(args.metadata),
                                 "join": join}
    dropped = list(getattr(layout, "dropped", []))
    if join and join["joined_rows"] < join["prediction_rows"]:
        dropped.insert(0, {"n": join["prediction_rows"] - join["joined_rows"], "reason": "no metadata row"})
    if dropped:
        report.metadata["samples_dropped"] = dropped + list(report.metadata.get("samples_dropped", []))


def _read(layout, wanted, groups):
    with step("reading " + ", ".join(map(str, filter(None, [
            layout.predictions.path, layout.metadata.path if layout.metadata else None])))):
        return layout.read(wanted, groups)


def _classification(args, layout, sensitive, bins, label, scores, notes):
    import pyarrow.compute as pc

    columns = layout.columns
    label = label or find_column(columns, "label")
    if not scores:
        raise UsageError(f"found no score column; name it with --score COLUMN (columns: {preview(columns)})")
    require(columns, [label, *scores], "--label/--score")
    notes.append(f"classification: label column {label!r}, score column(s) {', '.join(map(repr, scores))}")
    table = _read(layout, [label, *scores, *sensitive], [s for s in sensitive if s not in (label, *scores)])
    for name in scores:
        require_numeric(table[name], name)
    missing = is_missing(table[label])
    for name in scores:
        missing = pc.or_(missing, is_missing(table[name]))
    n_missing = pc.sum(missing).as_py() or 0
    if n_missing:
        notes.append(f"left out {n_missing} rows with a missing label or score")
        layout.dropped = [{"n": n_missing, "reason": "missing label or score"}]
        table = table.filter(pc.invert(missing))
    if table.num_rows == 0:
        raise UsageError(f"no row has both a label ({label!r}) and a score; check the columns")
    if len(scores) == 1:
        y_score = table[scores[0]]
    else:
        y_score = float_matrix(table, scores)
    score_column = args.score_column
    if score_column is None and args.pos_label is not None and len(scores) > 1:
        score_column = class_score_column(scores, args.pos_label)
        if score_column is not None:
            notes.append(f"positive class {args.pos_label!r}: score column {scores[score_column]!r}")
    y_true, pos_label = table[label], typed_pos_label(args.pos_label, table[label])
    label_info = None
    text = text_labels(y_true, pos_label, len(scores), score_column, label)
    if text is not None:
        y_true, score_column, label_info = text
        pos_label = None
    from ..evaluation import evaluate

    with step(f"scoring {table.num_rows:,} samples"):
        report = evaluate(y_true, y_score, attributes(layout, table, sensitive),
                          pos_label=pos_label, score_type=args.score_type, score_column=score_column,
                          bins=bins or None, intersectional=args.intersectional,
                          **extensions(args, evaluate, "classification"))
    if label_info is not None:
        report.metadata = {**label_info, **report.metadata}
    return report


def _segmentation(args, layout, path, sensitive, bins, dice, pred_mask, true_mask, notes):
    try:
        from ..segmentation import evaluate_segmentation
    except (ImportError, AttributeError):
        raise UsageError("this build of fairmedfm_fast cannot evaluate segmentation yet") from None
    columns = layout.columns
    if dice:
        require(columns, [dice], "--dice")
        notes.append(f"segmentation: Dice column {dice!r}")
        table = _read(layout, [dice, *sensitive], [s for s in sensitive if s != dice])
        with step(f"scoring {table.num_rows:,} samples"):
            return evaluate_segmentation(attributes(layout, table, sensitive), dice=table[dice],
                                         bins=bins or None, intersectional=args.intersectional,
                                         **extensions(args, evaluate_segmentation, "segmentation"))
    if not (pred_mask and true_mask):
        raise UsageError("segmentation needs a Dice column (--dice) or both mask columns "
                         "(--pred-mask and --true-mask)")
    require(columns, [pred_mask, true_mask], "--pred-mask/--true-mask")
    notes.append(f"segmentation: masks from the columns {pred_mask!r} and {true_mask!r}")
    table = _read(layout, [pred_mask, true_mask, *sensitive],
                  [s for s in sensitive if s not in (pred_mask, true_mask)])
    masks = file_columns(table, path, (("--pred-mask", pred_mask), ("--true-mask", true_mask)))
    with step(f"scoring {table.num_rows:,} samples"):
        return evaluate_segmentation(attributes(layout, table, sensitive), pred_masks=masks["--pred-mask"],
                                     true_masks=masks["--true-mask"], label=mask_value(args.mask_label),
                                     mask_threshold=args.mask_threshold, empty_score=args.empty_score,
                                     bins=bins or None, intersectional=args.intersectional,
                                     **extensions(args, evaluate_segmentation, "segmentation"))


def _voxels(args, layout, path, sensitive, bins, true_mask, notes):
    from ..voxels import evaluate_voxels

    if not true_mask:
        raise UsageError("--score-map needs the ground-truth masks: name their column with --true-mask")
    options = [("--score-map", args.score_map), ("--true-mask", true_mask)]
    if args.roi_mask:
        options.append(("--roi-mask", args.roi_mask))
    require(layout.columns, [name for _, name in options], "/".join(option for option, _ in options))
    notes.append(f"voxels: score maps {args.score_map!r}, true masks {true_mask!r}")
    names = [name for _, name in options]
    table = _read(layout, [*names, *sensitive], [s for s in sensitive if s not in names])
    files = file_columns(table, path, options)
    with step(f"scoring the voxels of {table.num_rows:,} images"):
        return evaluate_voxels(files["--score-map"], files["--true-mask"], attributes(layout, table, sensitive),
                               roi_masks=files.get("--roi-mask"), bins=bins or None,
                               intersectional=args.intersectional, threshold=args.threshold,
                               max_memory=args.max_memory)
