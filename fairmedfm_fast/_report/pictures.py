"""Pictures of a :class:`~fairmedfm_fast.report.FairnessReport`: matplotlib figures and a
self-contained HTML page.

The curves come from what :func:`fairmedfm_fast.evaluate` recorded while it had the samples sorted
(``measure(..., curves=True)``, ``_engine.Curves``): each group's positives and negatives at up to
``_engine.CURVE_POINTS`` cuts of the sorted order, hence points of its exact ROC curve, corners
included; its AUC and operating point (from the same pass as the report's numbers, never from the
thinned curve); and its ECE bin sums, the ones the report's ECE comes from. The report keeps these
summaries (``CurveSource``), never the samples: its size does not grow with them. Segmentation
reports get ``dice_data=(dice, attributes)`` for the Dice distributions (a value per image).

matplotlib is optional (``pip install matplotlib``) and imported on first use; figures are
``matplotlib.figure.Figure`` objects, never pyplot windows, so they work on any backend.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from .._engine import classification as _engine
from .._registry import metrics as _metric_registry
from .curves import GroupCurves, classification_curves, dice_by_group, select_names

KINDS = ("roc", "reliability", "bars", "dice", "pairwise", "forest")
SEGMENTATION_BARS = ("mean_dice",)
INSTALL = 'pip install matplotlib (or pip install ".[plot]" in a clone of fairmedfm_fast)'
_COLUMNS = 3  # axes per row in the per-attribute figures


def figure_class():
    try:
        from matplotlib.figure import Figure
    except ImportError as error:
        raise ImportError(f"plots need matplotlib, which is not installed; install it with {INSTALL}") from error
    return Figure


def _grid(n_panels: int, width: float = 4.2, height: float = 3.8, columns: int = _COLUMNS,
          margins: tuple[float, float, float, float, float, float] | None = None):
    """A figure of ``n_panels`` axes in rows of ``columns``. Without ``margins`` each panel takes
    ``width`` x ``height`` inches and matplotlib's constrained layout places them; with ``margins``
    (left, right, top, bottom, between columns, between rows, in inches) each axes is ``width`` x
    ``height`` inches where they say: no layout pass, which costs more than drawing the figures of
    the HTML page themselves."""
    Figure = figure_class()
    columns = max(1, min(columns, n_panels))
    rows = max(1, math.ceil(n_panels / columns))
    if margins is None:
        figure = Figure(figsize=(width * columns, height * rows), layout="constrained")
    else:
        left, right, top, bottom, wspace, hspace = margins
        total_width = left + right + columns * width + (columns - 1) * wspace
        total_height = top + bottom + rows * height + (rows - 1) * hspace
        figure = Figure(figsize=(total_width, total_height))
        figure.subplots_adjust(left=left / total_width, right=1 - right / total_width, top=1 - top / total_height,
                               bottom=bottom / total_height, wspace=wspace / width, hspace=hspace / height)
    axes = figure.subplots(rows, columns, squeeze=False).ravel()
    for extra in axes[n_panels:]:
        figure.delaxes(extra)
    return figure, list(axes[:n_panels])


def _title(ax, text: str, fontsize: float = 10) -> None:
    """The axes title at a fixed place (matplotlib would otherwise measure every tick label to place it)."""
    ax.set_title(text, fontsize=fontsize, y=1.0, pad=5)


def _axis_labels(ax, xlabel: str | None, ylabel: str | None, below: float = 0.36, beside: float = 0.42) -> None:
    """Axis labels ``below`` and ``beside`` inches from the axes, at fixed places (matplotlib would
    otherwise measure every tick label of the figure to place them)."""
    from matplotlib.transforms import ScaledTranslation

    scale = ax.figure.dpi_scale_trans
    if xlabel is not None:
        ax.set_xlabel(xlabel)
        ax.xaxis.set_label_coords(0.5, 0.0, transform=ax.transAxes + ScaledTranslation(0, -below, scale))
    if ylabel is not None:
        ax.set_ylabel(ylabel)
        ax.yaxis.set_label_coords(0.0, 0.5, transform=ax.transAxes + ScaledTranslation(-beside, 0, scale))


def figure_text(name: Any) -> str:
    """A group or attribute name as literal figure text: ``$`` would start mathtext, and a leading
    ``_`` would hide a legend entry."""
    text = str(name).replace("$", r"\$")
    return " " + text if text.startswith("_") else text


_MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*", "<", ">")
#: Above this many groups the legend goes outside the axes.
LEGEND_INSIDE_MAX = 6


def group_style(i: int) -> dict[str, Any]:
    """Colour and marker of the ``i``-th group: 20 colours (tab20, dark shades first) and 10 markers,
    a distinct pair for each of the first 200 groups."""
    from matplotlib import colormaps

    colours = colormaps["tab20"].colors
    return {"color": colours[(2 * i) % 20 + (i // 10) % 2], "marker": _MARKERS[(i + i // 20) % len(_MARKERS)]}


def _legend(ax, n_entries: int, loc: str) -> None:
    if n_entries <= LEGEND_INSIDE_MAX:
        ax.legend(loc=loc, fontsize=7)
    else:  # many groups: beside the axes, in columns of at most 20
        ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0, fontsize=6,
                  ncols=math.ceil(n_entries / 20))


def _skipped_note(skipped: list[str]) -> str:
    """The groups left out of a panel (one label only), named; "" when none."""
    if not skipped:
        return ""
    return "skipped (one label): " + ", ".join(figure_text(name) for name in skipped[:8]) + (
        ", ..." if len(skipped) > 8 else "")


def _skipped_groups(report, attribute: str) -> list[str]:
    table = report.by_group
    if "skipped" not in table.columns or attribute not in table.index.get_level_values(0):
        return []
    rows = table.loc[attribute]
    return [str(g) for g in rows.index[rows["skipped"].notna().to_numpy()]]


def _empty(ax, text: str) -> None:
    ax.text(0.5, 0.5, text, ha="center", va="center", transform=ax.transAxes, fontsize=9, wrap=True)


def _diagonal(ax) -> None:
    ax.plot([0, 1], [0, 1], linestyle=":", color="0.6", linewidth=1, label="_chance", gid="diagonal")
    ax.set_xlim(-0.01, 1.01)
    ax.set_ylim(-0.01, 1.01)
    ax.set_xticks(_UNIT_TICKS)
    ax.set_yticks(_UNIT_TICKS)
    ax.set_aspect("equal")


_UNIT_TICKS = (0.0, 0.5, 1.0)  # few: each tick costs more to make than a curve to draw


def _curve_figure(report, attributes, prefix: str, draw, axis_labels: tuple[str, str], subtitle,
                  legend_loc: str, title: str):
    """One axes per attribute: a curve per group with both labels, then a dashed one for all."""
    curves = classification_curves(report, attributes)
    most = max([len(entry.groups) + 1 for entry in curves], default=0)
    titles = ["\n".join(filter(None, (figure_text(entry.attribute), subtitle(entry),
                                       _skipped_note(_skipped_groups(report, entry.attribute)))))
              for entry in curves]
    lines = max([title.count("\n") + 1 for title in titles], default=1)
    beside = 3.0 * math.ceil(most / 20) if most > LEGEND_INSIDE_MAX else 0.0  # legends beside the axes
    # Square axes of 3.2 inches, room below for the tick and axis labels, above for the titles.
    top, between = 0.5 + 0.18 * lines, 0.75 + 0.18 * lines
    figure, axes = _grid(len(curves), 3.2, 3.2, 2 if beside else _COLUMNS,
                         (0.72, 0.2 + beside, top, 0.55, 0.8 + beside, between))
    for ax, entry, heading in zip(axes, curves, titles):
        _diagonal(ax)
        for i, curve in enumerate([*entry.groups, *([entry.overall] if entry.overall is not None else [])]):
            if curve is entry.overall:
                draw(ax, curve, {"linewidth": 1.0, "linestyle": "--", "color": "0.25",
                                 "gid": f"{prefix}-all:{curve.name}"})
            else:
                draw(ax, curve, {"linewidth": 1.5, "gid": f"{prefix}:{curve.name}", **group_style(i)})
        _axis_labels(ax, *axis_labels)
        _title(ax, heading)
        if entry.groups:
            _legend(ax, len(entry.groups) + (entry.overall is not None), legend_loc)
        else:
            _empty(ax, "no group has both labels")
    figure.suptitle(title)
    return figure


def _draw_roc(ax, curve: GroupCurves, style: dict) -> None:
    style = {**style, "markevery": 0.2, "markersize": 4} if "marker" in style else style
    line, = ax.plot(curve.fpr, curve.tpr, label=f"{figure_text(curve.name)} (n={curve.n}, AUC {curve.auc:.3f})", **style)
    if not math.isnan(curve.operating_point[0]):
        ax.plot(*curve.operating_point, marker="o", markersize=5, linestyle="none", color=line.get_color(),
                label="_nolegend_", gid=f"operating:{curve.name}")


def _draw_reliability(ax, curve: GroupCurves, style: dict) -> None:
    ax.plot(curve.bin_score, curve.bin_positive, markersize=3.5,
            label=f"{figure_text(curve.name)} (ECE {curve.ece:.3f})", **{"marker": "o", **style})


def plot_roc(report, attributes=None):
    which = "fixed threshold" if report.metadata.get("threshold") is not None else "best-F1 threshold"

    def subtitle(entry):
        return "" if math.isnan(entry.threshold) else f"dots: {which} {entry.threshold:.4g}"

    return _curve_figure(report, attributes, "roc", _draw_roc, ("False positive rate", "True positive rate"),
                         subtitle, "lower right", "ROC curve per group")


def plot_reliability(report, attributes=None):
    return _curve_figure(report, attributes, "reliability", _draw_reliability,
                         ("Mean score in bin", "Fraction positive in bin"),
                         lambda entry: f"{_engine.ECE_BINS} equal-width bins per group", "upper left",
                         "Reliability diagram per group (the ECE bins)")


def _interval(report, attribute: str, groups: list, metric: str) -> tuple[np.ndarray, np.ndarray] | None:
    """Interval ends from ``{metric}_lo``/``_hi`` columns of ``report.ci["by_group"]`` (the
    bootstrap intervals of ``evaluate(..., n_boot=...)``), of ``report.ci``, of
    ``report.ci["analytic"]["by_group"]`` (``interval="analytic"``) or of ``by_group``."""
    ci = getattr(report, "ci", None)
    low, high = f"{metric}_lo", f"{metric}_hi"
    analytic = (ci.get("analytic") or {}).get("by_group") if isinstance(ci, dict) else None
    for table in (ci.get("by_group") if isinstance(ci, dict) else ci, analytic, report.by_group):
        if table is None or not hasattr(table, "columns") or low not in table.columns or high not in table.columns:
            continue
        if table.index.nlevels == 2:  # (attribute, group): the attribute's rows, then the groups by position
            try:
                part = table.xs(attribute, level=0)
            except (KeyError, TypeError):
                continue
            positions = part.index.get_indexer(groups)
            if (positions < 0).any():
                continue
            return (part[low].to_numpy(dtype=np.float64)[positions],
                    part[high].to_numpy(dtype=np.float64)[positions])
        try:  # a list of index tuples costs a MultiIndex of its own: a few milliseconds a call
            rows = table.loc[[(attribute, group) for group in groups]]
        except (KeyError, TypeError):
            continue
        return rows[low].to_numpy(dtype=np.float64), rows[high].to_numpy(dtype=np.float64)
    return None


def plot_bars(report, attributes=None):
    # which metrics, and whether as bars or as dots around the all-samples value: from the registry
    if report.task == "cls":
        shown = dict(_metric_registry.shown(report.by_group.columns))
    else:
        shown = {m: "bars" for m in SEGMENTATION_BARS if m in report.by_group.columns}
    metrics = list(shown)
    names = [str(name) for name in report.summary.index]
    if attributes is not None:
        names = select_names(names, attributes)
    Figure = figure_class()
    rows, columns = max(1, len(names)), max(1, len(metrics))
    most = max([len(report.by_group.loc[name]) for name in names if name in report.by_group.index.get_level_values(0)],
               default=1)
    width = max(2.6, 0.18 * most + 0.8)  # room for every group's tick label
    figure = Figure(figsize=(width * columns + 0.8, 2.5 * rows + 0.6 + (0.5 if most > 8 else 0)),
                    layout="constrained")
    axes = figure.subplots(rows, columns, squeeze=False)
    has_skipped = "skipped" in report.by_group.columns
    has_interval = False
    for r, name in enumerate(names):
        table = report.by_group.loc[name] if name in report.by_group.index.get_level_values(0) else None
        overall = _attribute_overall(report, name)
        for c in range(columns):
            ax = axes[r, c]
            if not metrics:
                _empty(ax, "no per-group metrics")
                continue
            metric = metrics[c]
            if table is None:
                _empty(ax, "no groups")
                continue
            valid = table[metric].notna()
            if has_skipped:
                valid &= table["skipped"].isna()
            groups = [str(g) for g in table.index[valid.to_numpy()]]
            values = table[metric].to_numpy(dtype=np.float64)[valid.to_numpy()]
            if len(groups) == 0:
                _empty(ax, "no evaluable group")
            else:
                x = np.arange(len(groups))
                styles = [group_style(i) for i in range(len(groups))]
                reference = overall.get(metric, math.nan) if overall is not None else math.nan
                if shown[metric] == "dots":  # gaps of values near 1 vanish on bars from 0: dots around all samples
                    base = reference if math.isfinite(reference) else float(np.mean(values))
                    ax.vlines(x, base, values, colors=[st["color"] for st in styles], linewidth=1.0,
                              gid=f"stems:{metric}")
                    for i, st in enumerate(styles):
                        ax.plot(x[i], values[i], linestyle="none", markersize=6, gid=f"dot:{metric}:{groups[i]}",
                                **st)
                else:
                    bars = ax.bar(x, values, color=[st["color"] for st in styles], gid=f"bars:{metric}")
                    bars.set_label("_bars")
                interval = _interval(report, name, list(table.index[valid.to_numpy()]), metric)
                if interval is not None:  # drawn as lines: a percentile interval need not hold the estimate
                    has_interval = True
                    ax.vlines(x, *interval, colors="black", linewidth=1.2, gid=f"interval:{metric}")
                    for ends in interval:
                        ax.hlines(ends, x - 0.12, x + 0.12, colors="black", linewidth=1.2)
                many = len(groups) > 8
                ax.set_xticks(np.arange(len(groups)), [figure_text(g) for g in groups],
                              rotation=90 if many else 30 if len(groups) > 3 else 0,
                              ha="center" if many or len(groups) <= 3 else "right", fontsize=6 if many else 8)
                if shown[metric] == "dots":
                    _zoom(ax, values, reference, interval)
                if overall is not None and math.isfinite(overall.get(metric, math.nan)):
                    ax.axhline(overall[metric], color="0.3", linestyle="--", linewidth=1,
                               label="all samples", gid="overall")
            if has_skipped and c == 0:
                ax.set_xlabel(_skipped_note([str(g) for g in table.index[table["skipped"].notna().to_numpy()]]),
                              fontsize=6, loc="left")
            if r == 0:
                ax.set_title(metric, fontsize=10)
            if c == 0:
                ax.set_ylabel(figure_text(name))
            ax.tick_params(axis="y", labelsize=8)
    ci = getattr(report, "ci", None)
    level = ci.get("level") if isinstance(ci, dict) else None
    kind = "bootstrap" if isinstance(ci, dict) and ci.get("by_group") is not None else "analytic"
    whiskers = f"; whiskers: {level:.0%} {kind} intervals" if level else "; whiskers: intervals"
    title = "Metrics per group (dashed: all samples of the attribute"
    figure.suptitle(title + (whiskers if has_interval else "") + ")", fontsize=11)
    return figure


def _forest_blocks(report, attributes) -> list:
    """(attribute, its evaluable rows of ``by_group``) of each selected attribute that has some."""
    names = [str(name) for name in report.summary.index]
    if attributes is not None:
        names = select_names(names, attributes)
    present = set(report.by_group.index.get_level_values(0))
    blocks = []
    for name in names:
        if name not in present:
            continue
        table = report.by_group.loc[name]
        if "skipped" in table.columns:
            table = table[table["skipped"].isna().to_numpy()]
        if len(table):
            blocks.append((name, table))
    return blocks


def _forest_rows(blocks: list, rows: int) -> tuple[list[str], list[int], list]:
    """The y labels and positions of the forest plot (each attribute's name, then its groups, top down)
    and, per attribute, (name, rows of by_group, their y positions)."""
    labels, positions, layout = [], [], []
    y = rows - 1
    for name, table in blocks:
        labels.append(figure_text(name))
        positions.append(y)
        layout.append((name, table, np.arange(y - 1, y - 1 - len(table), -1)))
        for group in table.index:
            labels.append("  " + figure_text(group))
        positions.extend(range(y - 1, y - 1 - len(table), -1))
        y -= len(table) + 1
    return labels, positions, layout


def plot_forest(report, attributes=None):
    """Point and interval of every group, one panel per metric (each on its own scale), the attributes
    stacked in each panel with a dashed mark at all of the attribute's samples; small groups are hollow.
    Six axes whatever the number of attributes, laid out by hand: drawing stays quick."""
    from matplotlib.ticker import MaxNLocator

    if report.task == "cls":  # the metrics of the bar chart, from the registry
        metrics = [key for key, _ in _metric_registry.shown(report.by_group.columns)]
    else:
        metrics = [m for m in SEGMENTATION_BARS if m in report.by_group.columns]
    blocks = _forest_blocks(report, attributes)
    Figure = figure_class()
    rows = sum(len(table) + 1 for _, table in blocks) or 1
    height = 0.22 * rows + 1.1
    columns = max(1, len(metrics))
    figure = Figure(figsize=(min(12.0, 1.75 * columns + 1.6), height))
    left = 1.45 / min(12.0, 1.75 * columns + 1.6)
    figure.subplots_adjust(left=left, right=0.99, top=1 - 0.55 / height, bottom=0.45 / height, wspace=0.12)
    axes = figure.subplots(1, columns, squeeze=False)[0]  # one y scale, labelled once: no shared ticks to make
    labels, positions, layout = _forest_rows(blocks, rows)
    has_interval = False
    for c, metric in enumerate(metrics):
        ax = axes[c]
        for k, (name, table, ys) in enumerate(layout):
            values = table[metric].to_numpy(dtype=np.float64)
            small = table["small_group"].to_numpy(dtype=bool) if "small_group" in table.columns else np.zeros(
                len(table), bool)
            interval = _interval(report, name, list(table.index), metric)
            if interval is not None:
                has_interval = True
                ax.hlines(ys, *interval, colors="0.2", linewidth=1.1)
            ax.scatter(values, ys, s=18, zorder=3, color=np.where(small, "white", "C0").tolist(), edgecolors="C0",
                       gid=f"forest:{metric}:{name}")
            reference = (_attribute_overall(report, name) or {}).get(metric, math.nan)
            if math.isfinite(reference):
                ax.vlines(reference, ys[-1] - 0.4, ys[0] + 0.4, colors="0.5", linestyles="--", linewidth=1)
            if k:
                ax.axhline(ys[0] + 1.5, color="0.85", linewidth=0.8)
        _title(ax, metric, 9)
        ax.xaxis.set_major_locator(MaxNLocator(4))
        ax.tick_params(axis="x", labelsize=7)
        ax.grid(axis="x", color="0.93")
        ax.set_ylim(-0.7, rows - 0.3)
        if c:
            ax.set_yticks([])
    axes[0].set_yticks(positions, labels, fontsize=7)
    for label in axes[0].get_yticklabels():
        if not label.get_text().startswith("  "):
            label.set_fontweight("bold")
    if not blocks:
        _empty(axes[0], "no evaluable group")
    ci = getattr(report, "ci", None)
    bootstrap = isinstance(ci, dict) and ci.get("by_group") is not None  # else interval="analytic"'s
    analytic = (ci.get("analytic") or {}) if isinstance(ci, dict) else {}
    level = (ci.get("level") if bootstrap else analytic.get("level")) if isinstance(ci, dict) else None
    kind = "bootstrap" if bootstrap else "analytic"
    lines = f"lines: {level:.0%} {kind} intervals; " if has_interval and level else ""
    figure.suptitle(f"Each group's value ({lines}dashed: all samples of the attribute; hollow: small group)",
                    fontsize=9)
    return figure


def _zoom(ax, values: np.ndarray, reference: float, interval) -> None:
    """Y limits around the dots, the all-samples line and the intervals (not from 0)."""
    shown = [values, [reference] if math.isfinite(reference) else []]
    if interval is not None:
        shown += [np.asarray(end)[np.isfinite(end)] for end in interval]
    everything = np.concatenate([np.asarray(part, dtype=np.float64) for part in shown])
    low, high = float(everything.min()), float(everything.max())
    pad = max(0.15 * (high - low), 0.01)
    ax.set_ylim(low - pad, high + pad)


def _attribute_overall(report, attribute: str) -> dict[str, Any] | None:
    overall = getattr(report, "_attribute_overall", {}).get(attribute)
    if overall:
        return overall
    if report.task == "seg" and attribute in report.summary.index and "mean_dice" in report.summary.columns:
        return {"mean_dice": float(report.summary.loc[attribute, "mean_dice"])}
    return None


def plot_dice(report, attributes=None, metric="dice"):
    data = dice_by_group(report, attributes, metric)
    entry = _metric_registry.segmentation_metric(metric)
    label = entry.display if entry is not None and metric == entry.name else metric.upper()
    figure, axes = _grid(len(data))
    for ax, (name, groups) in zip(axes, data):
        if not groups:
            _empty(ax, "no group has Dice scores")
            ax.set_title(figure_text(name), fontsize=10)
            continue
        positions = np.arange(1, len(groups) + 1)
        parts = ax.boxplot([values for _, values in groups], positions=positions, widths=0.6,
                           showfliers=True, patch_artist=True, medianprops={"color": "black"})
        for i, box in enumerate(parts["boxes"]):
            box.set_facecolor(group_style(i)["color"])
            box.set_alpha(0.55)
            box.set_gid(f"dice:{groups[i][0]}")
        means = [float(values.mean()) for _, values in groups]
        ax.plot(positions, means, marker="D", markersize=5, linestyle="none", color="black", label="group mean",
                gid="dice-mean")
        ax.set_xticks(positions, [f"{figure_text(g)}\n(n={len(v)})" for g, v in groups], fontsize=8)
        ax.set_ylabel(label)
        if entry is not None and entry.limits is not None:  # a fixed range from the registry (Dice, NSD)
            low, high = entry.limits
            ax.set_ylim(low - 0.03 * (high - low), high + 0.03 * (high - low))
        ax.set_title(figure_text(name), fontsize=10)
        ax.legend(loc="lower right", fontsize=7)
    figure.suptitle(f"{label} per group (boxes: quartiles, diamonds: means)")
    return figure


def pair_details(table) -> tuple[tuple[str, str] | None, str | None, list[str]]:
    """The interval and p-value columns of a :func:`~._pairwise.pairwise` table the heat map shows:
    the bootstrap interval and the permutation p-value when the report has them, else the analytic
    ones (the adjusted analytic p-value when the report asked for an adjustment); and their words."""
    columns = set(table.columns)
    interval = next((pair for pair in (("difference_lo", "difference_hi"),
                                       ("difference_lo_analytic", "difference_hi_analytic"))
                     if set(pair) <= columns), None)
    adjusted = sorted(c for c in columns if c.startswith("p_value_analytic_"))
    permutation = sorted(c for c in columns if c in ("p_value_holm", "p_value_bonferroni"))
    p = permutation[0] if permutation else "p_value" if "p_value" in columns else (
        adjusted[0] if adjusted else "p_value_analytic" if "p_value_analytic" in columns else None)
    words = []
    if interval is not None:
        words.append("[bootstrap interval]" if interval[0] == "difference_lo" else "[analytic interval]")
    if p is not None:
        how = "permutation" if p.startswith("p_value") and "analytic" not in p else "analytic"
        method = p.rsplit("_", 1)[-1] if p not in ("p_value", "p_value_analytic") else None
        words.append(f"p: {how}" + (f", {method}-adjusted over every pair" if method else ", unadjusted"))
    return interval, p, words


#: Up to this many groups each cell of the heat map holds its numbers: its difference, interval and
#: p-value (:data:`PAIRWISE_PLAIN_TEXT_MAX` for the difference alone). With more, the cells are colours
#: only and the HTML page lists the numbers in a table.
PAIRWISE_CELL_TEXT_MAX = 8
PAIRWISE_PLAIN_TEXT_MAX = 14
#: The largest side of one heat-map panel, in inches (many groups: smaller cells).
PAIRWISE_SIDE_MAX = 10.0
#: The smallest text of the heat map, in points: 10.4 px at the page's 100 dpi, which it keeps
#: (its figures are at most :data:`FIGURE_WIDTH_MAX` inches wide and shown at their natural size at
#: 1280 px); the tick labels are 8 points while a cell holds them.
PAIRWISE_TEXT = 7.5
#: The widest heat-map figure, in inches: the page's content width (1168 px) at 100 dpi.
FIGURE_WIDTH_MAX = 11.68


#: The narrowest cell, in inches, that holds its numbers at :data:`PAIRWISE_TEXT` points ("[+0.813,
#: +0.855]" is about 0.9 inch), and the width it gets when there is room.
CELL_MIN = {True: 1.0, False: 0.5}
CELL = {True: 1.2, False: 0.62}
#: The colour bar's margin, in inches.
COLOUR_BAR = 1.35


def pairwise_layout(groups: Sequence[Sequence[str]], detailed: bool) -> dict[str, Any]:
    """The heat map's cells for attributes of these ``groups`` (their names): ``text`` (whether the
    cells hold their numbers: at most :data:`PAIRWISE_CELL_TEXT_MAX` groups, or
    :data:`PAIRWISE_PLAIN_TEXT_MAX` for differences alone, and a cell of at least :data:`CELL_MIN` in
    :data:`FIGURE_WIDTH_MAX`), ``cell`` and ``side`` (inches), ``ticks`` (point size of the group
    names) and ``labels`` (inches of room for them)."""
    most = max((len(names) for names in groups), default=2)
    longest = max((len(figure_text(g)) for names in groups for g in names), default=1)
    labels = 0.25 + longest * 8 * 0.7 / 72  # about 0.6 of a point size a character
    room = FIGURE_WIDTH_MAX - (labels + 0.15) - COLOUR_BAR
    cell = min(CELL[detailed], room / most)
    text = most <= (PAIRWISE_CELL_TEXT_MAX if detailed else PAIRWISE_PLAIN_TEXT_MAX) and cell >= CELL_MIN[detailed]
    if not text:
        cell = min(0.3, (PAIRWISE_SIDE_MAX - 0.5) / most)
    ticks = 8 if cell >= 0.15 else 6  # a label per cell: at most the cell's height
    if ticks != 8:
        labels = 0.25 + longest * ticks * 0.7 / 72
    return {"text": text, "cell": cell, "side": min(max(2.4, cell * most), PAIRWISE_SIDE_MAX), "ticks": ticks,
            "labels": labels}


def plot_pairwise(report, attributes=None, metric: str | None = None):
    """Heat map per attribute (per task and attribute, titled "task: attribute", for a report of
    :func:`~fairmedfm_fast.evaluate_tasks`) of the difference of ``metric`` between every pair of
    groups (row group minus column group), from :meth:`FairnessReport.pairwise`. With up to
    :data:`PAIRWISE_CELL_TEXT_MAX` groups each cell holds the difference and, when the report has
    them, its interval (bootstrap percentile, else analytic) and p-value (the permutation p-value
    adjusted over every pair, else analytic); a star marks an adjusted p-value at most 0.05 and bold
    type an interval that excludes 0. A pair with a small group shows its difference and "small
    group": no interval, no mark. The text is at least :data:`PAIRWISE_TEXT` points and the figure at
    most :data:`FIGURE_WIDTH_MAX` inches wide (panels wrap into rows), so that it reads at 1280 px."""
    from .._statistics.pairwise import default_metric, pairwise

    metric = default_metric(report.task) if metric is None else metric
    table = pairwise(report, metric)
    # A panel per attribute; per (task, attribute) for a report of evaluate_tasks, whose table has a task level.
    levels = list(table.index.names[:-2])
    names = [key if isinstance(key, tuple) else (key,) for key in report.summary.index]
    if attributes is not None:
        wanted = select_names(list(dict.fromkeys(str(key[-1]) for key in names)), attributes)
        names = [key for name in wanted for key in names if str(key[-1]) == name]
    interval, p_column, words = pair_details(table)
    detailed = interval is not None or p_column is not None
    present = {key if isinstance(key, tuple) else (key,) for key in table.index.droplevel([-2, -1]).unique()}
    shown = {key: [str(g) for g in dict.fromkeys(table.xs(key, level=levels).index.get_level_values("group"))]
             for key in names if key in present}
    # Room for the tick labels, the titles and the colour bar, measured from the names instead of by a
    # layout pass.
    layout = pairwise_layout(list(shown.values()), detailed)
    side, ticks_size, labels = layout["side"], layout["ticks"], layout["labels"]
    suptitle_lines = 1 + (p_column is not None) + (interval is not None)
    left, right, between = labels + 0.15, COLOUR_BAR, labels + 0.35
    columns = max(1, min(_COLUMNS, int((FIGURE_WIDTH_MAX - left - right + between) // (side + between))))
    figure, axes = _grid(len(names), side, side, columns,
                         (left, right, 0.3 + 0.2 * suptitle_lines + 0.3, labels + 0.15, between, labels + 0.45))
    limit = float(np.nanmax(np.abs(table["difference"].to_numpy()))) if len(table) else 0.0
    limit = limit if math.isfinite(limit) and limit > 0 else 1.0
    image = None
    for ax, key in zip(axes, names):
        _title(ax, figure_text(": ".join(map(str, key))))
        if key not in present:
            _empty(ax, "fewer than two evaluable groups")
            continue
        rows = table.xs(key, level=levels)
        order = list(dict.fromkeys(rows.index.get_level_values("group")))

        def square(column, rows=rows, order=order):
            return rows[column].unstack().reindex(index=order, columns=order).to_numpy(dtype=np.float64)

        matrix = square("difference")
        image = ax.imshow(matrix, cmap="RdBu_r", vmin=-limit, vmax=limit)
        ticks = np.arange(len(order))
        ax.set_xticks(ticks, [figure_text(g) for g in order], rotation=90, fontsize=ticks_size)
        ax.set_yticks(ticks, [figure_text(g) for g in order], fontsize=ticks_size)
        if not layout["text"]:
            continue
        lo, hi = (square(c) for c in interval) if interval is not None else (None, None)
        p = square(p_column) if p_column is not None else None
        small = square("small_group") if "small_group" in rows.columns else np.zeros(matrix.shape)
        for i in range(len(order)):
            for j in range(len(order)):
                value = matrix[i, j]
                if i == j or not math.isfinite(value):  # the diagonal is 0
                    continue
                lines = [f"{value:+.3f}" + ("*" if p is not None and p[i, j] <= 0.05 else "")]
                excludes = False
                if small[i, j]:
                    lines.append("small group")
                elif lo is not None and math.isfinite(lo[i, j]) and math.isfinite(hi[i, j]):
                    lines.append(f"[{lo[i, j]:+.3f}, {hi[i, j]:+.3f}]")
                    excludes = lo[i, j] > 0 or hi[i, j] < 0
                if p is not None and math.isfinite(p[i, j]):
                    lines.append(f"p={p[i, j]:.2g}")
                shade = "white" if abs(value) > 0.6 * limit else "black"  # legible on dark cells
                ax.text(j, i, "\n".join(lines), ha="center", va="center", fontsize=PAIRWISE_TEXT,
                        color=shade, fontweight="bold" if excludes else "normal", linespacing=1.1)
    if image is not None:  # the colour bar in the right margin, beside the first row
        width, height = figure.get_size_inches()
        box = axes[0].get_position()
        bar = figure.add_axes((1 - 1.1 / width, box.y0 + 0.1 * box.height, 0.16 / width, 0.8 * box.height))
        figure.colorbar(image, cax=bar, label=f"{metric}: row minus column group")
    lines = [f"Pairwise differences of {metric}, row minus column group"]
    if p_column is not None:  # one line each: the figure may be narrow
        lines.append(next(w for w in words if w.startswith("p:")) + " (*: p ≤ 0.05)")
    if interval is not None:
        lines.append(next(w for w in words if w.startswith("[")) + " (bold: excludes 0)")
    figure.suptitle("\n".join(lines), fontsize=10)
    return figure


PLOTTERS = {"roc": plot_roc, "reliability": plot_reliability, "bars": plot_bars, "dice": plot_dice,
             "pairwise": plot_pairwise, "forest": plot_forest}


def plot(report, kind: str = "roc", attributes: str | Sequence[str] | None = None):
    """The figure of ``kind`` for ``report``; see :meth:`FairnessReport.plot`."""
    if isinstance(kind, str) and kind != "dice" and kind in (getattr(report, "_metric_data", None) or {}):
        return plot_dice(report, attributes, kind)  # a surface metric of evaluate_segmentation(metrics=...)
    if not isinstance(kind, str) or kind not in PLOTTERS:
        raise ValueError(f"kind={kind!r} is not a plot kind; use one of {', '.join(map(repr, KINDS))}")
    return PLOTTERS[kind](report, attributes)


def default_kinds(report) -> tuple[str, ...]:
    """The figures that suit the report's task, in the order the HTML page shows them."""
    if report.task == "cls":
        if getattr(report, "_gaps", None) is not None:  # the findings page of evaluate's reports
            return ("forest", "pairwise", "roc", "reliability")
        return ("roc", "reliability", "bars", "pairwise")
    return ("dice", *(m for m in (getattr(report, "_metric_data", None) or {}) if m != "dice"), "bars", "pairwise")
