"""Several copies of the environment stepping at once (``num_envs > 1``).

gymnasium's vector API in its same-step autoreset mode: when a copy's episode ends, the
step returns the new episode's first observation and puts the ended one's last observation
in ``info['final_obs']``. So each stored transition is one copy's ``(o, a, r, o2, d)``
within one episode, never spanning two (the pitfall of the next-step mode, CleanRL #499);
``o2`` is the true last observation of an ended episode, and ``d`` is set only for a
termination: a truncation (a time limit, or ``max_ep_len``, applied to each copy as a
``TimeLimit``) bootstraps, as with one environment.
"""

from __future__ import annotations

import numpy as np

from spinup_tf2.envs.action_scale import ActionScale
from spinup_tf2.envs.dict_obs import DictLayout
from spinup_tf2.envs.episodes import rng_state, set_rng_state, store_episode, success_key
from spinup_tf2.envs.recording import check_stats


class VectorEpisodes:
    """``num_envs`` copies of ``env_fn()`` (in this process, or each in its own with
    ``mode='async'``), stepped together; stores each step's transitions and returns the
    episodes that ended.

    A checkpoint keeps the random generators but not the episodes in progress: a resumed
    run starts new episodes in every copy (see :meth:`state`).
    """

    def __init__(self, env_fn, num_envs: int, mode: str, max_ep_len: int, seed: int,
                 stats: tuple = (), layout: DictLayout | None = None,
                 scale: ActionScale | None = None):
        """``stats``: the attributes holding the copies' running statistics (see
        :func:`~spinup_tf2.envs.recording.stats_attributes`), which a checkpoint keeps
        per copy; ``layout``: that of a Dict observation space, whose observations are
        given as their flat vectors (:class:`~spinup_tf2.envs.dict_obs.DictLayout`);
        ``scale``: actions taken in ``[-1, 1]`` and mapped onto the environment's bounds
        (:class:`~spinup_tf2.envs.action_scale.ActionScale`)."""
        import gymnasium as gym
        from gymnasium.vector import AsyncVectorEnv, AutoresetMode, SyncVectorEnv

        def make():
            from spinup_tf2.envs.platform import quiet_mujoco

            quiet_mujoco()  # in each copy's process too
            env = env_fn()
            limit = env.spec.max_episode_steps if env.spec is not None else None
            if limit is None or limit > max_ep_len:
                env = gym.wrappers.TimeLimit(env, max_ep_len)  # max_ep_len, per copy
            return env

        kwargs = dict(autoreset_mode=AutoresetMode.SAME_STEP)
        if mode == "async":  # fresh interpreters, without this process's TensorFlow
            self.envs = AsyncVectorEnv([make] * num_envs, context="spawn", **kwargs)
        else:
            self.envs = SyncVectorEnv([make] * num_envs, **kwargs)
        self.num_envs, self.first_seed, self.stats = num_envs, seed, tuple(stats)
        self.layout = layout
        self.action_space = self.envs.action_space
        if scale is not None:
            self.action_space = gym.spaces.Box(-1.0, 1.0, self.action_space.shape, np.float32)
        self.action_space.seed(seed)
        self.to_env = (lambda a: a) if scale is None else scale.to_env
        self.ep_ret = np.zeros(num_envs)
        self.ep_len = np.zeros(num_envs, dtype=np.int64)

    def reset(self, seed: int | None = None) -> tuple:
        """``(first observations, info)`` of new episodes in every copy: the first call
        seeds them with ``seed``, ``seed + 1``, ... (the constructor's seed if None)."""
        if self.first_seed is not None:
            seed, self.first_seed = (self.first_seed if seed is None else seed), None
        self.ep_ret[:], self.ep_len[:] = 0.0, 0
        obs, info = self.envs.reset(seed=seed)
        return self._flat(obs), info

    def _flat(self, obs):
        return obs if self.layout is None else self.layout.flatten_batch(obs)

    def step(self, o, act, replay_buffer, logger, normalizer=None):
        """Step every copy from its row of ``o``, with ``act(o_i)`` (uniformly random
        actions if ``act`` is None); store the ``num_envs`` transitions in ``replay_buffer``
        (a :class:`~spinup_tf2.algos.sac.nstep.NStepReturns`: each copy's own, and the end of
        its episode), and the return and length of each episode that ended in ``logger``;
        return the next ``o``."""
        a = self.action_space.sample() if act is None else np.stack([act(x) for x in o])
        o2, r, terminated, truncated, info = self.envs.step(self.to_env(a))
        o2 = self._flat(o2)
        ended = terminated | truncated
        o2_stored = o2
        if ended.any():
            o2_stored = o2.copy()
            for i in np.flatnonzero(ended):
                final = info["final_obs"][i]
                o2_stored[i] = final if self.layout is None else self.layout.flatten(final)
        self.ep_ret += r
        self.ep_len += 1
        for i in range(self.num_envs):
            replay_buffer.store(o[i], a[i], r[i], o2_stored[i], float(terminated[i]), copy=i)
            if ended[i]:
                replay_buffer.end_episode(i)  # n-step windows still open are written
            if normalizer is not None:
                normalizer.observe(o2_stored[i])
        final_info = info.get("final_info", {})
        key = success_key(final_info)
        for i in np.flatnonzero(ended):  # goal tasks report success: SuccessRate
            store_episode(logger, float(self.ep_ret[i]), int(self.ep_len[i]),
                          final_info[key][i] if key else None)
        self.ep_ret[ended], self.ep_len[ended] = 0.0, 0
        return o2

    def state(self, episode: bool = True) -> dict:
        """The action sampler's generator state (the copies' own generators stay in their
        processes): what a checkpoint keeps."""
        state = dict(first_seed=None, episode_start={}, actions=np.zeros(0),
                     np_random=rng_state(self.action_space.np_random),
                     action_space_rng=rng_state(self.action_space.np_random))
        if self.stats:  # each copy's, as data
            state["wrapper_stats"] = {attr: [_plain(v) for v in self.envs.get_attr(attr)]
                                      for attr in self.stats}
        return state

    def restore(self, state: dict):
        """After :meth:`state`: the sampler's generator and the copies' normalizing
        statistics put back, and new episodes begun in every copy (seeded from the
        generator); returns their first observations."""
        from gymnasium.wrappers.utils import RunningMeanStd

        set_rng_state(self.action_space.np_random, state["action_space_rng"])
        stats = state.get("wrapper_stats")
        if self.stats and not isinstance(stats, dict):
            raise ValueError("the checkpoint has no statistics for the copies' normalizing "
                             "wrappers (it was written before they were kept)")
        for attr in self.stats:
            values = []
            for v in stats[attr]:
                if isinstance(v, dict):
                    check_stats([v])
                    dtype = np.dtype(v.get("dtype", "float64"))
                    rms = RunningMeanStd(shape=np.shape(v["mean"]), dtype=dtype)
                    rms.mean, rms.var = (np.asarray(v[k], dtype) for k in ("mean", "var"))
                    rms.count = float(v["count"])
                    v = rms
                else:
                    v = np.asarray(v, dtype=np.float64)
                    if not np.all(np.isfinite(v)):
                        raise ValueError(f"the copies' {attr} is not finite")
                values.append(v)
            if len(values) != self.num_envs:
                raise ValueError(f"the checkpoint holds statistics for {len(values)} copies, "
                                 f"not {self.num_envs}")
            self.envs.set_attr(attr, values)
        return self.reset(seed=int(self.action_space.np_random.integers(2**31)))[0]

    def close(self) -> None:
        self.envs.close()


def _plain(value):
    """A normalizing wrapper's statistic as JSON-ready data."""
    from gymnasium.wrappers.utils import RunningMeanStd

    if isinstance(value, RunningMeanStd):
        return dict(mean=np.asarray(value.mean).tolist(), var=np.asarray(value.var).tolist(),
                    count=float(value.count), dtype=str(np.asarray(value.mean).dtype))
    return np.asarray(value, dtype=np.float64).tolist()
