"""Cold start: ``import fairmedfm_fast`` and the first call, each in a fresh interpreter (``timeraw_``).

The first call runs once with an empty Numba cache (a small call: the kernels' plain-Python copies
answer, see kernels/_plain.py; with ``FAIRMEDFM_FAST_INTERPRET=never`` it would compile) and once
with a cache filled by an earlier process (what every run after the first one sees).
"""
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap

from ._common import REGISTRY

FIRST_CALLS = {
    "auc_gap": "fm.auc_gap(y, s, sensitive_features=attributes['site'])",
    "evaluate": "fm.evaluate(y, s, attributes)",
}


def first_call_script(function: str, cache_dir: str, fresh: bool):
    """(statement, setup) for a first call of ``function`` in a new process with its Numba cache in
    ``cache_dir`` (a new empty folder inside it when ``fresh``). The setup imports fairmedfm_fast and makes
    1,000 samples with three attributes; only the statement is timed."""
    cache = f"tempfile.mkdtemp(dir={cache_dir!r})" if fresh else repr(cache_dir)
    setup = f"""
        import os, tempfile
        os.environ["NUMBA_CACHE_DIR"] = {cache}
        os.environ.pop("FAIRMEDFM_FAST_INTERPRET", None)  # the default first call
        import numpy as np
        import fairmedfm_fast as fm
        rng = np.random.default_rng(0)
        y = (rng.random(1000) < 0.3).astype(np.uint8)
        s = rng.random(1000)
        attributes = {{"site": rng.choice(["a", "b", "c"], 1000), "sex": rng.choice(["F", "M"], 1000),
                       "age": rng.choice(["<40", "40-60", ">=60"], 1000)}}
    """
    return FIRST_CALLS[function], textwrap.dedent(setup)


def run_script(statement: str, setup: str) -> None:
    """Run a (statement, setup) pair in a new interpreter, as asv does; raise if it fails."""
    subprocess.run([sys.executable, "-c", setup + "\n" + statement], check=True, capture_output=True)


class Import:
    """``import fairmedfm_fast`` (numba should not be imported yet) beside ``import fairmedfm``."""

    rounds = 1
    repeat = (3, 10, 20.0)

    def timeraw_import_fairmedfm_fast(self):
        return "import fairmedfm_fast"

    def timeraw_import_fairmedfm(self):
        return "import fairmedfm"


class FirstCall:
    """The first ``auc_gap`` or ``evaluate`` of a process, with an empty or a filled JIT cache."""

    params = (list(FIRST_CALLS), ["empty", "filled"])
    param_names = ["function", "jit_cache"]
    rounds = 1
    repeat = (1, 3, 120.0)
    timeout = 900

    def setup(self, function, jit_cache):
        REGISTRY[function].function("fast")  # NotImplementedError (skip) when missing
        self.folder = tempfile.mkdtemp(prefix="fairmedfm_fast_numba_")
        if jit_cache == "filled":
            self.cache = os.path.join(self.folder, "filled")
            run_script(*first_call_script(function, self.cache, fresh=False))

    def teardown(self, function, jit_cache):
        shutil.rmtree(self.folder, ignore_errors=True)

    def timeraw_first_call(self, function, jit_cache):
        if jit_cache == "filled":
            return first_call_script(function, self.cache, fresh=False)
        return first_call_script(function, self.folder, fresh=True)
