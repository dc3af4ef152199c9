"""Experiment helpers, as in Spinning Up's ``run_utils``."""

from __future__ import annotations

import ast
import base64
import importlib
import importlib.util
import json
import os
import os.path as osp
import signal
import string
import subprocess
import sys
import time
import zlib

import cloudpickle
import numpy as np
from tqdm import trange

from spinup_tf2.user_config import (
    DEFAULT_DATA_DIR,
    DEFAULT_SHORTHAND,
    FORCE_DATESTAMP,
    WAIT_BEFORE_LAUNCH,
)
from spinup_tf2.utils.errors import SpinupError
from spinup_tf2.utils.lifetime import ignore_interrupts
from spinup_tf2.utils.logx import colorize
from spinup_tf2.utils.serialization_utils import convert_json


class FunctionPath:
    """A function named by its path, ``'package.module:function'``, imported only
    when called. A launcher hands it to the process that runs the experiment
    without importing the function's module (and TensorFlow) itself; it can
    still show the function's docstring and read its parameters, from the
    source. ``__name__`` is the function's name, as config.json records it.
    """

    def __init__(self, path: str):
        self.path = path
        self.module, _, self.__name__ = path.partition(":")

    def __call__(self, *args, **kwargs):
        return getattr(importlib.import_module(self.module), self.__name__)(*args, **kwargs)

    def _definition(self) -> ast.FunctionDef:
        with open(importlib.util.find_spec(self.module).origin, encoding="utf-8") as f:
            tree = ast.parse(f.read())
        return next(node for node in tree.body
                    if isinstance(node, ast.FunctionDef) and node.name == self.__name__)

    def doc(self) -> str:
        """The function's docstring."""
        return ast.get_docstring(self._definition(), clean=False) or ""

    def defaults(self) -> dict:
        """``{parameter: default}``; a default that is not a plain value (a class,
        say) or a missing one is :data:`NOT_A_VALUE`."""
        args = self._definition().args
        params = args.posonlyargs + args.args + args.kwonlyargs
        defaults = [None] * (len(args.posonlyargs + args.args) - len(args.defaults))
        defaults += list(args.defaults) + list(args.kw_defaults)
        return {p.arg: _default_value(d) for p, d in zip(params, defaults)}


NOT_A_VALUE = object()


def _default_value(node):
    """A parameter's default from its source: a literal, or ``int``/``float``/``dict``
    of literals (``int(1e6)``); anything else is NOT_A_VALUE."""
    if node is None:
        return NOT_A_VALUE
    calls = {"int": int, "float": float, "dict": dict, "list": list, "tuple": tuple}
    try:
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) in calls:
            return calls[node.func.id](*(ast.literal_eval(a) for a in node.args))
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError):
        return NOT_A_VALUE


class NamedObject:
    """A flag value that names an object under ``tf``, ``keras`` or ``np``
    (``tf.nn.relu``), looked up only in the process that runs the experiment,
    so that the launcher never imports TensorFlow. ``__name__`` is the last
    part of the name, as directory names and config.json show it."""

    ROOTS = {"tf": "tensorflow", "keras": "keras", "np": "numpy"}

    def __init__(self, text: str, flag: str):
        self.text, self.flag = text, flag
        self.__name__ = text.rsplit(".", 1)[-1]

    def resolve(self):
        """The object itself; a :class:`SpinupError` naming the flag if there is none."""
        root, *attrs = self.text.split(".")
        if root in ("tf", "keras"):
            from spinup_tf2.utils.tf_setup import import_tensorflow

            import_tensorflow()  # first, and quietly: keras would import it noisily
        value = importlib.import_module(self.ROOTS[root])
        for i, attr in enumerate(attrs):
            if not hasattr(value, attr):
                raise SpinupError(
                    f"The value {self.text!r} of --{self.flag} could not be used: "
                    f"{'.'.join([root] + attrs[:i + 1])} does not exist. Names under tf, keras "
                    f"or np must name a function or value, e.g. tf.nn.relu.")
            value = getattr(value, attr)
        if type(value).__name__ == "module":
            raise SpinupError(f"The value {self.text!r} of --{self.flag} names a module, not a "
                              f"function or value: give one inside it, e.g. tf.nn.relu.")
        return value


