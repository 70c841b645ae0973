"""Only the engine calls the classification kernels (ranking, calibration, sweeps, sorting, curves).

AST based: a module of fairmedfm_fast that imports one of these kernel modules (``from .kernels
import ranking``, ``from fairmedfm_fast.kernels.ranking import ...``) is a caller. Modules not yet
routed through the engine are listed in PENDING; the second test keeps that list honest, so it can
only shrink.
"""
import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "fairmedfm_fast"
CLASSIFICATION_KERNELS = {"ranking", "calibration", "sweeps", "sorting", "curves", "rank_sums", "delong"}
ENGINE = {"_engine.py"}
#: Still calling kernels themselves: the Dask backend, the fairmedfm-compatible metric functions
#: (find_threshold, BCE, ECE with quantile bins), and the voxel engine (its own bucket sweep; it takes
#: the ECE bin edges and F1 from the calibration and ranking kernels so that they stay bit-identical
#: to evaluate's).
PENDING = {"dask.py", "metrics.py", "voxels.py"}


def _callers() -> set[str]:
    callers = set()
    for path in PACKAGE.glob("*.py"):
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                module = node.module or ""
                parts = module.split(".")
                names = {alias.name for alias in node.names}
                if "kernels" in parts and (CLASSIFICATION_KERNELS & (set(parts) | names)):
                    callers.add(path.name)
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    parts = alias.name.split(".")
                    if "kernels" in parts and CLASSIFICATION_KERNELS & set(parts):
                        callers.add(path.name)
    return callers


def test_only_the_engine_calls_classification_kernels():
    assert _callers() - ENGINE - PENDING == set()


def test_pending_list_is_current():
    assert PENDING <= _callers(), "a module no longer calls the kernels: remove it from PENDING"
