"""A predictions table with three sensitive attributes for the command-line benchmarks.

Usage: python benchmarks/scripts/cli_make_data.py N FILE   (Parquet, or CSV when FILE ends in .csv)
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: the asv suite's helpers

from benchmarks._data import prediction_table  # noqa: E402

if __name__ == "__main__":
    prediction_table(int(float(sys.argv[1])), sys.argv[2])
