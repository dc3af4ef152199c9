"""Box actions with bounds of their own in each dimension (CarRacing's ``[-1, 0, 0]`` to
``[1, 1, 1]``, many robot arms), as the policy acts in them.

SAC squashes its actions into ``[-a, a]`` with ``a * tanh``. For any other finite bounds
the policy acts in ``[-1, 1]`` in every dimension and each action is mapped linearly onto
the environment's bounds (:class:`ActionScale`) where episodes are stepped
(:class:`~spinup_tf2.envs.episodes.ReplayableEpisodes`,
:class:`~spinup_tf2.envs.vector.VectorEpisodes`), so the replay buffer and the critics see
``[-1, 1]``; the saved policy and its exports give actions in the environment's units (and
its critics take them so), mapped inside.
"""

from __future__ import annotations

import numpy as np
from gymnasium import spaces


class ActionScale:
    """The linear map from ``[-1, 1]`` onto a Box's bounds.

    Attributes:
        low, high: The environment's bounds (float64).
        center, half: ``(high + low) / 2`` and ``(high - low) / 2``.
        space: The Box ``[-1, 1]`` (float32) the policy acts in.
    """

    def __init__(self, space: spaces.Box):
        self.low, self.high = (np.asarray(b, np.float64) for b in (space.low, space.high))
        self.center, self.half = (self.high + self.low) / 2, (self.high - self.low) / 2
        self.dtype = space.dtype
        self.space = spaces.Box(-1.0, 1.0, space.shape, np.float32)

    def to_env(self, action) -> np.ndarray:
        """An action in ``[-1, 1]`` (or a batch of them) in the environment's units."""
        out = np.clip(self.center + self.half * np.asarray(action, np.float64), self.low,
                      self.high)
        return out.astype(self.dtype)


def action_scale(space) -> ActionScale | None:
    """The :class:`ActionScale` of a 1-D Box with finite bounds that are not ``[-a, a]`` in
    every dimension; None for any other space (SAC's ``a * tanh`` takes it as it is, or
    it is refused elsewhere)."""
    if not isinstance(space, spaces.Box) or len(space.shape) != 1:
        return None
    low, high = np.asarray(space.low, np.float64), np.asarray(space.high, np.float64)
    if not (np.all(np.isfinite(low)) and np.all(np.isfinite(high)) and np.all(high > low)):
        return None
    if np.all(high > 0) and np.allclose(high, high.flat[0]) and np.allclose(low, -high):
        return None
    return ActionScale(space)
