"""What a run shows besides progress.txt: TensorBoard scalars and the progress bar."""

import os
import subprocess
import sys

import pytest
from helpers import pendulum, rows, run_tiny

from spinup_tf2 import sac


def test_tensorboard_scalars_read_back(tmp_path):
    import tensorflow as tf

    out = str(tmp_path / "tb_run")
    run_tiny(out, epochs=2, logger_kwargs=dict(tensorboard=True))
    seen = {}
    for path in tf.io.gfile.glob(os.path.join(out, "tb", "events.out.tfevents.*")):
        for event in tf.compat.v1.train.summary_iterator(path):
            for value in event.summary.value:
                seen.setdefault(value.tag, {})[event.step] = float(
                    tf.make_ndarray(value.tensor))
    assert {"EpRet/Average", "EpRet/Std", "EpRet/Max", "TestEpRet/Min", "Q1Vals/Average",
            "LossPi", "LossQ1", "EpLen", "Epoch", "Time"} <= set(seen)
    assert sorted(seen["LossPi"]) == [400, 800]
    _, r = rows(out)
    assert seen["EpRet/Average"][800] == pytest.approx(float(r[1]["AverageEpRet"]), rel=1e-5)


def test_tensorboard_name():
    from spinup_tf2.utils.logx import tensorboard_name
    assert tensorboard_name("AverageTestEpRet") == "TestEpRet/Average"
    assert tensorboard_name("MinQ1Vals") == "Q1Vals/Min"
    assert tensorboard_name("Std") == "Std" and tensorboard_name("LossPi") == "LossPi"




def test_progress_bar_only_on_a_terminal(tmp_path, capfd):
    import pty

    code = ("import gymnasium as gym\nfrom spinup_tf2 import sac\n"
            "sac(lambda: gym.make('Pendulum-v1'), epochs=1, steps_per_epoch=400, "
            "start_steps=200, update_after=100, num_test_episodes=1, "
            "ac_kwargs=dict(hidden_sizes=(8,)), logger_kwargs=dict(output_dir=%r))\n")
    # Redirected output (pytest captures it: not a terminal): no bar.
    sac(pendulum, epochs=1, steps_per_epoch=400, start_steps=200,
        update_after=100, num_test_episodes=1, ac_kwargs=dict(hidden_sizes=(8,)),
        logger_kwargs=dict(output_dir=str(tmp_path / "a")))
    out, err = capfd.readouterr()
    assert "AverageEpRet" in out and "step/s" not in err and "Epoch 1/1" not in err
    master, slave = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-c", code % str(tmp_path / "b")], stdout=slave,
                            stderr=subprocess.PIPE, text=True)
    os.close(slave)
    out = b""
    while True:
        try:
            chunk = os.read(master, 4096)
        except OSError:
            break
        if not chunk:
            break
        out += chunk
    err = proc.stderr.read()
    proc.wait()
    assert proc.returncode == 0
    assert "Epoch 1/1" in err and "step/s" in err and "run ETA" in err
    assert b"AverageEpRet" in out



def test_the_run_eta_counts_the_end_of_epoch_work():
    """After one epoch, each epoch costs what the last one took, test episodes and saving
    included (the bar showed 8 s where 19.8 s were left)."""
    from spinup_tf2.training.progress_bar import run_eta

    # 1,000 steps an epoch at 100 steps/s, 3 epochs, at step 500: 5 s of steps in epoch 1
    # and 20 s of steps after it, as long as no epoch has ended.
    assert run_eta(500, 1000, 3, 100.0, None) == 25.0
    # Epoch 2, step 1,500: epoch 1 took 16 s (10 s of steps, 6 s of tests and saving):
    # 5 s of steps + 6 s of end-of-epoch work + one more epoch of 16 s.
    assert run_eta(1500, 1000, 3, 100.0, 16.0) == 27.0
