"""The wheel ships its kernels compiled: installed into a new virtual environment, a new process's
first calls compile nothing, write nothing and warn of nothing.

The wheel and the virtual environment are the fixtures ``wheel`` and ``venv`` of ``tests/conftest.py``
(one per test session, shared with ``tests/test_signatures.py``).
"""
import json
import os
import shutil
import subprocess
import zipfile
from pathlib import Path

import numpy as np
import pytest

import fairmedfm_fast as fm

ROOT = Path(__file__).resolve().parent.parent


def _files(*folders: Path) -> dict[str, int]:
    return {str(path): path.stat().st_mtime_ns for folder in folders for path in folder.rglob("*")}


def test_wheel_is_tagged_and_holds_only_the_cache(wheel):
    assert not wheel.name.endswith("-none-any.whl")
    names = zipfile.ZipFile(wheel).namelist()
    shipped = [name for name in names if "/kernels/_compiled/" in name]
    assert any(name.endswith(".nbi") for name in shipped) and any(name.endswith(".nbc") for name in shipped)
    assert all(name.endswith((".nbi", ".nbc")) for name in shipped)
    assert not [name for name in names if "__pycache__" in name or name.endswith((".lock", ".pyc"))]


def test_first_calls_compile_and_write_nothing(venv, tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    environment = {key: value for key, value in os.environ.items()
                   if not key.startswith(("NUMBA_", "PYTHON", "FAIRMEDFM_FAST_", "XDG_"))}
    environment.update(HOME=str(home), TMPDIR=str(tmp_path))
    package = next((venv / "lib").glob("python*/site-packages/fairmedfm_fast"))
    before = _files(package, home)
    done = subprocess.run([str(venv / "bin" / "python"), str(ROOT / "tests" / "_first_call.py")], capture_output=True,
                          text=True, env=environment, cwd=tmp_path, timeout=600)
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout.splitlines()[-1])
    assert seen["compiled"] == []
    assert seen["warnings"] == [] and done.stderr == ""
    assert _files(package, home) == before  # nothing written (as root, a write would have succeeded)
    assert [p.name for p in tmp_path.iterdir() if p.name != "home"] == []
    y = np.tile([0, 1], 500)
    p = np.clip(0.3 * y + 0.7 * np.random.default_rng(0).random(1000), 0, 1)
    expected = fm.evaluate(y, p, {"sex": np.repeat(["F", "M"], 500)}).summary.loc["sex", "auc-gap"]
    assert abs(seen["numbers"]["auc_gap_evaluate"] - expected) < 1e-12
    assert abs(seen["numbers"]["score"] - expected) < 1e-9


def test_a_fresh_dask_cluster_compiles_nothing(venv, tmp_path):
    """Workers of a new LocalCluster that import the installed package load every kernel of
    fairmedfm_fast.dask.evaluate (float32 one-word and float64 two-word records, an intersection) from
    the shipped cache: the numba:compile listener on each worker, and in the client, sees nothing.
    A cluster of two processes started and stopped: 130 s at load average 20 on 2 cores, where
    test_first_calls_compile_and_write_nothing took 17.5 s."""
    pytest.importorskip("distributed")
    home = tmp_path / "home"
    home.mkdir()
    environment = {key: value for key, value in os.environ.items()
                   if not key.startswith(("NUMBA_", "PYTHON", "FAIRMEDFM_FAST_", "XDG_"))}
    environment.update(HOME=str(home), TMPDIR=str(tmp_path))
    done = subprocess.run([str(venv / "bin" / "python"), str(ROOT / "tests" / "_dask_first_call.py")],
                          capture_output=True, text=True, env=environment, cwd=tmp_path, timeout=600)
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout.splitlines()[-1])
    assert len(seen["workers"]) == 2 and all(Path(module).is_relative_to(venv) for module in seen["modules"])
    assert seen["workers"] == {address: [] for address in seen["workers"]}
    assert seen["client"] == []
    for dtype in ("float64", "float32"):
        assert abs(seen["numbers"][dtype] - seen["numbers"][f"in_memory_{dtype}"]) < 1e-9


def test_a_stale_shipped_cache_compiles_with_one_notice(venv, tmp_path):
    """NUMBA_CACHE_DIR neither hides the shipped cache nor is written when it serves; where the shipped
    cache cannot serve (here: this CPU's name changed, so every entry is another CPU's), one line on
    stderr says why and where the kernels are kept, and they are saved there."""
    environment = {key: value for key, value in os.environ.items()
                   if not key.startswith(("NUMBA_", "PYTHON", "FAIRMEDFM_FAST_"))}
    environment.update(HOME=str(tmp_path), NUMBA_CACHE_DIR=str(tmp_path / "cache"))
    # The same numba:compile listener as tests/_first_call.py: here it must see compiles.
    code = ("import numpy as np, fairmedfm_fast as fm; from numba.core import event; seen = []; "
            "listener = type('L', (event.Listener,), {'on_start': lambda self, ev: seen.append(1), "
            "'on_end': lambda self, ev: None})(); event.register('numba:compile', listener); "
            "y = np.tile([0, 1], 50); fm.auc_gap(y, np.linspace(0, 1, 100), sensitive_features=np.repeat(['a', 'b'], 50)); "
            "print(len(seen))")
    python = str(venv / "bin" / "python")
    done = subprocess.run([python, "-c", code], capture_output=True, text=True, env=environment, cwd=tmp_path,
                          timeout=600)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    assert int(done.stdout) == 0
    assert not (tmp_path / "cache").exists()
    environment["NUMBA_CPU_NAME"] = "generic"
    environment["FAIRMEDFM_FAST_INTERPRET"] = "never"  # this small call compiles (no plain-Python first call)
    done = subprocess.run([python, "-c", code], capture_output=True, text=True, env=environment, cwd=tmp_path,
                          timeout=1200)
    assert done.returncode == 0, done.stderr
    assert int(done.stdout) > 0
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and "another CPU" in lines[0] and "fairmedfm-fast warmup" in lines[0], done.stderr
    assert str(tmp_path / "cache") in lines[0]
    assert list((tmp_path / "cache").rglob("*.nbc"))


