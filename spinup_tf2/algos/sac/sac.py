"""Soft Actor-Critic in TensorFlow 2 / Keras 3, after Spinning Up's ``sac``.

Read top to bottom: the actor-critic and its targets, one update (:func:`make_update`,
on the losses of :mod:`spinup_tf2.algos.sac.losses`), and :func:`sac`, the training loop.
What differs between kinds of agent (MLP, discrete, pixels, recurrent, and the variants to
come) is one record, :class:`~spinup_tf2.algos.sac.variants.Variant`, picked once.
Updates run ``update_every`` at a time in one compiled call on minibatches drawn in one
numpy gather per block; acting uses a numpy copy of the policy, refreshed after each
block. Those speed-ups, and the fused Adam and polyak steps, live in
:mod:`spinup_tf2.algos.sac.fast_path`.
"""

from __future__ import annotations

import contextlib
import functools
import operator
import time
from collections.abc import Callable

import numpy as np

from spinup_tf2 import envs, rundir
from spinup_tf2.algos.sac import core
from spinup_tf2.algos.sac.buffers import ReplayBuffer  # noqa: F401 (where Spinning Up has it)
from spinup_tf2.algos.sac.fast_path import (
    Adam,
    EntropyTuner,
    make_polyak_update,
    make_update_block,
)
from spinup_tf2.algos.sac.losses import (  # noqa: F401 (SAC's math, as sac.py had it)
    continuous_losses,
    discrete_losses,
    logged_keys,
)
from spinup_tf2.algos.sac.replay import check_replay, make_replay, run_updates
from spinup_tf2.algos.sac.variants import MLP, Variant, pick_variant, variant_of
from spinup_tf2.checks import check_sac_args, run_settings
from spinup_tf2.columns import epoch_columns
from spinup_tf2.envs import ReplayableEpisodes, VectorEpisodes
from spinup_tf2.envs.spaces import check_spaces, default_target_entropy
from spinup_tf2.errors import SpinupError
from spinup_tf2.tf_setup import import_tensorflow
from spinup_tf2.training.checkpoint import TrainingCheckpoint, check_output_dir
from spinup_tf2.training.progress_bar import EpochProgress
from spinup_tf2.training.videos import EpochVideos
from spinup_tf2.training.watches import RunawayWatch, check_finite
from spinup_tf2.utils.logx import EpochLogger
from spinup_tf2.utils.mpi_tf2 import make_grad_averager, sync_params
from spinup_tf2.utils.mpi_tools import num_procs, proc_id

tf = import_tensorflow()
import keras  # noqa: E402


def build_actor_critics(actor_critic, observation_space, action_space, ac_kwargs: dict,
                        obs_normalizer: core.ObsNormalizer | None = None,
                        targets: bool = True):
    """The main actor-critic and its target copy (None without ``targets``), the targets
    starting equal to the main networks, and every MPI process starting from the first
    one's weights; both share ``obs_normalizer`` when one is given."""
    if obs_normalizer is not None:
        ac_kwargs = dict(ac_kwargs, obs_normalizer=obs_normalizer)
    name = getattr(actor_critic, "__name__", actor_critic)
    try:
        ac = actor_critic(observation_space, action_space, **ac_kwargs)
        ac_targ = actor_critic(observation_space, action_space, **ac_kwargs) if targets else None
    except TypeError as err:
        if obs_normalizer is not None and "obs_normalizer" in str(err):
            raise SpinupError(f"normalize_obs=True, but the actor_critic {name} does not take "
                              f"an obs_normalizer argument ({err}).") from None
        raise
    except (MemoryError, tf.errors.ResourceExhaustedError):
        raise SpinupError(f"The networks of actor_critic {name} with ac_kwargs={ac_kwargs!r} do "
                          f"not fit in memory; give smaller hidden_sizes. Nothing was "
                          f"written.") from None
    missing = [k for k in ("pi", "trainable_variables") if not hasattr(ac, k)]
    if not hasattr(ac, "critics") and not (hasattr(ac, "q1") and hasattr(ac, "q2")):
        missing.append("q1, q2 (or critics)")
    if missing:
        raise SpinupError(f"actor_critic {name} returned {ac!r}, which has no "
                          f"{', '.join(missing)}: it must return an object with Keras models "
                          f"pi, q1 and q2 and their trainable_variables (see "
                          f"core.MLPActorCritic). Nothing was written.")
    # A function's actor-critic takes the protocol's defaults here (a class did in pick_variant).
    ac = core.adapt_instance(ac)
    ac_targ = core.adapt_instance(ac_targ) if ac_targ is not None else None
    if ac_targ is not None:
        for v_main, v_targ in zip(ac.trainable_variables, ac_targ.trainable_variables, strict=True):
            v_targ.assign(v_main)
    sync_params(ac.trainable_variables + (ac_targ.trainable_variables if ac_targ else []))
    return ac, ac_targ