def resolve_names(value):
    """``value`` with every :class:`NamedObject` in it (in dicts, lists and tuples)
    replaced by the object it names."""
    if isinstance(value, NamedObject):
        return value.resolve()
    if isinstance(value, dict):
        return {k: resolve_names(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(resolve_names(v) for v in value)
    return value


def setup_logger_kwargs(exp_name: str, seed: int | None = None, data_dir: str | None = None,
                        datestamp: bool = False) -> dict:
    """``dict(output_dir=..., exp_name=exp_name)`` for the logger of one run.

    - no seed: ``data_dir/exp_name``
    - a seed: ``data_dir/exp_name/exp_name_s<seed>``
    - a seed and datestamp:
      ``data_dir/YYYY-MM-DD_exp_name/YYYY-MM-DD_HH-MM-SS-exp_name_s<seed>``

    ``data_dir`` defaults to ``DEFAULT_DATA_DIR`` and ``FORCE_DATESTAMP`` turns
    the datestamp on (``spinup_tf2/user_config.py``). ``exp_name`` must be a
    plain name (:func:`check_exp_name`), so that runs stay inside ``data_dir``.
    """
    check_exp_name(exp_name)
    datestamp = datestamp or FORCE_DATESTAMP
    ymd_time = time.strftime("%Y-%m-%d_") if datestamp else ""
    relpath = "".join([ymd_time, exp_name])
    if seed is not None:
        if datestamp:
            hms_time = time.strftime("%Y-%m-%d_%H-%M-%S")
            subfolder = "".join([hms_time, "-", exp_name, "_s", str(seed)])
        else:
            subfolder = "".join([exp_name, "_s", str(seed)])
        relpath = osp.join(relpath, subfolder)
    data_dir = data_dir or DEFAULT_DATA_DIR
    return dict(output_dir=osp.join(data_dir, relpath), exp_name=exp_name)


def check_exp_name(exp_name) -> None:
    """Raise :class:`SpinupError` unless ``exp_name`` is a plain name for a
    directory: not empty, no path separator, not ``.`` or ``..``."""
    seps = {"/", os.sep} | ({os.altsep} if os.altsep else set())
    if (not isinstance(exp_name, str) or not exp_name.strip() or exp_name in (".", "..")
            or any(s in exp_name for s in seps) or "\0" in exp_name):
        raise SpinupError(f"exp_name={exp_name!r} is not a plain name: the experiment name "
                          f"becomes a directory inside the data directory, so it must be "
                          f"non-empty, without '/' and not '.' or '..', e.g. --exp_name "
                          f"pendulum. Put runs elsewhere with --data_dir.")


DIV_LINE_WIDTH = 80


def valid_str(v) -> str:
    """A value as a fragment of a directory name: a named object gives its
    ``__name__``, a list or tuple its items joined by ``-``; the result is
    lowercased and every character outside ``[-_A-Za-z0-9]`` becomes ``-``.
    """
    if hasattr(v, "__name__"):
        return valid_str(v.__name__)
    if isinstance(v, (tuple, list)):
        return "-".join(valid_str(x) for x in v)
    allowed = set("-_" + string.ascii_letters + string.digits)
    return "".join(c if c in allowed else "-" for c in str(v).lower())


def call_experiment(exp_name: str, thunk, seed: int = 0, num_cpu: int | str = 1,
                    data_dir: str | None = None, datestamp: bool = False, **kwargs) -> None:
    """Run ``thunk(**kwargs, seed=seed, logger_kwargs=...)`` in a fresh Python process.

    Prints the experiment and its arguments, works out the output directory
    (:func:`setup_logger_kwargs`, unless ``logger_kwargs`` is given), turns an
    ``env_name`` argument into ``env_fn = lambda: gymnasium.make(env_name)``,
    and launches ``utils/run_entrypoint.py`` with the whole call cloudpickled,
    so experiments share no state. Ctrl-C stops the experiment within seconds
    and leaves what it wrote readable.

    Args:
        exp_name (string): Name for experiment.

        thunk (callable): The experiment function, e.g. ``spinup_tf2.sac``.

        seed (int): Seed for random number generators.

        num_cpu (int): Number of MPI processes ('auto': one per physical core).

        data_dir (string): Where results go; ``DEFAULT_DATA_DIR`` from
            ``spinup_tf2/user_config.py`` if None.

        datestamp (bool): Put the date and time in the directory names.

        **kwargs: All kwargs to pass to thunk.

    Raises:
        subprocess.CalledProcessError: if the experiment process failed.
    """
    cmd, output_dir = experiment_command(exp_name, thunk, seed, resolve_num_cpu(num_cpu),
                                         data_dir, datestamp, verbose=True, **kwargs)
    run_and_report(cmd, output_dir)


def run_and_report(cmd: list, output_dir: str) -> None:
    """Run one experiment's command (see :func:`experiment_command`) in the
    foreground, then say where its output is and how to look at it; raise
    CalledProcessError if it failed."""
    returncode = run_child(cmd, output_dir)
    line = "=" * DIV_LINE_WIDTH
    if returncode != 0:
        print("\n" * 3 + line + "\n\nThere appears to have been an error in your experiment.\n\n"
              "Check the message above to see what happened. The data written so far (if any) "
              f"is in:\n\n    {output_dir}\n\n" + line + "\n" * 3)
        raise subprocess.CalledProcessError(returncode, cmd[:2])

    plot_cmd = colorize("python -m spinup_tf2.run plot " + output_dir, "green")
    test_cmd = colorize("python -m spinup_tf2.run test_policy " + output_dir, "green")
    print("\n" * 5 + line + "\nEnd of experiment.\n\n\nPlot results from this run with:\n\n"
          f"{plot_cmd}\n\n\nWatch the trained agent with:\n\n{test_cmd}\n\n\n" + line + "\n" * 5)


def experiment_command(exp_name: str, thunk, seed: int = 0, num_cpu: int = 1,
                       data_dir: str | None = None, datestamp: bool = False,
                       verbose: bool = True, **kwargs) -> tuple[list, str]:
    """The command that runs one experiment in a fresh process, and its output
    directory (see :func:`call_experiment`, which runs it). ``num_cpu`` is a
    number of processes, as :func:`resolve_num_cpu` gives it."""
    kwargs["seed"] = seed
    if verbose:
        print(colorize("Running experiment:\n", color="cyan", bold=True))
        print(exp_name + "\n")
        print(colorize("with kwargs:\n", color="cyan", bold=True))
        print(json.dumps(convert_json(kwargs), separators=(",", ":\t"), indent=4,
                         sort_keys=True))
        print("\n")

    if "output_dir" in kwargs.get("logger_kwargs", {}):
        if verbose:
            print("Note: Call experiment is not handling logger_kwargs.\n")
    else:  # only options such as tensorboard given: add where the run goes
        kwargs["logger_kwargs"] = {**setup_logger_kwargs(exp_name, seed, data_dir, datestamp),
                                   **kwargs.get("logger_kwargs", {})}
    output_dir = kwargs["logger_kwargs"]["output_dir"]

    def thunk_plus():
        if "env_name" in kwargs:
            import gymnasium as gym

            env_name = kwargs.pop("env_name")
            kwargs["env_fn"] = lambda: gym.make(env_name)
        from spinup_tf2.utils.mpi_tools import mpi_fork

        mpi_fork(num_cpu)
        thunk(**resolve_names(kwargs))

    encoded = base64.b64encode(zlib.compress(cloudpickle.dumps(thunk_plus))).decode("utf-8")
    entrypoint = osp.join(osp.abspath(osp.dirname(__file__)), "run_entrypoint.py")
    return [sys.executable or "python", entrypoint, encoded], output_dir


def run_parallel(jobs: list, parallel: int) -> None:
    """Run ``(exp_name, cmd, output_dir)`` jobs, up to ``parallel`` at a time.

    Each job's stdout and stderr go to ``<output_dir>/stdout.txt``; one line
    is printed when a job starts and one when it ends. Ctrl-C stops all of
    them (see :func:`run_child`). Raises CalledProcessError naming the failed
    runs, after all have ended.
    """
    pending, running, failed = list(jobs), [], []
    try:
        while pending or running:
            while pending and len(running) < parallel:
                name, cmd, out = pending.pop(0)
                os.makedirs(out, exist_ok=True)
                log = open(osp.join(out, "stdout.txt"), "w")
                proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
                running.append((name, out, proc, log, time.time()))
                print(f"started  {osp.basename(out)} -> {out}", flush=True)
            for job in list(running):
                name, out, proc, log, t0 = job
                if proc.poll() is None:
                    continue
                log.close()
                running.remove(job)
                state = "finished" if proc.returncode == 0 else f"FAILED (exit {proc.returncode})"
                print(f"{state} {osp.basename(out)} in {time.time() - t0:.0f} s (log: "
                      f"{osp.join(out, 'stdout.txt')})", flush=True)
                if proc.returncode != 0:
                    failed.append(name)
            time.sleep(0.2)
    except KeyboardInterrupt:
        for _, _, proc, _, _ in running:
            proc.send_signal(signal.SIGINT)
        for _, out, proc, log, _ in running:
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            log.close()
            print(colorize(f"Interrupted. The data written so far is in {out}", "yellow",
                           bold=True), flush=True)
        raise
    if failed:
        raise subprocess.CalledProcessError(1, f"runs {', '.join(failed)}")


def run_child(cmd: list, output_dir: str) -> int:
    """Run an experiment process and return its exit code.

    On Ctrl-C the child (which gets the same SIGINT from the terminal, or is
    sent one here) is given a few seconds to stop on its own, then killed (at
    once on a second Ctrl-C);
    either way its files stay readable, since the logger writes whole rows and
    renames finished checkpoints into place. Then one line says where the
    data is, and KeyboardInterrupt goes on up.
    """
    proc = subprocess.Popen(cmd)
    try:
        return proc.wait()
    except KeyboardInterrupt:
        handler = signal.getsignal(signal.SIGINT)
        try:
            proc.send_signal(signal.SIGINT)
            proc.wait(timeout=5)
        except (subprocess.TimeoutExpired, KeyboardInterrupt):  # a second Ctrl-C: stop it now
            ignore_interrupts()
            proc.kill()
            proc.wait()
        finally:
            signal.signal(signal.SIGINT, handler)
        print(colorize("\nInterrupted. The data written so far is in %s" % output_dir, "yellow",
                       bold=True), flush=True)
        raise


def resolve_num_cpu(num_cpu, parallel: int = 1, oversubscribe: bool = False) -> int:
    """``num_cpu`` as a number of processes: 'auto' means the physical cores.

    More than one process needs mpi4py and an MPI launcher (the ``mpi``
    extra). More processes than cores in all (``num_cpu`` per run times
    ``parallel`` runs at once) are refused, since each imports TensorFlow and a
    typo such as ``--cpu 999`` could take the machine down, unless
    ``oversubscribe`` is True (``--oversubscribe``); then a warning says so.
    """
    import psutil

    cores = psutil.cpu_count(logical=False) or 1
    if num_cpu == "auto":
        num_cpu = cores
    if not isinstance(num_cpu, int) or isinstance(num_cpu, bool) or num_cpu < 1:
        raise SpinupError(f"num_cpu (--cpu) must be a whole number >= 1 or 'auto'; "
                          f"got {num_cpu!r}.")
    if not isinstance(parallel, int) or isinstance(parallel, bool) or parallel < 1:
        raise SpinupError(f"parallel must be a whole number >= 1; got {parallel!r}.")
    if num_cpu * parallel > cores:
        what = (f"num_cpu={num_cpu} (--cpu)" if parallel == 1 else
                f"num_cpu={num_cpu} (--cpu) x parallel={parallel} (--parallel)")
        if not oversubscribe:
            raise SpinupError(
                f"{what} asks for {num_cpu * parallel} processes, more than the {cores} "
                f"physical cores here, each importing TensorFlow; nothing was launched. Give "
                f"at most {cores} in all, or add --oversubscribe (oversubscribe=True) if you "
                f"mean it.")
        print(colorize(f"Warning: {what} runs {num_cpu * parallel} processes on {cores} "
                       f"physical cores (--oversubscribe); they will share cores and run "
                       f"slower.", "yellow", bold=True))
    if num_cpu > 1:
        from spinup_tf2.utils.mpi_tools import find_mpirun

        try:
            import mpi4py  # noqa: F401
        except ImportError:
            mpi4py = None
        if mpi4py is None or find_mpirun() is None:
            raise SpinupError(
                f"num_cpu (--cpu) is {num_cpu}, which runs SAC data-parallel over MPI, but "
                f"{'mpi4py' if mpi4py is None else 'an MPI launcher (mpirun)'} is not "
                f"installed. Install the MPI extra: pip install 'spinup_tf2[mpi]' (mpi4py and "
                f"the mpich package, which brings mpirun), or use --cpu 1.")
    return num_cpu


def _nested_get(variant: dict, key: str):
    """``variant['a']['b']`` for key ``'a:b'`` (or ``variant['a:b']`` if present)."""
    if key in variant:
        return variant[key]
    head, _, rest = key.partition(":")
    return _nested_get(variant[head], rest)


def _nest(flat: dict) -> dict:
    """``{'a:b': 1, 'a:c': 2}`` -> ``{'a': {'b': 1, 'c': 2}}``, to any depth."""
    nested: dict = {}
    groups: dict = {}
    for key, val in flat.items():
        head, sep, rest = key.partition(":")
        if head in nested and (not sep or head not in groups):
            raise SpinupError(f"You can't assign multiple values to the same key ({head}): "
                              f"give it either whole or by its parts ({head}:...), not both.")
        if sep:
            groups.setdefault(head, {})[rest] = val
            nested.setdefault(head, None)  # keeps the key's place in the order
        else:
            nested[head] = val
    for head, sub in groups.items():
        nested[head] = _nest(sub)
    return nested


class ExperimentGrid:
    """A grid of experiments: each key added with several values multiplies the
    number of variants; ``run`` launches every variant in turn.

    Example::

        eg = ExperimentGrid(name='sac-bench')
        eg.add('env_name', 'Pendulum-v1', '', True)
        eg.add('seed', [0, 10, 20])
        eg.add('ac_kwargs:hidden_sizes', [(32,), (64, 64)], 'hid')
        eg.run(sac)
    """

    def __init__(self, name: str = ""):
        self.keys: list[str] = []
        self.vals: list[list] = []
        self.shs: list[str | None] = []
        self.in_names: list[bool] = []
        self.name(name)

    def name(self, _name: str) -> None:
        """Set the grid's name, the start of every variant name."""
        if not isinstance(_name, str):
            raise SpinupError(f"Name has to be a string; got {_name!r} "
                              f"({type(_name).__name__}).")
        if _name:
            check_exp_name(_name)
        self._name = _name

    def add(self, key: str, vals, shorthand: str | None = None, in_name: bool = False) -> None:
        """Add a parameter with its values.

        Args:
            key (string): Parameter name; ``a:b`` sets ``kwargs['a']['b']``.

            vals: A value or a list of values. (A single list-valued value
                must be wrapped: ``[(64, 64)]``, not ``[64, 64]``.)

            shorthand (string): Name used for the parameter in variant names.
                When None and ``DEFAULT_SHORTHAND`` is on, the first three
                alphanumeric characters of each ``:`` part, joined by ``-``.

            in_name (bool): Put the parameter in variant names even when it
                has only one value.
        """
        if not isinstance(key, str):
            raise SpinupError(f"Key must be a string; got {key!r}.")
        if not (shorthand is None or isinstance(shorthand, str)):
            raise SpinupError(f"Shorthand must be a string; got {shorthand!r} for key {key}.")
        vals = vals if isinstance(vals, list) else [vals]
        if not vals:
            raise SpinupError(f"Key {key} was given no values.")
        if shorthand is None and DEFAULT_SHORTHAND:
            alnum = set(string.ascii_letters + string.digits)
            shorthand = "-".join("".join(c for c in part[:3] if c in alnum)
                                 for part in key.split(":"))
        self.keys.append(key)
        self.vals.append(vals)
        self.shs.append(shorthand)
        self.in_names.append(in_name)

    def print(self) -> None:
        """Print the parameters, their values and the number of variants."""
        line = "=" * DIV_LINE_WIDTH
        print(line)
        title = "ExperimentGrid [%s] runs over parameters:\n" % self._name
        if len(title) > 80:
            title = "ExperimentGrid [%s]\n runs over parameters:\n" % self._name
        print(colorize(title, color="green", bold=True))
        for k, v, sh in zip(self.keys, self.vals, self.shs):
            print("", colorize(k.ljust(40), color="cyan", bold=True),
                  "[" + sh + "]" if sh is not None else "", "\n")
            for val in v:
                print("\t" + str(convert_json(val)))
            print()
        n_total = int(np.prod([len(v) for v in self.vals]))
        n_seeds = len(self.vals[self.keys.index("seed")]) if "seed" in self.keys else 1
        print(" Variants, counting seeds: ".ljust(40), n_total)
        print(" Variants, not counting seeds: ".ljust(40), n_total // n_seeds)
        print()
        print(line)

    def variant_name(self, variant: dict) -> str:
        """The experiment name of a variant: the grid name, then ``_<shorthand><value>``
        for each parameter with several values (or ``in_name``), never the seed.
        A parameter whose values are all bools adds ``_<shorthand>`` when True."""
        name = self._name
        for k, v, sh, inn in zip(self.keys, self.vals, self.shs, self.in_names):
            if k == "seed" or not (len(v) > 1 or inn):
                continue
            param = valid_str(sh if sh is not None else k)
            val = _nested_get(variant, k)
            if all(isinstance(x, bool) for x in v):
                name += ("_" + param) if val else ""
            else:
                name += "_" + param + valid_str(val)
        return name.lstrip("_")

    def variants(self) -> list[dict]:
        """Every combination of values, the first-added key varying slowest,
        with ``a:b`` keys turned into nested dicts."""
        combos = [dict()]
        for k, vals in zip(self.keys, self.vals):
            combos = [{**c, k: v} for c in combos for v in vals]
        return [_nest(c) for c in combos]

    def run(self, thunk, num_cpu: int | str = 1, data_dir: str | None = None,
            datestamp: bool = False, parallel: int = 1, oversubscribe: bool = False,
            backend: str = "local", address: str | None = None,
            worker_dir: str | None = None) -> None:
        """Launch every variant with ``call_experiment``, one after another, or
        with ``parallel=K`` up to K at a time, each writing its output to
        ``<output_dir>/stdout.txt`` and the grid printing a line as each run
        starts and ends.

        ``thunk`` is the experiment function, or the name of a grid key whose
        values are the functions. Prints the grid, the variant names, and a
        countdown of ``WAIT_BEFORE_LAUNCH`` seconds first. More processes than
        cores (``num_cpu`` x ``parallel``) are refused unless ``oversubscribe``
        (see :func:`resolve_num_cpu`).

        ``backend='ray'`` runs each variant as a Ray task of ``num_cpu`` CPUs
        instead, on the cluster at ``address`` (or ``RAY_ADDRESS``; else a
        local one), with the same names and output directories; without a
        shared filesystem, ``worker_dir`` is where the nodes write the runs
        before they are copied back to ``data_dir`` (see
        :mod:`spinup_tf2.utils.ray_backend`).
        """
        if backend not in ("local", "ray"):
            raise SpinupError(f"backend={backend!r} (--backend) is not a way to run a sweep; "
                              f"valid: 'local' (this machine, --parallel K) or 'ray' (a Ray "
                              f"cluster, --ray_address ADDR).")
        if backend == "ray" and parallel != 1:
            raise SpinupError(f"parallel={parallel} (--parallel) is for the local backend; on "
                              f"Ray, as many variants run at once as the cluster has CPUs for. "
                              f"Leave --parallel out.")
        if backend == "local" and (address or worker_dir):
            raise SpinupError("--ray_address and --ray_worker_dir (address, worker_dir) are for "
                              "--backend ray (backend='ray'); add it, or leave them out.")
        self.print()
        variants = self.variants()
        names = sorted(set(self.variant_name(var) for var in variants))
        line = "=" * DIV_LINE_WIDTH
        print("\n" + colorize("Preparing to run the following experiments...", color="green",
                              bold=True) + "\n\n" + "\n".join(names) + "\n\n" + line)
        # Refuse a bad num_cpu or parallel before the countdown.
        if backend == "ray":
            from spinup_tf2.utils.ray_backend import check_ray_installed

            check_ray_installed()
            num_cpu = resolve_num_cpu(num_cpu, 1, oversubscribe=True)  # the cluster's CPUs count
            data_dir = osp.abspath(data_dir or DEFAULT_DATA_DIR)  # the same path on every node
            worker_dir = osp.abspath(worker_dir) if worker_dir else data_dir
        else:
            num_cpu = resolve_num_cpu(num_cpu, parallel, oversubscribe)

        if WAIT_BEFORE_LAUNCH > 0:
            print(colorize("\nLaunch delayed to give you a few seconds to review your "
                           "experiments.\n\nTo customize or disable this behavior, change "
                           "WAIT_BEFORE_LAUNCH in\nspinup_tf2/user_config.py (or set "
                           "SPINUP_TF2_WAIT_BEFORE_LAUNCH=0).\n", color="cyan", bold=True) + line)
            steps = 100
            for _ in trange(steps, desc="Launching in...", leave=False, ncols=DIV_LINE_WIDTH,
                            mininterval=0.25, bar_format="{desc}: {bar}| {remaining} {elapsed}"):
                time.sleep(WAIT_BEFORE_LAUNCH / steps)

        jobs = []
        for var in variants:
            exp_name = self.variant_name(var)
            fn = var.pop(thunk) if isinstance(thunk, str) else thunk
            if backend == "ray":
                cmd, worker_out = experiment_command(exp_name, fn, num_cpu=num_cpu,
                                                     data_dir=worker_dir, datestamp=datestamp,
                                                     verbose=False, **var)
                out = osp.join(data_dir, osp.relpath(worker_out, worker_dir))
                jobs.append((exp_name, cmd, worker_out, out))
                continue
            cmd, out = experiment_command(exp_name, fn, num_cpu=num_cpu, data_dir=data_dir,
                                          datestamp=datestamp, verbose=parallel == 1, **var)
            if parallel == 1:
                run_and_report(cmd, out)
            else:
                jobs.append((exp_name, cmd, out))
        if jobs:
            if backend == "ray":
                from spinup_tf2.utils.ray_backend import run_on_ray

                run_on_ray(jobs, num_cpu, address)
            else:
                run_parallel(jobs, parallel)
            roots = sorted({osp.dirname(job[-1]) for job in jobs})
            print("\nAll runs ended. Plot them with:\n\n" + colorize(
                "python -m spinup_tf2.run plot " + " ".join(roots), "green") + "\n")
