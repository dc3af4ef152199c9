"""SimbaV2 (Lee et al., ICML 2025, "Hyperspherical Normalization for Scalable Deep RL"):
SAC whose networks keep their weights and features on the unit sphere, with a categorical
(distributional) critic trained by cross-entropy.

What changes against SAC (its family entry, ``spinup_tf2/family.py``, holds the defaults: the
update ratio, the learning-rate decay, gamma, alpha's start and target):

- every hidden Dense layer has no bias and its kernel's columns (one per unit) are projected
  back onto the unit sphere after each optimiser step (a Keras ``kernel_constraint``, which
  Keras 3's optimisers apply after every update);
- features are l2-normalised: the embedder appends a constant ``c_shift`` to the input,
  normalises, projects and normalises again; each block is an MLP (4x wider inside, ReLU)
  whose output is normalised, mixed into the residual stream by a learned per-unit LERP
  weight ``alpha`` and normalised again;
- learnable per-unit scalers (:class:`Scaler`) stand in for the magnitudes the
  normalisations remove;
- the critic predicts a distribution over ``num_bins`` (101) fixed values in
  ``[-v_max, v_max]``; its Q is the distribution's mean.
"""

from __future__ import annotations

import math

import numpy as np

from spinup_tf2.algos.sac import core
from spinup_tf2.algos.sac.losses import SACLosses, td_error
from spinup_tf2.algos.sac.nstep import NStepReturns
from spinup_tf2.tf_setup import import_tensorflow

tf = import_tensorflow()
import keras  # noqa: E402  (after TensorFlow, so its start-up stays quiet)

EPS = 1e-8  # the smallest norm a feature is divided by
# The scaled returns' bound, and the critic's bins' range [-G_MAX, G_MAX].
G_MAX = 5.0


def l2normalize(x, axis: int = -1):
    """``x / max(||x||, EPS)`` along ``axis``."""
    return x / tf.maximum(tf.norm(x, axis=axis, keepdims=True), EPS)


class UnitColumns(keras.constraints.Constraint):
    """The kernel's columns (one per output unit) projected onto the unit sphere."""

    def __call__(self, w):
        return l2normalize(w, axis=0)


def hyper_dense(units: int, name: str, output: bool = False) -> keras.layers.Dense:
    """A Dense layer without bias, orthogonally initialised, whose kernel's columns stay
    on the unit sphere (:class:`UnitColumns`, applied after every optimiser step): a hidden
    :class:`~spinup_tf2.algos.sac.core.Dense`, or with ``output`` Keras' own (float32
    whatever the run's precision)."""
    kind = keras.layers.Dense if output else core.Dense
    return kind(units, use_bias=False, name=name,
                kernel_initializer=keras.initializers.Orthogonal(gain=1.0),
                kernel_constraint=UnitColumns())


def project_kernels(layer: keras.layers.Layer) -> None:
    """Project every constrained kernel below ``layer`` (after it is built): the
    orthogonal initialiser gives unit columns only when the layer is not wider than its
    input."""
    for sub in layer._flatten_layers(include_self=True):
        if isinstance(sub, keras.layers.Dense) and sub.kernel_constraint is not None:
            sub.kernel.assign(sub.kernel_constraint(sub.kernel))


class Scaler(keras.layers.Layer):
    """A learned per-unit gain: ``x * s * (init / scale)``, with ``s`` starting at
    ``scale``, so the gain starts at ``init`` while Adam moves ``s`` in steps of ``scale``'s
    size."""

    def __init__(self, init: float, scale: float, **kwargs):
        super().__init__(**kwargs)
        self.init, self.scale = float(init), float(scale)

    def build(self, input_shape):
        self.s = self.add_weight(shape=(input_shape[-1],), name="scaler",
                                 initializer=keras.initializers.Constant(self.scale))

    def call(self, x):
        return x * self.s * (self.init / self.scale)


