"""Every public path that reaches the kernels, on both sides of every size where the Python layer
changes path: what ``python -m fairmedfm_fast.warmup --record`` records into the signature list
(``kernels/_signatures.py``), what ``fairmedfm-fast warmup --workloads`` runs, and what
``tests/test_signatures.py`` runs against the installed wheel, failing on any compile.

A workload is a name and a function of no arguments. *Sized* workloads run once per size of
:func:`sizes` (every threshold of :func:`size_thresholds`, one sample below and one above, and a
small call); the others run once. Each uses every argument type the API hands the kernels on its
path: float32 and float64 scores; group codes of up to 127 and up to 32,767 groups (more, in int32
codes, is an extra workload that the list leaves out); weights or none; labels that are not uint8; 1, 4 and 8 groupings (the carrying sort's payload widths, and
more rows than it carries); read-only, memory-mapped and non-contiguous scores.

A workload that runs a child process (the command line) returns what the child saw: the kernel
signatures it held and what it compiled (:func:`held_signatures`), since the caller's numba sees
neither.
"""
from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable

import numpy as np

ONE_NUMBER = ("auc_gap", "worst_group_auc", "accuracy_gap", "bce_gap", "ece_gap", "equal_opportunity_difference",
              "equalized_odds_score")
#: Every dtype a mask may reach the kernels in (booleans are counted as uint8, float16 as float32).
MASK_DTYPES = ("bool", "uint8", "int8", "uint16", "int16", "uint32", "int32", "uint64", "int64", "float32",
               "float64")
_SMALL, _LARGE = (4, 4, 4), (48, 48, 24)  # end to end in one block; one volume above the 32 kB block limit
#: Groups of the int32 codes' path; only sizes with room for two samples a group take it.
MANY_GROUPS = 33_000


def size_thresholds() -> dict[str, int]:
    """Where the Python layer (or a kernel's caller) changes path by the number of samples."""
    from ._backends import accumulator
    from ._engine import sorting as engine
    from ._inputs import groups, value_codes
    from .kernels import _plain, rank_sums, sorting

    return {
        "NumPy sort below, radix sort from (_engine.sorting.RADIX_FROM)": engine.RADIX_FROM,
        "plain-Python first calls up to (kernels._plain.INTERPRET_BELOW)": _plain.INTERPRET_BELOW,
        "group codes counted by a kernel from (_inputs.value_codes.TABLE_CODES_BELOW)": value_codes.TABLE_CODES_BELOW,
        "accumulator compacts from (_backends.accumulator.COMPACT_FROM)": accumulator.COMPACT_FROM,
        "sort pieces (kernels.sorting.PIECE, kernels.rank_sums.PIECE)": max(sorting.PIECE, rank_sums.PIECE),
        "threads from (_engine.sorting.THREADED_FROM, _inputs.groups.PARALLEL_FROM)": max(engine.THREADED_FROM,
                                                                                         groups.PARALLEL_FROM),
    }


def sizes() -> list[int]:
    """The sample counts the sized workloads run at: 1,000 and each threshold's two sides."""
    found = {1000}
    for threshold in size_thresholds().values():
        found.update((threshold - 1, threshold + 1))
    return sorted(found)


@functools.cache
def _data(n: int):
    """Labels (int64, both classes), probabilities, three text attributes and weights for ``n`` samples."""
    rng = np.random.default_rng(n)
    y = (rng.random(n) < 0.4).astype(np.int64)
    y[:2] = 0, 1
    p = np.clip(0.35 * y + 0.65 * rng.random(n), 0, 1)
    text = {"site": np.array(["a", "b", "c"])[np.arange(n) % 3], "sex": rng.choice(["F", "M"], n),
            "age": rng.choice(["<40", "40-60", ">=60", "?"], n)}
    weights = rng.random(n) + 0.5
    return y, p, text, weights


