"""Variant records: sac() picks one per kind of agent, and a new variant changes the update's
shape (critics, targets, policy delay, Adam's betas, training mode) without touching sac().

The two variants here exist only for these tests: TRI, three critics (the backup takes the
smallest target, the policy loss the mean, as REDQ does) with the policy stepped every
second update and Adam's beta_1 at 0.5; and JOINT, no target networks and critics with
BatchNormalization run in training mode on (s, a) and (s', a') together, as CrossQ does.
"""

import dataclasses
import json
import os

import gymnasium as gym
import keras
import numpy as np
import pytest
import tensorflow as tf
from helpers import TINY, run_tiny, straight_and_resumed

from spinup_tf2.algos.sac import core, variants
from spinup_tf2.algos.sac.losses import SACLosses
from spinup_tf2.errors import SpinupError

# --- TRI: three critics, a policy delay, other betas ---------------------------------------

class TriActorCritic(core.MLPActorCritic):
    """The default actor-critic with a third critic."""

    def __init__(self, observation_space, action_space, hidden_sizes=(32, 32),
                 activation=tf.nn.relu, obs_normalizer=None):
        super().__init__(observation_space, action_space, hidden_sizes, activation,
                         obs_normalizer)
        self.q3 = core.MLPQFunction(observation_space.shape[0], action_space.shape[0],
                                    hidden_sizes, activation, obs_normalizer, name="q3")

    @property
    def critics(self):
        return (self.q1, self.q2, self.q3)


def tri_losses(ac, ac_targ, o, a, r, o2, discount, noise, alpha):
    batch = tf.shape(o)[0]
    pi, logp_pi = ac.pi(o, noise=noise[:batch])
    pi_next, logp_pi_next = ac.pi(o2, noise=noise[batch:2 * batch])
    q = tuple(critic(o, a) for critic in ac.critics)
    q_pi = tf.reduce_mean(tf.stack([critic(o, pi) for critic in ac.critics]), axis=0)
    min_q_targ = tf.reduce_min(tf.stack([c(o2, pi_next) for c in ac_targ.critics]), axis=0)
    backup = tf.stop_gradient(r + discount * (min_q_targ - alpha * logp_pi_next))
    loss_pi = tf.reduce_mean(alpha * logp_pi - q_pi)
    loss_q = tuple(0.5 * tf.reduce_mean((qi - backup) ** 2) for qi in q)
    return SACLosses(loss_pi, loss_q, q, logp_pi)


TRI = dataclasses.replace(variants.MLP, name="tri", actor_critic=TriActorCritic,
                          losses=tri_losses, policy_delay=2,
                          adam_betas=(0.5, 0.999))
TriActorCritic.variant = TRI


def test_a_variant_with_three_critics_and_a_policy_delay_trains_through_sac(tmp_path):
    """Its columns, export, checkpoint and optimizer steps follow the record; a resumed run
    (the delay's count restored by name) equals the straight one."""
    (header, r), resumed = straight_and_resumed(tmp_path, actor_critic=TriActorCritic,
                                                alpha="auto")
    straight = str(tmp_path / "straight")
    for key in ("AverageQ3Vals", "MaxQ3Vals", "LossQ3", "LossQ2", "Alpha"):
        assert key in header
    assert header.index("AverageQ3Vals") < header.index("AverageLogPi") < header.index(
        "LossQ3") < header.index("Time")
    # 800 steps, update blocks of 50 at t = 100, 150, ..., 750: 700 critic updates, and
    # the policy and alpha step on every second one.
    with np.load(os.path.join(straight, "train_state", "arrays.npz")) as arrays:
        def steps(name, beta):
            return round(float(np.log(arrays[f"var:{name}"]) / np.log(beta)))
        assert steps("q_optimizer/beta_2_power", 0.999) == 700
        # beta_1 ** 700 is 0.5's, which underflows to 0 in float32 (0.9's: about 1e-32).
        assert arrays["var:q_optimizer/beta_1_power"] == 0.0
        assert steps("pi_optimizer/beta_2_power", 0.999) == 350
        assert steps("tuner/optimizer/beta_2_power", 0.999) == 350
        assert int(arrays["var:update/count"]) == 700
        assert "var:ac_targ/q3/q/1/kernel" in arrays.files
    saved = tf.saved_model.load(os.path.join(straight, "tf2_save"))
    assert {"q1", "q2", "q3", "mu", "pi"} <= set(saved.signatures)
    x, a = np.zeros((2, 3), np.float32), np.zeros((2, 1), np.float32)
    assert saved.signatures["q3"](x=x, a=a)["q"].shape == (2,)

    assert resumed == (header, r) and len(r) == 2


