"""Side by side on one Parquet file: `fairmedfm-fast score` (wall time and peak memory of the
process), pyarrow reading the same columns (in process, best of 3), and the start-up floor of any
command built on pyarrow and numba (a fresh process that imports both, calls one cached kernel and
exits as `fairmedfm-fast` does, without tearing the interpreter down).

Usage: python benchmarks/scripts/cli_large.py FILE [RUNS]
"""
import resource
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

BIN = str(Path(sys.executable).parent)  # the console scripts beside this Python
COLUMNS = ["label", "prob", "sex", "age_group", "race"]  # as written by cli_make_data.py

FLOOR = textwrap.dedent("""
    import numba, numpy, pyarrow.parquet

    @numba.njit(cache=True, nogil=True)
    def total(x):
        s = 0.0
        for v in x:
            s += v
        return s

    total(numpy.ones(3))

    import atexit, os  # end the way fairmedfm-fast does: exit handlers, then no interpreter teardown

    atexit._run_exitfuncs()
    os._exit(0)
""")

READ = textwrap.dedent("""
    import sys, time, pyarrow.parquet as pq
    best = min(
        (lambda t: (pq.read_table(sys.argv[1], columns=sys.argv[2:]), time.perf_counter() - t)[1])(time.perf_counter())
        for _ in range(3))
    print(best)
""")


def wall(command: list[str], **kwargs) -> tuple[float, subprocess.CompletedProcess]:
    start = time.perf_counter()
    result = subprocess.run(command, capture_output=True, text=True, **kwargs)
    return time.perf_counter() - start, result


def main() -> None:
    path, runs = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 3
    with tempfile.TemporaryDirectory() as folder:
        script = Path(folder, "floor.py")
        script.write_text(FLOOR)
        wall([sys.executable, str(script)], cwd=folder)  # fills the floor's JIT cache
        floor = min(wall([sys.executable, str(script)], cwd=folder)[0] for _ in range(runs))
    read = float(wall([sys.executable, "-c", READ, path, *COLUMNS])[1].stdout)
    fast_cmd = [f"{BIN}/fairmedfm-fast", "score", path]
    wall(fast_cmd)  # warm the JIT cache
    times = []
    for _ in range(runs):
        seconds, result = wall(fast_cmd)
        if result.returncode:
            sys.exit(f"fairmedfm-fast failed: {result.stderr.strip()}")
        times.append(seconds)
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024  # KiB -> MiB, largest child
    best = min(times)
    print(f"{path}: fairmedfm-fast score {best:.2f} s (best of {runs}: {', '.join(f'{t:.2f}' for t in times)}); "
          f"peak RSS {peak:.0f} MiB; pyarrow read of the same columns {read:.2f} s -> {best / read:.1f}x the read; "
          f"start-up floor (import pyarrow + numba, one cached kernel) {floor:.2f} s")


if __name__ == "__main__":
    main()
