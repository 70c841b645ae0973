"""What a :class:`~fairmedfm_fast.ModelComparison` shows: the forest of the models on one summary column
(matplotlib, imported on first use) and its HTML page, findings first as the report's page (``html.py``,
``page.py``): which model leads, which are indistinguishable from it, then the leaderboard, the forest,
the differences and the settings."""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from .page import escaped, interval_text, number, settings_table

#: The most rows of differences the page lists (``comparison.differences`` holds every one).
DIFFERENCES_LISTED = 200


def _status(board) -> list[str]:
    """Each model's place beside the best: "best", "same" (not distinguishable), "differs", "untested"."""
    out = []
    for rank, same in zip(board["rank"], board["indistinguishable_from_best"]):
        out.append("best" if rank == 1 else "untested" if same is None else "same" if same else "differs")
    return out


#: The colour of each status in the forest.
COLOURS = {"best": "C3", "same": "C0", "differs": "0.55", "untested": "C1"}
#: What each colour and mark of the forest says.
LEGEND = {"best": "red: best", "same": "blue: not distinguishable from it", "differs": "grey: differs",
          "untested": "orange: undecided (None in the leaderboard)", "small": "hollow: small group"}


def forest_figure(comparison, column: str = "worst-auc", attribute: str | None = None,
                  higher_is_better: bool | None = None):
    """The models ranked on ``column`` of ``attribute``, best on top: each value with its paired bootstrap
    interval (when ``n_boot`` was given), the best in red with a dashed line at its value, the models not
    distinguishable from it in blue, those that differ in grey, hollow where a small group defines the
    value."""
    from .pictures import figure_class, figure_text

    board = comparison.leaderboard(column, attribute, higher_is_better)
    attribute = board.attrs["attribute"]
    n = len(board)
    height = 0.32 * n + 1.5
    longest = max(len(str(name)) for name in board.index)
    figure = figure_class()(figsize=(6.4, height))
    figure.subplots_adjust(left=min(0.45, 0.06 + 0.013 * longest), right=0.97, top=1 - 0.8 / height,
                           bottom=0.5 / height)
    ax = figure.add_subplot()
    ys = np.arange(n)[::-1].astype(np.float64)
    values = board["value"].to_numpy(np.float64)
    interval = "ci_low" in board.columns
    if interval:
        ax.hlines(ys, board["ci_low"].to_numpy(np.float64), board["ci_high"].to_numpy(np.float64), colors="0.25",
                  linewidth=1.2, gid=f"comparison-interval:{column}:{attribute}")
    statuses = _status(board)
    colours = [COLOURS[status] for status in statuses]
    faces = ["white" if small else colour for small, colour in zip(board["small_group"], colours)]
    ax.scatter(values, ys, s=40, zorder=3, facecolors=faces, edgecolors=colours, linewidths=1.3,
               gid=f"comparison:{column}:{attribute}")
    if math.isfinite(values[0]):
        ax.axvline(values[0], color=COLOURS["best"], linestyle="--", linewidth=1, zorder=1)
    ax.set_yticks(ys, [figure_text(name) for name in board.index], fontsize=8)
    ax.set_ylim(-0.7, n - 0.3)
    ax.tick_params(axis="x", labelsize=8)
    ax.grid(axis="x", color="0.93")
    ax.set_xlabel(column, fontsize=9)
    ax.set_title(f"{figure_text(column)} of {figure_text(attribute)}", fontsize=10, y=1.0, pad=5)
    level = comparison.metadata.get("ci", 0.95)
    shown = [*dict.fromkeys(statuses), *(["small"] if board["small_group"].any() else [])]
    lines = f"lines: {level:.0%} paired bootstrap intervals; " if interval else ""
    figure.suptitle(f"{lines}dashed: the best's value\n" + "; ".join(LEGEND[key] for key in LEGEND if key in shown),
                    fontsize=8, y=1 - 0.1 / height, va="top")
    return figure


def _yes(value: Any) -> str:
    return "–" if value is None or (isinstance(value, float) and math.isnan(value)) else "yes" if value else "no"


