"""The error raised for bad user input, and how the command line shows it.

A leaf: nothing here imports the rest of the package.
"""

from __future__ import annotations

import importlib.util
import os
import signal
import sys
from collections.abc import Callable

color2num = dict(gray=30, red=31, green=32, yellow=33, blue=34, magenta=35, cyan=36, white=37,
                 crimson=38)


class SpinupError(ValueError):
    """Bad input from the user: a one-paragraph message that names the bad value
    and what would be accepted. The command line prints it without a traceback."""


def color_enabled() -> bool:
    """Whether output gets colour codes: when stdout is a terminal, or ``FORCE_COLOR`` is
    set (the launcher sets it for the MPI ranks of a command run in a terminal); never with
    ``NO_COLOR`` (no-color.org). A log file or a pipe gets plain text."""
    if os.environ.get("NO_COLOR"):
        return False
    return bool(os.environ.get("FORCE_COLOR")) or sys.stdout.isatty()


def colorize(string: str, color: str, bold: bool = False, highlight: bool = False) -> str:
    """``string`` wrapped in the ANSI escape codes for ``color`` (see
    ``color2num``), optionally bold and/or as a background highlight; ``string`` as it is
    where the codes would not show (:func:`color_enabled`)."""
    if not color_enabled():
        return string
    attr = []
    num = color2num[color]
    if highlight:
        num += 10
    attr.append(str(num))
    if bold:
        attr.append("1")
    return "\x1b[{}m{}\x1b[0m".format(";".join(attr), string)


def print_error(err: Exception) -> None:
    """Print ``err`` as the command line shows errors: a red ``Error:`` and the
    message, on stderr, no traceback."""
    print(colorize("Error: ", "red", bold=True) + str(err), file=sys.stderr, flush=True)


def cli_main(command: Callable[[], int | None]) -> int:
    """Run one command-line command and return its exit code: what it returns (None
    is 0); 2 for a :class:`SpinupError` (printed as one paragraph); 1 for a
    ``FloatingPointError`` (sac()'s stop on non-finite values; its message says what
    is intact); 130 for Ctrl-C. Every command goes through here, so they all end
    alike."""
    try:
        return command() or 0
    except SpinupError as err:
        print_error(err)
        return 2
    except FloatingPointError as err:
        print_error(err)
        return 1
    except KeyboardInterrupt:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # stopping: a 2nd Ctrl-C must not break it
        return 130


def error_line(err: Exception, limit: int = 200) -> str:
    """``'TypeName: first line of its message'`` (the line cut at ``limit`` characters):
    how a one-paragraph error names the exception it stands for."""
    first = (str(err).strip().splitlines() or [""])[0][:limit]
    return f"{type(err).__name__}: {first}"


def is_installed(module: str) -> bool:
    """Whether ``module`` can be imported, found without importing it (some, such
    as tf2onnx and ray, import TensorFlow or read settings when imported)."""
    if module in sys.modules:
        return sys.modules[module] is not None  # None: blocked, as if not installed
    return importlib.util.find_spec(module) is not None
