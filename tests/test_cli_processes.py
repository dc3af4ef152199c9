"""The command line's runs as processes, through real subprocesses and real signals:
Ctrl-C, kill, the NaN stop, parallel grids, the resume and tensorboard flags."""

import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
from helpers import CLI_TINY, HANG, assert_clean_error, cli, like_a_terminal

pytestmark = pytest.mark.processes  # every test here launches the command line

# ------------------------------------------------------------------------------- Ctrl-C


def start_long_run(tmp_path, name, epochs_logged, output=subprocess.PIPE):
    """Launch a 50-epoch Pendulum run in its own session (as a terminal would) and
    return ``(proc, progress_path)`` once it has logged ``epochs_logged`` epochs."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "spinup_tf2.run", "sac", "--env", "Pendulum-v1", "--exp_name",
         name, "--data_dir", str(tmp_path), "--epochs", "50", *CLI_TINY[2:], "--hid", "[16]"],
        stdout=output, stderr=output, text=True,
        env=dict(os.environ, SPINUP_TF2_WAIT_BEFORE_LAUNCH="0"), start_new_session=True,
        preexec_fn=like_a_terminal)
    progress = tmp_path / name / f"{name}_s0" / "progress.txt"
    deadline = time.time() + HANG
    while not (progress.exists() and len(progress.read_text().splitlines()) > epochs_logged):
        if time.time() > deadline or proc.poll() is not None:
            proc.kill()
            rows = len(progress.read_text().splitlines()) - 1 if progress.exists() else "no"
            pytest.fail(f"waited for {progress} to hold {epochs_logged} epoch(s): it has "
                        f"{rows} row(s) after {HANG} s"
                        + (f"; the run ended (exit {proc.returncode})" if proc.poll() is not None
                           else ""))
        time.sleep(0.2)
    return proc, progress


def test_ctrl_c_stops_quickly_and_keeps_data(tmp_path):
    proc, progress = start_long_run(tmp_path, "intr", 2)
    t0 = time.time()
    os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C in a terminal does: the whole group
    out, err = proc.communicate(timeout=HANG)
    assert time.time() - t0 < 60  # the launcher kills a run 5 s after Ctrl-C; load adds more
    assert proc.returncode != 0
    assert "Traceback" not in out + err
    lines = [ln for ln in (out + err).splitlines() if "Interrupted" in ln]
    assert len(lines) == 1 and str(tmp_path / "intr" / "intr_s0") in lines[0]
    rows = progress.read_text().splitlines()
    assert all(len(r.split("\t")) == 28 for r in rows)
    import tensorflow as tf

    m = tf.saved_model.load(str(tmp_path / "intr" / "intr_s0" / "tf2_save"))
    assert m.mu(np.zeros((1, 3), np.float32)).shape == (1, 1)


# The 0.01 s gap (the racy one) runs by default; the others with the slow tests.
@pytest.mark.parametrize("gap", [0.01, pytest.param(0.2, marks=pytest.mark.slow),
                                 pytest.param(0.5, marks=pytest.mark.slow)])
def test_double_ctrl_c_prints_one_line(tmp_path, gap):
    """Two Ctrl-Cs in a row: the run stops, one line says where its data is, and
    nothing else: no "Exception ignored ... KeyboardInterrupt" from the shutdown."""
    proc, progress = start_long_run(tmp_path, "dbl", 1)
    time.sleep(0.3)  # in the middle of the next epoch's updates
    os.killpg(proc.pid, signal.SIGINT)
    time.sleep(gap)
    try:
        os.killpg(proc.pid, signal.SIGINT)
    except ProcessLookupError:
        pass
    out, err = proc.communicate(timeout=HANG)
    assert proc.returncode == 130
    assert err.strip() == "", err
    assert len([ln for ln in out.splitlines() if "Interrupted" in ln]) == 1
    assert all(len(r.split("\t")) == 28 for r in progress.read_text().splitlines())


def test_resume_and_tensorboard_flags(tmp_path):
    common = ["sac", "--env", "Pendulum-v1", "--exp_name", "rs", "--data_dir", str(tmp_path),
              "--steps_per_epoch", "300", "--start_steps", "100", "--update_after", "100",
              "--num_test_episodes", "1", "--hid", "[8]", "--tensorboard"]
    res = cli(*common, "--epochs", "1")
    assert res.returncode == 0, res.stderr[-2000:]
    res = cli(*common, "--epochs", "2", "--resume")
    assert res.returncode == 0, res.stderr[-2000:]
    run = tmp_path / "rs" / "rs_s0"
    lines = (run / "progress.txt").read_text().splitlines()
    assert [ln.split("\t")[0] for ln in lines[1:]] == ["1", "2"]
    assert any(name.startswith("events.out.tfevents") for name in os.listdir(run / "tb"))
    assert json.load(open(run / "config.json"))["resume"] is True
    # (a resume with other arguments is refused: test_resume.py::test_resume_errors)


def test_cpu_without_mpi_installed_says_how_to_install(tmp_path):
    # A stand-in package that fails to import, as mpi4py does where it is not installed.
    (tmp_path / "mpi4py").mkdir()
    (tmp_path / "mpi4py" / "__init__.py").write_text("raise ImportError('No module named mpi4py')")
    res = cli("sac", "--env", "Pendulum-v1", "--cpu", "2", "--data_dir", str(tmp_path / "d"),
              env={"PYTHONPATH": str(tmp_path)})
    assert_clean_error(res, "pip install 'spinup_tf2[mpi]'", "mpi4py")
    assert not (tmp_path / "d").exists()


def test_parallel_grid_one_line_per_run(tmp_path):
    res = cli("sac", "--env", "Pendulum-v1", "--exp_name", "par", "--seed", "0", "1", "2",
              "--parallel", "2", "--data_dir", str(tmp_path), "--epochs", "1",
              "--steps_per_epoch", "300", "--start_steps", "100", "--update_after", "100",
              "--num_test_episodes", "1", "--hid", "[8]")
    assert res.returncode == 0, res.stderr[-2000:]
    lines = res.stdout.splitlines()
    for seed in (0, 1, 2):
        assert sum(ln.startswith(f"started  par_s{seed} ") for ln in lines) == 1
        assert sum(ln.startswith(f"finished par_s{seed} ") for ln in lines) == 1
        run = tmp_path / "par" / f"par_s{seed}"
        assert len((run / "progress.txt").read_text().splitlines()) == 2
        assert "AverageEpRet" in (run / "stdout.txt").read_text()  # each run's own output
    assert "|      AverageEpRet |" not in res.stdout  # no run's table in the grid's output
    started = [i for i, ln in enumerate(lines) if ln.startswith("started")]
    finished = [i for i, ln in enumerate(lines) if ln.startswith("finished")]
    assert started[1] < finished[0]  # two ran at once


def test_killing_the_launcher_ends_its_run(tmp_path):
    import psutil

    proc, progress = start_long_run(tmp_path, "orphan", 1, output=subprocess.DEVNULL)
    children = psutil.Process(proc.pid).children(recursive=True)
    assert children, "the run's process was not found"
    proc.kill()  # kill -9 the launcher only
    proc.wait()
    gone, alive = psutil.wait_procs(children, timeout=HANG)
    for p in alive:
        p.kill()
    assert not alive, "the training process outlived its launcher"
    assert all(len(r.split("\t")) == 28 for r in progress.read_text().splitlines())


def test_nan_stop_is_a_message_not_a_traceback(tmp_path):
    res = cli("sac", "--env", "Pendulum-v1", "--exp_name", "nan", "--lr", "1e30", "--epochs", "2",
              "--steps_per_epoch", "300", "--start_steps", "100", "--update_after", "100",
              "--num_test_episodes", "1", "--hid", "[8]", "--data_dir", str(tmp_path))
    assert_clean_error(res, "Error: ", "non-finite values in LossPi")
    assert res.returncode == 1  # the non-finite stop's own exit code (bad input is 2)
    run = tmp_path / "nan" / "nan_s0"
    assert json.loads((run / "config.json").read_text())["lr"] == 1e30
    lines = (run / "progress.txt").read_text().splitlines()  # nothing half written
    assert all(len(ln.split("\t")) == len(lines[0].split("\t")) for ln in lines)


@pytest.mark.slow  # two sweeps of two runs each
def test_parallel_resume_appends_each_runs_log(tmp_path):
    common = ["sac", "--env", "Pendulum-v1", "--exp_name", "pr", "--seed", "0", "1",
              "--parallel", "2", "--data_dir", str(tmp_path), "--steps_per_epoch", "300",
              "--start_steps", "100", "--update_after", "100", "--num_test_episodes", "1",
              "--hid", "[8]"]
    assert cli(*common, "--epochs", "1").returncode == 0
    res = cli(*common, "--epochs", "2", "--resume")
    assert res.returncode == 0, res.stderr[-2000:]
    for seed in (0, 1):
        log = (tmp_path / "pr" / f"pr_s{seed}" / "stdout.txt").read_text()
        assert log.count("Logging data to") == 2  # the first part's output is still there
        assert "Resuming the run" in log.split("Logging data to")[2]


@pytest.mark.slow  # 30 s; every default CLI test sends a payload too
def test_payload_of_any_size_reaches_the_experiment(tmp_path):
    """An env_fn closing over 320 KB (over the 128 KiB a command-line argument may
    hold) runs, under one process and under a sweep; no payload file is left."""
    from spinup_tf2 import sac
    from spinup_tf2.utils.run_utils import ExperimentGrid, call_experiment

    weights = np.random.default_rng(0).random(40_000)  # 320 KB, that do not compress
    total = weights.sum()

    def env_fn():
        import gymnasium as gym

        assert weights.sum() == total
        return gym.make("Pendulum-v1")

    os.environ["SPINUP_TF2_WAIT_BEFORE_LAUNCH"] = "0"
    tiny = dict(epochs=1, steps_per_epoch=200, start_steps=100, update_after=100,
                num_test_episodes=1, batch_size=32, ac_kwargs=dict(hidden_sizes=(8,)))
    call_experiment("big", sac, data_dir=str(tmp_path), env_fn=env_fn, **tiny)
    grid = ExperimentGrid("bigsweep")
    grid.add("env_fn", env_fn)
    grid.add("seed", [0, 1])
    for k, v in tiny.items():
        grid.add(k, v)
    grid.run(sac, data_dir=str(tmp_path), parallel=2)
    runs = sorted(p.parent.name for p in tmp_path.rglob("progress.txt"))
    assert runs == ["big_s0", "bigsweep_s0", "bigsweep_s1"], runs
    for p in tmp_path.rglob("progress.txt"):
        assert len(p.read_text().splitlines()) == 2
    from spinup_tf2.launch import processes

    assert os.listdir(processes._payload_dir) == []


def test_an_experiment_process_starts_tensorflow_without_keras_extras(tmp_path):
    """A launched experiment imports TensorFlow and Keras without Keras' integrations
    (scikit-learn, pandas, matplotlib, IPython: 1.5-2 s of each start on 2 cores), and the
    experiment's own code can still import them; this process, which imported spinup_tf2 as
    a library, has Keras whole."""
    from spinup_tf2.utils.run_utils import call_experiment

    def thunk(out, seed, logger_kwargs):
        import sys

        from spinup_tf2.tf_setup import import_tensorflow

        import_tensorflow()
        loaded = sorted(m for m in ("sklearn", "pandas", "matplotlib", "IPython")
                        if m in sys.modules)
        import pandas

        with open(out, "w") as f:
            f.write(f"{loaded} {pandas.DataFrame({'a': [1]}).shape}")

    os.environ["SPINUP_TF2_WAIT_BEFORE_LAUNCH"] = "0"
    out = tmp_path / "modules.txt"
    call_experiment("lean", thunk, data_dir=str(tmp_path), out=str(out))
    assert out.read_text() == "[] (1, 1)"
    import sys

    import spinup_tf2.algos.sac.core  # noqa: F401  (TensorFlow, as a library imports it)

    assert "sklearn" in sys.modules and "pandas" in sys.modules


def test_quiet_starts_short_and_writes_the_whole_config(tmp_path):
    """--quiet: a few lines before the first epoch instead of the ~150 of the grid, the
    launcher's and the logger's configuration dumps; config.json is whole."""
    quiet = cli("sac", "--env", "Pendulum-v1", "--exp_name", "quiet", *CLI_TINY, "--quiet",
                "--data_dir", str(tmp_path))
    assert quiet.returncode == 0, quiet.stdout + quiet.stderr
    before = quiet.stdout.split("---------")[0]  # what comes before the first epoch's table
    assert before.count("\n") < 20, before
    config = tmp_path / "quiet" / "quiet_s0" / "config.json"
    assert "Configuration (" in before and str(config) in before
    assert "Saving config" not in quiet.stdout and "with kwargs" not in quiet.stdout
    saved = json.loads(config.read_text())
    assert saved["logger_kwargs"]["quiet"] is True and saved["polyak"] == 0.995
    assert len(saved) > 30
