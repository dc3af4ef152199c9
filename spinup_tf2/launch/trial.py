"""One trial of a hyperparameter study (:mod:`spinup_tf2.launch.tune`): its runs as
experiment processes, its objective read from their progress.txt rows as they come, and
the pruner's verdict after each epoch.

The verdict is taken against a fixed snapshot of the trials that had finished when the
trial was asked for (``history``), held in a private in-memory Optuna study, never against
trials that finish while it runs. So a trial is pruned at the same epoch whichever trials
happen to finish first, on this machine or on a Ray node, and after a resume.
"""

from __future__ import annotations

import math
import os
import os.path as osp
import signal
import subprocess
import sys
import tempfile
import time
from typing import NamedTuple

from spinup_tf2 import rundir
from spinup_tf2.launch.processes import ENTRYPOINT, write_payload

INTERRUPTED = (130, -signal.SIGINT)  # a run's exit code after a Ctrl-C
STOP_GRACE = 20.0  # seconds a run stopped by the pruner (or Ctrl-C) gets to end cleanly

# The pruners a study may use: Optuna's, by the name --pruner takes.
PRUNERS = {"median": "MedianPruner", "percentile": "PercentilePruner",
           "halving": "SuccessiveHalvingPruner", "none": "NopPruner"}


class Objective(NamedTuple):
    """What a trial is scored by: the mean of ``column`` over a run's last ``epochs``
    epochs (as far as it has got), each run's value scaled to ``(value - low) / (high -
    low)`` when ``target_scores`` gives its environment's ``(low, high)`` (as CleanRL's
    tuner does), and the trial's value the mean over its runs."""

    column: str = "AverageTestEpRet"
    epochs: int = 5
    target_scores: dict | None = None

    def run_value(self, column: list[float], env_name: str) -> float:
        """A run's value after the epochs in ``column`` (its objective column so far)."""
        last = column[-self.epochs:]
        value = sum(last) / len(last)
        low, high = (self.target_scores or {}).get(env_name, (None, None))
        return value if low is None else (value - low) / (high - low)


class RunSpec(NamedTuple):
    """One run of a trial: its environment, the experiment (a payload, as
    :func:`spinup_tf2.launch.processes.experiment_command` writes it), its directory and
    whether it resumes a run there (then its log is appended to)."""

    env_name: str
    payload: bytes
    out: str
    resuming: bool = False
    done: bool = False  # it has run all its epochs already (a resumed trial's): not started


class TrialSpec(NamedTuple):
    """Everything a trial needs to run anywhere: its number, its runs, the objective, the
    study's direction ('maximize' or 'minimize'), the pruner (a name of :data:`PRUNERS` and
    its keyword arguments) and the finished trials it is judged against (``history``:
    dicts of ``state``, ``value``, ``intermediate_values``, ``system_attrs``)."""

    number: int
    runs: list
    objective: Objective
    direction: str
    pruner: str
    pruner_kwargs: dict
    history: list


def make_pruner(name: str, kwargs: dict):
    """Optuna's pruner ``name`` (a key of :data:`PRUNERS`) made with ``kwargs``."""
    import optuna

    return getattr(optuna.pruners, PRUNERS[name])(**kwargs)


