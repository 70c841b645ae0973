"""Which column holds what, for the command line: role detection by the usual names, ``--bins``
specs, the choice of task, and the options beyond ``fairmedfm score``.

The in-memory command (:mod:`fairmedfm_fast.cli`) and the Dask command
(:mod:`fairmedfm_fast._cli_dask`) both read a table's columns through this module, so that they
find the same columns and pick the same task. Standard library only at import time.
"""
from __future__ import annotations

import re

PROG = "fairmedfm-fast"  # the command's name, in its messages

# Column roles and the names (after lower-casing; spaces, dots and dashes read as "_") that find them.
ROLE_NAMES = {
    "label": ("label", "labels", "y_true", "ytrue", "y", "target", "targets", "truth", "true_label",
              "gt", "ground_truth", "groundtruth"),
    "score": ("prob", "probs", "probability", "proba", "p", "y_prob", "y_proba", "pred_prob", "y_score",
              "score", "scores", "prediction", "predictions", "pred", "y_pred", "output", "logit", "logits"),
    "dice": ("dice", "dsc", "dice_score", "dice_coefficient"),
    "pred_mask": ("pred_mask", "mask_pred", "predicted_mask", "prediction_mask", "pred_mask_path",
                  "pred_path", "segmentation"),
    "true_mask": ("true_mask", "gt_mask", "mask_gt", "label_mask", "target_mask", "ground_truth_mask",
                  "gt_mask_path", "gt_path", "mask"),
}
# Numbered score columns (prob_0, prob_1, ... or logit0, logit1, ...) start with one of these.
SCORE_STEMS = ("prob", "probs", "probability", "proba", "p", "y_prob", "y_score", "score", "scores",
               "logit", "logits", "pred", "output")
SENSITIVE_NAMES = ("sex", "gender", "age", "age_group", "race", "ethnicity", "language", "site", "hospital",
                   "scanner", "insurance", "skin_type", "fitzpatrick")
ID_NAMES = ("id", "image_id", "img_id", "image", "image_path", "path", "file", "filename", "file_name", "name",
            "case_id", "patient_id", "subject_id", "sample_id", "study_id")


class UsageError(ValueError):
    """A problem with the command line or the tables, worded for the command line."""


def normalize(name) -> str:
    from .tables import normalize_name

    return normalize_name(name)


def preview(columns, limit: int = 30) -> str:
    shown = ", ".join(map(str, columns[:limit]))
    return shown + (f", ... ({len(columns)} columns)" if len(columns) > limit else "")


def find_column(columns, role: str, required: bool = True):
    """The one column whose name is a usual name for ``role``, or None (or an error when required)."""
    names = ROLE_NAMES[role]
    found = [c for c in columns if normalize(c) in names]
    option = "--" + role.replace("_", "-")
    what = role.replace("_", " ")
    if len(found) > 1:
        raise UsageError(f"more than one column could be the {what} ({', '.join(found)}); "
                         f"pick one with {option}")
    if not found and required:
        raise UsageError(f"found no {what} column; name it with {option} COLUMN (columns: {preview(columns)})")
    return found[0] if found else None


def _stem_pattern(suffix: str):
    """``<score stem><suffix>``, e.g. ``prob_3``, ``logit3``, ``prob_malignant``; group 2 is what
    follows the stem and its underscore."""
    return re.compile("(" + "|".join(map(re.escape, SCORE_STEMS)) + r")_?(" + suffix + ")")


def class_score_column(scores, pos_label):
    """The position in ``scores`` of the column named after the class ``pos_label`` (``prob_<class>``,
    ``logit<class>``, ...), else of the one column whose name contains it, else None."""
    wanted = normalize(pos_label)
    names = [normalize(name) for name in scores]
    exact = [i for i, name in enumerate(names) if _stem_pattern(re.escape(wanted)).fullmatch(name)]
    named = exact or [i for i, name in enumerate(names) if wanted in name]
    return named[0] if len(named) == 1 else None


def find_scores(columns, pos_label=None):
    """The score column, or the numbered score columns (prob_0, prob_1, ...) in number order, or None.

    With ``pos_label``, also the columns of one family named after classes (``prob_benign``,
    ``prob_malignant``, ...) in table order, when one of them is named after ``pos_label``."""
    single = find_column(columns, "score", required=False)
    if single:
        return [single]
    pattern = _stem_pattern(r"\d+")
    families: dict = {}
    for column in columns:
        match = pattern.fullmatch(normalize(column))
        if match:
            families.setdefault(match.group(1), []).append((int(match.group(2)), column))
    if len(families) > 1:
        raise UsageError(f"found several sets of numbered score columns ({', '.join(sorted(families))}); "
                         "pick the columns with --score")
    if families:
        return [column for _, column in sorted(next(iter(families.values())))]
    if pos_label is not None:
        named: dict = {}
        for column in columns:
            match = re.fullmatch("(" + "|".join(map(re.escape, SCORE_STEMS)) + ")_(.+)", normalize(column))
            if match:
                named.setdefault(match.group(1), []).append(column)
        families = [family for family in named.values()
                    if len(family) > 1 and class_score_column(family, pos_label) is not None]
        if len(families) == 1:
            return families[0]
    return None


def find_sensitive(columns):
    found = [c for c in columns if normalize(c) in SENSITIVE_NAMES]
    if not found:
        raise UsageError("found no sensitive attribute column (sex, age, race, ...); name them with "
                         f"--sensitive COLUMN ... (columns: {preview(columns)})")
    return found


def require(columns, wanted, option: str) -> None:
    known = set(columns)
    missing = [c for c in wanted if c not in known]
    if missing:
        raise UsageError(f"{option} names {', '.join(map(repr, missing))}, which the table does not have; "
                         f"the columns are: {preview(columns)}")


