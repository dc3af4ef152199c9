"""What ``sac()`` refuses before anything runs: its arguments, against the declared table
(:mod:`spinup_tf2.arguments`) and their rules of their own (alpha, the logger's settings,
the network sizes), each a :class:`SpinupError` with one paragraph naming the bad value and
what would be accepted.

The pre-flight checks: nothing here imports TensorFlow, so the command line and ``tune``
run the same checks for every variant of a grid or study before anything is launched. The
environment's spaces are checked in :mod:`spinup_tf2.envs.spaces`, the memory a buffer takes
in :mod:`spinup_tf2.algos.sac.memory`, and what watches a run while it trains in
:mod:`spinup_tf2.training.watches`.
"""

from __future__ import annotations

import numpy as np

from spinup_tf2 import rundir
from spinup_tf2.arguments import BF16_CPU_FLAGS, CHECKED, FLOAT32_MAX, problem
from spinup_tf2.envs.spaces import DISCRETE_ENTROPY_FRACTION
from spinup_tf2.errors import SpinupError
from spinup_tf2.family import FAMILY_NAMES, REFUSED_SWITCHES
from spinup_tf2.utils.mpi_tools import num_procs


def _is_int(x) -> bool:
    return isinstance(x, (int, np.integer)) and not isinstance(x, bool)


def _is_num(x) -> bool:
    return isinstance(x, (int, float, np.integer, np.floating)) and not isinstance(x, bool)


# Run settings that were logger_kwargs keys in 0.1 and are sac() arguments now.
MOVED_FROM_LOGGER_KWARGS = ("overwrite", "video_freq")


LOGGER_KWARGS = ("output_dir", "exp_name", "output_fname", "tensorboard", "outputs", "quiet",
                 "track", "track_group")


def run_settings(args: dict, note: bool = False,
                 settle: bool = False) -> tuple[dict, bool, int]:
    """``(logger_kwargs, overwrite, video_freq)`` from sac()'s arguments ``args``: a
    deprecated ``logger_kwargs`` key (``overwrite``, ``video_freq``) is taken out of
    logger_kwargs and used where its sac() argument is left at its default; with
    ``note``, one line says so; with ``settle``, ``args`` is updated to them (the
    config.json a run writes holds the settings it used)."""
    logger_kwargs = dict(args.get("logger_kwargs") or {})
    values = {"overwrite": args.get("overwrite", False), "video_freq": args.get("video_freq", 0)}
    for key in MOVED_FROM_LOGGER_KWARGS:
        if key in logger_kwargs:
            value = logger_kwargs.pop(key)
            if values[key] in (False, 0):
                values[key] = value
            if note:
                print(f"Note: logger_kwargs['{key}'] is deprecated and will stop working in the "
                      f"next release; give sac({key}=...) (--{key}) instead.", flush=True)
    if settle:
        args.update(logger_kwargs=logger_kwargs, **values)
    return logger_kwargs, values["overwrite"], values["video_freq"]


