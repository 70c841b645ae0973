"""A fresh process that calls evaluate or a one-number function on NumPy inputs imports neither
pandas nor scipy.linalg (issue 14: the whole run in at most 1.5 s); the report's frames are made on
first access and are the frames an eager build gives."""
import pickle
import subprocess
import sys
import textwrap

import numpy as np
import pandas as pd

import fairmedfm_fast as fm
from fairmedfm_fast.report import FairnessReport, group_frame, summary_frame


def _run(code: str) -> str:
    result = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                            timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout.strip().splitlines()[-1]


def test_numpy_calls_import_neither_pandas_nor_scipy_linalg():
    out = _run("""
        import sys
        import numpy as np
        import fairmedfm_fast as fm
        rng = np.random.default_rng(0)
        y = (rng.random(300) < 0.3).astype(np.int64)
        s = rng.random(300)
        report = fm.evaluate(y, s, {"sex": rng.integers(0, 2, 300), "site": rng.choice(["a", "b"], 300)})
        gap = fm.auc_gap(list(y), list(s), sensitive_features=rng.integers(0, 3, 300))
        before = sorted(m for m in ("pandas", "scipy.linalg", "pyarrow") if m in sys.modules)
        summary = report.summary
        print(before, type(summary).__name__, list(summary.index), 0 <= gap <= 1)
    """)
    assert out == "[] DataFrame ['sex', 'site'] True"


def test_numba_blas_flag_is_what_numba_finds_and_dot_still_compiles():
    out = _run("""
        import importlib.util
        import numba
        import numpy as np
        import fairmedfm_fast as fm
        fm.bce_gap([0, 1, 0, 1], [0.1, 0.9, 0.3, 0.6], sensitive_features=[0, 0, 1, 1])
        from numba.np import arraymath
        dot = numba.njit(lambda a, b: np.dot(a, b))
        print(arraymath._HAVE_BLAS == (importlib.util.find_spec("scipy.linalg") is not None),
              dot(np.ones(3), np.arange(3.0)))
    """)
    assert out == "True 3.0"


def test_report_frames_are_made_on_first_access_and_equal_eager_frames():
    rng = np.random.default_rng(1)
    y = (rng.random(400) < 0.4).astype(np.int64)
    s = rng.random(400)
    report = fm.evaluate(y, s, {"sex": rng.choice(["F", "M"], 400), "age": rng.integers(0, 3, 400)})
    assert callable(report._summary) and callable(report._by_group)
    copy = pickle.loads(pickle.dumps(report))  # picklable before the frames exist
    summary, by_group = report.summary, report.by_group
    assert report.summary is summary and report.by_group is by_group  # made once
    pd.testing.assert_frame_equal(copy.summary, summary)
    pd.testing.assert_frame_equal(copy.by_group, by_group)
    eager = FairnessReport("cls", summary_frame({"a": {"n": 3, "n_groups": 2}}),
                           group_frame([{"attribute": "a", "group": "x", "n": 3, "skipped": None}]), {}, {}, [], {})
    assert list(eager.summary.columns) == ["n", "n_groups"]
    report.summary = summary.iloc[:1]
    assert len(report.summary) == 1
