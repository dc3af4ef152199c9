"""Hyperparameter search: an Optuna study whose trials are ordinary runs.

``python -m spinup_tf2.run tune sac --env Hopper-v5 --trials 50 --lr loguniform:1e-4:3e-3
--batch_size choice:64,128,256 ...`` or ``spinup_tf2.tune(sac, trials=50, env_name=...,
lr='loguniform:1e-4:3e-3')``. A flag whose value is a distribution is searched; any other
is fixed, as on a grid's command line (several ``--env`` or ``--seed`` values: each trial
runs them all and is scored by their mean). Each trial's runs are ordinary run
directories under the study's folder, ``<data_dir>/<study>/<study>_t<N>/...``.

How the trials are chosen, and why a study gives the same trials wherever it runs: trials
go in rounds of ``parallel``. Each round's trials are asked for together, each from
Optuna's TPE sampler seeded by the study's ``sampler_seed`` and the trial's number, so
they see the same finished trials; each trial is judged by the pruner only against the
trials finished before its round (:mod:`spinup_tf2.launch.trial`). So the same flags give
the same trials (parameters, pruning epochs, values) on this machine with
``--parallel K`` or on a Ray cluster with ``--parallel K``, and after a resume. Several
drivers sharing one storage (Optuna's multi-worker mode) each run their own rounds; then
the trials depend on timing, as in any Optuna study with several workers.
"""

from __future__ import annotations

import difflib
import importlib
import json
import os
import os.path as osp
import socket
import time
from typing import Any

from spinup_tf2 import rundir
from spinup_tf2.arguments import TUNE_ARGS
from spinup_tf2.errors import SpinupError, cli_main, colorize, error_line
from spinup_tf2.family import ALGORITHMS
from spinup_tf2.launch.study import (
    COMMAND_KEY,
    ERROR_KEY,
    HISTORY_KEY,
    OWNER_KEY,
    PRUNER_KEY,
    RUNS_KEY,
    SECONDS_KEY,
    SPEC_KEY,
    STOPPED,
    STUDY_FILE,
    check_optuna_installed,
    check_study_dir,
    format_flags,
    format_value,
    open_storage,
    study_writing,
    write_report,
)
from spinup_tf2.launch.trial import PRUNERS, Objective, RunSpec, TrialSpec, make_pruner

DISTRIBUTIONS = ("uniform", "loguniform", "int", "logint", "choice")


