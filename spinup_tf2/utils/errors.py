"""The error raised for bad user input, and how the command line shows it."""

import sys


class SpinupError(ValueError):
    """Bad input from the user: a one-paragraph message that names the bad value
    and what would be accepted. The command line prints it without a traceback."""


def print_error(err: Exception) -> None:
    """Print ``err`` as the command line shows errors: a red ``Error:`` and the
    message, on stderr, no traceback."""
    from spinup_tf2.utils.logx import colorize

    print(colorize("Error: ", "red", bold=True) + str(err), file=sys.stderr, flush=True)
