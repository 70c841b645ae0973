"""asv benchmarks of fairmedfm_fast, one module per kernel family (see ../README section "Performance").

Modules whose names start with an underscore are shared helpers, not benchmarks: :mod:`._data` makes the
inputs, :mod:`._registry` maps each metric to its fast and reference function, :mod:`._baselines` holds
the other libraries and the lower bounds that ``compare.py`` also runs.
"""
