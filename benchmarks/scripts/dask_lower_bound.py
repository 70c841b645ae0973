"""fairmedfm_fast.dask.evaluate beside its lower bound and beside one process, on the same Parquet files.

python benchmarks/scripts/dask_lower_bound.py DIR [ROWS] [FILES] [WORKERS] [--frames] [--float64] [--sync]
    [--memory-limit=6GiB] [--no-memory]

Writes ROWS rows (default 1e7: float32 scores, int8 labels, three attributes: two dictionary-encoded
text columns and an int16 site) into FILES Parquet files (default 10) under DIR unless they are there,
then times, in one run:

- ``pd.read_parquet`` + ``fm.evaluate`` in this process (twice);
- on ``LocalCluster(WORKERS workers x 1 thread)`` (default 2): reading the same columns and counting
  the rows, ``ddf[cols].map_partitions(rows_read, call).sum()`` (what any pass over the files costs at
  least; ``call`` numbers the runs, so that the second cannot pick up the first's result while the
  scheduler still holds it under the same key: it once took 0.02 s for 1e8 rows),
  then ``fmd.evaluate`` (first and second call on the fresh cluster; the first loads the kernels
  from the compile cache, so run the script once before timing to fill it); with ``--frames`` also
  a third call by the former sort of pandas frames (``set_index``), for comparison.

Beside each call, the bytes the workers moved, from Dask's own counters on each worker: what they
sent each other and the client (``Worker.transfer_outgoing_bytes_total``), what a p2p shuffle sent
and wrote, and what was spilled to disk (``digests_total`` entries in bytes). ``--float64`` writes
float64 scores (two-word records) into DIR instead of float32. ``--sync`` also runs ``fmd.evaluate``
twice on Dask's synchronous scheduler (every task in this process) and prints its CPU seconds beside
those of the in-memory path: the work of the Dask path without the cluster, steadier than wall
times on a shared machine. ``--memory-limit`` sets each worker's memory limit (default 6GiB; ``auto``:
Dask's default, the machine's memory shared among the workers); ``--no-memory`` skips the in-memory
path (for data that does not fit in one process: the reports are then not compared).

It prints each time, the ratios to the in-memory path and to the lower bound, the load average and
NumPy's CPU features, and checks that the two reports agree within 1e-9.
"""
import math
import os
import sys
import time

import numpy as np

COLUMNS = ["y", "p", "sex", "race", "site"]
OPTIONS = {"label": "y", "score": "p", "sensitive": ["sex", "race", "site"], "intersectional": True}


