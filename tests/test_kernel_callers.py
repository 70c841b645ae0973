"""Only the engine calls the classification kernels (ranking, calibration, sweeps, sorting, rank_sums, delong).

AST based: a module of fairmedfm_fast that imports one of these kernel modules (``from .kernels
import ranking``, ``from fairmedfm_fast.kernels.ranking import ...``) is a caller. Modules not yet
routed through the engine are listed in PENDING; the second test keeps that list honest, so it can
only shrink.
"""
import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "fairmedfm_fast"
CLASSIFICATION_KERNELS = {"ranking", "calibration", "sweeps", "sorting", "rank_sums", "delong"}
ENGINE = {"_engine"}  # the engine's folder
#: Still calling kernels themselves: none. (fairmedfm's legacy functions in metrics.py reach them
#: through the engine's one-grouping functions; voxels.py, whose bucket sweep is its own kernel, takes
#: the ECE edges and errors from the engine; the Dask backend routes records (``kernels.records``) and
#: sums each sorted range with the engine's ``range_sums``.)
PENDING: set[str] = set()


def _callers() -> set[str]:
    callers = set()
    for path in PACKAGE.rglob("*.py"):
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                module = node.module or ""
                parts = module.split(".")
                names = {alias.name for alias in node.names}
                if "kernels" in parts and (CLASSIFICATION_KERNELS & (set(parts) | names)):
                    callers.add(path.relative_to(PACKAGE).parts[0])
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    parts = alias.name.split(".")
                    if "kernels" in parts and CLASSIFICATION_KERNELS & set(parts):
                        callers.add(path.relative_to(PACKAGE).parts[0])
    return callers


#: Import kernel modules without calling a kernel: the workloads of the signature list read the
#: kernels' piece sizes (sizes where a path changes, which the workloads run on both sides of).
READERS = {"_workloads.py"}


def test_only_the_engine_calls_classification_kernels():
    assert "_engine" in _callers()  # the engine's subfolder is read
    assert _callers() - ENGINE - PENDING - READERS == set()


def test_the_readers_call_no_kernel():
    for name in READERS:
        tree = ast.parse((PACKAGE / name).read_text())
        called = {node.func.value.id for node in ast.walk(tree) if isinstance(node, ast.Call)
                  and isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Name)}
        assert not called & CLASSIFICATION_KERNELS, (name, called & CLASSIFICATION_KERNELS)


def test_pending_list_is_current():
    assert PENDING <= _callers(), "a module no longer calls the kernels: remove it from PENDING"
