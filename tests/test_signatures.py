"""The one list of kernel signatures (``kernels/_signatures.py``) and the caches' stamp.

The list is what the build step compiles into the wheel and ``fairmedfm-fast warmup`` compiles, so a
public call must not need a signature it lacks. Two checks:

- against the installed wheel (the ``venv`` fixture of ``tests/conftest.py``), started outside the
  clone: every workload of ``fairmedfm_fast/_workloads.py`` (each public path, on both sides of each
  size where the path changes) run by ``python -m fairmedfm_fast.warmup --check`` with an empty
  ``NUMBA_CACHE_DIR``, failing on any compile (numba's ``numba:compile`` event) with the kernel and
  its argument types named;
- from the source tree: a new user's first calls (``tests/_first_call.py --all``) hold only listed
  signatures.
"""
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from fairmedfm_fast import warmup
from fairmedfm_fast.kernels import _caches, _signatures

ROOT = Path(__file__).resolve().parent.parent


def test_every_kernel_is_listed_and_each_type_spells_back():
    """Every kernel found in kernels/ (``fairmedfm-fast warmup`` names the others as missing) has
    signatures on the list, and each listed type spells back to itself."""
    assert set(_signatures.SIGNATURES) == set(warmup.kernels())
    namespace = vars(_signatures)
    for name, signatures in _signatures.SIGNATURES.items():
        assert signatures, name
        assert len(set(signatures)) == len(signatures), name
        for signature in signatures:
            assert isinstance(signature, tuple)
            text = "(" + "".join(_signatures.spell(t) + ", " for t in signature) + ")"
            assert eval(text, namespace) == signature, (name, text)


def _clean_environment(tmp_path: Path) -> dict[str, str]:
    environment = {key: value for key, value in os.environ.items()
                   if not key.startswith(("NUMBA_", "PYTHON", "FAIRMEDFM_FAST_", "XDG_"))}
    (tmp_path / "home").mkdir(exist_ok=True)
    environment.update(HOME=str(tmp_path / "home"), NUMBA_CACHE_DIR=str(tmp_path / "cache"), MPLBACKEND="Agg")
    return environment


def _compiled_lines(report: dict) -> str:
    return "\n".join(f"{workload}: {kernel}({', '.join(types)})" + (f" [error: {entry['error']}]" if entry["error"] else "")
                     for workload, entry in report.items() for kernel, types in entry["compiled"] or [("-", [])])


def test_every_public_path_compiles_nothing_from_the_installed_wheel(venv, tmp_path):
    """The wheel's own workloads, every size, in a process outside the clone with an empty cache folder:
    nothing compiles, fails or is written."""
    done = subprocess.run([str(venv / "bin" / "python"), "-c", "import fairmedfm_fast, runpy, sys; "
                           "print(fairmedfm_fast.__file__, file=sys.stderr); sys.argv[1:] = ['--check']; "
                           "runpy.run_module('fairmedfm_fast.warmup', run_name='__main__')"],
                          capture_output=True, text=True, env=_clean_environment(tmp_path), cwd=tmp_path, timeout=1800)
    module = done.stderr.splitlines()[0] if done.stderr else ""
    assert Path(module).is_relative_to(venv), done.stderr
    report = json.loads(done.stdout.splitlines()[-1])
    assert report == {}, "kernels compiled (or workloads failed) on public paths; add them to the list with " \
        f"`python -m fairmedfm_fast.warmup --record`:\n{_compiled_lines(report)}"
    assert done.returncode == 0 and done.stderr.splitlines()[1:] == [], done.stderr
    assert not list((tmp_path / "cache").rglob("*.nbc"))


def test_the_check_names_what_compiles(tmp_path):
    """The check fails where a path compiles: here the source tree with an empty build cache (which
    neither a shipped nor any other cache serves), one small workload."""
    environment = _clean_environment(tmp_path)
    environment.update(PYTHONPATH=str(ROOT), FAIRMEDFM_FAST_BUILDING_CACHE=str(tmp_path / "build"))
    (tmp_path / "build").mkdir()
    done = subprocess.run([sys.executable, "-m", "fairmedfm_fast.warmup", "--check", "FairnessAccumulator @ 1,000"],
                          capture_output=True, text=True, env=environment, cwd=tmp_path, timeout=1200)
    assert done.returncode == 1, done.stderr
    report = json.loads(done.stdout.splitlines()[-1])
    assert list(report) == ["FairnessAccumulator @ 1,000"] and report["FairnessAccumulator @ 1,000"]["error"] is None
    kernels = {kernel for kernel, _ in report["FairnessAccumulator @ 1,000"]["compiled"]}
    assert "ranking.rank_statistics" in kernels or "sweeps.ranked_sums" in kernels, kernels
    assert "sweeps.ranked_sums" in _compiled_lines(report)


