"""One declared table of ``sac()``'s arguments and of the launcher's own flags.

Each :class:`Arg` says what an argument is: its kind and bounds, its default, whether a
resumed run may change it, the release that added it, and where it belongs (a ``sac()``
argument, a launcher switch, a ``--pixels`` option, a run-level flag). From the table come
the simple checks (:data:`WHOLE_NUMBERS`), the launcher's switches, string keys and
run-level flags, the resume comparison (:data:`FREE_ARGS`, :data:`ADDED_ARGS`) and the
launcher's part of ``--help``. ``sac()`` keeps Spinning Up's explicit signature; the tests
hold this table against it and against its docstring.

A leaf: it imports nothing, so the launcher reads it without TensorFlow.
"""

from __future__ import annotations

import numbers
from typing import Any, NamedTuple

# Seeds fit Keras' 32 bits with room for the offsets of MPI ranks and the test environment.
SEED_LIMIT = 2**31
FLOAT32_MAX = 3.4028234663852886e38  # numpy.finfo(numpy.float32).max, without numpy
VECTOR_MODES = ("sync", "async")  # how num_envs copies step: here, or one process each
GOAL_STRATEGIES = ("future", "final", "episode")  # where HER's new goal comes from
REPLAYS = ("uniform", "per", "lap")  # how minibatches are drawn (algos/sac/priority.py)
PRECISIONS = ("float32", "bfloat16")  # the training step's matrix products (core.products)
BF16_CPU_FLAGS = ("avx512_bf16", "amx_bf16")  # a CPU that multiplies bfloat16 natively


class Arg(NamedTuple):
    """One argument.

    ``kind``: ``int``, ``float``, ``bool``, ``str``, ``dict``, or ``object`` (anything
    else: a function, a class, a number or a string); ``low``: the smallest value of an
    ``int`` or ``float`` checked by the plain rule (:func:`problem`; None: checked by a
    rule of its own), excluded with ``low_open``; ``high``: the largest, where there is
    one; ``choices``: the values a ``str`` may take; ``free``: a
    resumed run may give another value; ``since``: the release that added it (a run made
    before has none in its config.json, and resumes as if it had the default); ``where``:
    ``'sac'`` (an argument of ``sac()``), ``'switch'`` (a launcher on/off flag),
    ``'pixels'`` (how ``--pixels`` renders), ``'run'`` (how the launcher runs the grid),
    ``'logger'`` (a shorthand for a ``logger_kwargs`` key), or ``'launcher'`` (another
    launcher flag); ``help``: one line for ``--help`` (``sac()``'s arguments are documented
    at length in its docstring)."""

    name: str
    kind: str
    default: Any = None
    low: float | None = None
    free: bool = False
    high: float | None = None
    since: str = "0.1"
    where: str = "sac"
    help: str = ""
    choices: tuple = ()
    low_open: bool = False


def accepted(arg: Arg) -> str:
    """What ``arg`` accepts, in words: ``'a whole number >= 1'``, ``'a number in [0, 1]'``,
    ``"one of 'sync', 'async'"``."""
    def num(x) -> str:
        return str(int(x)) if float(x).is_integer() and abs(x) < 1e15 else f"{x:g}"

    if arg.choices:
        return "one of " + ", ".join(map(repr, arg.choices))
    what = "a whole number" if arg.kind == "int" else "a number"
    if arg.high is not None and arg.high >= FLOAT32_MAX:
        return f"{what} {'>' if arg.low_open else '>='} {num(arg.low)} (finite in float32)"
    if arg.high is not None:
        return f"{what} in {'(' if arg.low_open else '['}{num(arg.low)}, {num(arg.high)}]"
    return f"{what} {'>' if arg.low_open else '>='} {num(arg.low)}"


