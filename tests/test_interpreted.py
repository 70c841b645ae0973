"""Small first calls with nothing compiled run the kernels' plain-Python copies (kernels/_plain.py),
and give the compiled kernels' numbers exactly.

Each check is a new process with an empty ``NUMBA_CACHE_DIR`` (a source checkout ships no compiled
kernels), so that nothing compiled is found; about 3 s each. The compiled side runs the same script
with ``FAIRMEDFM_FAST_INTERPRET=never`` and the test session's cache (it compiles what is missing).
"""
import json
import math
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from fairmedfm_fast.kernels import _plain, calibration

ROOT = Path(__file__).resolve().parents[1]
CALLS = Path(__file__).resolve().parent / "_interpreted_calls.py"


def _run(arguments, tmp_path, cold=True, **env):
    environment = {**os.environ, "PYTHONPATH": str(ROOT), **env}
    environment.pop(_plain.INTERPRET_ENV, None)
    environment.update(env)
    if cold:
        environment["NUMBA_CACHE_DIR"] = str(tmp_path / "empty-cache")
    done = subprocess.run([sys.executable, *arguments], capture_output=True, text=True, cwd=tmp_path,
                          env=environment, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    return done


def _differences(a, b, path=""):
    if isinstance(a, dict) and isinstance(b, dict):
        if set(a) != set(b):
            return [f"{path}: keys {sorted(set(a) ^ set(b))}"]
        return [d for key in a for d in _differences(a[key], b[key], f"{path}/{key}")]
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return [f"{path}: {len(a)} != {len(b)} items"]
        return [d for k, (x, y) in enumerate(zip(a, b)) for d in _differences(x, y, f"{path}[{k}]")]
    same = a == b or (isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b))
    return [] if same else [f"{path}: {a!r} != {b!r}"]


def test_small_first_calls_compile_nothing_and_equal_the_compiled_kernels(tmp_path):
    plain = json.loads(_run([str(CALLS)], tmp_path).stdout)
    compiled = json.loads(_run([str(CALLS)], tmp_path, cold=False, FAIRMEDFM_FAST_INTERPRET="never").stdout)
    assert plain["compiled"] == []
    assert _differences(plain["reports"], compiled["reports"]) == []
    # the comparison sees the reports: float32 and float64 scores, weights, a fixed threshold, the
    # opt-in metrics, bins, intersections, the one-number functions, surface distances and voxels
    assert {"float32", "weights", "threshold_metrics", "segmentation", "voxels"} <= set(plain["reports"])


SCRIPT = textwrap.dedent("""
    import json
    import threading

    import numpy as np
    from numba.core import event

    compiled = []


    class Listener(event.Listener):
        def on_start(self, ev):
            compiled.append(ev.data["dispatcher"].py_func.__name__)

        def on_end(self, ev):
            pass


    event.register("numba:compile", Listener())
    import fairmedfm_fast as fm

    rng = np.random.default_rng(0)
    errors, values = [], []

    def call(n):
        try:
            y = np.tile([0, 1], n // 2)
            values.append(fm.auc_gap(y, rng.random(n), sensitive_features=np.arange(n) % 3))
        except BaseException as error:
            errors.append(repr(error))

    threads = [threading.Thread(target=call, args=(1000,)) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    small = list(compiled)
    call({large})  # larger than INTERPRET_BELOW: compiles
    print(json.dumps({{"errors": errors, "small": small, "large": sorted(set(compiled) - set(small)),
                      "values": len(values)}}))
""")


def _kernel_names() -> set[str]:
    from fairmedfm_fast.kernels import rank_sums, ranking, sorting, sweeps

    return {name for module in (rank_sums, ranking, sorting, sweeps) for name in vars(module)
            if hasattr(getattr(module, name), "py_func")}


def test_threads_share_the_plain_copy_and_a_large_call_compiles(tmp_path):
    script = tmp_path / "threads.py"
    script.write_text(SCRIPT.format(large=_plain.INTERPRET_BELOW + 2))
    out = json.loads(_run([str(script)], tmp_path).stdout)
    assert out["errors"] == [] and out["values"] == 7
    assert out["small"] == []
    assert set(out["large"]) & _kernel_names()


def test_never_compiles_as_before(tmp_path):
    script = tmp_path / "never.py"
    script.write_text(SCRIPT.format(large=10))
    out = json.loads(_run([str(script)], tmp_path, FAIRMEDFM_FAST_INTERPRET="never").stdout)
    assert set(out["small"]) & _kernel_names()


def test_a_failing_plain_copy_restores_its_arrays_and_the_kernel_runs(monkeypatch):
    monkeypatch.setitem(_plain.interpreting, "seconds", 0.0)
    scores = np.array([0.2, 0.9, 0.6])
    labels = np.array([0, 1, 1], np.uint8)
    out = np.full(3, -1.0)
    expected = np.empty(3)
    calibration.log_loss_into(scores, labels, expected)

    def broken(scores, labels, out):
        out[:] = 7.0
        raise ZeroDivisionError("plain Python differs here")

    _plain._run_interpreted(calibration.log_loss_into, broken, scores, labels, out)
    assert np.array_equal(out, expected)
    assert _plain.interpreting["seconds"] >= _plain.INTERPRET_SECONDS  # compiles from then on


def test_the_plain_copy_is_the_same_source_with_plain_functions():
    from fairmedfm_fast.kernels import sweeps

    plain = _plain.interpreted(sweeps.ranked_sums.py_func)
    assert plain is not sweeps.ranked_sums.py_func and plain.__code__.co_filename == sweeps.__file__
    assert type(plain).__name__ == "function"
    module = sys.modules[plain.__module__]
    assert module.__name__.endswith("._interpreted.sweeps") and module.tie_end.__class__.__name__ == "function"
    assert _plain.interpreted(test_the_plain_copy_is_the_same_source_with_plain_functions) is None


@pytest.mark.parametrize("value", ["never", " Never "])
def test_the_switch_is_read_at_import(tmp_path, value):
    done = _run(["-c", "from fairmedfm_fast.kernels import _plain; print(_plain.interpreting['enabled'])"],
                tmp_path, FAIRMEDFM_FAST_INTERPRET=value)
    assert done.stdout.strip() == "False"
