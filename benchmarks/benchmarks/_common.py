"""Parameters and set-up steps shared by the benchmark classes."""
from __future__ import annotations

import sys
import warnings

from . import _data
from ._registry import IMPLEMENTATIONS, REGISTRY  # noqa: F401  (re-exported for the benchmark modules)

# Many small intersectional groups hold one label only and are skipped with a UserWarning, by both
# implementations alike; the warnings would bury asv's output. Only under asv: importing the suite
# elsewhere (tests/test_benchmarks.py) must not change a process's warning filters.
if "asv_runner" in sys.modules:
    warnings.filterwarnings("ignore", category=UserWarning)

# fairmedfm 0.4.2 takes about 6 s for one auc_gap at 1M samples; above this size it is left out.
REFERENCE_MAX_SAMPLES = 100_000

# Settings for benchmarks whose single call takes a second or more: one call per sample, a few samples,
# no warm-up calls (setup() has already compiled everything).
SLOW = {"number": 1, "repeat": (1, 5, 20.0), "rounds": 1, "warmup_time": 0.0, "timeout": 900}


def slow(cls):
    """Class decorator applying :data:`SLOW`."""
    for name, value in SLOW.items():
        setattr(cls, name, value)
    return cls


def skip_slow_reference(implementation: str, n_samples: int) -> None:
    """Skip (asv shows n/a) the reference on inputs where it would take more than a few seconds."""
    if implementation == "reference" and n_samples > REFERENCE_MAX_SAMPLES:
        raise NotImplementedError(f"fairmedfm 0.4.2 is too slow above {REFERENCE_MAX_SAMPLES} samples")


def prepared(metric: str, implementation: str, case, warm_case=None):
    """``REGISTRY[metric].bind(implementation, case)``, warmed up so that no timing includes compilation.

    fairmedfm_fast runs once on ``case`` itself, which compiles every path that input takes (some
    depend on its size, e.g. the packed sort above 65,536 samples); the reference runs once on the
    small ``warm_case`` (lazy imports), to keep setup short.
    """
    entry = REGISTRY[metric]
    call = entry.bind(implementation, case)
    if implementation == "fast":
        call()
    elif warm_case is not None:
        entry.bind(implementation, warm_case)()
    return call


def warm_classification(n_attributes: int, n_groups: int) -> _data.Classification:
    """A small case with the same dtypes and attributes as the timed one, for compiling the kernels."""
    return _data.classification(2_000, n_attributes, n_groups, seed=1)
