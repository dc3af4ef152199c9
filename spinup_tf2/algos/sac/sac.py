"""Soft Actor-Critic in TensorFlow 2 / Keras 3, after Spinning Up's ``sac``.

The SAC math is in :func:`make_update`; :func:`sac` is the training loop.
Updates run ``update_every`` at a time in one compiled call, on minibatches
drawn from the replay buffer in one numpy gather per block; acting uses a
numpy copy of the policy weights, refreshed after each block.
"""

from __future__ import annotations

import json
import os.path as osp
import sys
import time
from typing import Callable

import numpy as np
from gymnasium import spaces

from spinup_tf2.algos.sac import core
from spinup_tf2.utils.checkpoint import load_train_state, rng_state, save_train_state, set_rng_state
from spinup_tf2.utils.errors import SpinupError
from spinup_tf2.utils.logx import EpochLogger
from spinup_tf2.utils.mpi_tf2 import make_grad_averager, sync_params
from spinup_tf2.utils.mpi_tools import num_procs, proc_id
from spinup_tf2.utils.serialization_utils import convert_json
from spinup_tf2.utils.tf_setup import import_tensorflow

tf = import_tensorflow()
import keras  # noqa: E402

BATCH_KEYS = ("obs", "act", "rew", "obs2", "done")
# With n discrete actions and alpha='auto', the target entropy is this fraction of log(n)
# (the entropy of the uniform policy).
DISCRETE_ENTROPY_FRACTION = 0.5
LOGGED_KEYS = ("LossPi", "LossQ1", "LossQ2", "Q1Vals", "Q2Vals", "LogPi")


class ReplayBuffer:
    """Transitions (o, a, r, o2, d) in preallocated float32 arrays of a fixed
    capacity; when full, each new transition replaces the oldest. Minibatches
    are drawn uniformly, with replacement.
    """

    def __init__(self, obs_dim: int, act_dim: int, size: int):
        self.obs_buf = np.zeros((size, obs_dim), dtype=np.float32)
        self.obs2_buf = np.zeros((size, obs_dim), dtype=np.float32)
        self.act_buf = np.zeros((size, act_dim), dtype=np.float32)
        self.rew_buf = np.zeros(size, dtype=np.float32)
        self.done_buf = np.zeros(size, dtype=np.float32)
        self.ptr, self.size, self.max_size = 0, 0, size

    def store(self, obs, act, rew, next_obs, done) -> None:
        """Add one transition, overwriting the oldest when full."""
        self.obs_buf[self.ptr] = obs
        self.obs2_buf[self.ptr] = next_obs
        self.act_buf[self.ptr] = act
        self.rew_buf[self.ptr] = rew
        self.done_buf[self.ptr] = done
        self.ptr = (self.ptr + 1) % self.max_size
        self.size = min(self.size + 1, self.max_size)

    def state_arrays(self) -> dict:
        """The filled part of the buffer and its pointers, for a checkpoint."""
        n = self.size
        return dict(buf_obs=self.obs_buf[:n], buf_obs2=self.obs2_buf[:n],
                    buf_act=self.act_buf[:n], buf_rew=self.rew_buf[:n],
                    buf_done=self.done_buf[:n], buf_ptr=np.array(self.ptr),
                    buf_size=np.array(self.size))

    def load_state_arrays(self, arrays: dict) -> None:
        """Refill the buffer from :meth:`state_arrays`."""
        n = int(arrays["buf_size"])
        if n > self.max_size:
            raise SpinupError(f"The checkpoint's replay buffer holds {n} transitions, more than "
                              f"replay_size={self.max_size}.")
        for name in ("obs", "obs2", "act", "rew", "done"):
            getattr(self, name + "_buf")[:n] = arrays["buf_" + name]
        self.ptr, self.size = int(arrays["buf_ptr"]), n

    def sample_batch(self, batch_size: int = 32, rng: np.random.Generator | None = None,
                     n_batches: int | None = None) -> dict:
        """A minibatch of ``batch_size`` transitions, or with ``n_batches`` a
        stack of that many independent minibatches (leading dimension
        ``n_batches``), drawn in one gather.

        Returns a dict with keys ``obs, act, rew, obs2, done``.
        """
        rng = np.random.default_rng() if rng is None else rng
        shape = (batch_size,) if n_batches is None else (n_batches, batch_size)
        idxs = rng.integers(0, self.size, size=shape)
        return dict(obs=self.obs_buf[idxs], obs2=self.obs2_buf[idxs], act=self.act_buf[idxs],
                    rew=self.rew_buf[idxs], done=self.done_buf[idxs])


def build_actor_critics(actor_critic, observation_space, action_space, ac_kwargs: dict):
    """The main actor-critic and its target copy, the targets starting equal to
    the main networks."""
    ac = actor_critic(observation_space, action_space, **ac_kwargs)
    ac_targ = actor_critic(observation_space, action_space, **ac_kwargs)
    for v_main, v_targ in zip(ac.trainable_variables, ac_targ.trainable_variables):
        v_targ.assign(v_main)
    return ac, ac_targ


