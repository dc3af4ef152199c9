"""The isolated rendering process: environments that render, made and stepped in a process
of their own that never imports TensorFlow (:class:`RenderingEnv`), and what renders there
(a following camera, a longer floor, a window for a pixel task's frames).

MuJoCo renders off-screen through an OpenGL platform: without a display,
:func:`~spinup_tf2.envs.platform.use_headless_gl` picks EGL (Mesa's, from Debian's
``libegl1`` and ``libegl-mesa0``) unless ``MUJOCO_GL`` already names one.
"""

from __future__ import annotations

import os
import os.path as osp
import sys

import gymnasium as gym

from spinup_tf2.envs.episodes import rng_state, set_rng_state
from spinup_tf2.envs.pixels import is_pixel_ref, pixel_ref, renders_observations
from spinup_tf2.envs.platform import HOSTING, hosts_environments, use_headless_gl
from spinup_tf2.envs.recording import describe, make
from spinup_tf2.errors import SpinupError

INSTALL_GL = ("Headless MuJoCo rendering needs an OpenGL platform: EGL (Debian/Ubuntu: "
              "apt-get install libegl1 libegl-mesa0; MUJOCO_GL=egl, the default here without a "
              "display) or OSMesa (apt-get install libosmesa6, then MUJOCO_GL=osmesa).")


# What in a rendering failure points at the OpenGL platform (or a renderer that crashed),
# rather than at an environment that does not render.
_GL_SIGNS = ("gl", "osmesa", "mujoco", "display", "exit code -")


def make_isolated(ref: str, render_mode: str | None = None):
    """The environment ``ref`` names, made by :func:`spinup_tf2.envs.recording.make`; a pixel task
    (:func:`spinup_tf2.is_pixel_ref`) in a :class:`RenderingEnv` of its own, since
    MuJoCo's off-screen rendering crashes a process that has loaded TensorFlow, unless
    this process already hosts environments (a rendering worker, or a daemonic worker
    of gymnasium's AsyncVectorEnv, which could not start another)."""
    if is_pixel_ref(ref) and not hosts_environments():
        return RenderingEnv(ref, render_mode)
    return make(ref, render_mode)


def make_pixels(env_name: str, size: int = 84, frame_stack: int = 3, action_repeat: int = 1,
                **env_kwargs):
    """``env_name`` as a pixel task (:func:`spinup_tf2.envs.pixels.pixel_ref`), rendered in its own
    process (:func:`make_isolated`): the ``env_fn`` of ``--pixels``."""
    return make_isolated(pixel_ref(env_name, size, frame_stack, action_repeat,
                                        **env_kwargs))


def render_frame(env):
    """``env.render()`` as an RGB frame; a MuJoCo environment that cannot render
    off-screen is a :class:`SpinupError` saying what to install."""
    try:
        return env.render()
    except Exception as err:  # mujoco.FatalError, OpenGL errors, ...
        name = env.spec.id if env.spec is not None else type(env.unwrapped).__name__
        raise SpinupError(f"{name} could not render a frame off-screen ({type(err).__name__}: "
                          f"{str(err).strip().splitlines()[0][:160] if str(err).strip() else ''}"
                          f"; MUJOCO_GL={os.environ.get('MUJOCO_GL', 'unset')}). "
                          + INSTALL_GL) from None


