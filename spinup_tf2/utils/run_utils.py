"""Experiment helpers under Spinning Up's names: ``setup_logger_kwargs``,
``call_experiment`` and ``ExperimentGrid``. They live in :mod:`spinup_tf2.launch` (and
the run directory's naming in :mod:`spinup_tf2.rundir`); this module keeps Spinning Up's
import path."""

from __future__ import annotations

from spinup_tf2.launch.flags import (  # noqa: F401  (the paths of 0.1)
    NOT_A_VALUE,
    FunctionPath,
    NamedObject,
    resolve_names,
)
from spinup_tf2.launch.grid import ExperimentGrid, valid_str  # noqa: F401
from spinup_tf2.launch.processes import (  # noqa: F401
    call_experiment,
    experiment_command,
    resolve_num_cpu,
    run_and_report,
    run_child,
    run_parallel,
)
from spinup_tf2.rundir import check_exp_name, output_dir_for


def setup_logger_kwargs(exp_name: str, seed: int | None = None, data_dir: str | None = None,
                        datestamp: bool = False) -> dict:
    """``dict(output_dir=..., exp_name=exp_name)`` for the logger of one run, the output
    directory named as :func:`spinup_tf2.rundir.output_dir_for` names it
    (``data_dir/exp_name/exp_name_s<seed>``, with ``datestamp`` the date and time first).
    ``exp_name`` must be a plain name, so that runs stay inside ``data_dir``."""
    check_exp_name(exp_name)
    return dict(output_dir=output_dir_for(exp_name, seed, data_dir, datestamp), exp_name=exp_name)