class Adam:
    """Adam as TF1's ``AdamOptimizer`` (which Spinning Up's TF1 SAC used) computes it:
    ``lr_t = lr * sqrt(1 - beta2^t) / (1 - beta1^t)``, then one fused
    ``ResourceApplyAdam`` kernel per variable.

    One kernel per variable instead of a dozen small ops keeps the compiled
    update short, which is most of its cost on a CPU. ``variables`` lists the
    optimizer's state (moments and beta powers) for checkpoints.
    """

    def __init__(self, var_list: list, learning_rate: float, beta_1: float = 0.9,
                 beta_2: float = 0.999, epsilon: float = 1e-8):
        # Keras 3 variables wrap a tf.Variable; the fused kernels need the latter.
        self.var_list = [v.value if isinstance(v, keras.Variable) else v for v in var_list]
        self.lr, self.beta_1, self.beta_2, self.epsilon = learning_rate, beta_1, beta_2, epsilon
        self.m = [tf.Variable(tf.zeros_like(v), trainable=False) for v in self.var_list]
        self.v = [tf.Variable(tf.zeros_like(v), trainable=False) for v in self.var_list]
        self.beta_1_power = tf.Variable(1.0, trainable=False)
        self.beta_2_power = tf.Variable(1.0, trainable=False)

    @property
    def variables(self) -> list:
        """The optimizer's state."""
        return self.m + self.v + [self.beta_1_power, self.beta_2_power]

    def apply(self, grads: list) -> None:
        """One Adam step of every variable along its gradient."""
        b1p = self.beta_1_power.assign(self.beta_1_power * self.beta_1)
        b2p = self.beta_2_power.assign(self.beta_2_power * self.beta_2)
        for var, m, v, g in zip(self.var_list, self.m, self.v, grads):
            tf.raw_ops.ResourceApplyAdam(
                var=var.handle, m=m.handle, v=v.handle, beta1_power=b1p, beta2_power=b2p,
                lr=self.lr, beta1=self.beta_1, beta2=self.beta_2, epsilon=self.epsilon, grad=g)


def make_optimizers(ac, lr: float):
    """Separate Adam optimizers for the policy and the Q functions, with TF1's
    Adam defaults (epsilon 1e-8) as in Spinning Up."""
    pi_optimizer = Adam(ac.pi.trainable_variables, lr)
    q_optimizer = Adam(ac.q1.trainable_variables + ac.q2.trainable_variables, lr)
    return pi_optimizer, q_optimizer


class EntropyTuner:
    """Learns alpha = exp(log_alpha) so that the policy's entropy tracks
    ``target_entropy`` (SAC v2: Haarnoja et al. 2018, "Soft Actor-Critic
    Algorithms and Applications"), by Adam on
    ``loss_alpha = -mean(log_alpha * (logp_pi + target_entropy))``."""

    def __init__(self, initial_alpha: float, target_entropy: float, lr: float):
        self.target_entropy = float(target_entropy)
        self.log_alpha = tf.Variable(np.log(initial_alpha), dtype=tf.float32, trainable=False)
        self.optimizer = Adam([self.log_alpha], lr)

    @property
    def variables(self) -> list:
        """log_alpha and its optimizer's state."""
        return [self.log_alpha] + self.optimizer.variables


def parse_alpha(alpha, target_entropy, default_target: float):
    """``(alpha, tuner_args)`` from sac()'s ``alpha`` and ``target_entropy``.

    A number >= 0 is a fixed alpha (tuner_args None); ``'auto'`` learns alpha
    from 1.0, ``'auto_<x>'`` from x; the target entropy defaults to
    ``default_target`` (-act_dim, or a fraction of log(n) for n discrete actions).
    """
    if isinstance(alpha, str):
        head, _, start = alpha.partition("_")
        try:
            initial = float(start) if start else 1.0
        except ValueError:
            initial = -1.0
        if head != "auto" or not (initial > 0 and np.isfinite(initial)):
            raise SpinupError(
                f"sac() got alpha={alpha!r}: alpha is a number >= 0 (fixed), 'auto' (learned, "
                f"starting from 1.0) or 'auto_<x>' with x > 0 (learned, starting from x), "
                f"e.g. 'auto_0.1'.")
        if target_entropy is None:
            target_entropy = float(default_target)
        elif not (isinstance(target_entropy, (int, float)) and np.isfinite(target_entropy)):
            raise SpinupError(f"sac() got target_entropy={target_entropy!r}; it must be a "
                              f"number (the default here is {default_target:g}).")
        return initial, (initial, float(target_entropy))
    if target_entropy is not None:
        raise SpinupError(
            f"sac() got target_entropy={target_entropy!r} with a fixed alpha={alpha!r}: a "
            f"target entropy only matters when alpha is learned. Use alpha='auto' (or "
            f"'auto_<initial alpha>'), or drop target_entropy.")
    return alpha, None


def continuous_losses(ac, ac_targ, o, a, r, o2, d, noise, alpha, gamma):
    """SAC's losses for continuous actions: ``(loss_pi, loss_q1, loss_q2, q1, q2, logp_pi)``."""
    batch = tf.shape(o)[0]
    # Independent products (pi at s and at s', q1 and q2) run side by side.
    pi, logp_pi = ac.pi(o, noise=noise[:batch])
    pi_next, logp_pi_next = ac.pi(o2, noise=noise[batch:])

    q1 = ac.q1(o, a)
    q2 = ac.q2(o, a)
    q1_pi = ac.q1(o, pi)
    q2_pi = ac.q2(o, pi)
    q1_targ = ac_targ.q1(o2, pi_next)
    q2_targ = ac_targ.q2(o2, pi_next)

    # Entropy-regularized Bellman backup, with the clipped double-Q trick.
    min_q_targ = tf.minimum(q1_targ, q2_targ)
    backup = tf.stop_gradient(r + gamma * (1 - d) * (min_q_targ - alpha * logp_pi_next))

    # Soft actor-critic losses (Q losses with TF1 SAC's factor 1/2).
    loss_pi = tf.reduce_mean(alpha * logp_pi - tf.minimum(q1_pi, q2_pi))
    loss_q1 = 0.5 * tf.reduce_mean((q1 - backup) ** 2)
    loss_q2 = 0.5 * tf.reduce_mean((q2 - backup) ** 2)
    return loss_pi, loss_q1, loss_q2, q1, q2, logp_pi


