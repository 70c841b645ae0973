"""Voxel-level fairness of 10^9 scores: evaluate_voxels in memory and streamed, beside scikit-learn.

python benchmarks/scripts/voxels_billion.py memory [N_MAPS] [MAX_MEMORY]   # maps in memory (default 4000, 6GB)
python benchmarks/scripts/voxels_billion.py stream [N_MAPS] [MAX_MEMORY]   # re-iterable over the maps (2GB)
python benchmarks/scripts/voxels_billion.py sklearn [N_VOXELS]             # roc_auc_score on one group (1e8)
python benchmarks/scripts/voxels_billion.py check [N_MAPS]                 # small: equals evaluate on flat voxels

Maps are 512 x 512 float32 scores in [0, 1] (a quarter of the voxels positive, scores shifted up by
0.3 there) with three attributes per image (sex, 4 age groups, 5 sites). Run each mode in a fresh
process: it prints wall times and the peak resident memory above the inputs (getrusage high-water
mark minus the resident memory once the inputs exist).
"""
import os
import resource
import sys
import time

import numpy as np

SHAPE = (512, 512)


def rss_mib():
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * resource.getpagesize() / 2**20


def peak_mib():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def streaming_pass(scores, truth):
    """Seconds of one Numba pass that reads every score and label byte (a lower bound)."""
    from numba import njit

    @njit(nogil=True)
    def total(bits, labels):
        out = np.uint64(0)
        for i in range(bits.shape[0]):
            out += np.uint64(bits[i]) + np.uint64(labels[i])
        return out

    bits, labels = scores.reshape(-1).view(np.uint32), truth.reshape(-1).view(np.uint8)
    total(bits[:8], labels[:8])
    start = time.perf_counter()
    total(bits, labels)
    return time.perf_counter() - start


def make(n_maps, seed=0):
    """Scores, masks and attributes; generated in place, map by map, to keep memory at the inputs."""
    import pandas as pd

    rng = np.random.default_rng(seed)
    scores = np.empty((n_maps, *SHAPE), np.float32)
    truth = np.empty((n_maps, *SHAPE), np.bool_)
    for i in range(n_maps):
        rng.random(SHAPE, dtype=np.float32, out=scores[i])
        np.less(scores[i], 0.25, out=truth[i])
        rng.random(SHAPE, dtype=np.float32, out=scores[i])
        scores[i] *= 0.7
        scores[i] += 0.3 * truth[i]
    groups = pd.DataFrame({"sex": rng.choice(["F", "M"], n_maps), "age": rng.choice(["<40", "40-60", "60-80", ">=80"],
                           n_maps), "site": rng.choice(list("abcde"), n_maps)})
    return scores, truth, groups


class Maps:
    """A re-iterable of (score map, mask) pairs: each window of evaluate_voxels reads it again."""

    def __init__(self, scores, truth):
        self.scores, self.truth = scores, truth

    def __iter__(self):
        return zip(self.scores, self.truth)


def run(mode, n_maps, max_memory):
    import fairmedfm_fast as fm

    small, small_truth, small_groups = make(4, seed=1)
    fm.evaluate_voxels(small, small_truth, small_groups)  # loads the kernels
    start = time.perf_counter()
    scores, truth, groups = make(n_maps)
    made = time.perf_counter() - start
    base = rss_mib()
    print(f"{n_maps} maps of {SHAPE[0]}x{SHAPE[1]} ({scores.size / 1e9:.3f}e9 voxels) made in {made:.1f} s; "
          f"inputs resident {base:.0f} MiB")
    source = (scores, truth) if mode == "memory" else (Maps(scores, truth), None)
    load = os.getloadavg()
    start, cpu = time.perf_counter(), time.process_time()
    report = fm.evaluate_voxels(*source, groups, max_memory=max_memory)
    took, cpu = time.perf_counter() - start, time.process_time() - cpu
    print(f"evaluate_voxels {mode} max_memory={max_memory}: {took:.1f} s ({cpu:.1f} s CPU on all threads), "
          f"load average before/after {load[0]:.1f}/{os.getloadavg()[0]:.1f}, windows "
          f"{report.metadata['windows']}, "
          f"peak above inputs {peak_mib() - base:.0f} MiB (one map: {scores[0].nbytes / 2**20:.0f} MiB)")
    print(report.summary[["overall-auc", "auc-gap", "ece-gap", "eod"]].to_string())
    print(f"afterwards, a streaming Numba pass over the same score and label bytes: "
          f"{streaming_pass(scores, truth):.2f} s")
    start, cpu = time.perf_counter(), time.process_time()
    np.sort(scores[: max(1, n_maps // 10)].reshape(-1))
    print(f"afterwards, np.sort of a tenth of the scores (lower bound, x10): {time.perf_counter() - start:.1f} s "
          f"({time.process_time() - cpu:.1f} s CPU)")


def run_sklearn(n_voxels):
    from sklearn.metrics import roc_auc_score

    rng = np.random.default_rng(0)
    truth = rng.random(n_voxels, dtype=np.float32) < 0.25
    scores = 0.7 * rng.random(n_voxels, dtype=np.float32) + 0.3 * truth
    base = rss_mib()
    start, cpu = time.perf_counter(), time.process_time()
    auc = roc_auc_score(truth, scores)
    took, cpu = time.perf_counter() - start, time.process_time() - cpu
    print(f"sklearn roc_auc_score on {n_voxels:.0e} voxels: {took:.1f} s ({cpu:.1f} s CPU) (AUC {auc:.6f}), "
          f"peak above inputs {peak_mib() - base:.0f} MiB")
    start, cpu = time.perf_counter(), time.process_time()
    np.sort(scores)
    print(f"np.sort of the same scores: {time.perf_counter() - start:.1f} s ({time.process_time() - cpu:.1f} s CPU)")


def check(n_maps):
    import warnings

    import fairmedfm_fast as fm

    scores, truth, groups = make(n_maps)
    rows = np.repeat(np.arange(n_maps), scores[0].size)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        flat = fm.evaluate(truth.reshape(-1), scores.reshape(-1), groups.iloc[rows].reset_index(drop=True))
    for max_memory in (None, "1MB"):
        report = fm.evaluate_voxels(scores, truth, groups, max_memory=max_memory)
        gap = (report.by_group.drop(columns="skipped") - flat.by_group.drop(columns="skipped")).abs().max().max()
        print(f"max |evaluate_voxels - evaluate| over by_group, {report.metadata['windows']} windows: {gap:.2e}")


if __name__ == "__main__":
    mode = sys.argv[1] if len(sys.argv) > 1 else "memory"
    if mode == "sklearn":
        run_sklearn(int(float(sys.argv[2])) if len(sys.argv) > 2 else 10**8)
    elif mode == "check":
        check(int(sys.argv[2]) if len(sys.argv) > 2 else 8)
    else:
        n_maps = int(sys.argv[2]) if len(sys.argv) > 2 else 4000
        max_memory = sys.argv[3] if len(sys.argv) > 3 else ("6GB" if mode == "memory" else "2GB")
        run(mode, n_maps, max_memory)
