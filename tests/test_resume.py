"""Exact resume from training checkpoints: after finished epochs, after kill -9, and
the errors of a resume that cannot be."""

import json
import os
import signal
import subprocess
import sys
import time

import gymnasium as gym
import numpy as np
import pytest
from helpers import TINY, rows

from spinup_tf2 import sac
from spinup_tf2.errors import SpinupError


# normalize_obs=True holds more state; the plain case runs with the slow tests.
@pytest.mark.parametrize("normalize_obs", [pytest.param(False, marks=pytest.mark.slow), True])
def test_resume_after_finishing_two_epochs_equals_four_straight(tmp_path, normalize_obs):
    straight, resumed = str(tmp_path / "straight"), str(tmp_path / "resumed")
    kw = dict(TINY, normalize_obs=normalize_obs)
    sac(lambda: gym.make("Pendulum-v1"), epochs=4, **kw, logger_kwargs=dict(output_dir=straight))
    sac(lambda: gym.make("Pendulum-v1"), epochs=2, **kw, logger_kwargs=dict(output_dir=resumed))
    sac(lambda: gym.make("Pendulum-v1"), epochs=4, resume=True, **kw,
        logger_kwargs=dict(output_dir=resumed))
    h1, r1 = rows(straight)
    h2, r2 = rows(resumed)
    assert h1 == h2 and len(r1) == len(r2) == 4
    assert r1 == r2


class LegacyRandomPendulum(gym.Wrapper):
    """Pendulum whose ``np_random`` is a legacy ``RandomState``, as DeepMind Control's
    is through Shimmy: its MT19937 state holds an array, unlike a Generator's."""

    def __init__(self):
        super().__init__(gym.make("Pendulum-v1"))
        self.unwrapped._np_random = np.random.RandomState(0)

    def reset(self, *, seed=None, options=None):
        if seed is not None:
            self.unwrapped._np_random = np.random.RandomState(seed)
        return self.env.reset(options=options)  # Pendulum draws from the RandomState


def test_an_env_with_a_legacy_random_state_resumes_exactly(tmp_path):
    """The checkpoint keeps and checks a RandomState's state too (episodes of 150 steps:
    the resumed run replays one in progress, then resets from the restored state)."""
    straight, resumed = str(tmp_path / "straight"), str(tmp_path / "resumed")
    kw = dict(TINY, max_ep_len=150)
    sac(LegacyRandomPendulum, epochs=3, **kw, logger_kwargs=dict(output_dir=straight))
    sac(LegacyRandomPendulum, epochs=1, **kw, logger_kwargs=dict(output_dir=resumed))
    sac(LegacyRandomPendulum, epochs=3, resume=True, **kw, logger_kwargs=dict(output_dir=resumed))
    assert rows(straight) == rows(resumed) and len(rows(straight)[1]) == 3


KILL_SCRIPT = """
import sys, gymnasium as gym
from spinup_tf2 import sac
sac(lambda: gym.make("Pendulum-v1"), epochs=4, alpha="auto", steps_per_epoch=400,
    start_steps=200, update_after=100, update_every=50, batch_size=32, num_test_episodes=2,
    ac_kwargs=dict(hidden_sizes=(32, 32)), logger_kwargs=dict(output_dir=sys.argv[1]),
    resume=len(sys.argv) > 2)
"""


