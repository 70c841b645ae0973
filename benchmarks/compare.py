"""Side by side in one run: fairmedfm_fast, fairmedfm 0.4.2, scikit-learn, fairlearn and lower bounds.

    python benchmarks/compare.py            # the README figures (about 4 minutes on 2 cores, most of it fairmedfm 0.4.2)
    python benchmarks/compare.py --quick    # 10x smaller inputs, under a minute
    python benchmarks/compare.py --readme README.md   # also put the table into the README

Prints a Markdown table of best-of-k wall times (``time.perf_counter``) and ratios, and writes it to
``--markdown`` (default ``benchmarks/compare.md``), with a PNG chart at ``--chart`` (default
``benchmarks/compare.png``; needs matplotlib: ``pip install ".[bench]"``) and the raw figures at
``--json``. Every implementation runs on the same arrays in this one process, so the ratios hold on any
machine even where the absolute times do not. Cold-start and command-line figures come from fresh
subprocesses (the console scripts beside this Python, on generated Parquet and CSV tables).

Inputs come from ``benchmarks/benchmarks/_data.py`` and the metric functions from its registry, the same
ones the asv suite uses. Rows whose function fairmedfm_fast does not have yet show "n/a".
"""
from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import platform
import subprocess
import sys
import tempfile
import textwrap
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:  # the asv suite's helpers: benchmarks/benchmarks/_*.py
    sys.path.insert(0, str(HERE))

from benchmarks import _baselines, _data, _registry  # noqa: E402

REGISTRY = _registry.REGISTRY

FAST, REFERENCE, SKLEARN, FAIRLEARN, BOUND, STREAM = (
    "fairmedfm_fast", "fairmedfm 0.4.2", "scikit-learn loop", "fairlearn MetricFrame", "lower bound",
    "streaming pass")
COLUMNS = (FAST, REFERENCE, SKLEARN, FAIRLEARN, BOUND, STREAM)

SIZES = {
    # small: per-call latency; large / huge: the 1M and 10M figures; volumes: (shape, pairs).
    "full": {"small": 1_000, "large": 1_000_000, "huge": 10_000_000, "seg": ((128, 128, 128), 8),
             "seg_large": (512, 512, 256), "nifti": ((256, 256, 256), 10), "cli": (1_000, 1_000_000, 10_000_000), "repeat": 7,
             "budget": 10.0},
    "quick": {"small": 1_000, "large": 100_000, "huge": 1_000_000, "seg": ((64, 64, 64), 8),
              "seg_large": (256, 256, 128), "nifti": ((128, 128, 128), 10), "cli": (1_000, 100_000, 1_000_000), "repeat": 5,
              "budget": 3.0},
    # For tests/test_benchmarks.py: every code path, in seconds.
    "tiny": {"small": 300, "large": 3_000, "huge": 6_000, "seg": ((16, 16, 16), 4),
             "seg_large": (24, 24, 24), "nifti": ((16, 16, 16), 2), "cli": (300, 3_000, 6_000), "repeat": 1,
             "budget": 0.0},
}


def label(n: int) -> str:
    """1000 -> "1,000"; 1000000 -> "1M"."""
    return f"{n // 1_000_000}M" if n >= 1_000_000 and n % 1_000_000 == 0 else f"{n:,}"


# ------------------------------------------------------------------------------------------------------------
# Timing


def best_of(call, repeat: int, budget: float) -> tuple[float, object]:
    """Best wall time of up to ``repeat`` calls, stopping once ``budget`` seconds are spent; and the result."""
    times, start, result = [], time.perf_counter(), None
    for _ in range(max(repeat, 1)):
        begin = time.perf_counter()
        result = call()
        times.append(time.perf_counter() - begin)
        if time.perf_counter() - start > budget:
            break
    return min(times), result


def per_call(call, repeat: int, budget: float) -> tuple[float, object]:
    """Best, over ``repeat`` batches, of the mean time per call; a batch lasts about 0.2 s (at least one
    call), and batching stops once ``budget`` seconds are spent."""
    begin = time.perf_counter()
    result = call()
    number = max(1, min(1000, int(0.2 / max(time.perf_counter() - begin, 1e-6))))
    best, start = math.inf, time.perf_counter()
    for _ in range(max(repeat, 1)):
        begin = time.perf_counter()
        for _ in range(number):
            result = call()
        best = min(best, (time.perf_counter() - begin) / number)
        if time.perf_counter() - start > budget:
            break
    return best, result


@dataclass
class Row:
    case: str
    times: dict = field(default_factory=dict)  # column -> seconds, or None (not available)
    target: str = ""
    met: bool | None = None
    note: str = ""
    values: dict = field(default_factory=dict)  # column -> the number it computed, to check agreement

    def speedup(self, other: str = REFERENCE) -> float | None:
        fast, slow = self.times.get(FAST), self.times.get(other)
        return slow / fast if fast and slow else None

    def over_bound(self, bound: str = BOUND) -> float | None:
        fast, bound = self.times.get(FAST), self.times.get(bound)
        return fast / bound if fast and bound else None


