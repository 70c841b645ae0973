"""The gallery's helpers for sphinx-gallery (named in conf.py by their import paths).

``FairnessReport.plot`` returns ``matplotlib.figure.Figure`` objects that pyplot does not manage, so
the stock matplotlib scraper (which asks pyplot for its figures) does not see them:
:func:`report_figures` saves every ``Figure`` that a block of an example binds to a name, once, in
the order the names were bound. :class:`ExampleOrder` puts the examples in reading order.
"""
from __future__ import annotations

from pathlib import Path

#: The examples in reading order: classification pictures, then segmentation and voxels.
ORDER = ("plot_roc.py", "plot_reliability.py", "plot_forest.py", "plot_pairwise.py", "plot_segmentation.py",
         "plot_voxels.py")


def report_figures(block, block_vars, gallery_conf, **kwargs):
    from matplotlib.figure import Figure
    from sphinx_gallery.scrapers import figure_rst

    saved = block_vars.setdefault("fairmedfm_fast_saved_figures", [])  # the figures themselves, kept
    paths = []
    for value in list(block_vars["example_globals"].values()):
        if isinstance(value, Figure) and not any(value is figure for figure in saved):
            saved.append(value)
            path = next(block_vars["image_path_iterator"])
            value.savefig(path, dpi=130)  # wide, short figures (the forest) stay legible at the page width
            paths.append(path)
    return figure_rst(paths, gallery_conf["src_dir"])


class ExampleOrder:
    """A ``within_subsection_order`` key: the place of an example in :data:`ORDER` (others after, by name)."""

    def __init__(self, src_dir):
        self.src_dir = src_dir

    def __repr__(self) -> str:
        return "<ExampleOrder>"

    def __call__(self, filename) -> tuple[int, str]:
        name = Path(filename).name
        return (ORDER.index(name) if name in ORDER else len(ORDER), name)
