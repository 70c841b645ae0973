"""Properties every public metric function shares, run over one registry of the public surface.

In the manner of scikit-learn's ``sklearn/metrics/tests/test_common.py``: each public function is
listed once in :data:`REGISTRY` with how to call it on a small case, and every property below runs
over every entry that has it:

- the order of the samples does not change the result;
- lists, NumPy arrays, pandas, pyarrow and polars containers give the same result;
- renaming the groups changes only the names in the result, never a number;
- all-ones sample weights give the result of no weights;
- an undefined result is NaN with a warning, as in fairmedfm 0.4.2 (checked against the oracle);
- no public function is missing from the registry (a new public name fails here until it is added).

Results are compared after :func:`canonical` turns them into plain nested dicts and floats, with
the oracle tests' own comparison (``tests/compare.py``).
"""
from __future__ import annotations

import inspect
import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd
import pytest
from compare import assert_close as assert_same  # recursive, numbers within 1e-9, NaN == NaN

import fairmedfm_fast as fm
from fairmedfm_fast import metrics as fm_metrics
from fairmedfm_fast._registry.metrics import OPTIONAL_NAMES as OPTIONAL_METRICS

pa = pytest.importorskip("pyarrow")

N = 240


@dataclass(frozen=True)
class Case:
    """The samples of one call: labels, scores, per-sample Dice, attributes, optional weights."""

    y: np.ndarray
    p: np.ndarray
    dice: np.ndarray
    groups: dict[str, np.ndarray]
    weights: np.ndarray | None = None

    def take(self, order: np.ndarray) -> Case:
        return Case(self.y[order], self.p[order], self.dice[order], {k: v[order] for k, v in self.groups.items()},
                    None if self.weights is None else self.weights[order])

    def renamed(self, mapping: dict[Any, Any]) -> Case:
        return replace(self, groups={k: np.array([mapping[v] for v in values], dtype=object)
                                     for k, values in self.groups.items()})


def make_case(seed: int = 0, n: int = N) -> Case:
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    p = np.clip(0.35 * y + 0.65 * rng.random(n), 0, 1)
    dice = np.clip(0.6 + 0.3 * rng.random(n) - 0.1 * (np.arange(n) % 3 == 0), 0, 1)
    groups = {"sex": rng.choice(np.array(["F", "M"], dtype=object), n),
              "site": rng.choice(np.array(["a", "b", "c"], dtype=object), n)}
    return Case(y, p, dice, groups)


def undefined_case() -> Case:
    """Every group holds one label only: no AUC gap, no best-F1 gaps can be computed."""
    case = make_case(1)
    sex = case.groups["sex"]
    return replace(case, y=(sex == "F").astype(np.int64), groups={"sex": sex})


# ------------------------------------------------------------------------------------------------
# Containers


def convert(values: np.ndarray, kind: str) -> Any:
    if kind == "numpy":
        return values
    if kind == "list":
        return values.tolist()
    if kind == "pandas":
        return pd.Series(values)
    if kind == "pyarrow":
        return pa.array(values.tolist())
    if kind == "polars":
        pl = pytest.importorskip("polars")
        return pl.Series(values.tolist())
    raise AssertionError(kind)


def convert_table(groups: dict[str, np.ndarray], kind: str) -> Any:
    if kind == "pandas":
        return pd.DataFrame(groups)
    if kind == "pyarrow":
        return pa.table({k: v.tolist() for k, v in groups.items()})
    if kind == "polars":
        pl = pytest.importorskip("polars")
        return pl.DataFrame({k: v.tolist() for k, v in groups.items()})
    return {k: convert(v, kind) for k, v in groups.items()}


def one_attribute(case: Case, kind: str) -> Any:
    """The first attribute alone, for functions that take one group column."""
    return convert(next(iter(case.groups.values())), kind)


CONTAINERS = ("numpy", "list", "pandas", "pyarrow", "polars")


# ------------------------------------------------------------------------------------------------
# The registry