def check_sac_args(args: dict):
    """Raise :class:`SpinupError` naming the first of ``sac()``'s arguments (a dict
    of them, e.g. ``locals()``; other keys are ignored) it cannot use; else
    return :func:`parse_alpha`'s reading of ``alpha`` and ``target_entropy``."""

    def need(ok, msg):
        if not ok:
            raise SpinupError(msg)

    for arg in CHECKED:  # declared bounds and choices, from spinup_tf2.arguments
        if arg.name in args:  # (a family function may not take it: crossq() has no polyak)
            why = problem(arg, args[arg.name])
            need(why is None, why)
    need(isinstance(args.get("logger_kwargs", {}), dict),
         f"sac() got logger_kwargs={args.get('logger_kwargs')!r}; it must be a dict, e.g. "
         f"dict(output_dir='data/run', exp_name='run').")
    logger_kwargs, overwrite, video_freq = run_settings(args)
    check_logger_kwargs(logger_kwargs)
    need(isinstance(overwrite, (bool, np.bool_)),
         f"sac() got overwrite={overwrite!r}; it must be True (replace an earlier run in the "
         f"output directory) or False (refuse to).")
    need(_is_int(video_freq) and video_freq >= 0,
         f"sac() got video_freq={video_freq!r} (--video_freq): give a whole number of epochs "
         f">= 1 between videos, or 0 for none.")
    if video_freq:
        from spinup_tf2.policy.video import check_video_path

        check_video_path(rundir.video_path(logger_kwargs.get("output_dir") or ".", 1))

    num_envs = args.get("num_envs", 1)
    ac = args.get("actor_critic")
    need(num_envs == 1 or not (args.get("recurrent") or ac == "recurrent"
                               or getattr(ac, "variant", None) == "recurrent"),
         f"sac() got num_envs={num_envs} with a recurrent actor-critic (--recurrent), which "
         f"steps one environment. Nothing was written. Use num_envs=1, or several MPI "
         f"processes (--cpu).")
    family = FAMILY_NAMES.get(ac) if isinstance(ac, str) else None
    switch = next((k for k in REFUSED_SWITCHES if args.get(k)), None)
    need(not (family and switch),
         f"{family} got --{switch}; {family} takes "
         f"vector observations with its own MLP actor-critic. Nothing was launched. Drop the "
         f"flag, or use the sac command for a recurrent or pixel agent.")
    # The launcher's variants say --recurrent (sac() from Python checks ac_kwargs against
    # the actor-critic itself): an MLP variant of a --recurrent True False grid would fail
    # only once launched, so it is refused with the grid.
    memory = sorted(set(args.get("ac_kwargs") or {}) & {"memory_size", "sequence_length",
                                                         "burn_in"})
    need(args.get("recurrent", True) or not memory,
         f"--ac_kwargs:{memory[0] if memory else ''} sets a recurrent actor-critic's memory, "
         f"but a variant of this command is not recurrent (--recurrent False, or no "
         f"--recurrent), and MLPActorCritic does not take it. Nothing was launched. Add "
         f"--recurrent; to compare with the MLP, launch the MLP runs in a command of their "
         f"own, with another --exp_name.")
    # Each MPI process steps num_envs copies through its share of an epoch.
    n_procs = num_procs()
    # (update_every need not be: a block comes with the step that passes each multiple.)
    for name, per_process, unit in (("steps_per_epoch", args["steps_per_epoch"] // n_procs,
                                      num_envs * n_procs),):
        need(per_process % num_envs == 0,
             f"sac() got {name}={args[name]} with num_envs={num_envs}"
             + (f" over {n_procs} MPI processes ({per_process} each)" if n_procs > 1 else "")
             + f": {name} counts transitions, and {num_envs} copies make {num_envs} at a time, "
               f"so it must be a multiple of {unit} (e.g. {name}="
               f"{max(1, args[name] // unit) * unit}).")
    need(args["replay_size"] >= args["batch_size"],
         f"sac() got replay_size={args['replay_size']} with batch_size={args['batch_size']}: "
         f"the replay buffer must hold at least one minibatch, so replay_size >= batch_size.")
    alpha = args["alpha"]
    if not isinstance(alpha, str):
        need(_is_num(alpha) and 0 <= alpha < FLOAT32_MAX,
             f"sac() got alpha={alpha!r}, but alpha (the entropy coefficient) must be a number "
             f">= 0 (finite in float32), 'auto' or 'auto_<initial alpha>'.")
    p_alpha = args.get("priority_alpha")
    need(p_alpha is None or (_is_num(p_alpha) and 0 <= p_alpha <= 10),
         f"sac() got priority_alpha={p_alpha!r}, but priority_alpha (the exponent of "
         f"prioritized replay's priorities) must be a number in [0, 10], or None for the "
         f"replay's own (0.6 for 'per', 0.4 for 'lap').")
    check_hidden_sizes(args.get("ac_kwargs"))
    check_precision(args.get("precision", "float32"))
    env_fn = args.get("env_fn", callable)
    need(callable(env_fn), f"sac() needs env_fn to be a function that makes the environment, "
                           f"e.g. lambda: gymnasium.make('Pendulum-v1'); got {env_fn!r}.")
    return parse_alpha(alpha, args.get("target_entropy"))


