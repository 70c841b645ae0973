"""How many threads the package may use: ``n_jobs``, else ``$FAIRMEDFM_FAST_N_JOBS``, else all cores.

Threads serve reading and counting masks, the sort and the calibration pass of large
classification inputs (beside the other kernels), and bootstrap resamples. The kernels release the
GIL, so Python threads run them in parallel. ``FAIRMEDFM_FAST_N_JOBS=1`` keeps everything on the
calling thread.
"""
from __future__ import annotations

import os
import threading
from contextlib import contextmanager
from typing import Any

import numpy as np

#: Environment variable with the default number of threads.
N_JOBS_ENV = "FAIRMEDFM_FAST_N_JOBS"


def resolve_n_jobs(n_jobs: Any = None) -> int:
    """Number of threads: ``n_jobs``, else ``$FAIRMEDFM_FAST_N_JOBS``, else every usable core.

    Negative values count back from the number of cores (``-1`` is all of them), as in joblib.
    """
    source = "n_jobs"
    if n_jobs is None:
        share = getattr(_share, "n_jobs", None)
        if share is not None:  # this thread runs one of several calls at once (see cores_shared)
            return share
        text = os.environ.get(N_JOBS_ENV, "").strip()
        if not text:
            return _cpu_count()
        source = f"${N_JOBS_ENV}"
        try:
            n_jobs = int(text)
        except ValueError:
            raise ValueError(f"{source}={text!r} is not an integer; set it to a number of threads such as 4, "
                             "or -1 for all cores") from None
    if isinstance(n_jobs, bool) or not isinstance(n_jobs, (int, np.integer)) or n_jobs == 0:
        raise ValueError(f"{source}={n_jobs!r} must be a non-zero integer: a number of threads such as 4, or -1 "
                         "for all cores")
    n_jobs = int(n_jobs)
    return n_jobs if n_jobs > 0 else max(1, _cpu_count() + 1 + n_jobs)


def _cpu_count() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


_share = threading.local()


@contextmanager
def cores_shared(n_jobs: int):
    """Within the block, calls on this thread that are given no ``n_jobs`` use ``n_jobs`` threads.

    For calls that run side by side on a pool (``evaluate_tasks``' tasks): each takes its share of
    the cores instead of all of them, so that the threads do not outnumber the cores (which cost
    those tasks 14% of their time on 2 cores, 20 models of 1M samples).
    """
    before = getattr(_share, "n_jobs", None)
    _share.n_jobs = max(1, int(n_jobs))
    try:
        yield
    finally:
        _share.n_jobs = before


_executors: dict[int, Any] = {}
_executors_lock = threading.Lock()


def executor(workers: int):
    """A thread pool of ``workers`` threads shared by every call of the process.

    Starting and joining threads costs about 0.2 ms a call, which short calls (Dice of a few small
    volumes) notice. Tasks given to it must not wait for other tasks of the same pool.
    """
    with _executors_lock:
        pool = _executors.get(workers)
        if pool is None:
            from concurrent.futures import ThreadPoolExecutor

            pool = _executors[workers] = ThreadPoolExecutor(workers, thread_name_prefix="fairmedfm_fast")
        return pool


def on_threads(tasks: list, n_threads: int) -> list:
    """Call each of ``tasks`` (functions without arguments) on up to ``n_threads`` threads, the calling
    one among them, each thread taking the next task when done (the kernels release the GIL); returns
    their values in order, or raises the error of the first task (in order) that failed.

    Fresh threads, not the shared pool: a task may itself run threads.
    """
    values = [None] * len(tasks)
    errors: dict[int, BaseException] = {}
    taken = iter(range(len(tasks)))  # next() on one iterator is atomic under the GIL

    def work() -> None:
        for j in taken:
            try:
                values[j] = tasks[j]()
            except BaseException as error:  # re-raised below
                errors[j] = error

    threads = []
    if n_threads > 1 and len(tasks) > 1:
        threads = [threading.Thread(target=work, daemon=True) for _ in range(min(n_threads, len(tasks)) - 1)]
        for thread in threads:
            thread.start()
    work()
    for thread in threads:
        thread.join()
    if errors:
        raise errors[min(errors)]
    return values
