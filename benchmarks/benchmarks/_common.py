"""Parameters and set-up steps shared by the benchmark classes."""
from __future__ import annotations

from . import _data
from ._registry import IMPLEMENTATIONS, REGISTRY  # noqa: F401  (re-exported for the benchmark modules)

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
    """``REGISTRY[metric].bind(implementation, case)`` after one call on ``warm_case`` (JIT compilation)."""
    entry = REGISTRY[metric]
    entry.bind(implementation, case if warm_case is None else warm_case)()
    return entry.bind(implementation, case)


def warm_classification(n_attributes: int, n_groups: int) -> _data.Classification:
    """A small case with the same dtypes and attributes as the timed one, for compiling the kernels."""
    return _data.classification(2_000, n_attributes, n_groups, seed=1)
