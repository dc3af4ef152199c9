"""The tasks this package registers with gymnasium, and the ones it registers on demand.

The partially observed ``-P`` tasks (:class:`PositionOnly`) and the goal-conditioned
``PointReach-v0`` (:class:`PointReach`), registered when ``spinup_tf2`` is imported, and
DeepMind Control's tasks through Shimmy (:func:`ensure_registered`), registered when a
run names one.
"""

from __future__ import annotations

import dataclasses

import gymnasium as gym
import numpy as np

from spinup_tf2.envs.packages import import_env_module
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


class PointReach(gym.Env):
    """A goal-conditioned task small enough to check by hand and to learn in minutes: a
    point in the square [-1, 1]^2 moves by ``0.1 * action`` (clipped to the square) and
    must come within ``distance_threshold`` of a goal drawn uniformly in the square.

    Observations are a Dict in the robotics packages' form: ``observation`` (the point's
    position), ``achieved_goal`` (the same position: the goal the point has reached) and
    ``desired_goal``. The reward is :meth:`compute_reward`: sparse (``reward_type``
    ``'sparse'``: 0 within the threshold, -1 elsewhere) or ``'dense'`` (minus the distance);
    ``info['is_success']`` is 1.0 within the threshold. Episodes never terminate; the
    registered ``PointReach-v0`` is cut at 50 steps. ``rgb_array`` frames (64x64) show the
    point (blue) and the goal (green)."""

    metadata = {"render_modes": ["rgb_array"], "render_fps": 10}

    def __init__(self, distance_threshold: float = 0.1, reward_type: str = "sparse",
                 render_mode: str | None = None):
        if reward_type not in ("sparse", "dense"):
            raise ValueError(f"reward_type must be 'sparse' or 'dense', not {reward_type!r}")
        self.distance_threshold, self.reward_type = float(distance_threshold), reward_type
        self.render_mode = render_mode
        box = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
        self.observation_space = gym.spaces.Dict(
            {"observation": box, "achieved_goal": box, "desired_goal": box})
        self.action_space = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
        self.pos = np.zeros(2, np.float32)
        self.goal = np.zeros(2, np.float32)

    def _obs(self) -> dict:
        return {"achieved_goal": self.pos.copy(), "desired_goal": self.goal.copy(),
                "observation": self.pos.copy()}

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        self.pos = self.np_random.uniform(-1.0, 1.0, 2).astype(np.float32)
        self.goal = self.np_random.uniform(-1.0, 1.0, 2).astype(np.float32)
        return self._obs(), {"is_success": self._success()}

    def step(self, action):
        step = 0.1 * np.clip(np.asarray(action, np.float32), -1.0, 1.0)
        self.pos = np.clip(self.pos + step, -1.0, 1.0).astype(np.float32)
        info = {"is_success": self._success()}
        reward = float(self.compute_reward(self.pos, self.goal, info))
        return self._obs(), reward, False, False, info

    def _success(self) -> float:
        return float(np.linalg.norm(self.pos - self.goal) <= self.distance_threshold)

    def compute_reward(self, achieved_goal, desired_goal, info):
        """The reward for reaching ``achieved_goal`` when ``desired_goal`` was asked, for
        one pair or a batch of them (the last axis is the position); ``info`` is unused."""
        d = np.linalg.norm(np.asarray(achieved_goal) - np.asarray(desired_goal), axis=-1)
        if self.reward_type == "dense":
            return (-d).astype(np.float32)
        return -(d > self.distance_threshold).astype(np.float32)

    def render(self):
        if self.render_mode != "rgb_array":
            return None
        frame = np.full((64, 64, 3), 255, np.uint8)
        for xy, colour in ((self.goal, (40, 160, 40)), (self.pos, (40, 80, 200))):
            col, row = ((np.asarray(xy) + 1.0) / 2.0 * 63).round().astype(int)
            frame[max(63 - row - 2, 0):63 - row + 3, max(col - 2, 0):col + 3] = colour
        return frame


def ensure_registered(env_id) -> None:
    """Register DeepMind Control's tasks (``dm_control/<domain>-<task>-v0``, Shimmy's
    names) when ``env_id`` is one of them and the ``dmc`` extra is installed: gymnasium
    knows them only once Shimmy is imported, which costs seconds, so only then. For
    gymnasium's ``module:EnvId`` (typed by a user), import ``module``
    (:func:`~spinup_tf2.envs.packages.import_env_module`)."""
    import importlib.util

    import_env_module(env_id)

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
    ``import spinup_tf2`` does it), with the time limits of their fully observed tasks, and
    ``PointReach-v0`` (:class:`PointReach`, 50 steps)."""
    for env_id, (full_id, keep) in POSITION_ONLY.items():
        if env_id not in gym.registry:
            gym.register(env_id, entry_point="spinup_tf2.envs:PositionOnly",
                         kwargs=dict(env_id=full_id, keep=keep),
                         max_episode_steps=gym.spec(full_id).max_episode_steps)
    if "PointReach-v0" not in gym.registry:
        gym.register("PointReach-v0", entry_point="spinup_tf2.envs:PointReach",
                     max_episode_steps=50)