def _tests(comparison) -> tuple[str, str, str]:
    """(the p-value column ``significant`` reads, its interval's low and high columns): the paired
    bootstrap's where it ran, else the analytic one's; ("", "", "") where neither ran."""
    frame, adjust = comparison.differences, comparison.metadata.get("p_adjust")
    for test, low, high in (("p_bootstrap", "ci_low", "ci_high"),
                            ("p_analytic", "ci_low_analytic", "ci_high_analytic")):
        if test in frame.columns:
            return (f"{test}_{adjust}" if adjust else test), low, high
    return "", "", ""


def _names(names) -> str:
    return ", ".join(f"<b>{escaped(name)}</b>" for name in names)


def findings(comparison, board) -> str:
    """Which model leads on the leaderboard's column, which are indistinguishable from it (the test and
    its adjustment named), which differ, which are undecided, and the small groups."""
    meta = comparison.metadata
    column, attribute = board.attrs["column"], board.attrs["attribute"]
    level = float(meta.get("ci", 0.95))
    best, statuses = board.index[0], dict(zip(board.index, _status(board)))
    interval = interval_text(board["ci_low"].iloc[0], board["ci_high"].iloc[0]) if "ci_low" in board.columns else ""
    interval = f" ({level:.0%} interval {interval})" if interval else ""
    parts = ['<section id="findings"><h2>Findings</h2>',
             f'<p class="headline">On <b>{escaped(column)}</b> of <b>{escaped(attribute)}</b>, <b>{escaped(best)}</b> leads: '
             f"{number(board['value'].iloc[0], 4)}{interval}.</p>"]
    groups = {status: [name for name, s in statuses.items() if s == status] for status in ("same", "differs",
                                                                                           "untested")}
    sentences = []
    if groups["same"]:
        sentences.append(f"Indistinguishable from it: {_names(groups['same'])}.")
    if groups["differs"]:
        sentences.append(f"Shown to differ from it: {_names(groups['differs'])}.")
    if groups["untested"]:
        sentences.append(f"Undecided: {_names(groups['untested'])} (no paired test, too few replicates for the "
                         "adjusted level, or a small group defines a value).")
    if not (groups["same"] or groups["differs"]):
        sentences.append("No model is told apart from it.")
    parts.append(f"<p>{' '.join(sentences)}</p>")
    test, _, _ = _tests(comparison)
    adjust = meta.get("p_adjust")
    if test:
        kind = "paired bootstrap" if test.startswith("p_bootstrap") else "analytic (DeLong) paired"
        how = f"{escaped(adjust)}-adjusted over {escaped(meta.get('family', ''))}" if adjust else "not adjusted (p_adjust=None)"
        parts.append(f'<p class="note">A model is indistinguishable from the best when their difference is not '
                     f"significant: significant means the {kind} p-value, {how}, is below {1 - level:g} and the "
                     f"{level:.0%} interval of the difference excludes 0.</p>")
    else:
        parts.append('<p class="note">No paired test was run (n_boot=0, no interval="analytic"): no model is told '
                     "apart from the best.</p>")
    small = [name for name, flag in zip(board.index, board["small_group"]) if flag]
    if small:
        parts.append(f'<p class="flag">A small group (fewer than 10 positives or negatives) defines the value of '
                     f"{', '.join(map(escaped, small))}: not estimable, never called significant.</p>")
    parts += [f'<p class="flag">{escaped(note)}</p>' for note in meta.get("notes") or ()]
    parts.append("</section>")
    return "".join(parts)


def leaderboard_table(board) -> str:
    body = []
    intervals = "ci_low" in board.columns
    for name, row in board.iterrows():
        bounds = f"<td>{interval_text(row['ci_low'], row['ci_high'])}</td>" if intervals else ""
        small = '<span class="flag">small group</span>' if row["small_group"] else ""
        body.append(f"<tr><td>{int(row['rank'])}</td><th>{escaped(name)}</th><td>{number(row['value'], 4)}</td>{bounds}"
                    f"<td class='text'>{'(best)' if row['rank'] == 1 else _yes(row['indistinguishable_from_best'])}</td><td class='text note'>{small}</td></tr>")
    head = "<th>interval</th>" if intervals else ""
    return ("<table class='fit models'><thead><tr><th>rank</th><th>model</th><th>value</th>" + head
            + "<th>indistinguishable from the best</th><th>note</th></tr></thead><tbody>" + "".join(body)
            + "</tbody></table>")


