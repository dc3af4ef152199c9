"""SAC's replay buffer: transitions in preallocated arrays, drawn uniformly.

:class:`ReplayBuffer` is what ``sac()`` uses for vector observations (its name stays
importable from :mod:`spinup_tf2.algos.sac.sac`, where Spinning Up keeps it); image
observations use :class:`~spinup_tf2.algos.sac.frame_buffer.FrameReplayBuffer`, recurrent
actor-critics :class:`~spinup_tf2.algos.sac.recurrent.SequenceReplayBuffer`. A buffer of
one's own (``sac(replay_buffer=...)``) has the same methods: ``store``, ``sample_batch``,
``state_arrays`` and ``load_state_arrays``.
"""

from __future__ import annotations

import numpy as np

from spinup_tf2.errors import SpinupError


class ReplayBuffer:
    """Transitions (o, a, r, o2, d) in preallocated float32 arrays of a fixed
    capacity; when full, each new transition replaces the oldest. Minibatches
    are drawn uniformly, with replacement. Each transition also keeps the environment
    steps it spans (``steps``: 1, or k for an n-step transition), from which the replay
    replay names its backup's discount (:func:`discount_of`).
    """

    def __init__(self, obs_dim: int, act_dim: int, size: int):
        self.obs_buf = np.zeros((size, obs_dim), dtype=np.float32)
        self.obs2_buf = np.zeros((size, obs_dim), dtype=np.float32)
        self.act_buf = np.zeros((size, act_dim), dtype=np.float32)
        self.rew_buf = np.zeros(size, dtype=np.float32)
        self.done_buf = np.zeros(size, dtype=np.float32)
        self.steps_buf = np.ones(size, dtype=np.int32)
        self.ptr, self.size, self.max_size = 0, 0, size

    def store(self, obs, act, rew, next_obs, done, steps: int = 1) -> None:
        """Add one transition (of ``steps`` environment steps), overwriting the oldest when
        full."""
        self.obs_buf[self.ptr] = obs
        self.obs2_buf[self.ptr] = next_obs
        self.act_buf[self.ptr] = act
        self.rew_buf[self.ptr] = rew
        self.done_buf[self.ptr] = done
        self.steps_buf[self.ptr] = steps
        self.ptr = (self.ptr + 1) % self.max_size
        self.size = min(self.size + 1, self.max_size)

    def state_arrays(self) -> dict:
        """The filled part of the buffer and its pointers, for a checkpoint."""
        n = self.size
        return dict(buf_obs=self.obs_buf[:n], buf_obs2=self.obs2_buf[:n],
                    buf_act=self.act_buf[:n], buf_rew=self.rew_buf[:n],
                    buf_done=self.done_buf[:n], buf_steps=self.steps_buf[:n],
                    buf_ptr=np.array(self.ptr),
                    buf_size=np.array(self.size))

    def load_state_arrays(self, arrays: dict) -> None:
        """Refill the buffer from :meth:`state_arrays`, after checking each value against
        what a buffer of this size could have written (see :func:`check_pointers`)."""
        n, ptr = check_pointers(arrays, self.max_size)
        if n > self.max_size:
            raise SpinupError(f"The checkpoint's replay buffer holds {n} transitions, more than "
                              f"replay_size={self.max_size}.")
        for name in ("obs", "obs2", "act", "rew", "done"):
            buf = getattr(self, name + "_buf")
            buf[:n] = check_shape(arrays["buf_" + name], (n, *buf.shape[1:]), "buf_" + name)
        # A checkpoint of 0.3 has no steps: its n-step transitions kept their discount in
        # done (1 - gamma ** (k - 1) (1 - terminated)), which one step reads as before.
        steps = arrays["buf_steps"] if "buf_steps" in arrays else np.ones(n, np.int32)
        steps = check_shape(steps, (n,), "buf_steps")
        if n and not (np.issubdtype(steps.dtype, np.integer) and steps.min() >= 1):
            raise ValueError("buf_steps holds values that are not whole numbers >= 1")
        self.steps_buf[:n] = steps
        self.ptr, self.size = ptr, n

    def sample_batch(self, batch_size: int = 32, rng: np.random.Generator | None = None,
                     n_batches: int | None = None) -> dict:
        """A minibatch of ``batch_size`` transitions, or with ``n_batches`` a
        stack of that many independent minibatches (leading dimension
        ``n_batches``), drawn in one gather.

        Returns a dict with keys ``obs, act, rew, obs2, done, steps``.
        """
        rng = np.random.default_rng() if rng is None else rng
        shape = (batch_size,) if n_batches is None else (n_batches, batch_size)
        return self.gather(rng.integers(0, self.size, size=shape))

    def gather(self, idxs: np.ndarray) -> dict:
        """The transitions at ``idxs`` (any shape), as :meth:`sample_batch` returns them."""
        # np.take gathers rows several times faster than fancy indexing, same values.
        return {k: np.take(buf, idxs, axis=0) for k, buf in (
            ("obs", self.obs_buf), ("obs2", self.obs2_buf), ("act", self.act_buf),
            ("rew", self.rew_buf), ("done", self.done_buf), ("steps", self.steps_buf))}


def discount_of(batch: dict, gamma: float) -> np.ndarray:
    """Each transition's backup discount, float32: ``gamma ** k * (1 - done)`` for the k
    environment steps it spans (the buffer's ``steps``; 1 where it keeps none) and
    ``done`` its termination. For a one-step transition this is ``gamma * (1 - done)``,
    computed in float32 as SAC's losses computed it."""
    done, factor = batch["done"], np.float32(gamma)
    if "steps" in batch:  # gamma itself at one step: float32 powers are not always exact
        steps = batch["steps"]
        factor = np.where(steps == 1, factor, factor ** steps.astype(np.float32))
    return (factor * (np.float32(1) - done)).astype(np.float32)


def check_shape(array: np.ndarray, shape: tuple, name: str) -> np.ndarray:
    """``array``, if it has exactly ``shape`` (numpy would broadcast a length-1 array into
    the whole buffer without a word); else a ValueError naming it."""
    if tuple(np.shape(array)) != tuple(shape):
        raise ValueError(f"{name} has shape {list(np.shape(array))}, not {list(shape)}")
    return array


def check_pointers(arrays: dict, max_size: int) -> tuple[int, int]:
    """``(size, ptr)`` of a ring buffer's checkpoint, checked to be what a buffer of
    ``max_size`` writes: 0 <= size, 0 <= ptr < max_size, and ptr == size until the ring
    is full. Anything else (a pointer of -500 would resume on other data) is a ValueError
    that the checkpoint reports as damaged."""
    n, ptr = (check_shape(arrays[k], (), k) for k in ("buf_size", "buf_ptr"))
    if not (np.issubdtype(n.dtype, np.integer) and np.issubdtype(ptr.dtype, np.integer)):
        raise ValueError(f"buf_size and buf_ptr are {n.dtype} and {ptr.dtype}, not integers")
    n, ptr = int(n), int(ptr)
    if n < 0 or not 0 <= ptr < max_size or (n < max_size and ptr != n % max_size):
        raise ValueError(f"the replay buffer's pointers (size {n}, ptr {ptr}) are not ones a "
                         f"buffer of replay_size={max_size} writes")
    return n, ptr
