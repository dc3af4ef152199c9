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

from typing import Any, NamedTuple


class Arg(NamedTuple):
    """One argument.

    ``kind``: ``int``, ``float``, ``bool``, ``str``, ``dict``, or ``object`` (anything
    else: a function, a class, a number or a string); ``low``: the smallest value of an
    ``int`` checked by the plain rule (None: checked by a rule of its own); ``high``: the
    largest, where there is one; ``free``: a
    resumed run may give another value; ``since``: the release that added it (a run made
    before has none in its config.json, and resumes as if it had the default); ``where``:
    ``'sac'`` (an argument of ``sac()``), ``'switch'`` (a launcher on/off flag),
    ``'pixels'`` (how ``--pixels`` renders), ``'run'`` (how the launcher runs the grid),
    ``'logger'`` (a shorthand for a ``logger_kwargs`` key), or ``'launcher'`` (another
    launcher flag); ``help``: one line for ``--help`` (``sac()``'s
    own arguments are documented in its docstring)."""

    name: str
    kind: str
    default: Any = None
    low: int | None = None
    free: bool = False
    high: int | None = None
    since: str = "0.1"
    where: str = "sac"
    help: str = ""


SAC_ARGS = (
    Arg("env_fn", "object", free=True),
    Arg("actor_critic", "object"),
    Arg("ac_kwargs", "dict", {}),
    Arg("seed", "int", 0, low=0),
    Arg("steps_per_epoch", "int", 4000, low=1),
    Arg("epochs", "int", 100, low=1, free=True),
    Arg("replay_size", "int", int(1e6), low=1),
    Arg("gamma", "float", 0.99),
    Arg("polyak", "float", 0.995),
    Arg("lr", "float", 1e-3),
    Arg("alpha", "object", 0.2),
    Arg("batch_size", "int", 100, low=1),
    Arg("start_steps", "int", 10000, low=0),
    Arg("update_after", "int", 1000, low=0),
    Arg("update_every", "int", 50, low=1),
    Arg("num_test_episodes", "int", 10, low=0),
    Arg("max_ep_len", "int", 1000, low=1),
    Arg("logger_kwargs", "dict", {}, free=True),
    Arg("save_freq", "int", 1, low=1, free=True),
    Arg("target_entropy", "object"),
    Arg("resume", "bool", False, free=True),
    Arg("normalize_obs", "bool", False),
    Arg("overwrite", "bool", False, free=True),
    Arg("video_freq", "int", 0, free=True),
    Arg("updates_per_step", "int", 1, since="0.2"),
    Arg("num_envs", "int", 1, since="0.2"),
    Arg("vector_mode", "str", "sync", since="0.2"),
    Arg("replay_buffer_class", "object", since="0.3"),
    Arg("n_step", "int", 1, since="0.3"),
    Arg("her", "bool", False, since="0.3"),
    Arg("n_sampled_goal", "int", 4, since="0.3"),
    Arg("goal_selection_strategy", "str", "future", since="0.3"),
)

LAUNCHER_ARGS = (
    Arg("env_name", "str", where="launcher",
        help="--env NAME: the gymnasium id to train on (several make a grid; package:EnvId "
             "imports the package that registers it)."),
    Arg("env_kwargs", "dict", where="launcher", since="0.2",
        help="--env_kwargs:key VALUE: gymnasium.make's keyword arguments."),
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

# The simple checks: (name, smallest value) of sac()'s whole-number arguments.
WHOLE_NUMBERS = tuple((a.name, a.low) for a in SAC_ARGS if a.kind == "int" and a.low is not None)
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
STRING_KEYS = frozenset(a.name for a in LAUNCHER_ARGS if a.kind == "str")
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


def grouped_help(cmd: str, defaults: dict, docs: list[str]) -> str:
    """Every flag of ``python -m spinup_tf2.run CMD``, grouped, each with its default and
    one line: the algorithm's arguments (``defaults``, from its signature; the line from
    the first of ``docs``, its docstring then sac()'s, that documents it) and the
    launcher's, from :data:`LAUNCHER_ARGS`."""
    lines: dict = {}
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
    launcher = [("The environment", ("env_name", "env_kwargs")),
                ("Pixels", ("pixels", "action_repeat", "frame_stack", "image_size")),
                ("Memory", ("recurrent",)),
                ("Output", ("tensorboard", "quiet")),
                ("Launching", ("exp_name",) + tuple(a.name for a in LAUNCHER_ARGS
                                                     if a.where == "run"))]
    by_name = {a.name: a for a in LAUNCHER_ARGS}
    for title, names in launcher:
        out += ["", title + ":"]
        for n in names:
            a = by_name[n]
            flag, _, text = a.help.partition(": ")
            out.append(f"    {flag:<26} {'' if a.default is None else repr(a.default):<12} {text}")
    return "\n".join(out)