@functools.cache
def _groups_of(n: int, n_groups: int) -> np.ndarray:
    """``n_groups`` named groups, in turn (integers of more than 20 values would need bins)."""
    return np.array([f"g{i}" for i in range(n_groups)])[np.arange(n) % n_groups]


#: Groups of the int8 and int16 group codes (int32 codes, more than 32,767 groups: :func:`_many_groups`).
GROUP_COUNTS = (3, 200)


def _read_only(array: np.ndarray) -> np.ndarray:
    array = array.copy()
    array.flags.writeable = False
    return array


def _optional_metrics() -> list[str]:
    """Every opt-in classification metric (evaluate's metrics=): their kernels are on the list too."""
    from ._registry.metrics import OPTIONAL_NAMES

    return list(OPTIONAL_NAMES)


def _evaluate(n: int) -> None:
    """evaluate and the one-number functions: both score dtypes, int8 and int16 group codes, with and
    without weights, at the plain and at a fixed threshold (which needs no sort), with every opt-in metric."""

    y, p, text, weights = _data(n)
    for dtype in (np.float64, np.float32):
        scores = p.astype(dtype)
        for n_groups in GROUP_COUNTS:
            _evaluate_groups(y, scores, _groups_of(n, n_groups), text["sex"], weights, ONE_NUMBER)


def _evaluate_groups(y, scores, groups, sex, weights, one_number: tuple[str, ...]) -> None:
    import fairmedfm_fast as fm

    for w in (None, weights):
        fm.evaluate(y, scores, {"g": groups, "sex": sex}, sample_weight=w, metrics=_optional_metrics())
        fm.evaluate(y, scores, {"g": groups}, sample_weight=w, threshold=0.4)
        for name in one_number:
            getattr(fm, name)(y, scores, sensitive_features=groups, sample_weight=w)
        fm.accuracy_gap(y, scores, sensitive_features=groups, sample_weight=w, threshold=0.4)  # unsorted
        fm.equalized_odds_score(y, scores, sensitive_features=groups, sample_weight=w, threshold=0.4)


def _many_groups(n: int) -> None:
    """evaluate and the one-number functions with more than 32,767 groups (int32 group codes), where
    each group can hold two samples (:func:`workloads` runs it only there): not on the signature list
    (``warmup --workloads`` compiles it)."""
    y, p, text, weights = _data(n)
    for dtype in (np.float64, np.float32):
        _evaluate_groups(y, p.astype(dtype), _groups_of(n, MANY_GROUPS), text["sex"], weights,
                         ("auc_gap", "ece_gap"))


def _inputs(n: int) -> None:
    """Scores and labels as users hold them, and the groupings that change the sort's payload: read-only,
    memory-mapped and non-contiguous scores, labels that are booleans or text, text attributes as
    NumPy and Arrow strings and categoricals, 4 and 8 groupings, intersections and bins."""
    import pandas as pd

    import fairmedfm_fast as fm

    y, p, text, weights = _data(n)
    with tempfile.TemporaryDirectory(prefix="fairmedfm_fast_workload_") as folder:
        for dtype in (np.float64, np.float32):
            scores = p.astype(dtype)
            path = os.path.join(folder, f"scores_{np.dtype(dtype).name}.npy")
            np.save(path, scores)
            mapped = np.load(path, mmap_mode="r")
            columns = np.stack([1 - scores, scores], axis=1)
            for s in (_read_only(scores), mapped, columns[:, 1]):
                fm.evaluate(y, s, text)
                for name in ONE_NUMBER:
                    getattr(fm, name)(y, s, sensitive_features=text["site"])
            fm.evaluate(y, columns, text)  # a (n, 2) array of class probabilities
            fm.evaluate(y.astype(bool), scores, text)
            fm.evaluate(np.where(y == 1, "sick", "well"), scores, text, pos_label="sick")
            fm.evaluate(y.astype(np.float64), scores, text, sample_weight=weights)
            frame = pd.DataFrame({name: pd.Series(values, dtype="string[pyarrow]") for name, values in text.items()})
            frame["cat"] = pd.Series(text["age"], dtype="category")
            late = np.where(np.arange(n) < n - 10, "early", "late")  # a category first seen at the end
            frame["late"] = pd.Series(late, dtype="category")
            frame["num"] = np.arange(n) % 90
            fm.evaluate(y, scores, frame, bins={"num": [40, 60]})
            fm.evaluate(y, scores, frame, bins={"num": 4}, intersectional=True)
            four = {**text, "extra": _groups_of(n, 5)}
            eight = {**four, **{f"more{i}": _groups_of(n, 2 + i) for i in range(4)}}
            for attributes in (four, eight):
                fm.evaluate(y, scores, attributes)
                fm.evaluate(y, scores, attributes, sample_weight=weights)
            fm.evaluate(y, scores, {"site": text["site"], "sex": text["sex"]}, intersectional=True)
            fm.evaluate(y, -np.log(1 / np.clip(scores, 1e-6, 1 - 1e-6) - 1), text)  # logits
            _text_forms(y, scores, text)