def test_installed_wheel_matches_the_oracle(venv, tmp_path):
    """A subset of the oracle comparisons (evaluate, the one-number functions, evaluate_segmentation on
    seeded inputs, to 1e-9) against the package installed from the wheel, started outside the checkout:
    the numbers of the shipped machine code, which compiles nothing for them."""
    environment = {key: value for key, value in os.environ.items()
                   if not key.startswith(("NUMBA_", "PYTHON", "FAIRMEDFM_FAST_"))}
    environment.update(HOME=str(tmp_path))
    done = subprocess.run([str(venv / "bin" / "python"), str(ROOT / "tests" / "_wheel_oracle.py")],
                          capture_output=True, text=True, env=environment, cwd=tmp_path, timeout=600)
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout.splitlines()[-1])
    assert Path(seen["module"]).is_relative_to(venv) and seen["oracle"] == "0.4.2"
    assert seen["checked"] == 27
    assert seen["compiled"] == []
    assert done.stderr == ""


def test_a_helper_edit_stales_the_shipped_entries_that_inline_it(venv, tmp_path):
    """calibration.log_loss_into inlines _bits.py's helpers: with _bits.py edited in a copy of the
    installed package, its shipped entry (saved under the old stamp) is not loaded, it compiles."""
    package = tmp_path / "site" / "fairmedfm_fast"
    shutil.copytree(next((venv / "lib").glob("python*/site-packages/fairmedfm_fast")), package)
    environment = {key: value for key, value in os.environ.items()
                   if not key.startswith(("NUMBA_", "PYTHON", "FAIRMEDFM_FAST_"))}
    environment.update(HOME=str(tmp_path), NUMBA_CACHE_DIR=str(tmp_path / "cache"), PYTHONPATH=str(package.parent),
                       FAIRMEDFM_FAST_INTERPRET="never")  # a small call that misses compiles
    code = ("import numpy as np, fairmedfm_fast; from fairmedfm_fast.kernels import calibration as c; "
            f"assert fairmedfm_fast.__file__.startswith({str(package)!r}); "
            "c.log_loss_into(np.full(3, 0.25), np.array([0, 1, 1], np.uint8), np.empty(3)); "
            "print(sum(c.log_loss_into.stats.cache_misses.values()), sum(c.log_loss_into.stats.cache_hits.values()))")

    def misses_and_hits():
        done = subprocess.run([str(venv / "bin" / "python"), "-c", code], capture_output=True, text=True,
                              env=environment, cwd=tmp_path, timeout=600)
        assert done.returncode == 0, done.stderr
        return tuple(map(int, done.stdout.split())), done.stderr

    assert misses_and_hits() == ((0, 1), "")  # the copy's shipped cache serves
    with open(package / "kernels" / "_bits.py", "a") as handle:
        handle.write("\n# an edit\n")
    counts, stderr = misses_and_hits()
    assert counts == (1, 0)
    assert "other kernel sources" in stderr


def test_a_signature_the_wheel_lacks_compiles_with_one_notice(venv, tmp_path):
    """Where the shipped cache applies but lacks a call's argument types (here a strided array, which no
    public path hands a kernel), the compile is announced once per process, naming the first kernel;
    the second call compiles nothing more."""
    environment = {key: value for key, value in os.environ.items()
                   if not key.startswith(("NUMBA_", "PYTHON", "FAIRMEDFM_FAST_"))}
    environment.update(HOME=str(tmp_path), NUMBA_CACHE_DIR=str(tmp_path / "cache"), FAIRMEDFM_FAST_INTERPRET="never")
    code = ("import numpy as np; from fairmedfm_fast.kernels import calibration as c; "
            "labels = np.array([0, 1, 1], np.uint8); "
            "c.log_loss_into(np.full(6, 0.25)[::2], labels, np.empty(3)); "
            "c.log_loss_into(np.full(6, 0.5)[::2], labels, np.empty(3)); "
            "print(sum(c.log_loss_into.stats.cache_misses.values()))")
    done = subprocess.run([str(venv / "bin" / "python"), "-c", code], capture_output=True, text=True,
                          env=environment, cwd=tmp_path, timeout=600)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["1"]
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert "does not ship (first: calibration.log_loss_into(array(float64, 1d, A)" in lines[0]
    assert "later calls are fast" in lines[0] and str(tmp_path / "cache") in lines[0]


def test_wheel_holds_every_module_of_the_tree(wheel):
    """Each subpackage is named in pyproject.toml: a module missing from the wheel would fail only
    where the package is installed."""
    names = set(zipfile.ZipFile(wheel).namelist())
    tree = {f"fairmedfm_fast/{path.relative_to(ROOT / 'fairmedfm_fast').as_posix()}"
            for path in (ROOT / "fairmedfm_fast").rglob("*.py") if "__pycache__" not in path.parts}
    tree |= {f"fairmedfm_fast/kernels/{path.name}" for path in (ROOT / "kernels").glob("*.py")}
    inside = {name.split(".data/purelib/", 1)[-1] for name in names}
    assert tree - inside == set()
