"""Whole sac() runs on Pendulum-v1: files written, SavedModel, determinism, NaN stop."""

import json
import os
import subprocess
import sys

import gymnasium as gym
import helpers
import joblib
import numpy as np
import pytest
from helpers import read_progress, rows, run_tiny

from spinup_tf2 import sac

TF1_COLUMNS = (
    "Epoch AverageEpRet StdEpRet MaxEpRet MinEpRet AverageTestEpRet StdTestEpRet MaxTestEpRet "
    "MinTestEpRet EpLen TestEpLen TotalEnvInteracts AverageQ1Vals StdQ1Vals MaxQ1Vals MinQ1Vals "
    "AverageQ2Vals StdQ2Vals MaxQ2Vals MinQ2Vals AverageLogPi StdLogPi MaxLogPi MinLogPi LossPi "
    "LossQ1 LossQ2 Time").split()

TINY = dict(helpers.TINY, epochs=3)


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    out = str(tmp_path_factory.mktemp("runs") / "tiny_s0")
    run_tiny(out, seed=0, epochs=3, logger_kwargs=dict(exp_name="tiny"))
    return out


def test_run_writes_spinning_up_files(tiny_run):
    assert sorted(os.listdir(tiny_run)) == ["config.json", "progress.txt", "tf2_save",
                                            "train_state", "vars.pkl"]
    cfg = json.load(open(os.path.join(tiny_run, "config.json")))
    for key in ("ac_kwargs", "actor_critic", "alpha", "batch_size", "env_fn", "epochs",
                "exp_name", "gamma", "logger", "logger_kwargs", "lr", "max_ep_len",
                "num_test_episodes", "polyak", "replay_size", "save_freq", "seed", "start_steps",
                "steps_per_epoch", "update_after", "update_every"):
        assert key in cfg, key
    assert cfg["exp_name"] == "tiny" and cfg["actor_critic"] == "MLPActorCritic"
    assert cfg["ac_kwargs"] == {"hidden_sizes": [32, 32]} and cfg["steps_per_epoch"] == 400
    assert joblib.load(os.path.join(tiny_run, "vars.pkl"))["env"].spec.id == "Pendulum-v1"


def test_progress_has_tf1_columns_and_counts(tiny_run):
    header, rows = read_progress(tiny_run)
    assert header == TF1_COLUMNS
    assert [r["Epoch"] for r in rows] == ["1", "2", "3"]
    assert [r["TotalEnvInteracts"] for r in rows] == ["400", "800", "1200"]
    for r in rows:
        assert float(r["EpLen"]) == 200.0 and float(r["TestEpLen"]) == 200.0
        assert float(r["MinQ1Vals"]) <= float(r["AverageQ1Vals"]) <= float(r["MaxQ1Vals"])
        assert float(r["LossQ1"]) > 0 and np.isfinite(float(r["LossPi"]))
    assert float(rows[0]["Time"]) < float(rows[-1]["Time"])


def test_saved_model_runs_standalone(tiny_run):
    code = (
        "import json, sys, numpy as np, tensorflow as tf\n"
        f"m = tf.saved_model.load({os.path.join(tiny_run, 'tf2_save')!r})\n"
        "obs = np.random.default_rng(0).normal(size=(50, 3)).astype(np.float32)\n"
        "mu = m.signatures['mu'](x=obs)['action'].numpy()\n"
        "pi = m.signatures['pi'](x=obs)['action'].numpy()\n"
        "q = m.signatures['q2'](x=obs, a=mu)['q'].numpy()\n"
        "served = m.signatures['serving_default'](x=obs)['action'].numpy()\n"
        "assert (served == mu).all()\n"
        "assert 'spinup_tf2' not in sys.modules\n"
        "print(json.dumps([sorted(m.signatures), mu.shape, pi.shape, q.shape,\n"
        "                  float(np.abs(mu).max()), float(np.abs(pi).max()),\n"
        "                  bool(np.allclose(m.mu(obs).numpy(), mu)),\n"
        "                  float(np.abs(pi - mu).max())]))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    sigs, mu_shape, pi_shape, q_shape, mu_max, pi_max, same, spread = json.loads(
        out.stdout.strip().splitlines()[-1])
    assert sigs == ["mu", "pi", "q1", "q2", "serving_default"]
    assert mu_shape == [50, 1] and pi_shape == [50, 1] and q_shape == [50]
    assert mu_max <= 2.0 and pi_max <= 2.0  # Pendulum's action limit
    assert same and spread > 0  # mu is deterministic, pi samples


def test_same_seed_same_numbers_other_seed_other_numbers(tiny_run, tmp_path):
    again, other = str(tmp_path / "again"), str(tmp_path / "other")
    # A numpy integer is the same seed (Keras refused one after config.json was written).
    run_tiny(again, seed=np.int64(0), epochs=3)
    run_tiny(other, seed=1, epochs=3)
    first, second, third = rows(tiny_run), rows(again), rows(other)
    assert len(first[1]) == 3 and first == second  # every row and column but Time
    # Another seed gives other numbers in every epoch that learned (epoch 1 has updates).
    assert all(a["AverageQ1Vals"] != c["AverageQ1Vals"] and a["LossPi"] != c["LossPi"]
               for a, c in zip(first[1], third[1]))