class Runner:
    """Runs the cases of one size preset, collecting :class:`Row` objects."""

    def __init__(self, size: str, log=print):
        self.size = SIZES[size]
        self.preset = size
        self.rows: list[Row] = []
        self.log = log

    # -- helpers ------------------------------------------------------------------------------------------
    def time(self, row: Row, column: str, make_call, latency: bool = False) -> None:
        """Time the no-argument callable that ``make_call()`` returns into ``row.times[column]``.

        ``make_call`` does the untimed preparation (warm-up calls included) and raises NotImplementedError
        when the function is missing: the cell then shows "n/a".
        """
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                call = make_call()
        except NotImplementedError as error:
            row.times[column] = None
            row.note = row.note or f"n/a: {error}"
            return
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if latency:
                seconds, value = per_call(call, self.size["repeat"], self.size["budget"])
            else:
                seconds, value = best_of(call, self.size["repeat"], self.size["budget"])
        row.times[column] = seconds
        row.values[column] = value
        self.log(f"  {column:<22} {format_seconds(seconds):>10}   {row.case}")

    def metric(self, row: Row, column: str, name: str, implementation: str, case, warm=None,
               latency: bool = False) -> None:
        """Time registry metric ``name`` of ``implementation`` on ``case``, after one untimed call: on
        ``case`` itself for fairmedfm_fast (compiles every path this input takes, some depend on its
        size), on the small ``warm`` case for the others (lazy imports)."""
        def make():
            call = REGISTRY[name].bind(implementation, case)
            if implementation == "fast":
                call()
            elif warm is not None:
                REGISTRY[name].bind(implementation, warm)()
            return call

        self.time(row, column, make, latency)

    def add(self, row: Row) -> Row:
        self.rows.append(row)
        return row

    # -- classification -----------------------------------------------------------------------------------
    def classification(self) -> None:
        small, large, huge = self.size["small"], self.size["large"], self.size["huge"]
        warm1, warm3 = _data.classification(500, 1, 5, seed=1), _data.classification(500, 3, 5, seed=1)

        case = _data.classification(small, 1, 2)
        row = self.add(Row(f"`auc_gap`, {label(small)} samples, 1 attribute (2 groups), per call",
                           target="fast <= 0.5 ms"))
        self.one_number_auc(row, case, _data.classification(500, 1, 2, seed=1), latency=True)
        row.met = _at_most(row.times.get(FAST), 0.5e-3)

        case = _data.classification(large, 1, 5)
        row = self.add(Row(f"`auc_gap`, {label(large)} samples, 1 attribute (5 groups)", target=">= 50x fairmedfm"))
        self.one_number_auc(row, case, warm1)
        self.time(row, BOUND, lambda: lambda: _baselines.sort_scores(case.y_score))
        row.met = _at_least(row.speedup(), 50)

        # fairmedfm 0.4.2 combines attributes row by row in Python: 7 minutes at 1M samples, hence 10x fewer.
        case = _data.classification(large // 10, 3, 5)
        row = self.add(Row(f"`auc_gap`, {label(large // 10)} samples, 3 attributes (their 40 combinations)"))
        self.one_number_auc(row, case, warm3)
        self.time(row, BOUND, lambda: lambda: _baselines.sort_scores(case.y_score))

        for n, reference in ((large, True), (huge, False)):
            case = _data.classification(n, 3, 5)
            row = self.add(Row(f"`evaluate`, {label(n)} samples, 3 attributes (5, 2, 4 groups)",
                               target=">= 50x fairmedfm" if reference else "<= 5x np.sort"))
            self.metric(row, FAST, "evaluate", "fast", case, warm3)
            if reference:
                self.metric(row, REFERENCE, "evaluate", "reference", case, warm3)
                row.met = _at_least(row.speedup(), 50)
            self.time(row, BOUND, lambda c=case: lambda: _baselines.sort_scores(c.y_score))
            if not reference:
                row.met = _at_most(row.over_bound(), 5)
                row.note = "fairmedfm 0.4.2 not run (minutes)"
            del case

        case = _Categorical(_data.classification(large, 3, 5))
        row = self.add(Row(f"`evaluate`, {label(large)} samples, 3 attributes as pandas categoricals"))
        self.metric(row, FAST, "evaluate", "fast", case, _Categorical(warm3))
        self.time(row, BOUND, lambda: lambda: _baselines.sort_scores(case.y_score))
        row.note = "the other rows pass string columns"

        case = _data.classification(large, 1, 5)
        for name, what in (("ece_gap", "1 attribute (5 groups)"), ("bce_gap", "1 attribute (5 groups)"),
                           ("find_threshold", "all samples"), ("expected_calibration_error", "all samples")):
            row = self.add(Row(f"`{REGISTRY[name].path}`, {label(large)} samples, {what}"))
            self.metric(row, FAST, name, "fast", case, warm1)
            self.metric(row, REFERENCE, name, "reference", case, warm1)
            if name == "find_threshold":
                self.time(row, BOUND, lambda: lambda: _baselines.sort_scores(case.y_score))

    def bounds(self, row: Row, case, n_groupings: int) -> None:
        """Both lower bounds: ``np.sort`` of the scores and the streaming pass over ``n_groupings`` code rows."""
        codes = np.ascontiguousarray(case.codes[:n_groupings].astype(np.int8))
        sizes = np.ascontiguousarray(case.n_groups[:n_groupings])
        self.time(row, BOUND, lambda: lambda: _baselines.sort_scores(case.y_score))

        def stream():
            _baselines.streaming_pass(case.y_score, case.y_true, codes, sizes)
            return lambda: _baselines.streaming_pass(case.y_score, case.y_true, codes, sizes)

        self.time(row, STREAM, stream)

    def engine(self) -> None:
        """The engine's targets (issue 12): `evaluate` and `auc_gap` beside both lower bounds, on 1 or all
        threads, and per-call latency on small inputs."""
        small, large, huge = self.size["small"], self.size["large"], self.size["huge"]
        warm1, warm3 = _data.classification(500, 1, 5, seed=1), _data.classification(500, 3, 5, seed=1)
        for n in (huge, large):
            case = _Categorical(_data.classification(n, 3, 5))
            for jobs in ("", "1"):
                row = self.add(Row(f"`evaluate`, {label(n)} samples, 3 categorical attributes"
                                   + (", FAIRMEDFM_FAST_N_JOBS=1" if jobs else "")))
                with _n_jobs(jobs):
                    self.metric(row, FAST, "evaluate", "fast", case, _Categorical(warm3))
                self.bounds(row, case, 3)
            del case
        case = _data.classification(large, 3, 5)
        row = self.add(Row(f"`evaluate`, {label(large)} samples, 3 string attributes", target="<= 4x np.sort"))
        self.metric(row, FAST, "evaluate", "fast", case, warm3)
        self.bounds(row, case, 3)
        row.met = _at_most(row.over_bound(), 4)
        for n in (huge, large):
            case = _Categorical(_data.classification(n, 1, 5))
            row = self.add(Row(f"`auc_gap`, {label(n)} samples, 1 categorical attribute (5 groups)"))
            self.metric(row, FAST, "auc_gap", "fast", case, _Categorical(warm1))
            if n == large:
                codes = case.intersection_codes()
                self.time(row, SKLEARN, lambda c=case, g=codes: lambda: _baselines.sklearn_auc_gap(c.y_true, c.y_score, g))
                row.met = _at_least(row.speedup(SKLEARN), 15)
                row.target = ">= 15x scikit-learn loop"
                row.note = f"scikit-learn loop / fast: {_ratio(row.speedup(SKLEARN), 'x')}"
            self.bounds(row, case, 1)
            del case
        case = _data.classification(small, 3, 5)
        row = self.add(Row(f"`auc_gap`, {label(small)} samples, 5 groups, NumPy inputs, per call",
                           target="fast <= 150 µs"))
        one = _data.classification(small, 1, 5)
        self.time(row, FAST, lambda: _numpy_auc_gap(one), latency=True)
        row.met = _at_most(row.times.get(FAST), 150e-6)
        row = self.add(Row(f"`evaluate`, {label(small)} samples, 3 string attributes, per call", target="fast <= 1 ms"))
        self.metric(row, FAST, "evaluate", "fast", case, warm3, latency=True)
        row.met = _at_most(row.times.get(FAST), 1e-3)

    def one_number_auc(self, row: Row, case, warm, latency: bool = False) -> None:
        codes, sensitive = case.intersection_codes(), case.sensitive()
        self.metric(row, FAST, "auc_gap", "fast", case, warm, latency)
        self.metric(row, REFERENCE, "auc_gap", "reference", case, warm, latency)
        self.time(row, SKLEARN, lambda: lambda: _baselines.sklearn_auc_gap(case.y_true, case.y_score, codes),
                  latency)

        def fairlearn():
            if not _has("fairlearn"):
                raise NotImplementedError("fairlearn is not installed")
            return lambda: _baselines.fairlearn_auc_gap(case.y_true, case.y_score, sensitive)

        self.time(row, FAIRLEARN, fairlearn, latency)

    # -- cold start ---------------------------------------------------------------------------------------
    def cold_start(self) -> None:
        repeat = max(self.size["repeat"], 3) if self.preset != "tiny" else 1
        row = self.add(Row("`import` (fresh process)", target="fast <= 0.3 s"))
        fast = [_child("import fairmedfm_fast") for _ in range(repeat)]
        row.times[FAST] = min(r["import"] for r in fast)
        row.times[REFERENCE] = min(_child("import fairmedfm")["import"] for _ in range(repeat))
        row.met = _at_most(row.times[FAST], 0.3)
        row.note = "numba imported by `import fairmedfm_fast`: " + ("yes" if fast[0]["numba"] else "no")
        for function in ("auc_gap", "evaluate"):
            if self.preset == "tiny":
                caches = ("filled",)  # the empty-cache compile takes seconds; the test skips it
            else:
                caches = ("empty", "filled")
            for cache in caches:
                what = "empty JIT cache (compiles)" if cache == "empty" else "second process (JIT cache filled)"
                row = self.add(Row(f"first `{function}` call, 1,000 samples, {what}"))
                row.times[FAST] = _first_call(function, "fairmedfm_fast", cache, repeat)
                if cache == "empty":
                    row.times[REFERENCE] = _first_call(function, "fairmedfm", cache, repeat)
                else:
                    row.note = "import excluded; numba import included"
                self.log(f"  {FAST:<22} {format_seconds(row.times[FAST]):>10}   {row.case}")

    # -- command line -------------------------------------------------------------------------------------
    def command_line(self) -> None:
        """`fairmedfm-fast score` beside `fairmedfm score`, each run as a fresh process (as users run
        them), with two lower bounds: pyarrow reading the same columns, and the start-up of any
        command built on pyarrow and numba (:data:`_FLOOR`)."""
        small, large, huge = self.size["cli"]
        repeat = max(self.size["repeat"], 3) if self.preset != "tiny" else 1
        with tempfile.TemporaryDirectory(prefix="fairmedfm_fast_compare_") as folder:
            floor_script = Path(folder, "floor.py")
            floor_script.write_text(_FLOOR)
            _run_child([sys.executable, str(floor_script)], folder)  # fills the floor's JIT cache
            floor = min(_run_child([sys.executable, str(floor_script)], folder)[0] for _ in range(repeat))
            for n, suffix in ((large, ".parquet"), (huge, ".parquet"), (small, ".csv")):
                path = _data.prediction_table(n, Path(folder, f"predictions_{n}{suffix}"))
                role = {small: "cold start", large: "speed-up", huge: "read"}[n]
                self.command_line_row(path, n, role, floor, folder, repeat)

    def command_line_row(self, path: Path, n: int, role: str, floor: float, folder: str, repeat: int) -> None:
        fast, oracle = _console("fairmedfm-fast"), _console("fairmedfm")
        kind = "CSV" if path.suffix == ".csv" else "Parquet"
        row = self.add(Row(f"`fairmedfm-fast score`, {n:,}-row {kind} file, 3 attributes (fresh process)"))
        row.times[BOUND] = floor

        def command(program):
            def make():
                if program is None:
                    raise NotImplementedError("the console script is not installed")

                def call():
                    _, output, status = _run_child([program, "score", str(path)], folder)
                    if status != 0:
                        raise RuntimeError(f"{program} score failed with exit code {status}")
                    return json.loads(output)["sex"]["auc-gap"]  # compared by check_agreement

                call()  # warm-up (fills the JIT cache)
                return call
            return make

        first = None
        if fast is not None and role == "cold start":
            first = _run_child([fast, "score", str(path)], folder, {"NUMBA_CACHE_DIR": str(Path(folder, "empty"))})[0]
        self.time(row, FAST, command(fast))
        if role != "read" or self.preset == "tiny":  # fairmedfm takes minutes on the largest table
            self.time(row, REFERENCE, command(oracle))
        notes = [f"peak RSS {_peak_rss([fast, 'score', str(path)], folder):.0f} MiB"] if fast else []
        if role == "cold start":
            row.target, row.met = "second run < 1.5 s", _at_most(row.times.get(FAST), 1.5)
            notes.append(f"first run with an empty JIT cache: {format_seconds(first)}")
        elif role == "speed-up":
            row.target, row.met = ">= 30x fairmedfm", _at_least(row.speedup(), 30)
        else:
            import pyarrow.parquet as pq

            columns = ["label", "prob", "sex", "age_group", "race"]
            read, _ = best_of(lambda: pq.read_table(path, columns=columns), repeat, self.size["budget"])
            ratio = row.times[FAST] / read if row.times.get(FAST) else None
            row.target, row.met = "<= 3x pyarrow read", _at_most(ratio, 3)
            notes.append(f"pyarrow reads the same columns in {format_seconds(read)} ({_ratio(ratio, 'x')} of it)")
            if self.preset != "tiny":
                notes.append("fairmedfm not run (minutes)")
        notes.append("lower bound: start-up floor")
        row.note = "; ".join(notes)

    # -- segmentation -------------------------------------------------------------------------------------
    def segmentation(self) -> None:
        (shape, pairs), large_shape = self.size["seg"], self.size["seg_large"]
        warm = _data.segmentation((16, 16, 16), 2, seed=1)
        for volume in (shape, large_shape):
            self.dice_kernel(volume)

        case = _data.segmentation(shape, pairs)
        row = self.add(Row(f"Dice of each pair (`dice_scores`), {pairs} uint8 pairs of {_shape(shape)}, in memory"))
        self.metric(row, FAST, "dice_scores", "fast", case, warm)
        self.metric(row, REFERENCE, "dice_scores", "reference", case, warm)
        self.time(row, BOUND, lambda: lambda: _baselines.sum_mask_bytes(case.pred + case.true))
        if row.times.get(FAST):
            row.note = f"{case.mask_bytes / 1e9 / row.times[FAST]:.2f} GB/s with all {os.cpu_count()} cores"

        for source in ("memory", ".npy", ".nii.gz"):
            if source == ".nii.gz" and not _has("nibabel"):
                continue
            case = _data.segmentation(shape, pairs) if source == "memory" else _data.mask_files(shape, pairs, source)
            warm_case = warm if source == "memory" else _data.mask_files((16, 16, 16), 2, source, seed=1)
            where = "in memory" if source == "memory" else f"from {source} files"
            row = self.add(Row(f"`evaluate_segmentation`, {pairs} pairs of {_shape(shape)}, {where}",
                               target=">= 5x fairmedfm" if source == "memory" else ""))
            self.metric(row, FAST, "evaluate_segmentation", "fast", case, warm_case)
            self.metric(row, REFERENCE, "evaluate_segmentation", "reference", case, warm_case)
            if source == "memory":
                row.met = _at_least(row.speedup(), 5)

        case = _data.segmentation(large_shape, 2)
        row = self.add(Row(f"`evaluate_segmentation`, 2 pairs of {_shape(large_shape)}, in memory",
                           target=">= 5x fairmedfm"))
        self.metric(row, FAST, "evaluate_segmentation", "fast", case, warm)
        self.metric(row, REFERENCE, "evaluate_segmentation", "reference", case, warm)
        row.met = _at_least(row.speedup(), 5)
        self.read_nifti()

    def dice_kernel(self, volume) -> None:
        """The voxel-counting kernel on one uint8 pair, one thread, against a NumPy sum of the same bytes."""
        row = self.add(Row(f"Dice kernel (`overlap_counts`, 1 thread), one uint8 pair of {_shape(volume)}",
                           target="<= 2x NumPy sum (>= 1 GB/s)"))
        case = _data.segmentation(volume, 1)
        pred, true = case.pred[0].reshape(-1), case.true[0].reshape(-1)

        def make():
            try:
                from fairmedfm_fast.kernels.segmentation import overlap_counts
            except ImportError:
                raise NotImplementedError("fairmedfm_fast.kernels.segmentation is not available") from None
            starts, out = np.array([0, pred.size], np.int64), np.zeros((1, 3), np.int64)
            one, top = np.uint8(1), np.uint8(255)

            def call():
                overlap_counts(pred, true, starts, one, top, one, top, out)
                return out

            call()
            return call

        self.time(row, FAST, make)
        self.time(row, BOUND, lambda: lambda: _baselines.sum_mask_bytes([pred, true]))
        row.met = _at_most(row.over_bound(), 2)
        if row.times.get(FAST):
            gigabytes = case.mask_bytes / 1e9
            row.note = (f"{gigabytes / row.times[FAST]:.2f} GB/s (NumPy sum: {gigabytes / row.times[BOUND]:.2f} GB/s)")
            row.met = row.met and gigabytes / row.times[FAST] >= 1

    def read_nifti(self) -> None:
        shape, pairs = self.size["nifti"]
        row = self.add(Row(f"read {2 * pairs} `.nii.gz` volumes of {_shape(shape)} (`dice_scores`): "
                           "`n_jobs=2` (fast column) vs `n_jobs=1` (note)", target="n_jobs=1 / n_jobs=2 >= 1.6"))
        try:
            if not _has("nibabel"):
                raise NotImplementedError("nibabel is not installed")
            function = REGISTRY["dice_scores"].function("fast")
            import inspect

            if "n_jobs" not in inspect.signature(function).parameters:
                raise NotImplementedError("dice_scores has no n_jobs")
        except NotImplementedError as error:
            row.note = f"n/a: {error}"
            return
        case = _data.mask_files(shape, pairs, ".nii.gz")

        def read(n_jobs):
            return lambda: function(case.pred, case.true, n_jobs=n_jobs)

        read(2)()
        one, two = math.inf, math.inf
        for _ in range(max(self.size["repeat"], 1)):  # interleaved, so that a change in load hits both
            one = min(one, best_of(read(1), 1, 0.0)[0])
            two = min(two, best_of(read(2), 1, 0.0)[0])
        row.times[FAST] = two
        row.note = f"n_jobs=1: {format_seconds(one)}; speed-up {one / two:.2f}x on {os.cpu_count()} cores"
        row.met = one / two >= 1.6
        self.log(f"  {FAST:<22} {format_seconds(two):>10}   {row.case} ({row.note})")


class _Categorical:
    """A classification case whose attributes are pandas categoricals instead of string columns."""

    def __init__(self, case):
        self.case = case

    def __getattr__(self, name):
        return getattr(self.case, name)

    def sensitive(self, kind="category"):
        return self.case.sensitive("category")


def _has(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None


class _n_jobs:
    """``FAIRMEDFM_FAST_N_JOBS`` set to ``value`` inside the block ("" leaves it as it is)."""

    def __init__(self, value: str):
        self.value, self.before = value, os.environ.get("FAIRMEDFM_FAST_N_JOBS")

    def __enter__(self):
        if self.value:
            os.environ["FAIRMEDFM_FAST_N_JOBS"] = self.value

    def __exit__(self, *exc):
        if self.value:
            if self.before is None:
                os.environ.pop("FAIRMEDFM_FAST_N_JOBS", None)
            else:
                os.environ["FAIRMEDFM_FAST_N_JOBS"] = self.before


def _numpy_auc_gap(case):
    """``auc_gap`` on plain NumPy arrays (labels, scores, integer group codes), warmed up."""
    import fairmedfm_fast

    codes = case.codes[0]
    fairmedfm_fast.auc_gap(case.y_true, case.y_score, sensitive_features=codes)
    return lambda: fairmedfm_fast.auc_gap(case.y_true, case.y_score, sensitive_features=codes)


def _shape(shape) -> str:
    return f"{shape[0]}^3" if len(set(shape)) == 1 else "x".join(map(str, shape))


def _at_least(value, target):
    return None if value is None else value >= target


def _at_most(value, target):
    return None if value is None else value <= target


# ------------------------------------------------------------------------------------------------------------
# Fresh processes

_CHILD = """
import json, os, sys, time
{environment}
begin = time.perf_counter()
{statement}
imported = time.perf_counter() - begin
numba = "numba" in sys.modules
{after}
print(json.dumps({{"import": imported, "numba": numba, "call": call}}))
"""

_FIRST_CALL = """
import numpy as np
rng = np.random.default_rng(0)
y = (rng.random(1000) < 0.3).astype(np.uint8)
s = rng.random(1000)
attributes = {{"site": rng.choice(["a", "b", "c"], 1000), "sex": rng.choice(["F", "M"], 1000),
              "age": rng.choice(["<40", "40-60", ">=60"], 1000)}}
begin = time.perf_counter()
{call}
call = time.perf_counter() - begin
"""

_CALLS = {"auc_gap": "fm.auc_gap(y, s, sensitive_features=attributes['site'])",
          "evaluate": "fm.evaluate(y, s, attributes)"}


def _child(statement: str, after: str = "call = None", cache_dir: str | None = None) -> dict:
    environment = f"os.environ['NUMBA_CACHE_DIR'] = {cache_dir!r}" if cache_dir else ""
    code = _CHILD.format(environment=environment, statement=statement, after=textwrap.dedent(after))
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"child process failed:\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _first_call(function: str, package: str, cache: str, repeat: int) -> float:
    """Best time of the first ``function`` call in a new process; ``cache`` "empty" gives each process a new
    Numba cache folder, "filled" runs once to fill one and times the processes after it."""
    after = _FIRST_CALL.format(call=textwrap.dedent(_CALLS[function]))
    with tempfile.TemporaryDirectory(prefix="fairmedfm_fast_compare_") as folder:
        statement = f"import {package} as fm"
        if cache == "filled":
            _child(statement, after, folder)
            return min(_child(statement, after, folder)["call"] for _ in range(repeat))
        return min(_child(statement, after, os.path.join(folder, str(i)))["call"] for i in range(min(repeat, 2)))


# Any command built on pyarrow and numba: import both, call one cached kernel, end as fairmedfm-fast
# does (exit handlers, then no interpreter teardown).
_FLOOR = """
import numba, numpy, pyarrow.parquet


@numba.njit(cache=True, nogil=True)
def total(x):
    s = 0.0
    for v in x:
        s += v
    return s


total(numpy.ones(3))
import atexit, os

atexit._run_exitfuncs()
os._exit(0)
"""


def _console(name: str) -> str | None:
    """The console script ``name`` beside this Python, or on the PATH."""
    import shutil

    beside = Path(sys.executable).with_name(name)
    return str(beside) if beside.exists() else shutil.which(name)


def _run_child(command: list[str], folder: str, environment: dict | None = None) -> tuple[float, str, int]:
    """Run ``command``: wall seconds, its stdout and its exit status."""
    begin = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, cwd=folder, env={**os.environ, **(environment or {})},
                          check=False)
    return time.perf_counter() - begin, done.stdout, done.returncode


# Started from this small process rather than from compare.py (which holds gigabytes of inputs by
# then), the command's peak RSS is its own: Linux carries a forked child's high-water mark over exec.
_PEAK = "import resource, subprocess, sys; subprocess.run(sys.argv[1:], capture_output=True); " \
        "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)"


def _peak_rss(command: list[str], folder: str) -> float:
    """Peak resident memory of ``command`` in MiB (Linux reports KiB)."""
    return int(_run_child([sys.executable, "-c", _PEAK, *command], folder)[1]) / 1024


# ------------------------------------------------------------------------------------------------------------
# Output


def format_seconds(seconds) -> str:
    if seconds is None:
        return "n/a"
    if seconds < 1e-3:
        return f"{seconds * 1e6:.0f} µs"
    if seconds < 1:
        return f"{seconds * 1e3:.1f} ms"
    return f"{seconds:.2f} s"


def _ratio(value, suffix) -> str:
    if value is None:
        return ""
    return f"{value:,.0f}{suffix}" if value >= 100 else f"{value:.1f}{suffix}" if value >= 10 else f"{value:.2f}{suffix}"


def machine() -> str:
    """One line: CPU, cores, memory, OS, Python and library versions, date."""
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as info:
            cpu = next(line.split(":", 1)[1].strip() for line in info if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    memory = ""
    try:
        memory = f", {os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES') / 2**30:.0f} GiB RAM"
    except (ValueError, OSError, AttributeError):
        pass
    versions = []
    for module in ("fairmedfm_fast", "fairmedfm", "numpy", "numba", "pandas", "sklearn", "fairlearn"):
        try:
            from importlib.metadata import version

            versions.append(f"{module} {version('scikit-learn' if module == 'sklearn' else module)}")
        except Exception:  # noqa: BLE001 - a missing package is simply not listed
            pass
    load = ""
    if hasattr(os, "getloadavg"):
        load = f", load average {os.getloadavg()[0]:.1f}"
    today = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    return (f"{cpu}, {os.cpu_count()} logical cores{memory}{load}; {platform.system()} {platform.release()}; "
            f"Python {platform.python_version()}; {', '.join(versions)}; {today}")


def markdown(rows: list[Row], preset: str) -> str:
    header = ["case", *COLUMNS, "fairmedfm / fast", "fast / lower bound", "fast / streaming pass", "target", "met",
              "note"]
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(["---"] + ["---:"] * 9 + ["---", ":-:", "---"]) + "|"]
    for row in rows:
        cells = [row.case, *(format_seconds(row.times.get(c)) if c in row.times else "" for c in COLUMNS),
                 _ratio(row.speedup(), "x"), _ratio(row.over_bound(), "x"), _ratio(row.over_bound(STREAM), "x"),
                 row.target,
                 {True: "yes", False: "**no**", None: ""}[row.met], row.note]
        lines.append("| " + " | ".join(cells) + " |")
    lines.append("")
    lines.append(f"Machine: {machine()}. NumPy SIMD: {_baselines.simd_level()}. Preset: `{preset}`. Best of up to {SIZES[preset]['repeat']} runs "
                 f"(one for calls over {SIZES[preset]['budget']:.0f} s). Attributes are pandas string columns (as read "
                 "from a CSV file) unless a row says otherwise. Lower bound: `np.sort` of the scores for "
                 "classification (fast on CPUs with AVX2, X86_V3), a NumPy sum over every mask byte for Dice, and for the command line the start-up "
                 "of a process that imports pyarrow and numba and calls one cached kernel. Streaming pass: one Numba loop "
                 "that reads the scores, the labels and the code rows once and adds each score and label into its "
                 "groups' slots (1 grouping for `auc_gap`, 3 for `evaluate`).")
    return "\n".join(lines)


def chart(rows: list[Row], path: Path, preset: str) -> None:
    """Horizontal bars, one group per case (only the implementations it ran), log-scale seconds, each bar
    labelled with its time."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    colors = {FAST: "#1b9e77", REFERENCE: "#d95f02", SKLEARN: "#7570b3", FAIRLEARN: "#e7298a", BOUND: "#999999",
              STREAM: "#666666"}
    shown = [row for row in rows if any(row.times.get(c) for c in COLUMNS)]
    bar, gap = 0.85, 0.7
    positions, ticks, used = 0.0, [], set()
    n_bars = sum(1 for row in shown for c in COLUMNS if row.times.get(c))
    figure, axes = plt.subplots(figsize=(11, 0.17 * n_bars + 0.12 * len(shown) + 1.3))
    for row in shown:
        present = [c for c in COLUMNS if row.times.get(c)]
        start = positions
        for column in present:
            seconds = row.times[column]
            axes.barh(positions, seconds, height=bar, color=colors[column],
                      label=None if column in used else column)
            axes.text(seconds * 1.08, positions, format_seconds(seconds), va="center", fontsize=7)
            used.add(column)
            positions += 1
        ticks.append(((start + positions - 1) / 2, textwrap.fill(row.case.replace("`", ""), 48)))
        positions += gap
    axes.set_yticks([t for t, _ in ticks])
    axes.set_yticklabels([text for _, text in ticks], fontsize=7.5)
    axes.set_ylim(positions - gap + 0.5, -0.6)  # top to bottom, no margins
    axes.set_xscale("log")
    low, high = axes.get_xlim()
    axes.set_xlim(low, high * 6)  # room for the labels
    axes.set_xlabel("seconds, log scale (best of k; lower is better)")
    axes.set_title(f"fairmedfm_fast beside fairmedfm 0.4.2, scikit-learn, fairlearn and lower bounds "
                   f"(compare.py, {preset})", fontsize=9)
    axes.grid(axis="x", which="major", alpha=0.3)
    axes.legend(fontsize=8, loc="upper right")
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)


def check_agreement(rows: list[Row]) -> list[str]:
    """Rows where the compared implementations returned different numbers (scalar results only)."""
    problems = []
    for row in rows:
        fast = row.values.get(FAST)
        if not isinstance(fast, (float, int, np.floating)):
            continue
        for column, value in row.values.items():
            if column == FAST or not isinstance(value, (float, int, np.floating)):
                continue
            if not (math.isclose(fast, value, rel_tol=0, abs_tol=1e-9) or (math.isnan(fast) and math.isnan(value))):
                problems.append(f"{row.case}: {FAST} gives {fast!r} but {column} gives {value!r}")
    return problems


BEGIN, END = "<!-- compare.py table: begin -->", "<!-- compare.py table: end -->"


def update_readme(path: Path, table: str) -> None:
    """Replace the text between the README's two marker comments with ``table``."""
    text = path.read_text()
    if BEGIN not in text or END not in text:
        raise SystemExit(f"{path} has no {BEGIN} ... {END} block to fill")
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    path.write_text(f"{head}{BEGIN}\n{table}\n{END}{tail}")


SECTIONS = ("classification", "engine", "cold-start", "segmentation", "command-line")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="10x smaller inputs (under a minute)")
    parser.add_argument("--preset", choices=list(SIZES), help=argparse.SUPPRESS)
    parser.add_argument("--only", nargs="+", choices=SECTIONS, default=list(SECTIONS),
                        help="run only these sections")
    parser.add_argument("--markdown", type=Path, default=HERE / "compare.md", help="where to write the table")
    parser.add_argument("--chart", type=Path, default=HERE / "compare.png", help="where to write the PNG chart")
    parser.add_argument("--json", type=Path, default=None, help="also write the raw figures as JSON")
    parser.add_argument("--no-chart", action="store_true", help="skip the chart (no matplotlib needed)")
    parser.add_argument("--readme", type=Path, default=None,
                        help="also put the table into this README, between its 'compare.py table' markers")
    args = parser.parse_args(argv)
    preset = args.preset or ("quick" if args.quick else "full")

    runner = Runner(preset, log=lambda text: print(text, file=sys.stderr, flush=True))
    for section in SECTIONS:
        if section in args.only:
            print(f"{section} ...", file=sys.stderr, flush=True)
            {"classification": runner.classification, "engine": runner.engine, "cold-start": runner.cold_start,
             "segmentation": runner.segmentation, "command-line": runner.command_line}[section]()

    table = markdown(runner.rows, preset)
    print(table)
    args.markdown.write_text(table + "\n")
    if args.readme is not None:
        update_readme(args.readme, table)
    if args.json is not None:
        args.json.write_text(json.dumps({"machine": machine(), "preset": preset, "rows": [
            {"case": r.case, "seconds": r.times, "target": r.target, "met": r.met, "note": r.note}
            for r in runner.rows]}, indent=2) + "\n")
    if not args.no_chart:
        try:
            chart(runner.rows, args.chart, preset)
        except ImportError:
            print('no chart: matplotlib is not installed (pip install ".[bench]")', file=sys.stderr)
    problems = check_agreement(runner.rows)
    for problem in problems:
        print(f"DISAGREEMENT: {problem}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
