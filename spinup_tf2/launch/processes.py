"""Running experiments as processes: each in a fresh Python process (under MPI with
``num_cpu > 1``), one after another in the foreground or several at once in the
background, tied to the launcher's lifetime and stopped cleanly by Ctrl-C."""

from __future__ import annotations

import atexit
import contextlib
import functools
import json
import os
import os.path as osp
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import zlib
from typing import NamedTuple

import cloudpickle

from spinup_tf2 import rundir
from spinup_tf2.errors import SpinupError, colorize
from spinup_tf2.launch.flags import resolve_names
from spinup_tf2.lifetime import ignore_interrupts
from spinup_tf2.utils.serialization_utils import convert_json

DIV_LINE_WIDTH = 80
# The module a launched experiment process runs (python -m ...).
ENTRYPOINT = "spinup_tf2.launch.entrypoint"


def call_experiment(exp_name: str, thunk, seed: int = 0, num_cpu: int | str = 1,
                    data_dir: str | None = None, datestamp: bool = False, **kwargs) -> None:
    """Run ``thunk(**kwargs, seed=seed, logger_kwargs=...)`` in a fresh Python process.

    Prints the experiment and its arguments, works out the output directory
    (:func:`spinup_tf2.rundir.output_dir_for`, unless ``logger_kwargs`` is given), turns an
    ``env_name`` argument (with ``env_kwargs``, gym.make's keyword arguments) into
    ``env_fn = lambda: gymnasium.make(env_name, **env_kwargs)`` (with ``pixels=True``,
    :func:`spinup_tf2.envs.rendering.make_pixels` of it, taking ``action_repeat``, ``frame_stack``
    and ``image_size``; and ``recurrent=True`` into
    ``actor_critic="recurrent"``, the recurrent variant's record),
    and launches :mod:`spinup_tf2.launch.entrypoint` with the whole call cloudpickled,
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
              f"Check the message above to see what happened. {what_was_written(output_dir)}"
              "\n\n" + line + "\n" * 3)
        raise subprocess.CalledProcessError(returncode, cmd[:2])

    plot_cmd = colorize("python -m spinup_tf2.run plot " + output_dir, "green")
    test_cmd = colorize("python -m spinup_tf2.run test_policy " + output_dir, "green")
    print("\n" * 5 + line + "\nEnd of experiment.\n\n\nPlot results from this run with:\n\n"
          f"{plot_cmd}\n\n\nWatch the trained agent with:\n\n{test_cmd}\n\n\n" + line + "\n" * 5)


def what_was_written(output_dir: str) -> str:
    """Where a stopped run's data is (and that ``--resume`` continues it, when it left a
    training checkpoint), or that it wrote nothing: the sentence the launcher prints."""
    if not osp.isdir(output_dir) or not os.listdir(output_dir):
        return f"Nothing was written ({output_dir} holds nothing)."
    if osp.isdir(osp.join(output_dir, rundir.TRAIN_STATE)):
        return (f"The data written so far is in {output_dir}; the same command with --resume "
                f"continues the run from its last checkpoint.")
    return f"The data written so far is in {output_dir}."


def experiment_command(exp_name: str, thunk, seed: int = 0, num_cpu: int = 1,
                       data_dir: str | None = None, datestamp: bool = False,
                       verbose: bool = True, **kwargs) -> tuple[list, str]:
    """The command that runs one experiment in a fresh process, and its output
    directory (see :func:`call_experiment`, which runs it). ``num_cpu`` is a
    number of processes, as :func:`resolve_num_cpu` gives it."""
    kwargs["seed"] = seed
    if verbose and (kwargs.get("logger_kwargs") or {}).get("quiet"):
        print(colorize(f"Running experiment {exp_name} (seed {seed}).", color="cyan",
                       bold=True))
    elif verbose:
        print(colorize("Running experiment:\n", color="cyan", bold=True))
        print(exp_name + "\n")
        print(colorize("with kwargs:\n", color="cyan", bold=True))
        print(json.dumps(convert_json(kwargs), separators=(",", ":\t"), indent=4,
                         sort_keys=True))
        print("\n")

    if "output_dir" in kwargs.get("logger_kwargs", {}):
        if verbose and not kwargs["logger_kwargs"].get("quiet"):
            print("Note: Call experiment is not handling logger_kwargs.\n")
    else:  # only options such as tensorboard given: add where the run goes
        kwargs["logger_kwargs"] = {
            "output_dir": output_dir_of(exp_name, kwargs, data_dir, datestamp),
            "exp_name": exp_name, **kwargs.get("logger_kwargs", {})}
    output_dir = kwargs["logger_kwargs"]["output_dir"]

    def thunk_plus():
        if "env_name" in kwargs:
            from spinup_tf2.envs import make_named, make_pixels

            env_name, env_kwargs = kwargs.pop("env_name"), kwargs.pop("env_kwargs", None) or {}
            wrappers = kwargs.pop("env_wrappers", None)
            kwargs["env_fn"] = functools.partial(make_named, env_name, **env_kwargs, **(
                {"env_wrappers": wrappers} if wrappers else {}))
            if kwargs.pop("pixels", False):  # --pixels: the env as its camera sees it
                from spinup_tf2.launch.flags import PIXEL_OPTIONS

                opts = {k: kwargs.pop(k, v) for k, v in PIXEL_OPTIONS.items()}
                kwargs["env_fn"] = functools.partial(
                    make_pixels, env_name, opts["image_size"], opts["frame_stack"],
                    opts["action_repeat"], **env_kwargs)
        if kwargs.pop("recurrent", False):  # --recurrent: the recurrent variant's record
            kwargs["actor_critic"] = "recurrent"
        from spinup_tf2.utils.mpi_tools import mpi_fork

        mpi_fork(num_cpu)
        thunk(**resolve_names(kwargs))

    path = write_payload(zlib.compress(cloudpickle.dumps(thunk_plus)))
    return [sys.executable or "python", "-m", ENTRYPOINT, path], output_dir


_payload_dir = None


def write_payload(payload: bytes, directory: str | None = None) -> str:
    """Write an experiment's payload to a private file and return its path, the one
    argument of :mod:`spinup_tf2.launch.entrypoint`.

    A file rather than the argument itself, since a payload can be any size (an
    ``env_fn`` closing over a large array) and one argument may hold only 128 KiB;
    and a file, unlike stdin, every MPI rank can read. The files go in one private
    directory per launcher (``directory`` if given), removed when the launcher exits,
    which outlives its experiments."""
    global _payload_dir
    if directory is None:
        if _payload_dir is None:
            _payload_dir = tempfile.mkdtemp(prefix="spinup_tf2_launch_")
            atexit.register(shutil.rmtree, _payload_dir, True)
        directory = _payload_dir
    fd, path = tempfile.mkstemp(suffix=".payload", dir=directory)
    with os.fdopen(fd, "wb") as f:
        f.write(payload)
    return path


def remove_payload(cmd: list) -> None:
    """Remove an experiment command's payload file once its process has ended."""
    with contextlib.suppress(OSError):
        os.remove(cmd[-1])


