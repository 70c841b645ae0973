"""Command line: ``score --tasks`` (many label/score column pairs in one call) and ``--pairwise``
(``--compare``: ``compare.py``).

``--label a b c --score pa pb pc`` pairs columns by position; ``--label 'y_*' --score 'p_*'`` pairs
the columns that the two patterns match by what their ``*`` stands for (``y_edema`` with
``p_edema``: task ``edema``); one label column with several score columns scores several models on
that label. The pairs go to :func:`fairmedfm_fast.evaluate_tasks`. Standard library only at import
time.
"""
from __future__ import annotations

import fnmatch
import re

from .columns import UsageError, extensions, preview, require


def check_tasks(args) -> None:
    """Check ``--tasks`` against the other options (without it, ``_columns.choose_task`` reads
    ``--label`` as one column)."""
    if args.tasks and args.engine == "dask":
        raise UsageError("--tasks needs --engine memory (the Dask engine scores one task)")
    if getattr(args, "compare", None) is not None and not args.tasks:
        raise UsageError("--compare needs --tasks with one --label and several --score columns (the models)")


def _matches(pattern: str, columns, option: str) -> dict[str, str]:
    """The columns ``pattern`` matches, keyed by the text its wildcards stand for."""
    if not any(ch in pattern for ch in "*?["):
        require(columns, [pattern], option)
        return {pattern: pattern}
    regex = re.compile(fnmatch.translate(pattern).replace(".*", "(.*)"))
    found = {}
    for column in columns:
        match = regex.match(str(column))
        if match:
            found["".join(match.groups()) or str(column)] = str(column)
    if not found:
        raise UsageError(f"{option} {pattern!r} matches no column; the columns are: {preview(columns)}")
    return found


def task_columns(labels: list[str], scores: list[str], columns) -> tuple[list[str], dict, dict]:
    """Task names, and the label and score column of each (a shared label column for several models).

    Returns ``(names, label_of, score_of)``, ``label_of`` and ``score_of`` mapping a task to its column.
    """
    if not labels or not scores:
        raise UsageError("--tasks needs --label and --score: columns given in pairs (--label a b --score pa pb) "
                         "or patterns (--label 'y_*' --score 'p_*')")
    patterned = any(any(ch in name for ch in "*?[") for name in [*labels, *scores])
    if not patterned:
        require(columns, [*labels, *scores], "--label/--score")
        if len(labels) == 1:  # several models on one label
            return list(scores), dict.fromkeys(scores, labels[0]), {s: s for s in scores}
        if len(labels) != len(scores):
            raise UsageError(f"--tasks pairs --label and --score by position, but --label names {len(labels)} "
                             f"columns and --score {len(scores)}; give as many of each")
        return list(labels), dict(zip(labels, labels)), dict(zip(labels, scores))
    if len(labels) != 1 or len(scores) != 1:
        raise UsageError("with patterns, give one --label pattern and one --score pattern, e.g. "
                         "--label 'y_*' --score 'p_*'")
    label_of = _matches(labels[0], columns, "--label")
    score_of = _matches(scores[0], columns, "--score")
    if len(label_of) == 1 and not any(ch in labels[0] for ch in "*?["):  # one label, many models
        label = next(iter(label_of.values()))
        return list(score_of), dict.fromkeys(score_of, label), score_of
    unpaired = sorted(set(label_of) ^ set(score_of))
    if unpaired:
        raise UsageError(f"--label {labels[0]!r} and --score {scores[0]!r} pair columns by what '*' stands for, "
                         f"but {', '.join(map(repr, unpaired[:5]))} has no partner; rename the columns or give "
                         "the pairs explicitly")
    names = list(label_of)
    return names, label_of, {name: score_of[name] for name in names}