def parse_bins(spec: str):
    """``COLUMN=40,60`` (cut points) or ``COLUMN=q4`` (quantile groups) -> (column, points or count)."""
    column, equals, value = spec.partition("=")
    value = value.strip().lower()
    fix = f"write --bins {column or 'COLUMN'}=40,60 (cut points) or --bins {column or 'COLUMN'}=q4 (quartiles)"
    if not column or not equals or not value:
        raise UsageError(f"--bins {spec!r} is not COLUMN=SPEC; {fix}")
    try:
        if value.startswith("q"):
            return column, int(value[1:])
        points = [float(p) for p in value.split(",") if p.strip()]
    except ValueError:
        raise UsageError(f"--bins {spec!r}: {value!r} is neither cut points nor qN; {fix}") from None
    if not points:
        raise UsageError(f"--bins {spec!r} has no cut points; {fix}")
    return column, points


def mask_value(value):
    if value is None:
        return None
    try:
        number = float(value)
    except ValueError:
        return value
    return int(number) if number.is_integer() else number


def extensions(args, function, task: str) -> dict:
    """Keyword arguments of the options beyond ``fairmedfm score`` that were given."""
    import inspect

    wanted = {}
    if args.threshold is not None:
        wanted["threshold"] = ("--threshold", args.threshold)
    for option, name, value in (("--bootstrap", "n_boot", args.bootstrap),
                                ("--permutations", "n_permutations", args.permutations)):
        if value < 0:
            raise UsageError(f"{option} {value}: give a number of resamples, 0 or more (e.g. {option} 1000)")
        if value:
            wanted[name] = (option, value)
    if args.seed is not None and (args.bootstrap or args.permutations):
        wanted["random_state"] = ("--seed", args.seed)
    if args.min_group_size is not None:
        if args.min_group_size < 1:
            raise UsageError(f"--min-group-size {args.min_group_size}: give a number of samples, 1 or more")
        wanted["min_group_size"] = ("--min-group-size", args.min_group_size)
    if getattr(args, "interval", None) is not None:
        wanted["interval"] = ("--interval", args.interval)
    if args.p_adjust is not None and (args.permutations or getattr(args, "interval", None)):
        # holm, the functions' default, when not given; "none" is None
        wanted["p_adjust"] = ("--p-adjust", None if args.p_adjust == "none" else args.p_adjust)
    for option, name in (("--metrics", "metrics"), ("--nsd-tolerance", "nsd_tolerance"),
                         ("--percentile", "percentile"), ("--spacing", "spacing")):
        if getattr(args, name) is not None:
            wanted[name] = (option, getattr(args, name))
    accepted = inspect.signature(function).parameters
    for name, (option, _) in wanted.items():
        if name not in accepted:
            raise UsageError(f"{option} does not apply to {task} in this version; leave it out")
    return {name: value for name, (_, value) in wanted.items()}


def sensitive_and_bins(args, columns, notes):
    """The sensitive attributes (``--sensitive``, else the usual names) and the ``--bins`` specs."""
    sensitive = list(args.sensitive) if args.sensitive else find_sensitive(columns)
    notes.append(f"sensitive attributes: {', '.join(sensitive)}")
    require(columns, sensitive, "--sensitive")
    bins = dict(parse_bins(spec) for spec in args.bins)
    unknown = [name for name in bins if name not in sensitive]
    if unknown:
        raise UsageError(f"--bins names {', '.join(map(repr, unknown))}, which is not a sensitive attribute "
                         f"({', '.join(sensitive)}); add it to --sensitive or fix the name")
    return sensitive, bins


def one_label(labels):
    """``--label`` of a single-task call: one column name, or None (several need ``--tasks``)."""
    if labels is None or isinstance(labels, str):
        return labels
    if len(labels) > 1:
        raise UsageError(f"--label names {len(labels)} columns; add --tasks to score each label with its "
                         "--score column, or name one label column")
    return labels[0]


def choose_task(args, columns):
    """The task of a ``score`` call and the columns it uses: ``(task, label, scores, dice, pred_mask,
    true_mask)``, from the options given and the usual column names. ``--task auto`` takes
    segmentation when the table has a Dice column or both mask columns, classification when it has
    a label and a score column, and asks the user to choose when it has both or neither."""
    dice = args.dice or find_column(columns, "dice", required=False)
    pred_mask = args.pred_mask or find_column(columns, "pred_mask", required=False)
    true_mask = args.true_mask or find_column(columns, "true_mask", required=False)
    label = one_label(args.label) or find_column(columns, "label", required=False)
    pos_label = getattr(args, "pos_label", None)
    scores = args.score or find_scores(columns, pos_label)
    task = args.task
    if task == "auto" and not getattr(args, "score_map", None):
        segmentation = bool(dice or (pred_mask and true_mask))
        classification = bool(label and scores)
        if segmentation and classification:
            raise UsageError("the table has both classification columns (label, score) and segmentation "
                             "columns (Dice or masks); choose with --task cls or --task seg")
        if label and not scores and not segmentation:
            classes = (f"prob_{pos_label}" if pos_label is not None else "prob_CLASS, with --pos-label CLASS")
            classes = f"; columns named after the classes (such as {classes}) are found too"
            raise UsageError(f"found the label column {label!r} but no score column; name it with --score "
                             f"COLUMN (or one column per class){classes}; columns: {preview(columns)}")
        if not (segmentation or classification):
            raise UsageError("found no prediction columns; name them with --label and --score "
                             "(classification), or --dice, or --pred-mask and --true-mask (segmentation); "
                             f"columns: {preview(columns)}")
        task = "seg" if segmentation else "cls"
    return task, label, scores, dice, pred_mask, true_mask
