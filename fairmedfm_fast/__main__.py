"""``python -m fairmedfm_fast score ...``: the ``fairmedfm-fast`` command line."""
import sys

from fairmedfm_fast.cli import main

sys.exit(main())
