"""Issue 40 benchmark: ``evaluate`` on the same attributes handed in every form a user may have, side
by side in one process; the accumulator against concatenating; the small calls.

    python benchmarks/scripts/input_forms.py [N=1e6] [ROUNDS=5] [SMALL_CALLS=300]

1. ``evaluate`` on N samples with 3 attributes (2, 5 and 4 groups) given as each form (pandas
   ``string[pyarrow]``, pyarrow Table, pandas categoricals, pyarrow dictionary columns, int8 codes,
   pandas default ``str``, polars ``Utf8`` / ``Categorical`` when installed, NumPy object, ``<U`` and
   ``S`` arrays, Python lists): best of ROUNDS, the forms taking turns; ms and the ratio to the
   fastest form; whether every form gave the same numbers. Beside them, NumPy's SIMD level and two
   floors: ``np.sort`` of the scores, and a streaming pass (a Numba sum of 64-bit words) over the
   bytes of the ``<U`` form's inputs (scores, labels and the three text buffers).
2. ``FairnessAccumulator`` over 100 batches of 2,000 and of 20,000 samples (N / 500 and N / 50 at
   other N) with 2 string attributes in a DataFrame (pandas' default ``str``): every ``update`` plus
   ``result()`` beside ``pd.concat`` of the batches and one ``evaluate``, the batches made before.
3. Small calls on 1,000 samples (NumPy ``<U`` attributes): ``evaluate`` with 3 attributes and
   ``auc_gap`` with one, the mean of SMALL_CALLS calls, best of ROUNDS.

Run it under two checkouts (``PYTHONPATH=/path/to/checkout``) back to back for a before/after.
"""
import os
import sys
import time
import warnings

import numba
import numpy as np
import pandas as pd
import pyarrow as pa

import fairmedfm_fast as fm

warnings.simplefilter("ignore")
args = [a for a in sys.argv[1:] if not a.startswith("--")]
N = int(float(args[0])) if args else 1_000_000
ROUNDS = int(args[1]) if len(args) > 1 else 5
SMALL_CALLS = int(args[2]) if len(args) > 2 else 300
VALUES = {"sex": ["F", "M"], "race": ["Asian", "Black", "Hispanic", "Other", "White"],
          "age": ["18-39", "40-59", "60-79", "80+"]}


def simd_level() -> str:
    try:
        from numpy._core._multiarray_umath import __cpu_dispatch__, __cpu_features__
    except ImportError:  # NumPy < 2
        return "unknown"
    have = [name for name in __cpu_dispatch__ if __cpu_features__.get(name)]
    top = next((name for name in ("AVX512_SPR", "AVX512_ICL", "AVX512_SKX", "AVX512F", "AVX2", "SSE42", "ASIMD")
                if name in have), "baseline")
    return f"{top} (dispatched: {' '.join(have) or 'none'})"


@numba.njit(nogil=True, cache=False)
def _word_sum(words):
    total = np.uint64(0)
    for i in range(words.shape[0]):
        total += words[i]
    return total


def streaming_pass(arrays) -> int:
    """A Numba sum of every 64-bit word of ``arrays`` (the bytes any coder must read at least once)."""
    total = 0
    for array in arrays:
        raw = np.ascontiguousarray(array).view(np.uint8)
        words = raw[:len(raw) // 8 * 8].view(np.uint64)
        total += int(_word_sum(words))
    return total


def data(n, seed=0):
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < 0.3).astype(np.int64)
    scores = np.clip(0.35 * y + 0.65 * rng.random(n), 0, 1)
    text = {name: rng.choice(values, n) for name, values in VALUES.items()}  # NumPy <U arrays
    return y, scores, text


def forms(text):
    """Each form of the same three attributes: name -> a zero-argument maker (made once, before timing)."""
    made = {
        "pandas string[pyarrow] columns": lambda: pd.DataFrame(
            {k: pd.array(v, dtype="string[pyarrow]") for k, v in text.items()}),
        "pyarrow Table": lambda: pa.table({k: pa.array(v) for k, v in text.items()}),
        "pandas categoricals": lambda: pd.DataFrame({k: pd.Categorical(v) for k, v in text.items()}),
        "pyarrow dictionary columns": lambda: pa.table({k: pa.array(v).dictionary_encode() for k, v in text.items()}),
        "dict of int8 codes": lambda: {k: np.unique(v, return_inverse=True)[1].astype(np.int8)
                                       for k, v in text.items()},
        "pandas default str columns": lambda: pd.DataFrame(dict(text)),
    }
    try:
        import polars as pl

        made["polars Utf8"] = lambda: pl.DataFrame({k: v.tolist() for k, v in text.items()})
        made["polars Categorical"] = lambda: pl.DataFrame({k: v.tolist() for k, v in text.items()}).with_columns(
            pl.all().cast(pl.Categorical))
    except ImportError:
        pass
    made.update({
        "dict of NumPy object arrays": lambda: {k: v.astype(object) for k, v in text.items()},
        "dict of NumPy <U arrays": lambda: dict(text),
        "dict of NumPy S arrays": lambda: {k: v.astype("S") for k, v in text.items()},
        "dict of Python lists": lambda: {k: v.tolist() for k, v in text.items()},
    })
    return {name: maker() for name, maker in made.items()}


#: The best CPU seconds (every thread of the process) of the last :func:`best_of`, beside its wall seconds:
#: steadier than wall time where other work shares the cores.
CPU: dict = {}


