"""Hindsight experience replay (Andrychowicz et al. 2017) for goal-conditioned tasks.

A goal task observes a Dict with ``achieved_goal`` and ``desired_goal`` and computes its
reward with ``compute_reward(achieved_goal, desired_goal, info)``. With a sparse reward an
episode that misses its goal teaches little; HER replays some of its transitions as if the
goal had been one the episode did reach. :class:`HerReplayBuffer` stores each copy's
transitions in episode order and relabels at sampling time: of each minibatch a share
``n_sampled_goal / (n_sampled_goal + 1)`` (4 of 5 by default, as in the paper and SB3)
gets a new desired goal, the achieved goal after a transition of the same episode chosen by
the strategy:

- ``'future'``: this transition or a later one, uniformly (the paper's best);
- ``'final'``: the episode's last transition;
- ``'episode'``: any transition of the episode.

The reward is then the environment's own ``compute_reward`` of the transition's achieved
goal and the new goal, over the whole minibatch at once (the per-step ``info`` is not kept:
it gets an empty dict per transition, as Fetch's and panda-gym's rewards need no more), and
the goal is written into both o and o2. ``done`` stays what the environment said (goal
tasks cut episodes by time, and a time limit bootstraps).

Only transitions of finished episodes are drawn (their goals are known to the end); while
no episode has finished, minibatches come from the stored steps as they are. An episode is
ended by the environment or by ``max_ep_len``, and relabels within itself: no goal comes
from another episode or another environment copy (each copy keeps its own part of the
buffer, so its episodes stay contiguous). When the ring overwrites the start of an old
episode, the rest of it is no longer drawn.

With ``n_step`` > 1 the n-step return is made here at sampling time, from the
(relabelled) rewards of up to n steps of the same episode, in the encoding of
:mod:`~spinup_tf2.algos.sac.nstep`.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from spinup_tf2.algos.sac.buffers import check_shape, discount_of
from spinup_tf2.errors import SpinupError, error_line

GOAL_KEYS = ("achieved_goal", "desired_goal")


def goal_reward_fn(env) -> Callable:
    """The environment's ``compute_reward`` (on the unwrapped environment, as gymnasium-
    robotics and panda-gym define it)."""
    return env.unwrapped.compute_reward


def check_her(layout, env) -> None:
    """Refuse, before anything is written, HER on an environment that is not a goal task
    (Dict observations with ``achieved_goal`` and ``desired_goal`` of one shape, and
    ``compute_reward``). (A variant whose buffer keeps its steps another way is refused by
    :func:`spinup_tf2.algos.sac.replay.check_replay`; the strategy and ``n_sampled_goal``
    with ``sac()``'s other arguments.)"""
    keys = layout.keys if layout is not None else ()
    missing = [k for k in GOAL_KEYS if k not in keys]
    if missing or not callable(getattr(env.unwrapped, "compute_reward", None)):
        what = (f"observations {env.observation_space}" if not keys else
                f"a Dict observation with the keys {list(keys)}")
        raise SpinupError(
            f"her=True relabels goals, so it needs a goal-conditioned environment: a Dict "
            f"observation with 'achieved_goal' and 'desired_goal' entries and a "
            f"compute_reward(achieved_goal, desired_goal, info) method (gymnasium-robotics' "
            f"Fetch tasks, panda-gym, PointReach-v0); this one has {what}"
            f"{'' if not keys or missing else ' but no compute_reward'}. Nothing was written. "
            f"Drop --her for this task.")
    if layout.shapes["achieved_goal"] != layout.shapes["desired_goal"]:
        raise SpinupError(f"her=True writes achieved goals in place of desired ones, but this "
                          f"environment's achieved_goal has shape "
                          f"{list(layout.shapes['achieved_goal'])} and its desired_goal "
                          f"{list(layout.shapes['desired_goal'])}. Nothing was written.")
    check_reward_batch(goal_reward_fn(env), layout.shapes["achieved_goal"])


def check_reward_batch(compute_reward: Callable, goal_shape: tuple, n: int = 2) -> None:
    """Ask ``compute_reward`` once for the rewards of ``n`` goals, as a minibatch asks
    (achieved and desired goals stacked, an array of ``n`` info dicts): anything but ``n``
    finite numbers is refused before anything is written, not at the first minibatch."""
    goals = np.zeros((n, *goal_shape), np.float32)
    try:
        r = compute_reward(goals, goals.copy(), np.array([{} for _ in range(n)]))
    except Exception as err:  # a user's compute_reward may raise anything
        first = error_line(err)
        raise SpinupError(f"her=True recomputes rewards for minibatches of goals, but this "
                          f"environment's compute_reward failed on {n} stacked goals of shape "
                          f"{list(goal_shape)} ({first}). It must take "
                          f"arrays of goals (one per row) and an array of info dicts, and return "
                          f"one reward per row. Nothing was written.") from None
    arr = np.asarray(r) if not isinstance(r, (str, bytes)) else np.asarray([])
    if arr.shape != (n,) or arr.dtype.kind not in "biuf" or not np.all(np.isfinite(arr)):
        raise SpinupError(f"her=True recomputes rewards for minibatches of goals, but this "
                          f"environment's compute_reward returned {str(r)[:80]!r} (shape "
                          f"{list(np.shape(r))}) for {n} stacked goals of shape "
                          f"{list(goal_shape)}: it must return {n} finite numbers, shape "
                          f"[{n}], one per row. Nothing was written.")


class HerReplayBuffer:
    """Steps of goal-task episodes, relabelled with hindsight goals when sampled.

    ``store(o, a, r, o2, terminated, copy=0)`` takes one environment step of copy ``copy``
    (``o``, ``o2``: flat observations, :class:`~spinup_tf2.envs.dict_obs.DictLayout`);
    ``end_episode(copy=0)`` ends that copy's episode (by termination, time limit or
    ``max_ep_len``). ``sample_batch`` returns ``obs, act, rew, obs2, done, steps, discount`` like
    :class:`~spinup_tf2.algos.sac.buffers.ReplayBuffer`'s.

    Args:
        obs_dim (int): The flat observation's width.
        act_dim (int): The action's width.
        size (int): Capacity in steps, shared equally by the ``copies``.
        layout: The Dict observation's :class:`~spinup_tf2.envs.dict_obs.DictLayout`.
        compute_reward: The environment's ``compute_reward``.
        n_sampled_goal (int): Relabelled transitions per original one.
        goal_selection_strategy (str): ``'future'``, ``'final'`` or ``'episode'``.
        copies (int): Environment copies storing into the buffer.
        n_step (int): Steps per return (see :mod:`~spinup_tf2.algos.sac.nstep`).
        gamma (float): The discount within an n-step return.
        episodes_continue (bool): Whether a resumed run continues the episodes in progress
            (one environment, replayed) or starts new ones (vector copies: then the
            restored open episodes are ended).
    """

    def __init__(self, obs_dim: int, act_dim: int, size: int, layout, compute_reward: Callable,
                 n_sampled_goal: int = 4, goal_selection_strategy: str = "future",
                 copies: int = 1, n_step: int = 1, gamma: float = 0.99,
                 episodes_continue: bool = True):
        self.copies, self.region = int(copies), max(1, int(size) // int(copies))
        self.max_size = self.region * self.copies
        self.compute_reward, self.strategy = compute_reward, goal_selection_strategy
        self.her_ratio = 1.0 - 1.0 / (int(n_sampled_goal) + 1)
        self.n_step, self.gamma = int(n_step), float(gamma)
        self.episodes_continue = episodes_continue
        self.ag, self.dg = layout.slices["achieved_goal"], layout.slices["desired_goal"]
        self.obs_buf = np.zeros((self.max_size, obs_dim), np.float32)
        self.obs2_buf = np.zeros((self.max_size, obs_dim), np.float32)
        self.act_buf = np.zeros((self.max_size, act_dim), np.float32)
        self.rew_buf = np.zeros(self.max_size, np.float32)
        self.done_buf = np.zeros(self.max_size, np.float32)
        # Each step's episode: the position of its first step in the copy's region and its
        # length, written when it ends (0: open, or partly overwritten, so never drawn).
        self.ep_start = np.zeros(self.max_size, np.int64)
        self.ep_len = np.zeros(self.max_size, np.int64)
        self.ptr = np.zeros(self.copies, np.int64)  # each copy's next position
        self.filled = np.zeros(self.copies, np.int64)
        self.ep_steps = np.zeros(self.copies, np.int64)  # steps of each copy's open episode

    @property
    def size(self) -> int:
        """Steps stored, over all copies."""
        return int(self.filled.sum())

    def store(self, obs, act, rew, next_obs, done, copy: int = 0) -> None:
        """Add one step of copy ``copy``'s open episode, overwriting its oldest step when
        its part of the buffer is full."""
        pos = int(self.ptr[copy])
        g = copy * self.region + pos
        if self.ep_len[g] > 0:  # an old episode loses its first step: drop the rest of it
            offset = (pos - self.ep_start[g]) % self.region
            rest = (pos + np.arange(self.ep_len[g] - offset)) % self.region
            self.ep_len[copy * self.region + rest] = 0
        self.obs_buf[g], self.obs2_buf[g], self.act_buf[g] = obs, next_obs, act
        self.rew_buf[g], self.done_buf[g] = rew, done
        self.ptr[copy] = (pos + 1) % self.region
        self.filled[copy] = min(self.filled[copy] + 1, self.region)
        self.ep_steps[copy] += 1

    def end_episode(self, copy: int = 0) -> None:
        """Copy ``copy``'s episode ended: its steps (those still stored) can be drawn."""
        n = int(min(self.ep_steps[copy], self.region))
        if n:
            first = (int(self.ptr[copy]) - n) % self.region
            idx = copy * self.region + (first + np.arange(n)) % self.region
            self.ep_start[idx], self.ep_len[idx] = first, n
        self.ep_steps[copy] = 0

    def sample_batch(self, batch_size: int = 32, rng: np.random.Generator | None = None,
                     n_batches: int | None = None) -> dict:
        """A minibatch of ``batch_size`` steps of finished episodes (or with ``n_batches``,
        that many, stacked), a share of them relabelled (see the module's docstring)."""
        rng = np.random.default_rng() if rng is None else rng
        shape = (batch_size,) if n_batches is None else (n_batches, batch_size)
        total = int(np.prod(shape))
        valid = np.flatnonzero(self.ep_len > 0)
        if len(valid):
            idx = valid[rng.integers(0, len(valid), size=total)]
        else:  # no episode has ended yet: the stored steps as they are, one at a time
            stored = np.concatenate([c * self.region + np.arange(self.filled[c])
                                     for c in range(self.copies)])
            idx = stored[rng.integers(0, len(stored), size=total)]
        batch = self._transitions(idx, rng, relabel=len(valid) > 0)
        batch["discount"] = discount_of(batch, self.gamma)
        return {k: v.reshape(*shape, *v.shape[1:]) for k, v in batch.items()}

    def _transitions(self, idx: np.ndarray, rng: np.random.Generator, relabel: bool) -> dict:
        """The (relabelled, n-step) transitions starting at the steps ``idx``."""
        base, local = idx - idx % self.region, idx % self.region
        length = np.maximum(self.ep_len[idx], 1)
        pos = np.where(self.ep_len[idx] > 0, (local - self.ep_start[idx]) % self.region, 0)
        obs, obs2 = self.obs_buf[idx], self.obs2_buf[idx]
        goals = None
        relabelled = np.zeros(len(idx), bool)
        if relabel and self.her_ratio > 0:
            relabelled = rng.random(len(idx)) < self.her_ratio
            if self.strategy == "future":
                j = rng.integers(pos, length)
            elif self.strategy == "final":
                j = length - 1
            else:
                j = rng.integers(0, length)
            goal_idx = base + (self.ep_start[idx] + j) % self.region
            goals = self.obs2_buf[goal_idx, self.ag]
            obs[relabelled, self.dg] = goals[relabelled]
        # Steps of the return: up to n, within the episode (one while it is still open).
        k = np.where(self.ep_len[idx] > 0, np.minimum(self.n_step, length - pos), 1)
        ret = np.zeros(len(idx), np.float64)
        for step in range(self.n_step):
            live = step < k
            if not live.any():
                break
            s = base + (local + step) % self.region
            r = self.rew_buf[s].astype(np.float64)
            if relabelled.any():
                hit = relabelled & live
                r[hit] = self.compute_reward(self.obs2_buf[s[hit]][:, self.ag], goals[hit],
                                             np.array([{} for _ in range(int(hit.sum()))]))
            ret += np.where(live, self.gamma ** step * r, 0.0)
        last = base + (local + k - 1) % self.region
        obs2 = self.obs2_buf[last]
        if goals is not None:
            obs2[relabelled, self.dg] = goals[relabelled]
        return dict(obs=obs, act=self.act_buf[idx], rew=ret.astype(np.float32), obs2=obs2,
                    done=self.done_buf[last], steps=k.astype(np.int32))

    def _stored(self, filled: np.ndarray) -> np.ndarray:
        """The positions holding steps: each copy's part fills from its start."""
        return np.concatenate([c * self.region + np.arange(int(filled[c]))
                               for c in range(self.copies)])

    def state_arrays(self) -> dict:
        """The stored steps, their episode records and the copies' pointers, for a
        checkpoint."""
        idx = self._stored(self.filled)
        arrays = {f"buf_{k}": getattr(self, f"{k}_buf")[idx]
                  for k in ("obs", "obs2", "act", "rew", "done")}
        arrays.update(her_ep_start=self.ep_start[idx], her_ep_len=self.ep_len[idx],
                      her_ptr=self.ptr.copy(), her_filled=self.filled.copy(),
                      her_ep_steps=self.ep_steps.copy())
        return arrays

    def load_state_arrays(self, arrays: dict) -> None:
        """Restore :meth:`state_arrays`, after checking shapes and bookkeeping against
        what this buffer writes; with ``episodes_continue`` False, the open episodes end."""
        counts = {}
        for name in ("ptr", "filled", "ep_steps"):
            a = check_shape(np.asarray(arrays["her_" + name]), (self.copies,), "her_" + name)
            if not np.issubdtype(a.dtype, np.integer) or (a < 0).any():
                raise ValueError(f"her_{name} holds values that are not counts")
            counts[name] = a.astype(np.int64)
        ptr, filled = counts["ptr"], counts["filled"]
        if ((ptr >= self.region).any() or (filled > self.region).any()
                or ((filled < self.region) & (ptr != filled)).any()):
            raise ValueError(f"the replay buffer's pointers ({ptr.tolist()}, filled "
                             f"{filled.tolist()}) are not ones a buffer of {self.copies} "
                             f"part(s) of {self.region} steps writes")
        idx = self._stored(filled)
        n = len(idx)
        for k in ("obs", "obs2", "act", "rew", "done"):
            buf = getattr(self, f"{k}_buf")
            buf[idx] = check_shape(np.asarray(arrays[f"buf_{k}"]), (n, *buf.shape[1:]),
                                   f"buf_{k}")
        for k in ("ep_start", "ep_len"):
            a = check_shape(np.asarray(arrays[f"her_{k}"]), (n,), f"her_{k}")
            if not np.issubdtype(a.dtype, np.integer) or (a < 0).any() or (a > self.region).any():
                raise ValueError(f"her_{k} holds values a buffer of {self.region} steps per "
                                 f"copy does not write")
            getattr(self, k)[idx] = a
        self.ptr[:], self.filled[:], self.ep_steps[:] = ptr, filled, counts["ep_steps"]
        if not self.episodes_continue:
            for c in range(self.copies):
                self.end_episode(c)