class HyperEmbedder(keras.layers.Layer):
    """The input onto the sphere: ``normalize(Scaler(W normalize([x, c_shift])))``."""

    def __init__(self, width: int, c_shift: float, scaler_init: float, scaler_scale: float,
                 **kwargs):
        super().__init__(**kwargs)
        self.c_shift = float(c_shift)
        self.w = hyper_dense(width, "w")
        self.scaler = Scaler(scaler_init, scaler_scale, name="scaler")

    def call(self, x):
        shift = tf.fill(tf.concat([tf.shape(x)[:-1], [1]], 0), tf.cast(self.c_shift, x.dtype))
        x = l2normalize(tf.concat([x, shift], axis=-1))
        return l2normalize(self.scaler(self.w(x)))


class HyperLERPBlock(keras.layers.Layer):
    """A residual block on the sphere: ``h = normalize(W2 (relu(Scaler(W1 x)) + EPS))``
    (``W1`` 4x wider), then ``normalize(x + alpha * (h - x))`` with a learned per-unit
    ``alpha`` (a :class:`Scaler`)."""

    expansion = 4

    def __init__(self, width: int, scaler_init: float, scaler_scale: float, alpha_init: float,
                 alpha_scale: float, **kwargs):
        super().__init__(**kwargs)
        root = math.sqrt(self.expansion)
        self.w1 = hyper_dense(width * self.expansion, "w1")
        self.scaler = Scaler(scaler_init / root, scaler_scale / root, name="scaler")
        self.w2 = hyper_dense(width, "w2")
        self.alpha = Scaler(alpha_init, alpha_scale, name="alpha")

    def call(self, x):
        h = self.w2(tf.nn.relu(self.scaler(self.w1(x))) + EPS)
        h = l2normalize(h)
        return l2normalize(x + self.alpha(h - x))


class HyperTrunk(keras.layers.Layer):
    """Embedder then ``num_blocks`` LERP blocks, of ``width`` units; the paper's scaler and
    alpha settings follow from the width and the number of blocks."""

    def __init__(self, width: int, num_blocks: int, c_shift: float = 3.0, **kwargs):
        super().__init__(**kwargs)
        gain = math.sqrt(2.0 / width)
        self.embedder = HyperEmbedder(width, c_shift, gain, gain, name="embedder")
        self.blocks = [HyperLERPBlock(width, gain, gain, 1.0 / (num_blocks + 1),
                                      1.0 / math.sqrt(width), name=f"block{i + 1}")
                       for i in range(num_blocks)]

    def call(self, x):
        x = self.embedder(x)
        for block in self.blocks:
            x = block(x)
        return x


class HyperHead(keras.layers.Layer):
    """A linear head on the sphere's features: ``W2 Scaler(W1 z) + b`` (no activation)."""

    def __init__(self, width: int, out_dim: int, **kwargs):
        super().__init__(**kwargs)
        self.w1 = hyper_dense(width, "w1")
        self.scaler = Scaler(1.0, 1.0, name="scaler")
        self.w2 = hyper_dense(out_dim, "w2", output=True)
        self.out_dim = int(out_dim)

    def build(self, input_shape):
        self.b = self.add_weight(shape=(self.out_dim,), name="bias", initializer="zeros")

    def call(self, z):
        return self.w2(self.scaler(self.w1(z))) + self.b


def bin_values(num_bins: int, v_max: float):
    """The critic's ``num_bins`` return values, evenly from ``-v_max`` to ``v_max``."""
    return tf.linspace(-float(v_max), float(v_max), int(num_bins))


# The actor's log std, squashed into this range by tanh (the paper's; SAC's clips at -20).
LOG_STD_MIN, LOG_STD_MAX = -10.0, 2.0


