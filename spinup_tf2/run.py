"""The command line: ``python -m spinup_tf2.run CMD [ARGS...]``.

``CMD`` is ``sac`` / ``sac_tf2`` or a variant of the SAC family by its name (``crossq`` /
``crossq_tf2``, ...: :data:`spinup_tf2.family.ALGORITHMS`) (launch a grid of experiments), ``tune``
(a hyperparameter study) and ``tune_report``, ``plot``, ``test_policy`` or ``export``.
Flags follow Spinning Up's grammar (:mod:`spinup_tf2.launch.flags`). A command's module is
imported only when it runs, so launching SAC imports neither pandas nor matplotlib (nor
TensorFlow: the experiment's own process does), and every command ends through
:func:`spinup_tf2.errors.cli_main`.
"""

from __future__ import annotations

import difflib
import functools
import importlib
import os
import subprocess
import sys
from collections.abc import Callable
from textwrap import dedent

from spinup_tf2.arguments import grouped_help
from spinup_tf2.errors import SpinupError, cli_main, print_error
from spinup_tf2.family import MEMBERS, REFUSED_SWITCHES
from spinup_tf2.launch.flags import (  # noqa: F401  (parse_value: the path of 0.1)
    ALGOS,
    RUN_ARG_NAMES,
    RUN_KEYS,
    SUBSTITUTIONS,
    FunctionPath,
    check_env_names,
    check_variants,
    parse_flags,
    parse_value,
    whole_numbers_as_ints,
)
from spinup_tf2.rundir import check_exp_name, check_writable_dir
from spinup_tf2.user_config import DEFAULT_BACKEND, DEFAULT_DATA_DIR, FORCE_DATESTAMP


def parse_and_execute_grid_search(cmd: str, args: list[str]) -> None:
    """Interpret the flags, check every variant's arguments, build an
    ExperimentGrid and run it."""
    cmd_given = cmd
    if cmd in DEFAULT_BACKEND:
        backend = DEFAULT_BACKEND[cmd]
        print(f"\n\nUsing default backend ({backend}) for {cmd}.\n")
        cmd = cmd + "_" + backend
    algo, check_args = ALGOS[cmd]

    # Before all else, check to see if any of the flags is 'help'.
    valid_help = ["--help", "-h", "help"]
    if any(arg in valid_help for arg in args):
        sac_doc = ALGOS["sac_tf2"][0].doc()
        refused = REFUSED_SWITCHES if cmd[:-len("_tf2")] in MEMBERS else ()
        print("\n" + grouped_help(cmd_given, algo.defaults(), [algo.doc(), sac_doc], refused)
              + "\n")
        print("\nShowing docstring for spinup_tf2." + cmd + ":\n")
        print(algo.doc())
        sys.exit()

    arg_dict, given_shorthands = parse_flags(cmd, args)
    whole_numbers_as_ints(arg_dict, algo.defaults())
    named_run = take_resume_dir(arg_dict)

    # Determine experiment name. If not given by user, will be determined
    # by the algorithm name.
    if "exp_name" in arg_dict:
        if len(arg_dict["exp_name"]) != 1:
            raise SpinupError(f"You can only provide one value for exp_name; got "
                              f"{arg_dict['exp_name']}. Use --exp_name NAME.")
        exp_name = arg_dict.pop("exp_name")[0]
        check_exp_name(exp_name)
    else:
        exp_name = "cmd_" + cmd

    # Special handling for environment: make sure that env_name is a real,
    # registered gymnasium environment.
    if "env_name" not in arg_dict:
        raise SpinupError("You did not give a value for --env_name! Add one and try again, "
                          "e.g. --env Pendulum-v1.")
    check_env_names(arg_dict["env_name"])

    run_kwargs = dict()
    for k in RUN_KEYS:
        if k in arg_dict:
            val = arg_dict.pop(k)
            if len(val) != 1:
                raise SpinupError(f"You can only provide one value for {k}; got {val}.")
            run_kwargs[RUN_ARG_NAMES.get(k, k)] = val[0]
    check_writable_dir(run_kwargs.get("data_dir", DEFAULT_DATA_DIR), "--data_dir")

    # The launcher's own checks need no grid: made before one of a million variants is built.
    if run_kwargs.get("backend", "local") == "local" and not run_kwargs.get("oversubscribe"):
        from spinup_tf2.launch.processes import resolve_num_cpu

        resolve_num_cpu(run_kwargs.get("num_cpu", 1), run_kwargs.get("parallel", 1))
    if run_kwargs.get("num_cpu", 1) != 1 and True in arg_dict.get("resume", []):
        raise SpinupError(f"--resume with --cpu {run_kwargs['num_cpu']}: a data-parallel run "
                          f"saves no training checkpoint (it would need every process's buffer "
                          f"and environments), so it cannot be resumed. Nothing was launched. "
                          f"Resume runs made with one process (--cpu 1).")
    from spinup_tf2.launch.grid import ExperimentGrid

    eg = ExperimentGrid(name=exp_name)
    for k, v in arg_dict.items():
        eg.add(k, v, shorthand=given_shorthands.get(k))
    variants = eg.variants()
    check_variants(algo, check_args, variants)
    if named_run and len(variants) > 1:
        raise SpinupError(f"--resume {named_run} names one run, but these flags make a grid of "
                          f"{len(variants)} variants. Nothing was launched. Give each flag one "
                          f"value (the run's own, as in its config.json).")
    if not named_run and any(v.get("resume") for v in variants) and (
            run_kwargs.get("datestamp") or FORCE_DATESTAMP):
        refuse_datestamped_resume(eg, variants, run_kwargs.get("data_dir"), args, cmd_given)
    eg.run(algo, **run_kwargs)


