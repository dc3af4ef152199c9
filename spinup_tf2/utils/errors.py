"""Moved to :mod:`spinup_tf2.errors`; this path (README of 0.1) goes in the next release."""
from spinup_tf2.errors import SpinupError, cli_main, colorize, is_installed, print_error  # noqa: F401
