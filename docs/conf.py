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
# Wide enough for the commands on one line (alabaster's default body is 940 px).
html_theme_options = {"page_width": "1240px", "sidebar_width": "240px"}
html_title = "spinup_tf2"
html_static_path = ["_static"]
html_css_files = ["custom.css"]  # code blocks wrap their long lines


def _mathjax_dir() -> str:
    """MathJax 3's browser build from the django-static-mathjax wheel (the docs extra), so
    the site renders its equations without reaching a CDN."""
    import importlib.util

    spec = importlib.util.find_spec("mathjax")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("MathJax is missing: pip install -e \".[docs]\" (it brings "
                           "django-static-mathjax, MathJax's files as a wheel).")
    return os.path.join(list(spec.submodule_search_locations)[0], "static", "mathjax", "es5")


# tex-mml-chtml.js holds the TeX input and the HTML output; the fonts it loads sit beside it.
mathjax_path = "mathjax/tex-mml-chtml.js"


def _copy_mathjax(app, exception) -> None:
    import shutil

    if exception is not None or app.builder.format != "html":
        return
    src, dst = _mathjax_dir(), os.path.join(app.outdir, "_static", "mathjax")
    os.makedirs(dst, exist_ok=True)
    shutil.copy2(os.path.join(src, "tex-mml-chtml.js"), dst)
    shutil.copytree(os.path.join(src, "output", "chtml", "fonts", "woff-v2"),
                    os.path.join(dst, "output", "chtml", "fonts", "woff-v2"), dirs_exist_ok=True)


def setup(app):
    app.connect("build-finished", _copy_mathjax)
