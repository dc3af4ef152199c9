"""The tasks this package registers with gymnasium, and the ones it registers on demand.

The partially observed ``-P`` tasks (:class:`PositionOnly`), registered when
``spinup_tf2`` is imported, and DeepMind Control's tasks through Shimmy
(:func:`ensure_registered`), registered when a run names one.
"""

from __future__ import annotations

import dataclasses

import gymnasium as gym
import numpy as np

from spinup_tf2.envs.platform import hosts_environments, use_headless_gl

# Partially observed tasks (pomdp-baselines' "-P" tasks: positions without velocities):
# registered id -> (the fully observed id, the observation entries kept).
POSITION_ONLY = {"Pendulum-P-v1": ("Pendulum-v1", (0, 1)),  # cos, sin of the angle
                 "CartPole-P-v1": ("CartPole-v1", (0, 2))}  # cart position, pole angle


class PositionOnly(gym.Env):
    """The environment ``env_id`` observed only at the entries ``keep`` of its 1-D Box
    observation (the entry point of the ``-P`` tasks). With the velocities dropped, one
    observation is not the state, and a policy needs memory (``--recurrent``) to act
    well. The inner environment is held, not wrapped, so the task is recorded and
    rebuilt by its own id (and runs under its registered time limit)."""

    metadata = {"render_modes": ["human", "rgb_array"]}  # the classic-control ones

    def __init__(self, env_id: str, keep: tuple, render_mode: str | None = None, **kwargs):
        self.env = gym.make(env_id, render_mode=render_mode, **kwargs).unwrapped
        self.keep = np.asarray(keep, dtype=np.int64)
        space = self.env.observation_space
        self.observation_space = gym.spaces.Box(space.low[self.keep], space.high[self.keep],
                                                dtype=space.dtype)
        self.action_space = self.env.action_space
        self.metadata, self.render_mode = self.env.metadata, render_mode

    @property
    def np_random(self):
        """The inner environment's generator (checkpoints save and restore it here)."""
        return self.env.np_random

    @np_random.setter
    def np_random(self, value) -> None:
        self.env.np_random = value

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        obs, info = self.env.reset(seed=seed, options=options)
        return obs[self.keep], info

    def step(self, action):
        obs, reward, terminated, truncated, info = self.env.step(action)
        return obs[self.keep], reward, terminated, truncated, info

    def render(self):
        return self.env.render()

    def close(self) -> None:
        self.env.close()


def ensure_registered(env_id) -> None:
    """Register DeepMind Control's tasks (``dm_control/<domain>-<task>-v0``, Shimmy's
    names) when ``env_id`` is one of them and the ``dmc`` extra is installed: gymnasium
    knows them only once Shimmy is imported, which costs seconds, so only then."""
    import importlib.util

    if (isinstance(env_id, str) and env_id.startswith("dm_control/")
            and env_id not in gym.registry and importlib.util.find_spec("shimmy")):
        import os

        # dm_control picks its OpenGL platform when imported. With EGL, Mesa's LLVM and
        # TensorFlow's crash the process that loads both (at the second import, or at
        # exit), so a process that may hold TensorFlow imports it with none: its
        # environments render in processes that host them.
        if hosts_environments():
            use_headless_gl()
            import shimmy
        else:
            saved = os.environ.get("MUJOCO_GL")
            os.environ["MUJOCO_GL"] = "disable"
            try:
                import shimmy
            finally:  # the rendering workers it starts inherit the user's choice
                if saved is None:
                    del os.environ["MUJOCO_GL"]
                else:
                    os.environ["MUJOCO_GL"] = saved
        gym.register_envs(shimmy)
        # Shimmy registers each task by a functools.partial, which an EnvSpec cannot write
        # as JSON: re-registered by name, a run's config.json records them like any other.
        for name, spec in list(gym.registry.items()):
            kwargs = getattr(spec.entry_point, "keywords", {})
            if name.startswith("dm_control/") and "domain_name" in kwargs:
                gym.registry[name] = dataclasses.replace(
                    spec, entry_point="spinup_tf2.envs:dm_control_suite",
                    kwargs=dict(spec.kwargs, **kwargs))


def dm_control_suite(domain_name: str, task_name: str, **kwargs):
    """A DeepMind Control Suite task as Shimmy makes it (``dm_control/<domain>-<task>-v0``;
    ``kwargs``: Shimmy's, e.g. ``render_mode``, ``render_kwargs``, ``task_kwargs``)."""
    import dm_control.suite
    from shimmy.dm_control_compatibility import DmControlCompatibilityV0

    env_kwargs = {k: kwargs.pop(k) for k in ("task_kwargs", "environment_kwargs",
                                             "visualize_reward") if k in kwargs}
    return DmControlCompatibilityV0(dm_control.suite.load(domain_name, task_name,
                                                          **env_kwargs), **kwargs)


def register_envs() -> None:
    """Register the partially observed tasks of :data:`POSITION_ONLY` with gymnasium (once;
    ``import spinup_tf2`` does it), with the time limits of their fully observed tasks."""
    for env_id, (full_id, keep) in POSITION_ONLY.items():
        if env_id not in gym.registry:
            gym.register(env_id, entry_point="spinup_tf2.envs:PositionOnly",
                         kwargs=dict(env_id=full_id, keep=keep),
                         max_episode_steps=gym.spec(full_id).max_episode_steps)
