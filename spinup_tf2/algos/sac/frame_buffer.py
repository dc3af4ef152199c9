"""SAC from pixels: a replay buffer that stores each camera frame once.

An image observation of a pixel task is a stack of the last ``stack`` frames,
``(H, W, stack * C)`` uint8, oldest first on the channel axis (as gymnasium's
frame stacking and DrQ build it). Storing ``obs`` and ``next_obs`` of every
transition, as :class:`~spinup_tf2.algos.sac.sac.ReplayBuffer` does, keeps each
frame ``2 * stack`` times, in float32: 84x84 RGB frames stacked by 3 then cost
about 12.7 GB per 100k transitions. :class:`FrameReplayBuffer` keeps each frame
once, as uint8 (about 2.1 GB), and builds the stacks of a minibatch by index.
"""

from __future__ import annotations

import numpy as np


class FrameReplayBuffer:
    """Transitions of stacked-frame observations, each frame stored once.

    Frames go to a ring in the order they were seen: at the start of an episode the
    ``stack`` frames of its first observation, then one frame per transition, the newest
    frame of ``next_obs``. An episode's frames are therefore consecutive, and a
    transition needs only the position ``g`` of its newest frame: ``next_obs`` is frames
    ``g - stack + 1 .. g`` and ``obs`` frames ``g - stack .. g - 1``. A new episode is
    recognised by its first observation differing from the last ``next_obs`` stored
    (and if it does not differ, the frames already stored are the right ones).

    The frame ring holds ``size`` frames plus ``stack`` per 100 transitions, so that
    episodes of 100 steps or more keep all ``size`` transitions sampleable; with shorter
    episodes the oldest transitions, whose frames have been overwritten, are no longer
    drawn. Minibatches are drawn uniformly, with replacement, from the rest.

    Args:
        obs_shape: ``(H, W, stack * C)`` of the observations.
        stack: Frames per observation.
        act_dim: Length of an action vector.
        size: Transitions kept (``replay_size``).
    """

    def __init__(self, obs_shape: tuple, stack: int, act_dim: int, size: int):
        h, w, channels = obs_shape
        if stack < 1 or channels % stack:
            raise ValueError(f"An observation of {channels} channels is not {stack} stacked "
                             f"frames: stack must divide the channels.")
        self.stack, self.frame_shape = stack, (h, w, channels // stack)
        self.n_frames = size + stack * (size // 100 + 1)
        self.frames = np.zeros((self.n_frames, *self.frame_shape), dtype=np.uint8)
        self.newest = np.zeros(size, dtype=np.int64)  # g of each transition
        self.act_buf = np.zeros((size, act_dim), dtype=np.float32)
        self.rew_buf = np.zeros(size, dtype=np.float32)
        self.done_buf = np.zeros(size, dtype=np.float32)
        self.max_size = size
        self.frames_written = 0  # frames ever stored; frame g sits at g % n_frames
        self.stored = 0  # transitions ever stored; transition t sits at t % size
        self.oldest = 0  # the oldest transition whose frames are all still in the ring
        self._last_next = None  # the last next_obs stored, to recognise a new episode

    # Checkpoints of this buffer are compressed (frames compress several-fold).
    compress = True

    @staticmethod
    def bytes_for(obs_shape: tuple, stack: int, act_dim: int, size: int) -> int:
        """Bytes the arrays of a buffer of ``size`` transitions take."""
        h, w, channels = obs_shape
        n_frames = size + stack * (size // 100 + 1)
        return n_frames * h * w * (channels // stack) + size * (8 + 4 * act_dim + 8)

    @property
    def size(self) -> int:
        """Transitions that can be drawn."""
        return self.stored - self.oldest

    @property
    def nbytes(self) -> int:
        """Bytes the buffer's arrays take."""
        return sum(a.nbytes for a in (self.frames, self.newest, self.act_buf, self.rew_buf,
                                      self.done_buf))

    def state_arrays(self) -> dict:
        """The filled part of the buffer and its counters, for a checkpoint (views, not
        copies: a checkpoint writes them in chunks)."""
        n, nf = min(self.stored, self.max_size), min(self.frames_written, self.n_frames)
        last = self._last_next if self._last_next is not None else np.zeros(0, np.uint8)
        return dict(buf_frames=self.frames[:nf], buf_newest=self.newest[:n],
                    buf_act=self.act_buf[:n], buf_rew=self.rew_buf[:n],
                    buf_done=self.done_buf[:n], buf_last_next=last,
                    buf_counts=np.array([self.frames_written, self.stored, self.oldest]))

    def load_state_arrays(self, arrays) -> None:
        """Refill the buffer from :meth:`state_arrays`. ``arrays`` maps names to arrays;
        one with an ``into(name, out)`` method (a checkpoint's reader) reads the frames
        straight into the buffer, so restoring never holds them twice."""
        frames_written, stored, oldest = (int(c) for c in arrays["buf_counts"])
        n, nf = min(stored, self.max_size), min(frames_written, self.n_frames)
        if stored - oldest > self.max_size or len(arrays["buf_newest"]) != n:
            raise ValueError(f"the checkpoint's pixel replay buffer holds {stored - oldest} "
                             f"transitions, not what replay_size={self.max_size} keeps")
        if hasattr(arrays, "into"):
            arrays.into("buf_frames", self.frames[:nf])
        else:
            self.frames[:nf] = arrays["buf_frames"]
        self.newest[:n], self.act_buf[:n] = arrays["buf_newest"], arrays["buf_act"]
        self.rew_buf[:n], self.done_buf[:n] = arrays["buf_rew"], arrays["buf_done"]
        last = arrays["buf_last_next"]
        self._last_next = last.copy() if last.size else None
        self.frames_written, self.stored, self.oldest = frames_written, stored, oldest

    def _frames_of(self, obs: np.ndarray) -> np.ndarray:
        """``(stack, H, W, C)``: the frames of a stacked observation, oldest first."""
        h, w, c = self.frame_shape
        return obs.reshape(h, w, self.stack, c).transpose(2, 0, 1, 3)

    def _write(self, frames: np.ndarray) -> None:
        for frame in frames:
            self.frames[self.frames_written % self.n_frames] = frame
            self.frames_written += 1

    def store(self, obs, act, rew, next_obs, done) -> None:
        """Add one transition, overwriting the oldest when full."""
        obs, next_obs = np.asarray(obs), np.asarray(next_obs)
        if self._last_next is None or not np.array_equal(obs, self._last_next):
            self._write(self._frames_of(obs))  # a new episode: its first stack
        self._write(self._frames_of(next_obs)[-1:])
        i = self.stored % self.max_size
        self.newest[i] = self.frames_written - 1
        self.act_buf[i], self.rew_buf[i], self.done_buf[i] = act, rew, done
        self.stored += 1
        self._last_next = next_obs.copy()
        # Transitions whose oldest frame (that of obs) has been overwritten are dropped.
        self.oldest = max(self.oldest, self.stored - self.max_size)
        first_kept = self.frames_written - self.n_frames
        while (self.oldest < self.stored
               and self.newest[self.oldest % self.max_size] - self.stack < first_kept):
            self.oldest += 1

    def _stacks(self, g: np.ndarray) -> np.ndarray:
        """The observations whose newest frames are ``g`` (any shape), as
        ``g.shape + (H, W, stack * C)`` uint8."""
        offsets = np.arange(-self.stack + 1, 1)
        frames = np.take(self.frames, (g[..., None] + offsets) % self.n_frames, axis=0)
        h, w, c = self.frame_shape
        lead = g.shape
        frames = np.moveaxis(frames, len(lead), -2)  # (..., H, W, stack, C)
        return frames.reshape(*lead, h, w, self.stack * c)

    def sample_batch(self, batch_size: int = 32, rng: np.random.Generator | None = None,
                     n_batches: int | None = None) -> dict:
        """A minibatch of ``batch_size`` transitions (with ``n_batches``, that many
        independent minibatches stacked), as :meth:`ReplayBuffer.sample_batch` gives;
        ``obs`` and ``obs2`` are uint8 stacks."""
        rng = np.random.default_rng() if rng is None else rng
        shape = (batch_size,) if n_batches is None else (n_batches, batch_size)
        idxs = rng.integers(self.oldest, self.stored, size=shape) % self.max_size
        g = np.take(self.newest, idxs)
        return dict(obs=self._stacks(g - 1), obs2=self._stacks(g),
                    act=np.take(self.act_buf, idxs, axis=0), rew=np.take(self.rew_buf, idxs),
                    done=np.take(self.done_buf, idxs))
