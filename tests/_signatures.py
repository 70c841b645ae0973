"""Signature comparison with the oracle, allowing the documented keyword-only extensions."""
import inspect

#: Extension parameters per public function: keyword-only, with defaults, after the oracle's.
_TRUST = ("min_group_size", "stratify", "p_adjust", "progress")
EXTENSIONS = {
    "evaluate": ("threshold", "sample_weight", "n_boot", "ci", "n_permutations", "random_state", *_TRUST, "metrics",
                 "interval"),
    "evaluate_segmentation": ("n_boot", "ci", "n_permutations", "random_state", *_TRUST, "metrics", "spacing",
                              "percentile", "nsd_tolerance", "hd_definition", "empty_distance"),
    "FairnessReport": ("tasks", "curves", "dice_data", "metric_data"),
    "auc_gap": ("sample_weight", "min_group_size"),
    "worst_group_auc": ("sample_weight", "min_group_size"),
    "bce_gap": ("sample_weight", "min_group_size"),
    "ece_gap": ("sample_weight", "min_group_size"),
    "accuracy_gap": ("sample_weight", "threshold", "min_group_size"),
    "equal_opportunity_difference": ("sample_weight", "threshold", "min_group_size"),
    "equalized_odds_score": ("sample_weight", "threshold", "min_group_size"),
    **{name: ("min_group_size",) for name in ("dice_gap", "worst_group_dice", "dice_std", "dice_skewness",
                                              "equity_scaled_dice")},
}


def shape(function):
    """Names, kinds and defaults (annotations differ in spelling between the packages)."""
    return [(p.name, p.kind, p.default) for p in inspect.signature(function).parameters.values()]


def assert_same_signature(ours, theirs, name):
    """The oracle's parameters, in order, then exactly the documented keyword-only extensions."""
    mine, oracle = shape(ours), shape(theirs)
    extras = EXTENSIONS.get(name, ())
    if extras and mine[-1][1] == inspect.Parameter.VAR_KEYWORD:  # extensions sit before **kwargs
        head, tail = mine[:-1], [mine[-1]]
    else:
        head, tail = mine, []
    assert head[:len(head) - len(extras)] + tail == oracle, name
    added = head[len(head) - len(extras):] if extras else []
    assert [p[0] for p in added] == list(extras), name
    for _, kind, default in added:
        assert kind == inspect.Parameter.KEYWORD_ONLY and default is not inspect.Parameter.empty, name
