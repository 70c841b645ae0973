"""The training-loop metric's cost per step: ``FairnessMetric.update`` and ``compute()``, beside
torchmetrics' ``BinaryAUROC`` per group, and beside another checkout's ``FairnessMetric``.

    python benchmarks/scripts/torch_metric.py                          # this checkout
    python benchmarks/scripts/torch_metric.py --other ../before        # and another, turn about
    python benchmarks/scripts/torch_metric.py --samples 20000 --rounds 1   # seconds (the tests)

An epoch of ``--samples`` validation samples in batches of ``--batch`` (float32 probabilities as a
tensor, labels, two attributes of 2 and 3 groups as NumPy text arrays), run ``--rounds`` times per
checkout in worker processes that take turns (ABAB); each figure is the best round. ``update`` is the
mean time of one step; ``compute`` one call at the end of the epoch; the state's size is its pickle
(``torch.save`` of ``state_dict()`` with ``persistent(True)`` where the metric keeps its state in
torchmetrics states). Prints NumPy's SIMD level with the figures.
"""
from __future__ import annotations

import argparse
import io
import json
import os
import pickle
import subprocess
import sys
import time
from pathlib import Path


def _epoch(samples: int, batch: int, seed: int = 0):
    import numpy as np
    import torch

    rng = np.random.default_rng(seed)
    parts = []
    for _ in range(0, samples, batch):
        y = rng.integers(0, 2, batch)
        scores = torch.tensor(rng.random(batch) * 0.7 + 0.3 * y, dtype=torch.float32)
        parts.append((scores, torch.tensor(y), {"sex": rng.choice(["F", "M"], batch),
                                                "site": rng.choice(["a", "b", "c"], batch)}))
    return parts


def measure(samples: int, batch: int) -> dict[str, float]:
    """One round in this process: seconds per update, compute, and the state's bytes."""
    import torch

    from fairmedfm_fast.torch import FairnessMetric

    parts = _epoch(samples, batch)
    metric = FairnessMetric()
    metric.update(*parts[0])  # warm: kernels loaded, first-batch decisions made
    metric.compute()
    metric.reset()
    start = time.perf_counter()
    for part in parts:
        metric.update(*part)
    update = (time.perf_counter() - start) / len(parts)
    start = time.perf_counter()
    metric.compute()
    compute = time.perf_counter() - start
    if hasattr(metric, "persistent") and hasattr(metric, "header"):
        metric.persistent(True)
        buffer = io.BytesIO()
        torch.save(metric.state_dict(), buffer)
        size = len(buffer.getvalue())
    else:  # a metric that keeps its state outside torchmetrics': its pickle
        size = len(pickle.dumps(metric.accumulator))
    return {"update": update, "compute": compute, "state_bytes": size}


def auroc_per_group(samples: int, batch: int) -> dict[str, float]:
    """torchmetrics' exact AUROC, one metric per group of each attribute (5 metrics)."""
    import numpy as np
    import torch
    from torchmetrics.classification import BinaryAUROC

    parts = _epoch(samples, batch)
    metrics = {(name, group): BinaryAUROC(thresholds=None) for name, groups in (("sex", "FM"), ("site", "abc"))
               for group in groups}
    start = time.perf_counter()
    for scores, y, attrs in parts:
        for (name, group), metric in metrics.items():
            chosen = torch.from_numpy(np.asarray(attrs[name] == group))
            metric.update(scores[chosen], y[chosen])
    update = (time.perf_counter() - start) / len(parts)
    start = time.perf_counter()
    for metric in metrics.values():
        metric.compute()
    return {"update": update, "compute": time.perf_counter() - start, "state_bytes": float("nan")}


def _worker(checkout: str, samples: int, batch: int) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([checkout, os.environ.get("PYTHONPATH", "")])}
    code = (f"import json, sys; sys.path.insert(0, {str(Path(__file__).parent)!r}); import torch_metric; "
            f"print(json.dumps(torch_metric.measure({samples}, {batch})))")
    done = subprocess.run([sys.executable, "-c", code], env=env, cwd=checkout, capture_output=True, text=True,
                          check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=200_000)
    parser.add_argument("--batch", type=int, default=512)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--other", type=Path, help="another checkout, timed turn about with this one")
    args = parser.parse_args(argv)
    here = str(Path(__file__).resolve().parents[2])
    sides = {"this": here, **({"other": str(args.other.resolve())} if args.other else {})}
    best: dict[str, dict[str, float]] = {}
    for _ in range(args.rounds):
        for side, checkout in sides.items():
            figures = _worker(checkout, args.samples, args.batch)
            best[side] = {key: min(value, best.get(side, {}).get(key, value)) for key, value in figures.items()}
    best["BinaryAUROC x 5 groups"] = auroc_per_group(args.samples, args.batch)
    from numpy._core._multiarray_umath import __cpu_features__ as features

    level = "X86_V4 (AVX-512)" if features.get("AVX512_SKX") else "X86_V3 (AVX2)" if features.get("AVX2") else "below X86_V3"
    print(f"{args.samples:,} samples in batches of {args.batch}, best of {args.rounds}; NumPy SIMD {level}")
    print(f"{'':24} {'update (ms/step)':>17} {'compute (ms)':>13} {'state (bytes)':>14}")
    for side, figures in best.items():
        print(f"{side:24} {figures['update'] * 1e3:17.3f} {figures['compute'] * 1e3:13.1f} {figures['state_bytes']:14,.0f}")
    if "other" in best:
        print(f"this/other: update {best['this']['update'] / best['other']['update']:.2f}, "
              f"compute {best['this']['compute'] / best['other']['compute']:.2f}")


if __name__ == "__main__":
    main()