def _text_forms(y, scores, text) -> None:
    """Text attributes in every form the coders read apart: NumPy bytes of 1-, 4- and 8-byte words, object
    arrays, lists, pyarrow strings (32-bit offsets), dictionaries and string views, polars strings and
    categoricals."""
    import pyarrow as pa

    import fairmedfm_fast as fm

    fm.evaluate(y, scores, {f"w{width}": np.char.encode(np.char.ljust(text["sex"], width, "x"), "ascii")
                            for width in (1, 4, 8)})
    fm.evaluate(y, scores, {name: values.astype(object) for name, values in text.items()})
    fm.evaluate(y, scores, {name: values.tolist() for name, values in text.items()})
    fm.evaluate(y, scores, pa.table(text))
    fm.evaluate(y, scores, pa.table({name: pa.array(values).dictionary_encode() for name, values in text.items()}))
    fm.evaluate(y, scores, {name: pa.array(values, pa.string_view()) for name, values in text.items()})
    # more than 127 values: int32 codes from every text kernel; and, in pieces of a long column, each piece
    # of at most 127 values but more in all (int8 codes remapped into int16 ones)
    n = len(y)
    many = _groups_of(n, 200)
    halves = np.char.add(np.where(np.arange(n) < n // 2, "a", "b"), _groups_of(n, 100))
    fm.evaluate(y, scores, {"many": many, "halves": halves})
    fm.evaluate(y, scores, pa.table({"many": many, "long": pa.array(many, pa.large_string())}))
    fm.evaluate(y, scores, {f"w{width}": np.char.encode(np.char.ljust(many, width, "x"), "ascii") for width in (5, 8)})
    try:
        import polars as pl
    except ImportError:
        return
    frame = pl.DataFrame({name: values.tolist() for name, values in {**text, "many": many}.items()})
    fm.evaluate(y, scores, frame)
    fm.evaluate(y, scores, frame.with_columns(pl.all().cast(pl.Categorical)))


def _resampling(n: int, n_groups: int = 3) -> None:
    """Bootstrap, permutation tests and analytic intervals: both score dtypes, weights or none (int8
    codes; int16 codes, more than 127 groups, in :func:`_resampling_many`)."""
    import fairmedfm_fast as fm

    y, p, text, weights = _data(n)
    attributes = {"g": _groups_of(n, n_groups), "sex": text["sex"]}
    for dtype in (np.float64, np.float32):
        scores = p.astype(dtype)
        for w in (None, weights):
            fm.evaluate(y, scores, attributes, sample_weight=w, n_boot=2, n_permutations=2, random_state=0,
                        metrics=_optional_metrics())
        fm.evaluate(y, scores, attributes, interval="analytic")  # counts samples: no weights
        fm.evaluate(y, scores, attributes, n_boot=2, random_state=0, stratify=None)
        fm.evaluate(y, scores, attributes, n_boot=2, random_state=0, intersectional=True, threshold=0.4)


def _resampling_many(n: int) -> None:
    """:func:`_resampling` with 200 groups (int16 codes): not on the signature list, whose build time it
    would lengthen by about a sixth (``warmup --workloads`` compiles it)."""
    _resampling(n, 200)


def _tasks(n: int) -> None:
    """evaluate_tasks (several models on one label, several labels) and the pairwise frames."""
    import fairmedfm_fast as fm

    y, p, text, weights = _data(n)
    for dtype in (np.float64, np.float32):
        models = {name: np.clip(p + 0.1 * i * (p - 0.5), 0, 1).astype(dtype) for i, name in enumerate("abc")}
        report = fm.evaluate_tasks(y, models, text)
        fm.evaluate_tasks({"t1": y, "t2": 1 - y}, {"t1": models["a"], "t2": models["b"]}, text,
                          sample_weight=weights)
        report.pairwise()
        fm.evaluate(y, models["a"], text).pairwise()


def _accumulator(n: int) -> None:
    """FairnessAccumulator: batches, merge and result, in both score dtypes, with and without weights."""
    import fairmedfm_fast as fm

    y, p, text, weights = _data(n)
    half = n // 2
    for dtype in (np.float64, np.float32):
        scores = p.astype(dtype)
        for w in (None, weights):
            parts = []
            for begin, end in ((0, half), (half, n)):
                part = fm.FairnessAccumulator()
                batch = max(1, (end - begin) // 4)
                for start in range(begin, end, batch):
                    stop = min(end, start + batch)
                    part.update(y[start:stop], scores[start:stop], {k: v[start:stop] for k, v in text.items()},
                                sample_weight=None if w is None else w[start:stop])
                parts.append(part)
            merged = parts[0].merge(parts[1])
            merged.result()
            merged.result(threshold=0.4, n_boot=2, random_state=0)
            if w is None:
                merged.result(interval="analytic")
        # two attributes of 200 groups (int16 codes; their 40,401 combinations take int32 keys)
        many = fm.FairnessAccumulator()
        for start in range(0, n, max(1, n // 4)):
            stop = min(n, start + max(1, n // 4))
            many.update(y[start:stop], scores[start:stop], {"a": _groups_of(n, 200)[start:stop],
                                                            "b": _groups_of(n, 199)[start:stop]})
        many.result()
        # int8 codes of 100, 60 and 5 groups: the keyed sort's payloads take 17 bits (uint32)
        wide, columns = fm.FairnessAccumulator(), {f"a{k}": _groups_of(n, size) for k, size in enumerate((100, 60, 5))}
        for start in range(0, n, max(1, n // 4)):
            stop = min(n, start + max(1, n // 4))
            wide.update(y[start:stop], scores[start:stop], {k: v[start:stop] for k, v in columns.items()})
        wide.result()
    # batches of Arrow text (string and large_string offsets), keyed by the tables of the groups known
    import pyarrow as pa

    for text_type in (pa.string(), pa.large_string()):
        for journal in (False, True):
            arrow = fm.FairnessAccumulator()
            if journal:
                arrow.keep_journal()  # (the torch metric's: each batch keyed as it comes)
            for start in range(0, n, max(1, n // 4)):
                stop = min(n, start + max(1, n // 4))
                arrow.update(y[start:stop], p[start:stop].astype(np.float32),
                             {k: pa.array(v[start:stop], text_type) for k, v in text.items()})
            arrow.result()


def _segmentation_scores(n: int) -> None:
    """evaluate_segmentation and the one-number Dice functions from Dice scores, with resampling."""
    import fairmedfm_fast as fm

    _, dice, text, _ = _data(n)
    fm.evaluate_segmentation(text, dice=dice)
    fm.evaluate_segmentation(text, dice=dice, n_boot=2, n_permutations=2, random_state=0)
    for name in ("dice_gap", "worst_group_dice", "dice_std", "dice_skewness", "equity_scaled_dice"):
        getattr(fm, name)(dice, sensitive_features=text["site"])
    fm.segmentation_fairness(dice, text["site"])


def _legacy_metrics(n: int) -> None:
    """``fairmedfm_fast.metrics`` (the fairmedfm functions) and the deprecated dict functions."""
    import fairmedfm_fast as fm
    from fairmedfm_fast import metrics

    y, p, text, _ = _data(n)
    for scores in (p, p.astype(np.float32)):
        metrics.find_threshold(scores, y)
        metrics.binary_cross_entropy(scores, y)
        for variant in ("abs", "squared", "rmse"):
            metrics.expected_calibration_error(scores, y, metric_variant=variant)
        metrics.binary_classification_report(scores, y)
        metrics.evaluate_binary(scores, y, text["site"])
        fm.classification_fairness(scores, y, text["site"])


def _figures(n: int) -> None:
    """The ROC and reliability figures (their curve kernels), when matplotlib is installed."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return
    import fairmedfm_fast as fm

    y, p, text, weights = _data(n)
    for dtype in (np.float64, np.float32):
        for w in (None, weights):
            report = fm.evaluate(y, p.astype(dtype), {"sex": text["sex"]}, sample_weight=w)
            for kind in ("roc", "reliability"):
                plt.close(report.plot(kind, attributes="sex"))


def record_compiles() -> list[list]:
    """Count this process's compilations from now on: the list that numba's ``numba:compile`` event
    appends ``[module.name, [argument types]]`` to, one entry per function compiled (numba's own
    helpers included)."""
    from numba.core import event

    compiled: list[list] = []

    class Listener(event.Listener):
        def on_start(self, ev):
            function = ev.data["dispatcher"].py_func
            compiled.append([f"{function.__module__.rsplit('.', 1)[-1]}.{function.__name__}",
                             [str(t) for t in ev.data["args"]]])

        def on_end(self, ev):
            pass

    event.register("numba:compile", Listener())
    return compiled


_CHILD = """
import contextlib, io, json, sys
from fairmedfm_fast import cli, _workloads
compiled = _workloads.record_compiles()
from fairmedfm_fast.kernels import _plain
_plain.interpreting["enabled"] = False
failed = []
for arguments in json.loads(sys.argv[1]):
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()) as errors:
        try:
            status = cli.main(arguments)
        except SystemExit as exit:
            status = exit.code
    if status not in (None, 0):
        failed.append([arguments, status, errors.getvalue()[-500:]])
print(json.dumps({"failed": failed, "held": _workloads.held_signatures(), "compiled": compiled}))
"""


def _command_line(n: int) -> dict:
    """``fairmedfm-fast score`` on CSV, Parquet (float32 scores) and Arrow-string tables, in child
    processes (the command line is above this module); what they held and compiled."""
    import pandas as pd

    y, p, text, _ = _data(n)
    held: dict[str, set] = {}
    compiled: list = []
    with tempfile.TemporaryDirectory(prefix="fairmedfm_fast_workload_") as folder:
        table = pd.DataFrame({"label": y, "prob": p, "dice": p, **text})
        csv, parquet, arrow = (os.path.join(folder, name) for name in ("p.csv", "p.parquet", "a.parquet"))
        table.to_csv(csv, index=False)
        table.assign(prob=p.astype(np.float32)).to_parquet(parquet)
        table.astype({name: "string[pyarrow]" for name in text}).to_parquet(arrow)
        cls = ["--task", "cls", "--label", "label", "--score", "prob"]
        runs = [["score", csv, *cls], ["score", parquet, *cls], ["score", arrow, *cls, "--intersectional"],
                ["score", csv, "--task", "seg", "--dice", "dice"],
                ["score", parquet, *cls, "--bootstrap", "2", "--permutations", "2"],
                ["score", csv, *cls, "--interval", "analytic"]]
        here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        environment = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [here, os.environ.get("PYTHONPATH")]))}
        done = subprocess.run([sys.executable, "-c", _CHILD, json.dumps(runs)], capture_output=True, text=True,
                              cwd=folder, env=environment, timeout=1800)
        if done.returncode != 0:
            raise RuntimeError(f"fairmedfm-fast score: {done.stderr.strip()[-1000:]}")
        seen = json.loads(done.stdout.strip().splitlines()[-1])
        if seen["failed"]:
            raise RuntimeError(f"fairmedfm-fast: {seen['failed']}")
        for name, signatures in seen["held"].items():
            held.setdefault(name, set()).update(map(tuple, signatures))
        compiled += seen["compiled"]
    return {"held": {name: sorted(s) for name, s in held.items()}, "compiled": compiled}


def _dask(n: int) -> None:
    """``fairmedfm_fast.dask`` on an in-memory Dask frame (synchronous scheduler), when dask is installed."""
    try:
        import dask
        import dask.dataframe as dd
    except ImportError:
        return
    import pandas as pd

    from fairmedfm_fast import dask as fmd

    y, p, text, _ = _data(n)
    with dask.config.set(scheduler="synchronous"):
        for scores in (p, p.astype(np.float32)):
            frame = dd.from_pandas(pd.DataFrame({"y": y, "p": scores, **text}), npartitions=2)
            fmd.evaluate(frame, label="y", score="p", sensitive=list(text), metrics=_optional_metrics(),
                         interval="analytic")
            fmd.evaluate(frame, label="y", score="p", sensitive=["site", "sex"], intersectional=True, threshold=0.4)
        frame = dd.from_pandas(pd.DataFrame({"dice": p, **text}), npartitions=2)
        fmd.evaluate_segmentation(frame, sensitive=list(text), dice="dice")


#: Run at every size of :func:`sizes`.
SIZED: dict[str, Callable[[int], object]] = {
    "evaluate and the one-number functions": _evaluate,
    "input forms and groupings": _inputs,
    "bootstrap, permutations, analytic intervals": _resampling,
    "evaluate_tasks and pairwise": _tasks,
    "FairnessAccumulator": _accumulator,
    "segmentation from Dice scores": _segmentation_scores,
    "fairmedfm_fast.metrics": _legacy_metrics,
    "figures": _figures,
    "command line": _command_line,
    "fairmedfm_fast.dask": _dask,
}


def _masks(pred_dtype: str, true_dtypes: tuple[str, ...]) -> Callable[[], None]:
    """Dice from ``pred_dtype`` masks against masks of ``true_dtypes``: small ones (one block), a large
    one (its own kernel call; read-only too, as memory-mapped .npy files are, when the dtypes are
    the same), with and without ``label``; label maps per label."""

    def work():
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


# Mask dtype pairs (prediction, ground truth): every dtype against itself, and the usual predictions
# (booleans, uint8, probability maps) against every dtype. Other pairs compile on first use.
_PREDICTIONS = ("bool", "uint8", "float32", "float64")
MASK_PAIRS = {pred: MASK_DTYPES if pred in _PREDICTIONS else (pred,) for pred in MASK_DTYPES}
#: Mask dtypes whose pairs the signature list leaves out (``warmup --workloads`` compiles them): rare in
#: mask files and arrays, and a fifth of the mask kernels' compile time.
RARE_MASK_DTYPES = ("int8", "uint32", "uint64")


def _mask_pairs(rare: bool) -> dict[str, tuple[str, ...]]:
    """The pairs of :data:`MASK_PAIRS` with (``rare``) or without a dtype of :data:`RARE_MASK_DTYPES`."""
    pairs = {}
    for pred, trues in MASK_PAIRS.items():
        if rare:
            chosen = trues if pred in RARE_MASK_DTYPES else tuple(t for t in trues if t in RARE_MASK_DTYPES)
        else:
            chosen = () if pred in RARE_MASK_DTYPES else tuple(t for t in trues if t not in RARE_MASK_DTYPES)
        if chosen:
            pairs[pred] = chosen
    return pairs


def _mask_files() -> None:
    """Masks from files: .npy (memory-mapped, read-only), and the stacked (n, ...) array path."""
    import fairmedfm_fast as fm

    rng = np.random.default_rng(0)
    with tempfile.TemporaryDirectory(prefix="fairmedfm_fast_workload_") as folder:
        paths = {"pred": [], "true": []}
        for i in range(2):
            for role in paths:
                path = os.path.join(folder, f"{role}{i}.npy")
                np.save(path, (rng.random(_LARGE) < 0.3).astype(np.uint8))
                paths[role].append(path)
        fm.evaluate_segmentation({"g": ["a", "b"]}, pred_masks=paths["pred"], true_masks=paths["true"])
        fm.evaluate_segmentation({"g": ["a", "b"]}, pred_masks=paths["pred"], true_masks=paths["true"],
                                 metrics=["dice", "hd95", "assd"])
    stack = (rng.random((3, *_SMALL)) < 0.3).astype(np.uint8)
    fm.evaluate_segmentation({"g": ["a", "b", "a"]}, pred_masks=stack, true_masks=stack)


def _surface_distances() -> None:
    """evaluate_segmentation with every surface metric on 2-D and 3-D masks, small and large (boolean,
    uint8 and probability predictions), with resampling."""
    import fairmedfm_fast as fm

    rng = np.random.default_rng(0)
    metrics = ["dice", "hd95", "hd", "assd", "nsd"]
    for shape in ((3, 12, 12), (3, 8, 8, 8), (2, 160, 160), (2, 64, 64, 64)):
        true = rng.random(shape) < 0.05
        true[(slice(None), *(slice(2, 5),) * (len(shape) - 1))] = True
        for pred in (true ^ (rng.random(shape) < 0.02), (true ^ (rng.random(shape) < 0.02)).astype(np.uint8),
                     np.where(true, 0.9, 0.1).astype(np.float32)):
            groups = {"g": ["a", "b", "a"][: shape[0]]}
            fm.evaluate_segmentation(groups, pred_masks=pred, true_masks=true, metrics=metrics, nsd_tolerance=1.0)
            fm.evaluate_segmentation(groups, pred_masks=pred, true_masks=true, metrics=["dice", "hd95"],
                                     spacing=(1.0,) * (len(shape) - 1), n_boot=2, n_permutations=2, random_state=0)
    empty = np.zeros((2, 8, 8, 8), bool)
    fm.evaluate_segmentation({"g": ["a", "b"]}, pred_masks=empty, true_masks=empty, metrics=metrics,
                             nsd_tolerance=1.0)


def _voxel_maps() -> None:
    """evaluate_voxels on float32, float64, float16 and uint8 maps: in memory (one window and several),
    streamed from an iterable, and from memory-mapped files; with an ROI and opt-in metrics."""
    import fairmedfm_fast as fm

    rng = np.random.default_rng(0)
    big = rng.random((4, 160, 160, 12), np.float32)  # over a million voxels: the sweep splits across threads
    fm.evaluate_voxels(big, big < 0.3, {"g": ["a", "b", "a", "b"]}, n_jobs=2)
    for shape in ((4, 16, 16), (4, 96, 96, 8)):
        masks = rng.random(shape) < 0.3
        groups = {"g": ["a", "b", "a", "b"]}
        for dtype in ("float32", "float64", "float16"):
            maps = (0.5 * rng.random(shape) + 0.4 * masks).astype(dtype)
            fm.evaluate_voxels(maps, masks, groups)
            fm.evaluate_voxels(maps, masks, groups, roi_masks=masks | (rng.random(shape) < 0.5),
                               metrics=["brier", "fpr"], threshold=0.4)
            fm.evaluate_voxels(maps, masks, groups, max_memory=2000)
            pairs = functools.partial(zip, maps, masks)  # a callable: each window reads it again
            fm.evaluate_voxels(pairs, None, groups)
            fm.evaluate_voxels(pairs, None, groups, max_memory=2000)
        uint8 = (255 * rng.random(shape)).astype(np.uint8)
        fm.evaluate_voxels(uint8, masks, groups, max_memory=2000)
        fm.evaluate_voxels(uint8, masks, groups)
        with tempfile.TemporaryDirectory(prefix="fairmedfm_fast_workload_") as folder:
            paths = {"maps": [], "masks": []}
            for i in range(shape[0]):
                for role, array in (("maps", (0.5 * rng.random(shape[1:])).astype(np.float32)),
                                    ("masks", masks[i].astype(np.uint8))):
                    path = os.path.join(folder, f"{role}{i}.npy")
                    np.save(path, array)
                    paths[role].append(path)
            fm.evaluate_voxels(paths["maps"], paths["masks"], groups)
            fm.evaluate_voxels(paths["maps"], paths["masks"], groups, max_memory=2000)


#: Run at every size by ``fairmedfm-fast warmup --workloads`` only: paths the signature list leaves out,
#: to keep the build step's compile time within bounds (docs/deployment.md names them).
EXTRA_SIZED: dict[str, Callable[[int], object]] = {
    "more than 32,767 groups": _many_groups,
    "resampling and analytic intervals, more than 127 groups": _resampling_many,
}

#: Run once by ``fairmedfm-fast warmup --workloads`` only (as :data:`EXTRA_SIZED`).
EXTRA_FIXED: dict[str, Callable[[], object]] = {
    f"Dice of {pred} masks against rare dtypes": _masks(pred, trues) for pred, trues in _mask_pairs(rare=True).items()}

#: Run once.
FIXED: dict[str, Callable[[], object]] = {
    **{f"Dice of {pred} masks": _masks(pred, trues) for pred, trues in _mask_pairs(rare=False).items()},
    "masks from files": _mask_files,
    "surface distances": _surface_distances,
    "voxel maps": _voxel_maps,
}


def workloads(extra: bool = False) -> dict[str, Callable[[], object]]:
    """Every workload of the signature list by name (``"NAME @ N"`` for the sized ones), ready to run;
    with ``extra``, also those it leaves out (:data:`EXTRA_SIZED`, :data:`EXTRA_FIXED`)."""
    found: dict[str, Callable[[], object]] = {}
    for n in sizes():
        for name, work in {**SIZED, **(EXTRA_SIZED if extra else {})}.items():
            if work is not _many_groups or n >= 2 * MANY_GROUPS:
                found[f"{name} @ {n:,}"] = functools.partial(work, n)
    found.update(FIXED)
    if extra:
        found.update(EXTRA_FIXED)
    return found


def kernels() -> dict[str, object]:
    """Every compiled kernel of ``fairmedfm_fast.kernels`` by ``module.name``: the modules are found by
    listing the package's folder, the kernels by their compile options (helpers inlined into their
    callers are left out: their code lives in their callers')."""
    import importlib
    import pkgutil

    from . import kernels as package

    found = {}
    for info in pkgutil.iter_modules(package.__path__):
        module = importlib.import_module(f"{package.__name__}.{info.name}")
        for name, value in vars(module).items():
            options = getattr(value, "targetoptions", None)
            if (options is None or not hasattr(value, "py_func") or value.py_func.__module__ != module.__name__
                    or options.get("inline") == "always"):
                continue
            found[f"{info.name}.{name}"] = value
    return found


def held_signatures() -> dict[str, list[list[str]]]:
    """The argument types every kernel holds in this process (compiled or loaded), spelled as in
    ``kernels/_signatures.py``."""
    from .kernels._signatures import spell

    return {name: [[spell(t) for t in signature] for signature in kernel.overloads]
            for name, kernel in kernels().items() if kernel.overloads}
