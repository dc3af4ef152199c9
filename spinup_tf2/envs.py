"""How a run's environment was made, and making it again.

A run records its training environment in config.json: ``env_name`` (the registered id)
and ``env_spec``, gymnasium's ``EnvSpec`` as JSON, which holds the ``gym.make`` arguments
and every wrapper with its arguments (``additional_wrappers``). ``test_policy``, videos and
``load_policy_and_env`` rebuild the environment from it, so a policy is replayed on the
environment it was trained on, not on a bare one. What cannot be recorded (an environment
not made by ``gym.make``, a wrapper whose arguments are a function) is said once, at the
start of training, and again by a replay, which then offers the pickled environment.

A recorded environment is named to the rest of the package by one string, its *ref*: the
spec's JSON when there is one, else the registered id.
"""

from __future__ import annotations

import dataclasses
import json
import os.path as osp
from collections import deque

import gymnasium as gym
import numpy as np

from spinup_tf2 import rundir
from spinup_tf2.errors import SpinupError

# Where wrappers a run directory may name without being trusted come from.
TRUSTED_WRAPPER_MODULE = "gymnasium.wrappers."
# The wrapper that makes a pixel task of an environment that renders (--pixels).
PIXEL_WRAPPER = "spinup_tf2.envs:PixelObservation"
# Wrappers whose statistics change what the policy sees (or the returns), by attribute.
_RUNNING_STATS = ("obs_rms", "return_rms")
STATE_KEY = "spinup_tf2_wrapper_state"  # in a ref: the statistics to put back
# MuJoCo warnings that come from gymnasium's own model files, not from anything the user did.
_MUJOCO_NOISE = ("compiler attribute 'settotalmass' is deprecated",)


def record(env) -> tuple[dict | None, str | None]:
    """``(spec, None)``: ``env``'s EnvSpec as a JSON-ready dict, wrappers included; or
    ``(None, why)`` when it cannot be recorded so that ``gym.make`` rebuilds it."""
    spec = env.spec
    if spec is None:
        return None, (f"{type(env.unwrapped).__name__} was not made by gymnasium.make, so "
                      f"it has no EnvSpec")
    for wrapper in spec.additional_wrappers:
        if wrapper.kwargs is None:
            return None, (f"the wrapper {wrapper.name} does not record its arguments (it "
                          f"does not inherit gymnasium.utils.RecordConstructorArgs)")
    try:
        spec = json.loads(spec.to_json())
    except (TypeError, ValueError) as err:
        names = ", ".join(w.name for w in spec.additional_wrappers) or spec.id
        return None, (f"the arguments of {names} cannot be written as JSON ({err}; a "
                      f"function, such as TransformReward's, cannot)")
    if pixel_options(spec.get("additional_wrappers")) is None:  # (a pixel task's rendering
        (spec.get("kwargs") or {}).pop("render_mode", None)  # is the task) how it was watched
    return spec, None


def ref_of(config: dict) -> str | None:
    """The ref of the environment config.json records: its spec as JSON, else its
    registered id, else None."""
    spec = config.get("env_spec")
    if isinstance(spec, dict):
        return json.dumps(spec)
    name = config.get("env_name")
    return name if isinstance(name, str) else None


def describe(ref: str) -> str:
    """A short name for messages: the id, with its wrappers."""
    if not ref.startswith("{"):
        return ref
    spec = json.loads(ref)
    wrappers = [w.get("name", "?") for w in spec.get("additional_wrappers") or []]
    return f"{spec.get('id')}" + (f" with {', '.join(wrappers)}" if wrappers else "")


