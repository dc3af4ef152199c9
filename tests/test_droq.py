"""DroQ (``actor_critic='droq'``, ``droq()``): the critics' layers in the paper's order,
dropout on in the losses and off in the export, and the variant through the real sac():
the policy stepped once per 20 critic updates, resume exact (dropout's generators are
checkpointed), bad settings and spaces refused."""
import json
import os

import gymnasium as gym
import numpy as np
import pytest
import tensorflow as tf
from helpers import TINY, pendulum, run_tiny, straight_and_resumed

from spinup_tf2.algos.sac import droq
from spinup_tf2.algos.sac.variants import VARIANTS
from spinup_tf2.errors import SpinupError
from spinup_tf2.family import EACH_STEP

SMALL = dict(hidden_sizes=(16, 16), dropout_rate=0.2)


def test_critic_layers_and_dropout_on_in_losses_off_in_the_export():
    env = gym.make("Pendulum-v1")
    ac = droq.DroQActorCritic(env.observation_space, env.action_space, **SMALL)
    kinds = [type(layer).__name__ for layer in ac.q1.hidden]
    assert kinds == ["Dense", "SparseDropout", "LayerNormalization"] * 2
    o, a = tf.random.normal((64, 3)), tf.random.normal((64, 1))
    first, second = ac.q1(o, a).numpy(), ac.q1(o, a).numpy()  # as the losses call it
    assert not np.allclose(first, second)  # a new dropout mask each call
    exported = [ac.critic(0, o, a).numpy() for _ in range(2)]
    np.testing.assert_array_equal(exported[0], exported[1])
    np.testing.assert_array_equal(exported[0], ac.q1(o, a, training=False).numpy())
    assert VARIANTS["droq"].policy_delay == EACH_STEP and VARIANTS["droq"].targets


@pytest.mark.parametrize("rate,shape,draws", [(0.2, (64, 16), 3000), (0.01, (256, 256), 40)])
def test_sparse_dropout_drops_each_unit_independently_at_its_rate(rate, shape, draws):
    """SparseDropout draws the gaps between dropped units; what comes out must be Keras'
    dropout in law: every unit (the last ones too) dropped with probability ``rate``,
    neighbours independently, the kept ones scaled by ``1 / (1 - rate)``."""
    layer = droq.SparseDropout(rate)
    x = tf.random.uniform(shape, 1.0, 2.0)
    outs = np.stack([layer(x, training=True).numpy() for _ in range(draws)]).reshape(draws, -1)
    flat = x.numpy().reshape(-1)
    dropped = outs == 0
    np.testing.assert_allclose(outs[~dropped], np.broadcast_to(flat / (1 - rate),
                                                               outs.shape)[~dropped], rtol=1e-6)
    sd = np.sqrt(rate * (1 - rate) / draws)
    if rate == 0.2:  # enough draws to judge each unit, its tail included, and each pair
        per_unit = dropped.mean(0)
        assert np.all(np.abs(per_unit - rate) < 5 * sd), (per_unit.min(), per_unit.max())
        assert abs(per_unit[-32:].mean() - rate) < 5 * sd / np.sqrt(32)
        both = (dropped[:, 0::2] & dropped[:, 1::2]).mean()  # disjoint neighbour pairs
        assert abs(both - rate ** 2) < 5 * np.sqrt(rate ** 2 * (1 - rate ** 2)
                                                   / (draws * flat.size // 2))
    else:  # DroQ's rate on DroQ's layer: the share dropped, and a new mask each call
        assert abs(dropped.mean() - rate) < 5 * sd / np.sqrt(flat.size)
        assert not np.array_equal(dropped[0], dropped[1])
    np.testing.assert_array_equal(layer(x).numpy(), x.numpy())  # training off: the input


def test_droq_trains_through_sac_and_resumes_exactly(tmp_path):
    """Dropout draws from Keras' seeded generators, whose states are checkpointed: the
    resumed run is the straight one, row for row."""
    (header, r), resumed = straight_and_resumed(tmp_path, actor_critic="droq", ac_kwargs=SMALL,
                                                alpha="auto", updates_per_step=2)
    assert resumed == (header, r) and len(r) == 2
    assert {"AverageQ2Vals", "LossQ2", "Alpha"} <= set(header)
    straight = str(tmp_path / "straight")
    with np.load(os.path.join(straight, "train_state", "arrays.npz")) as arrays:
        # LayerNorm's scale in the targets, dropout's generator state in each critic
        assert {"var:ac_targ/q1/2/gamma", "var:ac/q1/1/seed_generator_state"} <= set(arrays.files)
    saved = tf.saved_model.load(os.path.join(straight, "tf2_save"))
    x, a = np.ones((2, 3), np.float32), np.ones((2, 1), np.float32)
    q = [saved.signatures["q1"](x=x, a=a)["q"].numpy() for _ in range(2)]
    np.testing.assert_array_equal(q[0], q[1])  # no dropout in the export


def test_droq_runs_with_its_own_defaults(tmp_path):
    from spinup_tf2 import droq as droq_fn

    out = tmp_path / "run"
    droq_fn(pendulum, epochs=1, steps_per_epoch=300, start_steps=200,
            update_after=250, update_every=50, num_test_episodes=1, replay_size=1000,
            ac_kwargs=dict(hidden_sizes=(16, 16)), logger_kwargs=dict(output_dir=str(out)))
    config = json.loads((out / "config.json").read_text())
    assert (config["actor_critic"], config["batch_size"], config["alpha"], config["lr"],
            config["updates_per_step"]) == ("DroQActorCritic", 256, "auto", 3e-4, 20)


@pytest.mark.parametrize("ac_kwargs,words", [(dict(dropout_rate=1.0), "dropout_rate=1.0"),
                                             (dict(dropout_rate="x"), "dropout_rate='x'")])
def test_bad_droq_settings_are_refused_before_anything_is_written(tmp_path, ac_kwargs, words):
    with pytest.raises(SpinupError, match=words):
        run_tiny(tmp_path / "run", actor_critic="droq", ac_kwargs=ac_kwargs)
    assert not (tmp_path / "run" / "progress.txt").exists()


def test_droq_refuses_discrete_actions(tmp_path):
    from spinup_tf2 import sac

    with pytest.raises(SpinupError, match="a Discrete action space with DroQ"):
        sac(lambda: gym.make("CartPole-v1"), actor_critic="droq", **TINY,
            logger_kwargs=dict(output_dir=str(tmp_path / "run")))