def take_resume_dir(arg_dict: dict) -> str | None:
    """``--resume DIR``: resume the run in the directory DIR (a datestamped run's, whose
    name the command cannot work out). Sets ``resume`` True and the output directory, and
    returns DIR; None for a bare ``--resume`` (or none)."""
    vals = arg_dict.get("resume")
    if vals is None or all(isinstance(v, bool) for v in vals):
        return None
    run_dir = vals[0]
    if len(vals) != 1 or not isinstance(run_dir, str):
        raise SpinupError(f"--resume takes no value (resume the run this command names) or "
                          f"one, the directory of the run to resume; got {vals!r}.")
    if not os.path.isfile(os.path.join(run_dir, "config.json")):
        raise SpinupError(f"--resume {run_dir}: that is not a run directory (it holds no "
                          f"config.json). Give the directory of one run, the one holding its "
                          f"progress.txt and train_state/. Nothing was launched.")
    arg_dict["resume"] = [True]
    arg_dict["logger_kwargs:output_dir"] = [run_dir]
    return run_dir


def refuse_datestamped_resume(eg, variants: list, data_dir, args: list, cmd: str) -> None:
    """A bare --resume with --dt: the directory holds the time the run started, which the
    command cannot know. Refuse, giving the command that names the newest such run."""
    import glob
    import shlex

    var = variants[0]
    name, seed = eg.variant_name(var), var.get("seed", 0)
    pattern = os.path.join(data_dir or DEFAULT_DATA_DIR, f"*_{name}", f"*-{name}_s{seed}")
    found = sorted(glob.glob(pattern))
    kept = [a for a in args if a not in ("--resume", "--dt", "--datestamp")]
    again = " ".join(["python -m spinup_tf2.run", cmd, *map(shlex.quote, kept), "--resume",
                      shlex.quote(found[-1]) if found else "DIR"])
    raise SpinupError(
        "--resume with --dt (datestamp): a datestamped run's directory holds the time it "
        "started, so this command cannot work out which run to resume. Nothing was "
        "launched. Name the run's directory, "
        + (f"e.g. the newest of the {len(found)} run(s) matching {pattern}: {again}"
           if found else f"which would match {pattern} (none does here): {again}")
        + (" (one variant at a time)." if len(variants) > 1 else "."))


