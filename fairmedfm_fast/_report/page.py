"""The parts of a classification report's HTML page that a reviewer reads first: the findings in plain
words, a glossary with each metric's direction, and tables that hold each value beside its interval
and p-value (long, or one per attribute, so that every table fits the page)."""
from __future__ import annotations

import html
import math
from typing import Any

import numpy as np

from .._registry.metrics import BEST, REGISTRY

#: Summary columns: what they measure and which direction is better.
GLOSSARY = (
    ("overall-auc", "AUC of all the attribute's samples", "higher"),
    ("overall-acc", "accuracy of all samples at the best-F1 threshold", "higher"),
    ("overall-bce", "binary cross-entropy (log loss) of all samples", "lower"),
    ("overall-ece", "expected calibration error of all samples (10 equal-width bins)", "lower"),
    ("worst-auc", "the lowest AUC of any group", "higher"),
    ("auc-gap", "largest minus smallest group AUC", "lower (0: equal)"),
    ("acc-gap", "largest minus smallest group accuracy at the best-F1 threshold", "lower (0: equal)"),
    ("bce-gap", "largest minus smallest group cross-entropy", "lower (0: equal)"),
    ("ece-gap", "largest minus smallest group calibration error", "lower (0: equal)"),
    ("eo", "equal opportunity difference: the gap in true positive rate (TPR) at the best-F1 threshold",
     "lower (0: equal)"),
    ("eod", "equalized odds: 1 - (TPR gap + TNR gap) / 2 at the best-F1 threshold", "higher (1: equal)"),
    ("auc, acc, tpr, tnr", "per group: AUC, accuracy, true positive and true negative rates", "higher"),
    ("bce, ece", "per group: cross-entropy and calibration error", "lower"),
    ("small group", "fewer positives or negatives than the report's small_group_below setting: values rest "
                    "on few samples", ""),
    ("interval of a gap", "simultaneous over every pair of groups; contains 0 exactly when no pair of groups "
                          "is shown to differ (a gap is biased upwards: its lower end is the meaningful one)", ""),
    ("p-value", "permutation test of the gap (groups shuffled within each class for AUC, TPR and TNR), "
                "adjusted for the number of tests when the report says so", ""),
)

NAMES = {"auc-gap": "AUC gap", "acc-gap": "accuracy gap", "bce-gap": "cross-entropy gap",
         "ece-gap": "calibration-error gap", "eo": "TPR gap (eo)", "eod": "equalized odds (eod)",
         "worst-auc": "worst AUC"}
PER_GROUP = ("auc", "acc@best_f1", "bce", "ece", "tpr@best_f1", "tnr@best_f1")
#: What a registered summary column's kind measures, and which direction is better.
KIND_WORDS = {"gap": ("largest minus smallest group", "lower (0: equal)"), "worst": ("smallest group", ""),
              "best": ("largest group", ""), "ratio": ("smallest over largest group", "higher (1: equal)"),
              "score": ("1 minus the group gap of", "higher (1: equal)")}


def opt_in_keys(columns) -> list[str]:
    """The per-group keys of the opt-in and registered metrics among ``columns`` (the registry's, in its
    order: each at the key the plots show)."""
    return [m.shown_key for m in REGISTRY.per_group if m.optional and m.shown_key in columns]


def number(value: Any, digits: int = 3) -> str:
    """A number as the pages show it (``digits`` decimals; a dash where there is none)."""
    if value is None or (isinstance(value, (float, np.floating)) and not math.isfinite(value)):
        return "–"
    return f"{float(value):.{digits}f}"


def escaped(value: Any) -> str:
    return html.escape(str(value))


def interval_text(lo: Any, hi: Any) -> str:
    """``[lo, hi]`` to 3 decimals; empty where either end is missing."""
    if lo is None or hi is None or not (math.isfinite(lo) and math.isfinite(hi)):
        return ""
    return f"[{lo:.3f}, {hi:.3f}]"


