"""First calls at real sizes in a fresh environment: each call in a new process with an empty Numba cache.

    python benchmarks/scripts/first_calls.py [--python PYTHON] [--repeat R] [--only TEXT] [--json FILE]

``--python`` is the interpreter of the environment to test (a venv where ``pip install .`` put the
wheel; default: this one). Each call of :data:`CALLS` runs in a new process started outside the
repository (no ``PYTHONPATH``, ``HOME`` and ``NUMBA_CACHE_DIR`` new empty folders), which makes its
data, then times the call once (the first call, what a new user meets) and again (warm), counting the
kernels compiled with numba's ``numba:compile`` event. Printed per call: the median first and warm
times over ``--repeat`` processes, the whole process, the kernels compiled, and whether the first
call met the budget of issue 38 (at most 1.0 s plus twice the warm time). The command line row runs
``fairmedfm-fast score`` twice as whole processes (the second is its warm time).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time

_PRELUDE = """
import json, sys, time, warnings
import numpy as np
begin = time.perf_counter()
import fairmedfm_fast as fm
imported = time.perf_counter() - begin
from fairmedfm_fast._workloads import record_compiles
compiled = record_compiles()
warnings.simplefilter("ignore")
rng = np.random.default_rng(0)
def labels_scores(n, dtype=np.float64):
    y = (rng.random(n) < 0.3).astype(np.int64)
    return y, np.clip(0.3 * y + 0.7 * rng.random(n), 0, 1).astype(dtype)
def strings(n):
    return {"site": rng.choice(["a", "b", "c", "d", "e"], n), "sex": rng.choice(["F", "M"], n),
            "age": rng.choice(["<40", "40-60", "60-80", ">=80"], n)}
"""

_TIMED = """
def call():
{body}
begin = time.perf_counter(); call(); first = time.perf_counter() - begin
n_compiled = len(compiled)
warm = min(_timed(call) for _ in range(3))
print(json.dumps({{"import": imported, "first": first, "warm": warm, "compiled": [c[0] for c in compiled[:n_compiled]]}}))
"""

_HELPERS = """
def _timed(function):
    begin = time.perf_counter(); function(); return time.perf_counter() - begin
