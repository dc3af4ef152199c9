"""``tqc()``: TQC (Kuznetsov et al., ICML 2020) with its published settings, run by ``sac()``
on the ``tqc`` variant record (:mod:`spinup_tf2.algos.sac.tqc` has the critics and the
losses)."""

from spinup_tf2.algos.sac.sac import sac


def tqc(env_fn, actor_critic="tqc", ac_kwargs=dict(), seed=0, steps_per_epoch=4000,
        epochs=100, replay_size=int(1e6), gamma=0.99, polyak=0.995, lr=3e-4, alpha="auto",
        batch_size=256, start_steps=10000, update_after=1000, update_every=50,
        num_test_episodes=10, max_ep_len=1000, logger_kwargs=dict(), save_freq=1,
        target_entropy=None, resume=False, normalize_obs=False, overwrite=False, video_freq=0,
        updates_per_step=1, num_envs=1, vector_mode="sync", replay_buffer_class=None, n_step=1,
        her=False, n_sampled_goal=4, goal_selection_strategy="future"):
    """
    Truncated Quantile Critics: SAC with an ensemble of distributional critics
    whose pooled target quantiles are truncated.

    Each of N critics predicts M quantiles of the return; the backup sorts the
    N x M target quantiles at (s', a') and drops the largest k per critic,
    then every critic learns the kept ones with the quantile Huber loss; the
    policy maximises the mean of all quantiles. Everything else is
    :func:`spinup_tf2.algos.sac.sac.sac`, whose arguments these are; the
    defaults that differ from SAC's are TQC's (paper, SBX, sb3-contrib).

    Args:
        env_fn : Makes one environment; vector observations (a 1-D Box, or a Dict
            of them) and Box actions only.

        actor_critic: ``'tqc'`` (its
            :class:`~spinup_tf2.algos.sac.tqc.TQCActorCritic`), or a class
            whose ``variant`` is ``'tqc'``.

        ac_kwargs (dict): The actor-critic's own settings: ``hidden_sizes``
            ((256, 256), SBX's), ``activation``, ``n_critics`` (5, the paper's;
            SBX and sb3-contrib default to 2), ``n_quantiles`` (25) and
            ``top_quantiles_to_drop_per_net`` (2).

        lr (float): 3e-4, TQC's.

        alpha: ``'auto'`` (learned towards ``target_entropy``, as TQC does),
            or a fixed entropy weight.

        batch_size (int): 256, TQC's.

        Every other argument: as :func:`~spinup_tf2.algos.sac.sac.sac`,
        with its default.

    Returns:
        The trained actor-critic.
    """
    return sac(**locals())