def problem(arg: Arg, value) -> str | None:
    """Why ``value`` is not one ``arg`` takes by its declared kind, bounds and choices
    (one sentence naming the value and what is accepted), or None when it is (or when the
    argument has a rule of its own)."""
    if arg.choices:
        ok = value in arg.choices and isinstance(value, str)
    elif arg.low is None or arg.kind not in ("int", "float"):
        return None
    else:
        kind = numbers.Integral if arg.kind == "int" else numbers.Real
        ok = (isinstance(value, kind) and not isinstance(value, bool)
              and (value > arg.low if arg.low_open else value >= arg.low)
              and (arg.high is None or value <= arg.high))
    if ok:
        return None
    hint = ""
    if arg.kind == "int" and isinstance(value, numbers.Real) and not isinstance(
            value, (bool, numbers.Integral)) and float(value).is_integer():
        hint = f" (e.g. {int(value)})"
    return f"sac() got {arg.name}={value!r}, but {arg.name} must be {accepted(arg)}{hint}. " \
           f"{arg.name}: {arg.help}"


SAC_ARGS = (
    Arg("env_fn", "object", free=True,
        help="Makes one environment (gymnasium API) per call."),
    Arg("actor_critic", "object",
        help="The actor-critic class, or a variant's name ('crossq', 'recurrent', ...)."),
    Arg("ac_kwargs", "dict", {},
        help="The actor-critic's own arguments (hidden_sizes, activation, ...)."),
    Arg("seed", "int", 0, low=0, high=SEED_LIMIT - 1,
        help="Seeds the weights, the environments, exploration and minibatches."),
    Arg("steps_per_epoch", "int", 4000, low=1,
        help="Environment steps per epoch (one progress.txt row, one checkpoint)."),
    Arg("epochs", "int", 100, low=1, free=True, help="Epochs the run lasts."),
    Arg("replay_size", "int", int(1e6), low=1,
        help="The replay buffer's capacity, in transitions."),
    Arg("gamma", "float", 0.99, low=0.0, high=1.0, help="The discount factor."),
    Arg("polyak", "float", 0.995, low=0.0, high=1.0,
        help="Weight of the old target in the target networks' averaging."),
    Arg("lr", "float", 1e-3, low=0.0, low_open=True, high=FLOAT32_MAX,
        help="Adam's learning rate (policy, critics, and alpha when learned)."),
    Arg("alpha", "object", 0.2,
        help="The entropy weight: a number, 'auto' (learned from 1.0) or 'auto_<start>'."),
    Arg("batch_size", "int", 100, low=1, help="Transitions per minibatch."),
    Arg("start_steps", "int", 10000, low=0,
        help="First steps with uniformly random actions, to explore."),
    Arg("update_after", "int", 1000, low=0, help="Environment steps before the first update."),
    Arg("update_every", "int", 50, low=1,
        help="Environment steps between blocks of updates (one compiled call each)."),
    Arg("num_test_episodes", "int", 10, low=0,
        help="Deterministic test episodes at the end of each epoch."),
    Arg("max_ep_len", "int", 1000, low=1, help="Episodes are cut at this length."),
    Arg("logger_kwargs", "dict", {}, free=True,
        help="EpochLogger's arguments: output_dir, exp_name, tensorboard, ..."),
    Arg("save_freq", "int", 1, low=1, free=True,
        help="Epochs between saves of the policy and the training checkpoint."),
    Arg("target_entropy", "object",
        help="The entropy a learned alpha aims at (default -dim(A), or the variant's own)."),
    Arg("resume", "bool", False, free=True,
        help="Continue the run in output_dir from its last checkpoint."),
    Arg("normalize_obs", "bool", False,
        help="Normalize observations by their running mean and variance."),
    Arg("overwrite", "bool", False, free=True,
        help="Replace an earlier run in the output directory."),
    Arg("video_freq", "int", 0, low=0, free=True,
        help="Epochs between videos of the policy (0: none)."),
    Arg("updates_per_step", "int", 1, low=1, since="0.2",
        help="Updates per environment step (the update-to-data ratio)."),
    Arg("num_envs", "int", 1, low=1, since="0.2",
        help="Environment copies stepping at once (gymnasium's vector API)."),
    Arg("vector_mode", "str", "sync", since="0.2", choices=VECTOR_MODES,
        help="How the copies step: 'sync' (here) or 'async' (one process each)."),
    Arg("replay_buffer_class", "object", since="0.3",
        help="A replay buffer class of one's own (SB3's replay_buffer_class)."),
    Arg("n_step", "int", 1, low=1, since="0.3",
        help="Environment steps each stored transition spans (n-step returns)."),
    Arg("her", "bool", False, since="0.3",
        help="Hindsight experience replay, for goal-conditioned tasks."),
    Arg("n_sampled_goal", "int", 4, low=0, since="0.3",
        help="With her, relabelled transitions per original one."),
    Arg("goal_selection_strategy", "str", "future", since="0.3", choices=GOAL_STRATEGIES,
        help="With her, where the new goal comes from: 'future', 'final' or 'episode'."),
    Arg("replay", "str", "uniform", since="0.3", choices=REPLAYS,
        help="How minibatches are drawn: 'uniform', 'per' (prioritized) or 'lap'."),
    Arg("priority_alpha", "object", since="0.3",
        help="With replay 'per' or 'lap', the priorities' exponent (0.6 and 0.4)."),
    Arg("priority_beta", "float", 0.4, low=0.0, high=1.0, since="0.3",
        help="With replay 'per', the importance weights' first exponent (to 1 at the end)."),
    Arg("actors", "int", 0, low=0, since="0.3",
        help="Ray actors collecting for this learner (0: collect in this process)."),
    Arg("actor_steps", "int", 100, low=1, since="0.3",
        help="With actors, steps each takes per round (it gets new weights each round)."),
    Arg("actor_cpus", "float", 1.0, low=0.0, low_open=True, high=1024, since="0.3",
        help="With actors, the CPUs each asks of the Ray cluster."),
    Arg("precision", "str", "float32", since="0.3", choices=PRECISIONS,
        help="The update's matrix products: 'float32' or 'bfloat16' (a CPU with AVX512_BF16 "
             "or AMX)."),
)

