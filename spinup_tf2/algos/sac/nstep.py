"""n-step returns: each stored transition spans up to n environment steps.

The transition stored for step t is (o_t, a_t, R, o_{t+k}, d) with k = min(n, steps left
in the episode), the discounted return R = r_t + gamma r_{t+1} + ... + gamma^(k-1) r_{t+k-1},
d whether the episode terminated within it, and its k steps (the buffer's ``steps``): the
replay door makes its backup's discount ``gamma^k (1 - d)``
(:func:`~spinup_tf2.algos.sac.buffers.discount_of`, in :meth:`NStepReturns.sample_batch`),
so the backup is ``R + gamma^k (1 - d)
(...)`` with no change to any variant's losses, and n = 1 stores exactly what SAC stores.
At an episode's end the windows still open are written short: a termination inside the n
steps cuts the return there (no bootstrap); a truncation (a time limit) bootstraps from the
episode's true last observation; no window spans two episodes. Each environment copy
(``--num_envs``) has its own windows.

:class:`NStepReturns` stands between the environment loop and the replay buffer; the
buffer itself stores single transitions as before.
"""

from __future__ import annotations

import numpy as np

from spinup_tf2.algos.sac.buffers import check_shape, discount_of


def check_takes_steps(buffer, n_step: int) -> None:
    """Refuse, before anything is written, n-step returns into a buffer whose ``store``
    cannot keep the steps a transition spans (a ``replay_buffer_class`` of one's own)."""
    import inspect

    from spinup_tf2.errors import SpinupError

    params = inspect.signature(buffer.store).parameters.values()
    if not any(p.name == "steps" or p.kind is p.VAR_KEYWORD for p in params):
        raise SpinupError(
            f"sac() got n_step={n_step} with the replay buffer {type(buffer).__name__}, whose "
            f"store() takes no steps argument: an n-step transition's backup is discounted "
            f"by gamma ** steps, so the buffer must keep them (store(o, a, r, o2, d, "
            f"steps=1)) and return them as 'steps' from sample_batch, as ReplayBuffer does. "
            f"Nothing was written. Give store a steps argument, or use n_step=1.")


