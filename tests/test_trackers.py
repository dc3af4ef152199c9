"""Experiment trackers (``--track mlflow``, ``--track wandb``): real tiny Pendulum-v1 runs
through the command line, each tracker's store read back with the tracker's own reader
(MLflow's client on its SQLite database; W&B's offline run file, record by record), against
the run's own progress.txt and config.json."""

import glob
import json
import os
import struct
import subprocess
import sys

import pytest
from helpers import assert_clean_error, cli, column, rows

mlflow = pytest.importorskip("mlflow")  # the track extra; CI's test extra installs both
wandb_pb = pytest.importorskip("wandb.proto.wandb_internal_pb2")

pytestmark = pytest.mark.processes

SMALL = ["--env", "Pendulum-v1", "--steps_per_epoch", "300", "--start_steps", "100",
         "--update_after", "100", "--num_test_episodes", "1", "--hid", "[16]", "--quiet"]
NO_KEY = {"WANDB_API_KEY": "", "WANDB_MODE": "", "MLFLOW_TRACKING_URI": ""}


def mlflow_runs(root, experiment):
    """``{run name: (run, client)}`` of MLflow's experiment in ``root``/mlruns."""
    from mlflow.tracking import MlflowClient

    client = MlflowClient(f"sqlite:///{root}/mlruns/mlflow.db")
    exp = client.get_experiment_by_name(experiment)
    assert exp is not None, experiment
    return {r.info.run_name: (r, client) for r in client.search_runs([exp.experiment_id])}


def wandb_records(path):
    """The protobuf records of a W&B run file (``.wandb``): a 7-byte header, then a
    LevelDB-format log of 32 KiB blocks whose records come whole (type 1) or in pieces
    (first 2, middle 3, last 4)."""
    data = open(path, "rb").read()
    assert data[:4] == b":W&B", data[:7]
    pos, block, parts = 7, 32768, b""
    while pos + 7 <= len(data):
        left = block - pos % block
        length, kind = struct.unpack("<HB", data[pos + 4:pos + 7])
        if left < 7 or (kind == 0 and length == 0):
            pos += left  # a block's padding
            continue
        chunk = data[pos + 7:pos + 7 + length]
        pos += 7 + length
        parts = chunk if kind in (1, 2) else parts + chunk
        if kind in (1, 4):
            rec = wandb_pb.Record()
            rec.ParseFromString(parts)
            yield rec


def wandb_offline(run_dir):
    """``(run record, history rows, files)`` of every offline W&B run folder of
    ``run_dir`` (one per start: a resumed run adds one with the same id)."""
    out = []
    for folder in sorted(glob.glob(os.path.join(run_dir, "wandb", "offline-run-*"))):
        run, history = None, []
        for rec in wandb_records(glob.glob(os.path.join(folder, "*.wandb"))[0]):
            kind = rec.WhichOneof("record_type")
            if kind == "run":
                run = rec.run
            elif kind == "history":
                history.append({i.key or "/".join(i.nested_key): json.loads(i.value_json)
                                for i in rec.history.item})
        files = [os.path.relpath(p, os.path.join(folder, "files"))
                 for p in glob.glob(os.path.join(folder, "files", "**"), recursive=True)]
        out.append((run, history, files))
    return out