def best_of(functions, rounds):
    """Best wall seconds of each function, taking turns (best CPU seconds in :data:`CPU`)."""
    best = dict.fromkeys(functions, np.inf)
    CPU.clear()
    CPU.update(dict.fromkeys(functions, np.inf))
    for _ in range(rounds):
        for name, function in functions.items():
            start, cpu = time.perf_counter(), time.process_time()
            function()
            best[name] = min(best[name], time.perf_counter() - start)
            CPU[name] = min(CPU[name], time.process_time() - cpu)
    return best


def numbers(report):
    return report.summary.to_numpy(float), report.by_group.drop(columns="skipped", errors="ignore").to_numpy(float)


def table_of_forms():
    y, scores, text = data(N)
    made = forms(text)
    reports, failed = {}, {}
    for name, value in list(made.items()):  # warm (and compile)
        try:
            reports[name] = fm.evaluate(y, scores, value)
        except Exception as error:  # a form that this checkout cannot read
            failed[name] = f"{type(error).__name__}: {error}"[:120]
            del made[name]
    first = numbers(next(iter(reports.values())))
    same = all(all(np.array_equal(a, b, equal_nan=True) for a, b in zip(first, numbers(r))) for r in reports.values())
    calls = {name: (lambda value=value: fm.evaluate(y, scores, value)) for name, value in made.items()}
    best = best_of(calls, ROUNDS)
    cpu = dict(CPU)
    fastest, fastest_cpu = min(best.values()), min(cpu.values())
    print(f"evaluate, {N:,} samples, 3 attributes (2, 5, 4 groups), best of {ROUNDS} in one process; "
          f"NumPy SIMD {simd_level()}; {os.cpu_count()} CPUs")
    print("| attributes passed as | ms | vs fastest | CPU ms | vs fastest |\n|---|--:|--:|--:|--:|")
    for name, seconds in sorted(best.items(), key=lambda item: item[1]):
        print(f"| {name} | {seconds * 1e3:.1f} | {seconds / fastest:.2f} | {cpu[name] * 1e3:.1f} | "
              f"{cpu[name] / fastest_cpu:.2f} |")
    for name, error in failed.items():
        print(f"| {name} | failed: {error} | | | |")
    print(f"every form gave the same numbers: {same}")
    labels = y.astype(np.uint8)
    streaming_pass([labels])  # compiles the pass
    floors = best_of({"np.sort of the scores": lambda: np.sort(scores),
                      "streaming pass over the <U form's bytes": lambda: streaming_pass(
                          [scores, labels, *text.values()])}, ROUNDS)
    bytes_read = scores.nbytes + labels.nbytes + sum(v.nbytes for v in text.values())
    for name, seconds in floors.items():
        print(f"  floor: {name}: {seconds * 1e3:.1f} ms" + (f" ({bytes_read / 2**20:.0f} MiB)" if "pass" in name else ""))


def accumulator_ratio(size, n_batches):
    rng = np.random.default_rng(1)
    batches = []
    for _ in range(n_batches):
        y = rng.integers(0, 2, size)
        scores = (0.7 * rng.random(size) + 0.3 * y).astype(np.float32)
        frame = pd.DataFrame({"sex": rng.choice(["F", "M"], size), "site": rng.choice(["A", "B", "C", "D"], size)})
        batches.append((y, scores, frame))

    def accumulate():
        acc = fm.FairnessAccumulator()
        for y, scores, frame in batches:
            acc.update(y, scores, frame)
        return acc.result()

    def concatenate():
        return fm.evaluate(np.concatenate([b[0] for b in batches]), np.concatenate([b[1] for b in batches]),
                           pd.concat([b[2] for b in batches], ignore_index=True))

    got, want = accumulate(), concatenate()
    same = np.allclose(got.summary.to_numpy(float), want.summary.to_numpy(float), rtol=1e-9, atol=1e-12,
                       equal_nan=True)
    best = best_of({"accumulator": accumulate, "concatenate + evaluate": concatenate}, ROUNDS)
    mine, theirs = "accumulator", "concatenate + evaluate"
    print(f"  {n_batches} batches x {size:,}: all updates + result() {best[mine] * 1e3:.1f} ms, concatenate "
          f"+ evaluate {best[theirs] * 1e3:.1f} ms, ratio {best[mine] / best[theirs]:.2f} (CPU {CPU[mine] * 1e3:.1f} "
          f"against {CPU[theirs] * 1e3:.1f} ms, {CPU[mine] / CPU[theirs]:.2f}; same summary: {same})")


def small_calls():
    y, scores, text = data(1000, seed=2)
    one = text["sex"]

    def repeated(function):
        def run():
            for _ in range(SMALL_CALLS):
                function()
        return run

    evaluate = repeated(lambda: fm.evaluate(y, scores, text))
    auc_gap = repeated(lambda: fm.auc_gap(y, scores, sensitive_features=one))
    evaluate(), auc_gap()
    best = best_of({"evaluate, 3 <U attributes": evaluate, "auc_gap, 1 <U attribute": auc_gap}, ROUNDS)
    print(f"small calls, 1,000 samples (mean of {SMALL_CALLS} calls, best of {ROUNDS}): "
          + ", ".join(f"{name} {seconds / SMALL_CALLS * 1e6:.0f} us (CPU {CPU[name] / SMALL_CALLS * 1e6:.0f})"
                      for name, seconds in best.items()))


if __name__ == "__main__":
    print(f"fairmedfm_fast from {os.path.dirname(fm.__file__)}")
    table_of_forms()
    print("FairnessAccumulator, 2 string attributes in a DataFrame, beside pd.concat + one evaluate:")
    accumulator_ratio(max(N // 500, 50), 100)
    accumulator_ratio(max(N // 50, 50), 100)
    small_calls()
