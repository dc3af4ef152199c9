"""The error raised for bad user input, and how the command line shows it."""

import importlib.util
import sys


class SpinupError(ValueError):
    """Bad input from the user: a one-paragraph message that names the bad value
    and what would be accepted. The command line prints it without a traceback."""


def print_error(err: Exception) -> None:
    """Print ``err`` as the command line shows errors: a red ``Error:`` and the
    message, on stderr, no traceback."""
    from spinup_tf2.utils.logx import colorize

    print(colorize("Error: ", "red", bold=True) + str(err), file=sys.stderr, flush=True)


def is_installed(module: str) -> bool:
    """Whether ``module`` can be imported, found without importing it (some, such
    as tf2onnx and ray, import TensorFlow or read settings when imported)."""
    if module in sys.modules:
        return sys.modules[module] is not None  # None: blocked, as if not installed
    return importlib.util.find_spec(module) is not None
