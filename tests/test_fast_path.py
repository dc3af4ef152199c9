"""Each fast-path helper against the plain formula it computes."""

import keras
import numpy as np
import pytest
from helpers import actor_critics

from spinup_tf2.algos.sac import fast_path

tf = fast_path.tf


def _variables(seed=0):
    rng = np.random.default_rng(seed)
    return [tf.Variable(rng.normal(size=shape).astype(np.float32)) for shape in ((4, 3), (3,))]


def test_adam_matches_keras_adam_over_several_steps():
    ours, theirs = _variables(), _variables()
    lr, eps = 1e-2, 1e-8
    adam = fast_path.Adam(ours, lr, epsilon=eps)
    reference = keras.optimizers.Adam(learning_rate=lr, epsilon=eps)
    rng = np.random.default_rng(1)
    for _ in range(6):
        grads = [rng.normal(size=v.shape).astype(np.float32) for v in ours]
        adam.apply([tf.constant(g) for g in grads])
        reference.apply_gradients(zip([tf.constant(g) for g in grads], theirs))
    for a, b, start in zip(ours, theirs, _variables()):
        assert not np.allclose(a.numpy(), start.numpy())  # they moved
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-6)


def test_adam_matches_tf1_formula():
    (var,) = _variables()[:1]
    start = var.numpy().astype(np.float64)
    lr, b1, b2, eps = 1e-3, 0.9, 0.999, 1e-8
    adam = fast_path.Adam([var], lr)
    m, v, x = np.zeros_like(start), np.zeros_like(start), start.copy()
    rng = np.random.default_rng(2)
    for t in range(1, 5):
        g = rng.normal(size=start.shape).astype(np.float32)
        adam.apply([tf.constant(g)])
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g ** 2
        x = x - lr * np.sqrt(1 - b2 ** t) / (1 - b1 ** t) * m / (np.sqrt(v) + eps)
    np.testing.assert_allclose(var.numpy(), x, rtol=1e-5, atol=1e-7)


def _actor_critics(seed=0):
    return actor_critics(seed, hidden_sizes=(8,))


def test_polyak_step_matches_plain_assignment():
    ac, ac_targ = _actor_critics()
    plain_targ = _actor_critics()[1]
    for v in ac.trainable_variables:  # the main networks move away from the targets
        v.assign(v + 0.1)
    polyak = 0.995
    fast_path.make_polyak_update(ac, ac_targ, polyak)()
    for name in ("q1", "q2"):  # the target critics are averaged ...
        for main, targ in zip(getattr(ac, name).trainable_variables,
                              getattr(plain_targ, name).trainable_variables):
            targ.assign(polyak * targ + (1 - polyak) * main)
    for fast, plain, main in zip(ac_targ.trainable_variables, plain_targ.trainable_variables,
                                 ac.trainable_variables):
        assert not np.allclose(fast.numpy(), main.numpy())
        np.testing.assert_allclose(fast.numpy(), plain.numpy(), rtol=1e-6, atol=1e-7)
    # ... and the target policy, which SAC never uses, is left as it was.
    for targ, plain in zip(ac_targ.pi.trainable_variables, plain_targ.pi.trainable_variables):
        np.testing.assert_array_equal(targ.numpy(), plain.numpy())


@pytest.mark.parametrize("target_entropy", [-3.0, 2.0])
def test_entropy_tuner_gradient_is_the_gradient_of_its_loss(target_entropy):
    tuner = fast_path.EntropyTuner(0.3, target_entropy, 1e-3)
    logp_pi = tf.constant(np.random.default_rng(3).normal(size=50).astype(np.float32))
    with tf.GradientTape() as tape:
        tape.watch(tuner.log_alpha)
        loss = tuner.loss(logp_pi)
    taped = tape.gradient(loss, tuner.log_alpha).numpy()
    np.testing.assert_allclose(tuner.gradient(logp_pi)[0].numpy(), taped, rtol=1e-6)
    # The step moves alpha towards the target: up when the entropy -logp is below it.
    before = float(tuner.alpha())
    tuner.optimizer.apply(tuner.gradient(logp_pi))
    entropy_below_target = -float(np.mean(logp_pi)) < target_entropy
    assert (float(tuner.alpha()) > before) == entropy_below_target
