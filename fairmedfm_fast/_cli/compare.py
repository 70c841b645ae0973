"""Command line: ``score --tasks --compare [REFERENCE]``: the ``--score`` columns of one ``--label``
column are models, compared by :func:`fairmedfm_fast.compare_models` on the table ``--tasks`` reads
(once): each pair of models, or each against REFERENCE, with the paired tests ``--bootstrap``,
``--interval analytic`` and ``--permutations`` ask for, and a leaderboard per attribute ranked by
``--rank-by``. Standard library only at import time.
"""
from __future__ import annotations

from .columns import UsageError, extensions

#: The columns of the differences that the table form prints (those present).
SHOWN = ("value", "other_value", "difference", "ci_low", "ci_high", "se_analytic", "ci_low_analytic",
         "ci_high_analytic", "significant", "small_group")


def check_compare(args, names: list[str], label_of: dict) -> None:
    """``--compare`` needs one label column for two models or more, a REFERENCE among them, and no
    option that reads one report (``--pairwise``, ``--plot-kind``)."""
    if len(set(label_of.values())) != 1 or len(names) < 2:
        raise UsageError("--compare compares models scored on one label: give one --label column and two --score "
                         f"columns or more (got the tasks {', '.join(names)})")
    if args.compare and args.compare not in names:
        raise UsageError(f"--compare {args.compare}: not one of the models ({', '.join(names)}); give a --score "
                         "column, or --compare alone for every pair")
    for option, given in (("--pairwise", args.pairwise), ("--plot-kind", args.plot_kind)):
        if given:
            raise UsageError(f"{option} does not go with --compare (--plot saves the models' forest); leave it out")


def compare_tasks(args, y_true, y_score: dict, groups, pos_label, bins):
    """:func:`~fairmedfm_fast.compare_models` of the models with the command line's options."""
    from ..comparison import compare_models
    from ..evaluation import evaluate

    options = extensions(args, evaluate, "classification")
    if args.p_adjust is not None:  # every paired test, not only --permutations
        options["p_adjust"] = None if args.p_adjust == "none" else args.p_adjust
    return compare_models(y_true, y_score, groups, reference=args.compare or None, pos_label=pos_label,
                          score_type=args.score_type, bins=bins or None, intersectional=args.intersectional,
                          **options)


def leaderboards(comparison, column: str) -> dict:
    """Attribute -> its leaderboard on ``column`` (``--rank-by``)."""
    attributes = next(iter(comparison.reports.values())).summary.index
    try:
        return {str(attribute): comparison.leaderboard(column, str(attribute)) for attribute in attributes}
    except ValueError as error:
        raise UsageError(f"--rank-by {column}: {str(error).partition('; ')[2] or error}") from None


def render(comparison, form: str, column: str) -> str:
    """Stdout of ``score --compare``: JSON (the comparison's :meth:`to_json` and ``"leaderboards"``) or
    tables (each attribute's leaderboard, then the paired differences)."""
    import json

    from .._report.frame import jsonable

    boards = leaderboards(comparison, column)
    if form == "json":
        out = json.loads(comparison.to_json())
        out["leaderboards"] = {attribute: {"column": column, "models": [
            {"model": str(name), **jsonable(row.to_dict())} for name, row in board.iterrows()]}
            for attribute, board in boards.items()}
        return json.dumps(out, indent=2, default=str) + "\n"
    parts = [f"leaderboard: {column} of {attribute} (best first)\n" + board.to_string(float_format=_four) + "\n"
             for attribute, board in boards.items()]
    frame = comparison.differences
    shown = [name for name in frame.columns if name in SHOWN or name.startswith("p_")]
    parts.append(f"paired differences (model minus other; {comparison.metadata.get('family', '')})\n"
                 + frame[shown].to_string(float_format=_four) + "\n")
    return "\n".join(parts)


def _four(value: float) -> str:
    return f"{value:.4f}"