LAUNCHER_ARGS = (
    Arg("env_name", "str", where="launcher",
        help="--env NAME: the gymnasium id to train on (several make a grid; package:EnvId "
             "imports the package that registers it)."),
    Arg("env_kwargs", "dict", where="launcher", since="0.2",
        help="--env_kwargs:key VALUE: gymnasium.make's keyword arguments."),
    Arg("env_wrappers", "str", where="launcher", since="0.3",
        help="--env_wrappers CHAIN: gymnasium wrappers around it, innermost first, e.g. "
             "\"FilterObservation(filter_keys=['image']), FlattenObservation\" (replayed "
             "by test_policy and export)."),
    Arg("exp_name", "str", where="launcher",
        help="--exp_name NAME: the experiment's name, the folder under the data directory."),
    Arg("recurrent", "bool", False, where="switch", since="0.2",
        help="--recurrent: the recurrent actor-critic (memory, for partial observations)."),
    Arg("pixels", "bool", False, where="switch", since="0.2",
        help="--pixels: learn from the environment's rendered frames (DrQ's SAC)."),
    Arg("action_repeat", "int", 1, low=1, high=100, where="pixels", since="0.2",
        help="--action_repeat N: with --pixels, each action repeated N times (1-100)."),
    Arg("frame_stack", "int", 3, low=1, high=16, where="pixels", since="0.2",
        help="--frame_stack N: with --pixels, frames per observation (1-16)."),
    Arg("image_size", "int", 84, low=16, high=1024, where="pixels", since="0.2",
        help="--image_size N: with --pixels, frames of N x N pixels (16-1024)."),
    Arg("tensorboard", "bool", False, where="logger",
        help="--tensorboard: also write every logged value to TensorBoard (tb/)."),
    Arg("quiet", "bool", False, where="logger", since="0.3",
        help="--quiet: a short start: one line where config.json is, not all of it."),
    Arg("track", "str", where="logger", since="0.3",
        help="--track NAME: also send the run to mlflow, wandb or both (mlflow,wandb)."),
    Arg("num_cpu", "object", 1, where="run",
        help="--cpu N: MPI processes per run ('auto': one per core)."),
    Arg("data_dir", "str", where="run",
        help="--data_dir DIR: where runs go (default: data/ of the working directory)."),
    Arg("datestamp", "bool", False, where="run",
        help="--datestamp: date-stamped run folders."),
    Arg("parallel", "int", 1, where="run", since="0.2",
        help="--parallel N: N runs of the grid at once, on this machine."),
    Arg("oversubscribe", "bool", False, where="run", since="0.2",
        help="--oversubscribe: allow more processes than cores."),
    Arg("backend", "str", "local", where="run", since="0.2",
        help="--backend ray: run the grid on a Ray cluster."),
    Arg("ray_address", "str", where="run", since="0.2",
        help="--ray_address HOST:PORT: the Ray cluster to use."),
    Arg("ray_worker_dir", "str", where="run", since="0.2",
        help="--ray_worker_dir DIR: where Ray's workers write runs."),
)

