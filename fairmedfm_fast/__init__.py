"""fairmedfm_fast: the FairMedFM fairness metrics (fairmedfm 0.4.2), exact and fast.

``import fairmedfm_fast as fm`` is a drop-in for ``import fairmedfm as fm``: the same functions,
signatures, defaults and numbers, computed by Numba kernels over one sort of the scores. Names
are imported on first use, so importing the package loads neither pandas nor numba.
"""
from __future__ import annotations

import os as _os
import sys as _sys


def _attach_checkout_kernels() -> None:
    """Make ``fairmedfm_fast.kernels`` importable when running from a source checkout.

    The wheel installs the top-level ``kernels/`` folder as ``fairmedfm_fast/kernels``. A checkout has
    it beside this package instead, so register that folder under the subpackage's name (its
    ``__init__`` holds only a docstring, so this costs a file read, and numba is still not imported).
    """
    here = _os.path.dirname(_os.path.abspath(__file__))
    if _os.path.isdir(_os.path.join(here, "kernels")):
        return  # an installed package
    sibling = _os.path.join(_os.path.dirname(here), "kernels")
    init = _os.path.join(sibling, "__init__.py")
    if not _os.path.isfile(init):
        return
    import importlib.util

    name = __name__ + ".kernels"
    spec = importlib.util.spec_from_file_location(name, init, submodule_search_locations=[sibling])
    module = importlib.util.module_from_spec(spec)
    _sys.modules[name] = module
    spec.loader.exec_module(module)


_attach_checkout_kernels()

from ._version import __version__  # noqa: E402 - after the kernels are attached

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (about 15 ms)

#: The one-number functions of group_metrics (made from the metric registry's summary entries).
_CLASSIFICATION = ("auc_gap", "worst_group_auc", "accuracy_gap", "bce_gap", "ece_gap",
                   "equal_opportunity_difference", "equalized_odds_score")
_SEGMENTATION = ("dice_gap", "worst_group_dice", "dice_std", "dice_skewness", "equity_scaled_dice",
                 "evaluate_segmentation", "dice_per_label")
_WHERE = {
    "evaluate": "evaluation",
    "evaluate_tasks": "tasks",
    "compare_models": "comparison",
    "ModelComparison": "comparison",
    "evaluate_voxels": "voxels",
    "VoxelAccumulator": "voxels",
    "FairnessAccumulator": "accumulator",
    "FairnessReport": "report",
    "classification_fairness": "metrics",
    "segmentation_fairness": "metrics",
    "register_metric": "_registry.metrics",
    "register_segmentation_metric": "_registry.metrics",
    **{name: "group_metrics" for name in _CLASSIFICATION},
    **{name: "segmentation" for name in _SEGMENTATION},
}

#: The public names: those of the table above (the one list; tests check that the one-number
#: functions in it are those that group_metrics makes from the metric registry).
__all__ = [*_WHERE, "__version__"]

if TYPE_CHECKING:  # for type checkers and editors (``X as X``: a re-export, as PEP 484 spells it)
    from ._registry.metrics import register_metric as register_metric
    from ._registry.metrics import register_segmentation_metric as register_segmentation_metric
    from .accumulator import FairnessAccumulator as FairnessAccumulator
    from .comparison import ModelComparison as ModelComparison
    from .comparison import compare_models as compare_models
    from .evaluation import evaluate as evaluate
    from .group_metrics import accuracy_gap as accuracy_gap
    from .group_metrics import auc_gap as auc_gap
    from .group_metrics import bce_gap as bce_gap
    from .group_metrics import ece_gap as ece_gap
    from .group_metrics import equal_opportunity_difference as equal_opportunity_difference
    from .group_metrics import equalized_odds_score as equalized_odds_score
    from .group_metrics import worst_group_auc as worst_group_auc
    from .metrics import classification_fairness as classification_fairness
    from .metrics import segmentation_fairness as segmentation_fairness
    from .report import FairnessReport as FairnessReport
    from .tasks import evaluate_tasks as evaluate_tasks
    from .voxels import VoxelAccumulator as VoxelAccumulator
    from .voxels import evaluate_voxels as evaluate_voxels


# An unreadable mask file (a ValueError naming the sample, the path and the reader's reason).
_WHERE["MaskFileError"] = "_inputs.mask_files"
__all__.append("MaskFileError")

_SUBMODULES = ("metrics", "evaluation", "group_metrics", "report", "segmentation", "dask", "tasks", "voxels",
               "accumulator", "torch", "comparison")


def __getattr__(name: str):
    import importlib

    if name in _SUBMODULES:  # fm.metrics.find_threshold works without importing the submodule first
        return importlib.import_module(f"{__name__}.{name}")
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'fairmedfm_fast' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value  # found directly from now on: fm.auc_gap costs no call of this function
    return value


def __dir__():
    return sorted(set(globals()) | set(__all__))
