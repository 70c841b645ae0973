"""First calls from several threads at once in a fresh process (issue 28): a web service or a thread
pool that scores models in parallel makes its first calls this way, while pandas, the package's
modules and the compiled kernels are still being loaded by another thread.

Each run is a new interpreter (about 2-4 s with the kernels in the JIT cache, which the test
session has filled); five runs, as the race showed in four runs of five before the fix.
"""
import subprocess
import sys
import textwrap

import pytest

THREADS = 8
RUNS = 5

SCRIPT = textwrap.dedent(f"""
    import sys
    import threading
    import traceback

    import numpy as np

    import fairmedfm_fast as fm

    rng = np.random.default_rng(0)
    y = np.tile([0, 1], 20)
    p = rng.random(40)
    sex = np.array(["F", "M"])[np.arange(40) // 2 % 2]
    dice = rng.random(40)

    def classification():
        report = fm.evaluate(y, p, {{"sex": sex}})
        assert report.summary.loc["sex", "n"] == 40  # the frame imports pandas in this thread

    def segmentation():
        assert fm.evaluate_segmentation({{"sex": sex}}, dice=dice).summary.loc["sex", "n"] == 40

    def gap():
        assert 0 <= fm.auc_gap(y, p, sensitive_features=sex) <= 1

    calls = [classification, segmentation, gap] * 3
    start = threading.Barrier({THREADS})
    errors = []

    def run(k):
        start.wait()
        try:
            calls[k]()
        except BaseException as error:
            errors.append("".join(traceback.format_exception(error)))

    threads = [threading.Thread(target=run, args=(k,)) for k in range({THREADS})]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert "pandas" in sys.modules
    print(len(errors), "errors")
    print("\\n".join(errors[:2]))
""")


@pytest.mark.parametrize("run", range(RUNS))
def test_concurrent_first_calls_in_a_fresh_process(run):
    result = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.startswith("0 errors"), result.stdout[-3000:]


def test_is_pandas_waits_for_an_import_in_progress(monkeypatch):
    """A half-imported pandas in sys.modules (another thread inside its __init__) is waited for."""
    import importlib
    import types

    from fairmedfm_fast._util import lazy_pandas as _lazy_pandas

    pandas = importlib.import_module("pandas")
    half = types.ModuleType("pandas")
    half.__spec__ = importlib.machinery.ModuleSpec("pandas", None)
    half.__spec__._initializing = True
    waited = []

    def import_module(name):
        waited.append(name)
        return pandas

    monkeypatch.setitem(sys.modules, "pandas", half)
    monkeypatch.setattr(_lazy_pandas.importlib, "import_module", import_module)
    assert _lazy_pandas.is_pandas(pandas.Series([1.0]), "Series") and waited == ["pandas"]
    assert _lazy_pandas.is_na(pandas.NA)
