"""The HTML page of a :class:`~fairmedfm_fast.report.FairnessReport`: one self-contained file (figures
inlined as PNG, nothing fetched), with the findings, tables and glossary of ``page.py``.

The figures are those of ``pictures.py`` (matplotlib, imported on first use).
"""
from __future__ import annotations

import base64
import html
import io
import math
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .pictures import KINDS, PLOTTERS, default_kinds, figure_class, plot


def png_bytes(figure, dpi: int = 100) -> bytes:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=dpi)
    return buffer.getvalue()


# ---------------------------------------------------------------------------------------------
# HTML
# ---------------------------------------------------------------------------------------------

_STYLE = """
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; margin: 2em auto;
       max-width: 1200px; padding: 0 1em; color: #222; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; margin-top: 1.6em; border-bottom: 1px solid #ddd; }
table { border-collapse: collapse; font-size: 0.85em; margin: 0.5em 0; }
th, td { border: 1px solid #ddd; padding: 0.25em 0.6em; text-align: right; }
th { background: #f4f4f4; } tbody tr:nth-child(even) { background: #fafafa; }
.warnings li { color: #8a4b00; margin: 0.2em 0; }
figure { margin: 1em 0; } figure img { max-width: 100%; height: auto; border: 1px solid #eee; box-sizing: border-box; }
figcaption { font-size: 0.85em; color: #555; }
.note { color: #555; font-style: italic; } .wide { overflow-x: auto; }
table.fit { max-width: 100%; } table.fit td, table.fit th { overflow-wrap: anywhere; }
table.models td, table.models th { white-space: nowrap; overflow-wrap: normal; }
table.models td.note { white-space: normal; min-width: 14em; }
td.text { text-align: left; } td.nowrap { white-space: nowrap; } .flag { color: #8a4b00; } .headline { font-size: 1.1em; }
li, p { overflow-wrap: anywhere; } section#findings ul { margin-top: 0.2em; }
"""


def _table(frame) -> str:
    table = frame.to_html(float_format=lambda v: f"{v:.4f}", na_rep="", border=0, escape=True)
    return f'<div class="wide">{table}</div>'  # wide tables scroll instead of spilling over


def _pairs_table(values: dict[str, Any]) -> str:
    rows = "".join(f"<tr><th>{html.escape(str(key))}</th><td>{html.escape(_format(value))}</td></tr>"
                   for key, value in values.items())
    return f'<table class="dataframe">{rows}</table>'


def _format(value: Any) -> str:
    if isinstance(value, (float, np.floating)):
        return f"{float(value):.4f}" if math.isfinite(value) else "NaN"
    return str(value)


#: Pixels across the page's content (body max-width 1200px less its padding).
PAGE_WIDTH = 1168


def _figure_html(report, kind: str, caption: str, dpi: int) -> str:
    """One figure of the page as an inlined PNG with its caption, or a note saying why it cannot be drawn."""
    try:
        figure = plot(report, kind)
    except ValueError as error:
        return f'<p class="note">{html.escape(kind)}: {html.escape(str(error))}</p>'
    return embedded_figure(figure, caption, dpi)


def embedded_figure(figure, caption: str, dpi: int) -> str:
    """``figure`` as an inlined PNG with its caption."""
    # No wider than the page shows it (wider ones are scaled down by the browser): fewer pixels to draw,
    # to encode and to send, the same picture.
    dpi = min(dpi, PAGE_WIDTH / float(figure.get_size_inches()[0]))
    encoded = base64.b64encode(png_bytes(figure, dpi)).decode("ascii")
    return (f'<figure><img src="data:image/png;base64,{encoded}" alt="{html.escape(caption)}">'
            f"<figcaption>{html.escape(caption)}</figcaption></figure>")


def render_html(report, figures: bool | Iterable[str] = True, dpi: int = 100, notes: Sequence[str] = ()) -> str:
    """The report as one HTML page: ``notes`` (what the command line said about its input),
    warnings, tables and PNG figures inlined as base64."""
    from .._version import __version__

    if figures is True:
        kinds = default_kinds(report)
        figure_class()  # fail early, with the install hint, when matplotlib is missing
    elif figures is False or figures is None:
        kinds = ()
    else:
        kinds = tuple(figures)
        for kind in kinds:
            if kind not in PLOTTERS:
                raise ValueError(f"figures names {kind!r}, which is not a plot kind; use some of "
                                 f"{', '.join(map(repr, KINDS))}")
    if report.task == "cls" and getattr(report, "_gaps", None) is not None and not getattr(report, "tasks", None):
        return _findings_page(report, kinds, dpi, notes)
    task = {"cls": "classification", "seg": "segmentation"}.get(report.task, str(report.task))
    title = f"Fairness report ({task})"
    parts = [*head(title),
             f'<p class="note">Made by fairmedfm_fast {html.escape(str(__version__))}; '
             f"{len(report.summary)} attribute(s).</p>"]
    parts += _notes_and_warnings(report, notes)
    parts += ["<h2>Summary per attribute</h2>", _table(report.summary)]
    if report.overall:
        parts += ["<h2>All samples</h2>", _pairs_table(report.overall)]
    parts += ["<h2>Per group</h2>", _table(report.by_group)]
    ci = getattr(report, "ci", None)
    if isinstance(ci, dict):
        level, n_boot = ci.get("level"), ci.get("n_boot")
        about = f"{level:.0%} percentile intervals from {n_boot} bootstrap resamples" if level and n_boot else ""
        parts += ["<h2>Intervals</h2>", f'<p class="note">{html.escape(about)}</p>']
        parts += [_table(ci[key]) for key in ("summary", "by_group") if ci.get(key) is not None]
    p_values = getattr(report, "p_values", None)
    if p_values is not None:
        parts += ["<h2>Permutation p-values</h2>", _table(p_values)]
    if kinds:
        parts.append("<h2>Figures</h2>")
    # A report of several tasks draws each task's figures under the task's name.
    sources = list(report.tasks.items()) if getattr(report, "tasks", None) else [(None, report)]
    for (name, source), kind in ((source, kind) for source in sources for kind in kinds):
        caption = _CAPTIONS.get(kind, f"Distribution of per-sample {kind.upper()} in each group.")
        parts.append(_figure_html(source, kind, caption if name is None else f"Task {name}: {caption}", dpi))
    if report.metadata:
        parts += ["<h2>Input</h2>", _pairs_table(report.metadata)]
    parts += ["</body>", "</html>"]
    return "\n".join(parts) + "\n"


