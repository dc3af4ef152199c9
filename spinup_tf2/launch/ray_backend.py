"""Sweeps on a Ray cluster: ``ExperimentGrid.run(sac, backend='ray')``, or
``python -m spinup_tf2.run sac ... --backend ray [--ray_address ADDR]``.

Each variant of the grid is one Ray task that asks for the variant's
``num_cpu`` CPUs and runs the same experiment process as the local backend
(:mod:`spinup_tf2.launch.entrypoint`, same output directory, its output in ``stdout.txt``).
The cluster is the one at ``address`` (or ``RAY_ADDRESS``); without either, a
local one is started for the sweep and stopped after it.

Where the runs' files land:

- Shared filesystem (and the local cluster): every task writes straight to
  the run directory under ``data_dir``, as the local backend does.
- No shared filesystem: give ``worker_dir`` (``--ray_worker_dir``), a
  directory each node can write in. A task writes its run there, on its own
  node; when it has ended, a second task on that node packs the directory
  into a tar archive, which comes back through Ray's object store and is
  unpacked on the driver under a temporary name, then renamed into
  ``data_dir``: a run appears there only complete.

Ctrl-C on the driver cancels every task: a running task passes SIGINT to its
experiment process (whose files stay readable, as with a local run) and the
tasks not yet started never start. A variant that fails is reported with its
log; the others go on.
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
import os.path as osp
import signal
import subprocess
import sys
import tarfile
import tempfile
import time

from spinup_tf2 import rundir
from spinup_tf2.errors import SpinupError, colorize, is_installed
from spinup_tf2.launch.processes import ENTRYPOINT, write_payload

CANCEL_GRACE = 10.0  # seconds the cancelled tasks get to stop their runs


def check_ray_installed() -> None:
    """A :class:`SpinupError` naming the extra that brings Ray, if it is missing
    (found without importing it: see :func:`run_on_ray`)."""
    if not is_installed("ray"):
        raise SpinupError("--backend ray (backend='ray') runs the sweep on a Ray cluster, but "
                          "Ray is not installed. Install the optional extra: pip install -e "
                          "'.[ray]' in a clone of spinup_tf2 (or pip install 'ray>=2.9'), on "
                          "the driver and on every node of the cluster; or use the local "
                          "backend (--parallel K).")


def run_on_ray(jobs: list, num_cpu: int, address: str | None = None) -> None:
    """Run jobs (:class:`spinup_tf2.launch.processes.Job`) as Ray tasks of ``num_cpu`` CPUs.

    ``cmd`` is an experiment command from ``experiment_command`` (its payload
    is what the task runs), ``worker_out`` the run directory the task writes
    and ``out`` where the run must end up (the same path on a shared
    filesystem). Prints a line as each variant starts and ends, and a summary;
    raises CalledProcessError naming the failed variants after all have ended.
    """
    with connect(address) as (ray, cpus, cluster):
        check_cpus_per_task(cpus, num_cpu, f"num_cpu={num_cpu} (--cpu)")
        print(f"{cluster}; {len(jobs)} variant(s) of {num_cpu} CPU(s) each.", flush=True)
        _sweep(ray, jobs, num_cpu)


def check_cpus_per_task(cpus: list, need: int, what: str) -> None:
    """Refuse tasks of ``need`` CPUs that no node (``cpus``: each live node's) can run."""
    if need > max(cpus, default=0):
        raise SpinupError(f"{what} is more than any node of the Ray cluster has (CPUs per "
                          f"node: {sorted(cpus)}); nothing was launched. Give "
                          f"{int(max(cpus, default=1))} or less.")


@contextlib.contextmanager
def connect(address: str | None = None, local_cpus: int | None = None):
    """Join the Ray cluster at ``address`` (or ``RAY_ADDRESS``; without either, start a
    local one, of ``local_cpus`` CPUs if given: this machine's otherwise) and yield ``(ray,
    CPUs of each live node, a line naming the cluster)``; leave it after."""
    address = address or os.environ.get("RAY_ADDRESS") or None
    if address is None or address.split(":")[0] in ("127.0.0.1", "localhost"):
        # A one-machine cluster: keep Ray on the loopback interface. (Ray otherwise
        # swaps 127.0.0.1 for the machine's network address; this switch, named for
        # the platforms where that is the default, turns the swap off. Ray reads it
        # when imported.)
        os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
    check_ray_installed()
    if address is not None:
        _check_reachable(address)
    if address is not None and "RAY_AUTH_MODE" not in os.environ and osp.exists(
            osp.expanduser("~/.ray/auth_token")):
        # The rule `ray start` follows on this machine: with a token there, the cluster
        # asks for it, so the driver must send it. Ray reads this when imported.
        os.environ["RAY_AUTH_MODE"] = "token"
    import ray

    try:
        # "local": a new cluster for this sweep, never one an earlier `ray start` left.
        ray.init(address=address or "local", include_dashboard=False, log_to_driver=False,
                 logging_level=logging.ERROR, configure_logging=True,
                 **({"num_cpus": local_cpus} if local_cpus and not address else {}))
    except (ConnectionError, RuntimeError) as err:
        raise SpinupError(f"Could not join the Ray cluster at {address or '(local)'}: {err}. "
                          f"If the cluster uses token authentication, give this driver its "
                          f"token (RAY_AUTH_TOKEN or ~/.ray/auth_token, RAY_AUTH_MODE=token); "
                          f"if not, set RAY_AUTH_MODE=disabled.") from None
    try:
        cpus = [n["Resources"].get("CPU", 0) for n in ray.nodes() if n["Alive"]]
        yield ray, cpus, (f"Ray cluster {'at ' + address if address else '(local, started '}"
                          f"{'' if address else 'for the sweep)'}: {len(cpus)} node(s), "
                          f"{int(sum(cpus))} CPUs")
    finally:
        ray.shutdown()


def _check_reachable(address: str) -> None:
    """Refuse at once an address where no Ray head answers (Ray itself would
    retry for minutes)."""
    import socket

    if "://" in address:  # ray:// client addresses: left to Ray
        return
    host, _, port = address.rpartition(":")
    if not port.isdigit() or not host:
        raise SpinupError(f"--ray_address {address!r} is not HOST:PORT; give the address "
                          f"that `ray start --head` printed, e.g. 10.0.0.5:6379.")
    try:
        socket.create_connection((host, int(port)), timeout=5).close()
    except OSError as err:
        raise SpinupError(f"No Ray cluster answers at {address} ({err.strerror or err}). Start "
                          f"its head first (ray start --head --port {port}) or check the "
                          f"address; leave --ray_address out (and RAY_ADDRESS unset) to run the "
                          f"sweep on a local Ray instance started for it.") from None


def _sweep(ray, jobs: list, num_cpu: int) -> None:
    from ray.util.queue import Empty, Queue

    events = Queue()
    task = ray.remote(_run_variant).options(num_cpus=num_cpu, max_retries=0)
    t_start = time.time()
    pending = {task.remote(job.name, _read(job.cmd[-1]), job.worker_out, job.resuming, events):
               (job.name, job.worker_out, job.out) for job in jobs}
    results = {}

    def report_starts():
        try:
            while True:
                _, run, node = events.get_nowait()
                print(f"started  {run} on node {node}", flush=True)
        except Empty:
            pass

    try:
        while pending:
            ready, _ = ray.wait(list(pending), num_returns=1, timeout=0.5)
            for ref in ready:  # ends first: a start it made room for comes after it
                name, worker_out, out = pending.pop(ref)
                results[osp.basename(out)] = _collect(ray, ref, worker_out, out)
            report_starts()
    except KeyboardInterrupt:
        report_starts()
        _cancel(ray, pending)
        raise
    _summary(results, time.time() - t_start)


def _collect(ray, ref, worker_out: str, out: str) -> dict:
    """A finished task's result, its run directory brought to ``out`` if it
    was written elsewhere; prints the variant's end line."""
    run = osp.basename(out)
    try:
        res = ray.get(ref)
    except Exception as err:  # the task itself died (node lost, worker killed, ...)
        res = dict(returncode=None, node="?", seconds=0.0,
                   error=f"{type(err).__name__}: {str(err).strip().splitlines()[0][:200]}")
    if worker_out != out and res.get("node_id"):
        try:
            _bring_back(ray, res["node_id"], worker_out, out)
        except Exception as err:
            res["error"] = (f"its directory could not be copied back from {worker_out} on node "
                            f"{res['node']} ({type(err).__name__}: {err})")
    res["log"] = osp.join(out, rundir.STDOUT)
    res["ok"] = res.get("returncode") == 0 and "error" not in res
    if res["ok"]:
        state = "finished"
    elif "error" in res:
        state = f"FAILED ({res['error']})"
    else:
        state = f"FAILED (exit {res['returncode']})"
    print(f"{state} {run} on node {res['node']} in {res['seconds']:.0f} s (log: {res['log']})",
          flush=True)
    return res


def _bring_back(ray, node_id: str, worker_out: str, out: str) -> None:
    """Pack ``worker_out`` on its node, unpack it as ``out`` here, whole or not at all."""
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    pack = ray.remote(_pack_dir).options(
        num_cpus=0, scheduling_strategy=NodeAffinitySchedulingStrategy(node_id, soft=False))
    data = ray.get(pack.remote(worker_out))
    if osp.exists(out):
        raise FileExistsError(f"{out} already exists here; the run stays in {worker_out}")
    with rundir.atomic_dir(out) as tmp, tarfile.open(fileobj=io.BytesIO(data), mode="r") as tar:
        tar.extractall(tmp, filter="data")  # "data": no links or paths out of tmp


def _cancel(ray, pending: dict) -> None:
    """Cancel the unfinished tasks: first as Ctrl-C (the runs stop cleanly), then,
    after CANCEL_GRACE seconds, by force."""
    refs = list(pending)
    for ref in refs:
        ray.cancel(ref, force=False)
    _, stuck = ray.wait(refs, num_returns=len(refs), timeout=CANCEL_GRACE)
    for ref in stuck:
        ray.cancel(ref, force=True)
    names = sorted(osp.basename(out) for _, _, out in pending.values())
    where = sorted({osp.dirname(out) for _, _, out in pending.values()})
    print(colorize(f"\nInterrupted: cancelled {len(names)} variant(s) of the sweep "
                   f"({', '.join(names)}); what finished stays, and runs stopped midway keep "
                   f"what they wrote (in {', '.join(where)}).", "yellow", bold=True), flush=True)


def _summary(results: dict, seconds: float) -> None:
    failed = {name: res for name, res in results.items() if not res["ok"]}
    line = (f"\nRay sweep ended in {seconds:.0f} s: {len(results)} runs, "
            f"{len(results) - len(failed)} finished")
    if not failed:
        print(colorize(line + ".", "green", bold=True), flush=True)
        return
    print(colorize(line + f", {len(failed)} FAILED:", "red", bold=True), flush=True)
    for name, res in sorted(failed.items()):
        print(f"  {name}: see {res['log']}", flush=True)
    raise subprocess.CalledProcessError(1, f"runs {', '.join(sorted(failed))}")


def _read(path: str) -> bytes:
    with open(path, "rb") as f:
        return f.read()


def _run_variant(name: str, payload: bytes, out: str, resuming: bool, events) -> dict:
    """The Ray task: one experiment process, its output in ``out/stdout.txt`` (appended to
    when ``resuming``); ``payload`` is the experiment, as in the driver's payload file."""
    import socket

    import ray

    node = f"{ray.util.get_node_ip_address()} ({socket.gethostname()})"
    events.put(("started", osp.basename(out), node))
    os.makedirs(out, exist_ok=True)
    t0 = time.time()
    with tempfile.TemporaryDirectory(prefix="spinup_tf2_launch_") as tmp, \
            rundir.open_log(osp.join(out, rundir.STDOUT), append=resuming) as log:
        log.write(f"[spinup_tf2] variant {name}: Ray task on node {node}\n")
        log.flush()
        # A run with actors (sac(actors=N)) puts them on this task's cluster.
        cluster = getattr(ray.get_runtime_context(), "gcs_address", None)
        env = dict(os.environ, **({"RAY_ADDRESS": cluster} if cluster else {}))
        proc = subprocess.Popen([sys.executable, "-m", ENTRYPOINT, write_payload(payload, tmp)],
                                stdout=log, stderr=subprocess.STDOUT, env=env)
        log.write(f"[spinup_tf2] experiment process: pid {proc.pid}\n")
        log.flush()
        try:
            returncode = proc.wait()
        except KeyboardInterrupt:  # ray.cancel: stop the run as Ctrl-C would
            proc.send_signal(signal.SIGINT)
            try:
                returncode = proc.wait(timeout=CANCEL_GRACE / 2)
            except subprocess.TimeoutExpired:
                proc.kill()
                returncode = proc.wait()
            raise
    return dict(returncode=returncode, node=node, seconds=time.time() - t0, pid=proc.pid,
                node_id=ray.get_runtime_context().get_node_id())


def _pack_dir(path: str) -> bytes:
    """A run directory as an uncompressed tar archive (its files are mostly
    compressed or small), paths relative to it."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        tar.add(path, arcname=".")
    return buf.getvalue()
