"""A source checkout works as the package: ``fairmedfm_fast/`` finds the sibling ``kernels/`` folder.

Python puts the current folder first on the path for ``python -c``, ``python -m pytest`` and
scripts run from the repository root, so there the source folder is imported rather than an
installed copy; it must then provide ``fairmedfm_fast.kernels`` itself.
"""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _python(code: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], cwd=cwd, capture_output=True, text=True, timeout=600,
                          env={**os.environ, "PYTHONPATH": ""})


def test_source_folder_imports_its_kernels():
    code = """
import json, sys
import numpy as np
import fairmedfm_fast as fm
numba_at_import = "numba" in sys.modules
from fairmedfm_fast.kernels import ranking
rng = np.random.default_rng(0)
y = rng.integers(0, 2, 300)
auc = fm.auc_gap(y, rng.random(300), sensitive_features=rng.choice(["a", "b"], 300))
print(json.dumps({"package": fm.__file__, "kernels": ranking.__file__, "numba_at_import": numba_at_import,
                  "version": fm.__version__, "auc_gap": auc}))
"""
    done = _python(code)
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout.splitlines()[-1])
    assert Path(seen["package"]) == ROOT / "fairmedfm_fast" / "__init__.py"
    assert Path(seen["kernels"]) == ROOT / "kernels" / "ranking.py"
    assert not seen["numba_at_import"]
    assert seen["version"] != "0+unknown" and 0 <= seen["auc_gap"] <= 1


def test_installed_layout_is_left_alone(tmp_path):
    """With ``kernels/`` inside the package (an installed wheel), nothing is registered by hand."""
    import shutil

    package = tmp_path / "fairmedfm_fast"
    shutil.copytree(ROOT / "fairmedfm_fast", package, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "kernels", package / "kernels", ignore=shutil.ignore_patterns("__pycache__"))
    done = _python("import fairmedfm_fast.kernels as k, fairmedfm_fast as fm; print(k.__file__); "
                   "print(fm.__spec__.submodule_search_locations)", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert Path(done.stdout.splitlines()[0]) == package / "kernels" / "__init__.py"


def test_python_m_pytest_collects_what_pytest_collects():
    pytest_script = Path(sys.executable).with_name("pytest")
    if not pytest_script.exists():
        pytest.skip("no pytest console script beside this Python")
    options = ["--collect-only", "-q", "-p", "no:cacheprovider", "tests/test_api_surface.py", "tests/test_checkout.py"]
    environment = {**os.environ, "PYTHONPATH": ""}

    def collected(command):
        done = subprocess.run(command + options, cwd=ROOT, capture_output=True, text=True, timeout=600,
                              env=environment)
        assert done.returncode == 0, done.stdout + done.stderr
        return sorted(line for line in done.stdout.splitlines() if "::" in line)

    by_module = collected([sys.executable, "-m", "pytest"])
    assert by_module and by_module == collected([str(pytest_script)])


def test_version_is_the_module_constant():
    """One version: ``fairmedfm_fast/_version.py``, which pyproject.toml reads and the report records."""
    import re

    import fairmedfm_fast as fm
    from fairmedfm_fast import _version

    assert fm.__version__ == _version.__version__
    assert re.fullmatch(r"\d+\.\d+\.\d+\S*", fm.__version__)
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert 'dynamic = ["version"]' in pyproject
    assert 'version = { attr = "fairmedfm_fast._version.__version__" }' in pyproject
