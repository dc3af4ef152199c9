"""Sphinx configuration of spinup_tf2's documentation (``docs/``).

Build: ``sphinx-build -W -b html docs docs/_build/html`` (warnings are errors).
"""

import os
import sys

sys.path.insert(0, os.path.abspath(".."))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

project = "spinup_tf2"
author = "spinup_tf2 developers"
copyright = "2026, spinup_tf2 developers"

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "sphinx.ext.mathjax",
]
source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
myst_enable_extensions = ["dollarmath", "amsmath"]
myst_heading_anchors = 3
exclude_patterns = ["_build"]
autodoc_member_order = "bysource"
napoleon_google_docstring = True
napoleon_numpy_docstring = False
html_theme = "alabaster"
html_title = "spinup_tf2"