def _p(row) -> str:
    p, adjusted = row["p_value"], row["p_adjusted"]
    if not math.isfinite(p):
        return ""
    text = f"p = {p:.3g}"
    return text if adjusted == p else f"{text} (adjusted {adjusted:.3g})"


def largest_gap(report) -> tuple[str, Any] | None:
    """(attribute, its auc-gap row of report.gaps) of the largest AUC gap among groups that are not
    small (``value``; a gap defined by a small group is never the headline), or None."""
    gaps = report.gaps
    if gaps is None or gaps.empty:
        return None
    auc = gaps.xs("auc-gap", level="column")
    if auc.empty or not np.isfinite(auc["value"].astype(float)).any():
        return None
    attribute = auc["value"].astype(float).idxmax()
    return attribute, auc.loc[attribute]


def family_note(report) -> str:
    """How "significant" is decided, the families the p-values are adjusted over, and (when too few
    permutations were drawn) how many would be needed."""
    from .._statistics import findings as _findings

    p_values = report.p_values
    alpha = _alpha(report)
    if p_values is None:
        interval = "" if report.ci is None else " The intervals alone call nothing significant."
        return (f'<p class="note">No permutation test was run (n_permutations=0): no gap is called significant.'
                f"{interval}</p>")
    method = report.metadata.get("p_adjust")
    raw = _findings.raw_p_values(p_values, method)
    tests = _findings.tests_in_family(raw)
    n_permutations = int(report.metadata.get("n_permutations") or 0)
    if method:
        family = (f"p-value, {escaped(method)}-adjusted over the report's {tests} gap tests (every attribute's gaps "
                  "are one family; the pairwise differences of the heat map are a family of their own),")
    else:
        family = f"p-value, not adjusted (p_adjust=None: each of the {tests} gap tests on its own),"
    text = (f"A gap is called significant when its {family} is at most {alpha:g} and its {1 - alpha:.0%} "
            "interval, when there is one, rules out equal groups (a gap of 0, an eod of 1); gaps defined by a small group are listed apart and "
            "never tested.")
    if not _findings.reachable(tests, n_permutations, method, alpha):
        needed = _findings.permutations_needed(tests, method, alpha)
        text += (f' <span class="flag">n_permutations={n_permutations} is too few: no p-value can reach {alpha:g}'
                 f"{' after the adjustment' if method else ''}, so no gap is called significant or not (–); "
                 f"n_permutations={needed} or more would be needed.</span>")
    return f'<p class="note">{text}</p>'


