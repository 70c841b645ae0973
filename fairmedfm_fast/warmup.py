"""``fairmedfm-fast warmup``: compile the kernel signatures the API and the command line reach.

Numba compiles a kernel for each combination of argument types the first time it meets it, and
caches the machine code on disk (see ``kernels/_caches.py`` for where). An installed wheel ships
these compiled (``fairmedfm_fast/_build.py``); where that cache does not apply (another CPU or
numba than the build's, a wheel built with ``FAIRMEDFM_FAST_SKIP_COMPILE=1``), or in a source
checkout, ``fairmedfm-fast warmup`` compiles them once, for example at image build time::

    RUN pip install . && fairmedfm-fast warmup

It compiles the one list of signatures, ``kernels/_signatures.py`` (the build step's list too), in
parallel processes (processes that compile the same kernel take turns to write its cache index),
and reports how many were compiled or loaded and where the cache is.

The list is recorded, not written: ``python -m fairmedfm_fast.warmup --record`` runs every workload
of ``_workloads.py`` (the public API along every path that reaches a kernel, at every size where
the path changes) in fresh processes that compile into one empty cache, and writes the argument
types the kernels met. ``python -m fairmedfm_fast.warmup --check`` runs the same workloads and
reports every kernel that compiled (nothing should, once the list is compiled):
``tests/test_signatures.py`` runs it against the installed wheel.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
import warnings

from ._workloads import MASK_DTYPES, ONE_NUMBER, kernels, workloads  # noqa: F401 - names warmup has had


def __getattr__(name: str):
    """The names this module had before the workloads moved to ``_workloads.py``, kept working."""
    if name == "WORKLOADS":  # every workload by name, the ones the list leaves out included
        return workloads(extra=True)
    if name == "KERNEL_MODULES":  # the kernel modules, as found by listing kernels/
        return tuple(sorted({key.split(".")[0] for key in kernels()}))
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def warmup(jobs: int | None = None, out=None, names: list[str] | None = None, workloads: bool = False) -> int:
    """Compile the listed signatures (of all kernels, or of the kernels ``names``, ``module.name``) in
    ``jobs`` processes (default: one per core); with ``workloads``, also run every workload (the
    signatures of rarer dtypes that the list leaves out). Print what was compiled and where the cache
    is. Returns the exit status: 1 when no cache folder is writable or a workload failed, else 0."""
    out = sys.stdout if out is None else out
    from .kernels import _signatures
    from .kernels._caches import cache_location

    failed = 0
    if workloads:
        failed = _run_workloads(jobs, out)

    listed = list(_signatures.SIGNATURES) if names is None else names
    begin = time.perf_counter()
    total = sum(len(_signatures.SIGNATURES[name]) for name in listed)
    jobs = max(1, min(jobs or os.cpu_count() or 1, total))
    if jobs > 1:
        print(f"compiling {total} signatures in {jobs} processes ...", file=out, flush=True)
    done = _signatures.compile_all(listed, jobs)
    seconds = time.perf_counter() - begin
    width = max(map(len, listed))
    for name in listed:
        print(f"  {name:<{width}}  {len(_signatures.SIGNATURES[name]):3d} signatures", file=out)
    loaded, compiled = sum(d[2] for d in done), sum(d[3] for d in done)
    print(f"{len(done)} signatures of {len(listed)} kernels in {seconds:.1f} s ({compiled} compiled now, {loaded} "
          "loaded from the cache)", file=out)
    folders = {name: cache_location(_signatures.dispatcher(name)) for name in listed}
    for folder in sorted({folder for folder in folders.values() if folder}):
        print(f"cache: {folder}", file=out)
    unlisted = sorted(set(kernels()) - set(_signatures.SIGNATURES))
    if unlisted:
        print(f"not in the signature list: {', '.join(unlisted)}", file=out)
    if compiled and any(folder is None for folder in folders.values()):
        print("no writable cache folder: the kernels compiled in memory and nothing was kept; set "
              "NUMBA_CACHE_DIR to a writable folder", file=out)
        return 1
    return 1 if failed else 0


def _compiling() -> None:
    """Small calls in this process compile (not run as plain Python): the workloads are for compiling."""
    from .kernels import _plain

    _plain.interpreting["enabled"] = False


def _run_one(name: str) -> tuple[str | None, dict]:
    """Run one workload in this process: its error (or None), and what a child process of it saw."""
    os.environ.setdefault("MPLBACKEND", "Agg")
    _compiling()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            seen = workloads(extra=True)[name]()
        except Exception as error:  # noqa: BLE001 - reported, and the other workloads still run
            return f"{type(error).__name__}: {error}", {}
    return None, seen if isinstance(seen, dict) else {}


def _pool(jobs: int):
    """``jobs`` fresh (spawned) processes: they read the environment as it is now."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    return ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("spawn"))


