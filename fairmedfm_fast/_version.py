"""The package version, read by ``pyproject.toml`` at build time and by ``import fairmedfm_fast``."""
__version__ = "0.1.0"