class SimbaV2Actor(core.ObsModel):
    """pi(a|s) on the sphere: a :class:`HyperTrunk`, then linear heads for the mean and the
    log std (squashed into ``[LOG_STD_MIN, LOG_STD_MAX]`` by tanh); sampling, the tanh squash
    and the log-probability as SAC's actor."""

    def __init__(self, obs_dim: int, act_dim: int, width: int, num_blocks: int,
                 act_limit: float, obs_normalizer=None, **kwargs):
        super().__init__(obs_normalizer, **kwargs)
        self.act_limit = float(act_limit)
        self.trunk = HyperTrunk(width, num_blocks, name="trunk")
        self.mu_head = HyperHead(width, act_dim, name="mu")
        self.log_std_head = HyperHead(width, act_dim, name="log_std")
        self(tf.zeros((1, obs_dim)))
        project_kernels(self)

    def call(self, obs, deterministic=False, with_logprob=True, noise=None):
        z = self.trunk(self.prepare_obs(obs))
        mu = self.mu_head(z)
        log_std = LOG_STD_MIN + 0.5 * (LOG_STD_MAX - LOG_STD_MIN) * (
            1.0 + tf.tanh(self.log_std_head(z)))
        if deterministic:
            noise = tf.zeros_like(mu)
        elif noise is None:
            noise = tf.random.normal(tf.shape(mu))
        u = mu + tf.exp(log_std) * noise
        logp_pi = (core.gaussian_logp_from_noise(noise, log_std) - core.tanh_logp_correction(u)
                   if with_logprob else None)
        return self.act_limit * tf.tanh(u), logp_pi


class CategoricalQFunction(core.ObsModel):
    """Z(s, a): a :class:`HyperTrunk` on ``[obs, act]``, then a linear head of ``num_bins``
    logits; calling it gives the log-probabilities of the bins, shape (batch, num_bins)."""

    def __init__(self, obs_dim: int, act_dim: int, width: int, num_blocks: int,
                 num_bins: int, obs_normalizer=None, **kwargs):
        super().__init__(obs_normalizer, **kwargs)
        self.trunk = HyperTrunk(width, num_blocks, name="trunk")
        self.head = HyperHead(width, num_bins, name="head")
        self(tf.zeros((1, obs_dim)), tf.zeros((1, act_dim)))
        project_kernels(self)

    def call(self, obs, act):
        z = self.trunk(tf.concat([self.prepare_obs(obs), act], axis=-1))
        return tf.nn.log_softmax(self.head(z), axis=-1)


def trunk_shape(name: str, sizes) -> tuple[int, int]:
    """``(width, blocks)`` of a trunk given as one width per block, all equal."""
    from spinup_tf2.errors import SpinupError

    sizes = list(sizes) if isinstance(sizes, (list, tuple)) else [sizes]
    if not sizes or len(set(sizes)) != 1 or not all(
            isinstance(w, int) and not isinstance(w, bool) and w >= 1 for w in sizes):
        raise SpinupError(f"SimbaV2 got {name}={sizes!r}: its trunk is one width per "
                          f"residual block, all equal whole numbers >= 1 (e.g. [512, 512]: "
                          f"two blocks of 512). Nothing was written.")
    return sizes[0], len(sizes)


