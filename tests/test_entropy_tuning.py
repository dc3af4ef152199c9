"""Automatic entropy tuning: alpha='auto', 'auto_<x>', target_entropy."""

import json
import os

import gymnasium as gym
import numpy as np
import pytest
from helpers import pendulum, rows, run_tiny

from spinup_tf2 import sac
from spinup_tf2.algos.sac import core, fast_path
from spinup_tf2.algos.sac import sac as sac_mod
from spinup_tf2.errors import SpinupError


def _alpha_after_updates(target_entropy, n=20):
    env = gym.make("Pendulum-v1")
    import keras
    keras.utils.set_random_seed(0)
    ac, ac_targ = sac_mod.build_actor_critics(core.MLPActorCritic, env.observation_space,
                                              env.action_space, dict(hidden_sizes=(16,)))
    pi_opt, q_opt = sac_mod.make_optimizers(ac, 1e-2)
    tuner = fast_path.EntropyTuner(1.0, target_entropy, 1e-2)
    update = sac_mod.make_update(ac, ac_targ, pi_opt, q_opt, 1.0, 0.995, tuner)
    assert update.logged_keys[-2:] == ("Alpha", "LossAlpha")
    block = fast_path.make_update_block(update)
    rng = np.random.default_rng(0)
    f = np.float32
    data = (rng.normal(size=(n, 16, 3)).astype(f), rng.uniform(-2, 2, (n, 16, 1)).astype(f),
            rng.normal(size=(n, 16)).astype(f), rng.normal(size=(n, 16, 3)).astype(f),
            np.zeros((n, 16), f), rng.normal(size=(n, 32, 1)).astype(f))
    info = block(*data)
    alphas = info["Alpha"].numpy()
    assert alphas[0] == pytest.approx(1.0)  # the first update uses the initial alpha
    return float(np.exp(tuner.log_alpha.numpy())), alphas


def test_alpha_rises_when_entropy_is_below_target_and_falls_when_above():
    # A 1-D squashed Gaussian's entropy is far below +5 and far above -20.
    up, ups = _alpha_after_updates(target_entropy=5.0)
    down, downs = _alpha_after_updates(target_entropy=-20.0)
    assert up > 1.0 > down
    assert np.all(np.diff(ups) > 0) and np.all(np.diff(downs) < 0)


def test_auto_alpha_logs_columns_after_time(tmp_path):
    out = str(tmp_path / "auto")
    run_tiny(out, epochs=2, alpha="auto_0.5")
    header, rs = rows(out)
    assert header[-3:] == ["Time", "Alpha", "LossAlpha"]
    assert len(header) == 30
    assert 0 < float(rs[0]["Alpha"]) < 0.5 * 1.2 and float(rs[0]["Alpha"]) != 0.5
    cfg = json.load(open(os.path.join(out, "config.json")))
    assert cfg["alpha"] == "auto_0.5" and cfg["target_entropy"] is None


@pytest.mark.parametrize("kwargs,words", [
    (dict(alpha="automatic"), ["alpha='automatic'", "'auto_<x>'"]),
    (dict(alpha="auto_-1"), ["alpha='auto_-1'"]),
    (dict(alpha="auto_x"), ["alpha='auto_x'"]),
    (dict(alpha=0.2, target_entropy=-1.0), ["target_entropy=-1.0", "fixed alpha=0.2"]),
])
def test_bad_alpha_arguments(kwargs, words, tmp_path):
    with pytest.raises(SpinupError) as err:
        sac(pendulum, **kwargs,
            logger_kwargs=dict(output_dir=str(tmp_path / "x")))
    for w in words:
        assert w in str(err.value)
    assert not (tmp_path / "x").exists()