def findings(report) -> str:
    """Plain sentences: the largest AUC gap among groups that are not small, then per attribute each gap
    with its groups, interval and p-value (significant ones first), the gaps that small groups define
    (not estimable, apart) and the small groups."""
    gaps = report.gaps
    level = report.ci["level"] if report.ci else 1 - _alpha(report)
    parts = ['<section id="findings"><h2>Findings</h2>']
    top = largest_gap(report)
    if top is None:
        parts.append("<p>No attribute has two groups that can be compared (small groups left out).</p>")
    else:
        attribute, row = top
        parts.append(f'<p class="headline">Largest AUC gap: <b>{escaped(attribute)}</b>, {number(row["value"])} between '
                     f'<b>{escaped(row["high_group"])}</b> (AUC {number(row["high"])}) and <b>{escaped(row["low_group"])}</b> '
                     f'(AUC {number(row["low"])}){_verdict(row, level)}.</p>')
    parts.append(family_note(report))
    for name in dict.fromkeys(gaps.index.get_level_values("attribute")):
        rows = gaps.loc[name]
        items, apart = [], []
        worst = rows.loc["worst-auc"] if "worst-auc" in rows.index else None
        ordered = rows.drop(index="worst-auc", errors="ignore")
        key = ordered["significant"].map(lambda s: 0 if s is True else 1)
        ordered = ordered.assign(_key=key).sort_values(["_key", "p_value", "value"], ascending=[True, True, False])
        for column, gap in ordered.iterrows():
            what = NAMES.get(column, column)
            if math.isfinite(gap["value"]):
                if column == "eod":
                    items.append(f"<li>{what} {number(gap['value'])} (1 is equal; {_eod_ranges(report, name)})"
                                 f"{_verdict(gap, level)}</li>")
                else:
                    items.append(f"<li>{what} {number(gap['value'])}: {escaped(gap['high_group'])} {number(gap['high'])} vs "
                                 f"{escaped(gap['low_group'])} {number(gap['low'])}{_verdict(gap, level)}</li>")
            if gap["small_group"]:
                apart.append(f"<li>{what} {number(gap['value_all_groups'])} between {escaped(gap['high_group_all'])} and "
                             f"{escaped(gap['low_group_all'])}: not estimable, {escaped(gap['not_estimable'])}</li>")
        small = [str(g) for g, flag in report.by_group.loc[name, "small_group"].items() if flag] \
            if "small_group" in report.by_group.columns else []
        note = ""
        if apart:
            note += ('<p class="flag">Defined by a small group, so not estimable and not tested (the summary\'s '
                     f"values):</p><ul>{''.join(apart)}</ul>")
        if small:
            note += (f'<p class="flag">Small groups (values rest on few positives or negatives; left out of the gaps '
                     f'above): {escaped(", ".join(small))}.</p>')
        worst_text = ""
        if worst is not None and math.isfinite(worst["value"]):
            worst_text = f" Worst AUC {number(worst['value'])} in {escaped(worst['low_group'])}."
        if worst is not None and worst["small_group"]:
            worst_text += (f" (Lowest of all: {number(worst['value_all_groups'])} in {escaped(worst['low_group_all'])}, "
                           f"not estimable: {escaped(worst['not_estimable'])}.)")
        parts.append(f"<h3>{escaped(name)}</h3><p>{worst_text}</p><ul>{''.join(items)}</ul>{note}")
    parts.append("</section>")
    return "".join(parts)


def _eod_ranges(report, attribute) -> str:
    """The TPR and FPR ranges (at the decision threshold) over the groups that are not small: the two
    gaps whose mean, subtracted from 1, is the eod."""
    table = report.by_group.loc[attribute]
    keep = table["skipped"].isna() if "skipped" in table.columns else np.ones(len(table), bool)
    if "small_group" in table.columns:
        keep &= ~table["small_group"].astype(bool)
    table = table[keep]
    words = []
    for label, column, flip in (("TPR", "tpr@best_f1", False), ("FPR", "tnr@best_f1", True)):
        if column not in table.columns or table[column].isna().all():
            continue
        values = (1 - table[column]) if flip else table[column]
        words.append(f"{label} from {number(values.min())} in {escaped(values.idxmin())} to {number(values.max())} in "
                     f"{escaped(values.idxmax())}")
    return ", ".join(words) + ("; eod = 1 - (TPR range + FPR range) / 2" if len(words) == 2 else "")


def _interval_table(report, part: str):
    """``report.ci[part]`` (bootstrap, with ``n_boot``), else the analytic one (``interval="analytic"``),
    else None: the page shows whichever intervals the report has."""
    ci = report.ci or {}
    if ci.get(part) is not None:
        return ci[part]
    return (ci.get("analytic") or {}).get(part)


def _alpha(report) -> float:
    return 1 - float(report.metadata.get("ci", 0.95))


