"""REDQ (Chen et al., ICLR 2021): SAC with an ensemble of critics, run at a high
update-to-data ratio, whose backup takes the minimum over a random subset of the targets.

What changes against SAC, all of it here and in REDQ's entry of the family's table
(:mod:`spinup_tf2.family`):

- N critics (10 by default), each an MLP Q(s, a) like SAC's, each with its target;
- each update draws a random subset of M target critics (2), the same for the whole
  minibatch, and the backup takes their minimum (M = 2 of 2 is SAC's clipped double Q);
  every critic learns that one backup;
- the policy maximises the mean of the N critics, not their minimum;
- ``redq()`` runs 20 updates per environment step (``updates_per_step=20``) and steps the
  policy once per environment step, whatever ``updates_per_step`` is (the entry's
  ``policy_delay``), as the paper's code does.

The subsets are drawn from the run's random generator with the minibatches (the record's
``extra_inputs``, :func:`subset_draws`), so the same seed gives the same run and a
checkpoint resumes it exactly.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence

import numpy as np

from spinup_tf2.algos.sac import core
from spinup_tf2.algos.sac.losses import SACLosses, q_loss, td_error
from spinup_tf2.errors import SpinupError
from spinup_tf2.tf_setup import import_tensorflow

tf = import_tensorflow()


class REDQActorCritic(core.ActorCritic):
    """REDQ's actor-critic: SAC's actor ``.pi`` and ``n_critics`` critics ``.q1`` ...
    ``.qN`` (:class:`~spinup_tf2.algos.sac.core.MLPQFunction`).

    Args:
        observation_space, action_space, hidden_sizes, activation: As
            :class:`~spinup_tf2.algos.sac.core.MLPActorCritic`'s (the critics' layers too).
        n_critics (int): The ensemble's size N (10, the paper's).
        subset_size (int): M, the target critics each backup takes the minimum of (2).
        obs_normalizer: Shared by all networks (``normalize_obs=True``).
        network (str): ``'mlp'`` or ``'simba'`` (:func:`~spinup_tf2.algos.sac.core.simba`).
    """

    variant = "redq"
    discrete = False

    def __init__(self, observation_space, action_space, hidden_sizes: Sequence[int] = (256, 256),
                 activation: Callable = tf.nn.relu, n_critics: int = 10, subset_size: int = 2,
                 obs_normalizer=None, network: str = "mlp"):
        core.check_whole_numbers("REDQ", (("n_critics", n_critics, 1),
                                          ("subset_size", subset_size, 1)),
                                 " (the paper: n_critics=10, subset_size=2)")
        if subset_size > n_critics:
            raise SpinupError(f"REDQ got subset_size={subset_size} with n_critics={n_critics}: "
                              f"a backup cannot take the minimum of more target critics than "
                              f"there are. Give subset_size <= n_critics (the paper: 2 of 10). "
                              f"Nothing was written.")
        self.n_critics, self.subset_size = n_critics, subset_size
        obs_dim, act_dim, network = self.make_actor(observation_space, action_space,
                                                    hidden_sizes, activation, obs_normalizer,
                                                    network, "REDQ")
        for i in range(1, n_critics + 1):
            setattr(self, f"q{i}", core.MLPQFunction(obs_dim, act_dim, hidden_sizes, activation,
                                                     obs_normalizer, network, name=f"q{i}"))


def subset_draws(rng: np.random.Generator, ac, n_updates: int, batch_size: int) -> np.ndarray:
    """The target critics of ``n_updates`` backups: for each, ``ac.subset_size`` distinct
    indices of ``ac.n_critics``, int32 of shape (n_updates, subset_size)."""
    del batch_size  # one subset serves a whole minibatch
    order = np.argsort(rng.random((n_updates, ac.n_critics)), axis=1)
    return order[:, :ac.subset_size].astype(np.int32)


def redq_losses(ac, ac_targ, o, a, r, o2, discount, noise, alpha, subset,
                policy: bool = True, weights=None, huber: bool = False) -> SACLosses:
    """REDQ's losses: every critic trained towards the backup of the minimum over the
    target critics ``subset`` (indices, shape (M,)); the policy on the critics' mean.
    ``policy=False`` leaves the policy's part out (``loss_pi`` and ``logp_pi`` None), for
    the updates on which the policy does not step; ``weights`` and ``huber``: prioritized
    replay's (:func:`~spinup_tf2.algos.sac.losses.q_loss`)."""
    batch = tf.shape(o)[0]
    pi_next, logp_pi_next = ac.pi(o2, noise=noise[batch:2 * batch])

    # Only the drawn target critics run: one branch of a switch per drawn index.
    branches = [functools.partial(q, o2, pi_next) for q in ac_targ.critics]
    q_targ = [tf.switch_case(subset[k], branches) for k in range(ac.subset_size)]
    min_q_targ = functools.reduce(tf.minimum, q_targ)
    backup = tf.stop_gradient(r + discount * (min_q_targ - alpha * logp_pi_next))

    q = tuple(qi(o, a) for qi in ac.critics)
    loss_q = tuple(q_loss(qi, backup, weights, huber) for qi in q)
    td = td_error(q, backup)
    if not policy:
        return SACLosses(None, loss_q, q, None, td)
    pi, logp_pi = ac.pi(o, noise=noise[:batch])
    q_pi = tf.reduce_mean(tf.stack([qi(o, pi) for qi in ac.critics]), axis=0)
    loss_pi = tf.reduce_mean(alpha * logp_pi - q_pi)
    return SACLosses(loss_pi, loss_q, q, logp_pi, td)
