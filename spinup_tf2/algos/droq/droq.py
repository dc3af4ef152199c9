"""``droq()``: DroQ (Hiraoka et al., ICLR 2022) with its published settings, run by
``sac()`` on the ``droq`` variant record (:mod:`spinup_tf2.algos.sac.droq` has the
critics)."""

from spinup_tf2.algos.sac.sac import sac


def droq(env_fn, actor_critic="droq", ac_kwargs=dict(), seed=0, steps_per_epoch=4000,
         epochs=100, replay_size=int(1e6), gamma=0.99, polyak=0.995, lr=3e-4, alpha="auto",
         batch_size=256, start_steps=10000, update_after=1000, update_every=50,
         num_test_episodes=10, max_ep_len=1000, logger_kwargs=dict(), save_freq=1,
         target_entropy=None, resume=False, normalize_obs=False, overwrite=False, video_freq=0,
         updates_per_step=20, num_envs=1, vector_mode="sync", replay_buffer_class=None, n_step=1,
        her=False, n_sampled_goal=4, goal_selection_strategy="future"):
    """
    DroQ: SAC with dropout and layer normalization in the critics, run at a
    high update-to-data ratio.

    Each critic's hidden layer is Dense, Dropout, LayerNorm, then the
    activation; the losses are SAC's, with dropout on in every critic call
    they make (target critics included). 20 critic updates per environment
    step, the policy and alpha stepped once per 20 of them. Everything else
    is :func:`spinup_tf2.algos.sac.sac.sac`, whose arguments these are; the
    defaults that differ from SAC's are DroQ's (paper, SBX's configuration).

    Args:
        env_fn : Makes one environment; vector observations (a 1-D Box, or a Dict
            of them) and Box actions only.

        actor_critic: ``'droq'`` (its
            :class:`~spinup_tf2.algos.sac.droq.DroQActorCritic`), or a class
            whose ``variant`` is ``'droq'``.

        ac_kwargs (dict): The actor-critic's own settings: ``hidden_sizes``
            ((256, 256)), ``activation`` and ``dropout_rate`` (0.01, the
            paper's).

        lr (float): 3e-4, DroQ's.

        alpha: ``'auto'`` (learned towards ``target_entropy``, as DroQ does),
            or a fixed entropy weight.

        batch_size (int): 256, DroQ's.

        updates_per_step (int): 20, DroQ's update-to-data ratio (each update
            draws its own minibatch).

        Every other argument: as :func:`~spinup_tf2.algos.sac.sac.sac`,
        with its default.

    Returns:
        The trained actor-critic.
    """
    return sac(**locals())
