"""Pixel tasks (``--pixels``): an environment as its camera sees it.

:class:`PixelObservation` turns an environment that renders ``rgb_array`` into one whose
observations are stacked frames; :func:`pixel_ref` names such a task as a recorded spec
(its *ref*), which :func:`spinup_tf2.envs.rendering.make_pixels` makes in a rendering
process of its own.
"""

from __future__ import annotations

import dataclasses
import json
from collections import deque

import gymnasium as gym
import numpy as np

from spinup_tf2.arguments import PIXEL_BOUNDS
from spinup_tf2.envs.tasks import ensure_registered
from spinup_tf2.errors import SpinupError

# PixelObservation's arguments: the smallest and largest value of each (--image_size,
# --frame_stack, --action_repeat on the command line).
BOUNDS = {"size": PIXEL_BOUNDS["image_size"], "frame_stack": PIXEL_BOUNDS["frame_stack"],
          "action_repeat": PIXEL_BOUNDS["action_repeat"]}
# The wrapper that makes a pixel task of an environment that renders (--pixels).
PIXEL_WRAPPER = "spinup_tf2.envs:PixelObservation"


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
        bad = [f"{k}={v!r} ({BOUNDS[k][0]}-{BOUNDS[k][1]})"
               for k, v in (("size", size), ("frame_stack", frame_stack),
                            ("action_repeat", action_repeat))
               if not (isinstance(v, (int, np.integer)) and not isinstance(v, bool)
                       and BOUNDS[k][0] <= v <= BOUNDS[k][1])]
        if bad:
            raise SpinupError(f"PixelObservation got {', '.join(bad)}; each must be a whole "
                              f"number within the bounds given (defaults: size=84, "
                              f"frame_stack=3, action_repeat=1).")
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


# Runs record a wrapper by its class's module and name: PixelObservation's stays
# spinup_tf2.envs (PIXEL_WRAPPER), as runs before the envs/ package recorded it.
PixelObservation.__module__ = "spinup_tf2.envs"


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
    if not isinstance(spec.entry_point, str):
        raise SpinupError(f"--pixels renders {env_name} in a process of its own, which makes it "
                          f"from its registration; {env_name}'s entry point is the Python "
                          f"object {getattr(spec.entry_point, '__qualname__', spec.entry_point)}"
                          f", not a 'module:Name' string, so it cannot be passed there. "
                          f"Register it by name: "
                          f"gymnasium.register({env_name!r}, entry_point='your_module:YourEnv').")
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
