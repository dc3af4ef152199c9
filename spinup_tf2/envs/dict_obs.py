"""Dict observations (goal-conditioned robotics: ``observation``, ``achieved_goal``,
``desired_goal``), as the networks and the replay buffer see them.

A ``gymnasium.spaces.Dict`` of Box entries is read in the space's own key order (gymnasium
sorts the keys of a plain dict; an OrderedDict keeps its order), each entry flattened and
all concatenated into one float32 vector (:class:`DictLayout`). The environment keeps
giving dicts: training flattens them where episodes are stepped
(:class:`~spinup_tf2.envs.episodes.ReplayableEpisodes`, :class:`~spinup_tf2.envs.vector.
VectorEpisodes`), so the replay buffer holds each entry once, in its slice of the vector
(:attr:`DictLayout.slices`, which hindsight relabelling writes goals into); the saved
policy and its exports take the dict, one named input per key, and flatten it inside.
"""

from __future__ import annotations

import numpy as np
from gymnasium import spaces

from spinup_tf2.errors import SpinupError


class DictLayout:
    """Where each entry of a Dict observation lies in the flat vector.

    Attributes:
        keys: The entries, in the order they are concatenated.
        shapes: Each entry's shape (as its Box gives it).
        slices: Each entry's slice of the flat vector.
        space: The flat ``Box`` (float32) the networks see.
    """

    def __init__(self, space: spaces.Dict):
        self.keys = tuple(space.spaces)
        self.shapes = {k: tuple(space[k].shape) for k in self.keys}
        sizes = [int(np.prod(self.shapes[k])) for k in self.keys]
        ends = np.cumsum(sizes)
        self.slices = {k: slice(int(e - n), int(e)) for k, n, e in zip(self.keys, sizes, ends)}
        low = np.concatenate([np.ravel(space[k].low) for k in self.keys]).astype(np.float32)
        high = np.concatenate([np.ravel(space[k].high) for k in self.keys]).astype(np.float32)
        self.space = spaces.Box(low, high, dtype=np.float32)

    @property
    def width(self) -> int:
        """The flat vector's length."""
        return int(self.space.shape[0])

    def flatten(self, obs: dict) -> np.ndarray:
        """One observation (a dict) as its flat float32 vector."""
        return np.concatenate([np.asarray(obs[k], np.float32).reshape(-1) for k in self.keys])

    def flatten_batch(self, obs: dict) -> np.ndarray:
        """A batch of observations (a dict of arrays with a leading batch axis, as vector
        environments give them) as ``[batch, width]``."""
        n = len(np.asarray(obs[self.keys[0]]))
        return np.concatenate([np.asarray(obs[k], np.float32).reshape(n, -1)
                               for k in self.keys], axis=1)

    def unflatten(self, flat: np.ndarray) -> dict:
        """The dict of a flat vector (or of a batch of them, ``[batch, width]``)."""
        flat = np.asarray(flat)
        lead = flat.shape[:-1]
        return {k: flat[..., self.slices[k]].reshape(*lead, *self.shapes[k]) for k in self.keys}


def dict_layout(space) -> DictLayout | None:
    """The :class:`DictLayout` of a Dict observation space, None for any other space; a
    Dict SAC cannot read (empty, nested, a Tuple or a non-Box entry, an image beside the
    vectors) is a :class:`SpinupError` that says which entry and what to do."""
    if not isinstance(space, spaces.Dict):
        return None
    if not space.spaces:
        raise SpinupError("sac() got an empty Dict observation space; the environment must "
                          "observe something. Nothing was written.")
    for key, entry in space.spaces.items():
        what = None
        if isinstance(entry, (spaces.Dict, spaces.Tuple)):
            what = f"is itself a {type(entry).__name__} ({entry})"
        elif not isinstance(entry, spaces.Box):
            what = f"is {entry}, not a Box of numbers"
        elif entry.dtype == np.uint8 and len(entry.shape) >= 2:
            what = f"is an image ({entry})"
        if what is not None:
            raise SpinupError(
                f"sac() reads Dict observations whose entries are Box vectors (concatenated in "
                f"the space's key order), but the entry {key!r} {what}. Nothing was written. "
                f"Flatten the whole observation with gymnasium.wrappers.FlattenObservation "
                f"(nested spaces and Discrete entries become one vector, one-hot), or keep "
                f"only the vector entries with gymnasium.wrappers.FilterObservation; images "
                f"are read on their own (--pixels), not beside vectors.")
    return DictLayout(space)
