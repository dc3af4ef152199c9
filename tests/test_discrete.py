"""SAC for discrete action spaces."""

import json
import os

import gymnasium as gym
import numpy as np
from helpers import TINY, rows

from spinup_tf2 import sac
from spinup_tf2.algos.sac import core, fast_path
from spinup_tf2.algos.sac import sac as sac_mod


def test_discrete_fused_block_equals_single_updates():
    env = gym.make("CartPole-v1")
    rng = np.random.default_rng(0)
    f = np.float32
    k, b = 4, 16
    data = (rng.normal(size=(k, b, 4)).astype(f), rng.integers(0, 2, (k, b, 1)).astype(f),
            rng.normal(size=(k, b)).astype(f), rng.normal(size=(k, b, 4)).astype(f),
            np.zeros((k, b), f), np.zeros((k, 2 * b, 0), f))
    results = []
    for fused in (True, False):
        import keras
        keras.utils.set_random_seed(1)
        ac, ac_targ = sac_mod.build_actor_critics(core.DiscreteMLPActorCritic,
                                                  env.observation_space, env.action_space,
                                                  dict(hidden_sizes=(16,)))
        pi_opt, q_opt = sac_mod.make_optimizers(ac, 1e-3)
        tuner = fast_path.EntropyTuner(1.0, 0.3, 1e-3)
        variables = (ac.trainable_variables + ac_targ.q1.trainable_variables
                     + ac_targ.q2.trainable_variables + tuner.variables)
        start = [v.numpy().copy() for v in variables]
        update = sac_mod.make_update(ac, ac_targ, pi_opt, q_opt, 0.2, 0.995, tuner)
        if fused:
            info = fast_path.make_update_block(update)(*data)
            losses = np.stack([info[k].numpy() for k in ("LossQ1", "LossPi", "Alpha")])
        else:
            single = tf_function(update)
            infos = [single(*(x[j] for x in data)) for j in range(k)]
            losses = np.array([[float(i[key]) for i in infos]
                               for key in ("LossQ1", "LossPi", "Alpha")])
        results.append((losses, [v.numpy() for v in variables]))
        # The block really learned: every network (target critics and alpha too) moved, and each of
        # the k updates saw another state (so comparing them can fail).
        assert all(not np.array_equal(a, b) for a, b in zip(start, results[-1][1]))
        assert losses.shape == (3, k) and len(set(losses[0])) == k and len(set(losses[2])) == k
    np.testing.assert_allclose(results[0][0], results[1][0], rtol=1e-4, atol=1e-6)
    for a, b_ in zip(results[0][1], results[1][1]):
        np.testing.assert_allclose(a, b_, rtol=1e-4, atol=1e-6)


def tf_function(fn):
    import tensorflow as tf
    return tf.function(fn)


def test_discrete_losses_match_numpy():
    """The discrete backup and policy loss against a direct numpy computation."""
    import keras
    env = gym.make("CartPole-v1")
    keras.utils.set_random_seed(2)
    ac, ac_targ = sac_mod.build_actor_critics(core.DiscreteMLPActorCritic, env.observation_space,
                                              env.action_space, dict(hidden_sizes=(8,)))
    rng = np.random.default_rng(0)
    o, o2 = rng.normal(size=(5, 4)).astype(np.float32), rng.normal(size=(5, 4)).astype(np.float32)
    a = np.array([[0], [1], [1], [0], [1]], np.float32)
    r, d = rng.normal(size=5).astype(np.float32), np.array([0, 0, 1, 0, 0], np.float32)
    out = sac_mod.discrete_losses(ac, ac_targ, o, a, r, o2, 0.99 * (1 - d), None, 0.2)
    (loss_q1, _), (q1, _), loss_pi, logp = out.loss_q, out.q, out.loss_pi, out.logp_pi
    p, lp = (x.numpy() for x in ac.pi.dist(o))
    p2, lp2 = (x.numpy() for x in ac.pi.dist(o2))
    q1a, q2a = ac.q1(o).numpy(), ac.q2(o).numpy()
    qt = np.minimum(ac_targ.q1(o2).numpy(), ac_targ.q2(o2).numpy())
    backup = r + 0.99 * (1 - d) * (p2 * (qt - 0.2 * lp2)).sum(-1)
    q1_taken = q1a[np.arange(5), a[:, 0].astype(int)]
    np.testing.assert_allclose(q1.numpy(), q1_taken, rtol=1e-5)
    np.testing.assert_allclose(loss_q1.numpy(), 0.5 * np.mean((q1_taken - backup) ** 2),
                               rtol=1e-4)
    np.testing.assert_allclose(loss_pi.numpy(),
                               np.mean((p * (0.2 * lp - np.minimum(q1a, q2a))).sum(-1)),
                               rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(logp.numpy(), (p * lp).sum(-1), rtol=1e-5)


def test_discrete_run_savedmodel_and_test_policy(tmp_path):
    import tensorflow as tf

    from spinup_tf2.utils.test_policy import load_policy_and_env

    out = str(tmp_path / "cartpole")
    sac(lambda: gym.make("CartPole-v1"), epochs=2, alpha="auto", **TINY,
        logger_kwargs=dict(output_dir=out))
    cfg = json.load(open(os.path.join(out, "config.json")))
    assert cfg["actor_critic"] == "DiscreteMLPActorCritic"
    header, rs = rows(out)
    assert header[-2:] == ["Alpha", "LossAlpha"] and len(rs) == 2
    model = tf.saved_model.load(os.path.join(out, "tf2_save"))
    obs = np.random.default_rng(0).normal(size=(6, 4)).astype(np.float32)
    mu = model.mu(obs).numpy()
    assert mu.dtype == np.int64 and set(mu) <= {0, 1}
    assert model.q1(obs, mu).numpy().shape == (6,)
    env, get_action = load_policy_and_env(out, deterministic=True)
    o, _ = env.reset(seed=0)
    act = get_action(o)
    assert env.action_space.contains(act)
    env.step(act)
