"""``fairmedfm-fast warmup``: which kernels it knows, what it prints, and that its cache serves a new process.

The full warmup compiles every listed signature (minutes on two cores with an empty cache), so the
suite runs it only with ``FAIRMEDFM_FAST_FULL_WARMUP=1``; the other tests compile a few kernels.
"""
import io
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from fairmedfm_fast import cli, warmup

ROOT = Path(__file__).resolve().parent.parent


def test_every_kernel_is_found():
    """A new ``@kernel`` in any kernels/ module, or a new module, is found without registering it anywhere."""
    declared = set()
    for path in (ROOT / "kernels").glob("*.py"):
        for name in re.findall(r"^@kernel\ndef (\w+)", path.read_text(), flags=re.MULTILINE):
            declared.add(f"{path.stem}.{name}")
    assert len(declared) > 50
    assert set(warmup.kernels()) == declared


def test_command_prints_kernels_and_cache(monkeypatch, capsys):
    from fairmedfm_fast.kernels import _signatures

    listed = {name: _signatures.SIGNATURES[name] for name in ("ranking.rank_statistics", "_slots.slot_offsets")}
    monkeypatch.setattr(_signatures, "SIGNATURES", listed)
    assert cli.main(["warmup", "--jobs", "1"]) is None  # success, as fairmedfm's main reports it
    out = capsys.readouterr().out
    assert re.search(r"^  ranking\.rank_statistics +\d+ signatures$", out, flags=re.MULTILINE)
    assert re.search(r"^\d+ signatures of \d+ kernels in [\d.]+ s", out, flags=re.MULTILINE)
    assert re.search(r"^cache: \S", out, flags=re.MULTILINE)


def test_parallel_workers_fill_the_cache():
    """Two workloads in two processes; then a new process finds every signature in the cache."""
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    environment.pop("NUMBA_CACHE_DIR", None)
    code = ("import io, sys; from fairmedfm_fast import warmup; out = io.StringIO(); "
            "code = warmup.warmup(int(sys.argv[1]), out, ['calibration.log_loss_into', 'calibration.equal_width_edges']); "
            "print(out.getvalue()); sys.exit(code)")
    outputs = []
    for jobs in ("2", "1"):
        done = subprocess.run([sys.executable, "-c", code, jobs], capture_output=True, text=True, timeout=900,
                              env=environment)
        assert done.returncode == 0, done.stdout + done.stderr
        outputs.append(done.stdout)
    from fairmedfm_fast.kernels._signatures import SIGNATURES

    listed = len(SIGNATURES["calibration.log_loss_into"]) + len(SIGNATURES["calibration.equal_width_edges"])
    assert f"compiling {listed} signatures in 2 processes" in outputs[0]
    assert "cache: " in outputs[0]
    assert " (0 compiled now, " in outputs[1]


def test_no_writable_cache_exits_1(monkeypatch):
    from fairmedfm_fast.kernels import _caches, _signatures

    monkeypatch.setattr(_caches, "cache_location", lambda dispatcher: None)
    monkeypatch.setattr(_signatures, "compile_all", lambda names, jobs: [(names[0], 0.0, 0, 1)])
    out = io.StringIO()
    assert warmup.warmup(1, out) == 1
    assert "no writable cache folder" in out.getvalue()


@pytest.mark.skipif(not os.environ.get("FAIRMEDFM_FAST_FULL_WARMUP"), reason="set FAIRMEDFM_FAST_FULL_WARMUP=1")
def test_full_warmup_reaches_every_kernel():
    out = io.StringIO()
    assert warmup.warmup(None, out) == 0
    from fairmedfm_fast.kernels import _signatures

    assert all(f"  {name} " in out.getvalue() for name in _signatures.SIGNATURES), out.getvalue()
