"""The public surface: names, signatures, lazy imports, packaging, and the report object's methods."""
import importlib
import inspect
import json
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import fairmedfm_fast as fm

TOP_LEVEL = ("evaluate", "FairnessReport", "auc_gap", "worst_group_auc", "accuracy_gap", "bce_gap", "ece_gap",
             "equal_opportunity_difference", "equalized_odds_score", "classification_fairness")
METRICS = ("find_threshold", "binary_cross_entropy", "expected_calibration_error", "binary_classification_report",
           "evaluate_binary", "organize_results", "classification_fairness")


@pytest.mark.parametrize("name", TOP_LEVEL)
def test_top_level_signatures_match_oracle(name):
    import fairmedfm
    from _signatures import assert_same_signature

    ours, theirs = getattr(fm, name), getattr(fairmedfm, name)
    assert callable(ours)
    if inspect.isclass(theirs):
        assert inspect.isclass(ours)
        ours, theirs = ours.__init__, theirs.__init__
    # The oracle's parameters in order with the same kinds and defaults, then only the documented
    # keyword-only extensions (threshold, sample_weight, n_boot, ...), so every call that works with
    # fairmedfm works the same way here.
    assert_same_signature(ours, theirs, name)


@pytest.mark.parametrize("name", METRICS)
def test_metrics_signatures_match_oracle(name):
    from _signatures import assert_same_signature
    from fairmedfm import metrics as oracle

    from fairmedfm_fast import metrics

    assert_same_signature(getattr(metrics, name), getattr(oracle, name), name)


def test_exports_cover_the_oracles_classification_names():
    import fairmedfm

    for name in TOP_LEVEL:
        assert name in fm.__all__ and name in fairmedfm.__all__
        assert name in dir(fm)
    assert isinstance(fm.__version__, str)
    with pytest.raises(AttributeError):
        fm.no_such_metric  # noqa: B018


def test_functions_have_numpydoc_docstrings():
    for name in TOP_LEVEL:
        doc = inspect.getdoc(getattr(fm, name)) or ""
        assert len(doc) > 40, name
    doc = inspect.getdoc(fm.auc_gap)
    assert "Parameters" in doc and "sensitive_features" in doc


def _run(code: str, cwd) -> str:
    result = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                            cwd=cwd, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    return result.stdout.strip()


def test_import_is_lazy(tmp_path):
    out = _run("""
        import sys
        import fairmedfm_fast
        heavy = sorted({m.split('.')[0] for m in sys.modules} & {'numba', 'pandas', 'pyarrow', 'polars', 'sklearn',
                                                                  'torch', 'llvmlite'})
        print(','.join(heavy) or 'none')
    """, tmp_path)
    assert out == "none", f"import fairmedfm_fast imported {out}"


def test_kernels_is_not_a_top_level_package(tmp_path):
    out = _run("""
        import importlib.util
        import fairmedfm_fast.kernels as k
        print(importlib.util.find_spec('kernels') is None, k.__name__)
    """, tmp_path)
    assert out == "True fairmedfm_fast.kernels"


def test_kernel_modules_import_only_numpy_and_numba(tmp_path):
    out = _run("""
        import sys
        from fairmedfm_fast.kernels import ranking, calibration
        print(','.join(sorted({m.split('.')[0] for m in sys.modules} & {'pandas', 'pyarrow', 'polars', 'sklearn'}))
              or 'none')
    """, tmp_path)
    assert out == "none"


# --- FairnessReport ---------------------------------------------------------------------------------

def _reports():
    import fairmedfm

    rng = np.random.default_rng(0)
    y = np.tile([0, 1], 30)
    p = rng.random(60)
    g = {"sex": np.array(["F", "M", "X"])[np.arange(60) % 3], "site": np.where(np.arange(60) < 1, "A", "B")}
    return fm.evaluate(y, p, g), fairmedfm.evaluate(y, p, g)


def test_report_methods_match_oracle(tmp_path):
    from compare import VERSION_KEYS, assert_reports

    ours, theirs = _reports()
    ours_dict, theirs_dict = ours.to_dict(), theirs.to_dict()
    # The oracle's keys in its order; ours adds "gaps" (the groups behind each gap) after them.
    assert [k for k in ours_dict if k not in VERSION_KEYS] == [k for k in theirs_dict if k not in VERSION_KEYS] + ["gaps"]
    assert_reports(ours, theirs)  # to_dict() equal but for the settings and columns recorded beside the oracle's
    text = ours.to_json(tmp_path / "sub" / "report.json")  # written and returned, as fairmedfm's
    assert isinstance(theirs.to_json(tmp_path / "theirs.json"), str) and text == ours.to_json()
    assert json.loads((tmp_path / "sub" / "report.json").read_text()) == json.loads(text)
    loaded = json.loads(text)
    # Fewer than two valid groups: the attribute's summary row is all missing (None in JSON).
    assert set(loaded["attributes"]["site"]["summary"].values()) == {None}
    assert None not in loaded["attributes"]["sex"]["summary"].values()
    assert len(ours.warnings) == len(theirs.warnings)
    assert repr(ours).splitlines()[0] == repr(theirs).splitlines()[0]
    assert repr(ours).count("warning:") == len(ours.warnings)
    html = ours._repr_html_()
    assert "<table" in html and html.count("<p><b>warning:</b>") == len(ours.warnings)


def test_report_json_has_no_nan():
    ours, _ = _reports()
    text = ours.to_json()
    assert "NaN" not in text and "Infinity" not in text


def test_lazy_attribute_access_returns_the_same_objects():
    module = importlib.import_module("fairmedfm_fast.group_metrics")
    assert fm.auc_gap is module.auc_gap


@pytest.mark.parametrize("first_use", ["evaluate", "auc_gap", "classification_fairness"])
def test_submodule_attributes_after_first_use_match_oracle(tmp_path, first_use):
    # Drop-in: code that reaches ``fm.metrics`` after using ``fm.evaluate`` works with the oracle, so it
    # must work here (and the other way round).
    code = """
        import {package} as fm
        fm.{first_use}
        print(sorted(name for name in ('metrics', 'evaluation', 'group_metrics') if hasattr(fm, name)))
    """
    theirs = _run(code.format(package="fairmedfm", first_use=first_use), tmp_path)
    ours = _run(code.format(package="fairmedfm_fast", first_use=first_use), tmp_path)
    assert "metrics" not in theirs or "'metrics'" in ours, f"oracle has {theirs}, we have {ours}"
