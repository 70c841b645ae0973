"""Every benchmark body runs once on tiny inputs, so that the asv suite and compare.py cannot rot.

The asv classes are found the way asv finds them (``time_``, ``peakmem_``, ``track_``, ``timeraw_``
methods) and run without asv: ``setup``, the body, ``teardown``. Inputs are capped through
``_data.LIMITS``. Each body runs with every parameter at its first value and then with one parameter
changed at a time, which covers every value (both implementations included) without the full product.
A setup that raises NotImplementedError (a function fairmedfm_fast does not have yet) is a skip, as in
asv. The ``track_`` agreement benchmarks must report at most 1e-9.
"""
from __future__ import annotations

import importlib
import importlib.util
import inspect
import os
import shutil
import sys
import warnings
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SUITE = ROOT / "benchmarks" / "benchmarks"
PACKAGE = "fairmedfm_fast_asv_suite"  # not "benchmarks", which could clash with other folders on sys.path
PREFIXES = ("time_", "peakmem_", "mem_", "track_", "timeraw_")


def _load(name: str, path: Path, package_dir: Path | None = None):
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(
        name, path, submodule_search_locations=[str(package_dir)] if package_dir else None)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


_load(PACKAGE, SUITE / "__init__.py", SUITE)
MODULES = [importlib.import_module(f"{PACKAGE}.{path.stem}") for path in sorted(SUITE.glob("[!_]*.py"))]
_data = importlib.import_module(f"{PACKAGE}._data")


def _parameter_lists(cls) -> list[list]:
    params = getattr(cls, "params", [])
    if not params:
        return []
    if all(isinstance(p, (list, tuple)) for p in params):  # asv: a list of lists is several parameters
        return [list(p) for p in params]
    return [list(params)]


def _combinations(lists: list[list]) -> list[tuple]:
    """All first values, then each parameter through its other values with the rest at their first."""
    if not lists:
        return [()]
    first = tuple(values[0] for values in lists)
    combos = [first]
    for i, values in enumerate(lists):
        for value in values[1:]:
            combos.append(first[:i] + (value,) + first[i + 1:])
    return combos


def _cases():
    for module in MODULES:
        for class_name, cls in vars(module).items():
            if not inspect.isclass(cls) or cls.__module__ != module.__name__:
                continue
            methods = sorted(m for m in dir(cls) if m.startswith(PREFIXES))
            for method in methods:
                for combo in _combinations(_parameter_lists(cls)):
                    name = f"{module.__name__.rsplit('.', 1)[1]}.{class_name}.{method}"
                    yield pytest.param(cls, method, combo, id="-".join([name, *map(str, combo)]))


@pytest.fixture(autouse=True)
def tiny_inputs(monkeypatch, tmp_path_factory):
    monkeypatch.setitem(_data.LIMITS, "n_samples", 400)
    monkeypatch.setitem(_data.LIMITS, "edge", 12)
    monkeypatch.setenv("FAIRMEDFM_FAST_BENCH_CACHE", str(tmp_path_factory.getbasetemp() / "bench-files"))


def _run_timeraw(result, monkeypatch) -> None:
    """Run a timeraw (statement, setup) pair in this process (a new one would compile the kernels again)."""
    statement, setup = result if isinstance(result, tuple) else (result, "")
    if "NUMBA_CACHE_DIR" in os.environ:  # the scripts set it; give it back afterwards
        monkeypatch.setenv("NUMBA_CACHE_DIR", os.environ["NUMBA_CACHE_DIR"])
    else:
        monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)
    namespace: dict = {}
    exec(compile(setup, "<timeraw setup>", "exec"), namespace)  # noqa: S102 - our own benchmark code
    exec(compile(statement, "<timeraw statement>", "exec"), namespace)  # noqa: S102


@pytest.mark.parametrize(("cls", "method", "params"), list(_cases()))
def test_benchmark_body_runs(cls, method, params, monkeypatch):
    coldstart = sys.modules[f"{PACKAGE}.coldstart"]
    # FirstCall's setup fills a JIT cache in a new process; here the kernels are compiled already.
    monkeypatch.setattr(coldstart, "run_script", lambda statement, setup: _run_timeraw((statement, setup),
                                                                                        monkeypatch))
    instance = cls()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # skipped tiny groups warn, as they should
        try:
            if hasattr(instance, "setup"):
                instance.setup(*params)
        except NotImplementedError as error:
            pytest.skip(f"skipped in setup, as asv would: {error}")
        try:
            result = getattr(instance, method)(*params)
            if method.startswith("timeraw_"):
                _run_timeraw(result, monkeypatch)
            if method.startswith("track_"):
                assert result <= 1e-9, f"{params}: fairmedfm_fast differs from fairmedfm 0.4.2 by {result}"
        finally:
            if hasattr(instance, "teardown"):
                instance.teardown(*params)


