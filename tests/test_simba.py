"""SimBa networks (``ac_kwargs=dict(network='simba')``): residual blocks with a layer norm
before them and before the output, for SAC (continuous and discrete), TQC and REDQ; for
CrossQ with its Batch Renormalization in place of the layer norms, for DroQ with its
dropout inside the critics' blocks. SAC's run resumes exactly, exports within 1e-5 and
replays (the variants': tests/test_kill_every_variant.py, tests/test_family_everywhere.py);
an unknown network is refused."""
import os

import gymnasium as gym
import numpy as np
import pytest
import tensorflow as tf
from helpers import rows, run_tiny, straight_and_resumed

from spinup_tf2.algos.sac import core
from spinup_tf2.algos.sac.fast_path import NumpyActor
from spinup_tf2.errors import SpinupError

SIMBA = dict(network="simba", hidden_sizes=(16, 16))


def test_the_blocks_are_residual_with_layer_norms_first_and_last():
    env = gym.make("Pendulum-v1")
    ac = core.MLPActorCritic(env.observation_space, env.action_space, hidden_sizes=(16, 8),
                             network="simba")
    kinds = [type(layer).__name__ for layer in ac.q1.q.layers]
    assert kinds == ["Dense", "ResidualBlock", "Dense", "ResidualBlock", "LayerNormalization",
                     "Dense"]  # embed, block of 16, projection to 8, block of 8, norm, output
    assert [type(layer).__name__ for layer in ac.pi.net.layers][-1] == "LayerNormalization"
    block = ac.q1.q.layers[1]
    assert block.inner.units == 64 and block.outer.units == 16  # the inner layer is 4x wider
    x = tf.random.normal((5, 16)) * 3.0 + 1.0
    np.testing.assert_allclose(block(x) - x, block.outer(block.inner(block.norm(x))),
                               atol=1e-5)  # the identity path is untouched
    assert NumpyActor.maybe(ac.pi) is None  # TensorFlow acts: numpy mirrors plain MLPs only
    from spinup_tf2.algos.sac.redq import REDQActorCritic

    redq = REDQActorCritic(env.observation_space, env.action_space, hidden_sizes=(8,),
                           n_critics=3, network="simba")  # REDQ's critics are SAC's
    assert all(type(q.q.layers[1]).__name__ == "ResidualBlock" for q in redq.critics)


def test_crossq_blocks_renormalise_by_the_batch_and_droq_blocks_drop_out():
    from spinup_tf2.algos.sac.crossq import BatchRenorm, CrossQActorCritic
    from spinup_tf2.algos.sac.droq import DroQActorCritic, SparseDropout

    env = gym.make("Pendulum-v1")
    crossq = CrossQActorCritic(env.observation_space, env.action_space, hidden_sizes=(8,),
                               critic_hidden_sizes=(16,), network="simba")
    net = crossq.q1.q
    assert [type(layer).__name__ for layer in net.layers] == [
        "BatchRenorm", "Dense", "ResidualBlock", "BatchRenorm", "Dense"]
    block = net.layers[2]
    assert isinstance(block.norm, BatchRenorm)
    assert any(v is block.norm.moving_mean for v in crossq.local_statistics())  # MPI's
    o, a = tf.random.normal((64, 3)) * 2.0 + 1.0, tf.random.uniform((64, 1), -2, 2)
    before = block.norm.moving_var.numpy().copy()
    inference = crossq.q1(o, a).numpy()
    np.testing.assert_array_equal(block.norm.moving_var.numpy(), before)  # untouched
    training = crossq.q1(o, a, training=True).numpy()
    assert np.abs(block.norm.moving_var.numpy() - before).max() > 1e-4  # the batch's moved it
    assert np.abs(training - inference).max() > 1e-3  # and normalised by the batch

    droq = DroQActorCritic(env.observation_space, env.action_space, hidden_sizes=(64, 64),
                           dropout_rate=0.2, network="simba")
    blocks = [layer for layer in droq.q1.q.layers if type(layer).__name__ == "ResidualBlock"]
    assert len(blocks) == 2 and all(isinstance(b.dropout, SparseDropout) for b in blocks)
    assert type(droq.pi.net.layers[1]).__name__ == "ResidualBlock"  # the actor's are SimBa's
    first, second = droq.q1(o, a).numpy(), droq.q1(o, a).numpy()
    assert np.abs(first - second).max() > 1e-4  # the losses' calls drop units
    np.testing.assert_array_equal(droq.critic(0, o, a).numpy(), droq.critic(0, o, a).numpy())


def test_simba_trains_through_sac_and_resumes_exactly(tmp_path):
    (header, r), resumed = straight_and_resumed(tmp_path, ac_kwargs=SIMBA, normalize_obs=True)
    assert resumed == (header, r) and len(r) == 2
    with np.load(os.path.join(tmp_path / "straight", "train_state", "arrays.npz")) as arrays:
        # each block's normalisation, in the critics and their targets
        assert any(k.startswith("var:ac_targ/q1/") and k.endswith("/norm/gamma")
                   for k in arrays.files)


def test_a_simba_policy_exports_within_1e_5_and_replays(tmp_path):
    from helpers import cli

    from spinup_tf2.policy.export import export_policy

    out = run_tiny(tmp_path / "run", ac_kwargs=SIMBA, normalize_obs=True)
    model = tf.saved_model.load(os.path.join(out, "tf2_save"))
    obs = np.random.default_rng(0).normal(size=(50, 3)).astype(np.float32)
    expected = model.mu(tf.constant(obs)).numpy()
    assert np.std(expected) > 1e-4
    from test_export import run_onnx, run_tflite

    for fmt, run in (("onnx", run_onnx), ("tflite", run_tflite)):
        path = str(tmp_path / f"policy.{fmt}")
        export_policy(out, fmt, path)
        assert np.max(np.abs(run(path, obs) - expected)) <= 1e-5, fmt
    res = cli("test_policy", out, "-nr", "-n", "1", cwd=tmp_path)
    assert res.returncode == 0 and "EpRet" in res.stdout, res.stdout + res.stderr


def test_discrete_sac_takes_simba_too(tmp_path):
    out = run_tiny(tmp_path / "run", lambda: gym.make("CartPole-v1"), ac_kwargs=SIMBA)
    assert len(rows(out)[1]) == 1


@pytest.mark.parametrize("actor_critic", ["mlp", "crossq", "droq"])
def test_an_unknown_network_is_refused(tmp_path, actor_critic):
    ac_kwargs = dict(network="resnet")
    with pytest.raises(SpinupError, match="network='resnet'; give 'mlp'"):
        run_tiny(tmp_path / "run", actor_critic=actor_critic, ac_kwargs=ac_kwargs)
    assert not (tmp_path / "run" / "progress.txt").exists()
