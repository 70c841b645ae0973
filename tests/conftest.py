"""Shared pytest configuration: Hypothesis profiles.

``ci`` is loaded when the ``CI`` environment variable is set (as ``.ci/run`` and most CI services do):
no deadline (the first call of a kernel compiles it), a fixed number of examples and derandomized
search, so that a CI run is reproducible. ``dev`` is the default on a workstation: fewer examples,
random search, still no deadline. Select one explicitly with ``--hypothesis-profile=NAME``.
"""
import os
import sys
from pathlib import Path

from hypothesis import HealthCheck, settings

# tests/ is not a package: make ``reference`` and ``strategies`` importable from every test module.
sys.path.insert(0, str(Path(__file__).resolve().parent))

_COMMON = {
    "deadline": None,
    "suppress_health_check": [HealthCheck.too_slow, HealthCheck.data_too_large],
    "print_blob": True,
}
settings.register_profile("ci", max_examples=60, derandomize=True, **_COMMON)
settings.register_profile("dev", max_examples=30, **_COMMON)
settings.register_profile("thorough", max_examples=500, **_COMMON)
settings.load_profile("ci" if os.environ.get("CI") else "dev")

# The suite exercises the compiled kernels: in this process a call that finds no compiled code
# compiles, as it did before small first calls ran uncompiled (kernels/_config.py). Its subprocesses
# keep the default; tests/test_interpreted.py checks those calls against the compiled kernels.
from fairmedfm_fast.kernels import _config as _kernel_config  # noqa: E402

_kernel_config.interpreting["enabled"] = False
