"""Observations the networks read in another layout than the environment gives them:
Dict observations (goal-conditioned robotics: ``observation``, ``achieved_goal``,
``desired_goal``) as one vector (:class:`DictLayout`), and images that are channels-first
or have no channel axis as ``(H, W, C)`` (:class:`ImageLayout`). Both are applied where
episodes are stepped and inside the saved policy, which takes what the environment gives.

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
        self.slices = {k: slice(int(e - n), int(e))
                       for k, n, e in zip(self.keys, sizes, ends, strict=True)}
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

    def tf_specs(self) -> dict:
        """What the saved policy takes: one float32 batch per key."""
        import tensorflow as tf

        return {k: tf.TensorSpec([None, *self.shapes[k]], tf.float32, name=k)
                for k in self.keys}

    def tf_flatten(self, x):
        """:meth:`flatten_batch` in TensorFlow, inside the saved policy."""
        import tensorflow as tf

        return tf.concat([tf.reshape(tf.cast(x[k], tf.float32),
                                     [-1, self.slices[k].stop - self.slices[k].start])
                          for k in self.keys], axis=-1)

    def unflatten(self, flat: np.ndarray) -> dict:
        """The dict of a flat vector (or of a batch of them, ``[batch, width]``)."""
        flat = np.asarray(flat)
        lead = flat.shape[:-1]
        return {k: flat[..., self.slices[k]].reshape(*lead, *self.shapes[k]) for k in self.keys}


def dict_layout(space) -> DictLayout | None:
    """The :class:`DictLayout` of a Dict observation space, None for any other space; a
    Dict SAC cannot read (empty, nested, a Tuple or a non-Box entry, an image beside the
    vectors, of any dtype) is a :class:`SpinupError` that names every such entry and what
    to do."""
    if not isinstance(space, spaces.Dict):
        return None
    if not space.spaces:
        raise SpinupError("sac() got an empty Dict observation space; the environment must "
                          "observe something. Nothing was written.")
    bad = [f"{key!r} {what}" for key, entry in space.spaces.items()
           if (what := _unreadable(entry)) is not None]
    if bad:
        raise SpinupError(
            f"sac() reads Dict observations whose entries are Box vectors (concatenated in "
            f"the space's key order), but of this one's entries {'; '.join(bad)}. Nothing "
            f"was written. Flatten the whole observation with "
            f"gymnasium.wrappers.FlattenObservation (nested spaces and Discrete entries "
            f"become one vector, one-hot; an image becomes its numbers, which suits a small "
            f"symbolic grid such as MiniGrid's 7x7x3, not a camera's frames), after "
            f"gymnasium.wrappers.FilterObservation keeps the entries it can flatten (not "
            f"text); images are read on their own (--pixels), not beside vectors.")
    return DictLayout(space)


def _unreadable(entry) -> str | None:
    """Why a Dict entry is not a vector :class:`DictLayout` concatenates, in words; None if
    it is one."""
    if isinstance(entry, (spaces.Dict, spaces.Tuple)):
        return f"is itself a {type(entry).__name__} ({entry})"
    if not isinstance(entry, spaces.Box):
        return f"is {entry}, not a Box of numbers"
    shape = entry.shape
    if (entry.dtype == np.uint8 and len(shape) >= 2) or len(shape) >= 3 or (
            len(shape) == 2 and min(shape) > 16):
        return f"is an image ({entry})"
    return None


def readable_chain(space) -> str | None:
    """The ``--env_wrappers`` chain (:func:`~spinup_tf2.envs.trust.parse_wrappers`) that
    makes ``space`` one vector: ``'FlattenObservation'`` for a Box of several axes that is
    not an image, a Discrete or Tuple space (one-hot codes), or a Dict whose every entry
    gymnasium can flatten; with
    ``FilterObservation`` first where some cannot be (text, graphs, sequences); None
    where no chain does (nothing flattenable)."""
    def flattenable(s) -> bool:
        if isinstance(s, spaces.Dict):
            return bool(s.spaces) and all(map(flattenable, s.spaces.values()))
        if isinstance(s, spaces.Tuple):
            return bool(s.spaces) and all(map(flattenable, s.spaces))
        return isinstance(s, (spaces.Box, spaces.Discrete, spaces.MultiDiscrete,
                              spaces.MultiBinary))

    if isinstance(space, spaces.Box):
        return "FlattenObservation" if len(space.shape) >= 2 else None
    if not isinstance(space, spaces.Dict):  # a Discrete state becomes one-hot, and so on
        return "FlattenObservation" if flattenable(space) else None
    keys = [k for k, s in space.spaces.items() if flattenable(s)]
    if not keys:
        return None
    if len(keys) == len(space.spaces):
        return "FlattenObservation"
    return f"FilterObservation(filter_keys={keys!r}), FlattenObservation"


class ImageLayout:
    """An image given channels-first ``(C, H, W)`` (gymnasium's frame stacks of grayscale
    frames, Atari's ``(4, 84, 84)``) or without a channel axis ``(H, W)`` (grayscale), read
    as ``(H, W, C)``, the pixel actor-critic's layout. Same methods as :class:`DictLayout`.
    """

    keys = ()

    def __init__(self, space: spaces.Box):
        self.env_shape = tuple(space.shape)
        self.channels_first = len(self.env_shape) == 3
        h, w = self.env_shape[-2:]
        c = self.env_shape[0] if self.channels_first else 1
        self.space = spaces.Box(0, 255, (h, w, c), np.uint8)

    def flatten(self, obs) -> np.ndarray:
        """One image in ``(H, W, C)``."""
        obs = np.asarray(obs, np.uint8)
        return np.moveaxis(obs, 0, -1) if self.channels_first else obs[..., None]

    def flatten_batch(self, obs) -> np.ndarray:
        """A batch of images in ``(N, H, W, C)``."""
        obs = np.asarray(obs, np.uint8)
        return np.moveaxis(obs, 1, -1) if self.channels_first else obs[..., None]

    def tf_specs(self):
        """What the saved policy takes: uint8 images as the environment gives them."""
        import tensorflow as tf

        return tf.TensorSpec([None, *self.env_shape], tf.uint8, name="x")

    def tf_flatten(self, x):
        """:meth:`flatten_batch` in TensorFlow, inside the saved policy."""
        import tensorflow as tf

        return tf.transpose(x, [0, 2, 3, 1]) if self.channels_first else x[..., None]


def image_layout(space) -> ImageLayout | None:
    """The :class:`ImageLayout` of uint8 images in [0, 255] that are 2-D ``(H, W)``, or 3-D
    with a first axis of at most 16 and the other two larger than 16 (channels-first); None
    for any other space (channels-last images are read as they are)."""
    if not (isinstance(space, spaces.Box) and space.dtype == np.uint8
            and bool(np.all(space.low == 0)) and bool(np.all(space.high == 255))):
        return None
    shape = space.shape
    if len(shape) == 2 or (len(shape) == 3 and shape[0] <= 16 < min(shape[1], shape[2])):
        return ImageLayout(space)
    return None


def observation_layout(space) -> DictLayout | ImageLayout | None:
    """The layout the networks read ``space`` in, when it is not the space itself: a
    Dict's (:func:`dict_layout`), a channels-first or 2-D image's (:func:`image_layout`)."""
    return dict_layout(space) or image_layout(space)