class RenderingEnv(gym.Env):
    """The environment ``env_ref`` names (:func:`spinup_tf2.envs.recording.ref_of`: a registered id
    or a recorded spec), made with ``render_mode`` in a separate process
    that never imports TensorFlow, with the same ``reset``/``step``/``render``:
    ``'rgb_array'`` sends each step's frame back, ``'human'`` shows it in a window,
    None renders nothing (an environment that renders its own observations, as
    ``--pixels`` makes, still does). :meth:`rng_state` and :meth:`set_rng_state` read
    and set its random generator, so that a training checkpoint can replay its episode.

    Why: Mesa's software OpenGL (llvmpipe, behind headless EGL) and TensorFlow
    each carry their own LLVM, and MuJoCo's off-screen rendering crashes the
    process that has loaded both; a window that cannot be opened (a ``DISPLAY``
    that answers no one) can crash it too. The policy stays here; the environment
    and its renderer live in the worker, whose crash is a message here.
    """

    def __init__(self, env_ref: str, render_mode: str | None = "rgb_array"):
        import multiprocessing as mp

        use_headless_gl()
        ctx = mp.get_context("spawn")  # a fresh interpreter: no TensorFlow in it
        self._conn, child = ctx.Pipe()
        self._proc = ctx.Process(target=_rendering_worker, args=(env_ref, render_mode, child),
                                 daemon=True)
        self._proc.start()
        child.close()
        self.env_name, self._mode, self._frame = describe(env_ref), render_mode, None
        self._ref = env_ref
        self._began = False  # until the worker has answered once
        info = self._call("info")
        self._began = True
        self.metadata, self.render_mode, self.spec, self.observation_space, \
            self.action_space = info

    def __reduce__(self):
        # What pickles (vars.pkl) is the recipe, not the pipe to the worker: unpickling
        # starts a rendering process of the same task, new, as gymnasium's envs unpickle.
        return RenderingEnv, (self._ref, self._mode)

    def _call(self, *msg):
        try:
            self._conn.send(msg)
            ok, value = self._conn.recv()
        except (EOFError, ConnectionResetError, BrokenPipeError):
            self._proc.join(timeout=5)
            code, hint = self._proc.exitcode, _spawn_hint()
            if code == 1 and hint and not self._began:  # it reports its own errors: came before
                raise SpinupError(f"{self.env_name}'s rendering process stopped before it "
                                  f"began (exit code 1).{hint}") from None
            raise SpinupError(self._failure(f"its rendering process died (exit code "
                                            f"{code})")) from None
        if not ok:
            raise SpinupError(self._failure(value))
        return value

    def _failure(self, reason: str) -> str:
        if self._mode == "human":
            return (f"{self.env_name} could not be shown in a window ({reason}; DISPLAY="
                    f"{os.environ.get('DISPLAY', 'unset')}). Rendering to a screen needs a "
                    f"display that accepts windows and the env's rendering extra (e.g. pip "
                    f"install 'gymnasium[classic-control]'). Add --norender (-nr) to run "
                    f"without a window, or record a video: --video run.mp4.")
        if not any(w in reason.lower() for w in _GL_SIGNS):
            return (f"{self.env_name} could not render a frame ({reason}): the environment "
                    f"must render RGB frames (render_mode='rgb_array' among its metadata's "
                    f"render_modes) for --pixels, a video or a rendered replay. Give an "
                    f"environment that renders, or one whose observations are images.")
        return (f"{self.env_name} could not render a frame off-screen ({reason}; MUJOCO_GL="
                f"{os.environ.get('MUJOCO_GL', 'unset')}). " + INSTALL_GL)

    def reset(self, **kwargs):
        obs, info, self._frame = self._call("reset", kwargs)
        return obs, info

    def rng_state(self) -> dict:
        """The state of the environment's ``np_random``."""
        return self._call("rng", None)

    def set_rng_state(self, state: dict) -> None:
        """Put the environment's ``np_random`` into ``state``."""
        self._call("rng", state)

    def step(self, action):
        obs, r, terminated, truncated, info, self._frame = self._call("step", action)
        return obs, r, terminated, truncated, info

    def render(self):
        return self._frame

    def close(self) -> None:
        if self._proc.is_alive():
            self._conn.send(("close",))
            self._proc.join(timeout=10)
        self._conn.close()


PACKAGE_DIR = osp.dirname(osp.dirname(osp.abspath(__file__)))  # spinup_tf2/


def _spawn_hint() -> str:
    """Why a rendering process started from a user's script may die at once."""
    main = getattr(sys.modules.get("__main__"), "__file__", None)
    if not main or osp.dirname(osp.abspath(main)).startswith(PACKAGE_DIR):
        return ""
    return (f" It is started with 'spawn' (TensorFlow must not be in it), which runs "
            f"{osp.basename(main)}'s top level again first; put the sac() call (or whatever "
            f"records the video) under if __name__ == '__main__':. The run's files so far "
            f"are kept.")


def render_following(env):
    """``env.render()``, with a MuJoCo env's camera moved along x to its main body.

    gymnasium's -v5 tasks name a ``trackbodyid`` but render with a free camera,
    which MuJoCo does not move: a runner leaves the picture within seconds. So
    the camera's look-at point follows the body (``trackbodyid``, else body 1,
    the torso) along x, keeping the env's own distance, height and angle.
    """
    renderer = getattr(env.unwrapped, "mujoco_renderer", None)
    viewer = renderer._viewers.get("rgb_array") if renderer is not None else None
    if viewer is not None:  # made by the first render
        body = (renderer.default_cam_config or {}).get("trackbodyid", 1)
        viewer.cam.lookat[0] = env.unwrapped.data.xpos[body][0]
    return env.render()


