"""The kinds of SAC agent, each one named record (:class:`Variant`).

``sac()`` picks one record once, from the actor-critic and the spaces
(:func:`pick_variant`), and builds everything that differs between kinds from it: the
actor-critic, the losses, the replay buffer, the acting agent, what ``tf2_save/`` holds,
the logged diagnostics, and the shape of the update (whether target networks exist, how
often the policy steps, Adam's betas; the actor-critic's ``critics`` say how many).
``sac()`` itself tests no kind.

The records here: ``mlp`` (Spinning Up's SAC), ``discrete`` (SAC for discrete actions),
``pixels`` (DrQ's SAC from images), ``recurrent`` (memory), and one per member of the SAC
family, made from its entry (:mod:`spinup_tf2.family`, :func:`family_record`). A new kind is
a new record, or for the family a new entry; see "How to add a variant" in
``docs/design.md``. An actor-critic
class names its record with a class attribute ``variant`` (a record's name, or a
:class:`Variant` itself).
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable
from dataclasses import dataclass

from spinup_tf2.algos.sac import core, pixels, recurrent
from spinup_tf2.algos.sac.agent import MLPAgent
from spinup_tf2.algos.sac.buffers import ReplayBuffer
from spinup_tf2.algos.sac.frame_buffer import FrameReplayBuffer
from spinup_tf2.algos.sac.losses import continuous_losses, discrete_losses, losses_for
from spinup_tf2.algos.sac.memory import check_memory
from spinup_tf2.algos.sac.nstep import NStepReturns
from spinup_tf2.envs.spaces import is_image_space
from spinup_tf2.errors import SpinupError
from spinup_tf2.family import EACH_STEP, FAMILY_NAMES, MEMBERS, Member
from spinup_tf2.utils.mpi_tools import num_procs

# What every minibatch holds, in the order the update takes it.
BATCH_KEYS = ("obs", "act", "rew", "obs2", "discount")


@dataclass(frozen=True)
class Variant:
    """One kind of SAC agent: what ``sac()`` builds for it, and the shape of its update.

    Attributes:
        name: The record's name (``--recurrent`` resolves to ``'recurrent'``).
        actor_critic: The actor-critic it uses when the user gives the default one.
        losses: ``losses(ac, ac_targ, o, a, r, o2, discount, noise, alpha, *extra) ->``
            :class:`~spinup_tf2.algos.sac.losses.SACLosses`, with one Q loss per critic.
        replay_buffer: ``replay_buffer(obs_dim, act_dim, size, ac, frame_stack, copies)``,
            the buffer (refusing first one that would not fit in memory).
        agent: ``agent(ac, rng, n_noise, discrete)``, an
            :class:`~spinup_tf2.algos.sac.agent.Agent`.
        export: ``export(ac, obs_dim, n_noise)``, the ``tf.Module`` ``tf2_save/`` holds.
        batch_keys: The buffer's minibatch keys the update takes, in order.
        extra_inputs: ``extra_inputs(rng, ac, n_updates, batch_size)``, one more array the
            update takes after the buffer's (the pixel variant's random shifts), or None.
        updates_per_call: Updates per compiled call: 0 for a whole block (the fast path),
            1 for one call per update (pixels, to repeat exactly).
        ragged: Its per-update diagnostics differ in length (recurrent, masked windows).
        targets: Whether target networks exist (polyak-averaged critics); without them
            the losses get ``ac_targ=None``.
        policy_delay: Critic updates per policy (and alpha) update, or
            :data:`~spinup_tf2.family.EACH_STEP`: one per environment step (every
            ``updates_per_step`` updates); see :meth:`delay`.
        critic_losses: With ``policy_delay`` > 1, the losses without the policy's part
            (``loss_pi`` and ``logp_pi`` None), for the updates on which the policy does not
            step, so that they skip its work (and its training-mode statistics); None: the
            full losses on every update.
        adam_betas: Adam's ``(beta_1, beta_2)`` for the policy and the critics.
        keeps: What its buffer keeps: ``'transitions'`` (single steps: n-step returns and
            hindsight relabelling apply, :mod:`spinup_tf2.algos.sac.replay`), or steps in
            order, ``'frames'`` or ``'windows'`` (neither applies).
        returns: ``returns(buffer, n_step, gamma, copies, episodes_continue)``, what the
            environment loop stores into and the update samples from (NStepReturns'
            protocol, :class:`~spinup_tf2.algos.sac.nstep.NStepReturns` itself unless the
            variant keeps more, such as statistics of the rewards it scales).
        lr_end: The learning rate decays linearly from ``lr`` to this over the run's
            updates (the optimizers' and alpha's); None: it stays ``lr``.
        entropy_scale: The default target entropy is ``default_target_entropy`` times this.
    """

    name: str
    actor_critic: Callable
    losses: Callable
    replay_buffer: Callable
    agent: Callable
    export: Callable
    batch_keys: tuple = BATCH_KEYS
    extra_inputs: Callable | None = None
    updates_per_call: int = 0
    ragged: bool = False
    targets: bool = True
    policy_delay: int | str = 1
    adam_betas: tuple = (0.9, 0.999)
    critic_losses: Callable | None = None
    keeps: str = "transitions"
    returns: Callable = NStepReturns
    lr_end: float | None = None
    entropy_scale: float = 1.0

    def agent_and_export(self, ac, rng, n_noise: int, discrete: bool, obs_dim: int | tuple,
                         spaces) -> tuple:
        """``(get_action, saved_model)``: the agent acting with ``ac`` and the module
        ``tf2_save/`` holds, in the environment's terms (``spaces``, see
        :func:`spinup_tf2.algos.sac.core.environment_export`)."""
        return (self.agent(ac, rng, n_noise, discrete),
                core.environment_export(self.export(ac, obs_dim, n_noise), spaces))

    def delay(self, updates_per_step: int) -> int:
        """Critic updates per policy update, at ``updates_per_step`` updates per
        environment step."""
        return updates_per_step if self.policy_delay == EACH_STEP else self.policy_delay


def check_ac_kwargs(actor_critic, ac_kwargs: dict) -> None:
    """Refuse ``ac_kwargs`` that ``actor_critic`` does not take, and an activation
    that is neither a function nor a name Keras knows."""
    import inspect

    try:
        params = inspect.signature(actor_critic).parameters
    except (TypeError, ValueError):
        return  # nothing to check against
    if not any(p.kind == p.VAR_KEYWORD for p in params.values()):
        known = [k for k in params if k not in ("observation_space", "action_space",
                                                "obs_normalizer")]
        unknown = sorted(k for k in ac_kwargs if k not in known)
        if unknown:
            raise SpinupError(
                f"sac() got ac_kwargs with {', '.join(map(repr, unknown))}, which "
                f"{getattr(actor_critic, '__name__', actor_critic)} does not take; it takes "
                f"{', '.join(known) or 'no keyword arguments'}.")
    activation = ac_kwargs.get("activation")
    if activation is None or callable(activation):
        return
    import keras

    try:
        keras.activations.get(activation)
    except (ValueError, TypeError):
        raise SpinupError(f"sac() got activation={activation!r}; give a function such as "
                          f"tf.nn.relu (--act tf.nn.relu) or the name of a Keras activation "
                          f"('relu', 'tanh', ...).") from None


def transition_buffer(obs_dim: int | tuple, act_dim: int, size: int, ac=None,
                      frame_stack: int = 1, copies: int = 1):
    """A :class:`~spinup_tf2.algos.sac.buffers.ReplayBuffer`, or for images (``obs_dim``
    their shape) a :class:`~spinup_tf2.algos.sac.frame_buffer.FrameReplayBuffer` of
    ``frame_stack``-frame observations that stores each frame once (of ``copies``
    environment copies storing in turn); refused first if it would not fit in memory (one
    per MPI process)."""
    check_memory(size, obs_dim, act_dim, num_procs(), 0, frame_stack, copies)
    if isinstance(obs_dim, tuple):
        return FrameReplayBuffer(obs_dim, frame_stack, act_dim, size, copies)
    return ReplayBuffer(obs_dim, act_dim, size)


def window_buffer(obs_dim: int, act_dim: int, size: int, ac, frame_stack: int = 1,
                  copies: int = 1):
    """The recurrent variant's buffer of windows, with the memory ``ac`` stores."""
    check_memory(size, obs_dim, act_dim, num_procs(), ac.state_size)
    return recurrent.SequenceReplayBuffer.for_actor_critic(ac, obs_dim, act_dim, size)