def make_tuner(tuner_args: tuple | None, action_space, lr: float,
               variant: Variant = MLP, decay_steps: int = 1) -> EntropyTuner | None:
    """The entropy tuner for ``alpha='auto...'`` (None for a fixed alpha), from
    ``tuner_args = (initial alpha, target entropy or None)``; the target entropy
    defaults to :func:`spinup_tf2.envs.spaces.default_target_entropy` of ``action_space``
    times the variant's ``entropy_scale``; its learning rate follows the variant's decay
    over ``decay_steps``."""
    if tuner_args is None:
        return None
    initial_alpha, target = tuner_args
    if target is None:
        target = default_target_entropy(action_space) * variant.entropy_scale
    return EntropyTuner(initial_alpha, target, lr, variant.lr_end, decay_steps)


def make_optimizers(ac, lr: float, betas: tuple = (0.9, 0.999), lr_end: float | None = None,
                    decay_steps: int = 1) -> tuple[Adam, Adam]:
    """Separate Adam optimizers for the policy and the Q functions, with TF1's
    Adam defaults (epsilon 1e-8) as in Spinning Up; ``betas``: Adam's (beta_1, beta_2);
    with ``lr_end``, the learning rate decays linearly to it over ``decay_steps`` updates."""
    pi_optimizer = Adam(ac.actor_variables, lr, *betas, lr_end=lr_end, decay_steps=decay_steps)
    q_optimizer = Adam(ac.critic_variables, lr, *betas, lr_end=lr_end, decay_steps=decay_steps)
    return pi_optimizer, q_optimizer