def wandb_summary(folder):
    """``wandb leet inspect --summary --json FOLDER``: W&B's own terminal reader of an
    offline run (its name, state, last step, latest value of each metric, config)."""
    exe = os.path.join(os.path.dirname(sys.executable), "wandb")
    res = subprocess.run([exe, "leet", "inspect", "--summary", "--json", folder],
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr[-2000:]
    return json.loads(res.stdout)


@pytest.mark.slow
def test_a_tracked_run_sends_its_rows_config_and_policy_and_resumes_the_same_runs(tmp_path):
    data = tmp_path / "data"
    res = cli("sac", *SMALL, "--epochs", "2", "--exp_name", "tr", "--track", "mlflow,wandb",
              "--data_dir", str(data), env=NO_KEY, timeout=900)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    assert "wandb: WARNING" not in res.stdout + res.stderr
    run = data / "tr" / "tr_s0"
    ids = json.load(open(run / "trackers.json"))

    runs = mlflow_runs(tmp_path, "tr")  # the experiment's name, mlruns/ beside data/
    (mrun, client), = runs.values()
    assert mrun.info.run_name == "tr_s0" and mrun.info.run_id == ids["mlflow"]
    assert mrun.info.status == "FINISHED"
    steps = column(run, "TotalEnvInteracts", int)
    for key in ("AverageTestEpRet", "LossQ1", "Alpha" if "Alpha" in rows(run)[0] else "Time"):
        history = client.get_metric_history(mrun.info.run_id, key)
        assert [m.step for m in history] == steps
        assert [m.value for m in history] == pytest.approx(column(run, key), rel=1e-6)
    config = json.load(open(run / "config.json"))
    assert mrun.data.params["lr"] == json.dumps(config["lr"])
    assert mrun.data.params["ac_kwargs.hidden_sizes"] == json.dumps(
        config["ac_kwargs"]["hidden_sizes"])
    saved = {a.path for a in client.list_artifacts(mrun.info.run_id, "tf2_save")}
    assert "tf2_save/saved_model.pb" in saved

    (wrun, history, files), = wandb_offline(run)
    assert (wrun.run_id, wrun.display_name, wrun.run_group) == (ids["wandb"], "tr_s0", "tr")
    assert [h["_step"] for h in history] == steps
    assert [h["AverageTestEpRet"] for h in history] == pytest.approx(
        column(run, "AverageTestEpRet"), rel=1e-6)
    given = {u.key: json.loads(u.value_json) for u in wrun.config.update}
    assert given["lr"] == json.dumps(config["lr"])
    assert "tf2_save/saved_model.pb" in files
    # W&B's own reader of an offline run (what docs/user/outputs.md shows) agrees too
    summary = wandb_summary(glob.glob(str(run / "wandb" / "offline-run-*"))[0])
    assert (summary["name"], summary["state"], summary["step"]) == ("tr_s0", "finished",
                                                                     steps[-1])
    for key in ("AverageTestEpRet", "LossQ1", "Epoch"):
        assert summary["summary"][key] == pytest.approx(column(run, key)[-1], rel=1e-6)

    # --resume: one more epoch into the same tracker runs.
    res = cli("sac", *SMALL, "--epochs", "3", "--exp_name", "tr", "--track", "mlflow,wandb",
              "--data_dir", str(data), "--resume", env=NO_KEY, timeout=900)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    (mrun, client), = mlflow_runs(tmp_path, "tr").values()
    history = client.get_metric_history(mrun.info.run_id, "AverageTestEpRet")
    assert [m.step for m in history] == column(run, "TotalEnvInteracts", int) and len(history) == 3
    assert mrun.info.status == "FINISHED"
    starts = wandb_offline(run)
    assert [r.run_id for r, _, _ in starts] == [ids["wandb"]] * 2
    assert [h["_step"] for h in starts[1][1]] == column(run, "TotalEnvInteracts", int)[2:]


@pytest.mark.slow
def test_a_grid_and_a_study_are_one_group_each(tmp_path):
    data = tmp_path / "data"
    res = cli("sac", *SMALL, "--epochs", "1", "--exp_name", "gr", "--seed", "0", "10",
              "--track", "mlflow", "--data_dir", str(data), env=NO_KEY, timeout=900)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    assert sorted(mlflow_runs(tmp_path, "gr")) == ["gr_s0", "gr_s10"]

    res = cli("tune", "sac", *SMALL[:-1], "--epochs", "1", "--seed", "0", "--trials", "2",
              "--lr", "loguniform:1e-4:1e-3", "--exp_name", "st", "--track", "mlflow",
              "--data_dir", str(data), env=NO_KEY, timeout=900)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    trials = mlflow_runs(tmp_path, "st")
    assert sorted(trials) == ["st_t000_s0", "st_t001_s0"]
    assert len({float(r.data.params["lr"]) for r, _ in trials.values()}) == 2


@pytest.mark.parametrize("track,env,words", [
    ("neptune", {}, ["'neptune' is no tracker", "'mlflow'", "Nothing was written"]),
    ("mlflow", {"MLFLOW_TRACKING_URI": "sqlite:////etc/hostname/under/a/file.db"},
     ["The mlflow tracker could not start", "progress.txt, checkpoints", "--resume"]),
])
def test_a_bad_or_failing_tracker_is_a_paragraph(tmp_path, track, env, words):
    res = cli("sac", *SMALL, "--epochs", "1", "--exp_name", "bad", "--track", track,
              "--data_dir", str(tmp_path), env={**NO_KEY, **env}, timeout=900)
    assert_clean_error(res, *words)
    progress = tmp_path / "bad" / "bad_s0" / "progress.txt"
    assert not progress.exists() or progress.read_text() == ""  # stopped before any epoch