def test_saved_model_loads_with_keras_tfsmlayer_defaults(tiny_run):
    """Keras 3's TFSMLayer calls serving_default: the deterministic action, named."""
    import keras

    layer = keras.layers.TFSMLayer(os.path.join(tiny_run, "tf2_save"))
    obs = np.random.default_rng(1).normal(size=(5, 3)).astype(np.float32)
    out = layer(obs)
    assert list(out) == ["action"] and tuple(out["action"].shape) == (5, 1)
    import tensorflow as tf
    model = tf.saved_model.load(os.path.join(tiny_run, "tf2_save"))  # alive while called
    mu = model.mu(obs).numpy()
    np.testing.assert_array_equal(np.asarray(out["action"]), mu)


class NaNRewardAfter(gym.Wrapper):
    """Real Pendulum whose rewards turn NaN after ``n`` steps, as a diverging run would."""

    def __init__(self, env, n):
        super().__init__(env)
        self.n, self.t = n, 0

    def step(self, action):
        o, r, term, trunc, info = self.env.step(action)
        self.t += 1
        return o, (np.nan if self.t > self.n else r), term, trunc, info


def test_nan_stops_with_clear_message_and_keeps_last_checkpoint(tmp_path):
    out = str(tmp_path / "nan")
    made = []

    def env_fn():
        made.append(1)
        env = gym.make("Pendulum-v1")
        return NaNRewardAfter(env, 450) if len(made) == 1 else env

    with pytest.raises(FloatingPointError) as err:
        sac(env_fn, seed=0, **{**TINY, "epochs": 5}, logger_kwargs=dict(output_dir=out))
    msg = str(err.value)
    assert "non-finite" in msg and "epoch 1" in msg and "intact" in msg
    _, rows = read_progress(out)
    assert [r["Epoch"] for r in rows] == ["1"]
    import tensorflow as tf
    m = tf.saved_model.load(os.path.join(out, "tf2_save"))
    act = m.mu(np.zeros((1, 3), np.float32)).numpy()
    assert np.all(np.isfinite(act))


def test_no_finished_episode_in_an_epoch_logs_nan(tmp_path):
    out = str(tmp_path / "long")
    sac(lambda: gym.make("Pendulum-v1", max_episode_steps=1000), seed=0,
        **{**TINY, "epochs": 2, "num_test_episodes": 1}, max_ep_len=600,
        logger_kwargs=dict(output_dir=out))
    _, rows = read_progress(out)
    assert rows[0]["AverageEpRet"] == "nan"  # no episode ended in steps 0..399
    assert rows[1]["AverageEpRet"] != "nan" and float(rows[1]["EpLen"]) == 600.0


def test_updates_may_start_after_the_first_epoch(tmp_path):
    """SB3's habit (learning_starts=10000 with 10k-step epochs): no update in epoch 1, whose
    row leaves the Q values and losses empty (nan), and the same columns after."""
    out = run_tiny(tmp_path / "late", epochs=2, update_after=400, start_steps=400)
    header, rows = read_progress(out)
    assert [r["LossQ1"] for r in rows][0] == "nan" and rows[0]["AverageQ1Vals"] == "nan"
    assert np.isfinite(float(rows[1]["LossQ1"])) and np.isfinite(float(rows[1]["LossPi"]))
    assert np.isfinite(float(rows[0]["AverageTestEpRet"]))


def test_critics_that_run_away_are_reported_once_and_the_run_goes_on(tmp_path, capsys):
    """Hopper with no target networks (polyak 0), no entropy term and 20 updates a step
    on a few hundred transitions: the critics' mean Q runs to millions within 300 steps,
    against rewards of a few units; the warning names it after the epoch's row, once."""
    out = str(tmp_path / "runaway")
    sac(lambda: gym.make("Hopper-v5"), seed=0, epochs=2, steps_per_epoch=300, start_steps=1000,
        update_after=150, updates_per_step=20, polyak=0.0, alpha=0.0, num_test_episodes=1,
        ac_kwargs=dict(hidden_sizes=(64, 64)), logger_kwargs=dict(output_dir=out))
    printed = capsys.readouterr().out
    _, rows_ = read_progress(out)
    assert [r["Epoch"] for r in rows_] == ["1", "2"]  # it warns, it does not stop
    q = max(abs(float(rows_[0][k])) for k in ("AverageQ1Vals", "AverageQ2Vals"))
    assert q > 1e4, rows_[0]
    assert printed.count("the critics are diverging") == 1, printed[-3000:]
    assert "This warning is not repeated" in printed


def test_a_healthy_run_gets_no_runaway_warning(tmp_path, capsys):
    """The same short run with target networks and SAC's alpha: no warning."""
    out = str(tmp_path / "healthy")
    sac(lambda: gym.make("Hopper-v5"), seed=0, epochs=2, steps_per_epoch=300, start_steps=1000,
        update_after=150, num_test_episodes=1, ac_kwargs=dict(hidden_sizes=(64, 64)),
        logger_kwargs=dict(output_dir=out))
    assert "the critics are diverging" not in capsys.readouterr().out
