"""What ``sac()`` refuses, and why: argument, space and alpha checks, and the
stop on non-finite updates. Each raises :class:`SpinupError` with one
paragraph naming the bad value and what would be accepted.

Nothing here imports TensorFlow, so the command line can run the same checks
before it launches anything.
"""

from __future__ import annotations

import numpy as np
from gymnasium import spaces

from spinup_tf2 import rundir
from spinup_tf2.arguments import CHECKED, FLOAT32_MAX, SEED_LIMIT, problem  # noqa: F401
from spinup_tf2.errors import SpinupError
from spinup_tf2.family import FAMILY_NAMES, REFUSED_SWITCHES
from spinup_tf2.utils.mpi_tools import num_procs

# With n discrete actions and alpha='auto', the target entropy is this fraction of log(n)
# (the entropy of the uniform policy).
DISCRETE_ENTROPY_FRACTION = 0.5




def _is_int(x) -> bool:
    return isinstance(x, (int, np.integer)) and not isinstance(x, bool)


def _is_num(x) -> bool:
    return isinstance(x, (int, float, np.integer, np.floating)) and not isinstance(x, bool)


# Run settings that were logger_kwargs keys in 0.1 and are sac() arguments now.
MOVED_FROM_LOGGER_KWARGS = ("overwrite", "video_freq")
LOGGER_KWARGS = ("output_dir", "exp_name", "output_fname", "tensorboard", "outputs", "quiet")


def run_settings(args: dict, note: bool = False,
                 settle: bool = False) -> tuple[dict, bool, int]:
    """``(logger_kwargs, overwrite, video_freq)`` from sac()'s arguments ``args``: a
    deprecated ``logger_kwargs`` key (``overwrite``, ``video_freq``) is taken out of
    logger_kwargs and used where its sac() argument is left at its default; with
    ``note``, one line says so; with ``settle``, ``args`` is updated to them (the
    config.json a run writes holds the settings it used)."""
    logger_kwargs = dict(args.get("logger_kwargs") or {})
    values = {"overwrite": args.get("overwrite", False), "video_freq": args.get("video_freq", 0)}
    for key in MOVED_FROM_LOGGER_KWARGS:
        if key in logger_kwargs:
            value = logger_kwargs.pop(key)
            if values[key] in (False, 0):
                values[key] = value
            if note:
                print(f"Note: logger_kwargs['{key}'] is deprecated and will stop working in the "
                      f"next release; give sac({key}=...) (--{key}) instead.", flush=True)
    if settle:
        args.update(logger_kwargs=logger_kwargs, **values)
    return logger_kwargs, values["overwrite"], values["video_freq"]