def test_the_three_critic_update_is_its_formula():
    """One update of TRI's losses: the Q losses are each critic's squared error to the backup
    (smallest target Q), and the mean of the three Qs enters the policy loss."""
    env = gym.make("Pendulum-v1")
    keras.utils.set_random_seed(3)
    ac = TriActorCritic(env.observation_space, env.action_space, (8,))
    ac_targ = TriActorCritic(env.observation_space, env.action_space, (8,))
    rng = np.random.default_rng(0)
    o, o2 = (rng.normal(size=(5, 3)).astype(np.float32) for _ in range(2))
    a, r = rng.uniform(-2, 2, (5, 1)).astype(np.float32), rng.normal(size=5).astype(np.float32)
    d, noise = np.zeros(5, np.float32), rng.normal(size=(10, 1)).astype(np.float32)
    out = tri_losses(ac, ac_targ, o, a, r, o2, 0.99 * (1 - d), noise, 0.2)
    pi2, logp2 = (x.numpy() for x in ac.pi(o2, noise=noise[5:]))
    targ = np.min([q(o2, pi2).numpy() for q in ac_targ.critics], axis=0)
    backup = r + 0.99 * (targ - 0.2 * logp2)
    assert len(out.loss_q) == len(out.q) == 3
    for q, loss in zip(ac.critics, out.loss_q):
        np.testing.assert_allclose(loss.numpy(), 0.5 * np.mean((q(o, a).numpy() - backup) ** 2),
                                   rtol=1e-5)


# --- JOINT: no targets, BatchNormalization in training mode ---------------------------------

class BatchNormQ(keras.Model):
    """Q(s, a) with BatchNormalization on its input: training mode normalises by the batch
    and moves the running moments (non-trainable), inference mode uses the moments."""

    def __init__(self, obs_dim, act_dim, hidden_sizes, **kwargs):
        super().__init__(**kwargs)
        self.norm = keras.layers.BatchNormalization(momentum=0.9)
        self.q = core.mlp([obs_dim + act_dim, *hidden_sizes, 1])
        self(tf.zeros((1, obs_dim)), tf.zeros((1, act_dim)))

    def call(self, obs, act, training=False):
        x = self.norm(tf.concat([obs, act], axis=-1), training=training)
        return tf.squeeze(self.q(x), -1)


class JointActorCritic(core.MLPActorCritic):
    def __init__(self, observation_space, action_space, hidden_sizes=(32, 32),
                 activation=tf.nn.relu):
        super().__init__(observation_space, action_space, hidden_sizes, activation)
        obs_dim, act_dim = observation_space.shape[0], action_space.shape[0]
        self.q1 = BatchNormQ(obs_dim, act_dim, hidden_sizes, name="q1")
        self.q2 = BatchNormQ(obs_dim, act_dim, hidden_sizes, name="q2")


def joint_losses(ac, ac_targ, o, a, r, o2, discount, noise, alpha):
    assert ac_targ is None  # the record says: no targets
    batch = tf.shape(o)[0]
    pi, logp_pi = ac.pi(o, noise=noise[:batch])
    pi_next, logp_pi_next = ac.pi(o2, noise=noise[batch:2 * batch])
    # One pass over (s, a) and (s', a'), in training mode: one set of batch statistics.
    joint_o, joint_a = tf.concat([o, o2], 0), tf.concat([a, pi_next], 0)
    q1, q1_next = tf.split(ac.q1(joint_o, joint_a, training=True), 2)
    q2, q2_next = tf.split(ac.q2(joint_o, joint_a, training=True), 2)
    min_q_next = tf.minimum(q1_next, q2_next)
    backup = tf.stop_gradient(r + discount * (min_q_next - alpha * logp_pi_next))
    q_pi = tf.minimum(ac.q1(o, pi), ac.q2(o, pi))  # inference mode
    loss_pi = tf.reduce_mean(alpha * logp_pi - q_pi)
    loss_q = (0.5 * tf.reduce_mean((q1 - backup) ** 2), 0.5 * tf.reduce_mean((q2 - backup) ** 2))
    return SACLosses(loss_pi, loss_q, (q1, q2), logp_pi)


JOINT = dataclasses.replace(variants.MLP, name="joint", actor_critic=JointActorCritic,
                            losses=joint_losses, targets=False)
JointActorCritic.variant = JOINT


def test_a_variant_without_targets_in_training_mode_trains_and_resumes_exactly(tmp_path):
    """No target networks are built or saved; the critics' running moments move in training
    mode, are in the checkpoint by name, and come back on resume."""
    straight_rows, resumed_rows = straight_and_resumed(tmp_path, actor_critic=JointActorCritic)
    assert straight_rows == resumed_rows and len(straight_rows[1]) == 2
    straight = str(tmp_path / "straight")
    with np.load(os.path.join(straight, "train_state", "arrays.npz")) as arrays:
        assert not any(k.startswith("var:ac_targ") for k in arrays.files)
        moments = arrays["var:ac/q1/norm/moving_mean"]
        assert np.abs(moments).max() > 0.1  # moved from its initial zeros
    config = json.load(open(os.path.join(straight, "config.json")))
    assert config["actor_critic"] == "JointActorCritic"