def _on_features(wrapper: Callable) -> Callable:
    """The losses of the actor-critic's action space, run by ``wrapper`` (pixel features,
    recurrent windows): ``wrapper(losses, ac, ac_targ, ...)``."""
    @functools.wraps(wrapper)
    def losses(ac, ac_targ, *args):
        return wrapper(losses_for(ac), ac, ac_targ, *args)
    return losses


MLP = Variant("mlp", core.MLPActorCritic, continuous_losses, transition_buffer, MLPAgent,
              core.ActorCriticExport)
DISCRETE = Variant("discrete", core.DiscreteMLPActorCritic, discrete_losses, transition_buffer,
                   MLPAgent, core.ActorCriticExport)
PIXELS = Variant("pixels", pixels.PixelActorCritic, _on_features(pixels.pixel_losses),
                 transition_buffer, MLPAgent, core.ActorCriticExport,
                 extra_inputs=pixels.shift_draws, updates_per_call=1, keeps="frames")
RECURRENT = Variant("recurrent", recurrent.RecurrentActorCritic,
                    _on_features(recurrent.sequence_losses), window_buffer,
                    lambda ac, rng, n_noise, discrete: recurrent.RecurrentAgent(ac, rng, n_noise),
                    recurrent.RecurrentExport, batch_keys=BATCH_KEYS + recurrent.SEQUENCE_KEYS,
                    ragged=True, keeps="windows")


