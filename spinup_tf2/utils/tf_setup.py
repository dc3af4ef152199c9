"""Import TensorFlow once, quietly, with thread settings that suit small CPUs.

TensorFlow writes start-up notes (oneDNN, CUDA stubs) straight to file
descriptor 2 before its own logging is configured, so ``TF_CPP_MIN_LOG_LEVEL``
alone cannot silence them. We silence stderr only while ``import tensorflow``
runs; an import error is still raised (and printed) normally.
"""

import os
import sys


def import_tensorflow():
    """Return the ``tensorflow`` module, imported without start-up noise."""
    if "tensorflow" in sys.modules:
        return sys.modules["tensorflow"]
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    quiet = os.environ.get("SPINUP_TF2_SHOW_TF_LOGS", "0") in ("", "0")
    saved_fd = None
    if quiet:
        try:
            sys.stderr.flush()
            saved_fd = os.dup(2)
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, 2)
            os.close(devnull)
        except OSError:  # no real fd 2 (some notebook front-ends): nothing to hide
            saved_fd = None
    try:
        import tensorflow as tf
    finally:
        if saved_fd is not None:
            os.dup2(saved_fd, 2)
            os.close(saved_fd)
    return tf