# --- Picking the record ---------------------------------------------------------------------

def test_sac_picks_the_record_of_the_actor_critic_and_the_spaces():
    box = gym.spaces.Box(-1.0, 1.0, (3,), np.float32)
    image = gym.spaces.Box(0, 255, (16, 16, 3), np.uint8)
    discrete = gym.spaces.Discrete(3)
    def pick(actor_critic, observation_space, action_space):
        return variants.pick_variant(actor_critic, {}, observation_space,
                                     isinstance(action_space, gym.spaces.Discrete))
    assert pick(core.MLPActorCritic, box, box) == (variants.MLP, core.MLPActorCritic)
    assert pick(core.MLPActorCritic, box, discrete) == (variants.DISCRETE,
                                                        core.DiscreteMLPActorCritic)
    assert pick(core.MLPActorCritic, image, box)[0] is variants.PIXELS
    assert pick("recurrent", box, box)[0] is variants.RECURRENT  # what --recurrent sends
    assert pick(TriActorCritic, box, box) == (TRI, TriActorCritic)
    with pytest.raises(SpinupError, match="names no variant.*'mlp', 'discrete'"):
        pick("lstm", box, box)
    with pytest.raises(SpinupError, match="recurrent actor-critic"):
        pick("recurrent", image, box)


def test_a_replay_buffer_handed_in_is_the_one_used(tmp_path):
    """sac(replay_buffer_class=...) builds the buffer from it (SB3's replay_buffer_class):
    here one that counts what it stores; the run trains on it and checkpoints it."""
    from spinup_tf2.algos.sac.buffers import ReplayBuffer

    made = []

    class CountingBuffer(ReplayBuffer):
        def __init__(self, obs_dim, act_dim, size):
            super().__init__(obs_dim, act_dim, size)
            self.stored = 0
            made.append(self)

        def store(self, *transition):
            self.stored += 1
            super().store(*transition)

    run_tiny(tmp_path / "run", epochs=1, replay_buffer_class=CountingBuffer)
    assert len(made) == 1 and made[0].stored == TINY["steps_per_epoch"]
    with np.load(tmp_path / "run" / "train_state" / "arrays.npz") as arrays:
        assert int(arrays["buf_size"]) == TINY["steps_per_epoch"]


# --- A user's own actor-critic, not a spinup_tf2 class: adapted once where it comes in ---

class PlainActorCritic:
    """An actor-critic as Spinning Up's docs describe one: Keras models pi, q1 and q2 and a
    trainable_variables property, no spinup_tf2 base class."""

    def __init__(self, observation_space, action_space, hidden_sizes=(32, 32)):
        obs_dim, act_dim = observation_space.shape[0], action_space.shape[0]
        self.pi = core.SquashedGaussianMLPActor(obs_dim, act_dim, hidden_sizes, tf.nn.relu,
                                                float(action_space.high[0]), None, name="pi")
        self.q1, self.q2 = (core.MLPQFunction(obs_dim, act_dim, hidden_sizes, tf.nn.relu, None,
                                              name=n) for n in ("q1", "q2"))

    @property
    def trainable_variables(self):
        return [v for m in (self.pi, self.q1, self.q2) for v in m.trainable_variables]


def test_a_plain_users_class_is_adapted_once_trains_resumes_and_ships(tmp_path):
    """sac() adapts the class once (ActorCritic's defaults for what it lacks, its own
    attributes first); it trains, resumes exactly, and its SavedModel acts."""
    adapted = core.adapt(PlainActorCritic)
    assert issubclass(adapted, PlainActorCritic) and issubclass(adapted, core.ActorCritic)
    assert adapted.__name__ == "PlainActorCritic" and core.adapt(core.MLPActorCritic) is (
        core.MLPActorCritic)
    assert adapted.trainable_variables is PlainActorCritic.trainable_variables  # its own first
    (header, r), resumed = straight_and_resumed(tmp_path, actor_critic=PlainActorCritic,
                                                alpha="auto")
    assert resumed == (header, r) and len(r) == 2
    assert "AverageQ2Vals" in header and "AverageQ3Vals" not in header
    config = json.load(open(os.path.join(tmp_path, "straight", "config.json")))
    assert config["actor_critic"] == "PlainActorCritic"
    saved = tf.saved_model.load(os.path.join(tmp_path, "straight", "tf2_save"))
    assert saved.mu(tf.zeros((2, 3))).shape == (2, 1)