def _verdict(row, level: float) -> str:
    """The interval, p-value and verdict of a row of ``report.gaps``: "significant" only when the
    adjusted test and the interval (when there is one) agree; their disagreement said in words."""
    bits = []
    interval = interval_text(row["lo"], row["hi"])
    if interval:
        bits.append(f"{level:.0%} interval {interval}")
    p = _p(row)
    if p:
        bits.append(p)
    test, excludes = row["test_significant"], row["interval_excludes"]
    if row["significant"] is True:
        bits.append("<b>significant</b>" + (" (test and interval agree)" if excludes is True else ""))
    elif test is True and excludes is False:
        bits.append('<span class="flag">the adjusted test rejects equal groups but the interval includes them: '
                    "they disagree, not called significant</span>")
    elif test is False and excludes is True:
        bits.append('<span class="flag">the interval rules out equal groups but the adjusted test does not '
                    f"reach {1 - level:g}: they disagree, not called significant</span>")
    elif test is False:
        bits.append("not significant")
    return (" — " + ", ".join(bits)) if bits else ""


def glossary(report=None) -> str:
    """The glossary: the package's columns, then the opt-in and registered metrics of ``report``."""
    entries = list(GLOSSARY)
    if report is not None and report.by_group is not None and report.summary is not None:
        for key in opt_in_keys(report.by_group.columns):
            metric = REGISTRY.by_name[key.removesuffix(BEST)]
            entries.append((key, f"per group: {metric.display}" + (" at the best-F1 threshold" if key != metric.name
                                                                   else ""), ""))
        for column in report.summary.columns:
            entry = REGISTRY.summary.get(column)
            if entry is not None and entry.optional:
                what, better = KIND_WORDS[entry.kind]
                entries.append((column, f"{what} {', '.join(entry.reads)}", better))
    rows = "".join(f"<tr><th>{escaped(name)}</th><td class='text'>{escaped(what)}</td><td class='text nowrap'>{escaped(better)}</td>"
                   "</tr>"
                   for name, what, better in entries)
    return ('<section id="glossary"><h2>Glossary</h2><table class="fit"><thead><tr><th>name</th>'
            '<th>meaning</th><th>better</th></tr></thead><tbody>' + rows + "</tbody></table></section>")


def _mark(gap) -> str:
    """The mark of a row of ``report.gaps`` in the summary table (see :data:`MARKS`)."""
    if gap is None:
        return ""
    if gap["significant"] is True:
        return "*"
    if gap["test_significant"] is True or (gap["test_significant"] is False and gap["interval_excludes"] is True):
        return "≠"
    return ""


#: The marks of the summary table, explained beneath it.
MARKS = ("* significant: the adjusted test and the interval agree; ≠ the adjusted test and the interval "
         "disagree (not called significant); small group: fairmedfm's value is defined by a small group (not "
         "estimable), and the interval, p-value and mark are those of the gap among the other groups, shown "
         "beside it.")


def summary_table(report) -> str:
    """One row per (attribute, summary column): the attribute's n and groups, the value, its interval,
    p-value (raw and adjusted) and a mark of significance (:data:`MARKS`)."""
    ci = _interval_table(report, "summary")
    p_values = report.p_values
    suffix = report.metadata.get("p_adjust")
    gaps = report.gaps
    body = []
    for attribute, row in report.summary.iterrows():
        size = f"{int(row['n'])}" if "n" in row.index and math.isfinite(row["n"]) else ""
        groups = f"{int(row['n_groups'])}" if "n_groups" in row.index and math.isfinite(row["n_groups"]) else ""
        for column, value in row.items():
            if column in ("n", "n_groups") or not isinstance(value, (int, float)) or not math.isfinite(value):
                continue
            gap = gaps.loc[(attribute, column)] if gaps is not None and (attribute, column) in gaps.index else None
            lo = hi = math.nan
            if ci is not None and f"{column}_lo" in ci.columns and attribute in ci.index:
                lo, hi = float(ci.loc[attribute, f"{column}_lo"]), float(ci.loc[attribute, f"{column}_hi"])
            p = ""
            if p_values is not None and column in p_values.columns and attribute in p_values.index:
                p = number(p_values.loc[attribute, column], 4)
                if suffix and f"{column}_{suffix}" in p_values.columns:
                    p += f" ({number(p_values.loc[attribute, f'{column}_{suffix}'], 4)})"
            mark, shown = _mark(gap), f"{value:.4f}"
            if gap is not None and gap["small_group"]:
                others = number(gap["value"], 4)
                shown += f"<br><small class='flag'>small group; the others: {others}</small>"
                mark = ("small group " + mark).strip()
            body.append(f"<tr><th>{escaped(attribute)}</th><td>{size}</td><td>{groups}</td><th>{escaped(column)}</th>"
                        f"<td>{shown}</td><td>{interval_text(lo, hi)}</td><td>{p}</td><td class='text'>{mark}</td></tr>")
    p_head = "p-value" + (f" ({escaped(suffix)})" if suffix else "")
    return ('<table class="fit"><thead><tr><th>attribute</th><th>n</th><th>groups</th><th>metric</th><th>value</th>'
            f'<th>interval</th><th>{p_head}</th><th>mark</th></tr></thead><tbody>' + "".join(body)
            + f'</tbody></table><p class="note">{escaped(MARKS)}</p>')