def make_update(ac, ac_targ, pi_optimizer: Adam, q_optimizer: Adam, alpha: float,
                polyak: float, tuner: EntropyTuner | None = None,
                average_grads: Callable | None = None, variant: Variant | None = None,
                updates_per_step: int = 1, replay: str = "uniform",
                precision: str = "float32") -> Callable:
    """Return ``update(obs, act, rew, obs2, discount, noise, *extra)``: one SAC gradient
    step (``discount``: each backup's bootstrap factor, the replay door's named batch entry,
    :func:`spinup_tf2.algos.sac.buffers.discount_of`; ``extra``: what the variant's losses
    take after the noise, e.g. a recurrent actor-critic's windows, see
    :mod:`spinup_tf2.algos.sac.recurrent`).

    ``noise`` (shape ``[2 * batch, act_dim]``) is the standard normal draw for
    the policy's actions at ``obs`` (first half) and ``obs2`` (second half);
    passing it in makes every update a pure function of its inputs. As in
    Spinning Up's TF1 SAC, all losses come from one forward pass (the ``variant``'s
    losses, :class:`~spinup_tf2.algos.sac.losses.SACLosses` of ``ac.critics``; by default
    the variant of ``ac``, :func:`variants.variant_of`), then the policy step, the Q step,
    and the polyak averaging of the target critics (none when ``ac_targ`` is None).
    With the variant's policy delay k > 1 (:meth:`Variant.delay` at ``updates_per_step``)
    the policy (and alpha) step only every k-th update; a variant with ``critic_losses``
    leaves the policy's part out of the others, which log the latest policy step's
    ``LossPi`` and ``LogPi``. With a ``tuner``, alpha
    is ``exp(log_alpha)`` and log_alpha takes an Adam step too. With ``average_grads``
    (data-parallel runs over MPI), the gradients (a dict of lists) are averaged over
    processes before any is applied. With prioritized ``replay`` (``'per'``, ``'lap'``:
    :mod:`spinup_tf2.algos.sac.priority`) the last of ``extra`` is the minibatch's importance
    weights, the losses take them (or LAP's Huber loss), and each transition's TD error
    comes back as ``TD`` (``update.replay_keys``). The returned dict holds the diagnostics
    named in ``update.logged_keys``; ``update.variables`` is its own state (the policy
    delay's count, the latest policy diagnostics), for checkpoints. With ``precision``
    ``'bfloat16'`` the losses' hidden-layer products run in bfloat16
    (:func:`core.products`); all else stays float32.
    """
    pi_vars, q_vars = ac.actor_variables, ac.critic_variables
    update_targets = make_polyak_update(ac, ac_targ, polyak) if ac_targ is not None else None
    variant = variant or variant_of(ac)
    policy_delay = variant.delay(updates_per_step)
    count = tf.Variable(0, dtype=tf.int64, trainable=False) if policy_delay > 1 else None
    # A variant whose critic-only updates skip the policy's part logs, on those updates, the
    # policy's diagnostics of its latest step.
    split = count is not None and variant.critic_losses is not None
    if split:
        last = dict(loss_pi=tf.Variable(0.0, trainable=False),
                    logp_pi=tf.Variable(tf.zeros([0]), shape=tf.TensorShape([None]),
                                        trainable=False))

    def one_update(o, a, r, o2, discount, noise, extra, step_pi):
        """One step of the critics, and of the policy and alpha if ``step_pi``."""
        alpha_t = tuner.alpha() if tuner is not None else alpha
        losses = variant.critic_losses if split and not step_pi else variant.losses
        extra, kw = replay_keywords(replay, extra)
        with tf.GradientTape(persistent=True) as tape, core.products(precision):
            out = losses(ac, ac_targ, o, a, r, o2, discount, noise, alpha_t, *extra, **kw)
            loss_q = functools.reduce(operator.add, out.loss_q)  # sum over the critics
        loss_pi, logp_pi = out.loss_pi, out.logp_pi
        if loss_pi is None:
            loss_pi, logp_pi = last["loss_pi"].read_value(), last["logp_pi"].read_value()
        elif split:
            last["loss_pi"].assign(loss_pi)
            last["logp_pi"].assign(logp_pi)
        grads = dict(pi=tape.gradient(loss_pi, pi_vars)) if step_pi else {}
        grads["q"] = tape.gradient(loss_q, q_vars)
        info = dict(LossPi=loss_pi,
                    **{f"LossQ{i}": loss for i, loss in enumerate(out.loss_q, 1)},
                    **{f"Q{i}Vals": q for i, q in enumerate(out.q, 1)}, LogPi=logp_pi)
        if replay != "uniform":
            info["TD"] = out.td
        if tuner is not None:
            if step_pi:
                grads["alpha"] = tuner.gradient(logp_pi)
            info.update(Alpha=alpha_t, LossAlpha=tuner.loss(logp_pi))
        if average_grads is not None:  # data-parallel: the same mean gradient on every process
            grads = average_grads(grads)
        if step_pi:
            pi_optimizer.apply(grads["pi"])
        q_optimizer.apply(grads["q"])
        if step_pi and tuner is not None:
            tuner.optimizer.apply(grads["alpha"])
        if update_targets is not None:
            update_targets()
        return info

    def update(o, a, r, o2, discount, noise, *extra):
        if count is None:
            return one_update(o, a, r, o2, discount, noise, extra, True)
        due = count % policy_delay == 0  # the policy steps on every policy_delay-th update
        count.assign_add(1)
        return tf.cond(due, lambda: one_update(o, a, r, o2, discount, noise, extra, True),
                       lambda: one_update(o, a, r, o2, discount, noise, extra, False))

    alpha_keys = ("Alpha", "LossAlpha") if tuner is not None else ()
    update.logged_keys = logged_keys(len(ac.critics)) + alpha_keys
    update.replay_keys = ("TD",) if replay != "uniform" else ()
    update.variables = {} if count is None else {"count": count}
    if split:
        update.variables.update({f"last_{k}": v for k, v in last.items()})
    return update


def make_learner(ac, ac_targ, variant: Variant, lr: float, tuner_args: tuple | None,
                 action_space, alpha: float, polyak: float,
                 updates_per_step: int = 1, steps: int = 1, replay: str = "uniform",
                 precision: str = "float32") -> tuple:
    """``(pi_optimizer, q_optimizer, tuner, update, update_block)``: the optimizers (the
    variant's Adam betas and learning-rate decay over the run's ``steps`` environment steps),
    the entropy tuner when alpha is learned, one update step (gradients averaged across MPI
    processes, on ``replay``'s minibatches, its products in ``precision``) and its compiled
    block."""
    decay_steps = steps * updates_per_step
    pi_optimizer, q_optimizer = make_optimizers(ac, lr, variant.adam_betas, variant.lr_end,
                                                decay_steps)
    tuner = make_tuner(tuner_args, action_space, lr, variant, decay_steps)
    update = make_update(ac, ac_targ, pi_optimizer, q_optimizer, alpha, polyak, tuner,
                         make_grad_averager(), variant, updates_per_step, replay, precision)
    return (pi_optimizer, q_optimizer, tuner, update,
            make_update_block(update, ragged=variant.ragged))


