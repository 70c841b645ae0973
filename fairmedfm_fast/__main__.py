"""``python -m fairmedfm_fast score ...``: the ``fairmedfm-fast`` command line."""
from fairmedfm_fast.cli import run

run()