def check_sac_args(args: dict):
    """Raise :class:`SpinupError` naming the first of ``sac()``'s arguments (a dict
    of them, e.g. ``locals()``; other keys are ignored) it cannot use; else
    return :func:`parse_alpha`'s reading of ``alpha`` and ``target_entropy``."""

    def need(ok, msg):
        if not ok:
            raise SpinupError(msg)

    for arg in CHECKED:  # declared bounds and choices, from spinup_tf2.arguments
        if arg.name in args:  # (a family function may not take it: crossq() has no polyak)
            need(problem(arg, args[arg.name]) is None, problem(arg, args[arg.name]))
    need(isinstance(args.get("logger_kwargs", {}), dict),
         f"sac() got logger_kwargs={args.get('logger_kwargs')!r}; it must be a dict, e.g. "
         f"dict(output_dir='data/run', exp_name='run').")
    logger_kwargs, overwrite, video_freq = run_settings(args)
    check_logger_kwargs(logger_kwargs)
    need(isinstance(overwrite, (bool, np.bool_)),
         f"sac() got overwrite={overwrite!r}; it must be True (replace an earlier run in the "
         f"output directory) or False (refuse to).")
    need(_is_int(video_freq) and video_freq >= 0,
         f"sac() got video_freq={video_freq!r} (--video_freq): give a whole number of epochs "
         f">= 1 between videos, or 0 for none.")
    if video_freq:
        from spinup_tf2.policy.video import check_video_path

        check_video_path(rundir.video_path(logger_kwargs.get("output_dir") or ".", 1))

    num_envs = args.get("num_envs", 1)
    ac = args.get("actor_critic")
    need(num_envs == 1 or not (args.get("recurrent") or ac == "recurrent"
                               or getattr(ac, "variant", None) == "recurrent"),
         f"sac() got num_envs={num_envs} with a recurrent actor-critic (--recurrent), which "
         f"steps one environment. Nothing was written. Use num_envs=1, or several MPI "
         f"processes (--cpu).")
    family = FAMILY_NAMES.get(ac) if isinstance(ac, str) else None
    switch = next((k for k in REFUSED_SWITCHES if args.get(k)), None)
    need(not (family and switch),
         f"{family} got --{switch}; {family} takes "
         f"vector observations with its own MLP actor-critic. Nothing was launched. Drop the "
         f"flag, or use the sac command for a recurrent or pixel agent.")
    # The launcher's variants say --recurrent (sac() from Python checks ac_kwargs against
    # the actor-critic itself): an MLP variant of a --recurrent True False grid would fail
    # only once launched, so it is refused with the grid.
    memory = sorted(set(args.get("ac_kwargs") or {}) & {"memory_size", "sequence_length",
                                                         "burn_in"})
    need(args.get("recurrent", True) or not memory,
         f"--ac_kwargs:{memory[0] if memory else ''} sets a recurrent actor-critic's memory, "
         f"but a variant of this command is not recurrent (--recurrent False, or no "
         f"--recurrent), and MLPActorCritic does not take it. Nothing was launched. Add "
         f"--recurrent; to compare with the MLP, launch the MLP runs in a command of their "
         f"own, with another --exp_name.")
    # Each MPI process steps num_envs copies through its share of an epoch.
    n_procs = num_procs()
    # (update_every need not be: a block comes with the step that passes each multiple.)
    for name, per_process, unit in (("steps_per_epoch", args["steps_per_epoch"] // n_procs,
                                      num_envs * n_procs),):
        need(per_process % num_envs == 0,
             f"sac() got {name}={args[name]} with num_envs={num_envs}"
             + (f" over {n_procs} MPI processes ({per_process} each)" if n_procs > 1 else "")
             + f": {name} counts transitions, and {num_envs} copies make {num_envs} at a time, "
               f"so it must be a multiple of {unit} (e.g. {name}="
               f"{max(1, args[name] // unit) * unit}).")
    need(args["replay_size"] >= args["batch_size"],
         f"sac() got replay_size={args['replay_size']} with batch_size={args['batch_size']}: "
         f"the replay buffer must hold at least one minibatch, so replay_size >= batch_size.")
    alpha = args["alpha"]
    if not isinstance(alpha, str):
        need(_is_num(alpha) and 0 <= alpha < FLOAT32_MAX,
             f"sac() got alpha={alpha!r}, but alpha (the entropy coefficient) must be a number "
             f">= 0 (finite in float32), 'auto' or 'auto_<initial alpha>'.")
    check_hidden_sizes(args.get("ac_kwargs"))
    env_fn = args.get("env_fn", callable)
    need(callable(env_fn), f"sac() needs env_fn to be a function that makes the environment, "
                           f"e.g. lambda: gymnasium.make('Pendulum-v1'); got {env_fn!r}.")
    return parse_alpha(alpha, args.get("target_entropy"))


def check_logger_kwargs(logger_kwargs: dict) -> None:
    """Refuse logger_kwargs keys EpochLogger does not take, and values of the wrong
    kind: a progress file name with a folder in it would write outside the run."""
    import os

    def need(ok, what):
        if not ok:
            raise SpinupError(f"sac() got logger_kwargs={logger_kwargs!r}: {what}")

    unknown = sorted(set(logger_kwargs) - set(LOGGER_KWARGS))
    need(not unknown, f"{', '.join(map(repr, unknown))} is not a logger setting; it takes "
                      f"{', '.join(LOGGER_KWARGS)}.")
    out, name = logger_kwargs.get("output_dir"), logger_kwargs.get("exp_name")
    need(out is None or (isinstance(out, (str, os.PathLike)) and str(out)),
         f"output_dir must be a path (a non-empty string), or None for the default; got "
         f"{out!r}.")
    need(name is None or isinstance(name, str),
         f"exp_name must be a string, or None; got {name!r}.")
    fname = logger_kwargs.get("output_fname", rundir.PROGRESS)
    need(fname is None or (isinstance(fname, str) and fname not in ("", ".", "..")
                           and os.sep not in fname and "\0" not in fname),
         f"output_fname must be a file name inside the run directory (no folder), e.g. "
         f"{rundir.PROGRESS!r}; got {fname!r}.")
    for key in ("tensorboard", "quiet"):
        need(isinstance(logger_kwargs.get(key, False), (bool, np.bool_)),
             f"{key} must be True or False; got {logger_kwargs.get(key)!r}.")
    outputs = logger_kwargs.get("outputs") or []
    need(isinstance(outputs, (list, tuple))
         and all(callable(getattr(o, "write", None)) for o in outputs),
         f"outputs must be a list of logx.Output objects (each with a write(row, index) "
         f"method); got {outputs!r}.")