def sac(env_fn, actor_critic=core.MLPActorCritic, ac_kwargs=dict(), seed=0,  # noqa: B006 (Spinning Up's signature)
        steps_per_epoch=4000, epochs=100, replay_size=int(1e6), gamma=0.99,
        polyak=0.995, lr=1e-3, alpha=0.2, batch_size=100, start_steps=10000,
        update_after=1000, update_every=50, num_test_episodes=10, max_ep_len=1000,
        logger_kwargs=dict(), save_freq=1, target_entropy=None, resume=False,  # noqa: B006
        normalize_obs=False, overwrite=False, video_freq=0, updates_per_step=1, num_envs=1,
        vector_mode="sync", replay_buffer_class=None, n_step=1, her=False, n_sampled_goal=4,
        goal_selection_strategy="future", replay="uniform", priority_alpha=None,
        priority_beta=0.4, actors=0, actor_steps=100, actor_cpus=1.0, precision="float32"):
    """
    Soft Actor-Critic (SAC), as Spinning Up runs it, in TensorFlow 2 / Keras 3.

    Under ``mpirun -np N`` (or ``--cpu N``) it runs data-parallel: each process
    has its own environments and replay buffer, every update averages the
    gradients of all processes, and ``steps_per_epoch``, ``start_steps``,
    ``update_after`` and ``num_test_episodes`` count over all of them.


    Args:
        env_fn : Makes one environment (gymnasium API) per call; SAC makes
            two, for training and for testing. Observations: a 1-D Box,
            images, ``Box(0, 255, (H, W, C), uint8)`` (then the pixel
            actor-critic of :mod:`spinup_tf2.algos.sac.pixels` is the default),
            or a Dict of Boxes (read as one vector, :mod:`spinup_tf2.envs.dict_obs`).
            Actions: a bounded Box (bounds other than [-a, a] in every
            dimension are mapped from [-1, 1], :mod:`spinup_tf2.envs.action_scale`),
            or Discrete (then SAC for discrete actions is used).

        actor_critic: Called as ``actor_critic(observation_space,
            action_space, **ac_kwargs)``; returns an object with Keras models
            ``pi``, ``q1``, ``q2`` and a ``trainable_variables`` property
            listing their variables. Its class may name the kind of agent it is
            (``variant``: a record of :mod:`spinup_tf2.algos.sac.variants`, which
            can change the critics' number, the targets, the policy delay and
            Adam's betas); a record's name (``'recurrent'``) gives that record's
            actor-critic. The models are called as:

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

        batch_size (int): Transitions per minibatch (with a recurrent
            actor-critic, the steps with a loss, in whole windows).

        start_steps (int): For this many first steps, actions are drawn
            uniformly from the action space instead of from the policy, to
            explore.

        update_after (int): No updates before this many environment steps,
            so that the first minibatches come from a buffer with some variety.
            It may be past the first epoch (SB3's ``learning_starts``): the
            rows of epochs without an update have nan in the Q and loss columns.

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
            scalars to ``output_dir/tb/``. Without ``output_dir``, a new directory
            ``data/<exp_name>/<exp_name>_<date>_<time>`` (``exp_name``: ``sac``).

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

        overwrite (bool): Replace an earlier run in the output directory
            (exactly the files a run writes). Without it, a directory that
            already holds a run is refused before anything is written.

        video_freq (int): Every ``video_freq`` epochs (and after the last),
            record one episode of the deterministic policy to
            ``videos/epoch_<N>.mp4``. 0 (the default) records nothing and costs
            nothing. Needs the ``video`` extra and a registered environment.

        updates_per_step (int): Updates per environment step (SB3's
            ``gradient_steps``, ML-Agents' ``steps_per_update``; the family's
            high-ratio variants use 20): after every ``update_every`` steps,
            ``updates_per_step * update_every`` updates, still in one compiled
            call. 1 (the default) is Spinning Up's schedule. At 20, plain SAC's
            critics ran away in a short check (Hopper-v5, alpha learned, updates
            from step 500: mean Q 2,600 by step 2,000); the family's variants
            with ``updates_per_step`` 20 (:mod:`spinup_tf2.family`) are made for
            it.

        num_envs (int): Copies of the environment stepping at once (gymnasium's
            vector API); ``steps_per_epoch``, ``start_steps``, ``update_after``
            and ``update_every`` still count transitions, so ``steps_per_epoch``
            must be a multiple of it (of it times the MPI processes); a block of
            updates comes with the step that passes each multiple of
            ``update_every`` (so 50 takes 2, 4, 8, 16 copies alike). 1 (the
            default) runs exactly as before. A resumed run with several copies
            starts new episodes in them.

        vector_mode (str): ``'sync'`` (the copies step one after another in
            this process) or ``'async'`` (each in its own process: for slow
            environments, on more cores).

        replay_buffer_class: A replay buffer of one's own (SB3's
            ``replay_buffer_class``), called as ``replay_buffer_class(obs_dim,
            act_dim, replay_size)``; it needs the methods of
            :class:`~spinup_tf2.algos.sac.buffers.ReplayBuffer` (``store``,
            ``sample_batch``, ``state_arrays``, ``load_state_arrays``). None (the
            default) uses the variant's: ``ReplayBuffer``, or for images and
            recurrent actor-critics their own.

        n_step (int): n-step returns: each stored transition spans up to
            ``n_step`` environment steps, its reward their discounted sum and
            its backup discounted by ``gamma ** k`` for the k steps it spans
            (:mod:`~spinup_tf2.algos.sac.nstep`; an episode's end cuts a window
            short, a termination without bootstrap). 1 (the default) is SAC's
            one-step backup. Vector observations only (not with images or a
            recurrent actor-critic).

        her (bool): Hindsight experience replay, for goal-conditioned tasks
            (a Dict observation with ``achieved_goal`` and ``desired_goal``,
            and the environment's ``compute_reward``): minibatches are drawn
            from finished episodes and a share of them get, as their desired
            goal, one the episode reached, with the reward recomputed by
            ``compute_reward`` (:mod:`~spinup_tf2.algos.sac.her`).

        n_sampled_goal (int): With ``her``, relabelled transitions per
            original one: ``n_sampled_goal / (n_sampled_goal + 1)`` of each
            minibatch is relabelled (4: 80%, as in SB3 and the HER paper).

        goal_selection_strategy (str): With ``her``, where the new goal comes
            from: ``'future'`` (the achieved goal after this step or a later
            one of the same episode), ``'final'`` (after the episode's last
            step) or ``'episode'`` (after any step of the episode).

        replay (str): How minibatches are drawn: ``'uniform'`` (the default,
            Spinning Up's), ``'per'`` (prioritized replay, Schaul et al. 2016:
            in proportion to each transition's last TD error, with importance
            weights) or ``'lap'`` (Fujimoto et al. 2020: priorities of at
            least 1, no weights, Huber critic loss); see
            :mod:`~spinup_tf2.algos.sac.priority`. Vector observations, without
            ``her`` or a ``replay_buffer_class``.

        priority_alpha (float): With ``replay`` 'per' or 'lap', the
            priorities' exponent (0 draws uniformly); None: 0.6 for 'per',
            0.4 for 'lap', their papers'.

        priority_beta (float): With ``replay='per'``, the importance weights'
            exponent at the first update; it grows linearly to 1 by the last.

        actors (int): Ray actors that collect for this process, which learns
            (:mod:`~spinup_tf2.algos.sac.actors`, Ape-X's layout): each steps
            its own environment copy with its own seed and a copy of the
            policy, ``actor_steps`` steps a round, in pipelined rounds that
            keep ``updates_per_step`` to the steps collected; on
            ``RAY_ADDRESS``'s cluster, or a local one. 0 (the default)
            collects here. Not with ``num_envs`` > 1, MPI, ``her``, pixels
            or a recurrent actor-critic.

        actor_steps (int): With ``actors``, the steps each takes per round;
            it gets the learner's latest weights with each round.

        actor_cpus (float): With ``actors``, the CPUs each actor asks of the
            cluster.

        precision (str): The training step's matrix products: ``'float32'``
            (the default) or ``'bfloat16'`` (the hidden layers' products,
            forward and backward, on bfloat16 inputs and weights; the weights,
            optimizer state, normalisation statistics, outputs, losses,
            log-probabilities and targets stay float32, and so do acting, the
            SavedModel and the exports). Only on a CPU that multiplies
            bfloat16 natively (``avx512_bf16`` or ``amx_bf16`` among lscpu's
            flags); refused elsewhere, where it would run slower.

    """
    config = dict(locals())
    alpha, tuner_args = check_sac_args(config)
    logger_kwargs, overwrite, video_freq = run_settings(config, note=True, settle=True)
    env, test_env = envs.make_env(env_fn), envs.make_env(env_fn)
    layout, scale, obs_space, act_space = spaces = envs.network_spaces(env, test_env)
    discrete, obs_dim, act_dim, n_noise = check_spaces(obs_space, act_space, normalize_obs)
    variant, actor_critic = pick_variant(actor_critic, ac_kwargs, obs_space, discrete)
    # What fails only when stepped, before anything is written; does it report success?
    success = envs.success_key(envs.check_first_step(test_env))  # 'is_success', or None
    her_kwargs = check_replay(variant, layout, env, config, obs_dim, act_dim)
    config["actor_critic"] = actor_critic
    unrecorded = record_env(config, env)
    videos = EpochVideos(video_freq, envs.ref_of(config), max_ep_len, unrecorded, layout, scale)

    n_procs, local_steps_per_epoch, local_start_steps, local_update_after, local_test_episodes \
        = process_shares(steps_per_epoch, start_steps, update_after, num_test_episodes)
    keras.utils.set_random_seed(int(seed))  # Python, numpy and TensorFlow: the initial weights
    seed = int(seed) + 10_000 * proc_id()  # each process explores and samples differently
    rng = np.random.default_rng(seed)  # exploration noise and minibatches
    env, test_env = (ReplayableEpisodes(env, seed, layout, scale),
                     ReplayableEpisodes(test_env, seed + 10_000, layout, scale))

    # Create actor-critic module and target networks (sharing the observation statistics)
    normalizer = core.ObsNormalizer(obs_dim, name="obs_normalizer") if normalize_obs else None
    ac, ac_targ = build_actor_critics(actor_critic, env.observation_space, env.action_space,
                                      ac_kwargs, normalizer, variant.targets)
    replay_buffer = make_replay(variant, ac, obs_dim, act_dim, replay_size, envs.frame_stack(env),
                                max(num_envs, actors), replay_buffer_class, n_step, gamma,
                                her_kwargs, priority_of(config))
    get_action, saved_model = variant.agent_and_export(ac, rng, n_noise, discrete, obs_dim, spaces)
    collector, stride = make_collector(config, env, variant, ac, seed, local_start_steps, spaces)

    # Only now, with every argument tried, is anything written.
    with closed_on_error(collector):
        resume_epoch = check_output_dir(config, logger_kwargs, resume, overwrite)  # nothing lost
    logger = EpochLogger(**logger_kwargs, append_after=resume_epoch)
    logger.save_config(dict(config, logger=logger))
    log_param_counts(logger, ac)
    pi_optimizer, q_optimizer, tuner, update, update_block = make_learner(
        ac, ac_targ, variant, lr, tuner_args, env.action_space, alpha, polyak, updates_per_step,
        epochs * local_steps_per_epoch, replay, precision)
    logger.setup_tf2_saver(saved_model)

    # Everything a training checkpoint holds; resuming puts it all back.
    checkpoint = TrainingCheckpoint(logger.output_dir, dict(
        ac=ac, ac_targ=ac_targ, pi_optimizer=pi_optimizer, q_optimizer=q_optimizer, tuner=tuner,
        update=update.variables), normalizer, replay_buffer, rng, collector, test_env, get_action)
    o, t_start, ep_ret, ep_len, elapsed = (checkpoint.restore() if resume
                                           else (collector.reset()[0], 0, 0.0, 0, 0.0))
    saved_epoch = resume_epoch or 0
    start_time = time.time() - elapsed
    progress = EpochProgress(local_steps_per_epoch, epochs, every=update_every)
    runaway = RunawayWatch(replay_buffer, gamma, alpha if tuner is None else None)

    # Main loop: collect experience in env and update/log each epoch
    for t in range(t_start, local_steps_per_epoch * epochs, stride):
        if stride > 1:  # stride transitions at once (copies, or actors), each handled as below
            o = collector.step(o, get_action if t > local_start_steps else None,
                               replay_buffer, logger, normalizer)
        else:
            # Uniformly random actions explore for the first start_steps steps; then the policy.
            a = (get_action(o) if t > local_start_steps
                 else get_action.explore(o, env.action_space.sample()))

            o2, r, terminated, truncated, info = env.step(a)
            ep_ret += r
            ep_len += 1

            # Only a true termination is stored as done: a time limit (the env's or max_ep_len)
            # ends the episode but says nothing about the state, so the backup bootstraps.
            replay_buffer.store(o, a, r, o2, float(terminated), *get_action.memory())
            if normalizer is not None:
                normalizer.observe(o2)

            # Super critical, easy to overlook step: make sure to update most recent observation!
            o = o2

            # End of trajectory handling
            if terminated or truncated or ep_len == max_ep_len:
                replay_buffer.end_episode()  # n-step windows still open are written
                envs.store_episode(logger, ep_ret, ep_len,
                                   info.get(success, 0.0) if success else None)
                o, ep_ret, ep_len = env.reset()[0], 0.0, 0
                get_action.reset()

        # Update handling: update_every * updates_per_step updates in one compiled call
        blocks = update_blocks(t, stride, update_every)
        if t >= local_update_after and blocks:
            info = run_updates(update_block, replay_buffer, batch_size, rng,
                               blocks * update_every * updates_per_step,
                               0 if discrete else act_dim, ac, variant, normalizer)
            check_finite(info, t, local_steps_per_epoch, saved_epoch, logger.output_dir)
            logger.store(**info)
            get_action.refresh()
        progress.update(t + stride)

        # End of epoch handling
        if (t + stride) % local_steps_per_epoch == 0:
            epoch = (t + stride) // local_steps_per_epoch
            saving = (epoch % save_freq == 0) or (epoch == epochs)
            with rundir.writing(logger.output_dir):  # a refused write stops the run, files whole
                if saving:  # Save model
                    logger.save_state({"env": env.env}, None)  # and what replays must see
                    saved_epoch = epoch

                # Test the performance of the deterministic version of the agent.
                test_agent(test_env, get_action.fork(), local_test_episodes, max_ep_len, logger,
                           success)

                # Log info about epoch
                progress.close()
                log_epoch(logger, epoch, (t + stride) * n_procs, time.time() - start_time,
                          update.logged_keys, bool(success), runaway)

                # The checkpoint comes after the row: resuming never repeats or skips one.
                if saving:
                    checkpoint.save(t + stride, epoch, ep_ret, ep_len, time.time() - start_time)
                videos.after_epoch(logger.output_dir, epoch, epoch == epochs, get_action.fork(),
                                   env.env)
    finish_run(collector, logger)
    return ac


