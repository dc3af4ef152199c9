"""The command line: ``python -m spinup_tf2.run CMD [ARGS...]``.

``CMD`` is ``sac`` / ``sac_tf2`` (launch a grid of experiments), ``plot``,
``test_policy`` or ``export``. Flags follow Spinning Up's grammar: several values after a
flag make a grid, a bare flag is True, ``--key[sh]`` sets a shorthand, ``a:b``
sets a nested key. Values are Python literals where they parse as such,
names under ``tf``, ``keras`` or ``np`` (``tf.nn.relu``) resolve to those
objects, and anything else stays a string. Nothing is passed to ``eval``.
"""

from __future__ import annotations

import ast
import difflib
import subprocess
import sys
from textwrap import dedent
from typing import Callable

from spinup_tf2.algos.sac.checks import check_sac_args
from spinup_tf2.user_config import DEFAULT_BACKEND, DEFAULT_DATA_DIR
from spinup_tf2.utils import export, plot, test_policy
from spinup_tf2.utils.atomic_files import check_writable_dir
from spinup_tf2.utils.errors import SpinupError, print_error
from spinup_tf2.utils.lifetime import ignore_interrupts
from spinup_tf2.utils.run_utils import NOT_A_VALUE, FunctionPath, NamedObject, check_exp_name

# Each algorithm: the function a launched process runs, named by its path (so the
# launcher never imports it, nor TensorFlow), and the check of its arguments that
# the launcher runs first.
ALGOS: dict[str, tuple[FunctionPath, Callable]] = {
    "sac_tf2": (FunctionPath("spinup_tf2.algos.sac.sac:sac"), check_sac_args),
}

# Command line shorthands for convenience.
SUBSTITUTIONS = {"env": "env_name", "hid": "ac_kwargs:hidden_sizes",
                 "act": "ac_kwargs:activation", "cpu": "num_cpu", "dt": "datestamp",
                 "tensorboard": "logger_kwargs:tensorboard",
                 "overwrite": "logger_kwargs:overwrite",
                 "video_freq": "logger_kwargs:video_freq"}


# Arguments of ExperimentGrid.run rather than of the algorithm.
RUN_KEYS = ["num_cpu", "data_dir", "datestamp", "parallel", "oversubscribe", "backend",
            "ray_address", "ray_worker_dir"]
# Run-level flags whose ExperimentGrid.run argument has another name.
RUN_ARG_NAMES = {"ray_address": "address", "ray_worker_dir": "worker_dir"}

# Flags whose values are always names, never parsed as Python.
STRING_KEYS = {"exp_name", "env_name", "data_dir", "backend", "ray_address", "ray_worker_dir"}

# The calls a flag value may make.
SAFE_CALLS = {"dict": dict, "list": list, "tuple": tuple, "int": int, "float": float,
              "bool": bool, "str": str}


def parse_value(text: str, flag: str):
    """One flag value: a Python literal, a whitelisted name or call, or the
    string itself.

    ``0.1`` -> float, ``[64,64]`` -> list, ``tf.nn.tanh`` -> a
    :class:`NamedObject` (looked up in the experiment's process),
    ``dict(hidden_sizes=[64], activation=tf.nn.relu)`` -> dict,
    ``HalfCheetah-v5`` -> str. A value that uses a name or a call it cannot
    take is an error naming the flag.
    """
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        pass
    try:
        tree = ast.parse(text.strip(), mode="eval").body
    except SyntaxError:
        return text
    if not _uses_code(tree):
        return text
    try:
        return _eval_node(tree, flag)
    except SpinupError as err:
        raise SpinupError(f"The value {text!r} of --{flag} could not be used: {err} Values may "
                          f"be Python literals (0.1, [64,64], True), names under tf, keras or np "
                          f"(tf.nn.relu), or dict(...)/list(...)/tuple(...) of those.") from None


def _uses_code(node) -> bool:
    """True if the expression names a whitelisted root or makes a call, i.e. it
    is meant as code, not as a string that happens to parse (``Pendulum-v1``)."""
    for sub in ast.walk(node):
        if isinstance(sub, ast.Call):
            return True
        if isinstance(sub, ast.Attribute):
            root = sub
            while isinstance(root, ast.Attribute):
                root = root.value
            if isinstance(root, ast.Name):
                return True
    return False


