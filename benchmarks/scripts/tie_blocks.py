"""The kernels that walk tie blocks and slots, beside a streaming pass, and beside another checkout.

    python benchmarks/scripts/tie_blocks.py [SAMPLES] [TURNS] [OTHER_CHECKOUT]

On SAMPLES samples sorted by score (default 1,000,000), 1 and 3 groupings (2, 5 and 3 groups, 5%
missing in the first), scores with no ties and rounded to 4 and to 2 decimals: the best of TURNS
(default 9) alternating calls of ``ranking.rank_statistics`` (without and with weights),
``delong.placement_sums`` (each grouping's own overall slot, and a shared one),
``calibration.score_ranges`` and ``binned_calibration``, beside a Numba loop that sums the same
scores, labels and codes (a streaming pass over the same bytes, which no kernel can beat).

With OTHER_CHECKOUT (a source tree, e.g. ``git worktree add ../before <commit>``), its ``kernels/``
run too, imported as a second package from a copy in a temporary folder (compiled on first use),
their outputs checked equal to this checkout's, and each row prints this/other. Prints the load
average and NumPy's CPU features.
"""
import importlib
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("FAIRMEDFM_FAST_INTERPRET", "never")  # time compiled kernels, also on small inputs

import numba  # noqa: E402
import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


@numba.njit(nogil=True)
def stream(scores, labels, codes):
    """Every score, label and code read once and summed: the streaming bound."""
    total = 0.0
    for i in range(scores.shape[0]):
        total += scores[i] + labels[i]
        for k in range(codes.shape[0]):
            total += codes[k, i]
    return total


def kernel_modules(checkout=None):
    """``ranking``, ``delong`` and ``calibration`` of this checkout, or of ``checkout`` (a copy)."""
    if checkout is None:
        sys.path.insert(0, str(ROOT))
        package = "fairmedfm_fast.kernels"
    else:
        folder = tempfile.mkdtemp(prefix="tie_blocks_")
        shutil.copytree(Path(checkout) / "kernels", Path(folder) / "other_kernels",
                        ignore=shutil.ignore_patterns("__pycache__", "_compiled"))
        sys.path.insert(0, folder)
        package = "other_kernels"
    return [importlib.import_module(f"{package}.{name}") for name in ("ranking", "delong", "calibration")]


def inputs(n, groupings, ties, rng):
    scores = rng.random(n)
    if ties:
        scores = np.round(scores, ties)
    labels = (rng.random(n) < scores).astype(np.uint8)
    sizes = np.array([2, 5, 3][:groupings], np.int64)
    codes = np.stack([rng.integers(0, size, n) for size in sizes])
    if groupings > 1:
        codes[0, rng.random(n) < 0.05] = -1
    order = np.argsort(scores, kind="stable")
    weights = rng.integers(0, 4, n) * 0.5
    return (scores[order], labels[order], np.ascontiguousarray(codes[:, order]).astype(np.intp), sizes,
            weights[order])


def calls(modules, data):
    ranking, delong, calibration = modules
    scores, labels, codes, sizes, weights = data
    n = len(scores)
    complete = np.maximum(codes, 0)
    low_high = calibration.score_ranges(scores, labels, codes, sizes)
    edges = calibration.equal_width_edges(low_high[2], low_high[3], 10)
    return {"rank_statistics": lambda: ranking.rank_statistics(scores, labels, codes, sizes),
            "rank_statistics, weights": lambda: ranking.rank_statistics(scores, labels, codes, sizes, weights),
            "placement_sums": lambda: delong.placement_sums(scores, labels, codes, sizes, 0, n, False),
            "placement_sums, shared overall": lambda: delong.placement_sums(scores, labels, complete, sizes, 0, n,
                                                                            True),
            "score_ranges": lambda: calibration.score_ranges(scores, labels, codes, sizes),
            "binned_calibration": lambda: calibration.binned_calibration(scores, labels, codes, sizes, edges,
                                                                         False)}


def cpu_features():
    try:
        from numpy._core._multiarray_umath import __cpu_features__ as features
    except ImportError:  # pragma: no cover - older NumPy
        return "?"
    return "AVX512F (X86_V4)" if features.get("AVX512F") else ("AVX2 (X86_V3)" if features.get("AVX2") else "baseline")


def main(n, turns, other=None):
    sides = [kernel_modules()] + ([kernel_modules(other)] if other else [])
    rng = np.random.default_rng(1)
    print(f"{n:,} sorted samples, best of {turns} alternating turns; NumPy {cpu_features()}; "
          f"load average {os.getloadavg()[0]:.1f}")
    print(f"{'kernel':32s} {'groupings':>9s} {'ties':>10s} {'this':>10s} {'/stream':>8s}"
          + (f" {'other':>10s} {'this/other':>10s}" if other else ""))
    for groupings in (1, 3):
        for ties in (0, 4, 2):
            data = inputs(n, groupings, ties, rng)
            jobs = [calls(modules, data) for modules in sides]
            for name in ["stream", *jobs[0]]:
                functions = ([lambda data=data: stream(*data[:3])] if name == "stream"
                             else [side[name] for side in jobs])
                outputs = [function() for function in functions]  # compiles; then the sides must agree
                for out in outputs[1:]:
                    for mine, theirs in zip(outputs[0], out):
                        np.testing.assert_allclose(mine, theirs, rtol=1e-12, atol=0)
                best = [np.inf] * len(functions)
                for turn in range(turns):
                    for j in (range(len(functions)) if turn % 2 == 0 else reversed(range(len(functions)))):
                        start = time.perf_counter()
                        functions[j]()
                        best[j] = min(best[j], time.perf_counter() - start)
                if name == "stream":
                    bound_seconds = best[0]
                line = (f"{name:32s} {groupings:9d} {('none' if not ties else f'{ties} dec.'):>10s} "
                        f"{best[0] * 1e3:8.2f}ms {best[0] / bound_seconds:7.1f}x")
                if len(best) > 1:
                    line += f" {best[1] * 1e3:8.2f}ms {best[0] / best[1]:10.3f}"
                print(line, flush=True)
    print(f"load average {os.getloadavg()[0]:.1f} at the end")


if __name__ == "__main__":
    main(int(float(sys.argv[1])) if len(sys.argv) > 1 else 1_000_000, int(sys.argv[2]) if len(sys.argv) > 2 else 9,
         sys.argv[3] if len(sys.argv) > 3 else None)
