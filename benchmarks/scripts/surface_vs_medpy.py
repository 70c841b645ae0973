"""Issue 18 benchmark: surface distances side by side with medpy.

1. One pair of 256^3 ball-like masks in memory: HD95, ASSD and NSD together
   (``segmentation.surface_scores``, one thread) against medpy's ``hd95`` alone; the values agree.
2. 20 pairs of 128^3 masks from ``.nii.gz`` through ``evaluate_segmentation`` with Dice, HD95,
   ASSD and NSD, with 1 and with 2 threads (``FAIRMEDFM_FAST_N_JOBS``).

Usage: ``python benchmarks/scripts/surface_vs_medpy.py [SIDE] [N_FILES] [FILE_SIDE] [ROUNDS]`` (default 256 20
128 5). Part 1 times are the best of a few runs; part 2 runs 1 and 2 threads interleaved for ROUNDS rounds and
prints each round's ratio with the load average and CPU/wall, since other jobs on the machine depress ratios.
"""
import os
import sys
import tempfile
import time

import numpy as np

import fairmedfm_fast as fm
from fairmedfm_fast.segmentation import surface_scores


def balls(side: int, seed: int):
    """A ball of radius ~0.3 side and a shifted, squashed, speckled copy."""
    rng = np.random.default_rng(seed)
    c = side / 2
    z, y, x = np.ogrid[:side, :side, :side]
    r = 0.3 * side
    true = (z - c) ** 2 + (y - c) ** 2 + (x - c) ** 2 < r ** 2
    shift = rng.uniform(-0.02, 0.02, 3) * side
    pred = ((z - c - shift[0]) ** 2 / 1.1 + (y - c - shift[1]) ** 2 + (x - c - shift[2]) ** 2 / 0.9
            < (r * rng.uniform(0.95, 1.05)) ** 2)
    return pred, true


def best(function, repeat=3):
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        result = function()
        times.append(time.perf_counter() - start)
    return min(times), result


def main() -> None:
    side = int(sys.argv[1]) if len(sys.argv) > 1 else 256
    n_files = int(sys.argv[2]) if len(sys.argv) > 2 else 20
    file_side = int(sys.argv[3]) if len(sys.argv) > 3 else 128
    rounds = int(sys.argv[4]) if len(sys.argv) > 4 else 5
    from medpy.metric import binary as medpy

    print(f"load average before: {os.getloadavg()}")
    pred, true = balls(side, 0)
    spacing = (1.0, 0.8, 1.2)
    small_p, small_t = balls(32, 1)
    surface_scores([small_p], [small_t], metrics=["hd95", "assd", "nsd"], nsd_tolerance=2.0, n_jobs=1)  # warm JIT

    def ours():
        return surface_scores([pred], [true], metrics=["hd95", "assd", "nsd"], spacing=spacing, nsd_tolerance=2.0,
                              n_jobs=1)

    fast, values = best(ours, 5)
    slow, reference = best(lambda: medpy.hd95(pred, true, spacing), 1)
    print(f"{side}^3 pair: fairmedfm_fast HD95+ASSD+NSD, 1 thread: {fast:.3f} s; medpy hd95 alone: {slow:.2f} s; "
          f"ratio {slow / fast:.0f}x")
    print(f"  hd95 {values['hd95'][0]:.12f} vs medpy {reference:.12f}; assd {values['assd'][0]:.6f}, "
          f"nsd {values['nsd'][0]:.6f}")

    import nibabel

    with tempfile.TemporaryDirectory() as folder:
        preds, trues = [], []
        for i in range(n_files):
            p, t = balls(file_side, 10 + i)
            for mask, paths, name in ((p, preds, "pred"), (t, trues, "true")):
                path = os.path.join(folder, f"{name}{i}.nii.gz")
                image = nibabel.Nifti1Image(mask.astype(np.uint8), np.diag([0.8, 0.8, 2.5, 1.0]))
                nibabel.save(image, path)
                paths.append(path)
        groups = np.random.default_rng(0).choice(["F", "M"], n_files)

        def evaluate():
            return fm.evaluate_segmentation({"sex": groups}, pred_masks=preds, true_masks=trues,
                                            metrics=["dice", "hd95", "assd", "nsd"], nsd_tolerance=2.0)

        # 1 and 2 threads interleaved (order alternating), since other jobs on the machine come and go:
        # each round prints its ratio beside the load average and the process's CPU time per wall second
        for threads in ("1", "2"):
            os.environ["FAIRMEDFM_FAST_N_JOBS"] = threads
            evaluate()
        walls = {"1": [], "2": []}
        for r in range(rounds):
            line = []
            for threads in (("1", "2") if r % 2 == 0 else ("2", "1")):
                os.environ["FAIRMEDFM_FAST_N_JOBS"] = threads
                cpu, start = time.process_time(), time.perf_counter()
                report = evaluate()
                wall = time.perf_counter() - start
                walls[threads].append(wall)
                line.append(f"{threads}t {wall:.3f} s (cpu/wall {(time.process_time() - cpu) / wall:.2f})")
            print(f"  round {r}: {', '.join(sorted(line))}; ratio {walls['1'][-1] / walls['2'][-1]:.2f}x; "
                  f"load {os.getloadavg()[0]:.2f}")
        ratios = sorted(a / b for a, b in zip(walls["1"], walls["2"]))
        print(f"{n_files} pairs of {file_side}^3 .nii.gz, evaluate_segmentation (dice, hd95, assd, nsd): "
              f"best 1 thread {min(walls['1']):.2f} s, best 2 threads {min(walls['2']):.2f} s, ratio of bests "
              f"{min(walls['1']) / min(walls['2']):.2f}x, median round ratio {ratios[len(ratios) // 2]:.2f}x")
        print(report.summary.T.to_string())
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
