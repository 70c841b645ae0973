"""``fairmedfm-fast score PATH --engine dask``: the command line's ``score`` on a Dask cluster.

Part of the command-line layer: it finds the columns and the task as the in-memory command does
(:mod:`fairmedfm_fast._columns`) and calls :mod:`fairmedfm_fast.dask` as a library.
"""
from __future__ import annotations

import os
from typing import Any

from .columns import UsageError, choose_task, extensions, find_column, mask_value, require, sensitive_and_bins


def score_command(args: Any):
    """The report and the notes to print for the parsed ``score`` namespace ``args``, as
    ``_score.score`` returns them. PATH is a Parquet file, a directory of them or a glob; every worker
    must be able to read it."""
    from .. import dask as fdask
    from ..segmentation import evaluate_segmentation as in_memory_segmentation

    path = getattr(args, "predictions", None) or getattr(args, "input", None)
    if path is None:
        raise UsageError("give the Parquet dataset: a file, a directory or a glob such as 'preds/*.parquet'")
    if getattr(args, "metadata", None):
        raise UsageError("--metadata is not supported with --engine dask; join the tables into the Parquet "
                         "dataset first")
    if getattr(args, "score_map", None):
        raise UsageError("--score-map is not supported with --engine dask; score the maps in memory "
                         "(evaluate_voxels streams them within --max-memory)")
    notes: list[str] = []
    client = _client(getattr(args, "scheduler", None))
    try:
        ddf = fdask.read_parquet(path)
        columns = [str(c) for c in ddf.columns]
        notes.append(f"dask: {ddf.npartitions} partitions on {len(client.scheduler_info()['workers'])} workers "
                     f"({client.scheduler.address})")
        sensitive, bins = sensitive_and_bins(args, columns, notes)
        task, label, scores, dice, pred_mask, true_mask = choose_task(args, columns)
        if task == "seg":
            extra = extensions(args, in_memory_segmentation, "segmentation")
            if dice:
                notes.append(f"segmentation: Dice column {dice!r}")
                report = fdask.evaluate_segmentation(ddf, sensitive=sensitive, dice=dice, bins=bins or None,
                                                     intersectional=args.intersectional, **extra)
            else:
                if not (pred_mask and true_mask):
                    raise UsageError("segmentation needs a Dice column (--dice) or both mask columns "
                                     "(--pred-mask and --true-mask)")
                require(columns, [pred_mask, true_mask], "--pred-mask/--true-mask")
                notes.append(f"segmentation: masks from the columns {pred_mask!r} and {true_mask!r}")
                report = fdask.evaluate_segmentation(
                    ddf, sensitive=sensitive, pred_mask=pred_mask, true_mask=true_mask,
                    label=mask_value(args.mask_label), mask_threshold=args.mask_threshold,
                    empty_score=args.empty_score, base=_dataset_folder(path), bins=bins or None,
                    intersectional=args.intersectional, **extra)
        else:
            report = _classification(args, ddf, columns, sensitive, bins, label, scores, notes)
    finally:
        cluster = getattr(client, "cluster", None)
        client.close()
        if cluster is not None and not getattr(args, "scheduler", None):
            cluster.close()
    report.metadata["input"] = str(path)
    return report, notes


def _classification(args: Any, ddf: Any, columns: list[str], sensitive: list[str], bins: dict, label: Any,
                    scores: list[str] | None, notes: list[str]):
    """``--engine dask`` for a classification table: one score column, rows with a missing label or score
    left out (with a note)."""
    from .. import dask as fdask

    extra = extensions(args, fdask.evaluate, "classification with --engine dask")
    label = label or find_column(columns, "label")
    if not scores:
        raise UsageError(f"found no score column; name it with --score COLUMN (columns: {columns[:30]})")
    if len(scores) != 1:
        raise UsageError("--engine dask takes one score column (the positive class's probability or "
                         f"logit), got {len(scores)}: {', '.join(scores)}")
    require(columns, [label, scores[0]], "--label/--score")
    notes.append(f"classification: label column {label!r}, score column {scores[0]!r}")
    ddf = ddf[list(dict.fromkeys([label, scores[0], *sensitive]))]
    missing = int(ddf[[label, scores[0]]].isna().any(axis=1).sum().compute())
    if missing:
        notes.append(f"left out {missing} rows with a missing label or score")
        ddf = ddf.dropna(subset=[label, scores[0]])
    return fdask.evaluate(ddf, label=label, score=scores[0], sensitive=sensitive, bins=bins or None,
                          intersectional=args.intersectional,
                          pos_label=_typed_pos_label(args.pos_label, ddf[label].dtype),
                          score_type=args.score_type, **extra)


def _typed_pos_label(value: str | None, dtype: Any) -> Any:
    """``--pos-label`` as a value of the label column's type."""
    if value is None:
        return None
    import pandas as pd

    from .._inputs.arrays import label_from_text

    return label_from_text(value, pd.api.types.is_bool_dtype(dtype), pd.api.types.is_numeric_dtype(dtype))


def _client(scheduler: str | None):
    """A client of the cluster at ``scheduler``, or of a new local cluster (one worker per core)."""
    import logging

    try:
        import distributed
    except ImportError:
        raise ImportError("--engine dask needs dask and distributed: pip install 'dask[dataframe]' distributed") from None

    logging.getLogger("distributed.shuffle").setLevel(logging.ERROR)  # a note per shuffle otherwise
    if scheduler:
        try:
            return distributed.Client(scheduler, timeout="20s")
        except OSError as error:
            raise UsageError(f"--scheduler {scheduler!r}: no Dask scheduler answered ({error}); give the "
                             "address that `dask scheduler` printed, e.g. tcp://10.0.0.5:8786") from None
    # A free port for the scheduler's HTTP server: it starts even without a dashboard, and on a taken
    # default port (8787, another cluster) distributed would print a UserWarning with the new link.
    cluster = distributed.LocalCluster(threads_per_worker=1, processes=True, dashboard_address=":0")
    return distributed.Client(cluster)


def _dataset_folder(path: Any) -> str:
    """The folder of a Parquet dataset (a directory, a file's folder, a glob's folder): relative mask
    paths in the table are relative to it."""
    text = os.fspath(path)
    if "://" in text or os.path.isdir(text):
        return text
    return os.path.dirname(os.path.abspath(text))
