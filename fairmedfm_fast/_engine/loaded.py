"""The classification kernel modules (ranking, calibration, sweeps), imported on first use, so that
``import fairmedfm_fast`` does not load numba."""
from __future__ import annotations

_loaded: dict[str, object] = {}


def kernel_modules():
    if not _loaded:
        from ..kernels import calibration, ranking, sweeps

        _loaded.update(ranking=ranking, calibration=calibration, sweeps=sweeps)
    return _loaded["ranking"], _loaded["calibration"]


def sweep_kernels():
    kernel_modules()
    return _loaded["sweeps"]