def group_tables(report) -> str:
    """One table per attribute: n, the flags and each per-group metric with its interval beneath."""
    frame = report.by_group
    ci = _interval_table(report, "by_group")
    metrics = [m for m in PER_GROUP if m in frame.columns] + opt_in_keys(frame.columns)
    out = []
    for attribute in dict.fromkeys(frame.index.get_level_values(0)):
        rows = frame.loc[attribute]
        head = "".join(f"<th>{escaped(m)}</th>" for m in metrics)
        body = []
        for group, row in rows.iterrows():
            cells = []
            for metric in metrics:
                value = row[metric]
                text = number(value, 4)
                if ci is not None and f"{metric}_lo" in ci.columns and (attribute, group) in ci.index:
                    lo, hi = ci.loc[(attribute, group), f"{metric}_lo"], ci.loc[(attribute, group), f"{metric}_hi"]
                    if math.isfinite(lo):
                        text += f"<br><small>{interval_text(float(lo), float(hi))}</small>"
                cells.append(f"<td>{text}</td>")
            flag = []
            if row.get("small_group") is True or row.get("small_group") is np.True_:
                flag.append('<span class="flag">small group</span>')
            if isinstance(row.get("skipped"), str):
                flag.append(f"skipped: {escaped(row['skipped'])}")
            body.append(f"<tr><th>{escaped(group)}</th><td>{int(row['n'])}</td>{''.join(cells)}"
                        f"<td class='text'>{' '.join(flag)}</td></tr>")
        out.append(f"<h3>{escaped(attribute)}</h3><table class='fit'><thead><tr><th>group</th><th>n</th>{head}"
                   f"<th>flags</th></tr></thead><tbody>{''.join(body)}</tbody></table>")
    return "".join(out)


def settings_table(metadata: dict[str, Any]) -> str:
    """The settings as a table of rounded values: a mapping as "key value" pairs, a list of records one
    a line, an empty list as "none" (no JSON)."""
    rows = "".join(f"<tr><th>{escaped(key)}</th><td class='text'>{_shown(value)}</td></tr>"
                   for key, value in metadata.items())
    return f"<table class='fit'><tbody>{rows}</tbody></table>"


def _shown(value: Any) -> str:
    """``value`` as escaped text for the settings table."""
    if isinstance(value, dict):
        if not value:
            return "none"
        return "<br>".join(f"{escaped(key)}: {_shown(item)}" for key, item in value.items())
    if isinstance(value, (list, tuple)):
        if not value:
            return "none"
        if all(isinstance(item, dict) for item in value):
            return "<br>".join(", ".join(f"{escaped(k)} {_shown(v)}" for k, v in item.items()) for item in value)
        return ", ".join(_shown(item) for item in value)
    if isinstance(value, (float, np.floating)):
        return escaped(f"{float(value):.4g}")
    if value is None:
        return "none"
    return escaped(value)


