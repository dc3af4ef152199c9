"""The spaces SAC can learn on: what ``sac()`` refuses of an environment's observation and
action spaces (in one paragraph each, before anything is written), and the target entropy
a learned alpha aims at on them."""

from __future__ import annotations

import numpy as np
from gymnasium import spaces

from spinup_tf2.errors import SpinupError

# With n discrete actions and alpha='auto', the target entropy is this fraction of log(n)
# (the entropy of the uniform policy).
DISCRETE_ENTROPY_FRACTION = 0.5


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


def check_same_spaces(train: tuple, test: tuple) -> None:
    """Refuse a test environment whose spaces (as the networks see them: ``(layout,
    scale, observation space, action space)``, :func:`~spinup_tf2.envs.network_spaces`)
    are not the training one's: sac() calls ``env_fn`` twice, and the policy trained on
    one acts in the other."""
    for what, a, b in (("observation", train[2], test[2]), ("action", train[3], test[3])):
        if a != b:
            raise SpinupError(f"env_fn made a training environment and a test environment "
                              f"with different {what} spaces ({a} and {b}): sac() calls "
                              f"env_fn twice, for training and for the test episodes, and "
                              f"both must give the same spaces. Nothing was written. Make "
                              f"env_fn return the same kind of environment each time.")
