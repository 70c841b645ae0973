"""fairmedfm_fast of this checkout beside fairmedfm_fast of another one, on the same inputs, interleaved.

    python benchmarks/scripts/compare_revisions.py OTHER_CHECKOUT            # compare.py's sizes
    python benchmarks/scripts/compare_revisions.py OTHER_CHECKOUT --quick    # 10x smaller, a few minutes
    python benchmarks/scripts/compare_revisions.py OTHER_CHECKOUT --rows evaluate --rounds 9
    python benchmarks/scripts/compare_revisions.py OTHER_CHECKOUT --preset tiny   # seconds: the tests
    python benchmarks/scripts/compare_revisions.py . --other-env NUMBA_CPU_NAME=generic --clock cpu

Answers "is any figure of ``benchmarks/compare.py`` more than 5% slower than before?" for the
fairmedfm_fast column: the in-process rows of ``compare.py`` (the one-number functions, ``evaluate``,
fairmedfm's legacy functions, the per-call rows, segmentation) and a few rows of the opt-in metrics
and voxels. Each checkout runs in its own long-lived worker process (its package first on the path,
``PYTHONPATH=CHECKOUT``; inputs from this checkout's ``benchmarks/benchmarks/_data.py``, so both see
the same arrays). After an untimed warm-up call in each, the two workers take turns, ``--rounds``
times per row (ABBA order, so that a drift of the machine's load falls on both), each turn the best
of a few calls (or, for the per-call rows, the mean of a batch); a row's figure is each side's best.
The ratio is this checkout's time over the other's: above 1.05 is flagged ``SLOWER``. The numbers
each side computes are compared too (they must agree to 1e-12).

OTHER_CHECKOUT is a source tree of the package (for example ``git worktree add ../before main``); its
Numba kernels compile on its first run (minutes) and are cached in its ``kernels/__pycache__``. The
cold-start and command-line rows of ``compare.py`` start fresh processes: run ``compare.py`` in each
checkout for those.

``--other-env KEY=VALUE`` (repeatable) sets an environment variable in the other worker only, so that
both workers can be this same checkout under different settings: ``. --other-env NUMBA_CPU_NAME=generic``
times kernels compiled for numba's portable x86-64 target ("other") beside the host CPU's ("this").
With it, each worker gets its own empty temporary ``NUMBA_CACHE_DIR`` (unless ``--other-env`` sets
one), so that the two sides' machine code never mixes and both compile afresh. The header prints, per
worker, numba's ``CPU_NAME``, ``CPU_FEATURES`` and the codegen's ``magic_tuple()`` (the cache key).
"""
from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BENCHMARKS = ROOT / "benchmarks"

SIZES = {"full": {"small": 1_000, "large": 1_000_000, "huge": 10_000_000, "seg": ((128, 128, 128), 8),
                  "maps": (40, 128, 128)},
         "quick": {"small": 1_000, "large": 100_000, "huge": 1_000_000, "seg": ((64, 64, 64), 8),
                   "maps": (20, 64, 64)},
         "tiny": {"small": 300, "large": 3_000, "huge": 6_000, "seg": ((16, 16, 16), 4), "maps": (4, 8, 8)}}


