"""The documentation site (docs/site) stays in step with the package, its guide and docs/*.md.

- The API reference lists every public name (``fairmedfm_fast.__all__`` but ``__version__``, and the
  ``__all__`` of ``fairmedfm_fast.dask`` and ``fairmedfm_fast.torch``), read from its autosummary tables.
- Every guide page (``docs/site/guide/*.md``) holds its own text (the README is the short version of
  the guide, not its source) and is in the guide's table of contents.
- Every ``docs/*.md`` note has its page, or is listed as a design note without one.
- The Python blocks of the guide and of the notes run, as the README's do (tests/code_blocks.py).
- The README's docs command builds the site with no warning (skipped without the ``docs`` extra, except
  in CI, which installs it).
"""

from __future__ import annotations

import ast
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from code_blocks import blocks, run_block

import fairmedfm_fast

ROOT = Path(__file__).resolve().parent.parent
SITE = ROOT / "docs" / "site"
GUIDE = SITE / "guide"
README = (ROOT / "README.md").read_text(encoding="utf-8")
# docs/*.md that are design notes with no page on the site (docs/site/notes/index.md says which notes are
# design notes; those have pages too, so this is empty).
DESIGN_NOTES: set[str] = set()
SPHINX_PACKAGES = ("sphinx", "myst_parser", "numpydoc", "sphinx_gallery", "pydata_sphinx_theme", "sphinxarg")
PAGE_BLOCKS = [
    block
    for page in [SITE / "index.md", *sorted(GUIDE.glob("*.md")), *sorted((ROOT / "docs").glob("*.md"))]
    for block in blocks(page)
]


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
        f"listed but not public: {sorted(listed.get('fairmedfm_fast', set()) - public)}"
    )
    for module in ("dask", "torch"):
        assert listed.get(f"fairmedfm_fast.{module}") == _all_of(ROOT / "fairmedfm_fast" / f"{module}.py"), (
            module
        )


def test_every_guide_page_holds_its_text():
    toctree = (
        re.search(
            r"^```\{toctree\}\n(.*?)^```",
            (GUIDE / "index.md").read_text(encoding="utf-8"),
            flags=re.MULTILINE | re.DOTALL,
        )
        .group(1)
        .split()
    )
    for page in sorted(GUIDE.glob("*.md")):
        text = page.read_text(encoding="utf-8")
        assert "{include}" not in text, f"guide/{page.name} includes another file: the page holds its text"
        prose = [line for line in text.splitlines() if line.strip() and not line.startswith("#")]
        assert len(prose) >= 3, f"guide/{page.name} is (nearly) empty"
        assert page.name == "index.md" or page.stem in toctree, f"guide/index.md does not list {page.stem}"


def test_every_note_has_its_page():
    for note in sorted((ROOT / "docs").glob("*.md")):
        page = SITE / "notes" / note.name
        if note.stem in DESIGN_NOTES:
            continue
        assert page.exists() and f"../../{note.name}" in page.read_text(encoding="utf-8"), (
            f"docs/{note.name} has no page: add docs/site/notes/{note.name} that includes it (and list it "
            "in notes/index.md), or name it in DESIGN_NOTES"
        )
    listed = (SITE / "notes" / "index.md").read_text(encoding="utf-8").split()
    for page in sorted((SITE / "notes").glob("*.md")):
        assert page.name == "index.md" or page.stem in listed, f"notes/index.md does not list {page.stem}"


def test_pages_have_python_blocks():
    assert len([block for block in PAGE_BLOCKS if block.name.startswith("guide/getting-started")]) == 1
    assert len(PAGE_BLOCKS) >= 15


@pytest.mark.parametrize("block", PAGE_BLOCKS, ids=[block.name for block in PAGE_BLOCKS])
def test_page_python_block_runs(block, tmp_path):
    run_block(block, tmp_path)


def _docs_command() -> list[str]:
    """The sphinx-build command of the README's ``pip install ".[docs]" && sphinx-build ...`` line."""
    line = re.search(r'^pip install "\.\[docs\]" && (sphinx-build .*)$', README, flags=re.MULTILINE)
    assert line, "the README has no docs command"
    return shlex.split(line.group(1))


def test_the_site_builds_without_warnings(tmp_path):
    """The README's docs command from the root of the clone (into a temporary folder): warnings are errors."""
    for package in SPHINX_PACKAGES:
        try:
            __import__(package)
        except ImportError:
            if os.environ.get("CI"):
                raise AssertionError(
                    f"CI installs the docs extra (.ci/run), but {package} is missing"
                ) from None
            pytest.skip(f'needs the docs extra (pip install ".[docs]"): {package} is missing')
    output = tmp_path / "html"
    environment = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
        "MPLBACKEND": "Agg",
    }
    command = _docs_command()
    assert command[0] == "sphinx-build" and command[-2:] == ["docs/site", "docs/site/_build/html"], command
    # run_stale_examples: every example runs, even when an earlier build left its output in the source tree.
    options = ["-q", "-d", str(tmp_path / "doctrees"), "-D", "sphinx_gallery_conf.run_stale_examples=1"]
    done = subprocess.run(
        [sys.executable, "-m", "sphinx", *command[1:-2], *options, "docs/site", str(output)],
        cwd=ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, f"sphinx-build failed:\n{done.stdout[-3000:]}\n{done.stderr[-6000:]}"
    for page in [
        "index.html",
        "guide/getting-started.html",
        "notes/voxels.html",
        "api/cli.html",
        "auto_examples/index.html",
        *(
            f"api/generated/fairmedfm_fast.{name}.html"
            for name in fairmedfm_fast.__all__
            if name != "__version__"
        ),
    ]:
        assert (output / page).exists(), page
    for example in sorted((SITE / "examples").glob("plot_*.py")):
        page = (output / "auto_examples" / f"{example.stem}.html").read_text(encoding="utf-8")
        assert f"sphx_glr_{example.stem}_001.png" in page, f"{example.name} drew no figure"