def check_memory(replay_size: int, obs_dim: int | tuple, act_dim: int, n_procs: int = 1,
                 state_size: int = 0, frame_stack: int = 1, copies: int = 1) -> None:
    """Refuse a replay buffer larger than this machine's memory (numpy would reserve it
    lazily, and the run would be killed once it filled up). ``state_size``: the recurrent
    memory stored with each transition (and its episode-start flag), if any; for images
    (``obs_dim`` their shape), see :func:`check_frame_memory`."""
    import psutil

    if isinstance(obs_dim, tuple):
        return check_frame_memory(replay_size, obs_dim, frame_stack, act_dim, n_procs, copies)
    per_step = 2 * obs_dim + act_dim + 2 + (state_size + 1 if state_size else 0)
    need = replay_size * per_step * 4 * n_procs
    total = psutil.virtual_memory().total
    if need > total:
        raise SpinupError(
            f"sac() got replay_size={replay_size}: {n_procs} replay buffer(s) of that many "
            f"transitions of {obs_dim}-dim observations take {need / 2**30:.3g} GiB, more than "
            f"the {total / 2**30:.3g} GiB of memory here. Give replay_size at most "
            f"{total // (per_step * 4 * n_procs)}. Nothing was written.")


def check_frame_memory(replay_size: int, obs_shape: tuple, frame_stack: int, act_dim: int,
                       n_procs: int = 1, copies: int = 1) -> None:
    """Refuse a pixel replay buffer (:class:`FrameReplayBuffer`, ``frame_stack`` frames
    per observation, of ``copies`` environment copies) larger than the memory free now,
    with the size it would take and the largest ``replay_size`` that fits."""
    import psutil

    from spinup_tf2.algos.sac.frame_buffer import FrameReplayBuffer

    def need(size):
        return n_procs * FrameReplayBuffer.bytes_for(obs_shape, frame_stack, act_dim, size,
                                                     copies)

    free = psutil.virtual_memory().available
    if need(replay_size) <= free:
        return
    fits = max(0, int(replay_size * free / need(replay_size)))
    while fits > 0 and need(fits) > free:
        fits = int(fits * 0.99)
    raise SpinupError(
        f"sac() got replay_size={replay_size}: {n_procs} replay buffer(s) of that many "
        f"transitions of {'x'.join(map(str, obs_shape))} uint8 images ({frame_stack} frames "
        f"each, every frame stored once) take {need(replay_size) / 2**30:.3g} GiB, more than "
        f"the {free / 2**30:.3g} GiB of memory free here. Give replay_size at most {fits}. "
        f"Nothing was written.")