@dataclass(frozen=True)
class Entry:
    """How to call one public function on a :class:`Case`, and which properties it has.

    ``call(case, container)`` returns the function's result. ``weights``: the function takes
    ``sample_weight``. ``oracle``: the same call on fairmedfm 0.4.2, for the undefined case (None when
    the oracle has no such function). ``undefined``: the function returns NaN with a warning on
    :func:`undefined_case`. ``containers``: the input containers it documents.
    """

    call: Callable[[Case, str], Any]
    weights: bool = False
    undefined: bool = False
    oracle: Callable[[Case], Any] | None = None
    containers: tuple[str, ...] = CONTAINERS
    samples: bool = True  # False: takes aggregated values, not one entry per sample
    notes: dict[str, str] = field(default_factory=dict)


def _classification_number(name: str) -> Entry:
    def call(case: Case, kind: str, module=fm) -> Any:
        options = {} if case.weights is None else {"sample_weight": convert(case.weights, kind)}
        return getattr(module, name)(convert(case.y, kind), convert(case.p, kind),
                                     sensitive_features=convert_table(case.groups, kind), **options)

    def oracle(case: Case) -> Any:
        import fairmedfm

        return getattr(fairmedfm, name)(case.y, case.p, sensitive_features=pd.DataFrame(case.groups))

    return Entry(call, weights=True, undefined=name not in ("bce_gap", "ece_gap"), oracle=oracle)


def _segmentation_number(name: str) -> Entry:
    def call(case: Case, kind: str) -> Any:
        return getattr(fm, name)(convert(case.dice, kind), sensitive_features=convert_table(case.groups, kind))

    return Entry(call)


def _evaluate(case: Case, kind: str) -> Any:
    options = {} if case.weights is None else {"sample_weight": convert(case.weights, kind)}
    return fm.evaluate(convert(case.y, kind), convert(case.p, kind), convert_table(case.groups, kind), **options)


def _evaluate_tasks(case: Case, kind: str) -> Any:
    """Two tasks on the same samples: the label with the scores, and the label with reversed scores,
    with every opt-in metric of the registry (so that the properties cover them too)."""
    options = {} if case.weights is None else {"sample_weight": convert(case.weights, kind)}
    scores = {"model": convert(case.p, kind), "reversed": convert(1 - case.p, kind)}
    return fm.evaluate_tasks(convert(case.y, kind), scores, convert_table(case.groups, kind),
                             metrics=OPTIONAL_METRICS, **options)


def _evaluate_segmentation(case: Case, kind: str) -> Any:
    return fm.evaluate_segmentation(convert_table(case.groups, kind), dice=convert(case.dice, kind))


def _masks(case: Case) -> tuple[np.ndarray, np.ndarray]:
    """Small mask pairs whose Dice varies with the sample (shape (n, 4, 4))."""
    n = len(case.dice)
    true = np.zeros((n, 4, 4), np.uint8)
    true[:, :2, :] = 1
    pred = true.copy()
    cut = (case.dice * 8).astype(int)  # 0..8 foreground voxels of the prediction kept
    for i in range(n):
        pred[i].reshape(-1)[cut[i]:8] = 0
    return pred, true


def _dice_per_label(case: Case, kind: str) -> Any:
    pred, true = _masks(case)
    labels = np.where(case.groups["site"] == "a", 1, 2)[:, None, None]
    pred_map, true_map = pred * labels, true * labels
    flat = (pred_map.reshape(-1), true_map.reshape(-1))
    if kind == "list":
        flat = tuple(a.tolist() for a in flat)
    return fm.dice_per_label(*flat)


def _dask_frame(case: Case):
    dd = pytest.importorskip("dask.dataframe")
    frame = pd.DataFrame({"label": case.y, "score": case.p, "dice": case.dice, **case.groups})
    return dd.from_pandas(frame, npartitions=2)


def _dask_evaluate(case: Case, kind: str) -> Any:
    from fairmedfm_fast import dask as fm_dask

    return fm_dask.evaluate(_dask_frame(case), label="label", score="score", sensitive=list(case.groups),
                            metrics=OPTIONAL_METRICS)


