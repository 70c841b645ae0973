"""Side by side: `fairmedfm score` vs `fairmedfm-fast score` on the same Parquet file (one run each,
after one warm-up run of fairmedfm-fast so its JIT cache is filled), plus agreement of the JSON."""
import json
import subprocess
import sys
import time
from pathlib import Path

BIN = str(Path(sys.executable).parent)  # the console scripts beside this Python
path = sys.argv[1]
def run(cmd):
    t = time.perf_counter()
    r = subprocess.run(cmd, capture_output=True, text=True)
    return time.perf_counter() - t, r

fast_cmd = [f"{BIN}/fairmedfm-fast", "score", path]
oracle_cmd = [f"{BIN}/fairmedfm", "score", path]
run(fast_cmd)  # warm the JIT cache
t_fast, r_fast = run(fast_cmd)
t_oracle, r_oracle = run(oracle_cmd)
t_fast2, _ = run(fast_cmd)
a, b = json.loads(r_fast.stdout), json.loads(r_oracle.stdout)
worst = max(abs(a[k][m] - b[k][m]) for k in b for m in b[k] if b[k][m] is not None)
print(f"{path}: fairmedfm score {t_oracle:.2f} s; fairmedfm-fast score {t_fast:.2f} s / {t_fast2:.2f} s "
      f"(before/after); ratio {t_oracle / min(t_fast, t_fast2):.1f}x; max |difference| {worst:.2e}; "
      f"exit codes {r_oracle.returncode} {r_fast.returncode}; stderr lines "
      f"{len(r_oracle.stderr.splitlines())} {len(r_fast.stderr.splitlines())}")