"""

#: name -> (setup, body of call()): the table of issue 38.
CALLS: dict[str, tuple[str, str]] = {
    "evaluate, 1,000 samples": (
        "y, p = labels_scores(1000); a = {'sex': rng.choice(['F', 'M'], 1000)}",
        "fm.evaluate(y, p, a)"),
    "evaluate, 1M float64, 3 string attributes": (
        "y, p = labels_scores(1_000_000); a = strings(1_000_000)",
        "fm.evaluate(y, p, a)"),
    "evaluate, 1M float32, 3 string attributes": (
        "y, p = labels_scores(1_000_000, np.float32); a = strings(1_000_000)",
        "fm.evaluate(y, p, a)"),
    "auc_gap, 1M": (
        "y, p = labels_scores(1_000_000); a = strings(1_000_000)['site']",
        "fm.auc_gap(y, p, sensitive_features=a)"),
    "evaluate(n_boot=20), 100k": (
        "y, p = labels_scores(100_000); a = strings(100_000)",
        "fm.evaluate(y, p, a, n_boot=20, random_state=0)"),
    "evaluate(n_permutations=20), 100k": (
        "y, p = labels_scores(100_000); a = strings(100_000)",
        "fm.evaluate(y, p, a, n_permutations=20, random_state=0)"),
    "evaluate(interval='analytic'), 100k": (
        "y, p = labels_scores(100_000); a = strings(100_000)",
        "fm.evaluate(y, p, a, interval='analytic')"),
    "evaluate_tasks, 3 tasks, 100k": (
        "y, p = labels_scores(100_000); a = strings(100_000); "
        "scores = {t: np.clip(p + 0.05 * i * rng.random(len(p)), 0, 1) for i, t in enumerate('abc')}",
        "fm.evaluate_tasks(y, scores, a)"),
    "FairnessAccumulator, 50 x 2,000, result()": (
        "y, p = labels_scores(100_000); a = strings(100_000)",
        "    acc = fm.FairnessAccumulator()\n"
        "    for i in range(0, 100_000, 2000):\n"
        "        acc.update(y[i:i + 2000], p[i:i + 2000], {k: v[i:i + 2000] for k, v in a.items()})\n"
        "    acc.result()"),
    "evaluate_segmentation dice+hd95, 8 x 128^3": (
        "truth = rng.random((8, 128, 128, 128)) < 0.02\n"
        "import scipy.ndimage as nd\n"
        "truth = np.stack([nd.binary_dilation(t, iterations=2) for t in truth])\n"
        "pred = truth ^ (rng.random(truth.shape) < 0.01); g = {'sex': ['F', 'M'] * 4}",
        "fm.evaluate_segmentation(g, pred_masks=pred, true_masks=truth, metrics=['dice', 'hd95'])"),
}

_CLI = "fairmedfm-fast score, 200k-row Parquet"


def _environment(folder: str) -> dict[str, str]:
    environment = {key: value for key, value in os.environ.items()
                   if not key.startswith(("NUMBA_", "PYTHON", "FAIRMEDFM_FAST_", "XDG_"))}
    os.makedirs(os.path.join(folder, "home"), exist_ok=True)
    environment.update(HOME=os.path.join(folder, "home"), NUMBA_CACHE_DIR=os.path.join(folder, "cache"),
                       TMPDIR=folder, MPLBACKEND="Agg")
    return environment


def run_call(python: str, name: str) -> dict:
    setup, body = CALLS[name]
    if not body.startswith("    "):
        body = "    " + body
    script = _PRELUDE + _HELPERS + textwrap.dedent(setup) + "\n" + _TIMED.format(body=body)
    with tempfile.TemporaryDirectory(prefix="first_calls_") as folder:
        begin = time.perf_counter()
        done = subprocess.run([python, "-c", script], capture_output=True, text=True, cwd=folder,
                              env=_environment(folder), timeout=1800)
        whole = time.perf_counter() - begin
    if done.returncode != 0:
        raise RuntimeError(f"{name}: {done.stderr.strip()[-2000:]}")
    result = json.loads(done.stdout.strip().splitlines()[-1])
    result["whole"] = whole
    result["stderr"] = done.stderr.strip()
    return result


def run_cli(python: str) -> dict:
    """``fairmedfm-fast score`` of a 200,000-row Parquet file, twice, as whole processes."""
    with tempfile.TemporaryDirectory(prefix="first_calls_") as folder:
        environment = _environment(folder)
        make = ("import numpy as np, pandas as pd; rng = np.random.default_rng(0); n = 200_000; "
                "y = (rng.random(n) < 0.3).astype(np.int64); "
                "pd.DataFrame({'label': y, 'prob': np.clip(0.3 * y + 0.7 * rng.random(n), 0, 1), "
                "'sex': rng.choice(['F', 'M'], n), 'site': rng.choice(list('abcde'), n)}).to_parquet('p.parquet')")
        subprocess.run([python, "-c", make], check=True, cwd=folder, env=environment, timeout=600)
        script = os.path.join(os.path.dirname(python), "fairmedfm-fast")
        command = [script] if os.path.exists(script) else [python, "-m", "fairmedfm_fast"]
        times, errors = [], []
        for _ in range(2):
            begin = time.perf_counter()
            done = subprocess.run([*command, "score", "p.parquet"], capture_output=True, text=True, cwd=folder,
                                  env=environment, timeout=1800)
            times.append(time.perf_counter() - begin)
            if done.returncode != 0:
                raise RuntimeError(f"{_CLI}: {done.stderr.strip()[-2000:]}")
            errors.append(done.stderr.strip())
        kept = [os.path.join(root, f) for root, _, files in os.walk(os.path.join(folder, "cache")) for f in files
                if f.endswith(".nbc")]
    return {"first": times[0], "warm": times[1], "whole": times[0], "import": 0.0,
            "compiled": [f"({len(kept)} cache files written)"] if kept else [], "stderr": errors[0]}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--python", default=sys.executable)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--only", default="", help="only the calls whose name contains this text")
    parser.add_argument("--json", default=None)
    options = parser.parse_args(argv)
    names = [name for name in [*CALLS, _CLI] if options.only in name]
    print(f"{'first call':<46} {'first s':>8} {'warm s':>8} {'process s':>9} {'compiled':>8}  within 1 s + 2 x warm")
    rows = {}
    failed = 0
    for name in names:
        runs = [run_cli(options.python) if name == _CLI else run_call(options.python, name)
                for _ in range(options.repeat)]
        first = statistics.median(r["first"] for r in runs)
        warm = statistics.median(r["warm"] for r in runs)
        whole = statistics.median(r["whole"] for r in runs)
        compiled = max((r["compiled"] for r in runs), key=len)
        ok = first <= 1.0 + 2 * warm and not compiled
        failed += not ok
        rows[name] = {"first": first, "warm": warm, "whole": whole, "compiled": compiled,
                      "stderr": runs[0]["stderr"], "ok": ok}
        print(f"{name:<46} {first:8.2f} {warm:8.3f} {whole:9.2f} {len(compiled):8d}  {'yes' if ok else 'NO'}",
              flush=True)
        if compiled:
            print(f"    compiled: {', '.join(sorted(set(compiled))[:12])}{' ...' if len(set(compiled)) > 12 else ''}")
        if runs[0]["stderr"]:
            print(f"    stderr: {runs[0]['stderr'].splitlines()[0][:300]}")
    if options.json:
        with open(options.json, "w") as handle:
            json.dump(rows, handle, indent=1)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