# tune's own flags (python -m spinup_tf2.run tune ALGO ...); it also takes --exp_name (the
# study's name) and the run-level flags above but --datestamp and --ray_worker_dir.
TUNE_ARGS = (
    Arg("trials", "int", 20, low=1, where="tune", help="--trials N: trials in the study in all."),
    Arg("objective", "str", "AverageTestEpRet", where="tune",
        help="--objective COLUMN: the progress.txt column a trial is scored by."),
    Arg("objective_epochs", "int", 5, low=1, where="tune",
        help="--objective_epochs K: a run's score is the column's mean over its last K "
             "epochs."),
    Arg("direction", "str", "maximize", where="tune",
        help="--direction maximize|minimize: which way the objective is better."),
    Arg("pruner", "str", "median", where="tune",
        help="--pruner median|percentile|halving|none: stops trials early (after each "
             "epoch)."),
    Arg("pruner_kwargs", "dict", {}, where="tune",
        help="--pruner_kwargs:NAME VALUE: the Optuna pruner's arguments (steps are epochs)."),
    Arg("sampler_kwargs", "dict", {}, where="tune",
        help="--sampler_kwargs:NAME VALUE: Optuna's TPESampler's arguments."),
    Arg("sampler_seed", "int", 0, low=0, where="tune",
        help="--sampler_seed N: seeds the sampler (with each trial's number)."),
    Arg("target_scores", "dict", {}, where="tune",
        help="--target_scores:ENV [LOW,HIGH]: scale ENV's scores to 0..1 before averaging."),
    Arg("storage", "str", where="tune",
        help="--storage PATH|URL: the study's journal file or database (default "
             "data/<exp_name>/study.journal)."),
    Arg("resume", "bool", False, where="tune",
        help="--resume: continue the study (or join it from another driver)."),
)

# The simple checks: sac()'s arguments with declared bounds or choices (see problem()).
CHECKED = tuple(a for a in SAC_ARGS if a.choices or (a.low is not None
                                                      and a.kind in ("int", "float")))
# The resume comparison: what a resumed call may change (and config.json's keys that are
# not arguments: the logger, the experiment's name) ...
FREE_ARGS = frozenset({a.name for a in SAC_ARGS if a.free} | {"logger", "exp_name"})
# ... and what a run of an earlier release lacks in its config.json, with the value it had.
ADDED_ARGS = {a.name: a.default for a in SAC_ARGS if a.since != "0.1"}
# The launcher: on/off switches, --pixels' options, flags whose values are always names,
# and the run-level flags (ExperimentGrid.run's arguments), with their defaults.
SWITCHES = {a.name: a.default for a in LAUNCHER_ARGS if a.where == "switch"}
PIXEL_OPTIONS = {a.name: a.default for a in LAUNCHER_ARGS if a.where == "pixels"}
PIXEL_BOUNDS = {a.name: (a.low, a.high) for a in LAUNCHER_ARGS if a.where == "pixels"}
STRING_KEYS = frozenset(a.name for a in LAUNCHER_ARGS if a.kind == "str") | {
    "logger_kwargs:track"}
RUN_KEYS = [a.name for a in LAUNCHER_ARGS if a.where == "run"]


