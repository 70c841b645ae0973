"""The documentation site (docs/site) stays in step with the package, the README and docs/*.md.

- The API reference lists every public name (``fairmedfm_fast.__all__`` but ``__version__``, and the
  ``__all__`` of ``fairmedfm_fast.dask`` and ``fairmedfm_fast.torch``), read from its autosummary tables.
- Every README heading starts a guide page's ``include`` (so a new section gets a page, not a heading
  in the middle of another), and every include marker is a whole line found once.
- Every ``docs/*.md`` note has its page, or is listed as a design note.
- The self-contained Python blocks of ``docs/*.md`` run (the README's run in tests/test_readme.py).
- ``sphinx-build -W`` builds the site with no warning (skipped without the ``docs`` extra, except in CI,
  which installs it).
"""
from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import fairmedfm_fast

ROOT = Path(__file__).resolve().parent.parent
SITE = ROOT / "docs" / "site"
README = (ROOT / "README.md").read_text(encoding="utf-8")
# README headings that no guide page starts with (the rest of the README is in the guide).
NOT_IN_GUIDE = {"## License"}
# docs/*.md that are design notes, not user guide: no page on the site.
DESIGN_NOTES: set[str] = set()
# Blocks of docs/*.md that need something outside a fresh interpreter, and what.
NEEDS_OUTSIDE = {"tcp://": "a Dask scheduler", "/shared/": "files on a shared drive"}
OPTIONAL = ("matplotlib", "dask", "distributed", "nibabel", "PIL", "openpyxl", "torch", "torchmetrics")
SPHINX_PACKAGES = ("sphinx", "myst_parser", "numpydoc", "sphinx_gallery", "pydata_sphinx_theme", "sphinxarg")


def _listed() -> dict[str, set[str]]:
    """Names in the autosummary tables of api/*.rst, by the module their ``currentmodule`` sets."""
    listed: dict[str, set[str]] = {}
    for page in sorted((SITE / "api").glob("*.rst")):
        module, in_table = None, False
        for line in page.read_text(encoding="utf-8").splitlines():
            if line.startswith(".. currentmodule::"):
                module = line.split("::", 1)[1].strip()
            elif line.startswith(".. autosummary::"):
                in_table = True
            elif in_table and line.startswith("   ") and not line.strip().startswith(":"):
                listed.setdefault(module, set()).add(line.strip())
            elif in_table and line.strip() and not line.startswith("   "):
                in_table = False
    return listed


def _all_of(module_file: Path) -> set[str]:
    """``__all__`` of a module, read without importing it (fairmedfm_fast.torch needs torch)."""
    for node in ast.parse(module_file.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "__all__" for t in node.targets):
            return set(ast.literal_eval(node.value))
    raise AssertionError(f"{module_file} has no __all__")


def test_the_reference_lists_every_public_name():
    listed = _listed()
    public = set(fairmedfm_fast.__all__) - {"__version__"}
    assert listed.get("fairmedfm_fast") == public, (
        f"not in docs/site/api/index.rst: {sorted(public - listed.get('fairmedfm_fast', set()))}; "
        f"listed but not public: {sorted(listed.get('fairmedfm_fast', set()) - public)}")
    for module in ("dask", "torch"):
        assert listed.get(f"fairmedfm_fast.{module}") == _all_of(ROOT / "fairmedfm_fast" / f"{module}.py"), module


def _headings(text: str) -> list[str]:
    """Markdown heading lines outside fenced code blocks."""
    headings, fenced = [], False
    for line in text.splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and re.match(r"#{1,6} ", line):
            headings.append(line)
    return headings


def _markers() -> list[tuple[str, str, str]]:
    """(page, option, marker) of every ``include`` of the README on a guide page."""
    found = []
    for page in sorted((SITE / "guide").glob("*.md")):
        for block in re.findall(r"^```\{include\} (.*?)^```", page.read_text(encoding="utf-8"), re.M | re.S):
            if block.split("\n", 1)[0].strip().endswith("README.md"):
                for option, value in re.findall(r"^:(start-after|end-before): '(.*)'$", block, re.M):
                    found.append((page.name, option, value))
    return found


