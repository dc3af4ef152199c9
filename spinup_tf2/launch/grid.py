"""ExperimentGrid: a grid of experiments, as in Spinning Up's ``run_utils``."""

from __future__ import annotations

import os.path as osp
import string
import time

import numpy as np
from tqdm import trange

from spinup_tf2 import rundir
from spinup_tf2.errors import SpinupError, colorize
from spinup_tf2.launch.processes import (
    DIV_LINE_WIDTH,
    Job,
    experiment_command,
    output_dir_of,
    resolve_num_cpu,
    run_and_report,
    run_parallel,
)
from spinup_tf2.rundir import check_exp_name
from spinup_tf2.user_config import (
    DEFAULT_DATA_DIR,
    DEFAULT_SHORTHAND,
    wait_before_launch,
)
from spinup_tf2.utils.serialization_utils import convert_json

valid_str = rundir.name_fragment  # Spinning Up's name


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
        title = f"ExperimentGrid [{self._name}] runs over parameters:\n"
        if len(title) > 80:
            title = f"ExperimentGrid [{self._name}]\n runs over parameters:\n"
        print(colorize(title, color="green", bold=True))
        for k, v, sh in zip(self.keys, self.vals, self.shs, strict=True):
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
        for k, v, sh, inn in zip(self.keys, self.vals, self.shs, self.in_names, strict=True):
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
        for k, vals in zip(self.keys, self.vals, strict=True):
            combos = [{**c, k: v} for c in combos for v in vals]
        return [_nest(c) for c in combos]

    def _check_output_dirs(self, variants: list[dict], data_dir: str | None,
                                    datestamp: bool) -> None:
        """Refuse, before anything launches, variants that would write one directory,
        directories with symbolic links where a run (or its log) writes, and directories
        that already hold a run (without resume or overwrite)."""
        where: dict[str, list[str]] = {}
        for var in variants:
            name = self.variant_name(var)
            out = output_dir_of(name, var, data_dir, datestamp)
            rundir.check_no_links(out)
            logger_kwargs = var.get("logger_kwargs") or {}
            if not (var.get("resume") or var.get("overwrite") or logger_kwargs.get("overwrite")):
                rundir.refuse_existing_run(out)  # at once, not after a process starts
            where.setdefault(out, []).append(f"{name} (seed {var.get('seed', 0)})")
        shared = {out: names for out, names in where.items() if len(names) > 1}
        if shared:
            out, names = next(iter(shared.items()))
            raise SpinupError(
                f"{len(names)} variants of this grid would write the same directory {out}: "
                f"{', '.join(names)}; their runs would overwrite each other. Nothing was "
                f"launched. Give each value once (e.g. --seed 0 10, not --seed 0 0), or name "
                f"the differing key in the variant names: ExperimentGrid.add(key, values, "
                f"in_name=True), or --key[sh] on the command line.")

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
        :mod:`spinup_tf2.launch.ray_backend`).
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
        # Refuse a bad num_cpu or parallel before anything else: it needs no grid.
        if backend == "ray":
            from spinup_tf2.launch.ray_backend import check_ray_installed

            check_ray_installed()
            num_cpu = resolve_num_cpu(num_cpu, 1, oversubscribe=True)  # the cluster's CPUs count
            data_dir = osp.abspath(data_dir or DEFAULT_DATA_DIR)  # the same path on every node
            worker_dir = osp.abspath(worker_dir) if worker_dir else data_dir
        else:
            num_cpu = resolve_num_cpu(num_cpu, parallel, oversubscribe)
        variants = self.variants()
        names = sorted(set(self.variant_name(var) for var in variants))
        line = "=" * DIV_LINE_WIDTH
        if any((var.get("logger_kwargs") or {}).get("quiet") for var in variants):
            print(colorize(f"ExperimentGrid [{self._name}]: {len(variants)} run(s) of "
                           f"{', '.join(names)}", color="green", bold=True))  # --quiet
        else:
            self.print()
            print("\n" + colorize("Preparing to run the following experiments...",
                                  color="green", bold=True) + "\n\n" + "\n".join(names)
                  + "\n\n" + line)
        self._check_output_dirs(variants, data_dir, datestamp)

        wait = wait_before_launch()
        if wait > 0:
            print(colorize("\nLaunch delayed to give you a few seconds to review your "
                           "experiments.\n\nTo customize or disable this behavior, change "
                           "WAIT_BEFORE_LAUNCH in\nspinup_tf2/user_config.py (or set "
                           "SPINUP_TF2_WAIT_BEFORE_LAUNCH=0).\n", color="cyan", bold=True) + line)
            steps = 100
            for _ in trange(steps, desc="Launching in...", leave=False, ncols=DIV_LINE_WIDTH,
                            mininterval=0.25, bar_format="{desc}: {bar}| {remaining} {elapsed}"):
                time.sleep(wait / steps)

        jobs = []
        for var in variants:
            exp_name = self.variant_name(var)
            fn = var.pop(thunk) if isinstance(thunk, str) else thunk
            tracked = var.get("logger_kwargs") or {}
            if tracked.get("track") and not tracked.get("track_group") and self._name:
                # The grid's runs are one group in the trackers (one MLflow experiment).
                var["logger_kwargs"] = dict(tracked, track_group=self._name)
            resuming = bool(var.get("resume"))  # then its log goes on after the first part's
            if backend == "ray":
                cmd, worker_out = experiment_command(exp_name, fn, num_cpu=num_cpu,
                                                     data_dir=worker_dir, datestamp=datestamp,
                                                     verbose=False, **var)
                out = osp.join(data_dir, osp.relpath(worker_out, worker_dir))
                jobs.append(Job(exp_name, cmd, out, resuming, worker_out))
                continue
            cmd, out = experiment_command(exp_name, fn, num_cpu=num_cpu, data_dir=data_dir,
                                          datestamp=datestamp, verbose=parallel == 1, **var)
            if parallel == 1:
                run_and_report(cmd, out)
            else:
                jobs.append(Job(exp_name, cmd, out, resuming))
        if jobs:
            if backend == "ray":
                from spinup_tf2.launch.ray_backend import run_on_ray

                run_on_ray(jobs, num_cpu, address)
            else:
                run_parallel(jobs, parallel)
            roots = sorted({osp.dirname(job.out) for job in jobs})
            print("\nAll runs ended. Plot them with:\n\n" + colorize(
                "python -m spinup_tf2.run plot " + " ".join(roots), "green") + "\n")
