"""SimBa networks (``ac_kwargs=dict(network='simba')``): residual blocks with a layer norm
before them and before the output, for SAC (continuous and discrete), TQC and REDQ; the
run resumes exactly (SAC, TQC), exports within 1e-5 and replays; what cannot take them
refused."""
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


@pytest.mark.parametrize("algo", ["sac", "tqc"])
def test_simba_trains_through_sac_and_the_variants_and_resumes_exactly(tmp_path, algo):
    kwargs = dict(ac_kwargs=SIMBA, normalize_obs=True)
    if algo != "sac":
        kwargs.update(actor_critic=algo, alpha="auto", updates_per_step=2,
                      ac_kwargs=dict(SIMBA, n_critics=2))
    (header, r), resumed = straight_and_resumed(tmp_path, **kwargs)
    assert resumed == (header, r) and len(r) == 2
    with np.load(os.path.join(tmp_path / "straight", "train_state", "arrays.npz")) as arrays:
        # each block's layer norm, in the critics and their targets
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


@pytest.mark.parametrize("actor_critic,words", [
    ("crossq", "CrossQActorCritic does not take"), ("droq", "DroQActorCritic does not take"),
    ("mlp", "network='resnet'")])
def test_what_cannot_take_simba_is_refused(tmp_path, actor_critic, words):
    ac_kwargs = dict(network="resnet" if actor_critic == "mlp" else "simba")
    with pytest.raises(SpinupError, match=words):
        run_tiny(tmp_path / "run", actor_critic=actor_critic, ac_kwargs=ac_kwargs)
    assert not (tmp_path / "run" / "progress.txt").exists()