def test_every_readme_heading_starts_a_guide_page():
    starts = {marker for _, option, marker in _markers() if option == "start-after"}
    missing = [heading for heading in _headings(README) if heading not in starts | NOT_IN_GUIDE]
    assert not missing, (f"README sections without a page in docs/site/guide/: {missing} (add a page that "
                         "includes the section, or name the heading in NOT_IN_GUIDE)")


def test_include_markers_are_whole_lines_found_once():
    lines = README.splitlines()
    for page, option, marker in _markers():
        assert README.count(marker) == 1 and marker in lines, (
            f"docs/site/guide/{page}: {option} {marker!r} is not one whole line of README.md")


def test_every_note_has_its_page():
    for note in sorted((ROOT / "docs").glob("*.md")):
        page = SITE / "notes" / note.name
        if note.stem in DESIGN_NOTES:
            continue
        assert page.exists() and f"../../{note.name}" in page.read_text(encoding="utf-8"), (
            f"docs/{note.name} has no page: add docs/site/notes/{note.name} that includes it (and list it "
            "in notes/index.md), or name it in DESIGN_NOTES")
    listed = (SITE / "notes" / "index.md").read_text(encoding="utf-8").split()
    for page in sorted((SITE / "notes").glob("*.md")):
        assert page.name == "index.md" or page.stem in listed, f"notes/index.md does not list {page.stem}"


def _note_blocks() -> list[tuple[str, str]]:
    blocks = []
    for note in sorted((ROOT / "docs").glob("*.md")):
        text = note.read_text(encoding="utf-8")
        for i, block in enumerate(re.findall(r"^```python\n(.*?)^```", text, flags=re.M | re.S)):
            blocks.append((f"{note.stem}-{i}", block))
    return blocks


@pytest.mark.parametrize("block", [b for _, b in _note_blocks()], ids=[name for name, _ in _note_blocks()])
def test_note_python_block_runs(block, tmp_path):
    code = [line for line in block.splitlines() if line.strip() and not line.startswith("#")]
    if not code[0].startswith(("import ", "from ")):
        pytest.skip("a fragment: it uses names that the text around it defines")
    for needle, what in NEEDS_OUTSIDE.items():
        if needle in block:
            pytest.skip(f"needs {what}")
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
                   "MPLBACKEND": "Agg"}
    done = subprocess.run([sys.executable, "-c", block], cwd=tmp_path, env=environment, capture_output=True,
                          text=True, timeout=600)
    missing = re.search(r"No module named '([\w.]+)'", done.stderr)
    if done.returncode and missing and missing.group(1).split(".")[0] in OPTIONAL:
        pytest.skip(f"needs the optional {missing.group(1)}")
    assert done.returncode == 0, f"block starting {code[0]!r} failed:\n{done.stderr[-3000:]}"


def test_the_site_builds_without_warnings(tmp_path):
    """From the root of the clone, as the README's docs command: warnings are errors."""
    for package in SPHINX_PACKAGES:
        try:
            __import__(package)
        except ImportError:
            if os.environ.get("CI"):
                raise AssertionError(f"CI installs the docs extra (.ci/run), but {package} is missing") from None
            pytest.skip(f'needs the docs extra (pip install ".[docs]"): {package} is missing')
    output = tmp_path / "html"
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
                   "MPLBACKEND": "Agg"}
    # run_stale_examples: every example runs, even when an earlier build left its output in the source tree.
    done = subprocess.run([sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html",
                           "-d", str(tmp_path / "doctrees"), "-D", "sphinx_gallery_conf.run_stale_examples=1",
                           "docs/site", str(output)], cwd=ROOT, env=environment, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, f"sphinx-build failed:\n{done.stdout[-3000:]}\n{done.stderr[-6000:]}"
    for page in ["index.html", "guide/getting-started.html", "notes/voxels.html", "api/cli.html",
                 "auto_examples/index.html", *(f"api/generated/fairmedfm_fast.{name}.html"
                                               for name in fairmedfm_fast.__all__ if name != "__version__")]:
        assert (output / page).exists(), page
    for example in sorted((SITE / "examples").glob("plot_*.py")):
        page = (output / "auto_examples" / f"{example.stem}.html").read_text(encoding="utf-8")
        assert f"sphx_glr_{example.stem}_001.png" in page, f"{example.name} drew no figure"
