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

from spinup_tf2.envs.episodes import rng_state, set_rng_state

VECTOR_MODES = ("sync", "async")


class VectorEpisodes:
    """``num_envs`` copies of ``env_fn()`` (in this process, or each in its own with
    ``mode='async'``), stepped together; stores each step's transitions and returns the
    episodes that ended.

    A checkpoint keeps the random generators but not the episodes in progress: a resumed
    run starts new episodes in every copy (see :meth:`state`).
    """

    def __init__(self, env_fn, num_envs: int, mode: str, max_ep_len: int, seed: int):
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
        self.num_envs, self.first_seed = num_envs, seed
        self.action_space = self.envs.action_space
        self.action_space.seed(seed)
        self.ep_ret = np.zeros(num_envs)
        self.ep_len = np.zeros(num_envs, dtype=np.int64)

    def reset(self, seed: int | None = None) -> tuple:
        """``(first observations, info)`` of new episodes in every copy: the first call
        seeds them with ``seed``, ``seed + 1``, ... (the constructor's seed if None)."""
        if self.first_seed is not None:
            seed, self.first_seed = (self.first_seed if seed is None else seed), None
        self.ep_ret[:], self.ep_len[:] = 0.0, 0
        return self.envs.reset(seed=seed)

    def step(self, o, act, replay_buffer, logger, normalizer=None):
        """Step every copy from its row of ``o``, with ``act(o_i)`` (uniformly random
        actions if ``act`` is None); store the ``num_envs`` transitions, and the return and
        length of each episode that ended in ``logger``; return the next ``o``."""
        a = self.action_space.sample() if act is None else np.stack([act(x) for x in o])
        o2, r, terminated, truncated, info = self.envs.step(a)
        ended = terminated | truncated
        o2_stored = o2
        if ended.any():
            o2_stored = o2.copy()
            for i in np.flatnonzero(ended):
                o2_stored[i] = info["final_obs"][i]
        self.ep_ret += r
        self.ep_len += 1
        for i in range(self.num_envs):
            replay_buffer.store(o[i], a[i], r[i], o2_stored[i], float(terminated[i]))
            if normalizer is not None:
                normalizer.observe(o2_stored[i])
        for i in np.flatnonzero(ended):
            logger.store(EpRet=float(self.ep_ret[i]), EpLen=int(self.ep_len[i]))
        self.ep_ret[ended], self.ep_len[ended] = 0.0, 0
        return o2

    def state(self, episode: bool = True) -> dict:
        """The action sampler's generator state (the copies' own generators stay in their
        processes): what a checkpoint keeps."""
        return dict(first_seed=None, episode_start={}, actions=np.zeros(0),
                    np_random=rng_state(self.action_space.np_random),
                    action_space_rng=rng_state(self.action_space.np_random))

    def restore(self, state: dict):
        """After :meth:`state`: the sampler's generator put back and new episodes begun in
        every copy (seeded from it); returns their first observations."""
        set_rng_state(self.action_space.np_random, state["action_space_rng"])
        return self.reset(seed=int(self.action_space.np_random.integers(2**31)))[0]

    def close(self) -> None:
        self.envs.close()