def score_tasks(args, layout, sensitive, bins, notes, read):
    """The report of ``score --tasks``; ``read(layout, wanted, groups)`` reads the columns."""
    import pyarrow.compute as pc

    from .arrow_columns import attributes, is_missing, require_numeric, typed_pos_label

    if args.score_column is not None:
        raise UsageError("--score-column does not apply to --tasks: each --score column is a task")
    columns = layout.columns
    names, label_of, score_of = task_columns(args.label or [], args.score or [], columns)
    compare = getattr(args, "compare", None) is not None
    if compare:
        from .compare import check_compare

        check_compare(args, names, label_of)
    used = list(dict.fromkeys([*label_of.values(), *score_of.values()]))
    notes.append(f"tasks: {', '.join(f'{t} ({label_of[t]}, {score_of[t]})' for t in names)}")
    table = read(layout, [*used, *sensitive], [s for s in sensitive if s not in used])
    missing = None
    for name in used:
        if name in score_of.values():
            require_numeric(table[name], name)
        missing = is_missing(table[name]) if missing is None else pc.or_(missing, is_missing(table[name]))
    n_missing = pc.sum(missing).as_py() or 0
    if n_missing:
        notes.append(f"left out {n_missing} rows with a missing label or score in one of the tasks")
        table = table.filter(pc.invert(missing))
    if table.num_rows == 0:
        raise UsageError("no row has every label and score of the tasks; check the columns")
    shared = len(set(label_of.values())) == 1 and len(names) > 1
    first = label_of[names[0]]
    y_true = table[first].to_numpy() if shared else {t: table[label_of[t]].to_numpy() for t in names}
    y_score = {t: table[score_of[t]].to_numpy() for t in names}
    groups, pos_label = attributes(layout, table, sensitive), typed_pos_label(args.pos_label, table[first])
    if compare:
        from .compare import compare_tasks

        return compare_tasks(args, y_true, y_score, groups, pos_label, bins)
    from ..evaluation import evaluate
    from ..tasks import evaluate_tasks

    return evaluate_tasks(y_true, y_score, groups, pos_label=pos_label, score_type=args.score_type,
                          bins=bins or None, intersectional=args.intersectional,
                          **extensions(args, evaluate, "classification"))


def render(report, form: str, metric: str | None, render_one) -> str:
    """Stdout of ``score``: ``render_one(report, form)`` per task (a task level above the attributes),
    with the ``--pairwise`` differences of ``metric`` per attribute when given."""
    import json

    if not report.tasks and not metric:
        return render_one(report, form)
    tasks = report.tasks or {None: report}
    parts = {}
    for name, one in tasks.items():
        text = render_one(one, form)
        pairs = _pairwise(one, metric) if metric else None
        if form == "json":
            summary = json.loads(text)
            if pairs is not None:
                for attribute in summary:
                    summary[attribute]["pairwise"] = _matrices(pairs, attribute, metric)
            parts[name] = summary
        else:
            if pairs is not None:
                for attribute in dict.fromkeys(pairs.index.get_level_values("attribute")):
                    frame = pairs.loc[attribute, "difference"].unstack()
                    text += (f"\n{attribute}: {metric} of the row group minus {metric} of the column group\n"
                             + frame.to_string(float_format=lambda v: f"{v:.4f}") + "\n")
            parts[name] = text if name is None else f"task {name}\n{text}"
    if form == "json":
        return json.dumps(parts if report.tasks else parts[None], indent=2) + "\n"
    return "\n".join(parts.values())


def _pairwise(report, metric: str):
    try:
        return report.pairwise(metric)
    except ValueError as error:
        raise UsageError(f"--pairwise {metric}: {str(error).partition('; ')[2] or error}") from None


def _matrices(pairs, attribute, metric: str) -> dict:
    """One attribute's pairwise columns as {column: {group: {other: value}}} (JSON-ready)."""
    import math

    if attribute not in pairs.index.get_level_values("attribute"):
        return {"metric": metric}
    rows = pairs.loc[attribute]
    out: dict = {"metric": metric}
    for column in rows.columns:
        matrix = rows[column].unstack()
        out[column] = {str(g): {str(o): (None if not math.isfinite(v) else float(v)) for o, v in values.items()}
                       for g, values in matrix.iterrows()}
    return out
