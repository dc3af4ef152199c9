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