def test_spelling_refuses_unknown_types():
    from numba.core import types

    with pytest.raises(TypeError, match="no spelling"):
        _signatures.spell(types.unicode_type)


def test_public_calls_need_only_listed_signatures():
    environment = {key: value for key, value in os.environ.items() if not key.startswith("NUMBA_")}
    environment["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    environment["FAIRMEDFM_FAST_INTERPRET"] = "never"  # every call reaches compiled kernels, whose types count
    done = subprocess.run([sys.executable, str(ROOT / "tests" / "_first_call.py"), "--all"], capture_output=True,
                          text=True, env=environment, cwd=ROOT, timeout=1800)
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout.splitlines()[-1])
    listed = {name: {tuple(map(_signatures.spell, s)) for s in signatures}
              for name, signatures in _signatures.SIGNATURES.items()}
    unlisted = [(name, signature) for name, signatures in seen["held"].items() for signature in signatures
                if tuple(signature) not in listed.get(name, set())]
    assert not unlisted, "signatures missing from kernels/_signatures.py (python -m fairmedfm_fast.warmup " \
                         f"--record): {unlisted}"
    assert sum(map(len, seen["held"].values())) >= 10  # the calls did reach the kernels


def test_editing_a_helper_module_makes_every_entry_stale(tmp_path):
    """The stamp covers every kernels/*.py file: a helper inlined into callers (here _slots.py) changes
    them without changing their own source."""
    package = tmp_path / "site" / "fairmedfm_fast"
    shutil.copytree(ROOT / "fairmedfm_fast", package, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "kernels", package / "kernels", ignore=shutil.ignore_patterns("__pycache__", "_compiled"))
    environment = {key: value for key, value in os.environ.items() if not key.startswith(("NUMBA_", "PYTHON"))}
    environment.update(PYTHONPATH=str(tmp_path / "site"), NUMBA_CACHE_DIR=str(tmp_path / "cache"),
                       FAIRMEDFM_FAST_INTERPRET="never")  # a small call that misses compiles
    code = ("import numpy as np; from fairmedfm_fast.kernels import coding; "
            "coding.code_counts(np.zeros(4, np.int8), 2); print(sum(coding.code_counts.stats.cache_misses.values()))")

    def compiled():
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=environment,
                              cwd=tmp_path, timeout=600)
        assert done.returncode == 0, done.stderr
        return int(done.stdout.split()[-1])

    assert compiled() == 1
    assert compiled() == 0
    with open(package / "kernels" / "_slots.py", "a") as handle:
        handle.write("\n# an edit\n")
    assert compiled() == 1
    assert compiled() == 0


def test_stamp_covers_numpy_minor_and_kernel_sources_but_not_the_list(monkeypatch, tmp_path):
    folder = tmp_path / "kernels"
    shutil.copytree(ROOT / "kernels", folder, ignore=shutil.ignore_patterns("__pycache__", "_compiled"))
    monkeypatch.setattr(_caches, "_HERE", str(folder))

    def stamp():
        _caches.source_stamp.cache_clear()
        return _caches.source_stamp()

    try:
        first = stamp()
        (folder / "_signatures.py").write_text("# another list\n")
        assert stamp() == first
        (folder / "_bits.py").write_text((folder / "_bits.py").read_text() + "\n")
        second = stamp()
        assert second != first
        import numpy

        monkeypatch.setattr(numpy, "__version__", "1.0.0")
        assert stamp() != second
    finally:
        monkeypatch.undo()
        _caches.source_stamp.cache_clear()


def test_numba_versions_match_the_pin():
    """kernels/_caches.py's NUMBA_VERSIONS is the range pyproject.toml pins, and this numba is in it."""
    import numba

    text = (ROOT / "pyproject.toml").read_text()
    (first, last) = _caches.NUMBA_VERSIONS
    pin = f'"numba>={first[0]}.{first[1]},<{last[0]}.{last[1] + 1}"'
    assert text.count(pin) == 2, pin  # the dependency and the build requirement
    assert text.count('"numba>') == 2
    assert first <= tuple(map(int, numba.__version__.split(".")[:2])) <= last
    assert _caches._numba_problem() is None


