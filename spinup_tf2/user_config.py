"""Defaults a user may want to change, as in Spinning Up's ``user_config.py``.

Two environment variables override them without editing this file:
``SPINUP_TF2_DATA_DIR`` (where runs are written: by default the repository's data/ in a
clone, ./data of the working directory when installed with ``pip install .``) and
``SPINUP_TF2_WAIT_BEFORE_LAUNCH`` (seconds of countdown before a CLI launch;
``0`` turns it off, as tests and scripts should).
"""

import os
import os.path as osp

from spinup_tf2.family import ALGORITHMS


def wait_before_launch() -> float:
    """The countdown before a CLI launch: ``SPINUP_TF2_WAIT_BEFORE_LAUNCH`` seconds when it
    is set, else :data:`WAIT_BEFORE_LAUNCH`. A value that is not a number >= 0 is a
    :class:`~spinup_tf2.errors.SpinupError`, raised when a launch asks (not on import)."""
    from spinup_tf2.errors import SpinupError

    name, raw = "SPINUP_TF2_WAIT_BEFORE_LAUNCH", os.environ.get("SPINUP_TF2_WAIT_BEFORE_LAUNCH")
    if raw is None or raw.strip() == "":
        return WAIT_BEFORE_LAUNCH
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not 0 <= value < float("inf"):
        raise SpinupError(f"The environment variable {name}={raw!r} is not a number of "
                          f"seconds: give a number >= 0 (0 turns the countdown off), or unset "
                          f"it to use the default of {WAIT_BEFORE_LAUNCH} s. Nothing was "
                          f"launched.")
    return value


def _default_data_dir() -> str:
    """In a clone of the repository (an editable install), its data/ folder, as Spinning
    Up does; in an installed package, ./data of the working directory (never inside
    site-packages)."""
    repo = osp.dirname(osp.dirname(osp.abspath(__file__)))
    if osp.exists(osp.join(repo, "pyproject.toml")) and osp.isdir(osp.join(repo, "tests")):
        return osp.join(repo, "data")
    return osp.join(os.getcwd(), "data")


# Default output folder of runs (see _default_data_dir).
DEFAULT_DATA_DIR = os.environ.get("SPINUP_TF2_DATA_DIR") or _default_data_dir()

# True: every run directory name starts with the date and time, as with --dt.
FORCE_DATESTAMP = False

# True: ExperimentGrid names keys without a shorthand by their first letters.
DEFAULT_SHORTHAND = True

# Seconds of countdown before a grid launches, to read what will run
# (SPINUP_TF2_WAIT_BEFORE_LAUNCH overrides it: see wait_before_launch).
WAIT_BEFORE_LAUNCH = 5

# One backend: `sac` means `sac_tf2`.
DEFAULT_BACKEND = {name: "tf2" for name in ALGORITHMS}  # SAC and its family
