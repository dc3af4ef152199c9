"""The platform an environment runs on: is there a display, which OpenGL renders off-screen,
is this a process that hosts environments for another, and MuJoCo's noise.

The ground floor of :mod:`spinup_tf2.envs`: it imports nothing of the package.
"""

from __future__ import annotations


# MuJoCo warnings that come from gymnasium's own model files, not from anything the user did.
def has_display() -> bool:
    """True if a window could be opened (X11 or Wayland)."""
    import os

    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


# Set in a process that makes and renders environments for another (RenderingEnv's
# worker), which never loads TensorFlow.
HOSTING = {"environments": False}


def hosts_environments() -> bool:
    """True in a process that renders environments for another: a rendering worker
    (:class:`spinup_tf2.envs.rendering.RenderingEnv`) or a daemonic worker of gymnasium's
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


_MUJOCO_NOISE = ("compiler attribute 'settotalmass' is deprecated",)


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