def parse_alpha(alpha, target_entropy):
    """``(alpha, tuner_args)`` from sac()'s ``alpha`` and ``target_entropy``.

    A number >= 0 is a fixed alpha (tuner_args None); ``'auto'`` learns alpha
    from 1.0, ``'auto_<x>'`` from x: then alpha is that initial value and
    tuner_args is ``(initial alpha, target_entropy)``, the target None when
    not given (:func:`default_target_entropy` then).
    """
    if isinstance(alpha, str):
        head, _, start = alpha.partition("_")
        try:
            initial = float(start) if start else 1.0
        except ValueError:
            initial = -1.0
        if head != "auto" or not (0 < initial < FLOAT32_MAX):
            raise SpinupError(
                f"sac() got alpha={alpha!r}: alpha is a number >= 0 (fixed), 'auto' (learned, "
                f"starting from 1.0) or 'auto_<x>' with x > 0 (learned, starting from x), "
                f"e.g. 'auto_0.1'.")
        if target_entropy is not None and not (_is_num(target_entropy)
                                               and np.isfinite(target_entropy)):
            raise SpinupError(f"sac() got target_entropy={target_entropy!r}; it must be a "
                              f"finite number, or None for the default (-act_dim, or "
                              f"{DISCRETE_ENTROPY_FRACTION} * log(n) for n discrete actions).")
        return initial, (initial, None if target_entropy is None else float(target_entropy))
    if target_entropy is not None:
        raise SpinupError(
            f"sac() got target_entropy={target_entropy!r} with a fixed alpha={alpha!r}: a "
            f"target entropy only matters when alpha is learned. Use alpha='auto' (or "
            f"'auto_<initial alpha>'), or drop target_entropy.")
    return alpha, None


def check_hidden_sizes(ac_kwargs) -> None:
    """Refuse ``ac_kwargs`` that is not a dict, or whose ``hidden_sizes`` is not a
    non-empty list of whole numbers >= 1."""
    if not isinstance(ac_kwargs, dict):
        raise SpinupError(f"sac() got ac_kwargs={ac_kwargs!r}; it must be a dict of keyword "
                          f"arguments for actor_critic, e.g. dict(hidden_sizes=[64, 64]).")
    sizes = ac_kwargs.get("hidden_sizes", (256, 256))
    if not (isinstance(sizes, (list, tuple)) and sizes
            and all(_is_int(n) and n >= 1 for n in sizes)):
        raise SpinupError(f"sac() got hidden_sizes={sizes!r}; it must be a non-empty list of "
                          f"whole numbers >= 1, the widths of the hidden layers, e.g. [256, 256] "
                          f"(--hid \"[256,256]\").")


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


def default_target_entropy(action_space) -> float:
    """``-act_dim`` for continuous actions, a fraction of ``log(n)`` for n discrete ones."""
    if isinstance(action_space, spaces.Discrete):
        return DISCRETE_ENTROPY_FRACTION * np.log(int(action_space.n))
    return -float(action_space.shape[0])


