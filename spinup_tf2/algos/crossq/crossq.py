"""``crossq()``: CrossQ (Bhatt et al., ICLR 2024) with its published settings, run by
``sac()`` on the ``crossq`` variant record (:mod:`spinup_tf2.algos.sac.crossq` has the
networks and the losses)."""

from spinup_tf2.algos.sac.sac import sac


def crossq(env_fn, actor_critic="crossq", ac_kwargs=dict(), seed=0, steps_per_epoch=4000,
           epochs=100, replay_size=int(1e6), gamma=0.99, lr=1e-3, alpha="auto",
           batch_size=256, start_steps=5000, update_after=1000, update_every=50,
           num_test_episodes=10, max_ep_len=1000, logger_kwargs=dict(), save_freq=1,
           target_entropy=None, resume=False, normalize_obs=False, overwrite=False,
           video_freq=0, updates_per_step=1, num_envs=1, vector_mode="sync",
           replay_buffer_class=None, n_step=1,
        her=False, n_sampled_goal=4, goal_selection_strategy="future"):
    """
    CrossQ: SAC without target networks, with Batch Renormalization in the actor
    and the critics, and wide critics.

    The critics are run once, in training mode, on (s, a) and (s', a') stacked,
    so both halves share one set of batch statistics and the backup needs no
    target network; Adam's beta_1 is 0.5; the policy and alpha step once every
    3 critic steps (the other updates skip the policy's part). Everything else
    is :func:`spinup_tf2.algos.sac.sac.sac`, whose arguments these are; the
    defaults that differ from SAC's are CrossQ's (paper, SBX, sb3-contrib).

    Args:
        env_fn : Makes one environment; vector observations (a 1-D Box, or a Dict
            of them) and Box actions only.

        actor_critic: ``'crossq'`` (its
            :class:`~spinup_tf2.algos.sac.crossq.CrossQActorCritic`), or a
            class whose ``variant`` is ``'crossq'``.

        ac_kwargs (dict): The actor-critic's own settings: ``hidden_sizes``
            (the actor, (256, 256)), ``critic_hidden_sizes`` ((1024, 1024), as
            SBX and sb3-contrib; the paper used 2048), ``activation``,
            ``momentum`` (BatchRenorm's, 0.99) and ``warmup_steps`` (training
            calls of plain batch normalisation before renormalising, 100,000).

        alpha: ``'auto'`` (learned towards ``target_entropy``, as CrossQ
            does), or a fixed entropy weight.

        batch_size (int): 256, CrossQ's.

        start_steps (int): 5,000 uniformly random actions first, CrossQ's.

        update_after (int): Updates from step 1,000 (Spinning Up's).

        Every other argument: as :func:`~spinup_tf2.algos.sac.sac.sac`,
        with its default. ``polyak`` does not apply (no target networks).

    Returns:
        The trained actor-critic.
    """
    return sac(**locals())