class TrialRun:
    """A trial's runs, started together; :meth:`poll` reads their new rows, reports each
    epoch that every run has finished and stops them all when the pruner says so, or
    when one fails. Runs the same on the driver and inside a Ray task."""

    def __init__(self, spec: TrialSpec):
        import optuna

        self.spec = spec
        replica = optuna.create_study(direction=spec.direction,
                                      pruner=make_pruner(spec.pruner, spec.pruner_kwargs),
                                      sampler=optuna.samplers.RandomSampler(seed=0))
        states = optuna.trial.TrialState
        replica.add_trials([optuna.trial.create_trial(
            state=states[h["state"]], value=h["value"],
            intermediate_values=h["intermediate_values"], system_attrs=h["system_attrs"])
            for h in spec.history])
        self.replica, self.trial = replica, replica.ask()
        self.procs: list[subprocess.Popen] = []
        self.logs: list = []
        self.columns: list[list[float]] = [[] for _ in spec.runs]
        self.values: dict[int, float] = {}
        self.state, self.error, self.seconds = None, None, 0.0
        self.column_missing = False  # the objective is no column: every trial would fail

    def start(self) -> None:
        """Start every run, each writing its output to its ``stdout.txt``."""
        self._tmp = tempfile.TemporaryDirectory(prefix="spinup_tf2_trial_")
        self.t0 = time.time()
        for run in self.spec.runs:
            if run.done:
                self.procs.append(None)
                continue
            os.makedirs(run.out, exist_ok=True)
            log = rundir.open_log(osp.join(run.out, rundir.STDOUT), append=run.resuming)
            cmd = [sys.executable or "python", "-m", ENTRYPOINT,
                   write_payload(run.payload, self._tmp.name)]
            self.procs.append(subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT))
            self.logs.append(log)

    def poll(self) -> bool:
        """Take in the runs' new rows and ended processes; True once the trial is over
        (its state COMPLETE, PRUNED or FAIL as Optuna names them, or STOPPED: its runs
        were interrupted, so the study stops and a resume takes the trial up again)."""
        if self.state is not None:
            return True
        # The exit codes before the rows: no row comes after a process has ended.
        codes = [0 if proc is None else proc.poll() for proc in self.procs]
        try:
            self._read_rows()
        except ValueError as err:
            return self._end("FAIL", str(err))
        if self._report():
            return self._end("PRUNED")
        failed = [i for i, code in enumerate(codes) if code not in (None, 0)]
        if any(codes[i] in INTERRUPTED for i in failed):  # a Ctrl-C reached the runs first
            return self._end("STOPPED")
        if failed:
            out = self.spec.runs[failed[0]].out
            return self._end("FAIL", f"its run {out} failed (exit {codes[failed[0]]}); see "
                                     f"{osp.join(out, rundir.STDOUT)}")
        if all(code == 0 for code in codes):
            if not self.values:
                return self._end("FAIL", f"its runs ended without a value of "
                                         f"{self.spec.objective.column}")
            return self._end("COMPLETE")
        return False

    def _read_rows(self) -> None:
        column = self.spec.objective.column
        for i, run in enumerate(self.spec.runs):
            path = osp.join(run.out, rundir.PROGRESS)
            if not osp.exists(path):
                continue
            header, rows, _ = rundir.progress_lines(path)
            if not header.strip():
                continue
            names = header.split("\t")
            if column not in names:
                self.column_missing = True
                raise ValueError(f"the objective {column!r} is not a column of {path} (its "
                                 f"columns: {', '.join(names)})")
            at = names.index(column)
            self.columns[i] = [float(row.split("\t")[at]) for row in rows]

    def _report(self) -> bool:
        """Report each epoch every run has reached; True if the pruner stops the trial."""
        done = min(len(col) for col in self.columns)
        for epoch in range(len(self.values) + 1, done + 1):
            value = sum(self.spec.objective.run_value(col[:epoch], run.env_name)
                        for col, run in zip(self.columns, self.spec.runs, strict=False)
                        ) / len(self.columns)
            self.values[epoch] = value
            if math.isnan(value):
                continue
            self.trial.report(value, epoch)
            if self.trial.should_prune():
                return True
        return False

    def _end(self, state: str, error: str | None = None) -> bool:
        self.state, self.error = state, error
        self.stop()
        return True

    def stop(self) -> None:
        """Stop the runs still running as Ctrl-C would (their checkpoints stay), waiting
        :data:`STOP_GRACE` seconds before killing one."""
        procs = [proc for proc in self.procs if proc is not None]
        for proc in procs:
            if proc.poll() is None:
                proc.send_signal(signal.SIGINT)
        deadline = time.time() + STOP_GRACE
        for proc in procs:
            try:
                proc.wait(timeout=max(0.1, deadline - time.time()))
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        for log in self.logs:
            log.close()
        if hasattr(self, "_tmp"):
            self._tmp.cleanup()
        self.seconds = time.time() - getattr(self, "t0", time.time())

    def result(self) -> dict:
        """The trial's outcome, as the driver records it in the study."""
        finite = {e: v for e, v in self.values.items() if not math.isnan(v)}
        attrs = next(t for t in self.replica.get_trials(deepcopy=False)
                     if t.number == self.trial.number).system_attrs
        return dict(number=self.spec.number, state=self.state, error=self.error,
                    values=finite, value=finite[max(finite)] if finite else None,
                    pruner_attrs=attrs, seconds=self.seconds,
                    column_missing=self.column_missing)


def run_trial(spec: TrialSpec, poll_every: float = 0.5) -> dict:
    """Run a trial to its end where this is called (a Ray task calls it on its node);
    a KeyboardInterrupt (Ctrl-C, or Ray cancelling the task) stops its runs cleanly and
    goes on up."""
    trial = TrialRun(spec)
    try:
        trial.start()
        while not trial.poll():
            time.sleep(poll_every)
    except KeyboardInterrupt:
        trial.stop()
        raise
    return trial.result()
