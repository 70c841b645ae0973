"""The command line's work: reading tables, finding columns, the ``score`` command in memory, on Dask
and for many tasks. ``fairmedfm_fast.cli`` holds the parser and the entry point."""