def make(folder, rows, files, score_type=np.float32):
    import pyarrow as pa
    import pyarrow.parquet as pq

    os.makedirs(folder, exist_ok=True)
    rng = np.random.default_rng(0)
    per_file = -(-rows // files)
    for i in range(files):
        n = min(per_file, rows - i * per_file)
        y = (rng.random(n) < 0.3).astype(np.int8)
        p = np.clip(0.2 * y + 0.8 * rng.random(n), 0, 1).astype(score_type)
        table = pa.table({"y": y, "p": p,
                          "sex": pa.array(rng.choice(["F", "M"], n)).dictionary_encode(),
                          "race": pa.array(rng.choice(["A", "B", "W", "O"], n, p=[0.1, 0.2, 0.6, 0.1])).dictionary_encode(),
                          "site": rng.integers(0, 10, n).astype(np.int16)})
        pq.write_table(table, os.path.join(folder, f"part-{i:03d}.parquet"))


def rows_read(frame, call):
    """The rows of a partition read (``call`` only tells the runs' keys apart)."""
    return len(frame)


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


def moved(client):
    """Bytes the workers have moved so far, summed over workers, from their own counters: sent to
    other workers or the client, and per ``digests_total`` activity measured in bytes (p2p shuffle
    sends and disk writes, spills: "disk-write")."""

    def counters(dask_worker):
        out = {"sent": dask_worker.transfer_outgoing_bytes_total}
        for key, value in dask_worker.digests_total.items():
            # reads from the workers' own memory ("memory-read") move nothing
            if isinstance(key, tuple) and key[-1] == "bytes" and key[-2] != "memory-read":
                name = "/".join(str(part) for part in (key[0], key[-2]) if part)
                out[name] = out.get(name, 0) + value
        return out

    total = {}
    for numbers in client.run(counters).values():
        for name, value in numbers.items():
            total[name] = total.get(name, 0) + value
    return total


def difference(after, before):
    return {name: after[name] - before.get(name, 0) for name in after if after[name] - before.get(name, 0)}


class Peak:
    """The largest process memory of any worker while a block runs (polled every 0.2 s)."""

    def __init__(self, client):
        self.client, self.peak = client, 0

    def __enter__(self):
        import threading

        self.stop = threading.Event()

        def poll():
            while not self.stop.is_set():
                try:
                    sizes = self.client.run(lambda dask_worker: dask_worker.monitor.get_process_memory())
                    self.peak = max(self.peak, *sizes.values())
                except Exception:  # a worker restarting: the next poll
                    pass
                self.stop.wait(0.2)

        self.thread = threading.Thread(target=poll, daemon=True)
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join()


def main(folder, rows, files, workers, frames=False, score_type=np.float32, sync=False, memory_limit="6GiB",
         with_memory=True):
    import pandas as pd

    import fairmedfm_fast as fm

    if not os.path.exists(os.path.join(folder, "part-000.parquet")):
        make(folder, rows, files, score_type)
    load = [os.getloadavg()[0]]

    def in_memory():
        frame = pd.read_parquet(folder, columns=COLUMNS)
        return fm.evaluate(frame["y"], frame["p"], frame[OPTIONS["sensitive"]], intersectional=True)

    memory, memory_cpu = [], math.inf
    for _ in range(2 if with_memory else 0):
        cpu = time.process_time()
        memory.append(timed(in_memory))
        memory_cpu = min(memory_cpu, time.process_time() - cpu)
    expected = memory[-1][1] if memory else None
    load.append(os.getloadavg()[0])
    if sync:  # every task in this process: the CPU seconds of the Dask path's work
        import dask

        import fairmedfm_fast.dask as fmd

        with dask.config.set(scheduler="sync"):
            ddf = fmd.read_parquet(folder, columns=COLUMNS)
            seconds = []
            for _ in range(2):
                cpu = time.process_time()
                fmd.evaluate(ddf, **OPTIONS)
                seconds.append(time.process_time() - cpu)
        print(f"  synchronous scheduler, CPU seconds: {seconds[0]:.2f}, {seconds[1]:.2f} = "
              f"{seconds[1] / memory_cpu:.2f}x the in-memory path's best {memory_cpu:.2f} s")

    import logging

    import distributed

    import fairmedfm_fast.dask as fmd  # the public path: other revisions have it too

    logging.getLogger("distributed").setLevel(logging.ERROR)  # cluster start and stop notes
    with distributed.LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None,
                                  memory_limit=memory_limit) as cluster, distributed.Client(cluster) as client:
        ddf = fmd.read_parquet(folder, columns=COLUMNS)
        bound = [timed(lambda call=call: int(ddf[COLUMNS].map_partitions(rows_read, call).sum().compute()))
                 for call in range(2)]
        assert bound[0][1] == rows, bound[0][1]
        calls, traffic, peaks = [], [], []
        for _ in range(2):
            before = moved(client)
            with Peak(client) as peak:
                calls.append(timed(lambda: fmd.evaluate(ddf, **OPTIONS)))
            traffic.append(difference(moved(client), before))
            peaks.append(peak.peak)
        if frames:  # the former sort: pandas frames through set_index
            from fairmedfm_fast._backends import dask as backend

            layout, backend._layout = backend._layout, lambda *arguments: None
            try:
                before = moved(client)
                calls.append(timed(lambda: fmd.evaluate(ddf, **OPTIONS)))
                traffic.append(difference(moved(client), before))
            finally:
                backend._layout = layout
    load.append(os.getloadavg()[0])
    gap = 0.0
    for _, got in calls if expected is not None else ():
        gap = max(gap, np.nanmax(np.abs(got.by_group.select_dtypes("number").to_numpy(float)
                                        - expected.by_group.select_dtypes("number").to_numpy(float))))
    assert gap <= 1e-9, gap

    best_memory, best_bound = min((t for t, _ in memory), default=math.nan), min(t for t, _ in bound)
    print(f"{rows:,} rows ({np.dtype(score_type).name} scores) in {files} Parquet files, {workers} workers x 1 thread "
          f"(memory_limit={memory_limit}); load average "
          f"{', '.join(f'{v:.1f}' for v in load)} (before, between, after); NumPy {cpu_features()}")
    if memory:
        print(f"  pd.read_parquet + fm.evaluate (one process): {memory[0][0]:.2f} s, {memory[1][0]:.2f} s")
    print(f"  lower bound, ddf[cols].map_partitions(rows_read, call).sum(): {bound[0][0]:.2f} s, {bound[1][0]:.2f} s")
    for name, (seconds, _), bytes_moved, peak in zip(("1st call", "2nd call", "frames (former sort)"), calls, traffic,
                                                      [*peaks, math.nan]):
        shown = ", ".join(f"{key} {value / rows:.2f}" for key, value in sorted(bytes_moved.items())) or "nothing"
        print(f"  fmd.evaluate {name}: {seconds:.2f} s = {seconds / best_memory:.2f}x in-memory, "
              f"{seconds / best_bound:.1f}x the lower bound; bytes per row moved: {shown}; peak worker memory "
              f"{peak / 2**30:.2f} GiB")
    print(f"  lower bound = {best_bound / best_memory:.2f}x in-memory; reports agree within {gap:.1e}")


if __name__ == "__main__":
    flags = {argument for argument in sys.argv[1:] if argument.startswith("--")}
    arguments = [argument for argument in sys.argv[1:] if not argument.startswith("--")]
    main(arguments[0], int(float(arguments[1])) if len(arguments) > 1 else 10_000_000,
         int(arguments[2]) if len(arguments) > 2 else 10, int(arguments[3]) if len(arguments) > 3 else 2,
         frames="--frames" in flags, score_type=np.float64 if "--float64" in flags else np.float32,
         sync="--sync" in flags, with_memory="--no-memory" not in flags,
         memory_limit=next((flag.split("=", 1)[1] for flag in flags if flag.startswith("--memory-limit=")), "6GiB"))
