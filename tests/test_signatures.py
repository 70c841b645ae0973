"""The one list of kernel signatures (``kernels/_signatures.py``) and the caches' stamp.

The list is what the build step compiles into the wheel and ``fairmedfm-fast warmup`` compiles, so a
public call must not need a signature it lacks: a new process runs a new user's first calls (and
more of the API) and every kernel signature it holds afterwards, compiled (counted with numba's
``numba:compile`` event) or loaded, must be listed. With a warm cache this takes seconds; with an
empty one, the compile time of the signatures those calls reach.
"""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from fairmedfm_fast import warmup
from fairmedfm_fast.kernels import _config, _signatures

ROOT = Path(__file__).resolve().parent.parent


def test_listed_kernels_exist_and_each_type_spells_back():
    assert set(_signatures.SIGNATURES) <= set(warmup.kernels())
    namespace = vars(_signatures)
    for name, signatures in _signatures.SIGNATURES.items():
        assert signatures, name
        assert len(set(signatures)) == len(signatures), name
        for signature in signatures:
            assert isinstance(signature, tuple)
            text = "(" + "".join(_signatures.spell(t) + ", " for t in signature) + ")"
            assert eval(text, namespace) == signature, (name, text)


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
    monkeypatch.setattr(_config, "_HERE", str(folder))

    def stamp():
        _config.source_stamp.cache_clear()
        return _config.source_stamp()

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
        _config.source_stamp.cache_clear()