def differences_table(comparison, column: str, attribute: str) -> str:
    """The differences of ``attribute``: every column's, or ``column``'s alone when there are more than
    :data:`DIFFERENCES_LISTED` rows, at most that many; the paired test ``significant`` reads, and the
    swap test where it ran."""
    frame = comparison.differences.xs(attribute, level="attribute")
    chosen = frame.index.get_level_values("column") == column
    frame = frame[chosen] if len(frame) > DIFFERENCES_LISTED else frame.iloc[np.argsort(~chosen, kind="stable")]
    shown = frame.head(DIFFERENCES_LISTED)
    test, low, high = _tests(comparison)
    swap = "p_swap" in frame.columns
    body = []
    for (model, other, name), row in shown.iterrows():
        bounds = interval_text(row[low], row[high]) if test else ""
        p = number(row[test], 4) if test else ""
        cells = f"<td>{number(row['p_swap'], 4)}</td>" if swap else ""
        why = f"<span class='flag'>small group: {escaped(row['not_estimable'])}</span>" if row["small_group"] else ""
        body.append(f"<tr><th>{escaped(model)}</th><th>{escaped(other)}</th><th>{escaped(name)}</th><td>{number(row['value'], 4)}</td>"
                    f"<td>{number(row['other_value'], 4)}</td><td>{row['difference']:+.4f}</td><td>{bounds}</td><td>{p}</td>"
                    f"{cells}<td class='text'>{_yes(row['significant'])}</td><td class='text note'>{why}</td></tr>")
    listed = (f"The first {len(shown)} of {len(frame)} differences of {escaped(column)}" if len(shown) < len(frame) else
              f"{len(shown)} differences") + f" of {escaped(attribute)}; comparison.differences holds every one."
    swap_note = (" p (swap): the swap permutation test, a test that the two models are exchangeable, not that they "
                 "are equally fair.") if swap else ""
    head = (f"<th>model</th><th>other</th><th>column</th><th>value</th><th>other's</th><th>difference</th>"
            f"<th>interval</th><th>{escaped(test or 'p-value')}</th>{'<th>p (swap)</th>' if swap else ''}"
            "<th>significant</th><th>note</th>")
    return (f'<p class="note">{listed}{swap_note}</p><div class="wide"><table class="fit models"><thead><tr>{head}</tr>'
            f"</thead><tbody>{''.join(body)}</tbody></table></div>")


def render_page(comparison, column: str = "worst-auc", attribute: str | None = None, dpi: int = 100,
                figures: bool = True) -> str:
    """The comparison as one self-contained HTML page: findings, leaderboard, forest, differences, settings."""
    from .._version import __version__
    from . import html as _html

    board = comparison.leaderboard(column, attribute)
    attribute = board.attrs["attribute"]
    meta = comparison.metadata
    parts = _html.head("Model comparison")
    parts.append(f'<p class="note">Made by fairmedfm_fast {escaped(__version__)}; {len(comparison.reports)} models, '
                 f"{escaped(meta.get('n_samples', '?'))} samples.</p>")
    parts += [findings(comparison, board), "<h2>Leaderboard</h2>", leaderboard_table(board)]
    if figures:
        caption = (f"Each model's {column} of {attribute}, best on top; red: the best, blue: not distinguishable "
                   "from it, grey: shown to differ, orange: undecided, hollow: a small group defines the value.")
        parts += ["<h2>Figure</h2>", _html.embedded_figure(forest_figure(comparison, column, attribute), caption, dpi)]
    parts += ["<h2>Differences</h2>", differences_table(comparison, column, attribute)]
    parts += ["<h2>Settings</h2>", settings_table(meta), "</body>", "</html>"]
    return "\n".join(parts) + "\n"
