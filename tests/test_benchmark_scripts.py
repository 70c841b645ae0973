"""Every script under ``benchmarks/scripts/`` that needs no prepared files runs once on tiny inputs, so
that a change of an internal signature cannot leave one broken (``strata.py`` once was, unnoticed)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = ROOT / "benchmarks" / "scripts"

#: script -> tiny arguments. Scripts that read prepared files or console scripts (cli_*.py,
#: dask_workers.py, dask_lower_bound.py: a folder of Parquet files and a local cluster) are left out.
TINY = {
    "strata.py": ["3000", "2", "1"],
    "tasks_vs_separate.py": ["3e3", "2", "1"],
    "small_calls.py": ["200", "1"],
    "bootstrap_vs_fairlearn.py": ["3000", "2", "1"],
    "bootstrap_counts.py": ["3000", "3", "1"],
    "voxels_billion.py": ["memory", "4"],
    "surface_vs_medpy.py": ["24", "2", "16", "1"],
    "analytic_intervals.py": ["3000", "1", "2"],
    "accumulator_batches.py": ["speed", "500", "4", "1"],
    "gap_power.py": ["2", "300", "20"],
    "interval_coverage.py": ["20", "2", "2", "20"],
    "tie_blocks.py": ["3000", "2"],
    "compare_models_speed.py": ["2000", "3", "1", "--boot=3"],
    "compare_null.py": ["--datasets", "2", "--n-boot", "10", "--n", "200"],
    "torch_metric.py": ["--samples", "4096", "--rounds", "1"],
    "input_forms.py": ["3000", "1", "2"],
    # the installed package (or the editable one), in a process started outside the clone
    "first_calls.py": ["--only", "evaluate, 1,000 samples"],
}


def test_every_script_is_listed_or_needs_files():
    assert {path.name for path in SCRIPTS.glob("*.py")} == {
        *TINY, "cli_make_data.py", "cli_vs_fairmedfm.py", "dask_workers.py", "dask_lower_bound.py",
        "compare_revisions.py"}  # the last compares two checkouts: test_compare_revisions_tiny


@pytest.mark.parametrize("script", list(TINY))
def test_script_runs_on_tiny_inputs(script):
    if script == "surface_vs_medpy.py":
        pytest.importorskip("medpy")
        pytest.importorskip("nibabel")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    done = subprocess.run([sys.executable, str(SCRIPTS / script), *TINY[script]], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip(), "the script printed nothing"


def test_compare_revisions_tiny(tmp_path):
    """benchmarks/scripts/compare_revisions.py against this checkout itself, the auc_gap rows: two
    worker processes take turns and compute the same numbers (about 15 s: two processes start)."""
    import json

    script = SCRIPTS / "compare_revisions.py"
    done = subprocess.run([sys.executable, str(script), str(ROOT), "--preset", "tiny", "--rounds", "1", "--calls",
                           "1", "--rows", "auc_gap", "--json", str(tmp_path / "r.json")], capture_output=True,
                          text=True, timeout=600)
    assert done.returncode in (0, 1), done.stderr[-3000:]  # 1: a row 5% slower than itself, by chance
    figures = json.loads((tmp_path / "r.json").read_text())["rows"]
    assert len(figures) == 5 and all(row["agree"] and row["this"] > 0 and row["other"] > 0 for row in figures)
    assert "this/other" in done.stdout and "rows more than 5% slower" in done.stdout
