"""Videos of a policy's episodes (MP4 or GIF), on machines with or without a display.

Frames come from the environment's ``rgb_array`` rendering, in its own process
(:class:`spinup_tf2.envs.rendering.RenderingEnv`, which also says what headless OpenGL
MuJoCo needs). Files are written under a temporary name and renamed when complete, so an
interrupted recording never leaves half a video.
"""

from __future__ import annotations

import os
import os.path as osp

from spinup_tf2 import rundir

# (A pixel run's vars.pkl of release 0.2 names RenderingEnv here.)
from spinup_tf2.envs.rendering import RenderingEnv
from spinup_tf2.errors import SpinupError

FORMATS = (".mp4", ".gif")


def check_video_path(path: str) -> None:
    """Refuse, before anything runs, a video path whose suffix is not .mp4 or .gif,
    whose directory cannot be written, or when the writer is not installed."""
    suffix = osp.splitext(path)[1].lower()
    if suffix not in FORMATS:
        raise SpinupError(f"--video {path!r}: the file name must end in .mp4 or .gif (the "
                          f"format comes from the suffix); got {suffix or 'no suffix'!r}.")
    try:
        import imageio  # noqa: F401
        if suffix == ".mp4":
            import imageio_ffmpeg  # noqa: F401
    except ImportError:
        raise SpinupError("Recording videos needs imageio and imageio-ffmpeg, which are not "
                          "installed: pip install -e '.[video]' (or pip install imageio "
                          "imageio-ffmpeg).") from None
    rundir.check_writable_dir(osp.dirname(osp.abspath(path)), f"--video {path!r}: the directory")


class VideoRecorder:
    """Collects frames and writes them to ``path`` (.mp4 or .gif) at ``fps`` frames
    per second; the file appears, complete, when :meth:`close` is called.

    Use as a context manager: an exception inside drops the partial file.
    """

    def __init__(self, path: str, fps: float):
        check_video_path(path)
        import imageio

        self.path, self.fps, self.frames = path, float(fps), 0
        os.makedirs(osp.dirname(osp.abspath(path)), exist_ok=True)
        self._file = rundir.atomic_file(path)
        self.tmp = self._file.__enter__()
        if osp.splitext(path)[1].lower() == ".mp4":
            # macro_block_size 1 keeps the frame size as rendered (no padding to 16)
            self.writer = imageio.get_writer(self.tmp, format="FFMPEG", fps=self.fps,
                                             macro_block_size=1)
        else:
            self.writer = imageio.get_writer(self.tmp, format="GIF", duration=1000 / self.fps,
                                             loop=0)

    def add(self, frame) -> None:
        """Append one RGB frame (height x width x 3, uint8)."""
        if frame is None:
            raise SpinupError("The environment rendered no frame: it must be made with "
                              "render_mode='rgb_array' to record a video.")
        self.writer.append_data(frame)
        self.frames += 1

    def close(self) -> None:
        """Finish the file and move it into place."""
        self.writer.close()
        self._file.__exit__(None, None, None)

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None:
            self.close()
        else:
            self.writer.close()
            self._file.__exit__(exc_type, exc, tb)  # drops the partial file
        return False


def record_episode(env_ref: str, get_action, path: str, max_ep_len: int) -> tuple:
    """One episode of ``get_action(obs)`` on a fresh copy of the environment ``env_ref``
    (see :func:`spinup_tf2.envs.recording.ref_of`; rendered in a :class:`RenderingEnv`), written to
    ``path``; returns ``(ep_ret, ep_len)``. A policy with memory (``get_action.reset``)
    starts the episode from a zero state."""
    env = RenderingEnv(env_ref)
    try:
        with VideoRecorder(path, env.metadata.get("render_fps") or 30) as recorder:
            o, _ = env.reset()
            getattr(get_action, "reset", lambda: None)()
            recorder.add(env.render())
            ep_ret, ep_len, done = 0.0, 0, False
            while not (done or ep_len == max_ep_len):
                o, r, terminated, truncated, _ = env.step(get_action(o))
                recorder.add(env.render())
                ep_ret, ep_len, done = ep_ret + float(r), ep_len + 1, terminated or truncated
    finally:
        env.close()
    return ep_ret, ep_len