def output_dir_of(exp_name: str, kwargs: dict, data_dir: str | None = None,
                  datestamp: bool = False) -> str:
    """Where the experiment ``exp_name`` with arguments ``kwargs`` writes: the
    ``output_dir`` its ``logger_kwargs`` name, else the directory
    :func:`spinup_tf2.rundir.output_dir_for` names for its seed (0 if none)."""
    given = (kwargs.get("logger_kwargs") or {}).get("output_dir")
    return given or rundir.output_dir_for(exp_name, kwargs.get("seed", 0), data_dir, datestamp)


class Job(NamedTuple):
    """One variant of a sweep run in the background: its name, its command (see
    :func:`experiment_command`), where its run ends up, whether it resumes one (then its
    log is appended to), and, on a Ray cluster without a shared filesystem, where the
    node writes it first."""

    name: str
    cmd: list
    out: str
    resuming: bool = False
    worker_out: str | None = None


def run_parallel(jobs: list[Job], parallel: int) -> None:
    """Run jobs, up to ``parallel`` at a time.

    Each job's stdout and stderr go to ``<output_dir>/stdout.txt``; one line
    is printed when a job starts and one when it ends. Ctrl-C stops all of
    them (see :func:`run_child`). Raises CalledProcessError naming the failed
    runs, after all have ended.
    """
    pending, running, failed = list(jobs), [], []
    try:
        while pending or running:
            while pending and len(running) < parallel:
                name, cmd, out, resuming, _ = pending.pop(0)
                os.makedirs(out, exist_ok=True)
                log = rundir.open_log(osp.join(out, rundir.STDOUT), append=resuming)
                proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
                running.append((name, out, proc, log, time.time()))
                print(f"started  {osp.basename(out)} -> {out}", flush=True)
            for job in list(running):
                name, out, proc, log, t0 = job
                if proc.poll() is None:
                    continue
                log.close()
                remove_payload(proc.args)
                running.remove(job)
                state = "finished" if proc.returncode == 0 else f"FAILED (exit {proc.returncode})"
                print(f"{state} {osp.basename(out)} in {time.time() - t0:.0f} s (log: "
                      f"{osp.join(out, rundir.STDOUT)})", flush=True)
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
            remove_payload(proc.args)
            print(colorize(f"Interrupted. {what_was_written(out)}", "yellow", bold=True),
                  flush=True)
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
        print(colorize(f"\nInterrupted. {what_was_written(output_dir)}", "yellow", bold=True),
              flush=True)
        raise
    finally:
        remove_payload(cmd)


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
