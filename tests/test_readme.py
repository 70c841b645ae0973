"""The README works as written: every ```python block runs on its own, and so does the first command.

Each block runs in a fresh interpreter with the repository root first on the path (the source
folder, as a newcomer's clone has it), in a temporary working folder for the files it writes, and
with matplotlib's Agg backend. A block that needs an optional extra (``pip install ".[plot]"``,
``".[dask]"``, ``".[io]"``) is skipped when that extra is not installed.
"""
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
BLOCKS = re.findall(r"^```python\n(.*?)^```", README, flags=re.MULTILINE | re.DOTALL)
# Modules of the optional extras: a block failing to import one of these is skipped, not failed.
OPTIONAL = ("matplotlib", "dask", "distributed", "nibabel", "PIL", "openpyxl", "torch", "torchmetrics")


def _run(command: list[str], cwd: Path) -> subprocess.CompletedProcess:
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
                   "MPLBACKEND": "Agg"}
    return subprocess.run(command, cwd=cwd, env=environment, capture_output=True, text=True, timeout=600)


def _first_line(block: str) -> str:
    return next(line for line in block.splitlines() if line.strip() and not line.startswith(("import", "from")))


def test_the_readme_has_python_blocks():
    assert len(BLOCKS) >= 5


@pytest.mark.parametrize("block", BLOCKS, ids=[f"block{i}" for i in range(len(BLOCKS))])
def test_python_block_runs(block, tmp_path):
    done = _run([sys.executable, "-c", block], tmp_path)
    missing = re.search(r"No module named '([\w.]+)'", done.stderr)
    if done.returncode and missing and missing.group(1).split(".")[0] in OPTIONAL:
        pytest.skip(f"needs the optional {missing.group(1)}")
    assert done.returncode == 0, f"README block starting {_first_line(block)!r} failed:\n{done.stderr[-3000:]}"
    # a block leaves in the working folder only the files it names as results (no mask files)
    assert not list(tmp_path.glob("*.npy")), "a README block left .npy files in the working folder"


def test_each_picture_shows_once():
    pictures = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", README)
    assert pictures and len(pictures) == len(set(pictures)), pictures


def test_first_command_runs_from_the_repository_root():
    """The README's first command, after its ``pip install . &&``, from the root of the clone."""
    bash = re.search(r"^```bash\n(.*?)^```", README, flags=re.MULTILINE | re.DOTALL).group(1)
    first = next(line for line in bash.splitlines() if line.strip() and not line.startswith("#"))
    install, command = first.split(" && ", 1)
    assert install == "pip install ."
    arguments = shlex.split(command)
    assert arguments[:2] == ["python", "-c"]
    done = subprocess.run([sys.executable, "-c", arguments[2]], cwd=ROOT, capture_output=True, text=True,
                          timeout=600, env={**os.environ, "PYTHONPATH": ""})
    assert done.returncode == 0, done.stderr[-3000:]
    assert "FairnessReport(cls, attributes: sex)" in done.stdout


def test_test_command_is_what_ci_runs():
    bash = re.search(r"^```bash\n(.*?)^```", README, flags=re.MULTILINE | re.DOTALL).group(1)
    command = [line for line in bash.splitlines() if line.strip() and not line.startswith("#")][1]
    assert command.endswith("&& pytest")
    ci = (ROOT / ".ci" / "run").read_text()
    assert re.search(r"^pytest -q -p no:cacheprovider$", ci, flags=re.MULTILINE)


def test_extras_install_from_a_clone():
    """``pip install "fairmedfm_fast[x]"`` needs the package index; a clone installs ``".[x]"``."""
    for page in [README, *(path.read_text() for path in (ROOT / "docs").glob("*.md"))]:
        assert not re.search(r"pip install \S*fairmedfm_fast\[", page)


def test_linked_pages_exist():
    for target in re.findall(r"\]\(((?:docs|benchmarks)/[^)#]+)", README):
        assert (ROOT / target).exists(), target
