"""Prediction tables with three sensitive attributes for the CLI benchmark."""
import sys

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq


def make(n, path, seed=0):
    rng = np.random.default_rng(seed)
    label = rng.integers(0, 2, n).astype(np.int64)
    prob = np.clip(0.25 * label + 0.75 * rng.random(n), 0, 1)
    sex = pa.array(np.array(["F", "M"])[rng.integers(0, 2, n)])
    age = pa.array(np.array(["<40", "40-60", ">=60"])[rng.integers(0, 3, n)])
    race = pa.array(np.array(["white", "black", "asian", "other"])[rng.integers(0, 4, n)])
    table = pa.table({"image_id": pa.array(np.arange(n)), "label": label, "prob": prob,
                      "sex": sex, "age_group": age, "race": race})
    pq.write_table(table, path)

if __name__ == "__main__":
    make(int(sys.argv[1]), sys.argv[2])