def test_an_unsupported_numba_falls_back_to_its_own_cache_with_a_notice(tmp_path):
    """A numba outside NUMBA_VERSIONS (here this one, announcing another version) imports and computes
    the same numbers with numba's own cache=True, and says so once on stderr."""
    environment = _clean_environment(tmp_path)
    environment["PYTHONPATH"] = str(ROOT)
    code = ("import numba; numba.__version__ = '0.99.1'; import numpy as np, fairmedfm_fast as fm; "
            "from fairmedfm_fast.kernels import _plain, ranking; y = np.tile([0, 1], 50); "
            "s = np.linspace(0, 1, 100) ** 2; g = np.repeat(['a', 'b'], 50); "
            "print(repr(fm.auc_gap(y, s, sensitive_features=g)), repr(fm.auc_gap(y, s, sensitive_features=g)), "
            "type(ranking.rank_statistics._cache).__name__, _plain.interpreting['enabled'])")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=environment,
                          cwd=tmp_path, timeout=900)
    assert done.returncode == 0, done.stderr
    first, second, cache, _ = done.stdout.split()
    assert cache == "FunctionCache"  # numba's own
    import numpy as np

    import fairmedfm_fast as fm

    y = np.tile([0, 1], 50)
    s = np.linspace(0, 1, 100) ** 2
    assert float(first) == float(second) == fm.auc_gap(y, s, sensitive_features=np.repeat(["a", "b"], 50))
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and "numba 0.99.1 is not the version it was tested with (0.68)" in lines[0], done.stderr
    assert list((tmp_path / "cache").rglob("*.nbi"))  # numba's cache=True kept them


def test_threads_compiling_at_once_give_one_notice(monkeypatch, capsys):
    """The once-per-process notice is looked up and marked said in one step: threads that reach it
    together (each held 50 ms between its look-up and its mark, so that without the lock all would
    find it unsaid) print one line."""

    class SlowSet(set):
        def __contains__(self, item):
            found = super().__contains__(item)
            time.sleep(0.05)  # between the look-up and the mark
            return found

    monkeypatch.setattr(_caches, "_said", SlowSet())
    together = threading.Barrier(4)

    def compile_one():
        together.wait()
        _caches._notice(None, "/a/cache", "coding.code_counts(array(int8, 1d, C), int64)")

    threads = [threading.Thread(target=compile_one) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert capsys.readouterr().err.count("fairmedfm_fast: compiling kernels") == 1


def test_portable_entries_serve_where_this_cpus_are_missing(tmp_path):
    """A shipped cache holding only entries compiled for numba's generic CPU (what a build with
    FAIRMEDFM_FAST_PORTABLE=1 adds beside the build machine's) serves this CPU: loaded, not compiled,
    and nothing said."""
    package = tmp_path / "site" / "fairmedfm_fast"
    shutil.copytree(ROOT / "fairmedfm_fast", package, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "kernels", package / "kernels", ignore=shutil.ignore_patterns("__pycache__", "_compiled"))
    shipped = package / "kernels" / "_compiled"
    shipped.mkdir()
    environment = _clean_environment(tmp_path)
    environment.update(PYTHONPATH=str(tmp_path / "site"), FAIRMEDFM_FAST_INTERPRET="never")  # a miss compiles
    call = ("import numpy as np; from fairmedfm_fast.kernels import calibration as c; "
            "c.log_loss_into(np.full(3, 0.25), np.array([0, 1, 1], np.uint8), np.empty(3)); "
            "print(sum(c.log_loss_into.stats.cache_misses.values()), sum(c.log_loss_into.stats.cache_hits.values()))")
    build = {**environment, "FAIRMEDFM_FAST_BUILDING_CACHE": str(shipped), "NUMBA_CPU_NAME": "generic"}
    done = subprocess.run([sys.executable, "-c", call], capture_output=True, text=True, env=build, cwd=tmp_path,
                          timeout=600)
    assert done.returncode == 0 and done.stdout.split() == ["1", "0"], done.stderr
    assert list(shipped.glob("*.nbc"))
    done = subprocess.run([sys.executable, "-c", call], capture_output=True, text=True, env=environment,
                          cwd=tmp_path, timeout=600)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["0", "1"] and done.stderr == ""
    assert not list((tmp_path / "cache").rglob("*.nbc"))
