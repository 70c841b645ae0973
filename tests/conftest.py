"""Shared pytest configuration: Hypothesis profiles.

``ci`` is loaded when the ``CI`` environment variable is set (as ``.ci/run`` and most CI services do):
no deadline (the first call of a kernel compiles it), a fixed number of examples and derandomized
search, so that a CI run is reproducible. ``dev`` is the default on a workstation: fewer examples,
random search, still no deadline. Select one explicitly with ``--hypothesis-profile=NAME``.
"""
import os
import site
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
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
# compiles, as it did before small first calls ran uncompiled (kernels/_plain.py). Its subprocesses
# keep the default; tests/test_interpreted.py checks those calls against the compiled kernels.
from fairmedfm_fast.kernels import _plain as _kernel_plain  # noqa: E402

_kernel_plain.interpreting["enabled"] = False

ROOT = Path(__file__).resolve().parent.parent
WHEEL_ENV = "FAIRMEDFM_FAST_WHEEL"


@pytest.fixture(scope="session")
def wheel(tmp_path_factory) -> Path:
    """The wheel: ``$FAIRMEDFM_FAST_WHEEL`` when set (``.ci/run`` builds one wheel, installs it and points
    here, so CI builds it once); else one built now with ``pip wheel`` (which compiles every listed
    signature: minutes on two cores)."""
    given = os.environ.get(WHEEL_ENV)
    if given:
        return Path(given)
    folder = tmp_path_factory.mktemp("wheel")
    environment = {key: value for key, value in os.environ.items() if not key.startswith("FAIRMEDFM_FAST_")}
    done = subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", str(ROOT), "-w", str(folder)],
                          capture_output=True, text=True, env=environment, timeout=3600)
    if done.returncode != 0 and "No matching distribution" in done.stderr:
        pytest.skip("no package index to build the wheel's build environment from")
    assert done.returncode == 0, done.stderr
    return next(folder.glob("fairmedfm_fast-*.whl"))


@pytest.fixture(scope="session")
def venv(wheel, tmp_path_factory) -> Path:
    """A new virtual environment with the wheel installed: no pip and no packages of its own but the
    wheel; a ``.pth`` file lends it this environment's dependencies (the oracle, fairmedfm 0.4.2, among
    them)."""
    root = tmp_path_factory.mktemp("venv")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root)], check=True, timeout=300)
    python = root / "bin" / "python"
    purelib = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             capture_output=True, text=True, check=True).stdout.strip()
    lent = [path for path in [*site.getsitepackages(), sysconfig.get_paths()["purelib"]] if os.path.isdir(path)]
    Path(purelib, "lent-dependencies.pth").write_text("\n".join(dict.fromkeys(lent)) + "\n")
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-index", "--target", purelib,
                    str(wheel)], check=True, timeout=600)
    return root
