"""asv benchmarks of fairmedfm_fast, one module per kernel family (see docs/performance.md).

Modules whose names start with an underscore are shared helpers, not benchmarks: :mod:`._data` makes the
inputs, :mod:`._registry` maps each metric to its fast and reference function, :mod:`._baselines` holds
the other libraries and the lower bounds that ``compare.py`` also runs.
"""

from fairmedfm_fast.kernels import _config as _kernel_config

# The benchmarks time compiled kernels: in their processes a call that finds nothing compiled compiles
# (else a small one would run the kernels' plain-Python copy, kernels/_plain.py); coldstart.py times
# the default first call in fresh processes of its own.
# kernels._config is the old path of kernels._plain's switch, kept for this: compare_revisions.py also runs
# older checkouts with these benchmarks, which have only _config (the oldest not even the switch).
if hasattr(_kernel_config, "interpreting"):
    _kernel_config.interpreting["enabled"] = False