def check_trusted(ref, where: str) -> None:
    """A run directory is data, not code: the environment it names must be a registered
    id made by its registered entry point, and its wrappers gymnasium's own. (An id such
    as ``mod:Env-v0``, an entry point or a wrapper from another module, would import that
    module and run its code.)"""

    if not isinstance(ref, str) or not ref:
        raise SpinupError(f"{where} names no environment to rebuild (env_name: {ref!r}).")
    spec = json.loads(ref) if ref.startswith("{") else {"id": ref}
    env_id = spec.get("id")
    ensure_registered(env_id)
    registered = gym.registry.get(env_id) if isinstance(env_id, str) else None
    bad = None
    if registered is None or ":" in env_id:
        bad = (f"the environment {env_id!r}, which is not an id registered with gymnasium"
               + (f" (the module {env_id.split(':')[0]})" if ":" in str(env_id) else ""))
    elif "entry_point" in spec and spec["entry_point"] != registered.entry_point:
        bad = (f"{env_id} made by {spec['entry_point']!r}, not by its registered entry point "
               f"{registered.entry_point!r}")
    else:
        for wrapper in spec.get("additional_wrappers") or []:
            entry = str(wrapper.get("entry_point"))
            if not entry.startswith(TRUSTED_WRAPPER_MODULE) and entry != PIXEL_WRAPPER:
                bad = f"the wrapper {wrapper.get('name')!r} from {entry!r}"
                break
    if bad:
        raise SpinupError(
            f"{where} names {bad}; making it could import and run code named by the run "
            f"directory. Make the environment yourself and call run_policy(env, get_action) "
            f"(docs/user/shipping.md), or, if you trust this run directory, add --trust_vars_pkl "
            f"(trust_pickle=True).")


def has_display() -> bool:
    """True if a window could be opened (X11 or Wayland)."""
    import os

    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


# Set in a process that makes and renders environments for another (RenderingEnv's
# worker), which never loads TensorFlow.
HOSTING = {"environments": False}


def hosts_environments() -> bool:
    """True in a process that renders environments for another: a rendering worker
    (:class:`spinup_tf2.policy.video.RenderingEnv`) or a daemonic worker of gymnasium's
    AsyncVectorEnv. Any other process may hold TensorFlow, so it renders nothing."""
    import multiprocessing as mp

    return HOSTING["environments"] or mp.current_process().daemon


def use_headless_gl() -> None:
    """Without a display, let MuJoCo render off-screen through EGL, unless the user
    chose a platform (``MUJOCO_GL``). Call before the first MuJoCo environment is made."""
    import os

    if not has_display() and "MUJOCO_GL" not in os.environ:
        os.environ["MUJOCO_GL"] = "egl"
        os.environ.setdefault("PYOPENGL_PLATFORM", "egl")


def quiet_mujoco() -> None:
    """Keep MuJoCo's warnings about gymnasium's own model files (the ``settotalmass``
    deprecation, printed each time a -v5 task is made) out of the user's output; any other
    MuJoCo warning still reaches stderr. Nothing if MuJoCo is not installed."""
    import importlib.util
    import sys

    if importlib.util.find_spec("mujoco") is None:
        return
    import mujoco

    def warn(message: str) -> None:
        if not any(noise in message for noise in _MUJOCO_NOISE):
            sys.stderr.write(f"WARNING: {message}\n")

    mujoco.set_mju_user_warning(warn)


def make(ref: str, render_mode: str | None = None):
    """The environment ``ref`` names (see :func:`ref_of`), made by ``gym.make``, with the
    statistics of its normalizing wrappers put back and frozen (see :func:`with_state`)."""
    import gymnasium as gym
    from gymnasium.envs.registration import EnvSpec

    state = None
    if ref.startswith("{"):
        spec = json.loads(ref)
        state = spec.pop(STATE_KEY, None)
        ref = json.dumps(spec)
    target = EnvSpec.from_json(ref) if ref.startswith("{") else ref
    quiet_mujoco()
    env = gym.make(target, render_mode=render_mode) if render_mode else gym.make(target)
    if state:
        set_wrapper_state(env, state)
    return env


