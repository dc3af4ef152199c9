"""SAC's losses, for continuous and for discrete actions, as named tuples.

Each takes ``(ac, ac_targ, o, a, r, o2, discount, noise, alpha)`` (a minibatch, whose
``discount`` is the factor of each backup's bootstrap, ``gamma * (1 - d)`` in Spinning Up's
terms and ``gamma ** k * (1 - d)`` for a k-step transition; the policy's noise at ``o`` and
``o2``; the entropy weight) and returns
:class:`SACLosses`. The pixel and recurrent variants run these same functions on features
(:func:`spinup_tf2.algos.sac.pixels.pixel_losses`,
:func:`spinup_tf2.algos.sac.recurrent.sequence_losses`); a variant with other critics (an
ensemble, quantiles) writes its own and returns the same tuple, one entry per critic.

Prioritized replay (:mod:`spinup_tf2.algos.sac.priority`) calls them with two more
keywords: ``weights`` (each transition's importance weight, or None) and ``huber`` (LAP's
Huber loss in place of the square); a losses function that takes them also returns each
transition's TD error (``td``), from which the replay sets its priority.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

from spinup_tf2.tf_setup import import_tensorflow

tf = import_tensorflow()


class SACLosses(NamedTuple):
    """What one minibatch's losses give the update (after TF-Agents' ``SacLossInfo``).

    ``loss_pi``: the policy loss; ``loss_q``: one loss per critic (the update minimises
    their sum); ``q``: each critic's Q(s, a) on the minibatch (logged as ``Q1Vals``,
    ``Q2Vals``, ...); ``logp_pi``: the policy's log-probabilities at ``o`` (logged as
    ``LogPi``; the entropy tuner's input)."""

    loss_pi: Any
    loss_q: tuple
    q: tuple
    logp_pi: Any
    td: Any = None  # each transition's TD error, the largest over the critics (priorities)


def q_loss(q, backup, weights=None, huber: bool = False):
    """One critic's loss, TF1 SAC's ``0.5 * mean((q - backup) ** 2)``; with ``weights``
    (prioritized replay's importance weights) ``0.5 * mean(w (q - backup) ** 2)``; with
    ``huber`` the Huber loss (kappa 1) in place of the half square (LAP)."""
    if weights is None and not huber:
        return 0.5 * tf.reduce_mean((q - backup) ** 2)  # as Spinning Up's, to the last bit
    err = tf.abs(q - backup)
    per = tf.where(err <= 1.0, 0.5 * err ** 2, err - 0.5) if huber else 0.5 * err ** 2
    return tf.reduce_mean(per if weights is None else weights * per)


def td_error(q: tuple, backup):
    """Each transition's TD error for its priority: the largest ``|q_i - backup|`` over
    the critics (as LAP and TD7 take it)."""
    return tf.reduce_max(tf.abs(tf.stack(q) - backup[None]), axis=0)


def continuous_losses(ac, ac_targ, o, a, r, o2, discount, noise, alpha,
                      policy: bool = True, weights=None, huber: bool = False) -> SACLosses:
    """SAC's losses for continuous actions. ``policy=False`` leaves the policy's part out
    (``loss_pi`` and ``logp_pi`` None), for a variant's updates on which the policy does
    not step; ``weights`` and ``huber``: see :func:`q_loss`."""
    batch = tf.shape(o)[0]
    # Independent products (pi at s and at s', q1 and q2) run side by side.
    if policy:
        pi, logp_pi = ac.pi(o, noise=noise[:batch])
    pi_next, logp_pi_next = ac.pi(o2, noise=noise[batch:2 * batch])

    q1 = ac.q1(o, a)
    q2 = ac.q2(o, a)
    if policy:
        q1_pi = ac.q1(o, pi)
        q2_pi = ac.q2(o, pi)
    q1_targ = ac_targ.q1(o2, pi_next)
    q2_targ = ac_targ.q2(o2, pi_next)

    # Entropy-regularized Bellman backup, with the clipped double-Q trick.
    min_q_targ = tf.minimum(q1_targ, q2_targ)
    backup = tf.stop_gradient(r + discount * (min_q_targ - alpha * logp_pi_next))

    # Soft actor-critic losses (Q losses with TF1 SAC's factor 1/2).
    loss_q1 = q_loss(q1, backup, weights, huber)
    loss_q2 = q_loss(q2, backup, weights, huber)
    td = td_error((q1, q2), backup)
    if not policy:
        return SACLosses(None, (loss_q1, loss_q2), (q1, q2), None, td)
    loss_pi = tf.reduce_mean(alpha * logp_pi - tf.minimum(q1_pi, q2_pi))
    return SACLosses(loss_pi, (loss_q1, loss_q2), (q1, q2), logp_pi, td)


def discrete_losses(ac, ac_targ, o, a, r, o2, discount, noise, alpha, weights=None,
                    huber: bool = False) -> SACLosses:
    """SAC's losses for discrete actions (Christodoulou 2019): the policy's
    expectations are sums over all actions instead of samples; ``logp_pi`` is
    the expected log-probability E[log pi(.|s)] (minus the entropy); ``weights`` and
    ``huber``: see :func:`q_loss`."""
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
    backup = tf.stop_gradient(r + discount * v_next)

    loss_pi = tf.reduce_mean(tf.reduce_sum(
        probs * (alpha * log_probs - tf.minimum(q1_all, q2_all)), axis=-1))
    loss_q1 = q_loss(q1, backup, weights, huber)
    loss_q2 = q_loss(q2, backup, weights, huber)
    logp_pi = tf.reduce_sum(probs * log_probs, axis=-1)
    return SACLosses(loss_pi, (loss_q1, loss_q2), (q1, q2), logp_pi,
                     td_error((q1, q2), backup))


def losses_for(ac) -> Callable:
    """SAC's losses for the actor-critic's action space: :func:`discrete_losses` when
    ``ac.discrete``, else :func:`continuous_losses` (what the pixel and recurrent variants
    wrap)."""
    return discrete_losses if ac.discrete else continuous_losses


def logged_keys(n_critics: int) -> tuple:
    """The diagnostics an update of ``n_critics`` critics logs, in progress.txt's order:
    ``LossPi, LossQ1, ..., Q1Vals, ..., LogPi`` (Spinning Up's six for two critics)."""
    return (("LossPi",) + tuple(f"LossQ{i}" for i in range(1, n_critics + 1))
            + tuple(f"Q{i}Vals" for i in range(1, n_critics + 1)) + ("LogPi",))
