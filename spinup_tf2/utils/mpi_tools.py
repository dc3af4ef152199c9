"""MPI helpers with Spinning Up's names. Without an MPI launcher (or without
mpi4py installed) they act as for a single process and say nothing."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import numpy as np

_LAUNCHER_VARS = ("IN_MPI", "PMI_RANK", "PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "MPI_LOCALNRANKS")
_comm = None
_comm_checked = False


def _get_comm():
    """MPI.COMM_WORLD when running under an MPI launcher, else None.

    mpi4py is imported only then, so single-process runs never pay for MPI's
    start-up and never need it installed."""
    global _comm, _comm_checked
    if not _comm_checked:
        _comm_checked = True
        if any(os.environ.get(k) for k in _LAUNCHER_VARS):
            try:
                from mpi4py import MPI
                _comm = MPI.COMM_WORLD
            except ImportError:
                _comm = None
    return _comm


def find_mpirun() -> str | None:
    """Path of ``mpirun``/``mpiexec``: next to this Python first (the pip
    ``mpich`` package installs it there), then on PATH."""
    here = os.path.dirname(sys.executable)
    for name in ("mpiexec", "mpirun"):
        cand = os.path.join(here, name)
        if os.path.exists(cand):
            return cand
    return shutil.which("mpiexec") or shutil.which("mpirun")


def mpi_fork(n: int) -> None:
    """Re-launch the current script with ``n`` copies under MPI.

    Does nothing when ``n <= 1`` or when already inside an MPI launch; otherwise
    runs ``mpirun -np n python <same args>`` and exits this process afterwards, with
    mpirun's exit status.
    """
    if n <= 1 or os.getenv("IN_MPI") is not None:
        return
    mpirun = find_mpirun()
    if mpirun is None:
        raise RuntimeError(
            f"Running with {n} processes needs an MPI launcher, and none was found next to "
            f"{sys.executable} or on PATH. Install the MPI extra: pip install 'spinup_tf2[mpi]' "
            f"(mpi4py plus the mpich package, which provides mpirun).")
    env = os.environ.copy()
    env.update(MKL_NUM_THREADS="1", OMP_NUM_THREADS="1", IN_MPI="1")
    if sys.stdout.isatty():  # the ranks print through mpirun's pipes to this terminal
        env.setdefault("FORCE_COLOR", "1")
    args = [mpirun, "-np", str(n), sys.executable] + sys.argv
    from spinup_tf2.lifetime import die_with_parent

    # mpirun ends with this process, and takes the ranks it started with it. A rank that
    # failed has said why: this process exits with its status, adding no traceback.
    sys.exit(subprocess.call(args, env=env, preexec_fn=die_with_parent))


def proc_id() -> int:
    """Rank of this process (0 without MPI)."""
    comm = _get_comm()
    return 0 if comm is None else comm.Get_rank()


def num_procs() -> int:
    """Number of processes (1 without MPI)."""
    comm = _get_comm()
    return 1 if comm is None else comm.Get_size()


def broadcast(x, root: int = 0) -> None:
    """Broadcast numpy array ``x`` in place from ``root``."""
    comm = _get_comm()
    if comm is not None:
        comm.Bcast(x, root=root)


def mpi_op(x, op: str):
    """Reduce scalar or array ``x`` over processes with ``op`` ('sum', 'max', 'min')."""
    x, scalar = ([x], True) if np.isscalar(x) else (x, False)
    x = np.asarray(x, dtype=np.float64)
    comm = _get_comm()
    if comm is None:
        buff = x.copy()
    else:
        from mpi4py import MPI
        buff = np.zeros_like(x)
        comm.Allreduce(x, buff, op={"sum": MPI.SUM, "max": MPI.MAX, "min": MPI.MIN}[op])
    return buff[0] if scalar else buff


def mpi_sum(x):
    """Sum of ``x`` over processes."""
    return mpi_op(x, "sum")


def mpi_avg(x):
    """Average of ``x`` over processes."""
    return mpi_sum(x) / num_procs()


def mpi_statistics_scalar(x, with_min_and_max: bool = False):
    """Mean and population std of ``x`` over all processes (and min, max).

    Returns float32 values, as Spinning Up's logger writes them. An empty ``x``
    on every process gives NaN.
    """
    x = np.asarray(x, dtype=np.float32).ravel()
    global_sum, global_n = mpi_sum([np.sum(x, dtype=np.float64), len(x)])
    if global_n == 0:
        nan = np.float32(np.nan)
        return (nan, nan, nan, nan) if with_min_and_max else (nan, nan)
    mean = global_sum / global_n
    global_sum_sq = mpi_sum(np.sum((x - mean) ** 2, dtype=np.float64))
    std = np.sqrt(global_sum_sq / global_n)
    if with_min_and_max:
        global_min = mpi_op(np.min(x) if len(x) > 0 else np.inf, "min")
        global_max = mpi_op(np.max(x) if len(x) > 0 else -np.inf, "max")
        return np.float32(mean), np.float32(std), np.float32(global_min), np.float32(global_max)
    return np.float32(mean), np.float32(std)
