"""TQC (Kuznetsov et al., ICML 2020): SAC with distributional critics whose pooled target
quantiles are truncated.

What changes against SAC, all of it here and in TQC's entry of the family's table
(:mod:`spinup_tf2.family`):

- N critics (5 by default), each predicting M quantiles (25) of the return of (s, a);
- the backup pools the N x M target quantiles at (s', a'), sorts them and drops the
  largest k per critic (2: 10 of 125), which controls overestimation more finely than
  SAC's minimum of two; every critic learns all the kept quantiles by the quantile Huber
  loss;
- the policy maximises the mean of all quantiles of all critics.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from spinup_tf2.algos.sac import core
from spinup_tf2.algos.sac.losses import SACLosses, td_error
from spinup_tf2.errors import SpinupError
from spinup_tf2.tf_setup import import_tensorflow

tf = import_tensorflow()


class QuantileQFunction(core.ObsModel):
    """Z(s, a): ``concat(obs, act) -> hidden -> n_quantiles``, shape (batch, n_quantiles)."""

    def __init__(self, obs_dim: int, act_dim: int, hidden_sizes: Sequence[int],
                 activation: Callable, n_quantiles: int, obs_normalizer=None,
                 network: str = "mlp", **kwargs):
        super().__init__(obs_normalizer, **kwargs)
        self.q = core.body(network, obs_dim + act_dim, hidden_sizes, activation, n_quantiles,
                           name="q_net")
        self(tf.zeros((1, obs_dim)), tf.zeros((1, act_dim)))

    def call(self, obs, act):
        return self.q(tf.concat([self.prepare_obs(obs), act], axis=-1))


class TQCActorCritic(core.ActorCritic):
    """TQC's actor-critic: SAC's actor ``.pi`` and ``n_critics`` quantile critics
    ``.q1`` ... ``.qN`` (:class:`QuantileQFunction`).

    Args:
        observation_space, action_space, hidden_sizes, activation: As
            :class:`~spinup_tf2.algos.sac.core.MLPActorCritic`'s (the critics' layers too).
        n_critics (int): Critics (5, as in the paper).
        n_quantiles (int): Quantiles per critic (25).
        top_quantiles_to_drop_per_net (int): Largest target quantiles dropped per critic (2).
        obs_normalizer: Shared by all networks (``normalize_obs=True``).
        network (str): ``'mlp'`` or ``'simba'`` (:func:`~spinup_tf2.algos.sac.core.simba`).

    A critic's Q value (logged ``Q1Vals``, exported ``q1``) is the mean of its quantiles.
    """

    variant = "tqc"
    discrete = False

    def __init__(self, observation_space, action_space, hidden_sizes: Sequence[int] = (256, 256),
                 activation: Callable = tf.nn.relu, n_critics: int = 5, n_quantiles: int = 25,
                 top_quantiles_to_drop_per_net: int = 2, obs_normalizer=None,
                 network: str = "mlp"):
        core.check_whole_numbers("TQC", (("n_critics", n_critics, 1),
                                         ("n_quantiles", n_quantiles, 1),
                                         ("top_quantiles_to_drop_per_net",
                                          top_quantiles_to_drop_per_net, 0)))
        if top_quantiles_to_drop_per_net >= n_quantiles:
            raise SpinupError(f"TQC got top_quantiles_to_drop_per_net="
                              f"{top_quantiles_to_drop_per_net} with n_quantiles={n_quantiles}: "
                              f"it would drop every target quantile. Drop fewer than "
                              f"n_quantiles (the paper: 2 of 25). Nothing was written.")
        self.n_quantiles, self.top_quantiles_to_drop = int(n_quantiles), int(
            top_quantiles_to_drop_per_net)
        obs_dim, act_dim, network = self.make_actor(observation_space, action_space,
                                                    hidden_sizes, activation, obs_normalizer,
                                                    network, "TQC")
        for i in range(1, int(n_critics) + 1):
            setattr(self, f"q{i}", QuantileQFunction(obs_dim, act_dim, hidden_sizes, activation,
                                                     n_quantiles, obs_normalizer, network,
                                                     name=f"q{i}"))
        self.n_critics = int(n_critics)

    def critic(self, i: int, obs, act=None):
        """The mean of critic ``i``'s quantiles: its Q value."""
        return tf.reduce_mean(self.critics[i](obs, act), axis=-1)


def quantile_huber_loss(quantiles, target, weights=None):
    """The quantile Huber loss (kappa 1) of ``quantiles`` (batch, M), at the midpoints
    tau_j = (j + 1/2) / M, against every ``target`` sample (batch, K): the mean over the
    batch, the M quantiles and the K targets of ``|tau_j - 1{u < 0}| * huber(u)``,
    u = target - quantile; with ``weights`` (batch,), each transition's terms times its
    weight (prioritized replay's importance weights)."""
    m = tf.shape(quantiles)[-1]
    tau = (tf.range(m, dtype=quantiles.dtype) + 0.5) / tf.cast(m, quantiles.dtype)
    u = target[:, None, :] - quantiles[:, :, None]  # (batch, M, K)
    huber = tf.where(tf.abs(u) <= 1.0, 0.5 * u ** 2, tf.abs(u) - 0.5)
    weight = tf.abs(tau[None, :, None] - tf.cast(u < 0, u.dtype))
    if weights is not None:
        weight = weight * weights[:, None, None]
    return tf.reduce_mean(weight * huber)


def tqc_losses(ac, ac_targ, o, a, r, o2, discount, noise, alpha, weights=None) -> SACLosses:
    """TQC's losses: quantile critics trained towards the truncated pool of target
    quantiles; one Q loss per critic, each its share of the mean over all critics (so their
    sum is the loss of the paper and of SB3). ``weights``: prioritized replay's importance
    weights; a transition's TD error is the largest, over the critics, of its mean quantile
    less the kept targets' mean."""
    batch = tf.shape(o)[0]
    pi, logp_pi = ac.pi(o, noise=noise[:batch])
    pi_next, logp_pi_next = ac.pi(o2, noise=noise[batch:2 * batch])

    # Pool the target critics' quantiles at (s', a'), sort them, keep the smallest.
    z_next = tf.sort(tf.concat([q(o2, pi_next) for q in ac_targ.critics], axis=1), axis=1)
    n_critics = len(ac.critics)
    kept = n_critics * (ac.n_quantiles - ac.top_quantiles_to_drop)
    z_next = z_next[:, :kept]
    backup = tf.stop_gradient(r[:, None] + discount[:, None]
                              * (z_next - alpha * logp_pi_next[:, None]))

    z = [q(o, a) for q in ac.critics]
    loss_q = tuple(quantile_huber_loss(zi, backup, weights) / n_critics for zi in z)
    # The policy maximises the mean of every quantile of every critic.
    q_pi = tf.reduce_mean(tf.concat([q(o, pi) for q in ac.critics], axis=1), axis=1)
    loss_pi = tf.reduce_mean(alpha * logp_pi - q_pi)
    q = tuple(tf.reduce_mean(zi, axis=1) for zi in z)
    return SACLosses(loss_pi, loss_q, q, logp_pi, td_error(q, tf.reduce_mean(backup, axis=1)))
