"""Episodes that a checkpoint can rebuild: :class:`ReplayableEpisodes` remembers how the
episode in progress began and its actions; the random generators' states as plain data."""

from __future__ import annotations

import gymnasium as gym
import numpy as np

from spinup_tf2.envs.action_scale import ActionScale
from spinup_tf2.envs.dict_obs import DictLayout
from spinup_tf2.envs.recording import policy_action_space, set_wrapper_state, wrapper_state


def _bits(generator):
    # A legacy RandomState (DeepMind Control's, through Shimmy) keeps it private.
    return getattr(generator, "bit_generator", None) or generator._bit_generator


def rng_state(generator: np.random.Generator | np.random.RandomState) -> dict:
    """The state of a numpy Generator (or legacy RandomState), as a plain dict."""
    return _bits(generator).state


def set_rng_state(generator: np.random.Generator | np.random.RandomState, state: dict) -> None:
    """Put a numpy Generator (or legacy RandomState) back into a state from
    :func:`rng_state`."""
    _bits(generator).state = state


def env_rng_state(env) -> dict:
    """The state of ``env``'s random generator (``np_random``, or for an environment in
    its own process, :class:`~spinup_tf2.envs.rendering.RenderingEnv`, the one there)."""
    if hasattr(env, "rng_state"):
        return env.rng_state()
    return rng_state(env.unwrapped.np_random)


def set_env_rng_state(env, state: dict) -> None:
    """Put ``env``'s random generator into ``state`` (see :func:`env_rng_state`)."""
    if hasattr(env, "set_rng_state"):
        env.set_rng_state(state)
    else:
        set_rng_state(env.unwrapped.np_random, state)


# The keys under which environments report an episode's success in their step's info:
# gymnasium-robotics' and SB3's, then PointMaze's and Meta-World's.
SUCCESS_KEYS = ("is_success", "success")


def success_key(info) -> str | None:
    """The key of ``info`` (a step's info dict) that reports success (the first of
    :data:`SUCCESS_KEYS` it holds), or None where it reports none."""
    if isinstance(info, dict):
        for key in SUCCESS_KEYS:
            if key in info:
                return key
    return None


def store_episode(logger, ep_ret: float, ep_len: int, is_success=None, prefix: str = "") -> None:
    """Store a finished episode's return and length in ``logger`` (an
    :class:`~spinup_tf2.utils.logx.EpochLogger`) as ``EpRet`` and ``EpLen``, and
    ``is_success`` (its last step's success, ``info['is_success']`` or ``info['success']``
    (:func:`success_key`), for environments that report it; None for others) as
    ``SuccessRate``; each key after ``prefix``
    (``'Test'`` for test episodes)."""
    logger.store(**{prefix + "EpRet": ep_ret, prefix + "EpLen": ep_len})
    if is_success is not None:
        logger.store(**{prefix + "SuccessRate": float(is_success)})


class ReplayableEpisodes(gym.Wrapper):
    """Remembers how the current episode began (the reset's seed or random-generator
    state) and the actions taken since, so that :meth:`restore` can rebuild the
    episode in progress exactly, by replaying it, in a fresh process.

    ``first_seed`` seeds the action space's generator, and the first reset only
    (later resets continue the env's random generator), as ``env.reset(seed=...)``
    once and ``env.reset()`` after would. Exact for any env whose randomness is its
    ``np_random`` and its action space's generator, which :meth:`state` also saves, and
    whose wrappers' running statistics (NormalizeObservation, NormalizeReward) are those
    :func:`~spinup_tf2.envs.recording.wrapper_state` finds: they are saved as they were
    when the episode began, and the replay brings them to where they were.
    """

    def __init__(self, env: gym.Env, first_seed: int | None = None,
                 layout: DictLayout | None = None, scale: ActionScale | None = None):
        """Its ``action_space`` is the one the policy acts in (see
        :func:`spinup_tf2.envs.policy_action_space`: ClipAction's inner bounds; with an
        :class:`~spinup_tf2.envs.action_scale.ActionScale` ``scale``, ``[-1, 1]``, mapped
        onto the environment's bounds at each step); with the ``layout`` of a Dict
        observation space, its observations are the flat vectors
        (:class:`~spinup_tf2.envs.dict_obs.DictLayout`) and its ``observation_space`` their
        Box."""
        super().__init__(env)
        action_space = policy_action_space(env) if scale is None else scale.space
        if action_space is not env.action_space:
            self.action_space = action_space
        self.to_env = (lambda a: a) if scale is None else scale.to_env
        self.layout = layout
        if layout is not None:
            self.observation_space = layout.space
        if first_seed is not None:
            self.action_space.seed(first_seed)
        self.first_seed = first_seed
        self.episode_start: dict = {}
        self.actions: list = []

    def reset(self, **kwargs):
        stats = wrapper_state(self.env)  # before the reset's observation updates them
        if self.first_seed is not None:
            self.episode_start = dict(seed=self.first_seed)
            kwargs["seed"], self.first_seed = self.first_seed, None
        else:
            self.episode_start = dict(rng=env_rng_state(self.env))
        if stats:
            self.episode_start["wrapper_stats"] = stats
        self.actions = []
        obs, info = self.env.reset(**kwargs)
        return self._flat(obs), info

    def step(self, action):
        self.actions.append(action)
        obs, *rest = self.env.step(self.to_env(action))
        return (self._flat(obs), *rest)

    def _flat(self, obs):
        return obs if self.layout is None else self.layout.flatten(obs)

    def state(self, episode: bool = True) -> dict:
        """Everything :meth:`restore` needs; ``actions`` is a numpy array, the rest
        plain Python values. ``episode=False`` leaves out the episode in progress
        (for an env whose episodes are all finished, such as the test env
        between epochs)."""
        state = dict(first_seed=self.first_seed,
                     episode_start=self.episode_start if episode else {},
                     actions=np.array(self.actions if episode else []),
                     np_random=env_rng_state(self.env),
                     action_space_rng=rng_state(self.action_space.np_random))
        if not episode and wrapper_state(self.env):
            state["wrapper_stats"] = wrapper_state(self.env)
        return state

    def restore(self, state: dict):
        """Bring the env back to :meth:`state`; return the current observation
        (None if no episode had begun)."""
        set_rng_state(self.action_space.np_random, state["action_space_rng"])
        start, obs = state["episode_start"], None
        stats = start.get("wrapper_stats", state.get("wrapper_stats"))
        if stats is None and wrapper_state(self.env):
            raise ValueError("the checkpoint has no statistics for the environment's "
                             "normalizing wrappers (it was written before they were kept)")
        if stats is not None:
            set_wrapper_state(self.env, stats, freeze=False)
        if start:
            if "rng" in start:
                set_env_rng_state(self.env, start["rng"])
            obs = self.env.reset(seed=start.get("seed"))[0]
            for a in state["actions"]:
                obs = self.env.step(self.to_env(a))[0]
            obs = self._flat(obs)
        self.episode_start, self.actions = start, list(state["actions"])
        set_env_rng_state(self.env, state["np_random"])
        self.first_seed = state["first_seed"]
        return obs
