"""TQC (``actor_critic='tqc'``, ``tqc()``): the quantile Huber loss and the truncated backup
against their formulas worked out in numpy, and the variant through the real sac(): five
critics logged and exported, targets kept, resume exact, bad settings and spaces refused."""
import json
import os

import gymnasium as gym
import numpy as np
import pytest
import tensorflow as tf
from helpers import TINY, pendulum, run_tiny, straight_and_resumed

from spinup_tf2.algos.sac import tqc
from spinup_tf2.errors import SpinupError

SMALL = dict(hidden_sizes=(16, 16), n_critics=3, n_quantiles=5, top_quantiles_to_drop_per_net=1)


def huber_loss_np(z, target):
    m = z.shape[1]
    tau = (np.arange(m) + 0.5) / m
    total = 0.0
    for b in range(z.shape[0]):
        for j in range(m):
            for k in range(target.shape[1]):
                u = target[b, k] - z[b, j]
                h = 0.5 * u * u if abs(u) <= 1 else abs(u) - 0.5
                total += abs(tau[j] - (u < 0)) * h
    return total / (z.shape[0] * m * target.shape[1])


def test_the_quantile_huber_loss_is_its_formula():
    rng = np.random.default_rng(0)
    z, target = rng.normal(size=(4, 5)) * 2, rng.normal(size=(4, 7)) * 2
    got = tqc.quantile_huber_loss(tf.constant(z, tf.float32), tf.constant(target, tf.float32))
    np.testing.assert_allclose(got.numpy(), huber_loss_np(z, target), rtol=1e-5)


def test_the_backup_drops_the_largest_target_quantiles():
    """Q losses against a backup worked out by hand: pooled, sorted, the top k x N dropped."""
    env = gym.make("Pendulum-v1")
    ac = tqc.TQCActorCritic(env.observation_space, env.action_space, **SMALL)
    ac_targ = tqc.TQCActorCritic(env.observation_space, env.action_space, **SMALL)
    rng = np.random.default_rng(1)
    o, o2 = (rng.normal(size=(6, 3)).astype(np.float32) for _ in range(2))
    a, r = rng.uniform(-2, 2, (6, 1)).astype(np.float32), rng.normal(size=6).astype(np.float32)
    d, noise = np.array([0, 1, 0, 0, 1, 0], np.float32), rng.normal(size=(12, 1)).astype(np.float32)
    out = tqc.tqc_losses(ac, ac_targ, o, a, r, o2, 0.99 * (1 - d), noise, 0.2)
    pi2, logp2 = (x.numpy() for x in ac.pi(o2, noise=noise[6:]))
    pooled = np.sort(np.concatenate([q(o2, pi2).numpy() for q in ac_targ.critics], 1), 1)
    kept = pooled[:, :3 * (5 - 1)]  # 12 of 15
    backup = r[:, None] + 0.99 * (1 - d[:, None]) * (kept - 0.2 * logp2[:, None])
    assert len(out.loss_q) == len(out.q) == 3
    for q, loss, qvals in zip(ac.critics, out.loss_q, out.q):
        z = q(o, a).numpy()
        np.testing.assert_allclose(loss.numpy(), huber_loss_np(z, backup) / 3, rtol=1e-4)
        np.testing.assert_allclose(qvals.numpy(), z.mean(1), rtol=1e-5)


def test_tqc_trains_through_sac_and_resumes_exactly(tmp_path):
    (header, r), resumed = straight_and_resumed(tmp_path, actor_critic="tqc", ac_kwargs=SMALL,
                                                alpha="auto")
    assert resumed == (header, r) and len(r) == 2
    assert {"AverageQ3Vals", "LossQ3", "Alpha"} <= set(header) and "LossQ4" not in header
    straight = str(tmp_path / "straight")
    with np.load(os.path.join(straight, "train_state", "arrays.npz")) as arrays:
        assert "var:ac_targ/q3/q/3/kernel" in arrays.files
        assert arrays["var:ac/q3/q/3/kernel"].shape == (16, 5)  # five quantiles
    saved = tf.saved_model.load(os.path.join(straight, "tf2_save"))
    x, a = np.zeros((2, 3), np.float32), np.zeros((2, 1), np.float32)
    assert saved.signatures["q3"](x=x, a=a)["q"].shape == (2,)  # the quantiles' mean


def test_tqc_runs_with_its_own_defaults(tmp_path):
    from spinup_tf2 import tqc as tqc_fn

    out = tmp_path / "run"
    tqc_fn(pendulum, epochs=1, steps_per_epoch=400, start_steps=200,
           update_after=100, num_test_episodes=1, replay_size=1000, ac_kwargs=SMALL,
           logger_kwargs=dict(output_dir=str(out)))
    config = json.loads((out / "config.json").read_text())
    assert (config["actor_critic"], config["batch_size"], config["alpha"], config["lr"]) == \
        ("TQCActorCritic", 256, "auto", 3e-4)


@pytest.mark.parametrize("ac_kwargs,words", [
    (dict(top_quantiles_to_drop_per_net=25), "would drop every target quantile"),
    (dict(n_critics=0), "n_critics=0"),
    (dict(n_quantiles=2.5), "n_quantiles=2.5"),
])
def test_bad_tqc_settings_are_refused_before_anything_is_written(tmp_path, ac_kwargs, words):
    with pytest.raises(SpinupError, match=words):
        run_tiny(tmp_path / "run", actor_critic="tqc", ac_kwargs=ac_kwargs)
    assert not (tmp_path / "run" / "progress.txt").exists()


def test_tqc_refuses_discrete_actions(tmp_path):
    from spinup_tf2 import sac

    with pytest.raises(SpinupError, match="a Discrete action space with TQC"):
        sac(lambda: gym.make("CartPole-v1"), actor_critic="tqc", **TINY,
            logger_kwargs=dict(output_dir=str(tmp_path / "run")))