def rows(size: dict) -> list[tuple[str, str, tuple]]:
    """(name, kind, spec) of every row: kind "metric" runs a registry metric on a classification case
    (n, attributes, groups, categorical), "call" one of :func:`_calls`; names ending in "per call"
    are timed as the mean of a batch."""
    small, large, huge = size["small"], size["large"], size["huge"]
    out = [
        (f"auc_gap, {small:,} samples, 2 groups, per call", "metric", ("auc_gap", small, 1, 2, False)),
        (f"auc_gap, {large:,} samples, 5 groups", "metric", ("auc_gap", large, 1, 5, False)),
        (f"auc_gap, {large // 10:,} samples, 3 attributes", "metric", ("auc_gap", large // 10, 3, 5, False)),
        (f"evaluate, {large:,} samples, 3 string attributes", "metric", ("evaluate", large, 3, 5, False)),
        (f"evaluate, {huge:,} samples, 3 string attributes", "metric", ("evaluate", huge, 3, 5, False)),
        (f"evaluate, {large:,} samples, 3 categorical attributes", "metric", ("evaluate", large, 3, 5, True)),
        (f"auc_gap, {huge:,} samples, 1 categorical attribute", "metric", ("auc_gap", huge, 1, 5, True)),
    ]
    for name in ("ece_gap", "bce_gap", "find_threshold", "expected_calibration_error", "binary_cross_entropy"):
        out.append((f"{name}, {large:,} samples", "metric", (name, large, 1, 5, False)))
    out += [
        (f"auc_gap, {small:,} samples, 5 groups, NumPy inputs, per call", "call", ("numpy_auc_gap", small)),
        (f"evaluate, {small:,} samples, 3 string attributes, per call", "metric", ("evaluate", small, 3, 5, False)),
        (f"evaluate(metrics=[ap, brier, fpr]), {large:,} samples, 3 attributes", "call", ("opt_in", large)),
        (f"evaluate(n_boot=50), {large // 10:,} samples, 3 attributes", "call", ("bootstrap", large // 10)),
        ("evaluate_segmentation, {} x {} pairs".format(*size["seg"]), "call", ("segmentation", size["seg"])),
        ("evaluate_voxels, {} maps of {}x{}".format(*size["maps"]), "call", ("voxels", size["maps"])),
    ]
    return out


# ------------------------------------------------------------------------------------------------------------
# The worker: one checkout's package, timing the rows the parent asks for


def _calls(kind: str, spec: tuple):
    """A no-argument callable for a row, its inputs made beforehand."""
    import numpy as np

    import fairmedfm_fast as fm
    from benchmarks import _data, _registry

    if kind == "metric":
        name, n, attributes, groups, categorical = spec
        case = _data.classification(n, attributes, groups)
        args, kwargs = _registry.REGISTRY[name].inputs(case)
        if categorical and "sensitive_features" in kwargs:
            kwargs = {**kwargs, "sensitive_features": case.sensitive("category")}
        elif categorical:
            args = (*args[:2], case.sensitive("category"))
        function = _registry.REGISTRY[name].function("fast")
        return lambda: function(*args, **kwargs)
    what = spec[0]
    if what == "numpy_auc_gap":
        case = _data.classification(spec[1], 1, 5)
        return lambda: fm.auc_gap(case.y_true, case.y_score, sensitive_features=case.codes[0])
    if what == "opt_in":
        case = _data.classification(spec[1], 3, 5)
        sensitive = case.sensitive()
        return lambda: fm.evaluate(case.y_true, case.y_score, sensitive, metrics=["ap", "brier", "fpr"])
    if what == "bootstrap":
        case = _data.classification(spec[1], 3, 5)
        sensitive = case.sensitive()
        return lambda: fm.evaluate(case.y_true, case.y_score, sensitive, n_boot=50, random_state=0)
    if what == "segmentation":
        shape, n_cases = spec[1]
        case = _data.segmentation(tuple(shape), n_cases)
        return lambda: fm.evaluate_segmentation(case.groups, pred_masks=case.pred, true_masks=case.true)
    if what == "voxels":
        n_maps, height, width = spec[1]
        rng = np.random.default_rng(0)
        truth = rng.random((n_maps, height, width)) < 0.3
        maps = np.clip(0.3 * truth + 0.7 * rng.random((n_maps, height, width)), 0, 1).astype(np.float32)
        sex = np.where(np.arange(n_maps) % 2, "F", "M")
        return lambda: fm.evaluate_voxels(maps, truth, {"sex": sex}, n_jobs=1)
    raise ValueError(f"unknown row {what!r}")


def _numbers(result) -> list[float]:
    """The numbers of a result (a report's summary and by_group, or a number), to compare the sides."""
    import numpy as np

    if hasattr(result, "summary") and hasattr(result, "by_group"):
        parts = [frame.select_dtypes("number").to_numpy(np.float64).ravel() for frame in (result.summary,
                                                                                         result.by_group)]
        return np.concatenate(parts).tolist()
    return [float(result)]


def worker() -> None:
    """Serve the parent: a line {"size": ..., "row": i, "calls": k} gets back the best seconds of ``k``
    calls (the mean of a batch for a per-call row) and, the first time, the row's numbers."""
    import warnings

    sys.path.insert(0, str(BENCHMARKS))
    warnings.simplefilter("ignore")
    made: dict[int, object] = {}
    for line in sys.stdin:
        ask = json.loads(line)
        if ask.get("describe"):  # numba's target in this worker (--other-env NUMBA_CPU_NAME=...)
            from numba.core import config
            from numba.core.registry import cpu_target

            print(json.dumps({"cpu_name": config.CPU_NAME, "cpu_features": config.CPU_FEATURES,
                              "magic_tuple": list(cpu_target.target_context.codegen().magic_tuple()),
                              "cache_dir": os.environ.get("NUMBA_CACHE_DIR")}), flush=True)
            continue
        name, kind, spec = rows(SIZES[ask["size"]])[ask["row"]]
        answer: dict = {}
        if ask["row"] not in made:
            call = made[ask["row"]] = _calls(kind, spec)
            answer["numbers"] = _numbers(call())  # the warm-up call (compiles what this input needs)
            begin = time.perf_counter()
            call()
            answer["batch"] = max(1, min(1000, int(0.1 / max(time.perf_counter() - begin, 1e-6))))
        call = made[ask["row"]]
        batch = ask.get("batch", 1) if name.endswith("per call") else 1
        clock = time.process_time if ask.get("clock") == "cpu" else time.perf_counter
        best = math.inf
        for _ in range(ask["calls"]):
            begin = clock()
            for _ in range(batch):
                call()
            best = min(best, (clock() - begin) / batch)
        answer["seconds"] = best
        print(json.dumps(answer), flush=True)


# ------------------------------------------------------------------------------------------------------------
# The parent


class _Side:
    def __init__(self, checkout: Path, extra: dict | None = None):
        self.checkout = checkout
        environment = {**os.environ, "PYTHONPATH": os.pathsep.join([str(checkout), os.environ.get("PYTHONPATH", "")]),
                       # compiled kernels on both sides (no plain-Python small calls while nothing is compiled)
                       "FAIRMEDFM_FAST_INTERPRET": "never", **(extra or {})}
        self.process = subprocess.Popen([sys.executable, __file__, "--worker"], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, text=True, env=environment, cwd=checkout)

    def ask(self, **question) -> dict:
        self.process.stdin.write(json.dumps(question) + "\n")
        self.process.stdin.flush()
        line = self.process.stdout.readline()
        if not line:
            raise RuntimeError(f"the worker of {self.checkout} stopped (see its error above)")
        return json.loads(line)

    def close(self) -> None:
        self.process.stdin.close()
        self.process.wait()


def _agree(first: list[float], second: list[float]) -> bool:
    return len(first) == len(second) and all(
        (a != a and b != b) or abs(a - b) <= 1e-12 * max(1.0, abs(a)) for a, b in zip(first, second))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("other", nargs="?", type=Path, help="the other checkout (the baseline)")
    parser.add_argument("--preset", choices=tuple(SIZES), default="full", help="input sizes (as compare.py's)")
    parser.add_argument("--quick", action="store_true", help="--preset quick: a few minutes on 2 cores")
    parser.add_argument("--rounds", type=int, default=None, help="turns per row and side (default 5, quick 3)")
    parser.add_argument("--calls", type=int, default=3, help="calls per turn (the turn's best counts)")
    parser.add_argument("--rows", default="", help="only rows whose name contains this text")
    parser.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                        help="wall time, or the worker's CPU seconds (all its threads: steadier on a loaded machine)")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    parser.add_argument("--other-env", action="append", default=[], metavar="KEY=VALUE",
                        help="set this in the other worker only (repeatable); both workers then get their own "
                             "temporary NUMBA_CACHE_DIR")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    options = parser.parse_args(argv)
    if options.worker:
        worker()
        return 0
    if options.other is None or not (options.other / "fairmedfm_fast" / "__init__.py").is_file():
        parser.error("pass the other checkout: a folder holding fairmedfm_fast/ (and kernels/)")
    size = "quick" if options.quick else options.preset
    rounds = options.rounds or (5 if size == "full" else 3)
    chosen = [i for i, (name, _, _) in enumerate(rows(SIZES[size])) if options.rows in name]
    extra: list[dict] = [{}, {}]
    if options.other_env:
        if not all("=" in item for item in options.other_env):
            parser.error("--other-env takes KEY=VALUE")
        caches = [tempfile.TemporaryDirectory(prefix=f"compare_revisions-{side}-") for side in ("this", "other")]
        extra = [{"NUMBA_CACHE_DIR": caches[0].name},
                 {"NUMBA_CACHE_DIR": caches[1].name, **dict(item.split("=", 1) for item in options.other_env)}]
    this, other = _Side(ROOT, extra[0]), _Side(options.other.resolve(), extra[1])
    figures, slower = [], 0
    print(f"this: {ROOT}\nother: {options.other.resolve()}"
          + (f" with {' '.join(options.other_env)}" if options.other_env else "")
          + f"\npreset {size}, {rounds} rounds of {options.calls} calls ({options.clock} time); "
          f"load average {os.getloadavg()[0]:.1f} at the start")
    for label, side in (("this", this), ("other", other)):
        target = side.ask(describe=True)
        triple, cpu, features = target["magic_tuple"]
        enabled = sum(1 for flag in features.split(",") if flag.startswith("+"))
        print(f"{label:>5} numba: CPU_NAME={target['cpu_name']!r} CPU_FEATURES={target['cpu_features']!r} "
              f"target=({triple}, {cpu}, {enabled} features on) NUMBA_CACHE_DIR={target['cache_dir']}")
    print()
    print(f"{'row':<62} {'this':>10} {'other':>10} {'this/other':>10}")
    try:
        for i in chosen:
            name = rows(SIZES[size])[i][0]
            first = [this.ask(size=size, row=i, calls=1), other.ask(size=size, row=i, calls=1)]
            batch = min(first[0].get("batch", 1), first[1].get("batch", 1))
            best = [math.inf, math.inf]  # the first turns warm up (and size the per-call batches)
            sides = (this, other)
            for turn in range(rounds):
                order = (0, 1) if turn % 2 else (1, 0)  # ABBA: after the warm-up's A, B
                for j in order:
                    answer = sides[j].ask(size=size, row=i, calls=options.calls, batch=batch, clock=options.clock)
                    best[j] = min(best[j], answer["seconds"])
            ratio = best[0] / best[1]
            agree = _agree(first[0]["numbers"], first[1]["numbers"])
            flag = " SLOWER" if ratio > 1.05 else ""
            slower += bool(flag)
            print(f"{name:<62} {best[0] * 1e3:>8.2f}ms {best[1] * 1e3:>8.2f}ms {ratio:>10.3f}{flag}"
                  + ("" if agree else "  NUMBERS DIFFER"), flush=True)
            figures.append({"row": name, "this": best[0], "other": best[1], "ratio": ratio, "agree": agree})
    finally:
        this.close()
        other.close()
    print(f"\nload average {os.getloadavg()[0]:.1f} at the end; {slower} of {len(figures)} rows more than 5% slower")
    if options.json:
        options.json.write_text(json.dumps({"preset": size, "rounds": rounds, "clock": options.clock, "rows": figures},
                                           indent=1))
    return 1 if slower or not all(f["agree"] for f in figures) else 0


if __name__ == "__main__":
    sys.exit(main())
