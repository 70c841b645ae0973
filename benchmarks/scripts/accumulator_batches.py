"""Issue 27 benchmark: FairnessAccumulator over validation batches, side by side in one process.

    python benchmarks/scripts/accumulator_batches.py speed [BATCH=2000] [N_BATCHES=100] [REPEATS=3]
    python benchmarks/scripts/accumulator_batches.py bf16 [N_BATCHES=1000] [BATCH=20000] [--torchmetrics]

``speed``: float32 scores and 2 attributes (sex: 2 text values, site: 4 integers; 8 cells). Total
``update`` time + ``result()`` beside keeping every batch, concatenating and one ``evaluate``
(interleaved, best of REPEATS), then the peak of traced memory (tracemalloc: NumPy reports its
buffers) of each way over the whole loop, with the batches made inside the loop in both.
``bf16``: bfloat16 tensor scores over N_BATCHES x BATCH samples with the same 8 cells: the
accumulator's table rows and pickled state, with 2 and 32 cells beside it for how the state grows
with the cells; with ``--torchmetrics``, torchmetrics' exact ``BinaryAUROC(thresholds=None)`` per
group (6 metrics: one per group of each attribute) on the same batches, time and traced peak.
"""
import pickle
import sys
import time
import tracemalloc
import warnings

import numpy as np

import fairmedfm_fast as fm

warnings.simplefilter("ignore")
args = [a for a in sys.argv[1:] if not a.startswith("--")]
mode = args[0] if args else "speed"


def batch(rng, size, n_sites=4, dtype=np.float32):
    y = rng.integers(0, 2, size)
    scores = (0.7 * rng.random(size) + 0.3 * y).astype(dtype)
    return y, scores, {"sex": rng.choice(np.array(["F", "M"]), size), "site": rng.integers(0, n_sites, size)}


def accumulate(size, n_batches):
    rng = np.random.default_rng(0)
    acc = fm.FairnessAccumulator()
    for _ in range(n_batches):
        acc.update(*batch(rng, size))
    return acc.result(), acc


def concatenate(size, n_batches):
    rng = np.random.default_rng(0)
    kept = [batch(rng, size) for _ in range(n_batches)]
    y = np.concatenate([b[0] for b in kept])
    scores = np.concatenate([b[1] for b in kept])
    groups = {name: np.concatenate([b[2][name] for b in kept]) for name in ("sex", "site")}
    return fm.evaluate(y, scores, groups), (y, scores, groups)


def traced_peak(function, *arguments):
    tracemalloc.start()
    value = function(*arguments)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak, value


if mode == "speed":
    size = int(float(args[1])) if len(args) > 1 else 2000
    n_batches = int(args[2]) if len(args) > 2 else 100
    repeats = int(args[3]) if len(args) > 3 else 3
    accumulate(size, 3), concatenate(size, 3)  # warm the JIT
    best = {"accumulator": np.inf, "concatenate + evaluate": np.inf}
    for _ in range(repeats):
        for name, function in (("accumulator", accumulate), ("concatenate + evaluate", concatenate)):
            start = time.perf_counter()
            function(size, n_batches)
            best[name] = min(best[name], time.perf_counter() - start)
    (got, acc), (want, arrays) = accumulate(size, n_batches), concatenate(size, n_batches)
    same = np.allclose(got.summary.to_numpy(float), want.summary.to_numpy(float), rtol=1e-12, atol=1e-12)
    print(f"{n_batches} batches x {size:,} float32 samples, 2 attributes (8 cells); report equal: {same}")
    for name, seconds in best.items():
        print(f"  {name}: {seconds * 1e3:.1f} ms (best of {repeats})")
    print(f"  ratio accumulator / (concatenate + evaluate): {best['accumulator'] / best['concatenate + evaluate']:.2f}")
    peak_acc, (_, acc) = traced_peak(accumulate, size, n_batches)
    peak_cat, (_, arrays) = traced_peak(concatenate, size, n_batches)
    kept = sum(a.nbytes for a in (arrays[0], arrays[1], *arrays[2].values()))
    state = len(pickle.dumps(acc))
    print(f"  traced peak: accumulator {peak_acc / 2**20:.1f} MiB, concatenate + evaluate {peak_cat / 2**20:.1f} MiB "
          f"(ratio {peak_acc / peak_cat:.2f}); the kept arrays alone {kept / 2**20:.1f} MiB, the accumulator's "
          f"pickled state {state / 2**20:.1f} MiB")
