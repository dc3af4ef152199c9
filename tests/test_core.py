"""The models: shapes, parameter counts, the squashed Gaussian's log-probability,
the numpy acting path and the SavedModel export."""

import json

import gymnasium as gym
import numpy as np
import pytest

from spinup_tf2.algos.sac import core, fast_path
from spinup_tf2.algos.sac.agent import MLPAgent

tf = core.tf


@pytest.fixture(scope="module")
def pendulum_ac():
    env = gym.make("Pendulum-v1")
    import keras

    keras.utils.set_random_seed(0)
    return core.MLPActorCritic(env.observation_space, env.action_space), env


def test_parameter_counts_match_spinning_up(pendulum_ac):
    ac, _ = pendulum_ac
    assert core.count_vars(ac.pi) == 67330
    assert core.count_vars(ac.q1) == 67329
    assert core.count_vars(ac.q2) == 67329


def test_hidden_sizes_and_activation_are_used():
    env = gym.make("HalfCheetah-v5")
    ac = core.MLPActorCritic(env.observation_space, env.action_space, hidden_sizes=(32,),
                             activation=tf.nn.tanh)
    # pi: 17*32+32 + 2*(32*6+6); q: (17+6)*32+32 + 32+1
    assert core.count_vars(ac.pi) == 17 * 32 + 32 + 2 * (32 * 6 + 6)
    assert core.count_vars(ac.q1) == 23 * 32 + 32 + 33
    assert ac.pi.net.layers[0].activation is tf.nn.tanh


def _numpy_forward(actor, obs):
    x = obs
    for layer in actor.net.layers:
        x = np.maximum(x @ layer.kernel.numpy() + layer.bias.numpy(), 0.0)
    mu = x @ actor.mu_layer.kernel.numpy() + actor.mu_layer.bias.numpy()
    log_std = np.clip(x @ actor.log_std_layer.kernel.numpy() + actor.log_std_layer.bias.numpy(),
                      -20, 2)
    return mu.astype(np.float64), log_std.astype(np.float64)