def check_spaces(observation_space, action_space, normalize_obs: bool = False) -> tuple:
    """Raise :class:`SpinupError` if the spaces are not what SAC handles here:
    1-D Box observations and Box actions with one symmetric bound (or Discrete).

    Returns ``(discrete, obs_dim, act_dim, n_noise)``: ``obs_dim`` is the
    observation width, or for images (:func:`is_image_space`) their shape;
    ``act_dim`` is an
    action's width in the replay buffer (1 for a discrete action, its index),
    ``n_noise`` the width of the acting noise (one per action when discrete).
    """
    if normalize_obs and not isinstance(observation_space, spaces.Box):
        raise SpinupError(f"normalize_obs=True needs a Box observation space (running mean "
                          f"and variance per dimension), but this environment's is "
                          f"{observation_space}. Drop normalize_obs or flatten the "
                          f"observations (gymnasium.wrappers.FlattenObservation).")
    if isinstance(action_space, spaces.Discrete):
        if action_space.start != 0 or action_space.n < 2:
            raise SpinupError(f"sac() needs a Discrete action space of at least 2 actions "
                              f"numbered from 0; this one is {action_space}.")
    elif not isinstance(action_space, spaces.Box):
        raise SpinupError(
            f"sac() needs a continuous (gymnasium.spaces.Box) or a Discrete action space, but "
            f"this environment's action space is {action_space}. Flatten it or pick one part "
            f"with a wrapper.")
    low = np.asarray(getattr(action_space, "low", -1.0))
    high = np.asarray(getattr(action_space, "high", 1.0))
    bad_box = (len(action_space.shape) != 1 or not np.all(np.isfinite(high))
               or not np.all(high > 0) or not np.allclose(high, high.flat[0])
               or not np.allclose(low, -high))
    if isinstance(action_space, spaces.Box) and not np.all(np.isfinite(np.r_[low.ravel(),
                                                                            high.ravel()])):
        raise SpinupError(
            f"sac() needs bounded actions (it squashes them into the bounds with tanh), but "
            f"this action space is unbounded: low={low.tolist()}, high={high.tolist()}. Give "
            f"the environment finite action bounds (gymnasium's ClipAction over a bounded "
            f"environment is fine: SAC acts within the bounds it clips to).")
    if isinstance(action_space, spaces.Box) and bad_box:
        raise SpinupError(
            f"sac() needs 1-D actions bounded by the same [-a, a] in every dimension (it squashes "
            f"actions with a * tanh), but this action space has low={low.tolist()} and "
            f"high={high.tolist()}. Rescale them with gymnasium's wrapper: env_fn=lambda: "
            f"gymnasium.wrappers.RescaleAction(gymnasium.make(...), -1.0, 1.0); the run records "
            f"the wrapper, so test_policy replays the policy through it too.")
    if is_image_space(observation_space):
        if normalize_obs:
            raise SpinupError(f"normalize_obs=True standardizes each observation dimension, "
                              f"but this environment's observations are images "
                              f"({observation_space}), which the pixel actor-critic scales "
                              f"to [0, 1] itself. Drop normalize_obs.")
    elif not isinstance(observation_space, spaces.Box) or len(observation_space.shape) != 1:
        raise SpinupError(
            f"sac() needs 1-D (gymnasium.spaces.Box) observations for its MLP networks, but this "
            f"environment's observation space is {observation_space}. Flatten it with "
            f"gymnasium.wrappers.FlattenObservation(env); images must be uint8 in [0, 255], "
            f"Box(0, 255, (height, width, channels), uint8) with frames stacked on the "
            f"channels, or channels-first (channels, height, width), or (height, width) "
            f"(--pixels makes them from any environment that renders).")
    discrete = isinstance(action_space, spaces.Discrete)
    act_dim = 1 if discrete else action_space.shape[0]
    n_noise = int(action_space.n) if discrete else act_dim
    obs_dim = (tuple(observation_space.shape) if is_image_space(observation_space)
               else observation_space.shape[0])
    return discrete, obs_dim, act_dim, n_noise


def is_image_space(space) -> bool:
    """Whether observations of ``space`` are images SAC learns from with its pixel
    actor-critic: ``Box(0, 255, (H, W, C), uint8)``."""
    return (isinstance(space, spaces.Box) and space.dtype == np.uint8
            and len(space.shape) == 3 and bool(np.all(space.low == 0))
            and bool(np.all(space.high == 255)))


def check_finite(info: dict, t: int, steps_per_epoch: int, last_saved_epoch: int,
                 output_dir: str | None) -> None:
    """Stop the run with a clear message when an update produced NaN or inf."""
    bad = [k for k in ("LossPi", "LossQ1", "LossQ2") if not np.all(np.isfinite(info[k]))]
    if not bad:
        return
    where = output_dir or "(no output directory)"
    saved = (f"the checkpoint of epoch {last_saved_epoch} in {where} (tf2_save/, vars.pkl) and "
             f"progress.txt up to that epoch are intact" if last_saved_epoch
             else "no checkpoint had been saved yet")
    raise FloatingPointError(
        f"SAC stopped at env step {t} (epoch {t // steps_per_epoch + 1}): the update produced "
        f"non-finite values in {', '.join(bad)}. Nothing more was written: {saved}. Usual causes "
        f"are a learning rate too large for the reward scale, rewards of huge magnitude, or NaN "
        f"in the observations; try a smaller lr or rescaled rewards.")


