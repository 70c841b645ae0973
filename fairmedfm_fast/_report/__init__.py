"""The report: :class:`FairnessReport`, the one assembly that builds it from per-group results, its
plots and its HTML page."""