def discrete_losses(ac, ac_targ, o, a, r, o2, d, noise, alpha, gamma):
    """SAC's losses for discrete actions (Christodoulou 2019): the policy's
    expectations are sums over all actions instead of samples; ``logp_pi`` is
    the expected log-probability E[log pi(.|s)] (minus the entropy)."""
    del noise  # nothing is sampled
    probs, log_probs = ac.pi.dist(o)
    probs_next, log_probs_next = ac.pi.dist(o2)

    q1_all = ac.q1(o)
    q2_all = ac.q2(o)
    a_idx = tf.cast(a[:, 0], tf.int32)  # the buffer holds action indices as floats
    q1 = tf.gather(q1_all, a_idx, batch_dims=1)
    q2 = tf.gather(q2_all, a_idx, batch_dims=1)
    q1_targ = ac_targ.q1(o2)
    q2_targ = ac_targ.q2(o2)

    # Soft state value of s' under the current policy, with the clipped double-Q trick.
    min_q_targ = tf.minimum(q1_targ, q2_targ)
    v_next = tf.reduce_sum(probs_next * (min_q_targ - alpha * log_probs_next), axis=-1)
    backup = tf.stop_gradient(r + gamma * (1 - d) * v_next)

    loss_pi = tf.reduce_mean(tf.reduce_sum(
        probs * (alpha * log_probs - tf.minimum(q1_all, q2_all)), axis=-1))
    loss_q1 = 0.5 * tf.reduce_mean((q1 - backup) ** 2)
    loss_q2 = 0.5 * tf.reduce_mean((q2 - backup) ** 2)
    logp_pi = tf.reduce_sum(probs * log_probs, axis=-1)
    return loss_pi, loss_q1, loss_q2, q1, q2, logp_pi


def make_polyak_update(ac, ac_targ, polyak: float) -> Callable:
    """Return ``update_targets()``: polyak averaging of every target variable,
    ``targ <- polyak * targ + (1 - polyak) * main``."""
    var_pairs = [(v.value, vt.value) for v, vt in zip(ac.trainable_variables,
                                                       ac_targ.trainable_variables)]

    def update_targets():
        # Written as targ -= (1 - polyak) * (targ - main): one kernel a variable.
        for v_main, v_targ in var_pairs:
            tf.raw_ops.ResourceApplyGradientDescent(var=v_targ.handle, alpha=1.0 - polyak,
                                                    delta=v_targ - v_main)
    return update_targets


def make_update(ac, ac_targ, pi_optimizer, q_optimizer, gamma: float, alpha: float,
                polyak: float, tuner: EntropyTuner | None = None,
                average_grads: Callable | None = None) -> Callable:
    """Return ``update(obs, act, rew, obs2, done, noise)``: one SAC gradient step.

    ``noise`` (shape ``[2 * batch, act_dim]``) is the standard normal draw for
    the policy's actions at ``obs`` (first half) and ``obs2`` (second half);
    passing it in makes every update a pure function of its inputs. As in
    Spinning Up's TF1 SAC, all losses come from one forward pass, then the
    policy step, the Q step, and the polyak averaging of all target variables.
    With a ``tuner``, alpha is ``exp(log_alpha)`` and log_alpha takes an Adam
    step too. With ``average_grads`` (data-parallel runs over MPI), all
    gradients go through it, as one list, before any is applied. The returned
    dict holds the diagnostics named in ``update.logged_keys``.
    """
    pi_vars = ac.pi.trainable_variables
    q_vars = ac.q1.trainable_variables + ac.q2.trainable_variables
    n_pi, n_q = len(pi_vars), len(q_vars)
    update_targets = make_polyak_update(ac, ac_targ, polyak)

    compute_losses = discrete_losses if getattr(ac, "discrete", False) else continuous_losses

    def update(o, a, r, o2, d, noise):
        alpha_t = tf.exp(tuner.log_alpha) if tuner is not None else alpha
        with tf.GradientTape(persistent=True) as tape:
            loss_pi, loss_q1, loss_q2, q1, q2, logp_pi = compute_losses(
                ac, ac_targ, o, a, r, o2, d, noise, alpha_t, gamma)
            loss_q = loss_q1 + loss_q2

        grads = tape.gradient(loss_pi, pi_vars) + tape.gradient(loss_q, q_vars)
        info = dict(LossPi=loss_pi, LossQ1=loss_q1, LossQ2=loss_q2, Q1Vals=q1, Q2Vals=q2,
                    LogPi=logp_pi)
        if tuner is not None:
            entropy_gap = tf.stop_gradient(logp_pi) + tuner.target_entropy
            info.update(Alpha=alpha_t, LossAlpha=-tf.reduce_mean(tuner.log_alpha * entropy_gap))
            grads.append(-tf.reduce_mean(entropy_gap))  # d loss_alpha / d log_alpha
        if average_grads is not None:  # data-parallel: the same mean gradient on every process
            grads = average_grads(grads)
        pi_optimizer.apply(grads[:n_pi])
        q_optimizer.apply(grads[n_pi:n_pi + n_q])
        if tuner is not None:
            tuner.optimizer.apply(grads[-1:])
        update_targets()
        return info

    update.logged_keys = LOGGED_KEYS + (("Alpha", "LossAlpha") if tuner is not None else ())
    return update