def _run_workloads(jobs: int | None, out) -> int:
    """Run every workload in ``jobs`` processes (their kernels save into the cache); the failures."""
    names = list(workloads(extra=True))
    jobs = max(1, min(jobs or os.cpu_count() or 1, len(names)))
    print(f"running {len(names)} workloads in {jobs} processes ...", file=out, flush=True)
    with _pool(jobs) as pool:
        errors = dict(zip(names, (error for error, _ in pool.map(_run_one, names, chunksize=1))))
    for name, error in errors.items():
        if error:
            print(f"workload {name!r} failed: {error}", file=out)
    return sum(1 for error in errors.values() if error)


def _signatures_reached(name: str) -> tuple[str | None, dict[str, list[list[str]]]]:
    """Run the workload ``name`` in this process: its error (or None), and the argument types each
    kernel holds afterwards (and those a child process of the workload held)."""
    from ._workloads import held_signatures

    error, seen = _run_one(name)
    held = held_signatures()
    for kernel, signatures in seen.get("held", {}).items():
        held.setdefault(kernel, []).extend(signatures)
    return error, held


def record(jobs: int | None = None, out=None, names: list[str] | None = None) -> int:
    """Run the workloads (all, or those ``names``; in ``jobs`` fresh processes compiling into one new
    empty cache, which the shipped cache does not serve) and write the argument types the kernels
    met to the signature list of ``kernels/_signatures.py``: the whole list when every workload ran,
    else added to it (a maintainer's command)."""
    out = sys.stdout if out is None else out
    from .kernels import _caches, _plain, _signatures

    every = names is None
    names = list(workloads()) if every else names
    jobs = max(1, min(jobs or os.cpu_count() or 1, len(names)))
    begin = time.perf_counter()
    saved = {key: os.environ.get(key) for key in (_caches.BUILD_ENV, _plain.INTERPRET_ENV)}
    with tempfile.TemporaryDirectory(prefix="fairmedfm_fast_record_") as cache:
        os.environ[_caches.BUILD_ENV] = cache  # the workers compile into it, and read no shipped cache
        os.environ[_plain.INTERPRET_ENV] = "never"
        try:
            print(f"running {len(names)} workloads in {jobs} processes ...", file=out, flush=True)
            with _pool(jobs) as pool:
                results = list(pool.map(_signatures_reached, names, chunksize=1))
        finally:
            for key, value in saved.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value
    failed = [f"workload {name!r} failed: {error}" for name, (error, _) in zip(names, results) if error]
    if failed:
        print("\n".join(failed) + "\nthe signature list is left as it was", file=out)
        return 1
    found: dict[str, set[tuple[str, ...]]] = {} if every else {
        name: {tuple(map(_signatures.spell, s)) for s in signatures} for name, signatures in _signatures.SIGNATURES.items()}
    for _, held in results:
        for kernel, signatures in held.items():
            found.setdefault(kernel, set()).update(map(tuple, signatures))
    path = _signatures.__file__
    with open(path, encoding="utf-8") as handle:
        text = handle.read()
    begin_mark, end_mark = "# --- signatures (generated) ---\n", "# --- end of signatures ---"
    start, end = text.index(begin_mark) + len(begin_mark), text.index(end_mark)
    block = _signatures.render({key: value for key, value in found.items() if value})
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text[:start] + block + "\n" + text[end:])
    print(f"{sum(map(len, found.values()))} signatures of {sum(1 for v in found.values() if v)} kernels "
          f"written to {path} in {time.perf_counter() - begin:.0f} s", file=out)
    return 0


def check(out=None, names: list[str] | None = None) -> int:
    """Run the workloads (all, or those ``names``) in this process and print one JSON line: per
    workload, the kernels that compiled (``module.name`` and argument types) and any error. Exit
    status 1 when anything compiled or failed: a public path needs a signature the list lacks."""
    out = sys.stdout if out is None else out
    from ._workloads import record_compiles

    compiled = record_compiles()
    report: dict[str, dict] = {}
    for name in names or list(workloads()):
        del compiled[:]
        error, seen = _run_one(name)
        found = [*compiled, *seen.get("compiled", [])]
        if found or error:
            report[name] = {"compiled": found, "error": error}
    print(json.dumps(report), file=out)
    return 1 if report else 0


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``fairmedfm-fast warmup``."""
    parser.add_argument("--jobs", "-j", type=int, default=None, metavar="N",
                        help="compile in N processes (default: one per core)")
    parser.add_argument("--workloads", action="store_true",
                        help="also run the API along every path and size (the signature list's source; minutes)")


if __name__ == "__main__":  # python -m fairmedfm_fast.warmup --record | --check
    _parser = argparse.ArgumentParser(prog="python -m fairmedfm_fast.warmup")
    _mode = _parser.add_mutually_exclusive_group()
    _mode.add_argument("--record", action="store_true", help="write what the workloads reach to the signature list")
    _mode.add_argument("--check", action="store_true", help="run the workloads; report what compiled (exit 1 if any)")
    _parser.add_argument("names", nargs="*", help="the workloads (default: all)")
    add_arguments(_parser)
    _options = _parser.parse_args()
    if _options.record:
        sys.exit(record(_options.jobs, names=_options.names or None))
    if _options.check:
        sys.exit(check(names=_options.names or None))
    sys.exit(warmup(_options.jobs, workloads=_options.workloads))
