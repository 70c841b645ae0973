"""Sphinx configuration of the documentation site: the user guide, the API reference and the gallery.

Build from the root of the clone (``pip install ".[docs]"`` first)::

    sphinx-build -W --keep-going -b html docs/site docs/site/_build/html

The guide's pages (``guide/*.md``) hold the user guide; the notes' pages include ``docs/*.md`` (MyST
``include``), so a note is written once; the API reference is generated from the docstrings (autosummary stubs under
``api/generated/``, made at build time) and the gallery by running ``examples/plot_*.py``. Nothing is
fetched at build time: no intersphinx, links out are plain links.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

SITE = Path(__file__).resolve().parent
ROOT = SITE.parents[1]
# The package of this clone (with its kernels/ beside it), whatever else is installed; _gallery.py.
sys.path[:0] = [str(ROOT), str(SITE)]
os.environ.setdefault("MPLBACKEND", "Agg")

import fairmedfm_fast  # noqa: E402

project = "fairmedfm_fast"
author = "fairmedfm_fast developers"
copyright = "fairmedfm_fast developers, Apache-2.0"
version = release = fairmedfm_fast.__version__

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "numpydoc",
    "sphinx_gallery.gen_gallery",
    "sphinxarg.ext",
]
# Quotes and ellipses only: "--on" in the command line's help stays two hyphens, not an en dash.
smartquotes_action = "qe"
source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
templates_path = ["_templates"]
# README.md says what this folder is; examples/ is the gallery's source (its pages are auto_examples/).
exclude_patterns = ["_build", "README.md", "examples", "**/GALLERY_HEADER.rst", "sg_execution_times.rst"]

# MyST: ``#slug`` links to the headings of a page (docs/deployment.md's ``#build-time``).
myst_heading_anchors = 4

# API reference: one generated page per public name (api/generated/, not committed).
autosummary_generate = True
autosummary_imported_members = True
# Only this package's docstrings: a method overridden without one (FairnessMetric.sync, ...) is left
# out rather than shown with torchmetrics' (Google-style) docstring.
autodoc_inherit_docstrings = False
autodoc_typehints = "none"  # numpydoc's Parameters sections say the types, with shapes
# numpydoc renders the Parameters/Returns sections; the class template (_templates/autosummary)
# lists the members, so numpydoc's own member tables are off.
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False

# The gallery: every examples/plot_*.py runs at build time, on synthetic data, and its figures are kept.
sphinx_gallery_conf = {
    "examples_dirs": ["examples"],
    "gallery_dirs": ["auto_examples"],
    "filename_pattern": r"/plot_",
    "download_all_examples": False,
    "remove_config_comments": True,
    "within_subsection_order": "_gallery.ExampleOrder",
    # FairnessReport.plot's figures are not pyplot's: _gallery.py saves them.
    "image_scrapers": ("matplotlib", "_gallery.report_figures"),
    "matplotlib_animations": False,
    "reset_modules": ("matplotlib",),
    "abort_on_example_error": True,
}

html_theme = "pydata_sphinx_theme"
html_title = f"fairmedfm_fast {release}"
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
    "header_links_before_dropdown": 6,
    "secondary_sidebar_items": ["page-toc"],
    "footer_start": ["copyright"],
    "footer_end": ["sphinx-version"],
}
html_sidebars = {"index": []}
html_static_path = ["_static"]
html_css_files = ["site.css"]
html_show_sourcelink = False
html_copy_source = False