def make_update_block(update: Callable, jit_compile: bool = False) -> Callable:
    """Compile ``update`` looped over a block: ``block(obs, act, rew, obs2, done,
    noise)``, each argument stacked with a leading dimension of n updates,
    runs the n updates in order inside one call and returns the diagnostics
    stacked the same way."""

    keys = update.logged_keys

    @tf.function(jit_compile=jit_compile, reduce_retracing=True)
    def update_block(o, a, r, o2, d, noise):
        n = tf.shape(o)[0]
        out = {k: tf.TensorArray(tf.float32, size=n) for k in keys}
        for j in tf.range(n):
            info = update(o[j], a[j], r[j], o2[j], d[j], noise[j])
            out = {k: out[k].write(j, info[k]) for k in keys}
        return {k: out[k].stack() for k in keys}

    return update_block


def check_sac_args(steps_per_epoch, epochs, replay_size, gamma, polyak, lr, alpha, batch_size,
                   start_steps, update_after, update_every, num_test_episodes, max_ep_len,
                   save_freq, target_entropy=None) -> None:
    """Raise :class:`SpinupError` naming the first argument ``sac()`` cannot use."""

    def need(ok, msg):
        if not ok:
            raise SpinupError(msg)

    def is_int(x):
        return isinstance(x, (int, np.integer)) and not isinstance(x, bool)

    def is_num(x):
        return isinstance(x, (int, float, np.integer, np.floating)) and not isinstance(x, bool)

    for name, val, low in (("steps_per_epoch", steps_per_epoch, 1), ("epochs", epochs, 1),
                           ("replay_size", replay_size, 1), ("batch_size", batch_size, 1),
                           ("update_every", update_every, 1), ("max_ep_len", max_ep_len, 1),
                           ("save_freq", save_freq, 1), ("start_steps", start_steps, 0),
                           ("update_after", update_after, 0),
                           ("num_test_episodes", num_test_episodes, 0)):
        need(is_int(val) and val >= low,
             f"sac() got {name}={val!r}, but {name} must be a whole number >= {low}.")
    for name, val in (("gamma", gamma), ("polyak", polyak)):
        need(is_num(val) and 0.0 <= val <= 1.0,
             f"sac() got {name}={val!r}, but {name} must be a number in [0, 1].")
    need(is_num(lr) and lr > 0, f"sac() got lr={lr!r}, but the learning rate must be a number > 0.")
    if not isinstance(alpha, str):
        need(is_num(alpha) and alpha >= 0,
             f"sac() got alpha={alpha!r}, but alpha (the entropy coefficient) must be a number "
             f">= 0, 'auto' or 'auto_<initial alpha>'.")
    parse_alpha(alpha, target_entropy, -1.0)  # the form of alpha and target_entropy
    first_update = -(-update_after // update_every) * update_every  # first t >= update_after
    need(first_update < steps_per_epoch,
         f"sac() got steps_per_epoch={steps_per_epoch} with update_after={update_after} and "
         f"update_every={update_every}: the first update would come at step {first_update}, "
         f"after the first epoch ends, so epoch 1 would have no Q values or losses to log. "
         f"Make steps_per_epoch larger than {first_update}, or update_after smaller.")


def check_spaces(observation_space, action_space) -> None:
    """Raise :class:`SpinupError` if the spaces are not what SAC handles here:
    1-D Box observations and Box actions with one symmetric bound."""
    if isinstance(action_space, spaces.Discrete):
        if action_space.start != 0 or action_space.n < 2:
            raise SpinupError(f"sac() needs a Discrete action space of at least 2 actions "
                              f"numbered from 0; this one is {action_space}.")
    elif not isinstance(action_space, spaces.Box):
        raise SpinupError(
            f"sac() needs a continuous (gymnasium.spaces.Box) or a Discrete action space, but "
            f"this environment's action space is {action_space}. Flatten it or pick one part "
            f"with a wrapper.")
    low = np.asarray(getattr(action_space, "low", -1.0))
    high = np.asarray(getattr(action_space, "high", 1.0))
    bad_box = (len(action_space.shape) != 1 or not np.all(np.isfinite(high))
               or not np.all(high > 0) or not np.allclose(high, high.flat[0])
               or not np.allclose(low, -high))
    if isinstance(action_space, spaces.Box) and bad_box:
        raise SpinupError(
            f"sac() needs 1-D actions bounded by the same [-a, a] in every dimension (it squashes "
            f"actions with a * tanh), but this action space has low={low.tolist()} and "
            f"high={high.tolist()}. Rescale the actions with a wrapper such as "
            f"gymnasium.wrappers.RescaleAction(env, -1, 1).")
    if not isinstance(observation_space, spaces.Box) or len(observation_space.shape) != 1:
        raise SpinupError(
            f"sac() needs 1-D (gymnasium.spaces.Box) observations for its MLP networks, but this "
            f"environment's observation space is {observation_space}. Flatten it with "
            f"gymnasium.wrappers.FlattenObservation(env).")


def sac(env_fn, actor_critic=core.MLPActorCritic, ac_kwargs=dict(), seed=0,
        steps_per_epoch=4000, epochs=100, replay_size=int(1e6), gamma=0.99,
        polyak=0.995, lr=1e-3, alpha=0.2, batch_size=100, start_steps=10000,
        update_after=1000, update_every=50, num_test_episodes=10, max_ep_len=1000,
        logger_kwargs=dict(), save_freq=1, target_entropy=None, resume=False,
        normalize_obs=False):
    """
    Soft Actor-Critic (SAC), as Spinning Up runs it, in TensorFlow 2 / Keras 3.

    Under ``mpirun -np N`` (or ``--cpu N``) it runs data-parallel: each process
    has its own environments and replay buffer, every update averages the
    gradients of all processes, and ``steps_per_epoch``, ``start_steps``,
    ``update_after`` and ``num_test_episodes`` count over all of them.


    Args:
        env_fn : Makes one environment (gymnasium API) per call; SAC makes
            two, for training and for testing. Observations: a 1-D Box.
            Actions: a Box bounded by the same [-a, a] in every dimension, or
            Discrete (then SAC for discrete actions is used).

        actor_critic: Called as ``actor_critic(observation_space,
            action_space, **ac_kwargs)``; returns an object with Keras models
            ``pi``, ``q1``, ``q2`` and a ``trainable_variables`` property
            listing their variables. The models are called as:

            ===========  ================  ======================================
            Call         Output Shape      Description
            ===========  ================  ======================================
            ``pi(x)``    (batch, act_dim)  | A tuple: actions sampled from the
                         and (batch,)      | policy (a reparameterised, squashed
                                           | Gaussian sample) and their log
                                           | probabilities. Keyword arguments
                                           | ``deterministic`` (act with the mean),
                                           | ``with_logprob`` and ``noise`` (the
                                           | standard normal draw to use).
            ``q1(x,a)``  (batch,)          | The first critic's Q(x, a).
            ``q2(x,a)``  (batch,)          | The second critic's Q(x, a); SAC
                                           | uses the smaller of the two.
            ===========  ================  ======================================

        ac_kwargs (dict): Passed on to ``actor_critic`` (for the default:
            ``hidden_sizes``, ``activation``).

        seed (int): Seed for random number generators: the networks' initial
            weights, the environments, random exploration and minibatches.
            The same seed on the same machine gives the same run.

        steps_per_epoch (int): Environment steps per epoch; one row of
            progress.txt (and one checkpoint) per epoch.

        epochs (int): How many epochs the run lasts.

        replay_size (int): Capacity of the replay buffer, in transitions.

        gamma (float): Discount factor, in [0, 1].

        polyak (float): Weight of the old target in the averaging that moves
            the target networks after every update:

            .. math:: \\theta_{\\text{targ}} \\leftarrow
                \\rho \\theta_{\\text{targ}} + (1-\\rho) \\theta

            with :math:`\\rho` = polyak, in [0, 1] (close to 1: slow targets).

        lr (float): Adam's learning rate for the policy, the Q functions and
            (when learned) alpha.

        alpha (float or str): Weight of the entropy bonus (the inverse of the
            reward scale of the first SAC paper). A number keeps it fixed.
            ``'auto'`` learns it (automatic entropy tuning, starting from 1.0)
            so that the policy's entropy tracks ``target_entropy``;
            ``'auto_0.1'`` starts from 0.1. When learned,
            progress.txt gets the columns ``Alpha`` and ``LossAlpha`` after
            ``Time``.

        batch_size (int): Transitions per minibatch.

        start_steps (int): For this many first steps, actions are drawn
            uniformly from the action space instead of from the policy, to
            explore.

        update_after (int): No updates before this many environment steps,
            so that the first minibatches come from a buffer with some variety.

        update_every (int): Updates come in blocks: after every
            ``update_every`` environment steps, ``update_every`` updates, so
            there is one update per step on average. Each block runs as one
            compiled TensorFlow call.

        num_test_episodes (int): Episodes run with the deterministic policy
            at the end of each epoch (the TestEpRet columns).

        max_ep_len (int): Episodes are cut at this length. Reaching it ends
            the episode but is not stored as a terminal state (nor is the
            environment's own time limit).

        logger_kwargs (dict): Keyword args for EpochLogger: ``output_dir``,
            ``exp_name``, and ``tensorboard=True`` to also write TensorBoard
            scalars to ``output_dir/tb/``.

        save_freq (int): Save every ``save_freq`` epochs: the current networks
            (``tf2_save/``, ``vars.pkl``) and the training checkpoint
            (``train_state/``: networks, targets, optimizer states, alpha,
            replay buffer, random-generator states, the episode in progress).
            The last epoch is always saved.

        target_entropy (float): The entropy alpha is tuned towards when
            ``alpha`` is ``'auto...'`` (default ``-act_dim``; with n discrete
            actions ``0.5 * log(n)``).

        resume (bool): Continue the run in ``logger_kwargs['output_dir']``
            from its last training checkpoint, appending to its progress.txt.
            The result is the same as if the run had never stopped. The other
            arguments must match the run's config.json, except ``epochs``
            (which may grow) and ``save_freq``.

        normalize_obs (bool): Normalize observations with their running mean
            and variance (updated before each block of updates from the
            observations collected since the last one), inside the models, so
            the SavedModel takes raw observations. The actor-critic must
            accept an ``obs_normalizer`` keyword (the default one does).

    """
    config = dict(locals())
    check_sac_args(steps_per_epoch, epochs, replay_size, gamma, polyak, lr, alpha, batch_size,
                   start_steps, update_after, update_every, num_test_episodes, max_ep_len,
                   save_freq, target_entropy)
    if not callable(env_fn):
        raise SpinupError(f"sac() needs env_fn to be a function that makes the environment, "
                          f"e.g. lambda: gymnasium.make('Pendulum-v1'); got {env_fn!r}.")
    env, test_env = env_fn(), env_fn()
    if normalize_obs and not isinstance(env.observation_space, spaces.Box):
        raise SpinupError(f"normalize_obs=True needs a Box observation space (running mean "
                          f"and variance per dimension), but this environment's is "
                          f"{env.observation_space}. Drop normalize_obs or flatten the "
                          f"observations (gymnasium.wrappers.FlattenObservation).")
    check_spaces(env.observation_space, env.action_space)
    obs_dim = env.observation_space.shape[0]
    discrete = isinstance(env.action_space, spaces.Discrete)
    # act_dim: the width of an action in the buffer and of the acting noise.
    act_dim = 1 if discrete else env.action_space.shape[0]
    n_noise = int(env.action_space.n) if discrete else act_dim
    if discrete and actor_critic is core.MLPActorCritic:
        actor_critic = core.DiscreteMLPActorCritic
        config["actor_critic"] = actor_critic
    alpha, tuner_args = parse_alpha(
        alpha, target_entropy,
        DISCRETE_ENTROPY_FRACTION * np.log(n_noise) if discrete else -float(act_dim))
    # Data-parallel over MPI: steps_per_epoch, start_steps, update_after and
    # num_test_episodes count over all processes; each takes its share.
    n_procs = num_procs()
    if n_procs > 1 and resume:
        raise SpinupError(f"resume=True is not available for data-parallel runs ({n_procs} MPI "
                          f"processes): their checkpoints would need every process's buffer "
                          f"and environments. Resume runs made with one process.")
    local_steps_per_epoch = steps_per_epoch // n_procs
    local_start_steps, local_update_after = start_steps // n_procs, update_after // n_procs
    local_test_episodes = -(-num_test_episodes // n_procs)
    # The env's registered name, so test_policy can rebuild it without vars.pkl.
    config["env_name"] = env.spec.id if env.spec is not None else None
    checkpoint = load_checkpoint_for_resume(config, logger_kwargs) if resume else None

    logger = EpochLogger(**logger_kwargs,
                         append_after=checkpoint[1]["epoch"] if checkpoint else None)
    config["logger"] = logger
    logger.save_config(config)

    keras.utils.set_random_seed(seed)  # Python, numpy and TensorFlow: the initial weights
    seed += 10_000 * proc_id()  # each process explores and samples differently
    rng = np.random.default_rng(seed)  # exploration noise and minibatches
    env.action_space.seed(seed)

    # Create actor-critic module and target networks (sharing the observation statistics)
    normalizer = core.ObsNormalizer(obs_dim, name="obs_normalizer") if normalize_obs else None
    try:
        ac, ac_targ = build_actor_critics(
            actor_critic, env.observation_space, env.action_space,
            dict(ac_kwargs, obs_normalizer=normalizer) if normalize_obs else ac_kwargs)
    except TypeError as err:
        if normalize_obs and "obs_normalizer" in str(err):
            raise SpinupError(f"normalize_obs=True, but the actor_critic "
                              f"{getattr(actor_critic, '__name__', actor_critic)} does not "
                              f"take an obs_normalizer argument ({err}).") from None
        raise

    replay_buffer = ReplayBuffer(obs_dim=obs_dim, act_dim=act_dim, size=replay_size)

    var_counts = tuple(core.count_vars(m) for m in (ac.pi, ac.q1, ac.q2))
    logger.log("\nNumber of parameters: \t pi: %d, \t q1: %d, \t q2: %d, \t total: %d\n"
               % (var_counts + (sum(var_counts),)))

    sync_params(ac.trainable_variables + ac_targ.trainable_variables)
    pi_optimizer, q_optimizer = make_optimizers(ac, lr)
    tuner = EntropyTuner(*tuner_args, lr) if tuner_args else None
    update_block = make_update_block(make_update(
        ac, ac_targ, pi_optimizer, q_optimizer, gamma, alpha, polyak, tuner,
        average_grads=make_grad_averager()))

    logger.setup_tf2_saver(core.ActorCriticExport(ac, obs_dim, n_noise))
    get_action = make_get_action(ac, rng, n_noise, discrete)

    # Everything a checkpoint holds, in a fixed order.
    state_vars = (ac.trainable_variables + ac_targ.trainable_variables + pi_optimizer.variables
                  + q_optimizer.variables + (tuner.variables if tuner else [])
                  + (normalizer.weights if normalizer else []))
    loop = dict(t=0, epoch=0, saved_epoch=0, ep_ret=0.0, ep_len=0, elapsed=0.0,
                test_seed=seed + 10_000, new_obs=[],
                episode_reset=dict(seed=seed), episode_actions=[])

    def reset_env():
        # Remember how this episode began, so a resumed run can replay it exactly.
        loop["episode_reset"] = dict(rng=rng_state(env.unwrapped.np_random))
        loop["episode_actions"] = []
        return env.reset()[0]

    def test_agent():
        for j in range(local_test_episodes):
            o, _ = test_env.reset(seed=loop.pop("test_seed", None))
            ep_ret, ep_len, done = 0.0, 0, False
            while not done and ep_len < max_ep_len:
                o, r, terminated, truncated, _ = test_env.step(get_action(o, True))
                ep_ret += r
                ep_len += 1
                done = terminated or truncated
            logger.store(TestEpRet=ep_ret, TestEpLen=ep_len)

    def save_checkpoint():
        arrays = {f"var{i}": v.numpy() for i, v in enumerate(state_vars)}
        arrays.update(replay_buffer.state_arrays())
        state = dict(loop, normalizer=normalizer.state() if normalizer else None,
                     rng=rng_state(rng), action_space_rng=rng_state(
            env.action_space.np_random), test_env_rng=rng_state(test_env.unwrapped.np_random),
            episode_actions=np.array(loop["episode_actions"]))
        save_train_state(logger.output_dir, arrays, state)

    total_steps = local_steps_per_epoch * epochs
    o = env.reset(seed=seed)[0]
    if checkpoint is not None:
        arrays, state = checkpoint
        for i, v in enumerate(state_vars):
            v.assign(arrays[f"var{i}"])
        replay_buffer.load_state_arrays(arrays)
        o = restore_loop(loop, state, env, test_env, rng)
        if normalizer is not None:
            normalizer.load_state(state["normalizer"])
        get_action.refresh()
    start_time = time.time() - loop["elapsed"]
    progress = EpochProgress(local_steps_per_epoch, epochs,
                             enabled=sys.stdout.isatty() and proc_id() == 0)

    for t in range(loop["t"], total_steps):

        # Uniformly random actions explore for the first start_steps steps; the policy acts after.
        a = get_action(o) if t > local_start_steps else env.action_space.sample()

        o2, r, terminated, truncated, _ = env.step(a)
        loop["episode_actions"].append(a)
        loop["ep_ret"] += r
        loop["ep_len"] += 1

        # Only a true termination is stored as done: a time limit (the env's or max_ep_len)
        # ends the episode but says nothing about the state, so the backup still bootstraps.
        replay_buffer.store(o, a, r, o2, float(terminated))
        if normalizer is not None:
            loop["new_obs"].append(o2)

        o = o2  # the next action must see the newest observation: easy to forget, fatal to miss

        if terminated or truncated or loop["ep_len"] == max_ep_len:
            logger.store(EpRet=loop["ep_ret"], EpLen=loop["ep_len"])
            o = reset_env()
            loop["ep_ret"], loop["ep_len"] = 0.0, 0

        # Every update_every steps, as many updates, in one compiled call.
        if t >= local_update_after and t % update_every == 0:
            if normalizer is not None:
                normalizer.update(np.array(loop["new_obs"]))
                loop["new_obs"] = []
            batch = replay_buffer.sample_batch(batch_size, rng, n_batches=update_every)
            noise = rng.standard_normal((update_every, 2 * batch_size, 0 if discrete else act_dim),
                                        dtype=np.float32)
            info = {k: np.asarray(v) for k, v in
                    update_block(*(batch[k] for k in BATCH_KEYS), noise).items()}
            check_finite(info, t, local_steps_per_epoch, loop["saved_epoch"], logger)
            logger.store(**info)
            get_action.refresh()

        if progress.enabled and (t + 1) % update_every == 0:
            progress.update(t + 1)

        if (t + 1) % local_steps_per_epoch == 0:  # the epoch ends: save, test, log
            epoch = (t + 1) // local_steps_per_epoch
            saving = (epoch % save_freq == 0) or (epoch == epochs)

            if saving:
                logger.save_state({"env": env}, None)
                loop["saved_epoch"] = epoch

            test_agent()

            logger.log_tabular("Epoch", epoch)
            logger.log_tabular("EpRet", with_min_and_max=True)
            logger.log_tabular("TestEpRet", with_min_and_max=True)
            logger.log_tabular("EpLen", average_only=True)
            logger.log_tabular("TestEpLen", average_only=True)
            logger.log_tabular("TotalEnvInteracts", (t + 1) * n_procs)
            logger.log_tabular("Q1Vals", with_min_and_max=True)
            logger.log_tabular("Q2Vals", with_min_and_max=True)
            logger.log_tabular("LogPi", with_min_and_max=True)
            logger.log_tabular("LossPi", average_only=True)
            logger.log_tabular("LossQ1", average_only=True)
            logger.log_tabular("LossQ2", average_only=True)
            logger.log_tabular("Time", time.time() - start_time)
            if tuner is not None:
                logger.log_tabular("Alpha", average_only=True)
                logger.log_tabular("LossAlpha", average_only=True)
            progress.close()
            logger.dump_tabular()

            # The training checkpoint comes after the row, so that resuming
            # from it never repeats or skips a row.
            loop.update(t=t + 1, epoch=epoch, elapsed=time.time() - start_time)
            if saving and logger.output_dir is not None and n_procs == 1:
                save_checkpoint()
    progress.close()
    return ac


def load_checkpoint_for_resume(config: dict, logger_kwargs: dict):
    """The checkpoint to resume from, after checking that the run's config.json
    agrees with this call's arguments."""
    out = logger_kwargs.get("output_dir")
    if not out or not osp.isdir(out):
        raise SpinupError(f"resume=True needs logger_kwargs['output_dir'] to be the directory of "
                          f"an earlier run; got {out!r}, which does not exist.")
    checkpoint = load_train_state(out)
    if checkpoint is None:
        raise SpinupError(f"resume=True, but {out} holds no training checkpoint (train_state/): "
                          f"the run stopped before its first checkpoint, or was made without "
                          f"checkpoints. Start it again without resume.")
    try:
        with open(osp.join(out, "config.json")) as f:
            old = json.load(f)
    except (OSError, ValueError):
        old = {}
    new = json.loads(json.dumps(convert_json(config)))  # as config.json would hold it
    free = {"epochs", "save_freq", "resume", "logger", "logger_kwargs", "env_fn", "exp_name"}
    differ = sorted(k for k in set(old) | set(new) if k not in free
                    and old.get(k, "<missing>") != new.get(k, "<missing>")
                    and not (k in ("target_entropy",) and old.get(k) is None))
    if differ:
        details = "; ".join(f"{k}: {old.get(k, '<missing>')!r} there, {new.get(k, '<missing>')!r}"
                            f" now" for k in differ)
        raise SpinupError(f"resume=True, but these arguments differ from the run in {out}: "
                          f"{details}. Resume with the run's own arguments (only epochs and "
                          f"save_freq may change), or start a new run in another directory.")
    if checkpoint[1]["t"] > config["steps_per_epoch"] * config["epochs"]:
        raise SpinupError(f"resume=True with epochs={config['epochs']}, but the run in {out} is "
                          f"already at epoch {checkpoint[1]['epoch']}. Give more epochs.")
    return checkpoint


def restore_loop(loop: dict, state: dict, env, test_env, rng):
    """Put the loop, the random generators and both environments back as they
    were at the checkpoint; return the current observation.

    The training env is brought back by replaying its episode in progress:
    the same reset (seed or generator state) and the same actions, which
    rebuilds the simulator's state exactly for a deterministic env.
    """
    loop.update({k: state[k] for k in ("t", "epoch", "saved_epoch", "ep_ret", "ep_len",
                                       "elapsed", "new_obs")})
    if "test_seed" in state:
        loop["test_seed"] = state["test_seed"]
    else:
        loop.pop("test_seed", None)
    set_rng_state(rng, state["rng"])
    set_rng_state(env.action_space.np_random, state["action_space_rng"])
    set_rng_state(test_env.unwrapped.np_random, state["test_env_rng"])

    reset = state["episode_reset"]
    if "seed" in reset:
        o = env.reset(seed=reset["seed"])[0]
    else:
        set_rng_state(env.unwrapped.np_random, reset["rng"])
        o = env.reset()[0]
    actions = state["episode_actions"]
    for a in actions:
        o = env.step(a)[0]
    loop["episode_reset"] = reset
    loop["episode_actions"] = list(actions)
    return o


class EpochProgress:
    """A progress bar per epoch on stderr (tqdm) with env steps/s and the time
    left for the whole run; nothing at all when disabled (output redirected)."""

    def __init__(self, steps_per_epoch: int, epochs: int, enabled: bool):
        self.steps_per_epoch, self.epochs, self.enabled = steps_per_epoch, epochs, enabled
        self.bar = None

    def update(self, t: int) -> None:
        """Show progress at env step ``t`` (counted from the run's start)."""
        if not self.enabled:
            return
        from tqdm import tqdm

        epoch = t // self.steps_per_epoch + 1
        if self.bar is None:
            self.bar = tqdm(total=self.steps_per_epoch, desc=f"Epoch {epoch}/{self.epochs}",
                            unit="step", leave=False, file=sys.stderr, dynamic_ncols=True)
        done = t - (epoch - 1) * self.steps_per_epoch
        self.bar.update(done - self.bar.n)
        rate = self.bar.format_dict.get("rate") or 0.0
        if rate > 0:
            left = (self.steps_per_epoch * self.epochs - t) / rate
            self.bar.set_postfix_str(f"run ETA {time.strftime('%H:%M:%S', time.gmtime(left))}",
                                     refresh=False)

    def close(self) -> None:
        """End the current epoch's bar."""
        if self.bar is not None:
            self.bar.close()
            self.bar = None


def make_get_action(ac, rng: np.random.Generator, n_noise: int, discrete: bool = False
                    ) -> Callable:
    """``get_action(o, deterministic=False)`` for one observation, as numpy.

    Uses a numpy copy of the policy (:class:`core.NumpyActor`) when the actor
    allows it, else a ``tf.function`` with a fixed input signature, so acting
    never retraces. The noise is standard normal (continuous actions, one per
    dimension) or Gumbel (discrete, one per action); zero noise is the
    deterministic action. Call ``get_action.refresh()`` after the weights change.
    """
    np_actor = core.NumpyActor.maybe(ac.pi)
    if np_actor is None:
        @tf.function(input_signature=[tf.TensorSpec([1, None], tf.float32),
                                      tf.TensorSpec([1, n_noise], tf.float32)])
        def tf_action(o, noise):
            return ac.pi(o, noise=noise, with_logprob=False)[0]

        def policy(o, noise):
            return tf_action(np.asarray(o, np.float32)[None], noise[None])[0].numpy()
    else:
        def policy(o, noise):
            return np_actor(o, noise)

    zeros = np.zeros(n_noise, dtype=np.float32)

    def get_action(o, deterministic=False):
        if deterministic:
            noise = zeros
        elif discrete:
            noise = rng.gumbel(size=n_noise).astype(np.float32)
        else:
            noise = rng.standard_normal(n_noise, dtype=np.float32)
        return policy(o, noise)

    get_action.refresh = np_actor.refresh if np_actor is not None else (lambda: None)
    return get_action


def check_finite(info: dict, t: int, steps_per_epoch: int, last_saved_epoch: int,
                 logger: EpochLogger) -> None:
    """Stop the run with a clear message when an update produced NaN or inf."""
    bad = [k for k in ("LossPi", "LossQ1", "LossQ2") if not np.all(np.isfinite(info[k]))]
    if not bad:
        return
    where = logger.output_dir or "(no output directory)"
    saved = (f"the checkpoint of epoch {last_saved_epoch} in {where} (tf2_save/, vars.pkl) and "
             f"progress.txt up to that epoch are intact" if last_saved_epoch
             else "no checkpoint had been saved yet")
    raise FloatingPointError(
        f"SAC stopped at env step {t} (epoch {t // steps_per_epoch + 1}): the update produced "
        f"non-finite values in {', '.join(bad)}. Nothing more was written: {saved}. Usual causes "
        f"are a learning rate too large for the reward scale, rewards of huge magnitude, or NaN "
        f"in the observations; try a smaller lr or rescaled rewards.")


if __name__ == "__main__":
    import argparse

    import gymnasium as gym

    parser = argparse.ArgumentParser()
    parser.add_argument("--env", type=str, default="HalfCheetah-v5")
    parser.add_argument("--hid", type=int, default=256)
    parser.add_argument("--l", type=int, default=2)
    parser.add_argument("--gamma", type=float, default=0.99)
    parser.add_argument("--seed", "-s", type=int, default=0)
    parser.add_argument("--epochs", type=int, default=50)
    parser.add_argument("--exp_name", type=str, default="sac")
    args = parser.parse_args()

    from spinup_tf2.utils.run_utils import setup_logger_kwargs

    logger_kwargs = setup_logger_kwargs(args.exp_name, args.seed)
    sac(lambda: gym.make(args.env), actor_critic=core.MLPActorCritic,
        ac_kwargs=dict(hidden_sizes=[args.hid] * args.l),
        gamma=args.gamma, seed=args.seed, epochs=args.epochs,
        logger_kwargs=logger_kwargs)