def print_help() -> None:
    """The help text: commands and substitutions."""
    cmds = "\n".join("\t" + c for c in COMMANDS)
    subs = "\n".join("\t--" + k.ljust(max(10, len(k) + 1)) + "for".ljust(10) + "--" + v
                     for k, v in SUBSTITUTIONS.items())
    print(dedent("""
        Experiment in spinup_tf2 from the command line with

        \tpython -m spinup_tf2.run CMD [ARGS...]

        where CMD is a valid command. Current valid commands are:
        """) + cmds + dedent("""

        FYI: When running an algorithm, any keyword argument to the
        algorithm function can be used as a flag, eg

        \tpython -m spinup_tf2.run sac --env HalfCheetah-v5 --alpha 0.1

        If you need a quick refresher on valid kwargs, get the docstring
        with

        \tpython -m spinup_tf2.run [algo] --help

        See docs/user/running.md for the full flag grammar (grids, shorthands,
        nested keys).

        Also: Some common but long flags can be substituted for shorter
        ones. Valid substitutions are:
        """) + subs + "\n")


def run_algo(cmd: str, argv: list[str]) -> int:
    """Launch the grid of experiments that ``argv`` (the flags) describes."""

    def command():
        try:
            parse_and_execute_grid_search(cmd, argv)
        except subprocess.CalledProcessError as err:  # the experiment said what went wrong
            return err.returncode or 1

    return cli_main(command)


def _lazy(path: str) -> Callable[[list[str]], int]:
    """The ``main(argv)`` of the module ``path``, imported when the command runs."""
    return lambda argv: importlib.import_module(path).main(argv)


# What each command runs, given the arguments after the command's name.
COMMANDS: dict[str, Callable[[list[str]], int]] = {
    **{cmd: functools.partial(run_algo, cmd)
       for algo in DEFAULT_BACKEND for cmd in (algo, f"{algo}_{DEFAULT_BACKEND[algo]}")},
    "plot": _lazy("spinup_tf2.utils.plot"),
    "test_policy": _lazy("spinup_tf2.utils.test_policy"),
    "export": _lazy("spinup_tf2.policy.export"),
    "tune": _lazy("spinup_tf2.launch.tune"),
    "tune_report": _lazy("spinup_tf2.launch.study"),
}
VALID_CMDS = list(COMMANDS)


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``python -m spinup_tf2.run``; returns the exit code."""
    argv = list(sys.argv if argv is None else argv)
    cmd = argv[1] if len(argv) > 1 else "help"
    valid_help = ["--help", "-h", "help"]
    if cmd in valid_help:
        print_help()
        return 0
    if cmd not in COMMANDS:
        close = difflib.get_close_matches(cmd, VALID_CMDS, n=1)
        print_error(SpinupError(
            f"{cmd!r} is not a spinup_tf2 command. Valid commands: {', '.join(VALID_CMDS)}."
            + (f" Did you mean {close[0]!r}?" if close else "")
            + " Run python -m spinup_tf2.run --help for more."))
        return 2
    return COMMANDS[cmd](argv[2:])


def console_main() -> None:
    """The ``spinup_tf2`` console script: ``spinup_tf2 CMD ...`` is
    ``python -m spinup_tf2.run CMD ...``."""
    import signal

    from spinup_tf2.tf_setup import import_keras_without_extras

    import_keras_without_extras()  # test_policy and export: TensorFlow starts 1.5-2 s sooner
    if hasattr(signal, "SIGPIPE"):  # output into `head` or `less` ends quietly when they do
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    sys.exit(main())


if __name__ == "__main__":
    console_main()
