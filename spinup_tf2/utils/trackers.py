"""Experiment trackers as outputs of the logger: MLflow and Weights & Biases.

``logger_kwargs=dict(track="mlflow")`` (``--track mlflow``; ``"wandb"``, or both as
``"mlflow,wandb"``) adds a :class:`TrackerOutput` per tracker to the run's
:class:`~spinup_tf2.utils.logx.EpochLogger`. Each training run is one tracker run, named as
its run directory, in a group named after its experiment (the grid's or the study's name):
config.json's values as its parameters, every numeric column of each progress.txt row as
metrics at ``TotalEnvInteracts``, and at the end the saved policy (``tf2_save/``: an MLflow
artifact, W&B files). The tracker run's id is kept in the run directory
(``trackers.json``), so ``--resume`` continues the same tracker run.

Neither package is needed unless asked for (``pip install -e ".[track]"``). MLflow writes
to ``MLFLOW_TRACKING_URI`` where it is set, else to an SQLite database in ``mlruns/`` beside
the data directory (``mlflow ui --backend-store-uri sqlite:///mlruns/mlflow.db`` serves
it). W&B runs offline (a local folder under the run directory that ``wandb sync`` uploads
later) unless an API key is set or ``WANDB_MODE`` says otherwise. A tracker that cannot
start or write stops the run with one paragraph; the run's own files are written before the
tracker's, so they stay whole.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import logging
import os
import os.path as osp
import shutil
import uuid

from spinup_tf2 import rundir
from spinup_tf2.checks import check_track
from spinup_tf2.errors import SpinupError, error_line
from spinup_tf2.utils.outputs import Output
from spinup_tf2.utils.serialization_utils import convert_json


def make_trackers(track, output_dir: str, group: str | None) -> list[TrackerOutput]:
    """One :class:`TrackerOutput` per tracker ``track`` names, for the run in
    ``output_dir``."""
    classes = {"mlflow": MLflowOutput, "wandb": WandbOutput}
    return [classes[name](output_dir, group) for name in check_track(track)]


def params_of(config: dict) -> dict:
    """config.json's values as flat ``{name: text}``, nested dicts as ``outer.inner``
    (the keys both trackers accept)."""
    flat = {}

    def walk(prefix: str, value) -> None:
        if isinstance(value, dict) and value:
            for k, v in value.items():
                walk(f"{prefix}.{k}" if prefix else str(k), v)
        else:
            text = value if isinstance(value, str) else json.dumps(value)
            flat[prefix] = text[:500]

    walk("", {k: v for k, v in convert_json(config).items() if k != "logger"})
    return flat


def metrics_of(row: dict) -> dict:
    """The row's numeric values, as floats."""
    out = {}
    for key, val in row.items():
        if hasattr(val, "__float__") and not isinstance(val, bool):
            out[key] = float(val)
    return out


class TrackerOutput(Output):
    """One tracker run for the training run in ``output_dir``. Subclasses open (or reopen)
    it in :meth:`open`, then send parameters, rows and the policy."""

    name = ""

    def __init__(self, output_dir: str, group: str | None):
        self.output_dir = output_dir
        self.run_name = osp.basename(osp.normpath(output_dir))
        self.group = group or self.run_name
        self.finished = False
        self.opened = False
        atexit.register(self.close)  # a run that dies ends its tracker run as failed

    def _ids(self) -> dict:
        path = osp.join(self.output_dir, rundir.TRACKER_IDS)
        if not osp.isfile(path):
            return {}
        with open(path) as f:
            return json.load(f)

    def _keep_id(self, value) -> None:
        ids = dict(self._ids(), **{self.name: value})
        rundir.write_text(osp.join(self.output_dir, rundir.TRACKER_IDS), json.dumps(ids))

    def _fail(self, what: str, err: BaseException):
        raise SpinupError(f"The {self.name} tracker could not {what} for the run in "
                          f"{self.output_dir} ({error_line(err)}). The run's own files "
                          f"(progress.txt, checkpoints) are whole; fix the tracker (its URI, "
                          f"its disk, its key) and run the same command with --resume, or "
                          f"drop --track {self.name}.") from None

    def start(self, config: dict) -> None:
        """Open the tracker run (a new one, or the one ``trackers.json`` names when the
        run is resumed) and send ``config`` as its parameters."""
        try:
            self.open(self._ids().get(self.name), params_of(config))
        except SpinupError:
            raise
        except Exception as err:  # a tracker's own failures, whatever their kind
            self._fail("start", err)
        self.opened = True

    def write(self, row: dict, index: int) -> None:
        """Send the row's numeric values at its ``TotalEnvInteracts``."""
        if not self.opened:
            return
        metrics = metrics_of(row)
        step = int(metrics.pop("TotalEnvInteracts", index))
        try:
            self.log(metrics, step)
        except Exception as err:
            self._fail("write epoch " + str(row.get("Epoch", index)), err)

    def finish(self, ok: bool) -> None:
        """Send the saved policy (when the run ended well) and close the tracker run."""
        if not self.opened or self.finished:
            return
        self.finished = True
        policy = rundir.tf2_save_dir(self.output_dir, None)
        try:
            if ok and osp.isdir(policy):
                self.save_policy(policy)
            self.end(ok)
        except Exception as err:
            self._fail("save the policy", err)

    def close(self) -> None:
        """At exit without :meth:`finish`: the tracker run ends as failed."""
        if self.opened and not self.finished:
            self.finished = True
            with contextlib.suppress(Exception):  # exiting already; the run's files count
                self.end(False)

    # What each tracker does.
    def open(self, run_id, params: dict) -> None:
        raise NotImplementedError

    def log(self, metrics: dict, step: int) -> None:
        raise NotImplementedError

    def save_policy(self, path: str) -> None:
        raise NotImplementedError

    def end(self, ok: bool) -> None:
        raise NotImplementedError