def _dask_evaluate_segmentation(case: Case, kind: str) -> Any:
    from fairmedfm_fast import dask as fm_dask

    return fm_dask.evaluate_segmentation(_dask_frame(case), sensitive=list(case.groups), dice="dice")


def _voxel_maps(case: Case, kind: str) -> tuple[Any, Any]:
    """Each sample as a one-voxel image: stacked arrays, or lists of arrays for the other containers."""
    scores, truth = case.p.reshape(-1, 1, 1), case.y.reshape(-1, 1, 1)
    return (scores, truth) if kind == "numpy" else (list(scores), list(truth))


def _evaluate_voxels(case: Case, kind: str) -> Any:
    return fm.evaluate_voxels(*_voxel_maps(case, kind), convert_table(case.groups, kind))


def _voxel_accumulator(case: Case, kind: str) -> Any:
    accumulator = fm.VoxelAccumulator(convert_table(case.groups, kind))
    for i, (scores, truth) in enumerate(zip(*_voxel_maps(case, kind))):
        accumulator.add(scores, truth, i)
    return accumulator.result()


def _fairness_accumulator(case: Case, kind: str) -> Any:
    """Two batches (the first half of the samples, then the rest), each in the container ``kind``."""
    accumulator = fm.FairnessAccumulator()
    half = len(case.y) // 2
    for part in (case.take(np.arange(half)), case.take(np.arange(half, len(case.y)))):
        if len(part.y):
            options = {} if part.weights is None else {"sample_weight": convert(part.weights, kind)}
            accumulator.update(convert(part.y, kind), convert(part.p, kind), convert_table(part.groups, kind),
                               **options)
    return accumulator.result()


def _legacy(function: Callable, group_argument: bool = True, scores: str = "p") -> Callable[[Case, str], Any]:
    def call(case: Case, kind: str) -> Any:
        values = convert(getattr(case, scores), kind)
        if scores == "dice":
            return function(values, one_attribute(case, kind))
        args = (values, convert(case.y, kind))
        return function(*args, one_attribute(case, kind)) if group_argument else function(*args)

    return call


def _organize_results(case: Case, kind: str) -> Any:
    overall, groups = fm_metrics.evaluate_binary(case.p, case.y, next(iter(case.groups.values())))
    return fm_metrics.organize_results(overall, groups)


def _quiet(function: Callable[..., Any]) -> Callable[..., Any]:
    """Deprecated legacy functions warn on every call; the properties here are about their values."""

    def call(*args: Any) -> Any:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            return function(*args)

    return call


_ONE_GROUP_COLUMN = ("numpy", "list", "pandas")  # the legacy functions take one sequence of group values

