"""The build step: the wheel ships its kernels compiled (``pyproject.toml``, ``[tool.setuptools.cmdclass]``).

``build_py`` copies the package into the build folder as usual, then compiles every signature of
``kernels/_signatures.py`` into ``fairmedfm_fast/kernels/_compiled/`` there, in a child process that
imports the copy being built (with no ``NUMBA_*`` variable, so that nothing redirects or disables
the cache), one worker per core. ``bdist_wheel`` then tags the wheel for this Python and platform,
since it holds machine code. Set ``FAIRMEDFM_FAST_SKIP_COMPILE=1`` to skip the step (a pure wheel
whose kernels compile on first use), for packagers that build where the package will not run, and
``FAIRMEDFM_FAST_PORTABLE=1`` to add entries for any CPU of the architecture beside the build
machine's (:data:`PORTABLE_ENV`).

setuptools loads this file by its path, outside the package: it imports nothing of fairmedfm_fast.
"""
import os
import shutil
import subprocess
import sys
import time

from setuptools.command.build_py import build_py as _build_py

try:
    from setuptools.command.bdist_wheel import bdist_wheel as _bdist_wheel
except ImportError:  # setuptools < 70.1
    from wheel.bdist_wheel import bdist_wheel as _bdist_wheel

SKIP_ENV = "FAIRMEDFM_FAST_SKIP_COMPILE"
#: Set to 1 to add, beside the build machine's entries, entries compiled for any CPU of its
#: architecture (numba's ``generic`` CPU), loaded where the machine's own do not apply: a wheel for
#: several CPU models, at twice the build time and slower kernels there (docs/deployment.md).
PORTABLE_ENV = "FAIRMEDFM_FAST_PORTABLE"
# Kept in step with kernels/_caches.py (BUILD_ENV, SHIPPED_FOLDER), which this file cannot import.
BUILD_ENV = "FAIRMEDFM_FAST_BUILDING_CACHE"
SHIPPED_FOLDER = "_compiled"


def _set(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() not in ("", "0", "false", "no")


def _skipped() -> bool:
    return _set(SKIP_ENV)


class BuildPy(_build_py):
    """``build_py``, then the kernels compiled into the built package."""

    def run(self):
        # Start from a clean copy of the package: nothing left from an earlier build ships.
        shutil.rmtree(os.path.join(self.build_lib, "fairmedfm_fast"), ignore_errors=True)
        super().run()
        if getattr(self, "editable_mode", False) or _skipped():
            return
        target = os.path.join(self.build_lib, "fairmedfm_fast", "kernels", SHIPPED_FOLDER)
        shutil.rmtree(target, ignore_errors=True)  # a build folder left from an earlier build
        os.makedirs(target)
        environment = {key: value for key, value in os.environ.items() if not key.startswith("NUMBA_")}
        environment[BUILD_ENV] = os.path.abspath(target)
        # The copy being built first; then what the build environment had (pip's isolated build
        # environment reaches its numba through PYTHONPATH).
        environment["PYTHONPATH"] = os.pathsep.join(filter(None, [os.path.abspath(self.build_lib),
                                                                  os.environ.get("PYTHONPATH")]))
        environment["PYTHONDONTWRITEBYTECODE"] = "1"  # no __pycache__ in the built package
        begin = time.perf_counter()
        self.announce(f"compiling the kernels into {target}", level=2)
        targets = [{}] + ([{"NUMBA_CPU_NAME": "generic"}] if _set(PORTABLE_ENV) else [])
        for cpu in targets:  # this machine's CPU, then (when asked) any CPU of its architecture
            done = subprocess.run([sys.executable, "-m", "fairmedfm_fast.kernels._signatures", "--build"],
                                  cwd=os.path.abspath(self.build_lib), env={**environment, **cpu})
            if done.returncode != 0:
                break
        for name in os.listdir(target):  # the lock and any temporary file of an interrupted save
            if not name.endswith((".nbi", ".nbc")):
                os.remove(os.path.join(target, name))
        if done.returncode != 0:
            raise RuntimeError(f"compiling the kernels failed (exit {done.returncode}); set {SKIP_ENV}=1 "
                               "to build without them")
        print(f"fairmedfm_fast: kernels compiled into the wheel in {time.perf_counter() - begin:.1f} s",
              file=sys.stderr)


class BdistWheel(_bdist_wheel):
    """A wheel tagged for this Python and platform when it holds compiled kernels, else pure."""

    def finalize_options(self):
        super().finalize_options()
        self.root_is_pure = _skipped()
