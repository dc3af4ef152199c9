"""SAC from pixels: a replay buffer that stores each camera frame once.

An image observation of a pixel task is a stack of the last ``stack`` frames,
``(H, W, stack * C)`` uint8, oldest first on the channel axis (as gymnasium's
frame stacking and DrQ build it). Storing ``obs`` and ``next_obs`` of every
transition, as :class:`~spinup_tf2.algos.sac.buffers.ReplayBuffer` does, keeps each
frame ``2 * stack`` times, in float32: 84x84 RGB frames stacked by 3 then cost
about 12.7 GB per 100k transitions. :class:`FrameReplayBuffer` keeps each frame
once, as uint8 (about 2.1 GB), and builds the stacks of a minibatch by index.
"""

from __future__ import annotations

from collections import deque

import numpy as np

from spinup_tf2.algos.sac.buffers import check_shape


class FrameReplayBuffer:
    """Transitions of stacked-frame observations, each frame stored once.

    Frames go to a ring in the order they were seen: at the start of an episode the
    ``stack`` frames of its first observation, then one frame per transition, the newest
    frame of ``next_obs``. A transition keeps the positions of its ``stack + 1`` frames
    (``obs`` is the first ``stack``, ``next_obs`` the last ``stack``). Its ``obs`` is
    recognised as the ``next_obs`` of one of the last ``copies`` transitions (the open
    episodes of ``copies`` environment copies storing in turn), whose frames it then
    shares; an ``obs`` that is none of them starts an episode, and its frames are stored.

    The frame ring holds ``size`` frames plus ``stack`` per 100 transitions (and, with
    several copies, the frames by which their episodes interleave), so that episodes of
    100 steps or more keep all ``size`` transitions sampleable; with shorter episodes the
    oldest transitions, whose frames have been overwritten, are no longer drawn.
    Minibatches are drawn uniformly, with replacement, from the rest.

    Args:
        obs_shape: ``(H, W, stack * C)`` of the observations.
        stack: Frames per observation.
        act_dim: Length of an action vector.
        size: Transitions kept (``replay_size``).
        copies: Environment copies whose transitions arrive interleaved (``num_envs``).
    """

    def __init__(self, obs_shape: tuple, stack: int, act_dim: int, size: int,
                 copies: int = 1):
        h, w, channels = obs_shape
        if stack < 1 or channels % stack:
            raise ValueError(f"An observation of {channels} channels is not {stack} stacked "
                             f"frames: stack must divide the channels.")
        self.stack, self.frame_shape = stack, (h, w, channels // stack)
        self.span = self.span_for(stack, copies)
        self.n_frames = self.frames_for(stack, copies, size)
        self.frames = np.zeros((self.n_frames, *self.frame_shape), dtype=np.uint8)
        self.frame_idx = np.zeros((size, stack + 1), dtype=np.int64)  # oldest frame first
        self.act_buf = np.zeros((size, act_dim), dtype=np.float32)
        self.rew_buf = np.zeros(size, dtype=np.float32)
        self.done_buf = np.zeros(size, dtype=np.float32)
        self.max_size = size
        self.frames_written = 0  # frames ever stored; frame g sits at g % n_frames
        self.stored = 0  # transitions ever stored; transition t sits at t % size
        self.oldest = 0  # the oldest transition whose frames are all still in the ring
        # (next_obs, positions of its frames) of the last `copies` transitions.
        self._ends = deque(maxlen=copies)

    # Checkpoints of this buffer are compressed (frames compress several-fold).
    compress = True

    @staticmethod
    def span_for(stack: int, copies: int) -> int:
        """How many frames before a transition's newest its oldest may lie: ``stack``
        for one copy; with ``copies`` taking turns, each of a copy's ``stack`` steps back
        may be ``copies - 1`` other transitions (of ``stack + 1`` frames at most) away."""
        return stack * (1 + (copies - 1) * (stack + 1))

    @classmethod
    def frames_for(cls, stack: int, copies: int, size: int) -> int:
        """Frames in the ring of a buffer of ``size`` transitions."""
        return size + stack * (size // 100 + 1) + cls.span_for(stack, copies) - stack

    @classmethod
    def bytes_for(cls, obs_shape: tuple, stack: int, act_dim: int, size: int,
                  copies: int = 1) -> int:
        """Bytes the arrays of a buffer of ``size`` transitions take."""
        h, w, channels = obs_shape
        n_frames = cls.frames_for(stack, copies, size)
        return (n_frames * h * w * (channels // stack)
                + size * (8 * (stack + 1) + 4 * act_dim + 8))

    @property
    def size(self) -> int:
        """Transitions that can be drawn."""
        return self.stored - self.oldest

    @property
    def nbytes(self) -> int:
        """Bytes the buffer's arrays take."""
        return sum(a.nbytes for a in (self.frames, self.frame_idx, self.act_buf, self.rew_buf,
                                      self.done_buf))

    def state_arrays(self) -> dict:
        """The filled part of the buffer and its counters, for a checkpoint (views, not
        copies: a checkpoint writes them in chunks)."""
        n, nf = min(self.stored, self.max_size), min(self.frames_written, self.n_frames)
        ends_obs = np.array([o for o, _ in self._ends], dtype=np.uint8)
        ends_idx = np.array([i for _, i in self._ends], dtype=np.int64)
        return dict(buf_frames=self.frames[:nf], buf_frame_idx=self.frame_idx[:n],
                    buf_act=self.act_buf[:n], buf_rew=self.rew_buf[:n],
                    buf_done=self.done_buf[:n], buf_ends_obs=ends_obs, buf_ends_idx=ends_idx,
                    buf_counts=np.array([self.frames_written, self.stored, self.oldest]))

    def load_state_arrays(self, arrays) -> None:
        """Refill the buffer from :meth:`state_arrays` (or from a checkpoint of the
        one-copy layout before it). ``arrays`` maps names to arrays; one with an
        ``into(name, out)`` method (a checkpoint's reader) reads the frames straight into
        the buffer, so restoring never holds them twice."""
        frames_written, stored, oldest = (int(c) for c in arrays["buf_counts"])
        n, nf = min(stored, self.max_size), min(frames_written, self.n_frames)
        if "buf_newest" in arrays:  # one copy, each transition's frames consecutive
            if self.span != self.stack:
                raise ValueError("the checkpoint's pixel replay buffer of several environment "
                                 "copies was written before their frames were shared, in a "
                                 "ring of another length; start the run afresh")
            frame_idx = arrays["buf_newest"][:, None] + np.arange(-self.stack, 1)
            last = arrays["buf_last_next"]
            ends = [(last, frame_idx[(stored - 1) % self.max_size, 1:])] if last.size else []
        else:
            frame_idx = arrays["buf_frame_idx"]
            ends = list(zip(arrays["buf_ends_obs"], arrays["buf_ends_idx"], strict=True))
        if stored - oldest > self.max_size or len(frame_idx) != n:
            raise ValueError(f"the checkpoint's pixel replay buffer holds {stored - oldest} "
                             f"transitions, not what replay_size={self.max_size} keeps")
        self._check_counts(frames_written, stored, oldest, frame_idx, ends)
        for name in ("act", "rew", "done"):
            check_shape(arrays["buf_" + name], (n, *getattr(self, name + "_buf").shape[1:]),
                        "buf_" + name)
        if hasattr(arrays, "into"):
            arrays.into("buf_frames", self.frames[:nf])
        else:
            self.frames[:nf] = arrays["buf_frames"]
        self.frame_idx[:n], self.act_buf[:n] = frame_idx, arrays["buf_act"]
        self.rew_buf[:n], self.done_buf[:n] = arrays["buf_rew"], arrays["buf_done"]
        self._ends.clear()
        self._ends.extend((np.array(o), np.array(i)) for o, i in ends)
        self.frames_written, self.stored, self.oldest = frames_written, stored, oldest

    def _check_counts(self, frames_written: int, stored: int, oldest: int, frame_idx,
                      ends: list) -> None:
        """Raise ValueError unless a checkpoint's counters and frame positions are ones
        this buffer could have written: every frame a sampled transition (or an open
        episode's end) names is still in the ring (a position off by 10^9 would train on
        whatever frame sits there)."""
        if not 0 <= oldest <= stored or frames_written < 0:
            raise ValueError(f"the pixel replay buffer's counters (frames {frames_written}, "
                             f"stored {stored}, oldest {oldest}) are not ones it writes")
        first = max(0, frames_written - self.n_frames)
        live = np.arange(oldest, stored) % self.max_size
        positions = [np.asarray(frame_idx)[live]] + [np.asarray(i) for _, i in ends]
        for pos in positions:
            if pos.size and not (np.issubdtype(pos.dtype, np.integer)
                                 and pos.min() >= first and pos.max() < frames_written):
                raise ValueError(f"the pixel replay buffer names frames outside the "
                                 f"{frames_written - first} it holds ({first} to "
                                 f"{frames_written - 1})")

    def _frames_of(self, obs: np.ndarray) -> np.ndarray:
        """``(stack, H, W, C)``: the frames of a stacked observation, oldest first."""
        h, w, c = self.frame_shape
        return obs.reshape(h, w, self.stack, c).transpose(2, 0, 1, 3)

    def _write(self, frames: np.ndarray) -> np.ndarray:
        """Store ``frames``; their positions."""
        start = self.frames_written
        for frame in frames:
            self.frames[self.frames_written % self.n_frames] = frame
            self.frames_written += 1
        return np.arange(start, self.frames_written)

    def _obs_frames(self, obs: np.ndarray) -> np.ndarray:
        """Positions of ``obs``'s frames: those of the open episode it continues, if its
        frames are near enough to stay within ``span``, else newly stored ones."""
        for k, (end_obs, idx) in enumerate(self._ends):
            if self.frames_written - idx[0] <= self.span and np.array_equal(obs, end_obs):
                del self._ends[k]
                return idx
        return self._write(self._frames_of(obs))  # a new episode: its first stack

    def store(self, obs, act, rew, next_obs, done) -> None:
        """Add one transition, overwriting the oldest when full."""
        obs, next_obs = np.asarray(obs), np.asarray(next_obs)
        idx = np.append(self._obs_frames(obs), self._write(self._frames_of(next_obs)[-1:]))
        i = self.stored % self.max_size
        self.frame_idx[i] = idx
        self.act_buf[i], self.rew_buf[i], self.done_buf[i] = act, rew, done
        self.stored += 1
        self._ends.append((next_obs.copy(), idx[1:]))
        # Transitions whose oldest frame (that of obs) may have been overwritten are
        # dropped; the newest frames rise with each transition, the oldest may not.
        self.oldest = max(self.oldest, self.stored - self.max_size)
        first_kept = self.frames_written - self.n_frames
        while (self.oldest < self.stored
               and self.frame_idx[self.oldest % self.max_size, -1] - self.span < first_kept):
            self.oldest += 1

    def sample_batch(self, batch_size: int = 32, rng: np.random.Generator | None = None,
                     n_batches: int | None = None) -> dict:
        """A minibatch of ``batch_size`` transitions (with ``n_batches``, that many
        independent minibatches stacked), as :meth:`ReplayBuffer.sample_batch` gives;
        ``obs`` and ``obs2`` are uint8 stacks."""
        rng = np.random.default_rng() if rng is None else rng
        shape = (batch_size,) if n_batches is None else (n_batches, batch_size)
        idxs = rng.integers(self.oldest, self.stored, size=shape) % self.max_size
        pos = np.take(self.frame_idx, idxs, axis=0) % self.n_frames
        frames = np.take(self.frames, pos, axis=0)  # (..., stack + 1, H, W, C)
        frames = np.moveaxis(frames, len(shape), -2)  # (..., H, W, stack + 1, C)
        h, w, c = self.frame_shape
        return dict(obs=frames[..., :-1, :].reshape(*shape, h, w, self.stack * c),
                    obs2=frames[..., 1:, :].reshape(*shape, h, w, self.stack * c),
                    act=np.take(self.act_buf, idxs, axis=0), rew=np.take(self.rew_buf, idxs),
                    done=np.take(self.done_buf, idxs))