def _eval_node(node, flag: str):
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        items = [_eval_node(e, flag) for e in node.elts]
        return {ast.List: list, ast.Tuple: tuple, ast.Set: set}[type(node)](items)
    if isinstance(node, ast.Dict):
        return {_eval_node(k, flag): _eval_node(v, flag) for k, v in zip(node.keys, node.values)}
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        val = _eval_node(node.operand, flag)
        return -val if isinstance(node.op, ast.USub) else +val
    if isinstance(node, (ast.Name, ast.Attribute)):
        root = node
        while isinstance(root, ast.Attribute):
            root = root.value
        if not isinstance(root, ast.Name):
            raise SpinupError(f"{ast.unparse(node)!r} is not a literal or an allowed name.")
        parts = ast.unparse(node).split(".")
        if parts[0] not in NamedObject.ROOTS:
            raise SpinupError(f"the name {parts[0]!r} is not one it can use.")
        if len(parts) == 1 or any(p.startswith("_") for p in parts):
            raise SpinupError(f"{ast.unparse(node)} does not exist.")
        return NamedObject(ast.unparse(node), flag)
    if isinstance(node, ast.Call):
        if not (isinstance(node.func, ast.Name) and node.func.id in SAFE_CALLS):
            raise SpinupError(f"the call {ast.unparse(node.func)}(...) is not allowed.")
        args = [_eval_node(a, flag) for a in node.args]
        kwargs = {kw.arg: _eval_node(kw.value, flag) for kw in node.keywords
                  if kw.arg is not None}
        return SAFE_CALLS[node.func.id](*args, **kwargs)
    raise SpinupError(f"{ast.unparse(node)!r} is not a literal or an allowed name.")


def parse_flags(cmd: str, args: list[str]) -> tuple[dict, dict]:
    """Turn ``--key v1 v2 ...`` tokens into ``(arg_dict, shorthands)``."""
    if not args or "--" not in args[0]:
        raise SpinupError(f"You didn't specify a first flag: after '{cmd}' come flags such as "
                          f"--env Pendulum-v1 --epochs 10 (got {args[:1] or 'nothing'}).")
    arg_dict: dict = {}
    given_shorthands: dict = {}
    key = None
    for arg in args:
        if "--" in arg:
            key = arg.lstrip("-")
            if "[" in key:
                if not key.endswith("]"):
                    raise SpinupError(f"The flag {arg} has an unclosed shorthand: write "
                                      f"--key[sh], e.g. --lr[lr] 0.001 0.0003.")
                key, sh = key[:-1].split("[", 1)
                given_shorthands[key] = sh
            if not key:
                raise SpinupError(f"The flag {arg!r} has no name.")
            arg_dict[key] = []
        else:
            is_name = SUBSTITUTIONS.get(key, key) in STRING_KEYS
            arg_dict[key].append(arg if is_name else parse_value(arg, key))
    for k, v in arg_dict.items():
        if len(v) == 0:  # a bare flag is a boolean switch
            v.append(True)

    # Make substitutions, moving each substituted key to the end (the order
    # of keys sets the order of parts in variant names).
    for special_name, true_name in SUBSTITUTIONS.items():
        if special_name in arg_dict:
            arg_dict[true_name] = arg_dict.pop(special_name)
        if special_name in given_shorthands:
            given_shorthands[true_name] = given_shorthands.pop(special_name)
    return arg_dict, given_shorthands


def check_env_names(env_names: list) -> None:
    """Refuse unregistered environment names (with the closest registered
    ones) and MuJoCo environments without mujoco installed."""
    import gymnasium as gym

    registered = list(gym.envs.registry.keys())
    for name in env_names:
        if not isinstance(name, str):
            raise SpinupError(f"--env must be an environment name; got {name!r}.")
        spec = gym.envs.registry.get(name)
        base = name.split("-v")[0]
        mujoco_names = {k.split("-v")[0] for k, s in gym.envs.registry.items()
                        if "mujoco" in str(s.entry_point)}
        if spec is None:
            close = difflib.get_close_matches(name, registered, n=5, cutoff=0.6)
            same_base = sorted(k for k in registered if k.split("-v")[0] == base)
            suggestions = same_base + [c for c in close if c not in same_base]
            hint = (" It is a MuJoCo environment: install the mujoco extra with "
                    "pip install 'spinup_tf2[mujoco]'." if base in mujoco_names else "")
            raise SpinupError(
                f"{name} is not registered with gymnasium. "
                + (f"Closest registered names: {', '.join(suggestions[:5])}. "
                   if suggestions else "")
                + "Check for a typo (did you include the version tag, e.g. -v5?); "
                  "gymnasium.pprint_registry() lists them all." + hint)
        if "mujoco_py" in getattr(spec.entry_point, "__name__", ""):
            newer = sorted(k for k in registered if k.split("-v")[0] == base
                           and "mujoco_py" not in getattr(gym.spec(k).entry_point,
                                                          "__name__", ""))
            raise SpinupError(
                f"{name} is a mujoco-py environment, which gymnasium no longer provides "
                f"(its -v2/-v3 MuJoCo tasks moved to gymnasium-robotics). Use "
                f"{' or '.join(newer[-2:]) or 'a -v5 version'} instead; it needs the mujoco "
                f"extra: pip install 'spinup_tf2[mujoco]'.")
        if "mujoco" in str(spec.entry_point):
            try:
                import mujoco  # noqa: F401
            except ImportError:
                raise SpinupError(f"{name} needs MuJoCo, which is not installed: "
                                  f"pip install 'spinup_tf2[mujoco]' (gymnasium[mujoco]).")
        if isinstance(spec.entry_point, str):
            try:  # imports the env's module, which names a missing extra (Box2D, ...)
                gym.envs.registration.load_env_creator(spec.entry_point)
            except (gym.error.DependencyNotInstalled, ImportError) as err:
                raise SpinupError(f"{name} needs a package that is not installed: {err}. "
                                  f"Nothing was launched.") from None