elif mode == "bf16":
    import torch

    n_batches = int(float(args[1])) if len(args) > 1 else 1000
    size = int(float(args[2])) if len(args) > 2 else 20000
    rng = np.random.default_rng(1)
    tensors = []
    for _ in range(8):  # 8 distinct batches, cycled (making 1,000 batches would dominate the run)
        y, scores, groups = batch(rng, size, dtype=np.float32)
        tensors.append((torch.tensor(y), torch.tensor(scores).to(torch.bfloat16), groups))
    warm = fm.FairnessAccumulator()  # the JIT
    warm.update(tensors[0][0][:1000], tensors[0][1][:1000], {k: v[:1000] for k, v in tensors[0][2].items()})
    warm.result()

    def run_accumulator():
        acc = fm.FairnessAccumulator()
        largest = 0
        for k in range(n_batches):
            y, scores, groups = tensors[k % 8]
            acc.update(y, scores, groups)
            largest = max(largest, len(acc._scores) + acc._n_waiting)
        report = acc.result()
        return acc, report, largest

    start = time.perf_counter()
    peak, (acc, report, largest) = traced_peak(run_accumulator)
    seconds = time.perf_counter() - start
    state = len(pickle.dumps(acc))
    print(f"bfloat16 scores, {n_batches:,} batches x {size:,} = {n_batches * size:,} samples, 8 cells: "
          f"{seconds:.1f} s (traced), {seconds / n_batches * 1e3:.2f} ms per batch with result()")
    print(f"  table {len(acc._scores):,} rows (largest with waiting rows {largest:,}); pickled state "
          f"{state / 2**20:.2f} MiB; traced peak {peak / 2**20:.1f} MiB")
    for n_sites in (1, 4, 16, 64):  # 2 to 128 cells
        acc = fm.FairnessAccumulator()
        for k in range(min(n_batches, 100)):
            y, scores, groups = tensors[k % 8]
            acc.update(y, scores, {"sex": groups["sex"], "site": (groups["site"] * 7 + k) % n_sites})
        acc._flush()
        print(f"  {2 * n_sites} cells, {min(n_batches, 100)} batches: table {len(acc._scores):,} rows merged, "
              f"pickled {len(pickle.dumps(acc)) / 2**20:.2f} MiB")
    if "--torchmetrics" in sys.argv:
        from torchmetrics.classification import BinaryAUROC

        def run_torchmetrics():
            metrics = {(name, value): BinaryAUROC(thresholds=None) for name, values in
                       (("sex", ["F", "M"]), ("site", [0, 1, 2, 3])) for value in values}
            for k in range(n_batches):
                y, scores, groups = tensors[k % 8]
                for (name, value), metric in metrics.items():
                    mask = torch.from_numpy(groups[name] == value)
                    metric.update(scores[mask], y[mask])
            return {key: float(metric.compute()) for key, metric in metrics.items()}

        import resource

        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        start = time.perf_counter()
        peak_tm, aucs = traced_peak(run_torchmetrics)
        seconds_tm = time.perf_counter() - start
        grown = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
        ours = report.by_group["auc"]
        diff = max(abs(aucs[key] - ours.loc[(key[0], str(key[1]))]) for key in aucs)
        print(f"  torchmetrics BinaryAUROC(thresholds=None) x 6 groups: {seconds_tm:.1f} s (traced), "
              f"traced peak {peak_tm / 2**20:.1f} MiB, and the process's peak RSS grew {grown:.0f} MiB over "
              "all before it (torch's tensors are not traced); "
              f"largest AUC difference {diff:.2g}; time ratio {seconds_tm / seconds:.2f}")