def extend_floor(env, half_size: float = 2000.0) -> None:
    """Draw a MuJoCo env's ground planes ``half_size`` metres out each way, with the same
    tiles. gymnasium's floors are 40 m: a good HalfCheetah leaves its floor a tenth of the
    way into a 1,000-step episode, and the following camera then films a void. A plane is
    infinite for collisions whatever its size, so only the picture changes."""
    import numpy as np

    model = getattr(env.unwrapped, "model", None)
    if model is None or not hasattr(model, "geom_type"):
        return  # not a MuJoCo env
    import mujoco

    for g in np.nonzero(model.geom_type == mujoco.mjtGeom.mjGEOM_PLANE)[0]:
        old = model.geom_size[g, :2].copy()
        if (old <= 0).any():
            continue  # already drawn as infinite
        new = np.maximum(old, half_size)
        mat = model.geom_matid[g]
        if mat >= 0 and not model.mat_texuniform[mat]:  # the texture stretches with the plane
            model.mat_texrepeat[mat] *= (new / old).astype(model.mat_texrepeat.dtype)
        model.geom_size[g, :2] = new


class FrameWindow:
    """A window showing the frames a pixel task's policy sees (``test_policy`` on a
    ``--pixels`` run), enlarged ``scale`` times, at most ``fps`` a second."""

    def __init__(self, title: str, scale: int = 4):
        self.title, self.scale, self.screen, self.clock = title, scale, None, None

    def show(self, frame, fps: float) -> None:
        import numpy as np
        import pygame

        if self.screen is None:
            # The frames come from OpenGL in this process (MuJoCo's GLFW or EGL context);
            # a window that SDL also draws through OpenGL keeps showing its first frame.
            os.environ.setdefault("SDL_FRAMEBUFFER_ACCELERATION", "0")
            pygame.display.init()
            h, w = frame.shape[:2]
            self.screen = pygame.display.set_mode((w * self.scale, h * self.scale))
            pygame.display.set_caption(self.title)
            self.clock = pygame.time.Clock()
        image = pygame.surfarray.make_surface(np.ascontiguousarray(frame.swapaxes(0, 1)))
        self.screen.blit(pygame.transform.scale(image, self.screen.get_size()), (0, 0))
        pygame.event.pump()
        pygame.display.flip()
        self.clock.tick(fps)


def _rendering_worker(env_ref: str, render_mode: str, conn) -> None:
    """The worker of :class:`RenderingEnv`: make the env, then answer calls until
    told to close or its parent goes (Ctrl-C is the parent's to handle)."""
    import signal
    import warnings

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    warnings.simplefilter("ignore")  # a failure comes back as one message
    HOSTING["environments"] = True
    window = None
    if render_mode == "human" and is_pixel_ref(env_ref):
        # A pixel task renders its observations off-screen; the window shows them.
        render_mode, window = None, FrameWindow(describe(env_ref))
    elif render_mode == "rgb_array" or is_pixel_ref(env_ref):  # pygame draws on a
        # Surface (a pixel task renders its observations); SDL's video driver would
        os.environ.setdefault("SDL_VIDEODRIVER", "dummy")  # only complain (XDG_RUNTIME_DIR)

    def frame(env):  # in human mode gymnasium draws the window at each step itself
        if window is not None:
            window.show(env.render(), env.metadata.get("render_fps") or 30)
        if render_mode != "rgb_array":
            return None
        # A pixel env's render() is the frame its policy saw: its camera stays put.
        return env.render() if renders_observations(env) else render_following(env)

    try:
        env = make(env_ref, render_mode)
        extend_floor(env)
    except Exception as err:
        conn.send((False, f"{type(err).__name__}: {err}"))
        return
    while True:
        try:
            cmd, *args = conn.recv()
        except EOFError:  # the parent is gone
            cmd, args = "close", []
        try:
            if cmd == "info":
                spec = env.spec
                reply = (dict(env.metadata), "human" if window else env.render_mode, spec,
                         env.observation_space, env.action_space)
            elif cmd == "reset":
                obs, info = env.reset(**args[0])
                reply = (obs, info, frame(env))
            elif cmd == "step":
                obs, r, terminated, truncated, info = env.step(args[0])
                reply = (obs, r, terminated, truncated, info, frame(env))
            elif cmd == "rng":
                if args[0] is not None:
                    set_rng_state(env.unwrapped.np_random, args[0])
                reply = rng_state(env.unwrapped.np_random)
            else:
                env.close()
                return
        except Exception as err:
            msg = str(err).strip().splitlines()[0][:200] if str(err).strip() else ""
            conn.send((False, f"{type(err).__name__}: {msg}"))
            continue
        conn.send((True, reply))