def _split_choices(text: str) -> list[str]:
    """``'[64,64],[256,256]'`` -> ``['[64,64]', '[256,256]']``: commas outside brackets."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        depth += ch in "([{"
        depth -= ch in ")]}"
        if ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    return [p.strip() for p in parts + [text[start:]]]


def parse_distribution(key: str, value):
    """The Optuna distribution a flag value asks to search, or None for a fixed value.

    ``uniform:LOW:HIGH``, ``loguniform:LOW:HIGH``, ``int:LOW:HIGH``, ``logint:LOW:HIGH`` or
    ``choice:A,B,...`` (each choice a flag value: ``choice:[64,64],[256,256]``,
    ``choice:tf.nn.relu,tf.nn.tanh``), or an Optuna distribution itself. Choices that are
    not numbers, strings, bools or None are kept as their text and parsed for each run.
    """
    import optuna.distributions as od

    from spinup_tf2.launch.flags import STRING_KEYS, parse_value

    if isinstance(value, od.BaseDistribution):
        return value
    if not isinstance(value, str) or key in STRING_KEYS or ":" not in value:
        return None
    name, _, rest = value.partition(":")
    if name not in DISTRIBUTIONS:
        if name.isidentifier() and name.islower():
            close = difflib.get_close_matches(name, DISTRIBUTIONS, n=1)
            raise SpinupError(
                f"--{key} {value}: {name!r} is not a distribution to search"
                + (f" (did you mean {close[0]}?)" if close else "") + ". Valid: "
                "uniform:LOW:HIGH, loguniform:LOW:HIGH, int:LOW:HIGH, logint:LOW:HIGH, "
                "choice:A,B,... (e.g. --lr loguniform:1e-4:3e-3). Nothing was started.")
        return None
    if name == "choice":
        texts = [t for t in _split_choices(rest) if t]
        if len(texts) < 2:
            raise SpinupError(f"--{key} {value}: a choice needs at least two values, "
                              f"separated by commas (choice:64,128,256); for one value, give "
                              f"it as a fixed flag (--{key} {rest}). Nothing was started.")
        values = [parse_value(t, key) for t in texts]
        plain = all(v is None or isinstance(v, (bool, int, float, str)) for v in values)
        return od.CategoricalDistribution(values if plain else texts)
    bounds = rest.split(":")
    try:
        low, high = (float(b) for b in bounds)
    except ValueError:
        raise SpinupError(f"--{key} {value}: {name} takes two numbers, {name}:LOW:HIGH "
                          f"(e.g. {name}:1e-4:3e-3); got {rest!r}. Nothing was "
                          f"started.") from None
    log = name.startswith("log")
    if not low < high or (log and low <= 0):
        raise SpinupError(f"--{key} {value}: the range is empty or invalid: {name} needs LOW "
                          f"< HIGH" + (" and LOW > 0 (a log scale)" if log else "")
                          + f"; got LOW={bounds[0]}, HIGH={bounds[1]}. Nothing was started.")
    if name.endswith("int"):
        if not (low.is_integer() and high.is_integer()):
            raise SpinupError(f"--{key} {value}: {name} takes whole-number bounds; got "
                              f"{rest!r}. Use {'log' if log else ''}uniform for real "
                              f"numbers. Nothing was started.")
        return od.IntDistribution(int(low), int(high), log=log)
    return od.FloatDistribution(low, high, log=log)


def distribution_text(dist) -> str:
    """A distribution as its flag value (the inverse of :func:`parse_distribution`)."""
    import optuna.distributions as od

    if isinstance(dist, od.CategoricalDistribution):
        return "choice:" + ",".join(format_value(c) for c in dist.choices)
    if isinstance(dist, od.IntDistribution):
        return f"{'log' if dist.log else ''}int:{dist.low}:{dist.high}"
    return f"{'log' if dist.log else ''}uniform:{dist.low!r}:{dist.high!r}"


def decode(key: str, value):
    """A sampled parameter as the run takes it: a choice kept as text, parsed."""
    from spinup_tf2.launch.flags import STRING_KEYS, parse_value

    return parse_value(value, key) if isinstance(value, str) and key not in STRING_KEYS \
        else value


class Study:
    """What a study runs: the algorithm (``cmd``, its name on the command line, and the
    function), the search space (flat keys to distributions), the fixed arguments, the
    environments and seeds each trial runs, and where the runs go."""

    def __init__(self, cmd: str, algo, space: dict, fixed: dict, envs: list, seeds: list,
                 study_dir: str, num_cpu: int):
        self.cmd, self.algo, self.space, self.fixed = cmd, algo, space, fixed
        self.envs, self.seeds, self.study_dir, self.num_cpu = envs, seeds, study_dir, num_cpu
        self.name = osp.basename(study_dir)

    def command(self) -> list[str]:
        """The command line of one run of the study, less the searched flags."""
        return ["python", "-m", "spinup_tf2.run", self.cmd] + format_flags(
            {"env": self.envs, **({"seed": self.seeds} if self.seeds != [0] else {}),
             **self.fixed}, several=("env", "seed"))

    def variants(self) -> list[dict]:
        """Argument sets that reach every end of the search space (each bound, each
        choice), for the launcher's checks before anything starts."""
        from spinup_tf2.launch.grid import _nest

        ends = [{}]
        for key, dist in self.space.items():
            values = getattr(dist, "choices", None) or (dist.low, dist.high)
            ends += [{key: decode(key, v)} for v in values]
        return [_nest({"env_name": env, "seed": self.seeds[0], **self.fixed, **end})
                for env in self.envs for end in ends]

    def track_group(self, kwargs: dict) -> dict:
        """The trackers' group of every trial's runs: the study's name (``--track``)."""
        return {"track_group": self.name} if (kwargs.get("logger_kwargs") or {}).get(
            "track") else {}

    def trial_spec(self, number: int, params: dict, history: list, objective: Objective,
                   direction: str, pruner: str, pruner_kwargs: dict) -> TrialSpec:
        """The runs of trial ``number`` with ``params``: fresh, resumed from their
        checkpoints (a trial stopped midway), or already done."""
        from spinup_tf2.launch.grid import _nest
        from spinup_tf2.launch.processes import experiment_command

        kwargs = _nest({**self.fixed, **{k: decode(k, v) for k, v in params.items()}})
        epochs = kwargs.get("epochs", self.algo.defaults().get("epochs", 100))
        runs = []
        for env in self.envs:
            exp_name = f"{self.name}_t{number:03d}" + (
                "_" + rundir.name_fragment(env) if len(self.envs) > 1 else "")
            for seed in self.seeds:
                out = rundir.output_dir_for(exp_name, seed, self.study_dir)
                rows = rundir.progress_rows(out) if osp.isdir(out) else 0
                resuming = osp.isdir(osp.join(out, rundir.TRAIN_STATE))
                if rows and not resuming and rows < epochs:
                    raise _Unresumable(f"{out} has {rows} epoch(s) but no training checkpoint "
                                       f"(a run with --cpu > 1 saves none)")
                extra = {"resume": True} if resuming else (
                    {"overwrite": True} if osp.isdir(out) else {})
                cmd, _ = experiment_command(
                    exp_name, self.algo, seed=seed, num_cpu=self.num_cpu, verbose=False,
                    env_name=env, **{**kwargs, **extra,
                                     "logger_kwargs": {**kwargs.get("logger_kwargs", {}),
                                                       "output_dir": out,
                                                       "exp_name": exp_name,
                                                       **self.track_group(kwargs)}})
                with open(cmd[-1], "rb") as f:
                    payload = f.read()
                os.remove(cmd[-1])
                runs.append(RunSpec(env, payload, out, resuming or rows > 0,
                                    done=rows >= epochs))
        return TrialSpec(number, runs, objective, direction, pruner, pruner_kwargs, history)


