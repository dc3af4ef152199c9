"""Actors on Ray feeding one learner (issue 79): a run with actors on a real local Ray
cluster repeats exactly from its seed, logs every actor's episodes, keeps its update ratio,
survives an actor killed with SIGKILL (Ray restarts it; the lost steps are said), and
resumes after the learner is killed; what actors cannot combine with, and a cluster that
cannot be reached, are refused before anything is written."""

import os
import signal
import subprocess
import sys
import time

import pytest
from helpers import HANG, TINY, cli, pendulum, rows

from spinup_tf2.errors import SpinupError

ACTORS = dict(TINY, actors=2, actor_steps=100, epochs=2)




def test_what_actors_cannot_do_is_refused_before_anything_is_written(tmp_path):
    from spinup_tf2 import sac

    for kwargs, words in ((dict(num_envs=2), "num_envs=2"),
                          (dict(actor_critic="recurrent"), "windows"),
                          (dict(steps_per_epoch=500), "does not divide; give a multiple of 200")):
        out = tmp_path / "run"
        with pytest.raises(SpinupError) as err:
            sac(pendulum, **{**ACTORS, **kwargs}, logger_kwargs=dict(output_dir=str(out)))
        assert "actors=2" in str(err.value) and words in str(err.value), str(err.value)
        assert not out.exists()


@pytest.mark.processes
def test_a_cluster_that_cannot_be_reached_is_refused_before_anything_is_written(tmp_path):
    res = cli("sac", "--env", "Pendulum-v1", "--actors", "2", "--epochs", "1",
              "--steps_per_epoch", "400", "--exp_name", "far", "--data_dir", str(tmp_path),
              env={"RAY_ADDRESS": "127.0.0.1:1"})
    assert res.returncode != 0
    text = res.stdout + res.stderr
    assert "Traceback" not in text and "actors=2" in text and "127.0.0.1:1" in text, text
    assert not (tmp_path / "far").exists()


@pytest.mark.slow
@pytest.mark.ray
@pytest.mark.processes
def test_a_run_with_actors_repeats_from_its_seed_and_logs_their_episodes(tmp_path):
    import gymnasium as gym
    from helpers import run_tiny

    def make():
        return gym.make("Pendulum-v1")

    a = rows(run_tiny(tmp_path / "a", make, **ACTORS))
    b = rows(run_tiny(tmp_path / "b", make, **ACTORS))
    assert a == b  # rounds are taken in order, not as they arrive
    header, table = a
    assert [r["TotalEnvInteracts"] for r in table] == ["400", "800"]
    # Pendulum's episodes are 200 steps: each actor ends one every second round.
    assert all(float(r["EpLen"]) == 200 for r in table)
    single = rows(run_tiny(tmp_path / "single", make, **dict(ACTORS, actors=0)))
    # An env_fn the actors cannot import (this test module is not on their path) is said.
    with pytest.raises(SpinupError, match="could not be made on the Ray cluster") as err:
        run_tiny(tmp_path / "unmade", pendulum, **ACTORS)
    assert "helpers" in str(err.value) and not (tmp_path / "unmade").exists()
    assert single[1][-1]["LossQ1"] != table[-1]["LossQ1"]


SCRIPT = """
import sys
import gymnasium as gym
from spinup_tf2 import sac
sac(lambda: gym.make("Pendulum-v1"), actors=2, actor_steps=100, epochs=int(sys.argv[2]),
    steps_per_epoch=400, start_steps=200, update_after=100, batch_size=32,
    num_test_episodes=1, ac_kwargs=dict(hidden_sizes=(32, 32)),
    logger_kwargs=dict(output_dir=sys.argv[1]), resume=len(sys.argv) > 3)
"""


def collectors(run: str) -> list:
    """The PIDs of the Ray actors' processes of the run in ``run`` (Ray names them by class;
    they inherit the environment of the run, which :func:`started` marks with its
    directory, so another test's actors are never taken)."""
    import psutil

    found = []
    for p in psutil.process_iter(["cmdline"]):
        cmd = " ".join(p.info["cmdline"] or [])
        try:
            if cmd.startswith("ray::Collector") and p.environ().get(MARK) == run:
                found.append(p.pid)
        except psutil.Error:  # gone, or not ours to read
            pass
    return found


MARK = "SPINUP_TF2_TEST_ACTORS_RUN"  # which run a process belongs to (see collectors)


def started(tmp_path, epochs: int, **popen) -> tuple:
    """``(process, run directory)``: SCRIPT's run of ``epochs`` epochs, started."""
    script = tmp_path / "run.py"
    script.write_text(SCRIPT)
    out = str(tmp_path / "run")
    return subprocess.Popen([sys.executable, str(script), out, str(epochs)],
                            env=dict(os.environ, **{MARK: out}), **popen), out


def wait_for_rows(path: str, n: int, proc) -> None:
    deadline = time.time() + HANG  # a hang detector, not a speed limit
    progress = os.path.join(path, "progress.txt")
    while proc.poll() is None and time.time() < deadline:
        if os.path.exists(progress) and len(open(progress).read().splitlines()) > n:
            return
        time.sleep(0.05)
    raise AssertionError(f"no row {n} (exit {proc.poll()})")


@pytest.mark.slow
@pytest.mark.ray
@pytest.mark.processes
def test_an_actor_killed_with_sigkill_is_restarted_and_the_run_goes_on(tmp_path):
    proc, out = started(tmp_path, 4, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                        text=True)
    wait_for_rows(out, 1, proc)
    (victim, *_) = collectors(out)
    os.kill(victim, signal.SIGKILL)
    text, _ = proc.communicate(timeout=HANG)
    assert proc.returncode == 0, text[-3000:]
    assert "Ray restarted it, and its 100 unsent steps are lost" in text, text[-3000:]
    header, table = rows(out)
    assert [r["TotalEnvInteracts"] for r in table] == ["400", "800", "1200", "1600"]


@pytest.mark.slow
@pytest.mark.ray
@pytest.mark.processes
def test_the_learner_killed_resumes_with_fresh_actors_and_no_row_repeated(tmp_path):
    proc, out = started(tmp_path, 3, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_for_rows(out, 1, proc)
    while proc.poll() is None and not os.path.isdir(os.path.join(out, "train_state")):
        time.sleep(0.05)  # epoch 1's checkpoint, written after its row
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    done = len(rows(out)[1])
    res = subprocess.run([sys.executable, str(tmp_path / "run.py"), out, "3", "resume"],
                         capture_output=True, text=True, timeout=HANG)
    assert res.returncode == 0, res.stderr[-3000:]
    assert "Resuming the run" in res.stdout
    header, table = rows(out)
    assert [r["Epoch"] for r in table] == ["1", "2", "3"] and done >= 1
    assert [r["TotalEnvInteracts"] for r in table] == ["400", "800", "1200"]