def test_kill_minus_9_then_resume_equals_straight_run(tmp_path):
    straight, killed = str(tmp_path / "straight"), str(tmp_path / "killed")
    script = tmp_path / "run.py"
    script.write_text(KILL_SCRIPT)
    subprocess.run([sys.executable, str(script), straight], check=True, capture_output=True)
    proc = subprocess.Popen([sys.executable, str(script), killed], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    progress = os.path.join(killed, "progress.txt")
    deadline = time.time() + 120
    while time.time() < deadline and proc.poll() is None:
        if os.path.exists(progress) and len(open(progress).read().splitlines()) >= 3:
            break
        time.sleep(0.01)
    assert proc.poll() is None, "the run ended before it could be killed"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    # Whatever the moment of the kill: progress.txt parses, a checkpoint loads.
    _, partial = rows(killed)
    assert 2 <= len(partial) <= 3
    import tensorflow as tf
    tf.saved_model.load(os.path.join(killed, "tf2_save"))
    subprocess.run([sys.executable, str(script), killed, "resume"], check=True,
                   capture_output=True)
    h1, r1 = rows(straight)
    h2, r2 = rows(killed)
    assert h1 == h2 and h1[-2:] == ["Alpha", "LossAlpha"]
    assert r1 == r2


def test_resume_errors(tmp_path):
    with pytest.raises(SpinupError, match="does not exist"):
        sac(lambda: gym.make("Pendulum-v1"), resume=True,
            logger_kwargs=dict(output_dir=str(tmp_path / "nothing")))
    (tmp_path / "empty").mkdir()
    with pytest.raises(SpinupError, match="no training checkpoint"):
        sac(lambda: gym.make("Pendulum-v1"), resume=True,
            logger_kwargs=dict(output_dir=str(tmp_path / "empty")))
    out = str(tmp_path / "run")
    sac(lambda: gym.make("Pendulum-v1"), epochs=1, **TINY, logger_kwargs=dict(output_dir=out))
    with pytest.raises(SpinupError) as err:
        sac(lambda: gym.make("Pendulum-v1"), epochs=2, resume=True, lr=3e-4, gamma=0.9,
            **TINY, logger_kwargs=dict(output_dir=out))
    assert "gamma: 0.99 there, 0.9 now" in str(err.value)
    assert "lr: 0.001 there, 0.0003 now" in str(err.value)
    _, r = rows(out)
    assert len(r) == 1  # the refused resume wrote nothing


def test_resume_without_a_checkpoint_says_the_command_that_works(tmp_path):
    """No train_state/ beside a progress.txt with rows: the refusal names --overwrite (starting
    again without --resume would be refused, as the directory holds a run), and it works."""
    import shutil

    out = str(tmp_path / "run")
    sac(lambda: gym.make("Pendulum-v1"), epochs=1, **TINY, logger_kwargs=dict(output_dir=out))
    shutil.rmtree(os.path.join(out, "train_state"))
    with pytest.raises(SpinupError, match="with --overwrite .* instead of --resume; that "
                                          "replaces its progress.txt of 1 epochs"):
        sac(lambda: gym.make("Pendulum-v1"), epochs=2, resume=True, **TINY,
            logger_kwargs=dict(output_dir=out))
    sac(lambda: gym.make("Pendulum-v1"), epochs=2, overwrite=True, **TINY,
        logger_kwargs=dict(output_dir=out))
    assert len(rows(out)[1]) == 2



# ----------------------------------------------------------- restarts lose nothing

RUN = ["sac", "--env", "Pendulum-v1", "--exp_name", "again", "--steps_per_epoch", "300",
       "--start_steps", "100", "--update_after", "100", "--num_test_episodes", "1", "--hid", "[8]"]


def test_same_command_again_is_refused_then_overwrite_replaces(tmp_path):
    """Running a finished run's command again without --resume must not destroy its record."""
    from helpers import assert_clean_error, cli

    run = tmp_path / "again" / "again_s0"
    res = cli(*RUN, "--epochs", "2", "--data_dir", str(tmp_path))
    assert res.returncode == 0, res.stderr[-2000:]
    before = (run / "progress.txt").read_text()
    res = cli(*RUN, "--epochs", "1", "--data_dir", str(tmp_path))
    assert_clean_error(res, "already holds a run (progress.txt with 2 epochs, a training "
                            "checkpoint)", "--resume", "--overwrite")
    assert (run / "progress.txt").read_text() == before  # untouched
    res = cli(*RUN, "--epochs", "1", "--overwrite", "--data_dir", str(tmp_path))
    assert res.returncode == 0, res.stderr[-2000:]
    assert f"removed the earlier run in {run}" in res.stdout
    _, r = rows(str(run))
    assert len(r) == 1 and json.load(open(run / "config.json"))["epochs"] == 1


def test_checkpoint_of_another_progress_txt_is_never_resumed(tmp_path):
    """The issue's case: a restart that died in its first epoch left a fresh progress.txt
    beside the old run's checkpoint; resuming from it would keep only later rows."""
    out = str(tmp_path / "run")
    kw = dict(TINY, normalize_obs=False)
    sac(lambda: gym.make("Pendulum-v1"), epochs=2, **kw, logger_kwargs=dict(output_dir=out))
    other = str(tmp_path / "other")
    sac(lambda: gym.make("Pendulum-v1"), seed=1, epochs=2, **kw,
        logger_kwargs=dict(output_dir=other))
    # progress.txt of another run beside this run's checkpoint:
    with open(os.path.join(other, "progress.txt")) as f:
        foreign = f.read()
    with open(os.path.join(out, "progress.txt"), "w") as f:
        f.write(foreign)
    with pytest.raises(SpinupError, match="does not belong to the progress.txt beside it"):
        sac(lambda: gym.make("Pendulum-v1"), epochs=3, resume=True, **kw,
            logger_kwargs=dict(output_dir=out))
    # A progress.txt with fewer rows than the checkpoint's epoch (a restart that stopped early):
    with open(os.path.join(out, "progress.txt"), "w") as f:
        f.write(foreign.splitlines(keepends=True)[0])
    with pytest.raises(SpinupError, match="does not belong"):
        sac(lambda: gym.make("Pendulum-v1"), epochs=3, resume=True, **kw,
            logger_kwargs=dict(output_dir=out))
    assert open(os.path.join(out, "progress.txt")).read() == foreign.splitlines(True)[0]


def test_resumed_run_says_where_it_continues(tmp_path, capsys):
    out = str(tmp_path / "run")
    sac(lambda: gym.make("Pendulum-v1"), epochs=1, **TINY, logger_kwargs=dict(output_dir=out))
    capsys.readouterr()
    sac(lambda: gym.make("Pendulum-v1"), epochs=2, resume=True, **TINY,
        logger_kwargs=dict(output_dir=out))
    lines = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("Resuming")]
    assert lines == [f"Resuming the run in {out} after epoch 1 (env step 400)."]


