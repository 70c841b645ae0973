"""Command line: ``fairmedfm-fast score`` (and ``python -m fairmedfm_fast score``).

The options, defaults, column detection, printed JSON and notes follow ``fairmedfm score`` 0.4.2.
Tables are read with pyarrow (see :mod:`fairmedfm_fast._tables`), only the columns in use, and the
columns reach :func:`fairmedfm_fast.evaluate` as Arrow arrays. This module parses the command line
and writes the output; reading the tables and calling the API is :mod:`fairmedfm_fast._score`,
which column plays which role is :mod:`fairmedfm_fast._columns`, the Arrow input shaping and the
join are :mod:`fairmedfm_fast._arrow_inputs`, and ``--engine dask`` is :mod:`fairmedfm_fast._cli_dask`.
Only the standard library is imported at import time, so that ``--help`` and ``--version`` answer
at once.
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from ._cli.columns import PROG
from ._cli.compare import render as render_comparison
from ._cli.score import score
from ._cli.tasks import render

EPILOG = f"""examples:
  {PROG} score predictions.csv --sensitive sex age --bins age=40,60
  {PROG} score predictions.parquet --metadata patients.csv --on image_id --sensitive sex race
  {PROG} score preds.csv --label diagnosis --pos-label malignant --score prob_benign prob_malignant
  {PROG} score dice.csv --sensitive sex
  {PROG} score masks.csv --pred-mask pred_path --true-mask gt_path --sensitive sex

Columns are recognised by their usual names (label, target, y_true; prob, score, y_score, logit;
prob_0, prob_1, ...; with --pos-label, prob_<class> per class; dice; pred_mask, gt_mask) unless
named with --label, --score, --dice, --pred-mask and --true-mask. Tables: CSV, TSV, Parquet,
Feather/Arrow, JSON, JSON Lines, Excel; CSV, TSV and JSON files may be gzip-compressed (.csv.gz)."""


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


def _required_table(format_text):
    return lambda: format_text().replace(" [predictions]", " predictions", 1)


#: The help of ``--metrics``: the names come from the metric registry when the help is printed.
_METRICS_HELP = "{metrics}"


class _HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """The ``score`` help, with the registry's metrics (installed plugins' included) filled in when it is
    printed: parsing a command line loads no plugin."""

    def _get_help_string(self, action):
        text = super()._get_help_string(action)
        return _metrics_help() if text == _METRICS_HELP else text


def _metrics_help() -> str:
    from ._registry import metrics as _metric_registry  # the entries (no NumPy import)

    _metric_registry.load_plugins()
    registry = _metric_registry.REGISTRY
    opt_in = ", ".join(f"{m.name} ({m.display})" for m in registry.per_group if m.optional)
    return (f"classification: any of {opt_in} beside fairmedfm's metrics; "
            f"segmentation from masks: any of {' '.join(m.name for m in registry.segmentation)}, "
            "per group (e.g. --metrics dice hd95 nsd --nsd-tolerance 2); default: Dice only")


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
        epilog=EPILOG, formatter_class=_HelpFormatter)
    from . import warmup

    warmup.add_arguments(commands.add_parser(
        "warmup", help="compile every kernel into the on-disk cache (for container images)",
        description=warmup.__doc__.splitlines()[0].replace("``", "")))  # reStructuredText quotes: not in --help
    score.add_argument("predictions", nargs="?", type=Path, help="the table, one row per sample")
    score.add_argument("--input", "--predictions", dest="input", type=Path, help=argparse.SUPPRESS)
    # The table is optional to argparse only because the hidden --input may give it instead: the usage
    # line shows it as required.
    score.format_usage = _required_table(score.format_usage)
    score.format_help = _required_table(score.format_help)

    _add_data_arguments(score)
    _add_task_arguments(score)
    _add_more_arguments(score)
    _add_engine_arguments(score)
    return parser


def _add_data_arguments(score: argparse.ArgumentParser) -> None:
    """``score``'s table options: the metadata join, the sensitive attributes, the task."""
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