#: ``overall`` keys the page's "All samples" table leaves out when they equal the key without the suffix
#: (the AUC, cross-entropy and calibration error do not depend on a threshold); ``by_group`` keeps them.
SAME_AT_THRESHOLD = ("auc", "bce", "ece")


def all_samples(overall: dict[str, Any]) -> dict[str, Any]:
    """``overall`` without the ``@best_f1`` copies of the values that take no threshold."""
    out = dict(overall)
    for key in SAME_AT_THRESHOLD:
        copy = key + BEST
        if copy in out and key in out and (out[copy] == out[key] or (
                isinstance(out[copy], float) and math.isclose(out[copy], out[key], rel_tol=1e-12, abs_tol=1e-15))):
            del out[copy]
    return out


#: The most pairs the page lists when the heat map has no room for its numbers.
PAIRS_LISTED = 200


def pairwise_numbers(report) -> str:
    """The heat map's numbers as a table for the attributes whose heat map holds colours only (many
    groups): each pair once, the smallest adjusted p-values and largest differences first, at most
    :data:`PAIRS_LISTED` (``report.pairwise()`` has every pair); "" when every cell holds its numbers."""
    from .._statistics.pairwise import default_metric, pairwise
    from .pictures import pair_details, pairwise_layout

    try:
        table = pairwise(report, default_metric(report.task))
    except ValueError:
        return ""
    if table.empty or table.index.nlevels != 3:
        return ""
    interval, p_column, _ = pair_details(table)
    detailed = interval is not None or p_column is not None
    groups = [list(dict.fromkeys(map(str, part.index.get_level_values("group"))))
              for _, part in table.groupby(level="attribute", sort=False)]
    if pairwise_layout(groups, detailed)["text"]:  # as plot_pairwise decides it: one layout for every panel
        return ""
    crowded = list(dict.fromkeys(table.index.get_level_values("attribute")))
    rows = table[table.index.get_level_values("attribute").isin(crowded)].reset_index()
    position = {key: i for i, key in enumerate(dict.fromkeys(zip(rows["attribute"], rows["group"])))}
    once = rows[[position[(a, g)] < position[(a, o)] for a, g, o in zip(rows["attribute"], rows["group"],
                                                                        rows["other"])]]
    order = once.assign(_p=once[p_column] if p_column else 1.0, _d=-once["difference"].abs())
    order = order.sort_values(["_p", "_d"], kind="stable").head(PAIRS_LISTED)
    body = []
    for _, row in order.iterrows():
        small = bool(row.get("small_group", False))
        bounds = "" if interval is None or small else interval_text(float(row[interval[0]]), float(row[interval[1]]))
        p = number(row[p_column], 4) if p_column else ""
        star = "*" if p_column and math.isfinite(row[p_column]) and row[p_column] <= 0.05 else ""
        body.append(f"<tr><th>{escaped(row['attribute'])}</th><th>{escaped(row['group'])}</th><th>{escaped(row['other'])}</th>"
                    f"<td>{row['difference']:+.4f}{star}</td><td>{bounds}</td><td>{p}</td>"
                    f"<td class='text'>{'small group' if small else ''}</td></tr>")
    shown = f"the first {len(order)} of {len(once)}" if len(once) > len(order) else f"all {len(once)}"
    p_head = escaped(p_column or "p-value")
    return (f'<p class="note">The heat map of {escaped(", ".join(map(str, crowded)))} has too many groups for numbers '
            f"in its cells: {shown} pairs, smallest p-values first (report.pairwise() holds every pair).</p>"
            "<table class='fit'><thead><tr><th>attribute</th><th>group</th><th>other</th><th>difference</th>"
            f"<th>interval</th><th>{p_head}</th><th></th></tr></thead><tbody>{''.join(body)}</tbody></table>")