def tune_help() -> str:
    """tune's flags, one line each (with its default), then the launcher's flags it shares."""
    shared = [a for a in LAUNCHER_ARGS if a.where == "run"
              and a.name not in ("datestamp", "ray_worker_dir", "parallel", "backend")]
    lines = [a.help + ("" if a.default is None or a.default is False or a.default == {}
                       else f" Default: {a.default}.") for a in TUNE_ARGS]
    lines += ["--exp_name NAME: the study's name and folder. Default: tune_<algo>.",
              "--parallel N: trials per round (at once here; on Ray too). Default: 1 here, "
              "the cluster's CPUs on Ray.",
              "--backend ray: run each trial as a Ray task. Default: local."]
    return "\n".join(f"    {line}" for line in lines + [a.help for a in shared])


# Spinning Up's own sac() arguments, in its order; the rest of SAC_ARGS go beyond it.
SPINNING_UP_ARGS = ("env_fn", "actor_critic", "ac_kwargs", "seed", "steps_per_epoch", "epochs",
                    "replay_size", "gamma", "polyak", "lr", "alpha", "batch_size",
                    "start_steps", "update_after", "update_every", "num_test_episodes",
                    "max_ep_len", "logger_kwargs", "save_freq")


def _one_liners(doc: str) -> dict:
    """``{argument: the first sentence of its entry}`` from a docstring's ``Args:``."""
    import re

    found, name, text = {}, None, []
    for line in doc.splitlines() + [""]:
        m = re.match(r"^ {8}(\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$", line)
        if m or not line.strip() or not line.startswith(" " * 9):
            if name:
                first = " ".join(text).replace("``", "").split(". ")[0].rstrip(".")
                cut = first if len(first) <= 72 else first[:70].rsplit(" ", 1)[0] + " ..."
                found.setdefault(name, cut)
            name, text = (m[1], [m[2]]) if m else (None, [])
        elif name:
            text.append(line.strip())
    return found


def grouped_help(cmd: str, defaults: dict, docs: list[str], refused: tuple = ()) -> str:
    """Every flag of ``python -m spinup_tf2.run CMD``, grouped, each with its default and
    one line: the algorithm's arguments (``defaults``, from its signature; the line is the
    declared table's, or for an argument of its own the first of ``docs`` that documents
    it) and the launcher's, from :data:`LAUNCHER_ARGS`, but for the groups of the
    launcher's switches in ``refused`` (the SAC family's ``pixels`` and ``recurrent``)."""
    lines: dict = {a.name: a.help for a in SAC_ARGS}
    for doc in docs:
        for k, v in _one_liners(doc).items():
            lines.setdefault(k, v)
    shown = {"logger_kwargs": "{}"}

    def row(flag: str, default, text: str) -> str:
        plain = default is not None and type(default) is not object  # NOT_A_VALUE: none shown
        default = shown.get(flag, repr(default) if plain else "")
        return f"    --{flag:<24} {default:<12} {text}"

    own = [n for n in defaults if n not in {a.name for a in SAC_ARGS}]
    beyond = [a.name for a in SAC_ARGS if a.name not in SPINNING_UP_ARGS] + own
    groups = [("Spinning Up's arguments", SPINNING_UP_ARGS),
              ("Beyond Spinning Up" + (f" ({cmd}'s own last)" if own else ""), beyond)]
    out = [f"Every flag of python -m spinup_tf2.run {cmd} (FLAG DEFAULT WHAT; several values "
           f"make a grid):"]
    for title, names in groups:
        out += ["", title + ":"]
        out += [row(n, defaults.get(n), lines.get(n, "")) for n in names if n in defaults
                and n != "env_fn"]
    launcher = [("The environment", ("env_name", "env_kwargs", "env_wrappers")),
                ("Pixels", ("pixels", "action_repeat", "frame_stack", "image_size")),
                ("Memory", ("recurrent",)),
                ("Output", ("tensorboard", "quiet", "track")),
                ("Launching", ("exp_name",) + tuple(a.name for a in LAUNCHER_ARGS
                                                     if a.where == "run"))]
    by_name = {a.name: a for a in LAUNCHER_ARGS}
    for title, names in launcher:
        if set(names) & set(refused):
            continue
        out += ["", title + ":"]
        for n in names:
            a = by_name[n]
            flag, _, text = a.help.partition(": ")
            out.append(f"    {flag:<26} {'' if a.default is None else repr(a.default):<12} {text}")
    return "\n".join(out)