def test_logp_matches_independent_numpy_computation(pendulum_ac):
    ac, env = pendulum_ac
    rng = np.random.default_rng(1)
    obs = rng.normal(size=(64, 3)).astype(np.float32)
    noise = rng.normal(size=(64, 1)).astype(np.float32)
    a, logp = ac.pi(obs, noise=noise)
    mu, log_std = _numpy_forward(ac.pi, obs)
    std = np.exp(log_std)
    u = mu + std * noise
    # Gaussian density in the unsquashed space, then the change of variables for tanh.
    gauss = -0.5 * ((u - mu) / std) ** 2 - np.log(std) - 0.5 * np.log(2 * np.pi)
    expected = np.sum(gauss, -1) - np.sum(np.log(1 - np.tanh(u) ** 2), -1)
    np.testing.assert_allclose(logp.numpy(), expected, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(a.numpy(), 2.0 * np.tanh(u), rtol=1e-5, atol=1e-5)


def test_logp_stays_finite_when_saturated():
    u = tf.constant([[30.0, -30.0]])
    corr = core.tanh_logp_correction(u).numpy()
    assert np.isfinite(corr).all()
    np.testing.assert_allclose(corr, 2 * 2 * (np.log(2) - 30), rtol=1e-5)


def test_actions_in_bounds_and_deterministic_is_tanh_mu(pendulum_ac):
    ac, env = pendulum_ac
    obs = np.random.default_rng(2).normal(scale=100, size=(256, 3)).astype(np.float32)
    a, _ = ac.pi(obs)
    assert np.all(np.abs(a.numpy()) <= 2.0)
    mu, _ = _numpy_forward(ac.pi, obs)
    det, _ = ac.pi(obs, deterministic=True)
    np.testing.assert_allclose(det.numpy(), 2.0 * np.tanh(mu), rtol=1e-4, atol=1e-5)
    single = ac.act(obs[0], deterministic=True)
    assert single.shape == (1,)
    np.testing.assert_allclose(single, det.numpy()[0], rtol=1e-5)


def test_q_functions_squeeze_to_batch(pendulum_ac):
    """Q(s, a) is the network on concat(s, a), one value per row, squeezed to (batch,)."""
    ac, _ = pendulum_ac
    rng = np.random.default_rng(0)
    obs, act = rng.normal(size=(7, 3)).astype(np.float32), rng.normal(size=(7, 1)).astype(
        np.float32)
    q = ac.q1(obs, act)
    assert q.shape == (7,)
    np.testing.assert_allclose(q.numpy(), ac.q1.q(np.concatenate([obs, act], -1)).numpy()[:, 0],
                               rtol=1e-6)
    assert len(set(np.round(q.numpy(), 6))) == 7  # each row its own value
    assert not np.allclose(q.numpy(), ac.q2(obs, act).numpy())  # the critics differ


@pytest.mark.parametrize("activation", [tf.nn.relu, tf.nn.tanh, tf.nn.elu])
def test_numpy_actor_gives_the_keras_actions(activation):
    env = gym.make("HalfCheetah-v5")
    ac = core.MLPActorCritic(env.observation_space, env.action_space, hidden_sizes=(64, 64),
                             activation=activation)
    np_actor = fast_path.NumpyActor.maybe(ac.pi)
    assert np_actor is not None
    rng = np.random.default_rng(3)
    obs = rng.normal(size=(32, 17)).astype(np.float32)
    noise = rng.normal(size=(32, 6)).astype(np.float32)
    want, _ = ac.pi(obs, noise=noise, with_logprob=False)
    np.testing.assert_allclose(np_actor(obs, noise), want.numpy(), rtol=1e-4, atol=1e-5)
    # After the weights change, refresh() picks them up.
    for v in ac.pi.trainable_variables:
        v.assign(v * 1.5)
    np_actor.refresh()
    want, _ = ac.pi(obs, noise=noise, with_logprob=False)
    np.testing.assert_allclose(np_actor(obs, noise), want.numpy(), rtol=1e-4, atol=1e-5)


def test_numpy_actor_declines_unknown_activation():
    env = gym.make("Pendulum-v1")
    ac = core.MLPActorCritic(env.observation_space, env.action_space, hidden_sizes=(8,),
                             activation=lambda x: x * tf.sigmoid(x))
    assert fast_path.NumpyActor.maybe(ac.pi) is None


def test_a_subclassed_actor_acts_with_its_own_math():
    """The numpy copy mirrors only the exact actor class: a subclass that changes the math
    (here: actions halved) acts as it says, in sac()'s acting path too."""

    class HalvedActor(core.SquashedGaussianMLPActor):
        def call(self, obs, deterministic=False, with_logprob=True, noise=None):
            pi, logp = super().call(obs, deterministic, with_logprob, noise)
            return pi * 0.5, logp

    env = gym.make("Pendulum-v1")
    ac = core.MLPActorCritic(env.observation_space, env.action_space, hidden_sizes=(8,))
    halved = HalvedActor(ac.pi.obs_dim, ac.pi.act_dim, (8,), tf.nn.relu, ac.pi.act_limit)
    obs = np.random.default_rng(0).normal(size=3).astype(np.float32)
    halved(obs[None])  # build, then give it the same weights
    for mine, theirs in zip(halved.weights, ac.pi.weights):
        mine.assign(theirs)
    assert fast_path.NumpyActor.maybe(halved) is None
    ac.pi = halved
    act = MLPAgent(ac, np.random.default_rng(0), 1)
    want = halved(obs[None], deterministic=True, with_logprob=False)[0].numpy()[0]
    np.testing.assert_allclose(act(obs, True), want, rtol=1e-5)
    assert 0 < abs(act(obs, True)[0]) <= 1.0  # half of Pendulum's limit of 2


def test_export_loads_without_spinup_tf2(tmp_path, pendulum_ac):
    import subprocess
    import sys

    ac, _ = pendulum_ac
    path = str(tmp_path / "export")
    module = core.ActorCriticExport(ac, 3, 1)
    tf.saved_model.save(module, path, signatures=module.export_signatures())
    obs = np.random.default_rng(4).normal(size=(5, 3)).astype(np.float32)
    want_mu = ac.pi(obs, deterministic=True)[0].numpy()
    want_q1 = ac.q1(obs, want_mu).numpy()
    code = (
        "import json, sys, numpy as np, tensorflow as tf\n"
        f"m = tf.saved_model.load({path!r})\n"
        f"obs = np.array({obs.tolist()}, dtype=np.float32)\n"
        "mu = m.signatures['mu'](x=obs)['action'].numpy()\n"
        "pi = m.pi(obs).numpy()\n"
        "q1 = m.q1(obs, mu).numpy()\n"
        "assert 'spinup_tf2' not in sys.modules\n"
        "print(json.dumps([mu.tolist(), q1.tolist(), float(np.abs(pi).max())]))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    mu, q1, pi_max = json.loads(out.stdout.strip().splitlines()[-1])
    np.testing.assert_allclose(np.array(mu), want_mu, rtol=1e-5)
    np.testing.assert_allclose(np.array(q1), want_q1, rtol=1e-5)
    assert 0 < pi_max <= 2.0
