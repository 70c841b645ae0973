"""A read-only installed package works: no writable package folder, HOME or NUMBA_CACHE_DIR.

The package is laid out as the wheel installs it (``kernels/`` inside ``fairmedfm_fast/``) in a
temporary folder, made read-only (``chmod -R a-w``), and used by an unprivileged process: user
``nobody`` through ``setpriv`` when the tests run as root (root ignores file permissions), else the
current user. As root where ``nobody`` cannot run this Python (a virtual environment in a private
folder), read-only bind mounts in a new mount namespace (``unshare -m``) stand in for the file
permissions. Skipped where none of these can be set up.
"""
import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest

import fairmedfm_fast as fm

ROOT = Path(__file__).resolve().parent.parent

_CALLS = """
import json, sys, warnings
import numpy as np
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    import fairmedfm_fast as fm
    from fairmedfm_fast.kernels import _caches, segmentation, sweeps
    rng = np.random.default_rng(0)
    y = np.tile([0, 1], 500)
    p = np.clip(0.3 * y + 0.7 * rng.random(1000), 0, 1)
    result = {}
    if "classification" in sys.argv:
        result["auc_gap"] = fm.evaluate(y, p, {"sex": np.repeat(["F", "M"], 500)}).summary.loc["sex", "auc-gap"]
    masks = (rng.random((4, 8, 8, 8)) < 0.3).astype(np.uint8)
    report = fm.evaluate_segmentation({"sex": ["F", "M", "F", "M"]}, pred_masks=masks, true_masks=masks[::-1])
    result["dice_gap"] = report.summary.loc["sex", "delta_dice"]
kernels = [sweeps.ranked_sums, segmentation.overlap_counts]
result["compiled"] = sum(sum(k.stats.cache_misses.values()) for k in kernels)
result["loaded"] = sum(sum(k.stats.cache_hits.values()) for k in kernels)
result["cache"] = [_caches.cache_location(k) for k in kernels]
result["warnings"] = [f"{w.category.__name__}: {w.message}" for w in caught]
print(json.dumps(result))
"""


def _works(prefix: list[str]) -> bool:
    try:
        done = subprocess.run(prefix + [sys.executable, "-c", "import numba, pandas"], capture_output=True,
                              timeout=120)
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0


def _mount_read_only(paths) -> list[str]:
    """A prefix that runs a command with ``paths`` mounted read-only (root, in a new mount namespace)."""
    script = 'for d in "$@"; do [ "$d" = -- ] && break; [ -d "$d" ] && { mount -o bind,ro "$d" "$d" || exit 97; }; ' \
             'shift; done; shift; exec "$@"'
    return [shutil.which("unshare") or "unshare", "-m", "sh", "-c", script, "sh", *map(str, paths), "--"]


def _runner():
    """How to run a command that cannot write read-only folders: ("user", []), ("nobody", prefix),
    ("mount", []) (root with read-only mounts), or None."""
    if not hasattr(os, "geteuid"):
        return None
    if os.geteuid() != 0:
        return "user", []
    setpriv = shutil.which("setpriv")
    prefix = [setpriv, "--reuid=nobody", "--regid=nogroup", "--clear-groups"]
    if setpriv and _works(prefix):
        return "nobody", prefix
    if shutil.which("unshare") and _works(_mount_read_only([])):
        return "mount", []
    return None


@pytest.fixture(scope="module")
def unprivileged():
    runner = _runner()
    if runner is None:
        pytest.skip("cannot run this Python unprivileged or with read-only mounts here")
    return runner


@pytest.fixture
def folder():
    """A folder others can read (pytest's tmp_path is private to its user)."""
    path = Path(tempfile.mkdtemp(prefix="fairmedfm_fast_readonly_"))
    path.chmod(0o755)
    yield path
    for inner, dirs, _ in os.walk(path):
        for name in dirs:
            (Path(inner) / name).chmod(0o755)
    path.chmod(0o755)
    shutil.rmtree(path, ignore_errors=True)


def _install(site: Path, prebuilt: bool) -> None:
    """The wheel's layout; with ``prebuilt``, a shipped cache (``kernels/_compiled``, as the wheel's build
    step fills it) copied from this test process's cache."""
    package = site / "fairmedfm_fast"
    shutil.copytree(ROOT / "fairmedfm_fast", package, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "kernels", package / "kernels", ignore=shutil.ignore_patterns("__pycache__", "_compiled"))
    if prebuilt:
        from fairmedfm_fast.kernels import _caches, segmentation, sweeps

        target = package / "kernels" / "_compiled"
        target.mkdir()
        for kernel in (sweeps.ranked_sums, segmentation.overlap_counts):
            if _caches.cache_location(kernel) is None:
                pytest.skip("this process has no kernel cache to copy")
            for cached in Path(_caches.cache_location(kernel)).glob("*.nb[ic]"):
                shutil.copy(cached, target)


def _read_only(path: Path) -> None:
    for inner, dirs, files in os.walk(path):
        for name in files:
            (Path(inner) / name).chmod(0o444)
        for name in dirs:
            (Path(inner) / name).chmod(0o555)
    path.chmod(0o555)


