"""fairmedfm_fast.dask.evaluate beside its lower bound and beside one process, on the same Parquet files.

python benchmarks/scripts/dask_lower_bound.py DIR [ROWS] [FILES] [WORKERS]

Writes ROWS rows (default 1e7: float32 scores, int8 labels, three attributes: two dictionary-encoded
text columns and an int16 site) into FILES Parquet files (default 10) under DIR unless they are there,
then times, in one run:

- ``pd.read_parquet`` + ``fm.evaluate`` in this process (twice);
- on ``LocalCluster(WORKERS workers x 1 thread)`` (default 2): reading the same columns and counting
  the rows, ``ddf[cols].map_partitions(len).sum()`` (what any pass over the files costs at least),
  then ``fmd.evaluate`` (first and second call on the fresh cluster; the first loads the kernels
  from the compile cache, so run the script once before timing to fill it).

It prints each time, the ratios to the in-memory path and to the lower bound, the load average and
NumPy's CPU features, and checks that the two reports agree within 1e-9.
"""
import os
import sys
import time

import numpy as np

COLUMNS = ["y", "p", "sex", "race", "site"]
OPTIONS = {"label": "y", "score": "p", "sensitive": ["sex", "race", "site"], "intersectional": True}


def make(folder, rows, files):
    import pyarrow as pa
    import pyarrow.parquet as pq

    os.makedirs(folder, exist_ok=True)
    rng = np.random.default_rng(0)
    per_file = -(-rows // files)
    for i in range(files):
        n = min(per_file, rows - i * per_file)
        y = (rng.random(n) < 0.3).astype(np.int8)
        p = np.clip(0.2 * y + 0.8 * rng.random(n), 0, 1).astype(np.float32)
        table = pa.table({"y": y, "p": p,
                          "sex": pa.array(rng.choice(["F", "M"], n)).dictionary_encode(),
                          "race": pa.array(rng.choice(["A", "B", "W", "O"], n, p=[0.1, 0.2, 0.6, 0.1])).dictionary_encode(),
                          "site": rng.integers(0, 10, n).astype(np.int16)})
        pq.write_table(table, os.path.join(folder, f"part-{i:03d}.parquet"))


def timed(function):
    start = time.perf_counter()
    out = function()
    return time.perf_counter() - start, out


def cpu_features():
    try:
        from numpy._core._multiarray_umath import __cpu_features__ as features
    except ImportError:  # pragma: no cover - older NumPy
        return "?"
    return "AVX512F" if features.get("AVX512F") else ("AVX2" if features.get("AVX2") else "baseline")


def main(folder, rows, files, workers):
    import pandas as pd

    import fairmedfm_fast as fm

    if not os.path.exists(os.path.join(folder, "part-000.parquet")):
        make(folder, rows, files)
    load = [os.getloadavg()[0]]

    def in_memory():
        frame = pd.read_parquet(folder, columns=COLUMNS)
        return fm.evaluate(frame["y"], frame["p"], frame[OPTIONS["sensitive"]], intersectional=True)

    memory = [timed(in_memory) for _ in range(2)]
    expected = memory[-1][1]
    load.append(os.getloadavg()[0])

    import logging

    import distributed

    from fairmedfm_fast import dask as fmd

    logging.getLogger("distributed").setLevel(logging.ERROR)  # cluster start and stop notes
    with distributed.LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None,
                                  memory_limit="6GiB") as cluster, distributed.Client(cluster):
        ddf = fmd.read_parquet(folder, columns=COLUMNS)
        bound = [timed(lambda: int(ddf[COLUMNS].map_partitions(len).sum().compute())) for _ in range(2)]
        assert bound[0][1] == rows, bound[0][1]
        calls = [timed(lambda: fmd.evaluate(ddf, **OPTIONS)) for _ in range(2)]
    load.append(os.getloadavg()[0])
    got = calls[-1][1]
    gap = np.nanmax(np.abs(got.by_group.select_dtypes("number").to_numpy(float)
                           - expected.by_group.select_dtypes("number").to_numpy(float)))
    assert gap <= 1e-9, gap

    best_memory, best_bound = min(t for t, _ in memory), min(t for t, _ in bound)
    print(f"{rows:,} rows in {files} Parquet files, {workers} workers x 1 thread; load average "
          f"{', '.join(f'{v:.1f}' for v in load)} (before, between, after); NumPy {cpu_features()}")
    print(f"  pd.read_parquet + fm.evaluate (one process): {memory[0][0]:.2f} s, {memory[1][0]:.2f} s")
    print(f"  lower bound, ddf[cols].map_partitions(len).sum(): {bound[0][0]:.2f} s, {bound[1][0]:.2f} s")
    for name, (seconds, _) in zip(("1st", "2nd"), calls):
        print(f"  fmd.evaluate {name} call: {seconds:.2f} s = {seconds / best_memory:.1f}x in-memory, "
              f"{seconds / best_bound:.1f}x the lower bound")
    print(f"  lower bound = {best_bound / best_memory:.2f}x in-memory; reports agree within {gap:.1e}")


if __name__ == "__main__":
    main(sys.argv[1], int(float(sys.argv[2])) if len(sys.argv) > 2 else 10_000_000,
         int(sys.argv[3]) if len(sys.argv) > 3 else 10, int(sys.argv[4]) if len(sys.argv) > 4 else 2)