class SimbaV2ActorCritic(core.ActorCritic):
    """SimbaV2's actor-critic: the actor ``.pi`` (:class:`SimbaV2Actor`) and two categorical
    critics ``.q1``, ``.q2`` (:class:`CategoricalQFunction`).

    Args:
        observation_space, action_space: As
            :class:`~spinup_tf2.algos.sac.core.MLPActorCritic`'s.
        hidden_sizes (tuple): The actor's trunk: one width per LERP block, all equal
            ((128,), the paper's: one block of 128).
        critic_hidden_sizes (tuple): Each critic's trunk, the same way ((512, 512): two
            blocks of 512, the paper's).
        num_bins (int): The critics' return values (101), evenly in ``[-G_MAX, G_MAX]``
            (the bound the reward scaling keeps returns within, :class:`ScaledRewards`).
        obs_normalizer: Shared by all networks (``normalize_obs=True``, SimbaV2's default).

    A critic's Q value (logged ``Q1Vals``, exported ``q1``) is its distribution's mean.
    """

    variant = "simbav2"
    discrete = False

    def __init__(self, observation_space, action_space, hidden_sizes=(128,),
                 critic_hidden_sizes=(512, 512), num_bins: int = 101, obs_normalizer=None):
        actor = trunk_shape("hidden_sizes", hidden_sizes)
        critic = trunk_shape("critic_hidden_sizes", critic_hidden_sizes)
        core.check_whole_numbers("SimbaV2", (("num_bins", num_bins, 2),))
        obs_dim, act_dim = observation_space.shape[0], action_space.shape[0]
        self.obs_normalizer = obs_normalizer
        self.num_bins = int(num_bins)
        self.bins = bin_values(num_bins, G_MAX)
        self.pi = SimbaV2Actor(obs_dim, act_dim, *actor, float(action_space.high[0]),
                               obs_normalizer, name="pi")
        for i in (1, 2):
            setattr(self, f"q{i}", CategoricalQFunction(obs_dim, act_dim, *critic, num_bins,
                                                        obs_normalizer, name=f"q{i}"))

    def critic(self, i: int, obs, act=None):
        """The mean of critic ``i``'s distribution: its Q value."""
        return tf.reduce_sum(tf.exp(self.critics[i](obs, act)) * self.bins, axis=-1)


def project_onto_bins(probs, values, bins):
    """The categorical distribution on ``bins`` (evenly spaced, shape (K,)) closest to
    putting ``probs`` (batch, K) at ``values`` (batch, K): each value clipped into the bins'
    range and its probability split between the two bins around it, in proportion to its
    distance from each (C51's projection, Bellemare et al. 2017)."""
    k = tf.shape(bins)[0]
    lo, hi = bins[0], bins[-1]
    b = (tf.clip_by_value(values, lo, hi) - lo) / ((hi - lo) / tf.cast(k - 1, bins.dtype))
    low, up = tf.floor(b), tf.math.ceil(b)
    # A value on a bin (low == up) gives that bin all of its probability.
    m_low = probs * (up + tf.cast(tf.equal(low, up), b.dtype) - b)
    m_up = probs * (b - low)
    return (tf.einsum("bj,bjk->bk", m_low, tf.one_hot(tf.cast(low, tf.int32), k))
            + tf.einsum("bj,bjk->bk", m_up, tf.one_hot(tf.cast(up, tf.int32), k)))


def simbav2_losses(ac, ac_targ, o, a, r, o2, discount, noise, alpha, weights=None) -> SACLosses:
    """SimbaV2's losses: each critic's cross-entropy against the target distribution, the
    target critic with the smaller mean at (s', a') shifted to ``r + discount * (z - alpha
    log pi(a'|s'))`` and projected onto the bins (:func:`project_onto_bins`); the policy
    maximises the smaller of the two critics' means. ``weights``: prioritized replay's
    importance weights; a transition's TD error is the largest, over the critics, of its
    mean less the target distribution's."""
    batch = tf.shape(o)[0]
    pi, logp_pi = ac.pi(o, noise=noise[:batch])
    pi_next, logp_pi_next = ac.pi(o2, noise=noise[batch:2 * batch])

    # The target distribution: the target critic whose mean is smaller, per transition.
    logp_next = [q(o2, pi_next) for q in ac_targ.critics]
    means = [tf.reduce_sum(tf.exp(lp) * ac.bins, axis=-1) for lp in logp_next]
    p_next = tf.where((means[0] <= means[1])[:, None], tf.exp(logp_next[0]),
                      tf.exp(logp_next[1]))
    values = r[:, None] + discount[:, None] * (ac.bins[None, :] - alpha * logp_pi_next[:, None])
    target = tf.stop_gradient(project_onto_bins(p_next, values, ac.bins))

    logp = [q(o, a) for q in ac.critics]
    if weights is None:
        loss_q = tuple(-tf.reduce_mean(tf.reduce_sum(target * lp, axis=-1)) for lp in logp)
    else:
        loss_q = tuple(-tf.reduce_mean(weights * tf.reduce_sum(target * lp, axis=-1))
                       for lp in logp)
    q = tuple(tf.reduce_sum(tf.exp(lp) * ac.bins, axis=-1) for lp in logp)
    q_pi = tf.minimum(ac.critic(0, o, pi), ac.critic(1, o, pi))
    loss_pi = tf.reduce_mean(alpha * logp_pi - q_pi)
    td = td_error(q, tf.reduce_sum(target * ac.bins, axis=-1))
    return SACLosses(loss_pi, loss_q, q, logp_pi, td)