def _run(runner, command, site: Path, tmpdir: Path, cwd: Path, read_only=(), compile_small=False
         ) -> subprocess.CompletedProcess:
    """``command`` as ``runner`` says, unable to write ``read_only`` (a mount where file permissions
    do not bind: root); ``compile_small``: its small calls compile (no plain-Python first calls)."""
    mode, prefix = runner
    if read_only and mode != "user":
        prefix = _mount_read_only(read_only) + prefix
    environment = {key: value for key, value in os.environ.items() if not key.startswith(("NUMBA_", "PYTHON"))}
    environment.update(PYTHONPATH=str(site), HOME=str(site / "home"), TMPDIR=str(tmpdir),
                       XDG_CACHE_HOME=str(site / "home" / ".cache"), PYTHONDONTWRITEBYTECODE="1")
    if compile_small:
        environment["FAIRMEDFM_FAST_INTERPRET"] = "never"
    done = subprocess.run(prefix + command, cwd=cwd, env=environment, capture_output=True, text=True, timeout=600)
    if done.returncode == 97:
        pytest.skip("cannot mount read-only in a new mount namespace here")
    return done


def _expected():
    y = np.tile([0, 1], 500)
    p = np.clip(0.3 * y + 0.7 * np.random.default_rng(0).random(1000), 0, 1)
    return fm.evaluate(y, p, {"sex": np.repeat(["F", "M"], 500)}).summary.loc["sex", "auc-gap"]


def test_prebuilt_cache_is_used_read_only(unprivileged, folder):
    """Filled at build time, then read-only: loaded, nothing compiled, nothing written (no writable folder
    is even looked for), no warning; the command line too."""
    expected = _expected()  # also fills this process's cache, which the copy below takes
    rng = np.random.default_rng(0)
    masks = (rng.random((4, 8, 8, 8)) < 0.3).astype(np.uint8)
    fm.evaluate_segmentation({"sex": ["F", "M", "F", "M"]}, pred_masks=masks, true_masks=masks[::-1])
    site = folder / "site"
    _install(site, prebuilt=True)
    (site / "home").mkdir()
    table = folder / "predictions.csv"
    y = np.tile([0, 1], 50)
    table.write_text("label,prob,sex\n" + "".join(f"{v},{(i % 7) / 7:.3f},{'FM'[i % 2]}\n" for i, v in enumerate(y)))
    _read_only(folder)
    done = _run(unprivileged, [sys.executable, "-c", _CALLS, "classification"], site, site, folder, [folder])
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout.splitlines()[-1])
    assert seen["warnings"] == []
    assert seen["compiled"] == 0 and seen["loaded"] == 2
    # A miss would be saved outside the package (here a private folder in /tmp), never into it.
    assert not [path for path in seen["cache"] if path is None or path.startswith(str(site))]
    assert abs(seen["auc_gap"] - expected) < 1e-12
    done = _run(unprivileged, [sys.executable, "-m", "fairmedfm_fast", "score", str(table)], site, site, folder,
                [folder])
    assert done.returncode == 0, done.stderr
    assert "sex" in json.loads(done.stdout)


def test_no_cache_folder_compiles_in_memory_with_one_warning(unprivileged, folder):
    """Not even a temporary folder is writable (/tmp and /var/tmp mounted read-only)."""
    if unprivileged[0] == "user":
        pytest.skip("making /tmp read-only needs root")
    site = folder / "site"
    _install(site, prebuilt=False)
    (site / "home").mkdir()
    _read_only(folder)
    done = _run(unprivileged, [sys.executable, "-c", _CALLS], site, site, folder, [folder, "/tmp", "/var/tmp"],
                compile_small=True)
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout.splitlines()[-1])
    assert len(seen["warnings"]) == 1 and seen["warnings"][0].startswith("RuntimeWarning: fairmedfm_fast: no writable")
    assert seen["cache"] == [None, None] and seen["compiled"] == 1
    assert seen["dice_gap"] >= 0


def test_writable_temporary_folder_is_used(unprivileged, folder):
    """No writable package folder or HOME, but a temporary folder: the cache goes to a private folder there."""
    site, scratch = folder / "site", folder / "scratch"
    _install(site, prebuilt=False)
    (site / "home").mkdir()
    scratch.mkdir()
    _read_only(site)
    if unprivileged[0] == "nobody":  # the unprivileged user must own its temporary folder
        shutil.chown(scratch, "nobody", "nogroup")
    done = _run(unprivileged, [sys.executable, "-c", _CALLS], site, scratch, folder, [site], compile_small=True)
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout.splitlines()[-1])
    assert seen["warnings"] == []
    private = next(scratch.glob("fairmedfm_fast-numba-*"))
    assert stat.S_IMODE(private.stat().st_mode) == 0o700
    assert seen["cache"][1].startswith(str(private))
    assert list(Path(seen["cache"][1]).glob("segmentation.overlap_counts-*.nbi"))