def _notes_and_warnings(report, notes: Sequence[str]) -> list[str]:
    parts = []
    if notes:
        items = "".join(f"<li>{html.escape(str(message))}</li>" for message in notes)
        parts += ["<h2>Notes</h2>", f'<ul class="notes">{items}</ul>']
    parts.append("<h2>Warnings</h2>")
    if report.warnings:
        items = "".join(f"<li>{html.escape(str(message))}</li>" for message in report.warnings)
        parts.append(f'<ul class="warnings">{items}</ul>')
    else:
        parts.append('<p class="note">None.</p>')
    return parts


def head(title: str) -> list[str]:
    return ["<!DOCTYPE html>", '<html lang="en">', "<head>", '<meta charset="utf-8">',
            # Nothing on the page may load from anywhere: images are data: URLs, the style is inline.
            '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; img-src data:; '
            'style-src \'unsafe-inline\'">',
            '<meta name="viewport" content="width=device-width, initial-scale=1">',
            f"<title>{html.escape(title)}</title>", f"<style>{_STYLE}</style>", "</head>", "<body>",
            f"<h1>{html.escape(title)}</h1>"]


def _findings_page(report, kinds: Sequence[str], dpi: int, notes: Sequence[str]) -> str:
    """A classification report of evaluate: findings first, then the tables (values beside their
    intervals), the figures, the glossary and the settings."""
    from .._version import __version__
    from . import page as _page

    parts = head("Fairness report (classification)")
    parts.append(f'<p class="note">Made by fairmedfm_fast {html.escape(str(__version__))}; '
                 f"{len(report.summary)} attribute(s), {report.metadata.get('n_samples', '?')} samples.</p>")
    parts.append(_page.findings(report))
    parts += _notes_and_warnings(report, notes)
    ci = report.ci
    about = ""
    if ci and ci.get("summary") is not None:
        about = (f"Intervals: {ci['level']:.0%} from {ci['n_boot']} bootstrap resamples (percentile for the "
                 "values, simultaneous over the pairs of groups for the gaps). ")
    elif ci and ci.get("analytic") is not None:
        about = (f"Intervals: {ci['level']:.0%} analytic (DeLong for the AUC, Wilson for the rates; "
                 "simultaneous over the pairs of groups for the gaps, none for eod). ")
    parts += ["<h2>Summary</h2>", f'<p class="note">{html.escape(about)}JSON and CSV outputs hold every '
              "column; per group, the confusion counts are left out here.</p>", _page.summary_table(report)]
    parts += ["<h2>Per group</h2>", _page.group_tables(report)]
    if report.overall:
        parts += ["<h2>All samples</h2>", _pairs_table(_page.all_samples(report.overall))]
    if kinds:
        parts.append("<h2>Figures</h2>")
    for kind in kinds:
        parts.append(_figure_html(report, kind, _CAPTIONS.get(kind, kind), dpi))
        if kind == "pairwise":
            parts.append(_page.pairwise_numbers(report))
    parts.append(_page.glossary(report))
    parts += ["<h2>Settings</h2>", _page.settings_table(report.metadata), "</body>", "</html>"]
    return "\n".join(parts) + "\n"


_CAPTIONS = {
    "roc": "ROC curve of each group; dots mark each group's operating point at the attribute's best-F1 "
           "threshold (predicted positive: score above it). Dashed: all samples of the attribute.",
    "reliability": "Reliability diagram of each group: mean score against fraction positive in each "
                   "non-empty bin of the group's own 10 equal-width ECE bins.",
    "bars": "Per-group metrics (at the best-F1 threshold where it applies); dashed: all samples of the "
            "attribute.",
    "dice": "Distribution of per-sample Dice in each group.",
    "pairwise": "Difference of the metric between every pair of groups (row group minus column group), with its "
                "interval and p-value when the report has them (* p ≤ 0.05 after the adjustment over every pair, "
                "a family apart from the gap tests; bold: the interval excludes 0; a pair with a small group has "
                "no interval and no mark).",
    "forest": "Each group's value with its interval, one panel per metric on its own scale; dashed: all samples "
              "of the attribute; hollow dots: small groups.",
}


def write_html(report, path: str | Path | None, figures: bool | Iterable[str] = True, dpi: int = 100,
               notes: Sequence[str] = ()) -> str:
    text = render_html(report, figures, dpi, notes)
    if path is not None:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return text