class ScaledRewards(NStepReturns):
    """SimbaV2's reward scaling, on the n-step writer the environment loop stores into.

    For each environment copy it keeps the discounted return of the rewards so far,
    ``G <- gamma * G + r`` (0 again when the copy's episode ends), the running variance of
    every step's ``G`` (Chan et al.'s parallel update, as gymnasium's NormalizeReward) and
    the largest ``|G|``; every minibatch's rewards (k-step returns included) are divided by
    ``max(sqrt(var + EPS), G_max / G_MAX)``, so that scaled returns stay within the critic's
    bins. All of it is checkpointed with the buffer."""

    def __init__(self, buffer, n_step: int = 1, gamma: float = 0.99, copies: int = 1,
                 episodes_continue: bool = True):
        super().__init__(buffer, n_step, gamma, copies, episodes_continue)
        self.G = np.zeros(self.copies, np.float64)
        self.stats = np.array([1e-4, 0.0, 1.0, 0.0])  # count, mean, var, largest |G|

    def store(self, obs, act, rew, next_obs, done, *memory, copy: int = 0) -> None:
        """One environment step: the copy's return and the statistics move, then the step
        is stored as NStepReturns stores it."""
        self.G[copy] = self.gamma * self.G[copy] + float(rew)
        g = self.G[copy]
        count, mean, var, g_max = self.stats
        total = count + 1.0
        delta = g - mean
        var = (var * count + delta ** 2 * count / total) / total
        self.stats = np.array([total, mean + delta / total, var, max(g_max, abs(g))])
        super().store(obs, act, rew, next_obs, done, *memory, copy=copy)

    def end_episode(self, copy: int = 0) -> None:
        """The copy's episode ended: its open windows are written, its return restarts."""
        self.G[copy] = 0.0
        super().end_episode(copy)

    def scale(self) -> float:
        """What every reward is divided by now."""
        _, _, var, g_max = self.stats
        return max(float(np.sqrt(var + EPS)), g_max / G_MAX)

    def sample_batch(self, *args, **kwargs) -> dict:
        """NStepReturns' minibatch, its rewards scaled (:meth:`scale`)."""
        batch = super().sample_batch(*args, **kwargs)
        batch["rew"] = (batch["rew"] / self.scale()).astype(np.float32)
        return batch

    def state_arrays(self) -> dict:
        """The buffer's arrays, the open windows and the reward statistics."""
        return {**super().state_arrays(), "reward_G": self.G.copy(),
                "reward_stats": self.stats.copy()}

    def load_state_arrays(self, arrays) -> None:
        """Restore :meth:`state_arrays`, refusing statistics that no run writes."""
        super().load_state_arrays(arrays)
        g, stats = np.asarray(arrays["reward_G"]), np.asarray(arrays["reward_stats"])
        if (g.shape != self.G.shape or stats.shape != (4,) or not np.all(np.isfinite(g))
                or not np.all(np.isfinite(stats)) or stats[0] <= 0 or stats[2] < 0
                or stats[3] < 0):
            raise ValueError(f"its reward statistics (reward_G {g.tolist()[:4]}, reward_stats "
                             f"{stats.tolist()}) are not ones a SimbaV2 run writes")
        self.G, self.stats = g.astype(np.float64), stats.astype(np.float64)
