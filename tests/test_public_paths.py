"""Every public import path of the package as it was before the modules moved into subfolders (main at
edaa5bd) still works: the modules, the names they export, the classes' ``__module__`` (which pickles
name) and a pickle made from the public path.

The lists are written out, not read from the package: a name that disappears fails here.
"""
import importlib
import pickle

import numpy as np
import pytest

import fairmedfm_fast as fm

#: Public module -> the names a user could import from it (its ``__all__`` and the public names it held).
PATHS = {
    "fairmedfm_fast.evaluation": ["evaluate", "FairnessReport"],
    "fairmedfm_fast.report": ["FairnessReport", "summary_frame", "group_frame", "columns_frame"],
    "fairmedfm_fast.accumulator": ["FairnessAccumulator", "COMPACT_FROM", "DISTINCT_SCORES"],
    "fairmedfm_fast.dask": ["evaluate", "evaluate_segmentation", "read_parquet"],
    "fairmedfm_fast.voxels": ["VoxelAccumulator", "evaluate_voxels", "check_metrics", "parse_memory", "PASSES"],
    "fairmedfm_fast.segmentation": [
        "evaluate_segmentation", "dice_gap", "worst_group_dice", "dice_std", "dice_skewness", "equity_scaled_dice",
        "dice_per_label", "dice_scores", "surface_scores", "segmentation_fairness", "evaluate_seg",
        "FairnessReport", "group_frame", "summary_frame"],
    "fairmedfm_fast.tasks": ["evaluate_tasks", "combine", "PER_TASK"],
    "fairmedfm_fast.comparison": ["compare_models", "ModelComparison"],  # new since edaa5bd
    "fairmedfm_fast.metrics": [
        "classification_fairness", "segmentation_fairness", "binary_classification_report",
        "expected_calibration_error", "binary_cross_entropy", "find_threshold", "evaluate_binary",
        "organize_results", "evaluate_seg"],
    "fairmedfm_fast.group_metrics": [
        "auc_gap", "worst_group_auc", "accuracy_gap", "bce_gap", "ece_gap", "equal_opportunity_difference",
        "equalized_odds_score", "FUNCTIONS", "function_of"],
    "fairmedfm_fast.cli": ["build_parser", "cli_message", "main", "run", "EPILOG", "PROG", "render", "score"],
    "fairmedfm_fast.warmup": ["warmup", "add_arguments", "kernels", "record", "KERNEL_MODULES", "MASK_DTYPES",
                              "ONE_NUMBER", "WORKLOADS"],
}
#: The names of ``fairmedfm_fast.__all__`` at edaa5bd.
PACKAGE_NAMES = [
    "evaluate", "evaluate_tasks", "evaluate_voxels", "VoxelAccumulator", "FairnessAccumulator", "FairnessReport",
    "classification_fairness", "segmentation_fairness", "register_metric", "register_segmentation_metric",
    "auc_gap", "worst_group_auc", "accuracy_gap", "bce_gap", "ece_gap", "equal_opportunity_difference",
    "equalized_odds_score", "dice_gap", "worst_group_dice", "dice_std", "dice_skewness", "equity_scaled_dice",
    "evaluate_segmentation", "dice_per_label", "MaskFileError", "__version__"]
#: Submodules reached as attributes of the package (``fm.metrics.find_threshold``).
SUBMODULES = ["metrics", "evaluation", "group_metrics", "report", "segmentation", "dask", "tasks", "voxels",
              "accumulator", "torch"]
#: Public classes and the module their pickles name (as before the move).
CLASSES = {"FairnessReport": "fairmedfm_fast.report", "FairnessAccumulator": "fairmedfm_fast.accumulator",
           "VoxelAccumulator": "fairmedfm_fast.voxels"}


@pytest.mark.parametrize("module", sorted(PATHS))
def test_every_public_name_imports_from_its_module(module):
    imported = importlib.import_module(module)
    missing = [name for name in PATHS[module] if not hasattr(imported, name)]
    assert missing == [], f"{module} lost {missing}"
    for name in getattr(imported, "__all__", ()):
        assert hasattr(imported, name), f"{module}.__all__ names {name}, which it lacks"


def test_the_package_exports_the_same_names():
    assert set(PACKAGE_NAMES) <= set(fm.__all__)
    for name in PACKAGE_NAMES:
        assert getattr(fm, name) is not None
        exec(f"from fairmedfm_fast import {name}", {})  # noqa: S102 - the statement users write


def test_the_submodules_are_attributes_of_the_package():
    pytest.importorskip("dask.dataframe")
    for name in SUBMODULES:
        if name == "torch":
            pytest.importorskip("torchmetrics")
        assert getattr(fm, name).__name__ == f"fairmedfm_fast.{name}"


def test_public_classes_keep_their_module():
    for name, module in CLASSES.items():
        cls = getattr(fm, name)
        assert cls.__module__ == module
        assert getattr(importlib.import_module(module), name) is cls
    assert fm.MaskFileError.__module__ == "fairmedfm_fast" and fm.MaskFileError is fm.MaskFileError


def test_a_report_and_an_accumulator_pickle_by_their_public_path():
    rng = np.random.default_rng(0)
    y = np.tile([0, 1], 50)
    p = rng.random(100)
    groups = {"sex": np.repeat(["F", "M"], 50)}
    report = fm.evaluate(y, p, groups)
    data = pickle.dumps(report)
    assert b"fairmedfm_fast.report" in data
    back = pickle.loads(data)
    assert type(back) is fm.FairnessReport
    assert back.summary.equals(report.summary)
    accumulator = fm.FairnessAccumulator()
    accumulator.update(y, p, groups)
    data = pickle.dumps(accumulator)
    assert b"fairmedfm_fast.accumulator" in data
    assert pickle.loads(data).result().summary.equals(accumulator.result().summary)
    error = pickle.loads(pickle.dumps(fm.MaskFileError("unreadable")))
    assert type(error) is fm.MaskFileError and str(error) == "unreadable"


#: The public names of ``kernels._config`` before it was split by job into ``_jit``, ``_caches`` and
#: ``_plain`` (code written against it imports them from there: the benchmarks, which also run older
#: checkouts, set ``_config.interpreting``).
KERNEL_CONFIG = ["kernel", "inline_kernel", "JIT_OPTIONS", "PLAIN", "INTERPRETED_PACKAGE", "INTERPRET_BELOW",
                 "INTERPRET_SECONDS", "INTERPRET_ENV", "ALWAYS_COMPILED", "SHIPPED_FOLDER", "BUILD_ENV",
                 "PORTABLE_CPU", "INSTALLED", "NUMBA_VERSIONS", "interpreting", "interpreted", "cache_location",
                 "source_stamp"]


def test_the_kernels_config_path_gives_the_objects_of_their_new_homes():
    from fairmedfm_fast.kernels import _caches, _config, _jit, _plain

    for name in KERNEL_CONFIG:
        homes = [module for module in (_jit, _caches, _plain) if name in vars(module)]
        assert homes, f"kernels._config.{name} lives nowhere"
        assert all(getattr(_config, name) is getattr(home, name) for home in homes), name
    assert sorted(_config.__all__) == sorted(KERNEL_CONFIG)
