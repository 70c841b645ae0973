"""The README works as written: every ```python block runs on its own and prints the output shown under
it (tests/code_blocks.py says how), and its commands are the ones that work from a clone.
"""

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from code_blocks import blocks, run_block

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
BLOCKS = blocks(ROOT / "README.md")
GUIDE = ROOT / "docs" / "site" / "guide"
DOCS_COMMAND = 'pip install ".[docs]" && sphinx-build -W --keep-going -b html docs/site docs/site/_build/html'


def test_the_readme_has_examples_with_their_output():
    assert len(BLOCKS) >= 4 and sum(block.output is not None for block in BLOCKS) >= 3
    assert not [block.name for block in BLOCKS if block.skip], "every README block runs"


@pytest.mark.parametrize("block", BLOCKS, ids=[block.name for block in BLOCKS])
def test_python_block_runs(block, tmp_path):
    run_block(block, tmp_path)
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
    done = subprocess.run(
        [sys.executable, "-c", arguments[2]],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "PYTHONPATH": ""},
    )
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
    pages = [ROOT / "README.md", *(ROOT / "docs").glob("*.md"), *GUIDE.glob("*.md")]
    for page in pages:
        assert not re.search(r"pip install \S*fairmedfm_fast\[", page.read_text(encoding="utf-8")), page.name


def _slug(heading: str) -> str:
    """GitHub's anchor of a heading."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def test_links_resolve():
    """Every relative link of the README names a file of the clone; every #anchor one of its headings."""
    anchors = {_slug(heading) for heading in re.findall(r"^#{1,6} (.*)$", README, flags=re.MULTILINE)}
    for target in re.findall(r"\]\(([^)\s]+)\)", README):
        if re.match(r"[a-z]+:", target):
            continue
        path, _, anchor = target.partition("#")
        if path:
            assert (ROOT / path).is_file(), target
        else:
            assert anchor in anchors, target


def test_the_readme_links_to_every_guide_page():
    linked = set(re.findall(r"\]\(docs/site/guide/([\w-]+)\.md", README))
    pages = {page.stem for page in GUIDE.glob("*.md")} - {"index"}
    assert pages <= linked, f"guide pages the README does not link to: {sorted(pages - linked)}"


def test_the_docs_command_is_in_a_bash_block():
    commands = re.findall(r"^```bash\n(.*?)^```", README, flags=re.MULTILINE | re.DOTALL)
    assert any(DOCS_COMMAND in block.splitlines() for block in commands)


def _tables(folder: Path) -> None:
    """The files the README's command lines name, with the columns they expect, 300 rows each."""
    rng = np.random.default_rng(0)
    n = 300
    label = rng.integers(0, 2, n)
    prob = np.clip(0.3 * label + 0.7 * rng.random(n), 0, 1)
    sex, age, race = rng.choice(["F", "M"], n), rng.integers(20, 90, n), rng.choice(["A", "B", "C"], n)
    pd.DataFrame({"label": label, "prob": prob, "sex": sex, "age": age, "race": race}).to_parquet(
        folder / "predictions.parquet"
    )
    pd.DataFrame({"image_id": np.arange(n), "label": label, "prob": prob}).to_csv(
        folder / "preds.csv", index=False
    )
    pd.DataFrame({"id": np.arange(n)[::-1], "sex": sex[::-1], "age": age[::-1]}).to_parquet(
        folder / "patients.parquet"
    )


def test_command_lines_run(tmp_path):
    """Each ``$ fairmedfm-fast ...`` line of the README, on tables with the columns it expects."""
    lines = re.findall(r"^\$ (fairmedfm-fast .*)$", README, flags=re.MULTILINE)
    assert lines
    _tables(tmp_path)
    environment = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
        "MPLBACKEND": "Agg",
    }
    printed = []
    for line in lines:
        arguments = shlex.split(line.split(" #")[0])[1:]
        done = subprocess.run(
            [sys.executable, "-m", "fairmedfm_fast", *arguments],
            cwd=tmp_path,
            env=environment,
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert done.returncode == 0, f"{line}: {done.stderr[-2000:]}"
        printed.append(json.loads(done.stdout))
    # the same rows, the second time joined to their attributes through --metadata (in reverse order)
    first, joined = printed[:2]
    assert set(first) == {"sex", "age", "race"} and set(joined) == {"sex", "age"}
    for attribute in ("sex", "age"):
        for column in ("overall-auc", "auc-gap", "eod"):
            assert joined[attribute][column] == pytest.approx(first[attribute][column], abs=1e-12)
        assert "ci" in joined[attribute]
    assert (tmp_path / "audit.html").exists()