def _add_task_arguments(score: argparse.ArgumentParser) -> None:
    """``score``'s columns of each task: classification, segmentation, voxels."""
    cls = score.add_argument_group("classification")
    cls.add_argument("--label", "--label-col", dest="label", nargs="+", metavar="COLUMN",
                     help="the ground-truth column (with --tasks: several, or a pattern such as 'y_*')")
    cls.add_argument("--score", "--prob-col", dest="score", nargs="+", metavar="COLUMN",
                     help="the score column (a probability or logit of the positive class), or one column "
                     "per class (with --tasks: one per --label, or a pattern such as 'p_*')")
    cls.add_argument("--tasks", action="store_true",
                     help="score several tasks in one call: --label a b --score pa pb, or --label 'y_*' "
                     "--score 'p_*' (paired by what '*' stands for), or one --label for several --score models")
    cls.add_argument("--compare", nargs="?", const="", metavar="REFERENCE",
                     help="with --tasks, one --label and several --score models: compare the models on the same "
                     "samples (paired tests under --bootstrap, --interval analytic, --permutations), every pair or "
                     "each against REFERENCE; prints a leaderboard per attribute and the differences")
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


def _add_more_arguments(score: argparse.ArgumentParser) -> None:
    """``score``'s options beyond fairmedfm's: opt-in metrics, intervals, p-values, figures."""
    more = score.add_argument_group("beyond fairmedfm score")
    more.add_argument("--metrics", nargs="+", metavar="M", help=_METRICS_HELP)
    more.add_argument("--pairwise", metavar="METRIC",
                      help="also print, per attribute, the difference of METRIC (e.g. auc) between every pair of "
                      "groups (with intervals and p-values under --bootstrap and --permutations)")
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
    more.add_argument("--interval", choices=["analytic"],
                      help="classification: analytic 95%% intervals without resampling (DeLong for AUC, Wilson for "
                      "rates, simultaneous intervals for auc-gap, acc-gap, eo and the TNR gap)")
    more.add_argument("--seed", type=int, metavar="S", help="random seed of --bootstrap and --permutations")
    more.add_argument("--min-group-size", type=int, metavar="N",
                      help="skip groups of fewer than N samples (reported, left out of the gaps)")
    more.add_argument("--p-adjust", choices=["holm", "bonferroni", "none"],
                      help="adjust the --permutations p-values over every gap and attribute (and the "
                      "--interval analytic p-values of --pairwise over every pair); default holm, none: "
                      "each test on its own")
    more.add_argument("--rank-by", default="worst-auc", metavar="COLUMN",
                      help="with --compare: the summary column the leaderboards rank by (default worst-auc; gaps "
                      "lower first)")
    more.add_argument("--plot", type=Path, metavar="FILE.png", help="also save a figure (see --plot-kind)")
    more.add_argument("--plot-kind", choices=["roc", "reliability", "bars", "dice"], metavar="KIND",
                      help="roc, reliability, bars or dice (default: roc for classification, dice for "
                      "segmentation)")
    more.add_argument("--html", type=Path, metavar="FILE.html",
                      help="also save a self-contained HTML report (tables, figures, warnings)")


def _add_engine_arguments(score: argparse.ArgumentParser) -> None:
    """``score``'s engine (memory or Dask) and output."""
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


# ----------------------------------------------------------------------------------------------------
# Entry point