REGISTRY: dict[str, Entry] = {
    "evaluate": Entry(_evaluate, weights=True),
    "evaluate_segmentation": Entry(_evaluate_segmentation),
    "evaluate_tasks": Entry(_evaluate_tasks, weights=True),
    **{name: _classification_number(name) for name in (
        "auc_gap", "worst_group_auc", "accuracy_gap", "bce_gap", "ece_gap", "equal_opportunity_difference",
        "equalized_odds_score")},
    **{name: _segmentation_number(name) for name in (
        "dice_gap", "worst_group_dice", "dice_std", "dice_skewness", "equity_scaled_dice")},
    "dice_per_label": Entry(_dice_per_label, containers=("numpy", "list"),
                            notes={"groups": "labels of one pair of maps, not sample groups"}),
    "classification_fairness": Entry(_quiet(_legacy(fm.classification_fairness)), containers=_ONE_GROUP_COLUMN),
    "segmentation_fairness": Entry(_quiet(_legacy(fm.segmentation_fairness, scores="dice")),
                                   containers=_ONE_GROUP_COLUMN),
    "metrics.find_threshold": Entry(_legacy(fm_metrics.find_threshold, group_argument=False),
                                    containers=("numpy", "list", "pandas")),
    "metrics.binary_cross_entropy": Entry(_legacy(fm_metrics.binary_cross_entropy, group_argument=False),
                                          containers=("numpy", "list", "pandas")),
    "metrics.expected_calibration_error": Entry(
        _legacy(fm_metrics.expected_calibration_error, group_argument=False), containers=("numpy", "list", "pandas")),
    "metrics.binary_classification_report": Entry(
        _legacy(fm_metrics.binary_classification_report, group_argument=False),
        containers=("numpy", "list", "pandas")),
    "metrics.evaluate_binary": Entry(_legacy(fm_metrics.evaluate_binary), containers=_ONE_GROUP_COLUMN),
    "metrics.organize_results": Entry(_organize_results, containers=("numpy",), samples=False,
                                      notes={"input": "takes evaluate_binary's aggregated output"}),
    "metrics.classification_fairness": Entry(_quiet(_legacy(fm_metrics.classification_fairness)),
                                             containers=_ONE_GROUP_COLUMN),
    "metrics.segmentation_fairness": Entry(_quiet(_legacy(fm_metrics.segmentation_fairness, scores="dice")),
                                           containers=_ONE_GROUP_COLUMN),
    "metrics.evaluate_seg": Entry(_legacy(fm_metrics.evaluate_seg, scores="dice"), containers=_ONE_GROUP_COLUMN),
    "evaluate_voxels": Entry(_evaluate_voxels, notes={
        "weights": "no sample_weight: every voxel counts once", "containers": "of the attributes; maps are "
        "stacked arrays or lists of arrays (files and iterables in test_voxels.py)"}),
    "FairnessAccumulator": Entry(_fairness_accumulator, weights=True),
    "VoxelAccumulator": Entry(_voxel_accumulator, notes={"weights": "no sample_weight: every voxel counts once"}),
    "dask.evaluate": Entry(_dask_evaluate, containers=("numpy",)),
    "dask.evaluate_segmentation": Entry(_dask_evaluate_segmentation, containers=("numpy",)),
}

#: Public names that are not metric functions, and why they have no entry.
NOT_METRICS = {
    "FairnessReport": "the result type; its methods are tested in test_api_surface.py",
    "MaskFileError": "the error type of unreadable mask files; tested in test_hardening.py",
    "register_metric": "adds a metric to the registry; tested in test_extending.py",
    "register_segmentation_metric": "adds a segmentation metric to the registry; tested in test_extending.py",
    "dask.read_parquet": "reads a Parquet dataset into a Dask frame; no metric",
    "compare_models": "compares models; each model's report is evaluate's (tested in test_compare_models.py)",
    "ModelComparison": "the result type of compare_models; tested in test_compare_models.py",
}


def public_names() -> set[str]:
    """Every public callable: the package's ``__all__`` and the public modules' ``__all__``."""
    from fairmedfm_fast import dask as fm_dask

    names = {name for name in fm.__all__ if callable(getattr(fm, name))}
    for prefix, module in (("metrics", fm_metrics), ("dask", fm_dask)):
        names |= {f"{prefix}.{name}" for name in module.__all__ if callable(getattr(module, name))}
    return names


# ------------------------------------------------------------------------------------------------
# Comparing results


