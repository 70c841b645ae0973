"""What a :class:`~fairmedfm_fast.ModelComparison` shows: the forest of the models on one summary column
(matplotlib, imported on first use) and its HTML page, findings first as the report's page (``html.py``,
``page.py``): which model leads, which are indistinguishable from it, then the leaderboard, the forest,
the differences and the settings."""
from __future__ import annotations

import html
import math
from typing import Any

import numpy as np

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


def _e(value: Any) -> str:
    return html.escape(str(value))


def _f(value: Any, digits: int = 4) -> str:
    if value is None or (isinstance(value, (float, np.floating)) and not math.isfinite(value)):
        return "–"
    return f"{float(value):.{digits}f}"


def _yes(value: Any) -> str:
    return "–" if value is None or (isinstance(value, float) and math.isnan(value)) else "yes" if value else "no"