def cpu_flags(cpuinfo: str = "/proc/cpuinfo") -> tuple[str, set[str]]:
    """``(model, flags)`` of the CPU as ``cpuinfo`` (Linux's /proc/cpuinfo, what ``lscpu``
    reads) describes its first processor; ``('unknown', set())`` where there is no such file."""
    model, flags = "unknown", set()
    try:
        with open(cpuinfo, encoding="utf-8", errors="replace") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key.strip() == "model name" and model == "unknown":
                    model = value.strip()
                elif key.strip() == "flags":
                    flags = set(value.split())
                    break
    except OSError:
        pass
    return model, flags


def check_precision(precision, cpuinfo: str = "/proc/cpuinfo") -> None:
    """Refuse ``precision='bfloat16'`` on a CPU that does not multiply bfloat16 natively
    (none of :data:`~spinup_tf2.arguments.BF16_CPU_FLAGS` among ``cpuinfo``'s flags):
    there TensorFlow emulates the products, and the run would be slower than in float32."""
    if precision != "bfloat16":
        return
    model, flags = cpu_flags(cpuinfo)
    if not flags & set(BF16_CPU_FLAGS):
        have = sorted(flags & {"avx2", "avx512f", "amx_tile"}) or ["none of avx2, avx512f"]
        raise SpinupError(
            f"sac() got precision='bfloat16', but this CPU ({model}; {', '.join(have)}) has "
            f"no bfloat16 multiply ({' or '.join(BF16_CPU_FLAGS)} in lscpu's flags: AMD Zen 4 "
            f"and later, Intel Xeon since Cooper Lake, AMX since Sapphire Rapids), so its "
            f"products would be emulated and the run slower than in float32. Nothing was "
            f"written. Use precision='float32' (the default) here.")


def check_logger_kwargs(logger_kwargs: dict) -> None:
    """Refuse logger_kwargs keys EpochLogger does not take, and values of the wrong
    kind: a progress file name with a folder in it would write outside the run."""
    import os

    def need(ok, what):
        if not ok:
            raise SpinupError(f"sac() got logger_kwargs={logger_kwargs!r}: {what}")

    unknown = sorted(set(logger_kwargs) - set(LOGGER_KWARGS))
    need(not unknown, f"{', '.join(map(repr, unknown))} is not a logger setting; it takes "
                      f"{', '.join(LOGGER_KWARGS)}.")
    out, name = logger_kwargs.get("output_dir"), logger_kwargs.get("exp_name")
    need(out is None or (isinstance(out, (str, os.PathLike)) and str(out)),
         f"output_dir must be a path (a non-empty string), or None for the default; got "
         f"{out!r}.")
    need(name is None or isinstance(name, str),
         f"exp_name must be a string, or None; got {name!r}.")
    fname = logger_kwargs.get("output_fname", rundir.PROGRESS)
    need(fname is None or (isinstance(fname, str) and fname not in ("", ".", "..")
                           and os.sep not in fname and "\0" not in fname),
         f"output_fname must be a file name inside the run directory (no folder), e.g. "
         f"{rundir.PROGRESS!r}; got {fname!r}.")
    for key in ("tensorboard", "quiet"):
        need(isinstance(logger_kwargs.get(key, False), (bool, np.bool_)),
             f"{key} must be True or False; got {logger_kwargs.get(key)!r}.")
    group = logger_kwargs.get("track_group")
    need(group is None or (isinstance(group, str) and group),
         f"track_group must be a name (a non-empty string), or None; got {group!r}.")
    if logger_kwargs.get("track"):
        check_track(logger_kwargs["track"])  # its names, and its packages installed
    outputs = logger_kwargs.get("outputs") or []
    need(isinstance(outputs, (list, tuple))
         and all(callable(getattr(o, "write", None)) for o in outputs),
         f"outputs must be a list of logx.Output objects (each with a write(row, index) "
         f"method); got {outputs!r}.")


