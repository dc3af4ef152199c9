"""SimbaV2's pieces against numpy versions of the paper's formulas: the sphere's layers,
the weight projection after an optimiser step, the categorical critic's projection and
mean, the reward scaling and the learning-rate decay."""

import gymnasium as gym
import keras
import numpy as np
import pytest
import tensorflow as tf

from spinup_tf2.algos.sac import simbav2
from spinup_tf2.algos.sac.buffers import ReplayBuffer
from spinup_tf2.algos.sac.fast_path import Adam


def np_l2(x, axis=-1):
    return x / np.maximum(np.linalg.norm(x, axis=axis, keepdims=True), 1e-8)


def test_embedder_is_the_normalized_projection_of_the_shifted_input():
    keras.utils.set_random_seed(0)
    layer = simbav2.HyperEmbedder(16, 3.0, 0.5, 0.25)
    x = np.random.default_rng(0).normal(size=(4, 5)).astype(np.float32)
    out = layer(x).numpy()
    simbav2.project_kernels(layer)
    out = layer(x).numpy()
    w, s = layer.w.kernel.numpy(), layer.scaler.s.numpy()
    shifted = np_l2(np.concatenate([x, np.full((4, 1), 3.0)], axis=1))
    expected = np_l2(shifted @ w * s * (0.5 / 0.25))
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.linalg.norm(out, axis=1), 1.0, rtol=1e-5)
    np.testing.assert_allclose(np.linalg.norm(w, axis=0), 1.0, rtol=1e-5)  # unit columns


def test_lerp_block_mixes_the_normalized_mlp_into_the_stream():
    keras.utils.set_random_seed(1)
    block = simbav2.HyperLERPBlock(8, 0.5, 0.5, 1 / 3, 0.1)
    x = np_l2(np.random.default_rng(1).normal(size=(3, 8))).astype(np.float32)
    block(x)
    simbav2.project_kernels(block)
    out = block(x).numpy()
    w1, w2 = block.w1.kernel.numpy(), block.w2.kernel.numpy()
    g = block.scaler.s.numpy() * (block.scaler.init / block.scaler.scale)
    a = block.alpha.s.numpy() * (block.alpha.init / block.alpha.scale)
    h = np_l2((np.maximum(x @ w1 * g, 0.0) + 1e-8) @ w2)
    np.testing.assert_allclose(out, np_l2(x + a * (h - x)), rtol=1e-5, atol=1e-6)
    assert block.scaler.init == pytest.approx(0.5 / 2)  # the 4x wider layer: init / sqrt(4)
    np.testing.assert_allclose(a, 1 / 3, rtol=1e-6)  # alpha starts at 1 / (blocks + 1)


def test_kernels_are_projected_back_after_each_optimizer_step():
    keras.utils.set_random_seed(2)
    env = gym.make("Pendulum-v1")
    ac = simbav2.SimbaV2ActorCritic(env.observation_space, env.action_space, hidden_sizes=[16],
                                    critic_hidden_sizes=[16, 16], num_bins=11)
    kernels = [v for v in ac.q1.trainable_variables if "kernel" in v.path]
    assert kernels and all(np.allclose(np.linalg.norm(v.numpy(), axis=0), 1.0, atol=1e-5)
                           for v in kernels)
    opt = Adam(ac.q1.trainable_variables, 0.1)  # the fused Adam training uses
    o, a = tf.random.normal((8, 3)), tf.random.uniform((8, 1), -1, 1)
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(ac.critic(0, o, a) ** 2)
    grads = tape.gradient(loss, ac.q1.trainable_variables)
    before = [v.numpy().copy() for v in kernels]
    opt.apply(grads)
    for v, b in zip(kernels, before, strict=True):
        assert not np.allclose(v.numpy(), b)  # it moved
        np.testing.assert_allclose(np.linalg.norm(v.numpy(), axis=0), 1.0, rtol=1e-5)


def np_project(probs, values, bins):
    """C51's projection, one transition and one atom at a time."""
    out = np.zeros_like(probs)
    lo, hi, dz = bins[0], bins[-1], bins[1] - bins[0]
    for i in range(probs.shape[0]):
        for j in range(probs.shape[1]):
            b = (np.clip(values[i, j], lo, hi) - lo) / dz
            low, up = int(np.floor(b)), int(np.ceil(b))
            if low == up:
                out[i, low] += probs[i, j]
            else:
                out[i, low] += probs[i, j] * (up - b)
                out[i, up] += probs[i, j] * (b - low)
    return out


def test_projection_onto_the_bins_matches_c51():
    rng = np.random.default_rng(3)
    bins = np.linspace(-5, 5, 11).astype(np.float32)
    probs = rng.dirichlet(np.ones(11), size=6).astype(np.float32)
    values = (0.3 + 0.9 * bins[None, :] + rng.normal(size=(6, 11))).astype(np.float32)
    values[0, 0] = bins[4]  # on a bin
    got = simbav2.project_onto_bins(tf.constant(probs), tf.constant(values),
                                    tf.constant(bins)).numpy()
    np.testing.assert_allclose(got, np_project(probs, values, bins), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got.sum(axis=1), 1.0, rtol=1e-5)


def test_rewards_are_scaled_by_the_running_spread_of_the_return():
    """ScaledRewards against a numpy replay of its formula: per copy G <- gamma G + r (0 after
    an episode ends), the running variance of every G (from count 1e-4, mean 0, var 1),
    the largest |G|; a minibatch's rewards divided by max(sqrt(var + 1e-8), G_max / 5)."""
    rng = np.random.default_rng(4)
    gamma, steps = 0.9, 60
    writer = simbav2.ScaledRewards(ReplayBuffer(2, 1, 100), 1, gamma, copies=2)
    G, count, mean, var, g_max = np.zeros(2), 1e-4, 0.0, 1.0, 0.0
    rewards = rng.normal(3.0, 2.0, size=(steps, 2))
    for t in range(steps):
        for c in (0, 1):
            writer.store(np.zeros(2), np.zeros(1), rewards[t, c], np.zeros(2), 0.0, copy=c)
            G[c] = gamma * G[c] + rewards[t, c]
            total = count + 1
            delta = G[c] - mean
            mean, var = mean + delta / total, (var * count + delta ** 2 * count / total) / total
            count, g_max = total, max(g_max, abs(G[c]))
            if t % 17 == 16:
                writer.end_episode(c)
                G[c] = 0.0
    scale = max(np.sqrt(var + 1e-8), g_max / simbav2.G_MAX)
    assert writer.scale() == pytest.approx(scale, rel=1e-9)
    batch = writer.sample_batch(8, np.random.default_rng(0))
    stored = writer.buffer.rew_buf[:writer.buffer.size]
    assert all(np.isclose(stored, r * scale, rtol=1e-5).any() for r in batch["rew"])


def test_the_learning_rate_decays_linearly_and_stops_at_its_end():
    v = tf.Variable([1.0])
    opt = Adam([v], 1e-4, lr_end=5e-5, decay_steps=4)
    seen = []
    for _ in range(6):
        seen.append(float(opt.learning_rate()))
        opt.apply([tf.constant([1.0])])
    np.testing.assert_allclose(seen, [1e-4, 8.75e-5, 7.5e-5, 6.25e-5, 5e-5, 5e-5], rtol=1e-6)
