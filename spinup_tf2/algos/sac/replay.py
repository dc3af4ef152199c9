"""The replay door: every kind of replay ``sac()`` runs on, and the minibatches its updates
take.

``sac()`` asks here once for what its replay refuses (:func:`check_replay`, before anything
is written) and once for its buffer (:func:`make_replay`): the variant record's own
(``replay_buffer``: transitions, image frames stored once, recurrent windows, as its
``keeps`` field says) or a user's class (``replay_buffer_class``), fed n-step returns by
:class:`~spinup_tf2.algos.sac.nstep.NStepReturns`; or, with ``her``, hindsight relabelling's
:class:`~spinup_tf2.algos.sac.her.HerReplayBuffer`, which makes its n-step returns itself.
Either one knows gamma and names each minibatch's backup ``discount``
(:func:`~spinup_tf2.algos.sac.buffers.discount_of`). With ``replay='per'`` or ``'lap'``
the transitions are drawn by priority
(:class:`~spinup_tf2.algos.sac.priority.PrioritizedReplayBuffer`), each block's TD errors
written back as it ends (:func:`run_updates`).
What a kind of replay cannot do is read from the record's fields, never from its name.
Each block of updates draws its inputs here too (:func:`update_inputs`,
:func:`run_updates`).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from spinup_tf2.algos.sac import core
from spinup_tf2.algos.sac.her import HerReplayBuffer, check_her, goal_reward_fn
from spinup_tf2.algos.sac.memory import check_memory
from spinup_tf2.algos.sac.priority import PrioritizedReplayBuffer, check_priority
from spinup_tf2.algos.sac.variants import MLP, Variant
from spinup_tf2.errors import SpinupError
from spinup_tf2.utils.mpi_tf2 import average_params
from spinup_tf2.utils.mpi_tools import num_procs


def check_replay(variant: Variant, layout, env, args: dict, obs_dim: int | tuple,
                 act_dim: int) -> dict | None:
    """Refuse, before anything is written, the replay this run cannot have (``args``:
    sac()'s arguments): n-step returns or hindsight relabelling on a buffer that keeps its
    steps in order (the record's ``keeps``: frames or windows), HER beside a buffer of one's
    own, HER on a task that is not goal-conditioned
    (:func:`~spinup_tf2.algos.sac.her.check_her`), prioritized replay where it cannot work
    (:func:`~spinup_tf2.algos.sac.priority.check_priority`), and the update settings
    :func:`check_updates` refuses. Return what
    :class:`~spinup_tf2.algos.sac.her.HerReplayBuffer` takes besides its sizes (with
    ``her``; else None)."""
    n_step, her, replay_buffer_class = args["n_step"], args["her"], args["replay_buffer_class"]
    if variant.keeps != "transitions" and (n_step > 1 or her):
        what = f"n_step={n_step}" if n_step > 1 else "her=True"
        raise SpinupError(f"sac() got {what} with the {variant.name} variant, whose replay "
                          f"buffer keeps its steps in order ({variant.keeps}), not as single "
                          f"transitions. Nothing was written. Drop --{what.split('=')[0]} or "
                          f"--{variant.name}.")
    check_priority(args, variant)
    check_updates(args, variant, obs_dim, act_dim)
    if not her:
        return None
    if replay_buffer_class is not None:
        raise SpinupError("sac() got her=True and a replay_buffer_class; hindsight relabelling "
                          "is a replay buffer of its own (HerReplayBuffer). Nothing was "
                          "written. Give one or the other.")
    check_her(layout, env)
    return dict(layout=layout, compute_reward=goal_reward_fn(env),
                n_sampled_goal=args["n_sampled_goal"],
                goal_selection_strategy=args["goal_selection_strategy"])


def check_updates(args: dict, variant: Variant, obs_dim: int | tuple, act_dim: int) -> None:
    """Refuse, before anything is written, update settings that would fail only once
    training runs (``args``: sac()'s arguments): n-step windows longer than an episode, or
    that no step fills before the first update (the buffer would still be empty), and
    blocks of updates whose minibatches, drawn at once, outgrow this machine's memory."""
    n_step, num_envs, n_procs = args["n_step"], args["num_envs"], num_procs()
    if n_step > args["max_ep_len"]:
        raise SpinupError(f"sac() got n_step={n_step} with max_ep_len={args['max_ep_len']}: an "
                          f"n-step return sums at most one episode's rewards, so n_step must "
                          f"be at most max_ep_len. Nothing was written.")
    wait = (n_step - 1) * num_envs * n_procs  # steps before each copy fills its first window
    if wait > args["update_after"]:
        raise SpinupError(f"sac() got n_step={n_step} with update_after="
                          f"{args['update_after']}: the replay buffer holds its first "
                          f"{n_step}-step transition only after {n_step} steps of each of "
                          f"{num_envs * n_procs} environment copies, so the first update "
                          f"would find it empty. Give update_after >= {wait}, or a smaller "
                          f"n_step. Nothing was written.")
    if isinstance(obs_dim, tuple):
        return  # images: one update per call (variant.updates_per_call)
    blocks = max(1, -(-num_envs // args["update_every"]))
    per_call = variant.updates_per_call or blocks * args["update_every"] * args[
        "updates_per_step"]
    batch_bytes = args["batch_size"] * ((2 * obs_dim + act_dim + 4) * 4 + 8)
    import psutil

    free = psutil.virtual_memory().available
    if per_call * batch_bytes > free // 2:
        raise SpinupError(
            f"sac() got update_every={args['update_every']} with updates_per_step="
            f"{args['updates_per_step']} and batch_size={args['batch_size']}: each block of "
            f"{per_call:,} updates draws its minibatches at once, "
            f"{per_call * batch_bytes / 2**30:.3g} GiB, more than half the "
            f"{free / 2**30:.3g} GiB of memory free here. Give update_every x "
            f"updates_per_step at most {max(1, free // 2 // batch_bytes)}. Nothing was written.")


def make_replay(variant: Variant, ac, obs_dim: int | tuple, act_dim: int, replay_size: int,
                frame_stack: int = 1, copies: int = 1,
                replay_buffer_class: Callable | None = None, n_step: int = 1,
                gamma: float = 0.99, her: dict | None = None, priority: dict | None = None):
    """The run's replay buffer (refused first if it would not fit in memory): with ``her``
    (:func:`check_replay`'s answer) a HerReplayBuffer; with ``priority`` (a
    :class:`~spinup_tf2.algos.sac.priority.PrioritizedReplayBuffer`'s ``kind``, ``alpha``,
    ``beta`` and ``anneal_updates``) a prioritized buffer; else ``replay_buffer_class(obs_dim,
    act_dim, replay_size)`` when given, or the record's; all but HER's fed ``n_step``-step
    transitions of ``copies`` environment copies."""
    if her is not None:  # relabels at sampling time, n-step returns included
        check_memory(replay_size, obs_dim, act_dim, num_procs())
        return HerReplayBuffer(obs_dim, act_dim, replay_size, copies=copies, n_step=n_step,
                               gamma=gamma, episodes_continue=copies == 1, **her)
    if priority is not None:
        check_memory(replay_size, obs_dim, act_dim + 16, num_procs())  # + 2 float64 trees
        buffer = PrioritizedReplayBuffer(obs_dim, act_dim, replay_size, **priority)
    elif replay_buffer_class is not None:
        buffer = replay_buffer_class(obs_dim, act_dim, replay_size)
    else:
        buffer = variant.replay_buffer(obs_dim, act_dim, replay_size, ac, frame_stack, copies)
    return variant.returns(buffer, n_step, gamma, copies, episodes_continue=copies == 1)


def update_inputs(replay_buffer, batch_size: int, rng: np.random.Generator, n_updates: int,
                  noise_dim: int, ac=None, variant: Variant = MLP) -> list:
    """The arrays one update block takes: ``n_updates`` minibatches (the ``variant``'s
    ``batch_keys``; the replay's minibatch names each backup's ``discount``), the policy's
    noise at o and o2 of every transition drawn (of every
    step, for windows), the variant's ``extra_inputs`` (a pixel actor-critic's random
    shifts of the images), and a prioritized replay's importance ``weights``."""
    batch = replay_buffer.sample_batch(batch_size, rng, n_batches=n_updates)
    noise = rng.standard_normal((n_updates, 2 * batch["rew"][0].size, noise_dim),
                                dtype=np.float32)
    extra = ([variant.extra_inputs(rng, ac, n_updates, batch_size)]
             if variant.extra_inputs is not None else [])
    keys = variant.batch_keys
    weights = [batch["weights"]] if "weights" in batch else []
    return ([batch[k] for k in keys[:5]] + [noise] + [batch[k] for k in keys[5:]] + extra
            + weights)


def run_updates(update_block: Callable, replay_buffer, batch_size: int,
                rng: np.random.Generator, n_updates: int, noise_dim: int, ac,
                variant: Variant = MLP, normalizer: core.ObsNormalizer | None = None) -> dict:
    """Run ``n_updates`` updates (:func:`update_inputs`, then ``update_block``) and return
    their diagnostics as numpy: in one call, or ``variant.updates_per_call`` at a time;
    then average ``ac``'s ``local_statistics`` across MPI processes. A ``normalizer`` first
    takes in the observations seen since the last block, so the updates see them. A
    prioritized replay takes each call's TD errors (``TD``) as the new priorities of the
    transitions it drew for that call.

    One call per image update keeps pixel runs reproducible: a compiled loop over several
    convolutional updates gave numbers that differed from process to process on the same
    seed (TensorFlow with two inter-op threads, 2026-11-24; one update per call, or one
    inter-op thread, did not). It also keeps one minibatch of images in memory at a time."""
    if normalizer is not None:
        normalizer.update()
    chunk = variant.updates_per_call or n_updates
    infos = []
    for _ in range(n_updates // chunk):
        info = dict(update_block(*update_inputs(replay_buffer, batch_size, rng, chunk,
                                                noise_dim, ac, variant)))
        if "TD" in info:
            replay_buffer.update_priorities(np.asarray(info.pop("TD")))
        infos.append(info)
    average_params(ac.local_statistics())  # one model on every process
    return {k: np.concatenate([np.asarray(i[k]) for i in infos]) for k in infos[0]}
