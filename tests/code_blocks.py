"""The Python blocks of the README, the user guide (docs/site/guide/*.md) and the notes (docs/*.md), run.

Each block runs in a fresh interpreter with the repository root first on the path (the source folder,
as a newcomer's clone has it), in a temporary working folder for the files it writes, and with
matplotlib's Agg backend. A block that needs an optional extra (``pip install ".[plot]"``, ...) is
skipped when that extra is not installed.

Two conventions of the pages, both visible to their readers:

- A block that cannot run on a test machine (it needs a cluster, files on a shared drive, or is a
  fragment of the user's own code) says why in its info string, after the fence's ``python``:
  ``python skip="needs a Dask cluster"`` (GitHub and MyST read only the first word). It is skipped
  with that reason.
- A ``text`` block right after a Python block (one blank line between) is what the block prints: the
  test compares it line by line (trailing spaces aside) with the block's stdout.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# Modules of the optional extras: a block failing to import one of these is skipped, not failed.
OPTIONAL = ("matplotlib", "dask", "distributed", "nibabel", "PIL", "openpyxl", "torch", "torchmetrics")
_FENCE = re.compile(r"^```python([^\n]*)\n(.*?)^```\n(?:\n```text\n(.*?)^```$)?", re.MULTILINE | re.DOTALL)


@dataclass(frozen=True)
class Block:
    """One fenced Python block of a page: its code, why it is skipped (None: it runs), what it prints."""

    name: str
    code: str
    skip: str | None
    output: str | None


def blocks(page: Path) -> list[Block]:
    """The top-level ```python blocks of ``page`` (blocks indented in a list item are fragments)."""
    prefix = "" if page.parent == ROOT else f"{page.parent.name}/"  # docs/dask.md and guide/dask.md
    found = []
    for i, (info, code, output) in enumerate(_FENCE.findall(page.read_text(encoding="utf-8"))):
        skip = re.search(r'\bskip="([^"]+)"', info)
        found.append(Block(f"{prefix}{page.stem}-{i}", code, skip.group(1) if skip else None, output or None))
    return found


def first_line(code: str) -> str:
    """The first line of a block that is not an import or a comment, to name it in a failure."""
    lines = [line for line in code.splitlines() if line.strip()]
    return next((line for line in lines if not line.startswith(("import", "from", "#"))), lines[0])


def run_block(block: Block, cwd: Path) -> None:
    """Run ``block`` in ``cwd`` as the module docstring says; fail or skip the calling test."""
    if block.skip:
        pytest.skip(block.skip)
    environment = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
        "MPLBACKEND": "Agg",
    }
    done = subprocess.run(
        [sys.executable, "-c", block.code],
        cwd=cwd,
        env=environment,
        capture_output=True,
        text=True,
        timeout=600,
    )
    missing = re.search(r"No module named '([\w.]+)'", done.stderr)
    if done.returncode and missing and missing.group(1).split(".")[0] in OPTIONAL:
        pytest.skip(f"needs the optional {missing.group(1)}")
    assert done.returncode == 0, (
        f"{block.name}, starting {first_line(block.code)!r}, failed:\n{done.stderr[-3000:]}"
    )
    if block.output is not None:
        printed = [line.rstrip() for line in done.stdout.splitlines()]
        assert printed == [line.rstrip() for line in block.output.splitlines()], (
            f"{block.name} printed\n{done.stdout}\nnot the output shown under it:\n{block.output}"
        )