def q_runaway(epoch_dict: dict, rewards: np.ndarray | None, gamma: float,
              alpha: float | None = None) -> str | None:
    """A warning (one paragraph) when the critics' mean Q of an epoch lies far outside
    what the stored rewards can give, else None: the sign of critics that feed on their
    own overestimates (many updates per step on little data, a learning rate too large).

    The soft Q of any policy lies in ``[L, U]``::

        U = (max r + alpha * max(0, -min log pi)) / (1 - gamma)
        L = (min r - alpha * max(0, max log pi)) / (1 - gamma)

    with the epoch's extremes of ``LogPi`` and ``Alpha`` (or the fixed ``alpha``) standing in
    for the policy's. A critic's mean beyond that range by its whole width (at least the
    larger bound's size, and at least ``1 / (1 - gamma)``) is reported: the slack keeps a run
    that is merely noisy, or whose n-step rewards (sums of several steps, bootstrapped at
    ``gamma ** n``, which this bound overstates) sit near the bounds, from being called
    diverging.

    Args:
        epoch_dict: The logger's stored values of the epoch (``Q1Vals`` ... ``QNVals``,
            ``LogPi``, ``Alpha``).
        rewards: Every reward stored so far, or None (a buffer that does not show them).
        gamma: The discount; at 1 no bound holds and nothing is reported.
        alpha: The entropy weight when fixed; None when learned (then ``Alpha`` is read).
    """
    def parts(key):  # array by array: an epoch of REDQ holds ~20 million values a critic
        return [np.asarray(v) for v in epoch_dict.get(key, []) if np.size(v)]

    means = {k: sum(float(np.sum(v)) for v in p) / sum(v.size for v in p)
             for k in sorted(epoch_dict)
             if k[0] == "Q" and k.endswith("Vals") and k[1:-4].isdigit() and (p := parts(k))}
    logp, alphas = parts("LogPi"), parts("Alpha") if alpha is None else [np.array(alpha)]
    if (not means or rewards is None or np.size(rewards) == 0 or not logp or not alphas
            or gamma >= 1 or not all(np.isfinite(m) for m in means.values())):
        return None
    lo, hi = min(float(np.min(v)) for v in logp), max(float(np.max(v)) for v in logp)
    a, horizon = max(float(np.max(v)) for v in alphas), 1.0 / (1.0 - gamma)
    r_min, r_max = float(np.min(rewards)), float(np.max(rewards))
    upper = (r_max + a * max(0.0, -lo)) * horizon
    lower = (r_min - a * max(0.0, hi)) * horizon
    # At least one reward unit a step: rewards all alike (none yet of a sparse task) give
    # L = U, and a fresh critic's small values must not read as divergence.
    slack = max(upper - lower, abs(upper), abs(lower), horizon)
    key, q = max(means.items(), key=lambda kv: abs(kv[1]))
    if lower - slack <= q <= upper + slack:
        return None
    return (f"Warning: the critics are diverging: this epoch's mean {key} is {q:.4g}, but "
            f"rewards in [{r_min:.4g}, {r_max:.4g}] with gamma {gamma:g}, alpha up to {a:.4g} "
            f"and log pi in [{lo:.4g}, {hi:.4g}] allow "
            f"[{lower:.4g}, {upper:.4g}]. The run goes on, but its policy chases these "
            f"values. Usual causes: many updates per step on little data (a high "
            f"updates_per_step from an early update_after; REDQ and DroQ start at 5,000 or "
            f"regularize their critics), a learning rate too large for the reward scale, or "
            f"rewards of huge magnitude. This warning is not repeated in this run.")


def stored_rewards(replay_buffer) -> np.ndarray | None:
    """The rewards ``replay_buffer`` holds (its ``rew_buf`` up to its ``size``), or None for
    one that does not show them (a user's own class)."""
    buf, size = getattr(replay_buffer, "rew_buf", None), getattr(replay_buffer, "size", None)
    if buf is None or not isinstance(size, (int, np.integer)):
        return None
    return np.asarray(buf[:int(size)])


class RunawayWatch:
    """:func:`q_runaway` over a run: called with each epoch's stored values, it returns
    the warning the first time the critics run away, and None ever after (one warning per
    run, however long the run stays diverged).

    Args:
        replay_buffer: The run's buffer, whose rewards (:func:`stored_rewards`) give the bound.
        gamma: The discount.
        alpha: The entropy weight when fixed; None when learned (the logged ``Alpha``).
    """

    def __init__(self, replay_buffer, gamma: float, alpha: float | None):
        self.replay_buffer, self.gamma, self.alpha = replay_buffer, gamma, alpha
        self.warned = False

    def __call__(self, epoch_dict: dict) -> str | None:
        if self.warned:
            return None
        warning = q_runaway(epoch_dict, stored_rewards(self.replay_buffer), self.gamma,
                            self.alpha)
        self.warned = warning is not None
        return warning
