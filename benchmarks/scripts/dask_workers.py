"""20M rows: fairmedfm_fast.dask.evaluate on LocalCluster (1 and 2 workers) vs in-memory evaluate.

python bench_dask.py make DIR          # writes 20 Parquet files of 1M rows
python bench_dask.py dask DIR WORKERS  # wall time, peak RSS per worker
python bench_dask.py memory DIR        # in-memory evaluate on the same rows, peak RSS of the process
"""
import os
import resource
import sys
import time

import numpy as np


def make(folder, files=20, rows=1_000_000):
    import pyarrow as pa
    import pyarrow.parquet as pq

    os.makedirs(folder, exist_ok=True)
    rng = np.random.default_rng(0)
    for i in range(files):
        age = rng.integers(18, 96, rows).astype(np.float64)
        age[rng.random(rows) < 0.01] = np.nan
        y = (rng.random(rows) < 0.3).astype(np.int8)
        p = np.round(np.clip(0.2 * y + 0.8 * rng.random(rows), 0, 1), 4)  # 10,001 distinct values: ties
        sex = pa.array(rng.choice(["F", "M"], rows)).dictionary_encode()
        site = rng.integers(0, 10, rows).astype(np.int16)
        table = pa.table({"y": y, "p": p, "sex": sex, "age": age, "site": site})
        pq.write_table(table, os.path.join(folder, f"part-{i:02d}.parquet"))


OPTIONS = {"label": "y", "score": "p", "sensitive": ["sex", "age", "site"], "bins": {"age": [40, 60]},
           "intersectional": True}


def peak_rss_mib():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def run_dask(folder, workers):
    import logging

    import distributed

    from fairmedfm_fast import dask as fdask

    logging.getLogger("distributed").setLevel(logging.ERROR)
    with distributed.LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None,
                                  memory_limit="8GiB") as cluster, distributed.Client(cluster) as client:
        client.run(lambda: __import__("fairmedfm_fast.kernels.ranking"))  # imports, not timed
        start = time.perf_counter()
        report = fdask.evaluate(fdask.read_parquet(folder), **OPTIONS)
        wall = time.perf_counter() - start
        peaks = client.run(peak_rss_mib)
    print(f"dask workers={workers}: {wall:.1f} s; peak RSS per worker (MiB): "
          f"{', '.join(f'{v:.0f}' for v in peaks.values())}; client peak RSS {peak_rss_mib():.0f} MiB")
    print(report.summary[["n", "n_groups", "overall-auc", "auc-gap", "eod"]].to_string())
    report.by_group.to_pickle(os.path.join(folder, f"by_group_dask{workers}.pkl"))


def run_memory(folder):
    import pandas as pd

    import fairmedfm_fast as fm

    start = time.perf_counter()
    frame = pd.read_parquet(folder)
    read = time.perf_counter() - start
    start = time.perf_counter()
    o = OPTIONS
    report = fm.evaluate(frame[o["label"]], frame[o["score"]], frame[o["sensitive"]], bins=o["bins"],
                         intersectional=o["intersectional"])
    wall = time.perf_counter() - start
    print(f"in memory: read {read:.1f} s, evaluate {wall:.1f} s; peak RSS {peak_rss_mib():.0f} MiB")
    print(report.summary[["n", "n_groups", "overall-auc", "auc-gap", "eod"]].to_string())
    report.by_group.to_pickle(os.path.join(folder, "by_group_memory.pkl"))


if __name__ == "__main__":
    command, folder = sys.argv[1], sys.argv[2]
    if command == "make":
        make(folder)
    elif command == "dask":
        run_dask(folder, int(sys.argv[3]))
    else:
        run_memory(folder)