def priority_of(config: dict) -> dict | None:
    """The prioritized replay buffer's settings for ``config``'s ``replay`` (None:
    uniform), its beta annealed over this process's updates (:func:`process_shares`)."""
    if config["replay"] == "uniform":
        return None
    _, local_steps_per_epoch, _, local_update_after, _ = process_shares(
        config["steps_per_epoch"], config["start_steps"], config["update_after"], 1)
    steps = config["epochs"] * local_steps_per_epoch - local_update_after
    return dict(kind=config["replay"], alpha=config["priority_alpha"],
                beta=config["priority_beta"], anneal_updates=steps * config["updates_per_step"])


def replay_keywords(replay: str, extra: tuple) -> tuple[tuple, dict]:
    """``(extra, keywords)``: what an update's losses take after the noise, and the
    keywords of prioritized ``replay`` (the importance weights, last of ``extra``, or LAP's
    Huber loss; none for uniform replay)."""
    if replay == "uniform":
        return extra, {}
    *extra, weights = extra
    return tuple(extra), (dict(huber=True) if replay == "lap" else dict(weights=weights))


def make_collector(config: dict, env, variant: Variant, ac, seed: int, start_steps: int,
                   spaces) -> tuple:
    """``(collector, stride)``: what steps, and the transitions it gives at a time: ``env``
    itself (1), ``num_envs`` copies of it (``VectorEpisodes``; then env only records how
    they are made), or with ``actors`` Ray actors in rounds of ``actors x actor_steps``
    (:class:`~spinup_tf2.algos.sac.actors.RayActors`, refused first where they cannot
    work)."""
    num_envs, n = config["num_envs"], config["actors"]
    if n:
        from spinup_tf2.algos.sac.actors import RayActors, check_actors

        check_actors(config, variant, num_procs())
        make = dict(env_fn=config["env_fn"], actor_critic=config["actor_critic"],
                    ac_kwargs=config["ac_kwargs"], normalize_obs=config["normalize_obs"],
                    max_ep_len=config["max_ep_len"])
        return (RayActors(n, config["actor_steps"], make, ac, seed, start_steps,
                          config["actor_cpus"]), n * config["actor_steps"])
    if num_envs == 1:
        return env, 1
    return VectorEpisodes(config["env_fn"], num_envs, config["vector_mode"],
                          config["max_ep_len"], seed, envs.stats_attributes(env),
                          spaces.layout, spaces.scale), num_envs