# Python API names in error messages, as the command line spells them.
_API_WORDS = (("pos_label", "--pos-label"), ("score_column", "--score-column"),
              ("mask_threshold", "--mask-threshold"), ("empty_score", "--empty-score"),
              ("nsd_tolerance", "--nsd-tolerance"),
              ("y_true", "the label column"), ("y_score", "the score column"),
              ("sensitive_features", "--sensitive"), ("remove it from bins", "remove it from --bins"),
              ("threshold=", "--threshold "), ("n_boot", "--bootstrap"), ("n_permutations", "--permutations"),
              ("max_memory", "--max-memory"))


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

            code = warmup(args.jobs, workloads=args.workloads)
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
            compared = getattr(args, "compare", None) is not None
            # before any output: a failure is one line
            text = render_comparison(report, args.format, args.rank_by) if compared else render(
                report, args.format, args.pairwise, _render)
            if args.output:
                _write(report, args.output)
            if args.plot:
                _write_plot(report, args.plot, args.rank_by if compared else args.plot_kind, compared)
            if args.html and compared:
                _write_file(args.html, "--html", lambda path: report.to_html(path, args.rank_by))
            elif args.html:
                from ._report.html import write_html

                # the page shows the notes before the warnings
                _write_file(args.html, "--html", lambda path: write_html(report, path, notes=notes))
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


def _intervals(bounds) -> str:
    """Bootstrap intervals as a table of one row per metric and one column per attribute, each cell
    ``[low, high]`` (a row per attribute with a ``_lo`` and a ``_hi`` column per metric would be
    about 300 characters wide)."""
    import pandas as pd

    metrics = [column[:-3] for column in bounds.columns if column.endswith("_lo")]
    cells = {attribute: [f"[{row[m + '_lo']:.4f}, {row[m + '_hi']:.4f}]" for m in metrics]
             for attribute, row in bounds.iterrows()}
    return pd.DataFrame(cells, index=pd.Index(metrics, name="metric")).to_string() + "\n"


class _OutputError(Exception):
    """--output could not be written."""


def _render(report, form: str) -> str:
    """What goes to stdout: the summary per attribute, as JSON or as a table.

    With --bootstrap or --permutations, each attribute also gets ``"ci"`` (metric -> [low, high]),
    with --interval analytic ``"ci_analytic"`` (gap -> [low, high])
    and ``"p_values"`` (gap -> p); without them the output is that of ``fairmedfm score``.
    """
    ci, p_values = getattr(report, "ci", None), getattr(report, "p_values", None)
    if form == "table":
        def table(frame):
            return frame.to_string(float_format=lambda v: f"{v:.4f}") + "\n"

        text = table(report.summary)
        if ci is not None and ci.get("summary") is not None:
            text += f"\n{ci['level']:.0%} bootstrap intervals ({ci['n_boot']} resamples)\n" + _intervals(ci["summary"])
        if ci is not None and ci.get("analytic") is not None:
            text += f"\n{ci['level']:.0%} analytic intervals\n" + _intervals(ci["analytic"]["summary"])
        if p_values is not None:
            text += "\npermutation p-values\n" + table(p_values)
        return text
    import json

    result = report.to_dict()
    out = {name: entry["summary"] for name, entry in result["attributes"].items()}
    for name, summary in out.items():
        for key, part in (("ci", result.get("ci", {})), ("ci_analytic", result.get("ci", {}).get("analytic", {}))):
            if name in part.get("summary", {}):
                bounds = part["summary"][name]
                summary[key] = {column[:-3]: [bounds[column], bounds[column[:-3] + "_hi"]] for column in bounds
                                if column.endswith("_lo")}
        if "p_values" in result and name in result["p_values"]:
            summary["p_values"] = result["p_values"][name]
    return json.dumps(out, indent=2) + "\n"


def _write(report, path: Path) -> None:
    if path.suffix.lower() == ".csv":  # a comparison's differences, else the per-group table
        frame = report.differences if hasattr(report, "differences") else report.by_group
        _write_file(path, "--output", frame.to_csv)
    else:
        _write_file(path, "--output", report.to_json)


def _write_plot(report, path: Path, kind, compared: bool = False) -> None:
    """``--plot``: the figure of ``kind`` (with --compare, the models' forest on the column ``kind``)."""
    if compared:
        figure = report.plot_forest(kind)
    else:
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