class PixelObservation(gym.Wrapper, gym.utils.RecordConstructorArgs):
    """The environment as its camera sees it (``--pixels``): observations are the last
    ``frame_stack`` rendered frames, ``size`` x ``size`` RGB, stacked on the channel
    axis oldest first (``Box(0, 255, (size, size, 3 * frame_stack), uint8)``); each
    action is repeated ``action_repeat`` times, its rewards summed, stopping early if
    the episode ends. The environment must render ``rgb_array``; frames of another size
    are resized (bilinear). ``render()`` gives the newest frame, the one the policy saw.
    """

    def __init__(self, env: gym.Env, size: int = 84, frame_stack: int = 3,
                 action_repeat: int = 1):
        gym.utils.RecordConstructorArgs.__init__(self, size=size, frame_stack=frame_stack,
                                                 action_repeat=action_repeat)
        gym.Wrapper.__init__(self, env)
        bad = [f"{k}={v!r}" for k, v in (("size", size), ("frame_stack", frame_stack),
                                          ("action_repeat", action_repeat))
               if not (isinstance(v, (int, np.integer)) and v >= 1)]
        if bad:
            raise SpinupError(f"PixelObservation got {', '.join(bad)}; each must be a whole "
                              f"number >= 1 (defaults: size=84, frame_stack=3, "
                              f"action_repeat=1).")
        if env.render_mode != "rgb_array":
            raise SpinupError(f"PixelObservation needs an environment made with "
                              f"render_mode='rgb_array'; this one has {env.render_mode!r}.")
        self.size, self.frame_stack, self.action_repeat = size, frame_stack, action_repeat
        self.observation_space = gym.spaces.Box(0, 255, (size, size, 3 * frame_stack),
                                                np.uint8)
        self.frames: deque = deque(maxlen=frame_stack)

    def _frame(self) -> np.ndarray:
        frame = np.asarray(self.env.render())[..., :3]
        if frame.shape[:2] != (self.size, self.size):
            from PIL import Image

            frame = np.asarray(Image.fromarray(frame.astype(np.uint8)).resize(
                (self.size, self.size), Image.Resampling.BILINEAR))
        return frame.astype(np.uint8)

    def _observation(self) -> np.ndarray:
        return np.concatenate(self.frames, axis=-1)

    def reset(self, **kwargs):
        _, info = self.env.reset(**kwargs)
        frame = self._frame()
        for _ in range(self.frame_stack):
            self.frames.append(frame)
        return self._observation(), info

    def step(self, action):
        total = 0.0
        for _ in range(self.action_repeat):
            _, r, terminated, truncated, info = self.env.step(action)
            total += float(r)
            if terminated or truncated:
                break
        self.frames.append(self._frame())
        return self._observation(), total, terminated, truncated, info

    def render(self):
        return self.frames[-1] if self.frames else self._frame()


def pixel_ref(env_name: str, size: int = 84, frame_stack: int = 3, action_repeat: int = 1,
              **env_kwargs) -> str:
    """The ref (see :func:`ref_of`) of ``env_name`` as a pixel task: made with
    ``render_mode='rgb_array'`` (at ``size`` x ``size`` where the environment renders at
    a size it is given: MuJoCo tasks, DeepMind Control through Shimmy), then
    :class:`PixelObservation`."""
    from gymnasium.envs.registration import WrapperSpec

    ensure_registered(env_name)
    spec = gym.spec(env_name)
    kwargs = dict(spec.kwargs, **env_kwargs, render_mode="rgb_array")
    entry = str(spec.entry_point)
    if entry.startswith("gymnasium.envs.mujoco"):
        kwargs.update(width=size, height=size)
    elif env_name.startswith("dm_control/"):
        kwargs.setdefault("render_kwargs", dict(width=size, height=size, camera_id=0))
    wrapper = WrapperSpec("PixelObservation", PIXEL_WRAPPER,
                          dict(size=size, frame_stack=frame_stack,
                               action_repeat=action_repeat))
    return dataclasses.replace(spec, kwargs=kwargs, additional_wrappers=(wrapper,)).to_json()


def pixel_options(wrappers) -> dict | None:
    """The arguments of the :class:`PixelObservation` among ``wrappers`` (an EnvSpec's
    ``additional_wrappers``, as WrapperSpecs or as their JSON dicts), or None."""
    for w in wrappers or ():
        entry, kwargs = ((w.get("entry_point"), w.get("kwargs")) if isinstance(w, dict)
                         else (w.entry_point, w.kwargs))
        if entry == PIXEL_WRAPPER:
            return kwargs or {}
    return None


def is_pixel_ref(ref: str) -> bool:
    """Whether the environment ``ref`` names is a pixel task (:class:`PixelObservation`)."""
    return (ref.startswith("{") and PIXEL_WRAPPER in ref
            and pixel_options(json.loads(ref).get("additional_wrappers")) is not None)


