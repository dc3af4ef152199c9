"""The error raised for bad user input."""


class SpinupError(ValueError):
    """Bad input from the user: a one-paragraph message that names the bad value
    and what would be accepted. The command line prints it without a traceback."""
