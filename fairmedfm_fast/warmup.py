"""``fairmedfm-fast warmup``: compile the kernel signatures the API and the command line reach.

Numba compiles a kernel for each combination of argument types the first time it meets it, and
caches the machine code on disk (see ``kernels/_config.py`` for where). An installed wheel ships
these compiled (``fairmedfm_fast/_build.py``); where that cache does not apply (another CPU or
numba than the build's, a wheel built with ``FAIRMEDFM_FAST_SKIP_COMPILE=1``), or in a source
checkout, ``fairmedfm-fast warmup`` compiles them once, for example at image build time::

    RUN pip install . && fairmedfm-fast warmup

It compiles the one list of signatures, ``kernels/_signatures.py`` (the build step's list too), in
parallel processes (processes that compile the same kernel take turns to write its cache index),
and reports how many were compiled or loaded and where the cache is.

The list is recorded from the *workloads* below (``python -m fairmedfm_fast.warmup --record [NAME ...]``
adds what they reach to it):
each drives the public API (and the command line) on tiny inputs along one path, with every input
dtype the API hands to the kernels (float32 and float64 scores; int8, int16 and int32 group codes;
with and without weights; read-only arrays; every mask dtype against itself and the usual
prediction dtypes against every other). A new kernel, or a new argument type, needs a workload that
reaches it and a new recording; ``tests/test_signatures.py`` fails until then.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
import warnings
from collections.abc import Callable

KERNEL_MODULES = ("_slots", "_statistics", "sorting", "sweeps", "ranking", "calibration", "curves", "resampling", "bootstrap",
                  "segmentation", "surface", "voxels", "precision", "rank_sums", "coding", "delong",
                  "records")


def _optional_metrics() -> list[str]:
    """Every opt-in classification metric (evaluate's metrics=): their kernels compile here too."""
    from ._metric_registry import OPTIONAL_NAMES

    return list(OPTIONAL_NAMES)

# Every dtype a mask may reach the kernels in (booleans are counted as uint8, float16 as float32).
MASK_DTYPES = ("bool", "uint8", "int8", "uint16", "int16", "uint32", "int32", "uint64", "int64", "float32",
               "float64")
_SMALL, _LARGE = (4, 4, 4), (48, 48, 24)  # end to end in one block; one volume above the 32 kB block limit


def _data(n: int = 400, n_groups: int = 3, seed: int = 0):
    import numpy as np

    rng = np.random.default_rng(seed)
    y = (rng.random(n) < 0.4).astype(np.int64)
    y[:2] = 0, 1
    p = np.clip(0.35 * y + 0.65 * rng.random(n), 0, 1)
    groups = np.array([f"g{i}" for i in range(n_groups)])[np.arange(n) % n_groups]
    return y, p, groups, rng


def _read_only(array):
    array = array.copy()
    array.flags.writeable = False
    return array


def _classification(dtype: str, n_groups: int) -> Callable[[], None]:
    """evaluate and every one-number function with ``dtype`` scores and ``n_groups`` groups (the
    group-code dtype), with and without weights, writable and read-only, plus resampling, a fixed
    threshold and the figures' curve kernels. Above 32767 groups (int32 codes) only the calls that
    differ in argument types, as the Python side of 33,000 groups is slow."""

    def work():
        import numpy as np

        import fairmedfm_fast as fm

        y, p, groups, rng = _data(max(400, 2 * n_groups), n_groups)
        y[: 2 * n_groups] = np.tile([0, 1], n_groups)  # every group has both labels
        groups[: 2 * n_groups] = np.repeat(groups[:n_groups], 2)
        scores = p.astype(dtype)
        sex = rng.choice(["F", "M"], len(y))
        weights = rng.random(len(y)) + 0.5
        many = n_groups > 32767
        for s in (scores,) if many else (scores, _read_only(scores)):
            for w in (None, weights):
                report = fm.evaluate(y, s, {"g": groups, "sex": sex}, sample_weight=w, metrics=_optional_metrics())
                fm.evaluate(y, s, {"g": groups}, sample_weight=w, threshold=0.4)
                for name in ("auc_gap",) if many else ONE_NUMBER:
                    getattr(fm, name)(y, s, sensitive_features=groups, sample_weight=w)
                if not many:  # the figures of 33,000 groups are slow on the Python side
                    _figures(report, "sex")
        if not many:
            fm.evaluate(y, scores, {"g": groups, "sex": sex}, n_boot=2, n_permutations=2, random_state=0,
                        metrics=_optional_metrics())
            fm.evaluate(y, scores, {"g": groups}, n_boot=2, random_state=0)  # kernels.bootstrap
            fm.evaluate(y, scores, {"g": groups, "sex": sex}, intersectional=True)
            fm.evaluate(y, scores, {"g": groups, "sex": sex}, interval="analytic")  # kernels.delong

    return work


ONE_NUMBER = ("auc_gap", "worst_group_auc", "accuracy_gap", "bce_gap", "ece_gap", "equal_opportunity_difference",
              "equalized_odds_score")


def _figures(report, attribute: str) -> None:
    """The ROC and reliability figures (their curve kernels), when matplotlib is installed."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return
    for kind in ("roc", "reliability"):
        plt.close(report.plot(kind, attributes=attribute))


def _legacy_metrics() -> None:
    """``fairmedfm_fast.metrics`` (the fairmedfm functions) and the deprecated dict functions."""
    import numpy as np

    import fairmedfm_fast as fm
    from fairmedfm_fast import metrics

    y, p, groups, _ = _data()
    for scores in (p, p.astype(np.float32)):
        metrics.find_threshold(scores, y)
        metrics.binary_cross_entropy(scores, y)
        for variant in ("abs", "squared", "rmse"):
            metrics.expected_calibration_error(scores, y, metric_variant=variant)
        metrics.binary_classification_report(scores, y)
        metrics.evaluate_binary(scores, y, groups)
        fm.classification_fairness(scores, y, groups)


def _segmentation_scores() -> None:
    """evaluate_segmentation and the one-number Dice functions from Dice scores, with resampling."""
    import fairmedfm_fast as fm

    _, dice, groups, rng = _data()
    fm.evaluate_segmentation({"g": groups}, dice=dice)
    fm.evaluate_segmentation({"g": groups}, dice=dice, n_boot=2, n_permutations=2, random_state=0)
    for name in ("dice_gap", "worst_group_dice", "dice_std", "dice_skewness", "equity_scaled_dice"):
        getattr(fm, name)(dice, sensitive_features=groups)
    fm.segmentation_fairness(dice, groups)


def _surface_distances() -> None:
    """evaluate_segmentation with the surface metrics (HD95, HD, ASSD, NSD) on small 2-D and 3-D masks,
    with resampling."""
    import numpy as np

    import fairmedfm_fast as fm

    rng = np.random.default_rng(0)
    for shape in ((3, 12, 12), (3, 8, 8, 8)):
        true = rng.random(shape) < 0.4
        pred = true ^ (rng.random(shape) < 0.1)
        fm.evaluate_segmentation({"g": ["a", "b", "a"]}, pred_masks=pred, true_masks=true,
                                 metrics=["dice", "hd95", "hd", "assd", "nsd"], nsd_tolerance=1.0,
                                 n_boot=2, n_permutations=2, random_state=0)


def _voxel_maps() -> None:
    """evaluate_voxels on float32, float64, float16 and uint8 maps, in one window and in several."""
    import numpy as np

    import fairmedfm_fast as fm

    rng = np.random.default_rng(0)
    masks = rng.random((4, 16, 16)) < 0.3
    groups = {"g": ["a", "b", "a", "b"]}
    for dtype in ("float32", "float64", "float16"):
        maps = (0.5 * rng.random((4, 16, 16)) + 0.4 * masks).astype(dtype)
        fm.evaluate_voxels(maps, masks, groups)
    fm.evaluate_voxels((255 * rng.random((4, 16, 16))).astype(np.uint8), masks, groups, max_memory=2000)


def _masks(pred_dtype: str, true_dtypes: tuple[str, ...]) -> Callable[[], None]:
    """Dice from ``pred_dtype`` masks against masks of ``true_dtypes``: small ones (one block), a large
    one (its own kernel call; read-only too, as memory-mapped .npy files are, when the dtypes are
    the same), with and without ``label``; label maps per label."""

    def work():
        import numpy as np

        from fairmedfm_fast.segmentation import dice_per_label, dice_scores

        rng = np.random.default_rng(0)

        def mask(dtype, shape, probability=False):
            if probability:
                return rng.random(shape).astype(dtype)
            return (rng.random(shape) < 0.3).astype(dtype)

        maps = [False, True] if np.dtype(pred_dtype).kind == "f" else [False]
        for true_dtype in true_dtypes:
            for probability in maps:
                for shape in (_SMALL, _LARGE):
                    pred, true = mask(pred_dtype, shape, probability), mask(true_dtype, shape)
                    for label in (None, 1):
                        dice_scores([pred, pred], [true, true], label=label, n_jobs=1)
                        if true_dtype == pred_dtype or true_dtype == "uint8":
                            dice_scores([_read_only(pred)], [_read_only(true)], label=label, n_jobs=1)
            if np.dtype(pred_dtype).kind in "iu" and np.dtype(true_dtype).kind in "iu":
                dice_per_label(mask(pred_dtype, _SMALL) * 2, mask(true_dtype, _SMALL))

    return work


# Mask dtype pairs (prediction, ground truth) warmed: every dtype against itself, and the usual
# predictions (booleans, uint8, probability maps) against every dtype. Other pairs compile on first use.
_PREDICTIONS = ("bool", "uint8", "float32", "float64")
_MASK_PAIRS = {pred: MASK_DTYPES if pred in _PREDICTIONS else (pred,) for pred in MASK_DTYPES}


def _mask_files() -> None:
    """Masks from files: .npy (memory-mapped, read-only), and .nii.gz and .png when their readers are
    installed; also the stacked (n, ...) array path."""
    import numpy as np

    import fairmedfm_fast as fm

    rng = np.random.default_rng(0)
    with tempfile.TemporaryDirectory(prefix="fairmedfm_fast_warmup_") as folder:
        paths = {"pred": [], "true": []}
        for i in range(2):
            for role in paths:
                path = os.path.join(folder, f"{role}{i}.npy")
                np.save(path, (rng.random(_LARGE) < 0.3).astype(np.uint8))
                paths[role].append(path)
        fm.evaluate_segmentation({"g": ["a", "b"]}, pred_masks=paths["pred"], true_masks=paths["true"])
    stack = (rng.random((3, *_SMALL)) < 0.3).astype(np.uint8)
    fm.evaluate_segmentation({"g": ["a", "b", "a"]}, pred_masks=stack, true_masks=stack)


def _command_line() -> None:
    """``fairmedfm-fast score`` on CSV and Parquet tables (scores reach the kernels as Arrow arrays), in
    child processes: the cache on disk is shared, and this module stays below the command line (so
    ``--record`` does not see the signatures of these runs; ``tests/_first_call.py`` runs ``score``
    in its own process and ``tests/test_signatures.py`` checks them)."""
    import subprocess
    import sys

    import numpy as np
    import pandas as pd

    y, p, groups, rng = _data()
    with tempfile.TemporaryDirectory(prefix="fairmedfm_fast_warmup_") as folder:
        table = pd.DataFrame({"label": y, "prob": p, "sex": groups, "dice": p})
        csv, parquet = os.path.join(folder, "p.csv"), os.path.join(folder, "p.parquet")
        table.to_csv(csv, index=False)
        table.assign(prob=p.astype(np.float32)).to_parquet(parquet)
        runs = [[csv, "--task", "cls"], [parquet, "--task", "cls"], [csv, "--task", "seg"],
                [csv, "--task", "cls", "--bootstrap", "2", "--permutations", "2"]]
        # The child imports this very package (installed or a checkout), whatever its working folder.
        here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [here, os.environ.get("PYTHONPATH")])),
               "FAIRMEDFM_FAST_INTERPRET": "never"}  # compile, even for these small tables
        for arguments in runs:
            done = subprocess.run([sys.executable, "-m", "fairmedfm_fast", "score", *arguments], capture_output=True,
                                  text=True, cwd=folder, env=env)
            if done.returncode != 0:
                raise RuntimeError(f"fairmedfm-fast score {' '.join(arguments)}: {done.stderr.strip()}")


def _dask() -> None:
    """``fairmedfm_fast.dask`` on a small in-memory Dask frame, when dask is installed."""
    try:
        import dask
        import dask.dataframe as dd
    except ImportError:
        return
    import numpy as np
    import pandas as pd

    from fairmedfm_fast import dask as fmd

    y, p, groups, _ = _data()
    with dask.config.set(scheduler="synchronous"):
        for scores in (p, p.astype(np.float32)):
            frame = dd.from_pandas(pd.DataFrame({"y": y, "p": scores, "g": groups}), npartitions=2)
            fmd.evaluate(frame, label="y", score="p", sensitive="g", metrics=_optional_metrics(), interval="analytic")


def _large_inputs() -> None:
    """The paths of large inputs: auc_gap without a sort (``rank_sums``), the sort by 64-bit words,
    and the coding of large categorical and Arrow string columns; float64 and float32 scores."""
    import numpy as np
    import pandas as pd

    import fairmedfm_fast as fm

    y, p, groups, rng = _data(70_000)
    attributes = pd.DataFrame({"site": pd.Series(groups, dtype="category"),
                               "sex": pd.Series(rng.choice(["F", "M"], len(y)), dtype="string[pyarrow]")})
    for scores in (p, p.astype(np.float32)):
        fm.auc_gap(y, scores, sensitive_features=attributes["site"])
        fm.evaluate(y, scores, attributes)


WORKLOADS: dict[str, Callable[[], None]] = {
    **{f"classification, {dtype} scores, {n} groups": _classification(dtype, n)
       for dtype in ("float64", "float32") for n in (3, 200, 33_000)},
    "large inputs": _large_inputs,
    "fairmedfm_fast.metrics": _legacy_metrics,
    "segmentation from Dice scores": _segmentation_scores,
    **{f"Dice of {pred} masks": _masks(pred, trues) for pred, trues in _MASK_PAIRS.items()},
    "masks from files": _mask_files,
    "surface distances": _surface_distances,
    "voxel maps": _voxel_maps,
    "command line": _command_line,
    "fairmedfm_fast.dask": _dask,
}


def kernels() -> dict[str, object]:
    """Every compiled kernel of ``fairmedfm_fast.kernels`` (not the helpers inlined into them), by
    ``module.name``."""
    import importlib

    found = {}
    for module_name in KERNEL_MODULES:
        module = importlib.import_module(f"fairmedfm_fast.kernels.{module_name}")
        for name, value in vars(module).items():
            options = getattr(value, "targetoptions", None)
            if options is None or value.py_func.__module__ != module.__name__ or options.get("inline") == "always":
                continue
            found[f"{module_name}.{name}"] = value
    return found


def warmup(jobs: int | None = None, out=None, names: list[str] | None = None, workloads: bool = False) -> int:
    """Compile the listed signatures (of all kernels, or of the kernels ``names``, ``module.name``) in
    ``jobs`` processes (default: one per core); with ``workloads``, also run every workload (the
    signatures of rarer dtypes that the list leaves out). Print what was compiled and where the cache
    is. Returns the exit status: 1 when no cache folder is writable or a workload failed, else 0."""
    out = sys.stdout if out is None else out
    from .kernels import _signatures
    from .kernels._config import cache_location

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
    from .kernels import _config

    _config.interpreting["enabled"] = False


def _run_one(name: str) -> str | None:
    """Run one workload in this process; its error, or None."""
    os.environ.setdefault("MPLBACKEND", "Agg")
    _compiling()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            WORKLOADS[name]()
        except Exception as error:  # noqa: BLE001 - reported, and the other workloads still run
            return f"{type(error).__name__}: {error}"
    return None


def _run_workloads(jobs: int | None, out) -> int:
    """Run every workload in ``jobs`` processes (their kernels save into the cache); the failures."""
    from concurrent.futures import ProcessPoolExecutor

    names = list(WORKLOADS)
    jobs = max(1, min(jobs or os.cpu_count() or 1, len(names)))
    print(f"running {len(names)} workloads in {jobs} processes ...", file=out, flush=True)
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        errors = dict(zip(names, pool.map(_run_one, names)))
    for name, error in errors.items():
        if error:
            print(f"workload {name!r} failed: {error}", file=out)
    return sum(1 for error in errors.values() if error)


def _signatures_reached(names: list[str]) -> dict[str, list[tuple]]:
    """Run the named workloads in this process; the argument types each kernel was called with."""
    os.environ.setdefault("MPLBACKEND", "Agg")
    _compiling()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name in names:
            WORKLOADS[name]()
    return {key: list(k.overloads) for key, k in kernels().items()}


def record(jobs: int | None = None, out=None, names: list[str] | None = None) -> int:
    """Run the workloads (all, or those ``names``; in ``jobs`` processes) and add the argument types
    the kernels met to the signature list of ``kernels/_signatures.py`` (a maintainer's command)."""
    out = sys.stdout if out is None else out
    from .kernels import _signatures

    names = list(WORKLOADS) if names is None else names
    jobs = max(1, min(jobs or os.cpu_count() or 1, len(names)))
    if jobs > 1:
        from concurrent.futures import ProcessPoolExecutor

        with ProcessPoolExecutor(max_workers=jobs) as pool:
            results = list(pool.map(_signatures_reached, [[name] for name in names]))
    else:
        results = [_signatures_reached(names)]
    found: dict[str, set] = {name: set(signatures) for name, signatures in _signatures.SIGNATURES.items()}
    for result in results:
        for key, signatures in result.items():
            found.setdefault(key, set()).update(signatures)
    path = _signatures.__file__
    with open(path, encoding="utf-8") as handle:
        text = handle.read()
    begin = text.index("# --- signatures (generated) ---\n") + len("# --- signatures (generated) ---\n")
    end = text.index("# --- end of signatures ---")
    block = _signatures.render({key: sorted(value, key=str) for key, value in found.items() if value})
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text[:begin] + block + "\n" + text[end:])
    print(f"{sum(map(len, found.values()))} signatures of {sum(1 for v in found.values() if v)} kernels "
          f"written to {path}", file=out)
    return 0


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``fairmedfm-fast warmup``."""
    parser.add_argument("--jobs", "-j", type=int, default=None, metavar="N",
                        help="compile in N processes (default: one per core)")
    parser.add_argument("--workloads", action="store_true",
                        help="also run the API on every input dtype, for the rarer signatures the list leaves out "
                             "(minutes)")


if __name__ == "__main__":  # python -m fairmedfm_fast.warmup --record: rewrite kernels/_signatures.py
    _parser = argparse.ArgumentParser(prog="python -m fairmedfm_fast.warmup")
    _parser.add_argument("--record", action="store_true", help="add what the workloads reach to the signature list")
    _parser.add_argument("names", nargs="*", help="the workloads to record (default: all)")
    add_arguments(_parser)
    _options = _parser.parse_args()
    if _options.record:
        sys.exit(record(_options.jobs, names=[name for name in _options.names] or None))
    sys.exit(warmup(_options.jobs, workloads=_options.workloads))
