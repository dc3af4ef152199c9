"""Every value checked before the work starts (issue 77): what used to fail late (at the
first update, the first replayed step, the first HER minibatch, after tf2_save/ was written)
or not at all is refused first, in one paragraph, with nothing written. Real environments,
real TensorFlow, real files."""

import json
import os
import resource
import signal
import subprocess
import sys

import gymnasium as gym
import numpy as np
import pytest
from helpers import HANG, TINY, assert_clean_error, cli, pendulum, run_tiny

from spinup_tf2 import sac
from spinup_tf2.envs import PointReach
from spinup_tf2.errors import SpinupError


def nothing_written(out):
    return not out.exists() or not os.listdir(out)


@pytest.mark.parametrize("kwargs,words", [
    (dict(n_step=300, update_after=100), ["n_step=300 with update_after=100",
                                          "Give update_after >= 299"]),
    (dict(n_step=2000, max_ep_len=1000), ["n_step=2000 with max_ep_len=1000"]),
    (dict(updates_per_step=10 ** 9), ["updates_per_step=1000000000", "of memory free here"]),
])
def test_update_settings_that_fail_only_once_training_runs(tmp_path, kwargs, words):
    out = tmp_path / "run"
    with pytest.raises(SpinupError) as err:
        sac(pendulum, **{**TINY, **kwargs}, epochs=1, logger_kwargs=dict(output_dir=str(out)))
    for w in words:
        assert w in str(err.value), str(err.value)
    assert nothing_written(out)


class ScalarReward(PointReach):
    """A goal task whose compute_reward answers one number for a batch of goals."""

    def compute_reward(self, achieved_goal, desired_goal, info):
        return float(np.sum(super().compute_reward(achieved_goal, desired_goal, info)))


def test_a_compute_reward_of_the_wrong_shape_is_refused_before_the_first_minibatch(tmp_path):
    out = tmp_path / "run"
    env_fn = lambda: gym.wrappers.TimeLimit(ScalarReward(), 20)  # noqa: E731
    with pytest.raises(SpinupError, match=r"compute_reward returned .* it must return 2 "
                                          r"finite numbers"):
        sac(env_fn, her=True, **TINY, epochs=1, logger_kwargs=dict(output_dir=str(out)))
    assert nothing_written(out)


def test_a_test_environment_with_other_spaces_is_refused_before_tf2_save(tmp_path):
    made = []

    def env_fn():  # the second call (the test environment) makes another task
        made.append(1)
        return gym.make("Pendulum-v1" if len(made) == 1 else "MountainCarContinuous-v0")

    out = tmp_path / "run"
    with pytest.raises(SpinupError, match="different observation spaces"):
        sac(env_fn, **TINY, epochs=1, logger_kwargs=dict(output_dir=str(out)))
    assert nothing_written(out)


def test_a_recorded_argument_that_fails_at_the_first_step_is_one_paragraph(tmp_path):
    """config.json's env_spec with ``g`` (Pendulum's gravity) as a string: the environment
    is made, then fails at its first step; the replay says so before any episode."""
    run = tmp_path / "run"
    run_tiny(run, lambda: gym.make("Pendulum-v1", g=9.81), num_test_episodes=1)
    config = json.loads((run / "config.json").read_text())
    config["env_spec"]["kwargs"]["g"] = "abc"
    (run / "config.json").write_text(json.dumps(config))
    res = cli("test_policy", str(run), "-n", "1", "--norender")
    assert_clean_error(res, "fails at its first step", "'g': 'abc'", "as recorded there")
    assert "EpRet" not in res.stdout


@pytest.mark.parametrize("limit", [20_000, 50_000, 150_000])
def test_tflite_export_under_a_file_size_limit_is_clean(tmp_path, limit):
    """The converter writes temporary files of its own, which RLIMIT_FSIZE (as a full
    disk) cuts short without a word: the export either succeeds, its file loading, or
    says so in one paragraph and leaves no file."""
    run = run_tiny(tmp_path / "run", num_test_episodes=1)

    def limited():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    out = tmp_path / "policy.tflite"
    res = subprocess.run([sys.executable, "-m", "spinup_tf2.run", "export", run, "--format",
                          "tflite", "--out", str(out)], capture_output=True, text=True,
                         timeout=HANG, preexec_fn=limited,
                         env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"))
    if res.returncode == 0:
        assert out.exists() and "max |difference|" in res.stdout
    else:
        assert_clean_error(res, str(out))
        assert sorted(os.listdir(tmp_path)) == ["run"]


def test_a_nan_batch_renormalization_mean_in_a_checkpoint_is_named_on_resume(tmp_path):
    """CrossQ's non-trainable statistics are checked on resume like its weights: a NaN
    moving mean names arrays.npz and the variable; the run is not resumed or saved."""
    from spinup_tf2 import crossq

    run = tmp_path / "run"
    kw = dict(TINY, ac_kwargs=dict(hidden_sizes=(16, 16), critic_hidden_sizes=(32, 32)))
    crossq(pendulum, **kw, epochs=1, logger_kwargs=dict(output_dir=str(run)))
    npz = run / "train_state" / "arrays.npz"
    with np.load(npz) as data:
        arrays = dict(data)
    name = next(k for k in arrays if "moving_mean" in k)
    arrays[name] = np.full_like(arrays[name], np.nan)
    np.savez(npz, **arrays)
    before = (run / "progress.txt").read_text()
    with pytest.raises(SpinupError) as err:
        crossq(pendulum, **kw, epochs=2, resume=True, logger_kwargs=dict(output_dir=str(run)))
    assert f"arrays.npz's {name} holds" in str(err.value) and "non-finite" in str(err.value)
    assert (run / "progress.txt").read_text() == before


@pytest.mark.parametrize("args,env,words", [
    (["sac", "--env", "Pendulum-v1", "--epochs", "1"], {"SPINUP_TF2_WAIT_BEFORE_LAUNCH": "abc"},
     ["SPINUP_TF2_WAIT_BEFORE_LAUNCH='abc' is not a number of seconds"]),
    (["sac", "--env", "Pendulum-v1", "--epochs", "1", "--steps_per_epoch", "200", "--act",
      "np.f2py.os.system"], {}, ["np.f2py.os is not one of tf's, keras' or np's own"]),
    (["sac", "--env", "Pendulum-v1", "--epochs", "1", "--act", "np.tanh"], {},
     ["'np.tanh' of --act is not an activation function"]),
    (["sac", "--env", "Pendulum-v1", "--epochs", "1", "--exp_name", "a\nb"], {},
     ["is not a plain name", "control characters"]),
])
def test_launch_refusals(tmp_path, args, env, words):
    res = cli(*args, "--data_dir", str(tmp_path / "d"), env=env, timeout=HANG)
    assert_clean_error(res, *words)
    assert "EagerTensor" not in res.stdout + res.stderr
    assert nothing_written(tmp_path / "d") or not any(
        f for _, _, f in os.walk(tmp_path / "d"))


def test_replay_refusals(tmp_path):
    run = run_tiny(tmp_path / "exp" / "run", num_test_episodes=1)
    res = cli("plot", str(tmp_path / "exp"), "--table", "nan")
    assert_clean_error(res, "--table nan: nan is not an x value")
    for cmd in (["export", run, "--format", "onnx", "--out", str(tmp_path / "p.onnx")],
                ["test_policy", run, "-n", "1", "--norender"]):
        res = cli(*cmd, "--itr", "-3")
        assert_clean_error(res, "--itr -3: give the N of a tf2_save<N> folder")
    assert not (tmp_path / "p.onnx").exists()