STATE_EDITS = {  # state.json that parses but holds what the loop cannot use
    "state.json a list": lambda s: [],
    "state.json epoch a string": lambda s: dict(s, epoch="1"),
    "state.json t negative": lambda s: dict(s, t=-5),
    "state.json no rng": lambda s: {k: v for k, v in s.items() if k != "rng"},
    "state.json rng garbage": lambda s: dict(s, rng={"bit_generator": "PCG64", "x": 1}),
    "state.json env without actions": lambda s: dict(s, env={"first_seed": 0}),
}


@pytest.mark.parametrize("damage", ["truncate arrays.npz", "flip a byte of arrays.npz",
                                    "truncate state.json", *STATE_EDITS])
def test_damaged_checkpoint_is_refused_before_anything_is_written(tmp_path, damage):
    out = tmp_path / "run"
    sac(lambda: gym.make("Pendulum-v1"), epochs=1, **TINY,
        logger_kwargs=dict(output_dir=str(out)))
    if damage in STATE_EDITS:
        path = out / "train_state" / "state.json"
        path.write_text(json.dumps(STATE_EDITS[damage](json.loads(path.read_text()))))
    else:
        path = out / "train_state" / damage.split()[-1]
        data = path.read_bytes()
        if damage.startswith("truncate"):
            path.write_bytes(data[:len(data) // 2])
        else:  # inside the stored arrays, past the zip's first local header
            mid = len(data) // 2
            path.write_bytes(data[:mid] + bytes([data[mid] ^ 0xFF]) + data[mid + 1:])
    before = {f: (out / f).read_bytes() for f in ("progress.txt", "config.json")}
    with pytest.raises(SpinupError) as err:
        sac(lambda: gym.make("Pendulum-v1"), epochs=2, resume=True, **TINY,
            logger_kwargs=dict(output_dir=str(out)))
    assert "is damaged and cannot be read" in str(err.value)
    assert "Nothing was written" in str(err.value) and "--overwrite" in str(err.value)
    assert {f: (out / f).read_bytes() for f in before} == before