def canonical(value: Any) -> Any:
    """Plain nested dicts, lists and floats: a report becomes its summary and by_group tables."""
    if isinstance(value, fm.FairnessReport):
        return {"summary": canonical(value.summary), "by_group": canonical(value.by_group)}
    if isinstance(value, pd.DataFrame):
        return {str(index): canonical(row.to_dict()) for index, row in value.iterrows()}
    if isinstance(value, dict):
        return {str(key): canonical(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [canonical(item) for item in value]
    if isinstance(value, (float, int, np.floating, np.integer, bool, np.bool_)) and not isinstance(value, str):
        return float(value)
    return value


def rename_back(value: Any, inverse: dict[str, str]) -> Any:
    """Replace renamed group names (as whole strings or inside index tuples) by the originals."""
    if isinstance(value, dict):
        return {rename_back_key(key, inverse): rename_back(item, inverse) for key, item in value.items()}
    if isinstance(value, list):
        return [rename_back(item, inverse) for item in value]
    if isinstance(value, str):
        return inverse.get(value, value)
    return value


def rename_back_key(key: str, inverse: dict[str, str]) -> str:
    for new, old in inverse.items():
        key = key.replace(f"'{new}'", f"'{old}'")
    return inverse.get(key, key)


def run(entry: Entry, case: Case, kind: str = "numpy") -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return canonical(entry.call(case, kind))


# ------------------------------------------------------------------------------------------------
# The properties


def test_every_public_function_is_in_the_registry():
    missing = public_names() - set(REGISTRY) - set(NOT_METRICS)
    assert not missing, f"public functions without a REGISTRY entry in tests/test_common.py: {sorted(missing)}"
    stale = (set(REGISTRY) | set(NOT_METRICS)) - public_names()
    assert not stale, f"registry entries that are not public names: {sorted(stale)}"


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_sample_order_does_not_matter(name):
    entry = REGISTRY[name]
    if not entry.samples:
        pytest.skip(entry.notes["input"])
    case = make_case()
    order = np.random.default_rng(5).permutation(len(case.y))
    assert_same(run(entry, case), run(entry, case.take(order)))


@pytest.mark.parametrize("kind", CONTAINERS[1:])
@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_containers_give_the_same_result(name, kind):
    entry = REGISTRY[name]
    if kind not in entry.containers:
        pytest.skip(f"{name} documents {', '.join(entry.containers)} inputs")
    case = make_case()
    assert_same(run(entry, case), run(entry, case, kind))


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_renaming_groups_changes_only_names(name):
    entry = REGISTRY[name]
    if "groups" in entry.notes:
        pytest.skip(entry.notes["groups"])
    if not entry.samples:
        pytest.skip(entry.notes["input"])
    case = make_case()
    values = sorted({v for column in case.groups.values() for v in column})
    # Same sorted order (the report's group order follows the values), other spellings.
    mapping = {old: f"group-{old}" for old in values}
    renamed = run(entry, case.renamed(mapping))
    assert_same(run(entry, case), rename_back(renamed, {new: old for old, new in mapping.items()}))


@pytest.mark.parametrize("name", sorted(name for name, entry in REGISTRY.items() if entry.weights))
def test_unit_weights_equal_no_weights(name):
    entry = REGISTRY[name]
    case = make_case()
    weighted = replace(case, weights=np.ones(len(case.y)))
    assert_same(run(entry, case), run(entry, weighted))


@pytest.mark.parametrize("name", sorted(name for name, entry in REGISTRY.items() if entry.undefined))
def test_undefined_results_are_nan_with_a_warning_as_in_the_oracle(name):
    entry = REGISTRY[name]
    case = undefined_case()
    with pytest.warns(UserWarning):
        value = entry.call(case, "numpy")
    assert isinstance(value, float) and math.isnan(value), value
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = entry.oracle(case)
    assert math.isnan(expected), f"fairmedfm 0.4.2 gives {expected!r} for {name} here"


def test_registry_entries_name_real_parameters():
    """Entries that claim ``sample_weight`` call functions that take it (keyword-only)."""
    for name, entry in REGISTRY.items():
        if entry.weights and "." not in name:
            target = getattr(fm, name)
            if inspect.isclass(target):  # an accumulator takes the weights batch by batch
                target = target.update
            parameters = inspect.signature(target).parameters
            if "sample_weight" not in parameters:  # evaluate_tasks hands **options to evaluate
                assert any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values()), name
                continue
            assert parameters["sample_weight"].kind is inspect.Parameter.KEYWORD_ONLY, name


def test_the_comparison_can_fail():
    """The properties above would catch a changed number, a changed name and a missing key."""
    entry = REGISTRY["evaluate"]
    case = make_case()
    flipped = replace(case, y=np.where(np.arange(len(case.y)) == 3, 1 - case.y, case.y))
    with pytest.raises(AssertionError):
        assert_same(run(entry, case), run(entry, flipped))
    with pytest.raises(AssertionError):
        assert_same(run(entry, case), run(entry, case.renamed({v: f"x{v}" for v in ("F", "M", "a", "b", "c")})))
    with pytest.raises(AssertionError):
        assert_same({"a": 1.0, "b": 2.0}, {"a": 1.0})