def renders_observations(env) -> bool:
    """Whether ``env`` is a pixel task, whose ``render()`` is its observation's frame."""
    return isinstance(env, PixelObservation)


def frame_stack(env) -> int:
    """Frames per image observation of ``env``: :class:`PixelObservation`'s
    ``frame_stack`` when its spec has one, else 1."""
    options = pixel_options(getattr(getattr(env, "spec", None), "additional_wrappers", None))
    return int((options or {}).get("frame_stack", 1))


def policy_action_space(env):
    """The action space the policy acts in: ``env.action_space``, except that an unbounded
    Box under gymnasium's ClipAction (which widens the space to (-inf, inf) and clips to
    the inner bounds) gives the inner, bounded space: SAC's squashed actions stay inside
    it, so the clip never changes them."""
    import numpy as np
    from gymnasium.spaces import Box
    from gymnasium.wrappers import ClipAction

    space = env.action_space
    if isinstance(space, Box) and not np.all(np.isfinite(space.high)):
        for layer in _chain(env):
            if isinstance(layer, ClipAction):
                return layer.env.action_space
    return space


def _chain(env):
    while env is not None:
        yield env
        env = getattr(env, "env", None)


def wrapper_state(env) -> list:
    """The running statistics of ``env``'s normalizing wrappers (NormalizeObservation,
    NormalizeReward), outermost first, as JSON-ready dicts; [] if it has none."""
    state = []
    for layer in _chain(env):
        for attr in _RUNNING_STATS:
            rms = layer.__dict__.get(attr)
            if rms is not None:
                state.append(dict(wrapper=type(layer).__name__, attr=attr,
                                  mean=rms.mean.tolist(), var=rms.var.tolist(),
                                  count=float(rms.count)))
    return state


def set_wrapper_state(env, state: list) -> None:
    """Put :func:`wrapper_state`'s statistics back into the same wrappers of ``env``, and
    stop them updating: a replay sees observations as the policy saw them at the end of
    training."""
    import numpy as np

    layers = [(layer, attr) for layer in _chain(env) for attr in _RUNNING_STATS
              if layer.__dict__.get(attr) is not None]
    try:
        for (layer, attr), saved in zip(layers, state, strict=True):
            rms = getattr(layer, attr)
            mean, var = (np.asarray(saved[k], dtype=rms.mean.dtype) for k in ("mean", "var"))
            if mean.shape != rms.mean.shape or var.shape != rms.var.shape:
                raise ValueError(f"shapes {mean.shape}, {var.shape} for {rms.mean.shape}")
            rms.mean, rms.var, rms.count = mean, var, float(saved["count"])
    except (KeyError, TypeError, ValueError) as err:
        raise SpinupError(f"The saved statistics of the environment's normalizing wrappers "
                          f"({rundir.ENV_STATE}) do not fit it ({type(err).__name__}: {err}); "
                          f"the file was altered, or comes from another run.") from None
    freeze_stats(env)


def freeze_stats(env) -> None:
    """Stop ``env``'s normalizing wrappers updating their statistics (a replay of a trained
    policy, whether rebuilt or unpickled, sees observations as training last did)."""
    for layer in _chain(env):
        if any(layer.__dict__.get(attr) is not None for attr in _RUNNING_STATS):
            layer.update_running_mean = False


def with_state(ref: str | None, state: list):
    """``ref`` carrying the wrapper statistics ``state``, which :func:`make` puts back."""
    if not state or ref is None or not ref.startswith("{"):
        return ref
    return json.dumps(dict(json.loads(ref), **{STATE_KEY: state}))


def save_state(run_dir: str | None, env) -> None:
    """Write ``env``'s wrapper statistics to the run's env_state.json (nothing if it has
    none), beside the policy saved with them."""
    state = wrapper_state(env)
    if run_dir is not None and state:
        rundir.write_text(osp.join(run_dir, rundir.ENV_STATE), json.dumps(state))


def read_state(run_dir: str) -> list:
    """The wrapper statistics :func:`save_state` wrote, [] if none (or unreadable)."""
    try:
        with open(osp.join(run_dir, rundir.ENV_STATE)) as f:
            state = json.load(f)
    except (OSError, ValueError):
        return []
    return state if isinstance(state, list) else []


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