def mlflow_store(output_dir: str) -> tuple[str, str | None]:
    """``(tracking URI, artifact root)``: ``MLFLOW_TRACKING_URI`` where it is set (the
    server's own artifact root), else an SQLite database ``mlruns/mlflow.db`` with the
    artifacts in ``mlruns/artifacts/``, beside the data directory the run is in
    (``<data_dir>/<exp>/<run>`` puts ``mlruns/`` beside ``<data_dir>``). MLflow 3 keeps
    its plain-file store only in maintenance, so the default is the database."""
    if os.environ.get("MLFLOW_TRACKING_URI"):
        return os.environ["MLFLOW_TRACKING_URI"], None
    from spinup_tf2.launch.study import STUDY_FILE

    data_dir = osp.dirname(osp.dirname(osp.abspath(output_dir)))
    if osp.exists(osp.join(data_dir, STUDY_FILE)):  # a tune trial: <data>/<study>/<t>/<run>
        data_dir = osp.dirname(data_dir)
    root = osp.join(osp.dirname(data_dir), "mlruns")
    os.makedirs(root, exist_ok=True)
    return f"sqlite:///{osp.join(root, 'mlflow.db')}", "file://" + osp.join(root, "artifacts")


# MLflow 3's UI shows an experiment of unknown kind as GenAI work (traces, evaluations):
# this one is model training, its runs' metrics and parameters first.
EXPERIMENT_TAGS = {"mlflow.experimentKind": "custom_model_development"}


class MLflowOutput(TrackerOutput):
    """The run as an MLflow run (its experiment: the group), through ``MlflowClient``."""

    name = "mlflow"

    def open(self, run_id, params: dict) -> None:
        from mlflow.entities import Param
        from mlflow.tracking import MlflowClient

        for name in ("mlflow", "alembic"):  # their notes on making the database: not ours
            logging.getLogger(name).setLevel(logging.WARNING)
        uri, artifacts = mlflow_store(self.output_dir)
        self.client = MlflowClient(tracking_uri=uri)
        if run_id is not None:
            self.run_id = run_id
            self.client.update_run(run_id, status="RUNNING")
            return
        experiment = self.client.get_experiment_by_name(self.group)
        experiment_id = (experiment.experiment_id if experiment is not None
                         else self.client.create_experiment(
                             self.group, artifact_location=artifacts and
                             f"{artifacts}/{self.group}", tags=EXPERIMENT_TAGS))
        run = self.client.create_run(experiment_id, run_name=self.run_name,
                                     tags={"spinup_tf2.output_dir": self.output_dir})
        self.run_id = run.info.run_id
        self._keep_id(self.run_id)
        items = [Param(k, v) for k, v in params.items()]
        for i in range(0, len(items), 100):  # MLflow takes at most 100 params a batch
            self.client.log_batch(self.run_id, params=items[i:i + 100])

    def log(self, metrics: dict, step: int) -> None:
        import time

        from mlflow.entities import Metric

        now = int(time.time() * 1000)
        self.client.log_batch(self.run_id, metrics=[Metric(k, v, now, step)
                                                    for k, v in metrics.items()])

    def save_policy(self, path: str) -> None:
        self.client.log_artifacts(self.run_id, path, "tf2_save")

    def end(self, ok: bool) -> None:
        self.client.set_terminated(self.run_id, "FINISHED" if ok else "FAILED")


class WandbOutput(TrackerOutput):
    """The run as a W&B run (its group: the group), offline unless a key is set."""

    name = "wandb"

    def open(self, run_id, params: dict) -> None:
        import wandb

        for key in ("WANDB_MODE", "WANDB_API_KEY"):  # set but empty: W&B refuses its settings
            if os.environ.get(key) == "":
                del os.environ[key]
        mode = os.environ.get("WANDB_MODE") or ("online" if os.environ.get("WANDB_API_KEY")
                                                 else "offline")
        new_id = run_id or uuid.uuid4().hex[:12]
        self.run = wandb.init(id=new_id, name=self.run_name, group=self.group,
                              dir=self.output_dir, mode=mode, resume="allow",
                              config=params, reinit="create_new",
                              settings=wandb.Settings(silent=True, console="off"))
        if run_id is None:
            self._keep_id(new_id)

    def log(self, metrics: dict, step: int) -> None:
        self.run.log(metrics, step=step)

    def save_policy(self, path: str) -> None:
        # The run's files folder is uploaded whole (by wandb sync, offline): a copy there,
        # rather than wandb.save's links to files that the next epoch replaces.
        shutil.copytree(path, osp.join(self.run.dir, rundir.TF2_SAVE), dirs_exist_ok=True)

    def end(self, ok: bool) -> None:
        self.run.finish(exit_code=0 if ok else 1)