class _Unresumable(Exception):
    """A stopped trial whose runs cannot go on: it is marked failed."""


def _owner() -> str:
    import psutil

    return f"{socket.gethostname()}:{os.getpid()}:{int(psutil.Process().create_time())}"


def _abandoned(trial) -> bool:
    """Whether a running trial's driver is gone (stopped, or a dead process on this
    host); a driver on another host is taken to be alive."""
    import psutil

    owner = trial.user_attrs.get(OWNER_KEY)
    if owner in (None, STOPPED):
        return True
    host, pid, created = owner.rsplit(":", 2)
    if host != socket.gethostname():
        return False
    try:
        return int(psutil.Process(int(pid)).create_time()) != int(created)
    except psutil.NoSuchProcess:
        return True


def tune(algo, trials: int = 20, objective: str = "AverageTestEpRet",
         objective_epochs: int = 5, direction: str = "maximize", pruner: str = "median",
         pruner_kwargs: dict | None = None, sampler_kwargs: dict | None = None,
         sampler_seed: int = 0, target_scores: dict | None = None,
         exp_name: str | None = None, storage: str | None = None,
         data_dir: str | None = None, parallel: int | None = None, num_cpu: int = 1,
         oversubscribe: bool = False, backend: str = "local", address: str | None = None,
         resume: bool = False, **args: Any):
    """Search ``algo``'s hyperparameters with an Optuna study; return the study.

    Args:
        algo: The algorithm: ``spinup_tf2.sac`` (or a variant), or its name ('sac').

        trials (int): Trials in the study in all (a resumed study runs what is left).

        objective (string): The progress.txt column a trial is scored by.

        objective_epochs (int): A run's score is the mean of ``objective`` over its last
            this many epochs; the pruner sees the same, after each epoch.

        direction (string): 'maximize' (returns) or 'minimize' (losses).

        pruner (string): 'median', 'percentile', 'halving' (successive halving) or
            'none', with ``pruner_kwargs`` for Optuna's class (e.g.
            ``dict(n_startup_trials=5, n_warmup_steps=10)``; steps are epochs).

        sampler_kwargs (dict): Keyword arguments of Optuna's ``TPESampler``.

        sampler_seed (int): Seeds the sampler (with each trial's number).

        target_scores (dict): ``{env_name: (low, high)}``: scale each run's score to
            ``(score - low) / (high - low)`` before averaging, for studies over several
            environments.

        exp_name (string): The study's name and folder (``tune_<algo>`` if None).

        storage (string): Where the study lives: a journal file (default
            ``<data_dir>/<exp_name>/study.journal``) or a database URL; several drivers
            given the same storage share the study.

        data_dir (string): Where the study's folder goes (``DEFAULT_DATA_DIR`` if None).

        parallel (int): Trials per round (run at once here; on Ray, submitted together).
            Default: 1 here, the cluster's CPUs over each trial's on Ray.

        num_cpu (int): MPI processes per run.

        oversubscribe (bool): Allow more processes than cores here.

        backend (string): 'local' or 'ray' (on the cluster at ``address``, or a local one).

        resume (bool): Continue the study: trials stopped midway go on from their runs'
            checkpoints (or are marked failed), then new ones until ``trials``.

        **args: ``algo``'s arguments, flat (``'ac_kwargs:hidden_sizes'`` for nested ones):
            a distribution (``'loguniform:1e-4:3e-3'``, ``'choice:[64,64],[256,256]'``,
            or an Optuna distribution) is searched, anything else fixed; ``env_name`` and
            ``seed`` may be lists (each trial runs them all).
    """
    check_optuna_installed()
    import optuna

    from spinup_tf2.launch.flags import check_env_names, check_variants

    cmd, algo_path, check_args = _algorithm(algo)
    exp_name = exp_name or f"tune_{cmd}"
    rundir.check_exp_name(exp_name)
    from spinup_tf2.user_config import DEFAULT_DATA_DIR

    data_dir = osp.abspath(data_dir or DEFAULT_DATA_DIR)
    rundir.check_writable_dir(data_dir, "--data_dir")
    study_dir = osp.join(data_dir, exp_name)
    check_study_dir(study_dir)
    envs = _as_list(args.pop("env_name", None))
    seeds = _as_list(args.pop("seed", 0))
    if not envs or envs == [None]:
        raise SpinupError("tune needs an environment: --env NAME (env_name=...), e.g. --env "
                          "Pendulum-v1. Nothing was started.")
    for flag, values in (("--env", envs), ("--seed", seeds)):
        twice = [v for i, v in enumerate(values) if v in values[:i]]
        if twice:
            raise SpinupError(f"{flag} {' '.join(map(str, values))}: {twice[0]} is given twice, "
                              f"and every trial runs each value into one directory, so the "
                              f"two runs would overwrite each other. Give each value once "
                              f"(e.g. --seed 0 10). Nothing was started.")
    for key in ("resume", "datestamp"):
        if key in args:
            raise SpinupError(f"--{key} is not an argument of a trial's runs: tune's --resume "
                              f"continues a study, and trial folders are never datestamped. "
                              f"Nothing was started.")
    space, fixed = {}, {}
    for key, value in args.items():
        dist = parse_distribution(key, value)
        if dist is not None:
            space[key] = dist
        else:
            fixed[key] = value  # a list is one value (hidden_sizes=[16]), not a grid
    if not space:
        raise SpinupError("This study has nothing to search: give at least one flag a "
                          "distribution, e.g. --lr loguniform:1e-4:3e-3 or --batch_size "
                          "choice:64,128,256. Nothing was started.")
    alpha = fixed.get("alpha", algo_path.defaults().get("alpha"))
    if objective in ("Alpha", "LossAlpha") and "alpha" not in space and not (
            isinstance(alpha, str) and alpha.startswith("auto")):
        raise SpinupError(f"objective (--objective) {objective}: a run logs {objective} only "
                          f"when alpha is learned, and this study fixes alpha at {alpha!r}. "
                          f"Give --alpha auto, or another objective. Nothing was started.")
    num_cpu = _checked_whole("num_cpu (--cpu)", num_cpu, 1)
    study = Study(cmd, algo_path, space, fixed, envs, seeds, study_dir, num_cpu)
    _check_settings(trials, objective, objective_epochs, direction, pruner, pruner_kwargs,
                    sampler_kwargs, sampler_seed, target_scores, envs, backend, parallel)
    check_env_names(envs)
    check_variants(algo_path, check_args, study.variants())
    if backend == "local":
        from spinup_tf2.launch.processes import resolve_num_cpu

        parallel = parallel or 1
        resolve_num_cpu(num_cpu, parallel * len(envs) * len(seeds), oversubscribe)
    else:
        from spinup_tf2.launch.ray_backend import check_ray_installed

        check_ray_installed()

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    spec = dict(cmd=cmd, space={k: distribution_text(d) for k, d in space.items()},
                fixed=format_flags(fixed), envs=envs, seeds=seeds, objective=objective,
                objective_epochs=objective_epochs, direction=direction, pruner=pruner,
                pruner_kwargs=pruner_kwargs or {}, sampler_kwargs=sampler_kwargs or {},
                sampler_seed=sampler_seed, target_scores=target_scores or {})
    spec = json.loads(json.dumps(spec))  # as the storage gives it back (tuples as lists)
    with study_writing(study_dir):  # a write the disk refuses: one paragraph
        opt_study = _open_study(exp_name, storage, study_dir, spec, study, direction, resume)
        objective_ = Objective(objective, objective_epochs,
                               {k: tuple(v) for k, v in (target_scores or {}).items()} or None)
        settings = (objective_, direction, pruner, pruner_kwargs or {})
        if backend == "ray":
            from spinup_tf2.launch.ray_backend import check_cpus_per_task, connect

            with connect(address) as (ray, cpus, cluster):
                per_trial = num_cpu * len(envs) * len(seeds)
                check_cpus_per_task(cpus, per_trial, f"A trial's {per_trial} CPU(s) (--cpu "
                                                     f"{num_cpu} x {len(envs)} env(s) x "
                                                     f"{len(seeds)} seed(s))")
                parallel = parallel or max(1, int(sum(cpus)) // per_trial)
                print(f"{cluster}; trials of {per_trial} CPU(s), {parallel} per round.",
                      flush=True)
                _drive(opt_study, study, trials, parallel, settings, sampler_kwargs, sampler_seed,
                       lambda specs: _run_round_ray(ray, specs, per_trial))
        else:
            _drive(opt_study, study, trials, parallel, settings, sampler_kwargs, sampler_seed,
                   _run_round_local)
        write_report(opt_study, study_dir, plots=True, storage=storage)
    return opt_study


def _as_list(value) -> list:
    return list(value) if isinstance(value, (list, tuple)) else [value]


def _checked_whole(what: str, value, low: int) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < low:
        raise SpinupError(f"{what} must be a whole number >= {low}; got {value!r}. Nothing "
                          f"was started.")
    return value


def _algorithm(algo):
    """``(command name, the function's path, its argument check)`` for ``algo`` (a name, or
    the function itself)."""
    from spinup_tf2.launch.flags import ALGOS

    name = algo if isinstance(algo, str) else getattr(algo, "__name__", "")
    key = name if name.endswith("_tf2") else name + "_tf2"
    if key not in ALGOS or not (isinstance(algo, str) or algo is getattr(
            importlib.import_module(ALGOS[key][0].module), ALGOS[key][0].__name__)):
        names = ", ".join(a[:-4] for a in ALGOS)
        raise SpinupError(f"tune searches an algorithm of spinup_tf2 ({names}); got {algo!r}. "
                          f"Nothing was started.")
    path, check_args = ALGOS[key]
    return key[:-4], path, check_args


def _check_settings(trials, objective, objective_epochs, direction, pruner, pruner_kwargs,
                    sampler_kwargs, sampler_seed, target_scores, envs, backend,
                    parallel) -> None:
    """Refuse bad study settings in one paragraph each, before anything starts."""
    import optuna

    _checked_whole("trials (--trials)", trials, 1)
    _checked_whole("objective_epochs (--objective_epochs)", objective_epochs, 1)
    _checked_whole("sampler_seed (--sampler_seed)", sampler_seed, 0)
    if parallel is not None:
        _checked_whole("parallel (--parallel)", parallel, 1)
    if not isinstance(objective, str) or not objective:
        raise SpinupError(f"objective (--objective) must name a progress.txt column, e.g. "
                          f"AverageTestEpRet or TestSuccessRate; got {objective!r}.")
    from spinup_tf2.columns import could_be_column

    unknown = could_be_column(objective)
    if unknown:
        close = difflib.get_close_matches(objective, unknown.split(", "), n=1)
        raise SpinupError(f"objective (--objective) {objective!r} is no column of a run's "
                          f"progress.txt" + (f" (did you mean {close[0]}?)" if close else "")
                          + f": {unknown}. Nothing was started.")
    if direction not in ("maximize", "minimize"):
        raise SpinupError(f"direction (--direction) must be 'maximize' or 'minimize'; got "
                          f"{direction!r}. Nothing was started.")
    if pruner not in PRUNERS:
        raise SpinupError(f"pruner (--pruner) must be one of {', '.join(PRUNERS)}; got "
                          f"{pruner!r}. Nothing was started.")
    if backend not in ("local", "ray"):
        raise SpinupError(f"backend (--backend) must be 'local' or 'ray'; got {backend!r}.")
    for what, make, kwargs in (
            (f"--pruner_kwargs (Optuna's {PRUNERS[pruner]})",
             lambda kw: make_pruner(pruner, kw), pruner_kwargs),
            ("--sampler_kwargs (Optuna's TPESampler)",
             lambda kw: optuna.samplers.TPESampler(**kw), sampler_kwargs)):
        try:
            make(dict(kwargs or {}))
        except (TypeError, ValueError) as err:
            raise SpinupError(f"{what}: {kwargs!r} were refused ({err}). Give the class's "
                              f"keyword arguments as --pruner_kwargs:NAME VALUE (see Optuna's "
                              f"documentation). Nothing was started.") from None
    for env, rng in (target_scores or {}).items():
        ok = isinstance(rng, (list, tuple)) and len(rng) == 2 and all(
            isinstance(x, (int, float)) and not isinstance(x, bool) for x in rng)
        if env not in envs or not ok or rng[0] == rng[1]:
            raise SpinupError(f"target_scores (--target_scores:{env}): give each environment "
                              f"of the study ({', '.join(envs)}) two different numbers, the "
                              f"scores that become 0 and 1, e.g. --target_scores:{envs[0]} "
                              f"'[-1600,-150]'; got {rng!r}. Nothing was started.")


def _open_study(name, storage, study_dir, spec, study: Study, direction, resume):
    """The Optuna study: created (refusing a folder or storage that already holds one,
    unless resuming) or loaded (refusing one made with other settings)."""
    import optuna

    opened = open_storage(storage, study_dir)
    existing = {s.study_name for s in optuna.get_all_study_summaries(opened)}
    if not resume:
        taken = [r for r in _run_dirs(study_dir)]
        if name in existing or taken:
            raise SpinupError(f"The study {name} already exists ("
                              + (f"in {storage or osp.join(study_dir, STUDY_FILE)}" if name in
                                 existing else f"{study_dir} holds runs: {taken[0]}")
                              + "). Continue it with --resume (resume=True), or give another "
                                "--exp_name. Nothing was started.")
        opt_study = optuna.create_study(study_name=name, storage=opened, direction=direction)
        opt_study.set_user_attr(SPEC_KEY, spec)
        opt_study.set_user_attr(COMMAND_KEY, study.command())
        return opt_study
    if name not in existing:
        raise SpinupError(f"--resume: there is no study {name} in "
                          f"{storage or osp.join(study_dir, STUDY_FILE)} to continue. Leave "
                          f"--resume out to start it. Nothing was started.")
    opt_study = optuna.load_study(study_name=name, storage=opened)
    stored = opt_study.user_attrs.get(SPEC_KEY, {})
    diff = sorted(k for k in set(stored) | set(spec) if stored.get(k) != spec.get(k))
    if diff:
        raise SpinupError(
            f"--resume: the study {name} was made with other settings: "
            + "; ".join(f"{k} was {stored.get(k)!r}, now {spec.get(k)!r}" for k in diff)
            + ". Give the same search space and fixed flags (only --trials, --parallel and "
              "the launcher's flags may change). Nothing was started.")
    return opt_study


def _run_dirs(study_dir: str) -> list[str]:
    if not osp.isdir(study_dir):
        return []
    return sorted(osp.join(study_dir, d) for d in os.listdir(study_dir)
                  if osp.isdir(osp.join(study_dir, d)))


def _history(opt_study, numbers: list[int]) -> list[dict]:
    """The finished trials ``numbers`` as a trial's pruner sees them."""
    from optuna.trial import TrialState

    wanted = set(numbers)
    return [dict(state=t.state.name, value=t.value,
                 intermediate_values=dict(t.intermediate_values),
                 system_attrs=t.user_attrs.get(PRUNER_KEY, {}))
            for t in opt_study.get_trials(deepcopy=False,
                                          states=(TrialState.COMPLETE, TrialState.PRUNED))
            if t.number in wanted]


def _trial_seed(sampler_seed: int, number: int) -> int:
    import numpy as np

    return int(np.random.SeedSequence([sampler_seed, number]).generate_state(1)[0])


def _suggest(trial, space: dict) -> dict:
    import optuna.distributions as od

    params = {}
    for key, dist in space.items():
        if isinstance(dist, od.CategoricalDistribution):
            params[key] = trial.suggest_categorical(key, dist.choices)
        elif isinstance(dist, od.IntDistribution):
            params[key] = trial.suggest_int(key, dist.low, dist.high, log=dist.log)
        else:
            params[key] = trial.suggest_float(key, dist.low, dist.high, log=dist.log)
    return params


def _drive(opt_study, study: Study, trials: int, parallel: int, settings, sampler_kwargs,
           sampler_seed, run_round) -> None:
    """Run rounds of trials until the study has ``trials``: first the stopped trials this
    driver can take over, then new ones, ``parallel`` at a time."""
    import optuna
    from optuna.trial import TrialState

    owner = _owner()
    stopped = [t for t in opt_study.get_trials(deepcopy=False, states=(TrialState.RUNNING,))
               if _abandoned(t)]
    for t in stopped:
        optuna.trial.Trial(opt_study, t._trial_id).set_user_attr(OWNER_KEY, owner)
    rounds = [stopped[i:i + parallel] for i in range(0, len(stopped), parallel)]
    print(colorize(f"Study {study.name}: {len(opt_study.trials)} trial(s) so far"
                   + (f", {len(stopped)} stopped midway to go on" if stopped else "")
                   + f"; {trials} in all, {parallel} per round. Runs in {study.study_dir}.",
                   "cyan", bold=True), flush=True)
    while True:
        if rounds:
            batch = [(optuna.trial.Trial(opt_study, t._trial_id), t.params,
                      t.user_attrs.get(HISTORY_KEY, [])) for t in rounds.pop(0)]
        else:
            left = trials - len(opt_study.get_trials(deepcopy=False))
            if left <= 0:
                break
            history = [t.number for t in opt_study.get_trials(
                deepcopy=False, states=(TrialState.COMPLETE, TrialState.PRUNED))]
            batch = []
            for _ in range(min(parallel, left)):
                guess = len(opt_study.get_trials(deepcopy=False))
                opt_study.sampler = optuna.samplers.TPESampler(
                    seed=_trial_seed(sampler_seed, guess), **(sampler_kwargs or {}))
                trial = opt_study.ask()
                if trial.number != guess:  # another driver asked meanwhile
                    opt_study.sampler = optuna.samplers.TPESampler(
                        seed=_trial_seed(sampler_seed, trial.number), **(sampler_kwargs or {}))
                params = _suggest(trial, study.space)
                trial.set_user_attr(OWNER_KEY, owner)
                trial.set_user_attr(HISTORY_KEY, history)
                batch.append((trial, params, history))
        _run_batch(opt_study, study, batch, settings, run_round)


def _run_batch(opt_study, study: Study, batch: list, settings, run_round) -> None:
    from optuna.trial import TrialState

    specs, trials = [], {}
    for trial, params, history in batch:
        try:
            spec = study.trial_spec(trial.number, params, _history(opt_study, history),
                                    *settings)
        except _Unresumable as err:
            _record(opt_study, trial, dict(state="FAIL", error=f"it cannot go on: {err}",
                                           values={}, value=None, pruner_attrs={},
                                           seconds=0.0))
            continue
        trial.set_user_attr(RUNS_KEY, [osp.relpath(r.out, study.study_dir) for r in spec.runs])
        specs.append(spec)
        trials[trial.number] = trial
        shown = ", ".join(f"{k}={format_value(decode(k, v))}" for k, v in params.items())
        print(f"trial {trial.number} started ({shown})", flush=True)
    try:
        results = run_round(specs)
    except KeyboardInterrupt:
        _stopped(list(trials.values()), study.study_dir)
        raise
    column_missing, stopped = None, []
    for res in results:
        if res["state"] == "STOPPED":
            stopped.append(trials[res["number"]])
            continue
        _record(opt_study, trials[res["number"]], res)
        if res.get("column_missing"):
            column_missing = res["error"]
    if stopped:
        _stopped(stopped, study.study_dir)
        raise KeyboardInterrupt
    write_report(opt_study, study.study_dir, plots=False)
    done = opt_study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
    if done:
        best = opt_study.best_trial
        print(colorize(f"best so far: trial {best.number}, value {best.value:.6g}", "green"),
              flush=True)
    if column_missing:
        raise SpinupError(f"The study stopped: {column_missing}. Give --objective one of "
                          f"those columns.")


def _stopped(trials: list, study_dir: str) -> None:
    """Leave trials stopped midway for a resume to take up, and say what each kept."""
    kept = []
    for trial in trials:
        trial.set_user_attr(OWNER_KEY, STOPPED)
        for run in trial.user_attrs.get(RUNS_KEY, []):
            out = osp.join(study_dir, run)
            epoch, rows = rundir.checkpoint_epoch(out), rundir.progress_rows(out)
            kept.append(f"{run}: " + (
                f"checkpoint of epoch {epoch} kept, --resume goes on from it" if epoch else
                "no epoch finished, --resume starts it over" if not rows else
                f"{rows} epoch(s) but no checkpoint, --resume marks the trial failed"))
    print(colorize(f"\nInterrupted: the finished trials are kept in the study; trial(s) "
                   f"{', '.join(str(t.number) for t in trials)} stopped midway ("
                   + "; ".join(kept) + "). The same command with --resume continues the study.",
                   "yellow", bold=True), flush=True)


def _record(opt_study, trial, res: dict) -> None:
    """Write a trial's outcome into the study and print its line."""
    from optuna.trial import TrialState

    for epoch, value in sorted(res["values"].items()):
        trial.report(value, int(epoch))
    trial.set_user_attr(PRUNER_KEY, res["pruner_attrs"])
    trial.set_user_attr(SECONDS_KEY, round(res["seconds"], 1))
    if res["error"]:
        trial.set_user_attr(ERROR_KEY, res["error"])
    state = TrialState[res["state"]]
    opt_study.tell(trial, res["value"] if state == TrialState.COMPLETE else None, state=state)
    at = f" at epoch {max(res['values'])}" if state == TrialState.PRUNED else ""
    value = f", value {res['value']:.6g}" if res["value"] is not None else ""
    why = f": {res['error']}" if res["error"] else ""
    print(f"trial {trial.number} {state.name}{at}{value} in {res['seconds']:.0f} s{why}",
          flush=True)


def _run_round_local(specs: list) -> list[dict]:
    """Run a round's trials at once on this machine."""
    from spinup_tf2.launch.trial import TrialRun

    runs = [TrialRun(spec) for spec in specs]
    said = [0] * len(runs)
    try:
        for run in runs:
            run.start()
        while not all([run.poll() for run in runs]):
            _say_epochs(runs, said)
            time.sleep(0.5)
        _say_epochs(runs, said)
    except KeyboardInterrupt:
        for run in runs:
            run.stop()
        raise
    return [run.result() for run in runs]


def _say_epochs(runs: list, said: list[int]) -> None:
    """A line for each epoch that all of a trial's runs have newly reached, with the
    objective so far (what the pruner sees), so a study is not silent while a trial runs;
    the runs' own epoch tables are in their stdout.txt."""
    for i, run in enumerate(runs):
        epochs = sorted(run.values)
        for epoch in epochs[said[i]:]:
            print(f"trial {run.spec.number}: epoch {epoch}, {run.spec.objective.column} "
                  f"objective {run.values[epoch]:.6g}", flush=True)
        said[i] = len(epochs)


def _run_round_ray(ray, specs: list, cpus: int) -> list[dict]:
    """Run a round's trials as Ray tasks of ``cpus`` CPUs each."""
    from spinup_tf2.launch.ray_backend import CANCEL_GRACE
    from spinup_tf2.launch.trial import run_trial

    task = ray.remote(run_trial).options(num_cpus=cpus, max_retries=0)
    refs = {task.remote(spec): spec.number for spec in specs}
    results = []
    try:
        for ref, number in refs.items():
            try:
                results.append(ray.get(ref))
            except Exception as err:  # the task died (node lost, worker killed, ...)
                first = error_line(err)
                results.append(dict(number=number, state="FAIL", values={}, value=None,
                                    pruner_attrs={}, seconds=0.0,
                                    error=f"its Ray task failed ({first})"))
    except KeyboardInterrupt:
        for ref in refs:
            ray.cancel(ref, force=False)
        _, stuck = ray.wait(list(refs), num_returns=len(refs), timeout=CANCEL_GRACE)
        for ref in stuck:
            ray.cancel(ref, force=True)
        raise
    return results


# The command line: tune's own flags, and those it shares with the grid's launcher.
TUNE_FLAGS = tuple(a.name for a in TUNE_ARGS if a.kind != "dict") + (
    "parallel", "num_cpu", "oversubscribe", "backend", "ray_address", "data_dir", "exp_name")
NESTED_FLAGS = tuple(a.name for a in TUNE_ARGS if a.kind == "dict")
SUBSTITUTED = {"num_cpu": "cpu"}  # flags --help names by their shorter form
TUNE_USAGE = """
python -m spinup_tf2.run tune ALGO --env ENV [--FLAG DISTRIBUTION ...] [--FLAG VALUE ...]

Searches ALGO's ({algos}) settings with an Optuna study. A flag given
a distribution is searched: uniform:LOW:HIGH, loguniform:LOW:HIGH, int:LOW:HIGH,
logint:LOW:HIGH, choice:A,B,... (e.g. --lr loguniform:1e-4:3e-3 --hid choice:[64],[256,256]);
any other flag of ALGO (python -m spinup_tf2.run ALGO --help) is fixed. Several --env or
--seed values: every trial runs them all. See docs/user/tune.md.

The study's flags:

""".replace("{algos}", ", ".join(ALGORITHMS))


def main(argv: list[str]) -> int:
    """``python -m spinup_tf2.run tune ALGO --env ENV --FLAG DIST ...``."""

    def command():
        from spinup_tf2.launch.flags import parse_flags, whole_numbers_as_ints

        if any(a in ("--help", "-h") for a in argv):
            from spinup_tf2.arguments import tune_help

            print(TUNE_USAGE + tune_help() + "\n")
            return 0
        if not argv or argv[0].startswith("-"):
            raise SpinupError("tune needs the algorithm first: python -m spinup_tf2.run tune "
                              "sac --env Pendulum-v1 --trials 20 --lr loguniform:1e-4:3e-3.")
        check_optuna_installed()
        arg_dict, _ = parse_flags("tune " + argv[0], argv[1:])
        whole_numbers_as_ints(arg_dict, _algorithm(argv[0])[1].defaults())
        kwargs: dict = {}
        for key in list(arg_dict):
            head, _, sub = key.partition(":")
            if key in TUNE_FLAGS or (head in NESTED_FLAGS and sub):
                vals = arg_dict.pop(key)
                if len(vals) != 1:
                    raise SpinupError(f"--{key} takes one value; got {vals!r}.")
                if sub:
                    kwargs.setdefault(head, {})[sub] = vals[0]
                else:
                    kwargs[{"ray_address": "address"}.get(key, key)] = vals[0]
        for key, vals in arg_dict.items():
            if key not in ("env_name", "seed") and len(vals) != 1:
                raise SpinupError(
                    f"--{key} has {len(vals)} values ({' '.join(map(format_value, vals))}): a "
                    f"study searches with distributions, not grids (only --env and --seed "
                    f"take several values, which every trial runs). Give --{key} "
                    f"choice:{','.join(map(format_value, vals))} to search them. Nothing was "
                    f"started.")
            # One value, read exactly as the launcher reads it: --hid [16] is [16].
            kwargs[key] = vals if key in ("env_name", "seed") else vals[0]
        tune(argv[0], **kwargs)

    return cli_main(command)
