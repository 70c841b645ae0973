"""How much of a Dask worker's memory :func:`fairmedfm_fast.dask.evaluate` takes, and the number of
score ranges that keeps it under the worker's memory limit.

A worker holding ``N / W`` of the ``N`` rows (``W`` workers, ``T`` threads each) needs at its peak

    held   = N / W * max(c, w)          the survey's columns (c bytes a row), then the records (w)
    ranges = T * (N / R) * (2 * w + k)  each running range task: its pieces and their concatenation
                                        (w each), then its kernel arrays (k bytes a row)

plus what the process itself takes (Python, NumPy, pandas, the kernels: :data:`PROCESS_BYTES`) and what
reading one Parquet partition takes. ``c``: the score (4 or 8 bytes), the label (1) and one code per
attribute (1 byte below 127 groups); ``w``: 8 bytes for float32 scores, 12 or 16 for float64; ``k``:
the score, the label and one code per grouping. Only ``ranges`` depends on the number of ranges ``R``:
:func:`ranges_for_memory` picks the smallest ``R`` (at least the partitions) that keeps the peak
under :data:`BUDGET` of the memory limit, where Dask starts to spill. When ``held`` alone does not fit,
no ``R`` helps: where the files' metadata tells the number of rows, the call then reads the files in
several passes (:func:`passes_for_memory`), each packing and sorting the rows of a share of the score
ranges, so that a worker holds ``N / W * w / passes``; else it warns that Dask will spill (to the
workers' disk), and carries on.
"""
from __future__ import annotations

import math
import sys
import warnings
from dataclasses import dataclass
from typing import Any

#: Share of a worker's memory limit the call plans to use: below distributed's default ``target`` (0.6),
#: the managed memory at which a worker starts spilling to disk.
BUDGET = 0.5
#: What a worker process takes before it holds any data (Python, NumPy, pandas, pyarrow, numba and the
#: kernels loaded): about 300 MB measured on ``LocalCluster`` workers.
PROCESS_BYTES = 320 * 2**20


@dataclass(frozen=True)
class RowBytes:
    """Bytes a row takes at each stage (see the module's docstring)."""

    columns: int  # c: the survey's columns, kept until the records are packed
    record: int  # w: a packed record
    kernel: int  # k: a sorted range's kernel arrays

    def peak(self, rows: int, workers: int, threads: int, ranges: int) -> float:
        """Bytes a worker takes at its peak (beyond the process itself), as in the module's docstring."""
        held = rows / workers * max(self.columns, self.record)
        return held + threads * (rows / max(ranges, 1)) * (2 * self.record + self.kernel)


def row_bytes(score_bytes: int, record_bytes: int, code_bytes: int, n_attributes: int, n_groupings: int) -> RowBytes:
    return RowBytes(columns=score_bytes + 1 + code_bytes * n_attributes, record=record_bytes,
                    kernel=score_bytes + 1 + code_bytes * n_groupings)


def workers_memory(client: Any) -> tuple[int, int, int] | None:
    """(workers, threads per worker, smallest memory limit in bytes) of a distributed cluster; None
    where there is no client, no worker, or a worker without a memory limit."""
    if client is None:
        return None
    try:
        workers = client.scheduler_info().get("workers", {})
    except Exception:  # a client that cannot answer: plan without a limit
        return None
    limits = [info.get("memory_limit") for info in workers.values()]
    if not workers or not all(limits):
        return None
    threads = max(int(info.get("nthreads", 1)) for info in workers.values())
    return len(workers), threads, int(min(limits))


def ranges_for_memory(rows: int, sizes: RowBytes, cluster: tuple[int, int, int] | None, at_least: int,
                      at_most: int) -> int:
    """The number of score ranges: ``at_least`` (the partitions), more where a range's task would take
    the worker past :data:`BUDGET` of its memory limit, never more than ``at_most`` (the resolution of
    the score sketch); with a warning when the rows the workers hold do not fit at any number."""
    if cluster is None or rows == 0:
        return at_least
    workers, threads, limit = cluster
    room = BUDGET * limit - PROCESS_BYTES - sizes.peak(rows, workers, threads, ranges=math.inf)
    per_range = threads * rows * (2 * sizes.record + sizes.kernel)  # a worker's running tasks, all in one range
    needed = math.ceil(per_range / room) if room > 0 else math.inf
    if needed > at_most:
        held = sizes.peak(rows, workers, threads, ranges=math.inf)
        warnings.warn(f"fairmedfm_fast.dask: {rows:,} rows take about {held / 2**30:.1f} GiB per worker "
                      f"({workers} workers with {limit / 2**30:.1f} GiB each), more than the "
                      f"{BUDGET:.0%} of the memory limit that leaves room for sorting them; Dask will spill to "
                      "the workers' disk (slower, still exact). Add workers or memory (LocalCluster("
                      "memory_limit=...)) to keep the rows in memory", RuntimeWarning, stacklevel=5)
    return max(at_least, min(at_most, needed))


def passes_for_memory(rows: int | None, sizes: RowBytes, cluster: tuple[int, int, int] | None) -> int:
    """Passes over the files: 1 where each worker can hold its share of the rows (their columns, then
    their records) within its room (:data:`BUDGET` of the limit beyond the process), as
    :func:`ranges_for_memory` plans; else the fewest passes whose records take at most three
    quarters of that room each (the rest for sorting a range), every pass reading the files again
    and sorting its share of the score ranges. 1 where the rows or the workers' limits are unknown.
    (With half of the room, a billion rows on 2 workers of 6 GiB took 3 passes, 123 s, and peaked
    at 2.25 GiB a worker.)"""
    if cluster is None or not rows:
        return 1
    workers, _, limit = cluster
    room = BUDGET * limit - PROCESS_BYTES
    held = rows / workers * max(sizes.columns, sizes.record)
    if room <= 0 or held <= room:
        return 1
    return max(2, math.ceil(rows / workers * sizes.record / (0.75 * room)))


def release_reader_memory() -> None:
    """Hand back to the system the memory pyarrow's allocator keeps after a partition is read.

    pyarrow's default pool (mimalloc, or jemalloc) keeps freed pages for reuse: after a call on
    1e8 rows in 10 files, each of 2 workers held 0.6-0.8 GiB that no array used, beside no managed
    memory (``release_unused`` brought the processes from 0.88-1.11 GiB back to 0.29), and under
    a 3 GiB limit that pushed the workers past distributed's spill threshold (70% of the process
    memory). Called after each partition's columns are taken (and once its records are packed):
    about 2 ms, and nothing when the pool holds nothing."""
    pa = sys.modules.get("pyarrow")  # not imported for it: a partition read without Arrow left nothing
    if pa is not None:
        pa.default_memory_pool().release_unused()
