"""``fairmedfm-fast warmup``: compile the kernel signatures the API and the command line reach.

Numba compiles a kernel for each combination of argument types the first time it meets it, and
caches the machine code on disk (see ``kernels/_config.py`` for where). A fresh environment pays
seconds of compilation on its first calls; ``fairmedfm-fast warmup`` pays them once, for example
at image build time::

    RUN pip install . && fairmedfm-fast warmup

Signatures are not listed by hand: each *workload* below drives the public API (and the command
line) on tiny inputs along one path, with every input dtype the API hands to the kernels (float32
and float64 scores; int8, int16 and int32 group codes; with and without weights; read-only
arrays; every mask dtype against itself and the usual prediction dtypes against every other).
Workloads run in parallel processes (processes that compile the same kernel take turns to write its
cache index, see ``kernels/_config.py``), and report which signatures they compiled or loaded. A kernel
that no workload reaches is listed as such (the full warmup test in ``tests/test_warmup.py``
fails on it): a new kernel needs a workload that calls the public function using it.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
import warnings
from collections.abc import Callable

KERNEL_MODULES = ("_slots", "sorting", "sweeps", "ranking", "calibration", "curves", "resampling", "bootstrap",
                  "segmentation", "surface", "voxels", "precision", "rank_sums", "coding")


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
                _figures(report, "sex")
        if not many:
            fm.evaluate(y, scores, {"g": groups, "sex": sex}, n_boot=2, n_permutations=2, random_state=0,
                        metrics=_optional_metrics())
            fm.evaluate(y, scores, {"g": groups}, n_boot=2, random_state=0)  # kernels.bootstrap
            fm.evaluate(y, scores, {"g": groups, "sex": sex}, intersectional=True)

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
    child processes: the cache on disk is shared, and this module stays below the command line."""
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
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [here, os.environ.get("PYTHONPATH")]))}
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
            fmd.evaluate(frame, label="y", score="p", sensitive="g", metrics=_optional_metrics())


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


def _run(names: list[str]) -> tuple[dict[str, tuple[set[str], int, int, str | None]], dict[str, str]]:
    """Run the named workloads in this process. Per kernel: (its signatures, how many were loaded from
    the cache, how many compiled, the cache folder); and the workloads that failed, with their error."""
    os.environ.setdefault("MPLBACKEND", "Agg")
    from .kernels._config import cache_location

    failed = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name in names:
            try:
                WORKLOADS[name]()
            except Exception as error:  # noqa: BLE001 - reported, and the other workloads still run
                failed[name] = f"{type(error).__name__}: {error}"
    found = {key: ({str(signature) for signature in k.signatures}, sum(k.stats.cache_hits.values()),
                   sum(k.stats.cache_misses.values()), cache_location(k)) for key, k in kernels().items()}
    return found, failed


def warmup(jobs: int | None = None, out=None, names: list[str] | None = None) -> int:
    """Run the workloads (all, or those ``names``) in ``jobs`` processes (default: one per core), so
    that their kernel signatures are in the cache; print what was compiled and where the cache is.
    Returns the exit status: 1 when no cache folder is writable or a workload failed, else 0."""
    out = sys.stdout if out is None else out
    names = list(WORKLOADS) if names is None else names
    jobs = max(1, min(jobs or os.cpu_count() or 1, len(names)))
    begin = time.perf_counter()
    if jobs > 1:
        from concurrent.futures import ProcessPoolExecutor

        print(f"compiling in {jobs} processes ({len(names)} workloads) ...", file=out, flush=True)
        with ProcessPoolExecutor(max_workers=jobs) as pool:
            results = list(pool.map(_run, [[name] for name in names]))
    else:
        results = [_run(names)]
    seconds = time.perf_counter() - begin
    found, failed = {}, {}
    for kernels_seen, failures in results:  # merge the processes' findings
        failed.update(failures)
        for key, (signatures, loaded, compiled, folder) in kernels_seen.items():
            known = found.setdefault(key, [set(), 0, 0, None])
            known[0] |= signatures
            known[1] += loaded
            known[2] += compiled
            known[3] = known[3] or folder
    width = max(map(len, found))
    for key, (signatures, _, _, _) in found.items():
        print(f"  {key:<{width}}  {len(signatures):3d} signatures", file=out)
    total = sum(len(value[0]) for value in found.values())
    loaded, compiled = (sum(value[i] for value in found.values()) for i in (1, 2))
    print(f"{total} signatures of {len(found)} kernels in {seconds:.1f} s ({compiled} compiled now, {loaded} "
          "loaded from the cache)", file=out)
    for folder in sorted({value[3] for value in found.values() if value[3]}):
        print(f"cache: {folder}", file=out)
    unreached = [key for key, value in found.items() if not value[0]]
    if unreached:
        print(f"not reached by any workload here: {', '.join(unreached)}", file=out)
    for name, error in failed.items():
        print(f"workload {name!r} failed: {error}", file=out)
    if any(value[0] and value[3] is None for value in found.values()):
        print("no writable cache folder: the kernels compiled in memory and nothing was kept; set "
              "NUMBA_CACHE_DIR to a writable folder", file=out)
        return 1
    return 1 if failed else 0


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``fairmedfm-fast warmup``."""
    parser.add_argument("--jobs", "-j", type=int, default=None, metavar="N",
                        help="compile in N processes (default: one per core)")