def test_every_family_has_benchmarks():
    names = {module.__name__.rsplit(".", 1)[1] for module in MODULES}
    assert {"ranking", "calibration", "evaluate", "segmentation", "coldstart", "agreement"} <= names
    assert len(list(_cases())) > 50


def test_registry_names_exist_in_the_oracle():
    registry = importlib.import_module(f"{PACKAGE}._registry")
    for metric in registry.REGISTRY.values():
        assert callable(metric.function("reference")), metric.name


def test_baselines_agree_with_the_oracle():
    baselines = importlib.import_module(f"{PACKAGE}._baselines")
    registry = importlib.import_module(f"{PACKAGE}._registry")
    case = _data.classification(3_000, 2, 3, seed=5)
    expected = registry.REGISTRY["auc_gap"].bind("reference", case)()
    assert baselines.sklearn_auc_gap(case.y_true, case.y_score, case.intersection_codes()) == pytest.approx(
        expected, abs=1e-12)
    pytest.importorskip("fairlearn")
    assert baselines.fairlearn_auc_gap(case.y_true, case.y_score, case.sensitive()) == pytest.approx(
        expected, abs=1e-12)


def test_compare_script_tiny(tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(_data.LIMITS, "n_samples", None)  # the "tiny" preset has its own sizes
    monkeypatch.setitem(_data.LIMITS, "edge", None)
    compare = _load("fairmedfm_fast_compare", ROOT / "benchmarks" / "compare.py")
    chart = importlib.util.find_spec("matplotlib") is not None
    readme = tmp_path / "README.md"
    readme.write_text(f"# x\n\n## Performance\n\n{compare.BEGIN}\nold\n{compare.END}\n\n## Next\n")
    argv = ["--preset", "tiny", "--only", "classification", "engine", "segmentation", "--markdown", str(tmp_path / "t.md"),
            "--chart", str(tmp_path / "t.png"), "--json", str(tmp_path / "t.json"), "--readme", str(readme)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        status = compare.main(argv + ([] if chart else ["--no-chart"]))
    table = (tmp_path / "t.md").read_text()
    assert status == 0, capsys.readouterr().err
    assert "| `auc_gap`, 300 samples, 1 attribute (2 groups), per call |" in table
    assert "| `evaluate`, 6,000 samples, 3 attributes (5, 2, 4 groups) |" in table
    assert "Machine:" in table
    assert readme.read_text() == f"# x\n\n## Performance\n\n{compare.BEGIN}\n{table.rstrip()}\n{compare.END}\n\n## Next\n"
    assert (tmp_path / "t.png").exists() == chart


def test_compare_cold_start_import(tmp_path):
    compare = _load("fairmedfm_fast_compare", ROOT / "benchmarks" / "compare.py")
    child = compare._child("import fairmedfm_fast")
    assert child["import"] > 0
    assert isinstance(child["numba"], bool)


@pytest.mark.skipif(shutil.which("fairmedfm-fast") is None and not Path(sys.executable).with_name("fairmedfm-fast").exists(),
                    reason="console script not installed")
def test_compare_command_line_tiny(tmp_path, capsys):
    compare = _load("fairmedfm_fast_compare", ROOT / "benchmarks" / "compare.py")
    status = compare.main(["--preset", "tiny", "--only", "command-line", "--no-chart", "--markdown",
                           str(tmp_path / "t.md")])
    table = (tmp_path / "t.md").read_text()
    assert status == 0, capsys.readouterr().err  # fairmedfm-fast and fairmedfm agree on every table
    for case in ("3,000-row Parquet file", "6,000-row Parquet file", "300-row CSV file"):
        row = next(line for line in table.splitlines() if case in line)
        assert " ms |" in row or " s |" in row
    assert "first run with an empty JIT cache" in table and "pyarrow reads the same columns" in table