def parse_and_execute_grid_search(cmd: str, args: list[str]) -> None:
    """Interpret the flags, check every variant's arguments, build an
    ExperimentGrid and run it."""
    if cmd in DEFAULT_BACKEND:
        backend = DEFAULT_BACKEND[cmd]
        print("\n\nUsing default backend (%s) for %s.\n" % (backend, cmd))
        cmd = cmd + "_" + backend
    algo, check_args = ALGOS[cmd]

    # Before all else, check to see if any of the flags is 'help'.
    valid_help = ["--help", "-h", "help"]
    if any(arg in valid_help for arg in args):
        print("\n\nShowing docstring for spinup_tf2." + cmd + ":\n")
        print(algo.doc())
        sys.exit()

    arg_dict, given_shorthands = parse_flags(cmd, args)
    whole_numbers_as_ints(arg_dict, algo.defaults())

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
    check_writable_dir(run_kwargs.get("data_dir") or DEFAULT_DATA_DIR, "--data_dir")

    from spinup_tf2.utils.run_utils import ExperimentGrid

    eg = ExperimentGrid(name=exp_name)
    for k, v in arg_dict.items():
        eg.add(k, v, shorthand=given_shorthands.get(k))
    check_variants(algo, check_args, eg.variants())
    eg.run(algo, **run_kwargs)


def whole_numbers_as_ints(arg_dict: dict, defaults: dict) -> None:
    """Whole-number floats (``--replay_size 1e6``) as ints, for arguments whose default
    is an int."""
    for key, vals in arg_dict.items():
        default = defaults.get(key)
        if isinstance(default, int) and not isinstance(default, bool):
            arg_dict[key] = [int(v) if isinstance(v, float) and v.is_integer() else v
                             for v in vals]


def check_variants(algo: FunctionPath, check_args: Callable, variants: list[dict]) -> None:
    """Refuse, before anything is launched, a flag the algorithm has no argument
    for, or a value its argument check refuses, in any variant of the grid."""
    defaults = algo.defaults()
    known = (set(defaults) - {"env_fn"}) | {"env_name"}
    for variant in variants:
        unknown = [k for k in variant if k not in known]
        if unknown:
            close = difflib.get_close_matches(unknown[0], sorted(known), n=3)
            raise SpinupError(
                f"--{unknown[0]} is not an argument of {algo.__name__}()"
                + (f"; did you mean {' or '.join('--' + c for c in close)}?" if close else ".")
                + f" Its arguments are listed by python -m spinup_tf2.run {algo.__name__} "
                  f"--help, and the launcher's own flags are --cpu, --data_dir, --datestamp "
                  f"(--dt), --parallel, --oversubscribe, --backend, --ray_address and "
                  f"--ray_worker_dir.")
        for key, value in variant.items():
            default = defaults.get(key)
            if value is True and not isinstance(default, bool) and default is not NOT_A_VALUE:
                raise SpinupError(
                    f"--{key} was given no value. A flag alone means True, which only on/off "
                    f"arguments (--resume, --normalize_obs, ...) take; give one, e.g. --{key} "
                    f"{default!r} (the default).")
        args = {k: v for k, v in defaults.items() if v is not NOT_A_VALUE}
        check_args({**args, **variant})


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

        See the README for the full flag grammar (grids, shorthands,
        nested keys).

        Also: Some common but long flags can be substituted for shorter
        ones. Valid substitutions are:
        """) + subs + "\n")


def run_algo(cmd: str, argv: list[str]) -> int:
    """Launch the grid of experiments that ``argv`` (the flags) describes."""
    try:
        parse_and_execute_grid_search(cmd, argv)
    except SpinupError as err:
        print_error(err)
        return 2
    except subprocess.CalledProcessError as err:
        return err.returncode or 1
    except KeyboardInterrupt:
        ignore_interrupts()  # stopping: a further Ctrl-C must not break the exit
        return 130
    return 0


# What each command runs, given the arguments after the command's name.
COMMANDS: dict[str, Callable[[list[str]], int]] = {
    "sac": lambda argv: run_algo("sac", argv),
    "sac_tf2": lambda argv: run_algo("sac_tf2", argv),
    "plot": plot.main,
    "test_policy": test_policy.main,
    "export": export.main,
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


if __name__ == "__main__":
    sys.exit(main())
