"""``redq()``: REDQ (Chen et al., ICLR 2021) with its published settings, run by ``sac()``
on the ``redq`` variant record (:mod:`spinup_tf2.algos.sac.redq` has the ensemble and its
losses)."""

from spinup_tf2.algos.sac.sac import sac


def redq(env_fn, actor_critic="redq", ac_kwargs=dict(), seed=0, steps_per_epoch=4000,
         epochs=100, replay_size=int(1e6), gamma=0.99, polyak=0.995, lr=3e-4, alpha="auto",
         batch_size=256, start_steps=5000, update_after=5000, update_every=50,
         num_test_episodes=10, max_ep_len=1000, logger_kwargs=dict(), save_freq=1,
         target_entropy=None, resume=False, normalize_obs=False, overwrite=False, video_freq=0,
         updates_per_step=20, num_envs=1, vector_mode="sync", replay_buffer_class=None, n_step=1,
        her=False, n_sampled_goal=4, goal_selection_strategy="future"):
    """
    Randomized Ensembled Double Q-learning (REDQ): SAC with an ensemble of
    critics and a high update-to-data ratio.

    An ensemble of N critics (10); each backup takes the minimum of a
    random subset of M target critics (2), drawn anew for every update;
    every critic learns that backup; the policy maximises the ensemble's
    mean. 20 critic updates per environment step, the policy and alpha
    stepped once per 20 of them. Everything else is
    :func:`spinup_tf2.algos.sac.sac.sac`, whose arguments these are; the
    defaults that differ from SAC's are REDQ's (the paper and its code).

    Args:
        env_fn : Makes one environment; vector observations (a 1-D Box, or a Dict
            of them) and Box actions only.

        actor_critic: ``'redq'`` (its
            :class:`~spinup_tf2.algos.sac.redq.REDQActorCritic`), or a class
            whose ``variant`` is ``'redq'``.

        ac_kwargs (dict): The actor-critic's own settings: ``hidden_sizes``
            ((256, 256)), ``activation``, ``n_critics`` (N, 10) and
            ``subset_size`` (M, 2).

        lr (float): 3e-4, REDQ's.

        alpha: ``'auto'`` (learned towards ``target_entropy``, as REDQ does;
            its default here is SAC's -dim(A), not the per-task values of
            the paper's MBPO settings), or a fixed entropy weight.

        batch_size (int): 256, REDQ's.

        start_steps (int): 5000 uniform random actions first, REDQ's.

        update_after (int): 5000, REDQ's: the updates start with the policy,
            on 5,000 random transitions (a 4,000-step first epoch logs no
            losses). From SAC's 1000, twenty updates a step on so little data
            made Hopper's critics diverge (Q of millions by step 4,000).

        updates_per_step (int): 20, REDQ's update-to-data ratio G (each
            update draws its own minibatch and its own subset).

        Every other argument: as :func:`~spinup_tf2.algos.sac.sac.sac`,
        with its default.

    Returns:
        The trained actor-critic.
    """
    return sac(**locals())