def _named(module: str, ref: str) -> Callable:
    """The object ``ref`` names: ``'name'`` in ``module``, or ``'module:name'``."""
    module, _, name = ref.rpartition(":") if ":" in ref else (module, ":", ref)
    return getattr(importlib.import_module(module), name)


def family_record(member: Member) -> Variant:
    """The record of a member of the family (:mod:`spinup_tf2.family`): its entry's
    update shape, with the actor-critic, the losses and the extra inputs of its math file.
    Every member takes vector observations and Box actions, through the transition buffer,
    the MLP agent and the plain export."""
    losses = _named(member.math, member.losses)
    extra = _named(member.math, member.extra_inputs) if member.extra_inputs else None
    return Variant(member.name, _named(member.math, member.actor_critic), losses,
                   transition_buffer, MLPAgent, core.ActorCriticExport, extra_inputs=extra,
                   targets=member.targets, policy_delay=member.policy_delay,
                   adam_betas=member.adam_betas,
                   critic_losses=(functools.partial(losses, policy=False)
                                  if member.skip_policy else None),
                   returns=_named(member.math, member.returns) if member.returns
                   else NStepReturns, lr_end=member.lr_end,
                   entropy_scale=member.entropy_scale)


FAMILY = tuple(family_record(m) for m in MEMBERS.values())  # vector observations, Box actions
VARIANTS = {v.name: v for v in (MLP, DISCRETE, PIXELS, RECURRENT, *FAMILY)}


def variant_of(ac) -> Variant:
    """The record of a built actor-critic: the one its class names (``variant``), else
    ``discrete`` or ``mlp`` by ``ac.discrete``."""
    kind = ac.variant
    if isinstance(kind, Variant):
        return kind
    if kind is not None:
        return VARIANTS[kind]
    return DISCRETE if ac.discrete else MLP


def pick_variant(actor_critic, ac_kwargs: dict, observation_space, discrete: bool) -> tuple:
    """``(variant, actor_critic)``: the record for this actor-critic, these observations and
    actions (``discrete``: a Discrete action space), and the actor-critic to build, after
    checking that it takes ``ac_kwargs``: what everything ``sac()`` builds follows.

    ``actor_critic`` may be a record's name (``'recurrent'``: its actor-critic). An
    actor-critic whose class names a record (``variant = 'recurrent'``, or a
    :class:`Variant`) gets it; the default one gets ``pixels`` on image observations
    (then :class:`~spinup_tf2.algos.sac.pixels.PixelActorCritic`) and ``discrete`` on a
    Discrete action space (:class:`~spinup_tf2.algos.sac.core.DiscreteMLPActorCritic`);
    any other gets ``discrete`` or ``mlp`` by ``discrete``."""
    images = is_image_space(observation_space)
    if isinstance(actor_critic, str):
        if actor_critic not in VARIANTS:
            raise SpinupError(f"sac() got actor_critic={actor_critic!r}, which names no "
                              f"variant; give an actor-critic class or one of "
                              f"{', '.join(map(repr, VARIANTS))}. Nothing was written.")
        variant = VARIANTS[actor_critic]
        if variant in (MLP, DISCRETE):  # by name: the one the action space needs
            variant = DISCRETE if discrete else MLP
        actor_critic = variant.actor_critic
    kind = getattr(actor_critic, "variant", None)
    if isinstance(kind, Variant):
        variant = kind
    elif kind is not None:
        variant = VARIANTS[kind]
    elif images and actor_critic is core.MLPActorCritic:
        variant, actor_critic = PIXELS, PIXELS.actor_critic
    elif discrete:
        variant = DISCRETE
        if actor_critic is core.MLPActorCritic:
            actor_critic = DISCRETE.actor_critic
    else:
        variant = MLP
    if variant in FAMILY and (images or discrete):
        what = "image observations" if images else "a Discrete action space"
        name = FAMILY_NAMES[variant.name]
        raise SpinupError(f"sac() got {what} with {name} (actor_critic={variant.name!r}), "
                          f"which takes vector observations and Box actions. Nothing was "
                          f"written. Use SAC for this task, or {name} without --pixels or a "
                          f"Discrete action space.")
    if images and variant is RECURRENT:
        raise SpinupError("sac() got image observations with a recurrent actor-critic "
                          "(--recurrent), which reads vector observations only. Nothing was "
                          "written. Drop --recurrent (frame stacking, as --pixels does, "
                          "gives the policy the recent past).")
    check_ac_kwargs(actor_critic, ac_kwargs)
    return variant, core.adapt(actor_critic)  # a user's class takes the protocol's defaults