@contextlib.contextmanager
def closed_on_error(collector):
    """Close ``collector`` (its processes, its actors) if the block raises."""
    try:
        yield
    except BaseException:
        collector.close()
        raise


def finish_run(collector, logger: EpochLogger) -> None:
    """The run ended as it should: ``collector``'s processes and actors stop, each of
    ``logger``'s outputs says so (a tracker sends the policy and closes its run), and the run
    directory is released, so another writer (a resume, a replay) may come now."""
    collector.close()
    logger.finish()
    rundir.release(logger.output_dir)


def update_blocks(t: int, num_envs: int, update_every: int) -> int:
    """Blocks of updates due after the step that stores transitions ``t`` to
    ``t + num_envs - 1``: how many multiples of ``update_every`` that step passes (one per
    ``update_every`` transitions on average, whatever the copies; with one copy, or copies
    that divide ``update_every``, exactly when ``t % update_every == 0``)."""
    return (t + num_envs - 1) // update_every - (t - 1) // update_every


def process_shares(steps_per_epoch: int, start_steps: int, update_after: int,
                   num_test_episodes: int) -> tuple:
    """``(n_procs, ...)``: the number of MPI processes, then each one's share of the counts
    ``sac()`` takes over all processes, as SAC runs data-parallel over MPI (test episodes
    rounded up, so every process tests at least one)."""
    n_procs = num_procs()
    return (n_procs, steps_per_epoch // n_procs, start_steps // n_procs,
            update_after // n_procs, -(-num_test_episodes // n_procs))


def record_env(config: dict, env) -> str | None:
    """Put in ``config`` how ``env`` was made (its id, and its EnvSpec with wrappers and make
    arguments), so that test_policy and videos rebuild it; return why it could not be
    recorded (said here once), or None."""
    config["env_name"] = env.spec.id if env.spec is not None else None
    config["env_spec"], unrecorded = envs.record(env)
    if unrecorded and proc_id() == 0:
        print(f"Note: this run's environment cannot be recorded for replay ({unrecorded}); "
              f"test_policy will need the pickled environment (--trust_vars_pkl).", flush=True)
    return unrecorded


def test_agent(test_env, get_action: Callable, n_episodes: int, max_ep_len: int,
               logger: EpochLogger, success: str | None = None) -> None:
    """Run ``n_episodes`` episodes of the deterministic policy (``get_action(o, True)``) on
    ``test_env``, storing their returns and lengths as TestEpRet and TestEpLen (and with
    ``success``, the info key that reports it, its value at their last step as
    TestSuccessRate)."""
    for _ in range(n_episodes):
        o, d, ep_ret, ep_len = test_env.reset()[0], False, 0.0, 0
        get_action.reset()
        while not (d or (ep_len == max_ep_len)):
            o, r, terminated, truncated, info = test_env.step(get_action(o, True))
            d = terminated or truncated
            ep_ret += r
            ep_len += 1
        envs.store_episode(logger, ep_ret, ep_len,
                           info.get(success, 0.0) if success else None, prefix="Test")


def log_param_counts(logger: EpochLogger, ac) -> None:
    """Print the number of parameters of pi, each critic (q1, q2, ...) and in all, as
    Spinning Up does."""
    counts = [("pi", core.count_vars(ac.pi))] + [
        (f"q{i}", core.count_vars(q)) for i, q in enumerate(ac.critics, 1)]
    total = core.count_vars(ac)  # with a pixel actor-critic's encoder and feature layers
    shared = total - sum(n for _, n in counts)
    logger.log("\nNumber of parameters: \t " + ", \t ".join(f"{k}: {n}" for k, n in counts)
               + f", \t total: {total}"
               + (f" (with {shared} in layers they share, such as the image encoder of the "
                  f"pixel actor-critic)"
                  if shared > 0 else "") + "\n")


def log_epoch(logger: EpochLogger, epoch: int, total_env_interacts: int, elapsed: float,
              keys: tuple = logged_keys(2), success: bool = False,
              runaway: RunawayWatch | None = None) -> None:
    """Write the epoch's row, the columns of :func:`epoch_columns`. With a ``runaway``
    watch, its warning (if any) follows the row."""
    # The watch reads the epoch's stored values, which writing the row consumes.
    warning = runaway(logger.epoch_dict) if runaway is not None else None
    values = dict(Epoch=epoch, TotalEnvInteracts=total_env_interacts, Time=elapsed)
    for key, kind in epoch_columns(keys, success):
        if kind == "value":
            logger.log_tabular(key, values[key])
        else:
            logger.log_tabular(key, with_min_and_max=kind == "stats", average_only=kind == "mean")
    logger.dump_tabular()
    if warning:
        logger.log(warning, color="yellow")


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

    from spinup_tf2.rundir import output_dir_for

    logger_kwargs = dict(output_dir=output_dir_for(args.exp_name, args.seed),
                         exp_name=args.exp_name)
    sac(lambda: gym.make(args.env), actor_critic=core.MLPActorCritic,
        ac_kwargs=dict(hidden_sizes=[args.hid] * args.l),
        gamma=args.gamma, seed=args.seed, epochs=args.epochs,
        logger_kwargs=logger_kwargs)