class NStepReturns:
    """The replay buffer ``buffer`` fed n-step transitions.

    ``store(o, a, r, o2, terminated, *memory, copy=0)`` takes one environment step of copy
    ``copy``; ``end_episode(copy=0)`` writes that copy's open windows when its episode ends
    by a time limit (a termination is seen in ``store``). Everything else (``sample_batch``,
    the buffer's attributes) is the buffer's; ``state_arrays`` adds the open windows, so a
    checkpoint resumes them. With ``episodes_continue`` False (vector environments, which
    resume with new episodes) the restored windows are written at once, bootstrapped, as a
    time limit would.

    Args:
        buffer: The replay buffer (``store(o, a, r, o2, d, *memory)``; with ``n_step`` > 1
            also a ``steps`` keyword, the steps a transition spans, as
            :class:`~spinup_tf2.algos.sac.buffers.ReplayBuffer`'s).
        n_step (int): n; 1 passes every step straight to ``buffer``.
        gamma (float): The discount of the return within a window.
        copies (int): Environment copies storing into the buffer.
    """

    def __init__(self, buffer, n_step: int = 1, gamma: float = 0.99, copies: int = 1,
                 episodes_continue: bool = True):
        self.buffer, self.n_step, self.gamma = buffer, int(n_step), float(gamma)
        self.copies, self.episodes_continue = int(copies), episodes_continue
        if self.n_step > 1:
            check_takes_steps(buffer, self.n_step)
        self.windows = [[] for _ in range(self.copies)]  # each copy's steps (o, a, r, o2)

    def __getattr__(self, name):
        return getattr(self.__dict__["buffer"], name)

    def sample_batch(self, *args, **kwargs) -> dict:
        """The buffer's minibatch, with each transition's backup ``discount`` at gamma
        (:func:`~spinup_tf2.algos.sac.buffers.discount_of`)."""
        batch = self.buffer.sample_batch(*args, **kwargs)
        batch["discount"] = discount_of(batch, self.gamma)
        return batch

    def store(self, obs, act, rew, next_obs, done, *memory, copy: int = 0) -> None:
        """One environment step; ``done`` is 1.0 for a true termination."""
        if self.n_step == 1:
            self.buffer.store(obs, act, rew, next_obs, done, *memory)
            return
        window = self.windows[copy]
        window.append((np.array(obs), np.array(act), float(rew), np.array(next_obs)))
        if done:
            self._flush(copy, terminated=True)
        elif len(window) == self.n_step:
            self._write(window, terminated=False)
            window.pop(0)

    def end_episode(self, copy: int = 0) -> None:
        """Copy ``copy``'s episode ended without a termination: write its open windows,
        each bootstrapped from the episode's last observation."""
        self._flush(copy, terminated=False)

    def _flush(self, copy: int, terminated: bool) -> None:
        window = self.windows[copy]
        while window:
            self._write(window, terminated)
            window.pop(0)

    def _write(self, window: list, terminated: bool) -> None:
        """The transition of the window's first step, over all its k steps."""
        k = len(window)
        ret = sum(self.gamma ** j * step[2] for j, step in enumerate(window))
        self.buffer.store(window[0][0], window[0][1], ret, window[-1][3], float(terminated),
                          steps=k)

    def state_arrays(self) -> dict:
        """The buffer's arrays and the open windows (``nstep_*``), for a checkpoint."""
        arrays = self.buffer.state_arrays()
        if self.n_step > 1:
            steps = [(c,) + step for c, window in enumerate(self.windows) for step in window]
            arrays.update(nstep_copy=np.array([s[0] for s in steps], np.int64),
                          nstep_rew=np.array([s[3] for s in steps], np.float64),
                          **{f"nstep_{k}": np.array([s[i] for s in steps], np.float32)
                             for k, i in (("obs", 1), ("act", 2), ("obs2", 4))})
        return arrays

    def load_state_arrays(self, arrays) -> None:
        """Restore :meth:`state_arrays`, after checking the open windows' shapes and
        counts against what this run writes."""
        self.buffer.load_state_arrays(arrays)
        if self.n_step == 1:
            return
        copy = np.asarray(arrays["nstep_copy"])
        m = len(copy)
        if (copy.ndim != 1 or not np.issubdtype(copy.dtype, np.integer)
                or (m and not (copy.min() >= 0 and copy.max() < self.copies))
                or any(np.sum(copy == c) >= self.n_step for c in range(self.copies))):
            raise ValueError(f"its n-step windows (copies {copy.tolist()[:10]}) are not ones "
                             f"{self.copies} environment copies at n_step={self.n_step} write")
        obs, obs2 = (np.asarray(arrays[f"nstep_{k}"]) for k in ("obs", "obs2"))
        act, rew = np.asarray(arrays["nstep_act"]), np.asarray(arrays["nstep_rew"])
        check_shape(rew, (m,), "nstep_rew")
        # A buffer of one's own (replay_buffer_class) may keep no obs_buf/act_buf arrays:
        # then the windows are checked against each other only.
        obs_shape = getattr(self.buffer, "obs_buf", obs).shape[1:]
        act_shape = getattr(self.buffer, "act_buf", act).shape[1:]
        for name, a, shape in (("nstep_obs", obs, obs_shape), ("nstep_obs2", obs2, obs_shape),
                               ("nstep_act", act, act_shape)):
            if m == 0 and a.size == 0:
                continue  # no open window (a checkpoint at an episode's end): empty, shapeless
            check_shape(a, (m, *shape), name)
        self.windows = [[] for _ in range(self.copies)]
        for c, o, a, r, o2 in zip(copy, obs, act, rew, obs2, strict=True):
            self.windows[int(c)].append((o, a, float(r), o2))
        if not self.episodes_continue:
            for c in range(self.copies):
                self.end_episode(c)