def parse_alpha(alpha, target_entropy):
    """``(alpha, tuner_args)`` from sac()'s ``alpha`` and ``target_entropy``.

    A number >= 0 is a fixed alpha (tuner_args None); ``'auto'`` learns alpha
    from 1.0, ``'auto_<x>'`` from x: then alpha is that initial value and
    tuner_args is ``(initial alpha, target_entropy)``, the target None when
    not given (:func:`default_target_entropy` then).
    """
    if isinstance(alpha, str):
        head, _, start = alpha.partition("_")
        try:
            initial = float(start) if start else 1.0
        except ValueError:
            initial = -1.0
        if head != "auto" or not (0 < initial < FLOAT32_MAX):
            raise SpinupError(
                f"sac() got alpha={alpha!r}: alpha is a number >= 0 (fixed), 'auto' (learned, "
                f"starting from 1.0) or 'auto_<x>' with x > 0 (learned, starting from x), "
                f"e.g. 'auto_0.1'.")
        if target_entropy is not None and not (_is_num(target_entropy)
                                               and np.isfinite(target_entropy)):
            raise SpinupError(f"sac() got target_entropy={target_entropy!r}; it must be a "
                              f"finite number, or None for the default (-act_dim, or "
                              f"{DISCRETE_ENTROPY_FRACTION} * log(n) for n discrete actions).")
        return initial, (initial, None if target_entropy is None else float(target_entropy))
    if target_entropy is not None:
        raise SpinupError(
            f"sac() got target_entropy={target_entropy!r} with a fixed alpha={alpha!r}: a "
            f"target entropy only matters when alpha is learned. Use alpha='auto' (or "
            f"'auto_<initial alpha>'), or drop target_entropy.")
    return alpha, None


def check_hidden_sizes(ac_kwargs) -> None:
    """Refuse ``ac_kwargs`` that is not a dict, or whose ``hidden_sizes`` is not a
    non-empty list of whole numbers >= 1."""
    if not isinstance(ac_kwargs, dict):
        raise SpinupError(f"sac() got ac_kwargs={ac_kwargs!r}; it must be a dict of keyword "
                          f"arguments for actor_critic, e.g. dict(hidden_sizes=[64, 64]).")
    sizes = ac_kwargs.get("hidden_sizes", (256, 256))
    if not (isinstance(sizes, (list, tuple)) and sizes
            and all(_is_int(n) and n >= 1 for n in sizes)):
        raise SpinupError(f"sac() got hidden_sizes={sizes!r}; it must be a non-empty list of "
                          f"whole numbers >= 1, the widths of the hidden layers, e.g. [256, 256] "
                          f"(--hid \"[256,256]\").")


# The experiment trackers a run can be sent to (logger_kwargs track=..., --track).
TRACKERS = ("mlflow", "wandb")


def tracker_names(track) -> list[str]:
    """The trackers ``track`` names (``'mlflow'``, ``'wandb'``, ``'mlflow,wandb'`` or a list
    of them), refused in one paragraph if one is not a tracker."""
    if track in (None, False, "", ()):
        return []
    names = track.split(",") if isinstance(track, str) else list(track)
    names = [str(n).strip().lower() for n in names]
    bad = [n for n in names if n not in TRACKERS]
    if bad or not names:
        raise SpinupError(f"track={track!r}: {', '.join(map(repr, bad)) or 'nothing'} is no "
                          f"tracker this logger knows; give 'mlflow', 'wandb' or "
                          f"'mlflow,wandb' (--track mlflow). Nothing was written.")
    return list(dict.fromkeys(names))


def check_track(track) -> list[str]:
    """The trackers ``track`` names, each of whose packages is installed; else one
    paragraph (before anything is written)."""
    names = tracker_names(track)
    for name in names:
        try:
            __import__(name)
        except ImportError:
            raise SpinupError(f"track={name!r} needs the {name} package, which is not "
                              f"installed: pip install -e \".[track]\" (or pip install "
                              f"{name}). Nothing was written.") from None
    return names
