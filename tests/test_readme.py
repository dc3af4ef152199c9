"""README.md's Python snippets, as a user copies them: their imports print nothing."""

import os
import re
import subprocess
import sys

from helpers import HANG

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def snippets():
    with open(os.path.join(ROOT, "README.md")) as f:
        return re.findall(r"```python\n(.*?)```", f.read(), re.S)


def test_readme_snippet_imports_print_no_tensorflow_noise(tmp_path):
    """The first paragraph of each snippet (its imports) runs in a fresh Python without
    TF_CPP_MIN_LOG_LEVEL, then TensorFlow, if they imported it, runs an op: stderr stays
    empty."""
    blocks = snippets()
    assert len(blocks) >= 1  # the site's examples run whole in test_docs_examples.py
    env = {k: v for k, v in os.environ.items() if not k.startswith("TF_")}
    for block in blocks:
        imports = block.split("\n\n")[0]
        code = imports + ("\nimport sys\nif 'tensorflow' in sys.modules:\n"
                          "    sys.modules['tensorflow'].constant(1.0) + 1.0\n")
        res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             cwd=tmp_path, env=env, timeout=HANG)
        assert res.returncode == 0, (imports, res.stderr)
        assert res.stderr == "", (imports, res.stderr)


def test_the_docs_are_built_by_one_command_everywhere():
    """README's command that builds the documentation site is the one the installation page
    gives (one instruction for one thing), and no page still gives another sphinx-build line."""
    with open(os.path.join(ROOT, "README.md")) as f:
        readme = [ln for ln in f.read().splitlines() if "sphinx-build" in ln and "pip" in ln]
    assert len(readme) == 1, readme
    pages = []
    for folder, _, files in os.walk(os.path.join(ROOT, "docs")):
        if "_build" in folder:
            continue
        for name in files:
            if name.endswith(".md"):
                with open(os.path.join(folder, name)) as f:
                    pages += [(name, ln) for ln in f.read().splitlines()
                              if ln.startswith(("pip ", "sphinx-build", "command -v"))
                              and "sphinx-build" in ln]
    assert pages and all(ln == readme[0] for _, ln in pages), pages
