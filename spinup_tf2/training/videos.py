"""Videos of the policy while it trains (``video_freq``): one episode after every
``video_freq``-th epoch and after the last, in ``videos/epoch_<N>.mp4``."""

from __future__ import annotations

from typing import Callable

from spinup_tf2 import rundir
from spinup_tf2.errors import SpinupError


class EpochVideos:
    """Records, when due, one episode of the deterministic policy on a fresh copy of the
    training environment, rendered in its own process (so training's environments and
    random numbers are untouched). ``video_freq=0`` records nothing and costs nothing."""

    def __init__(self, video_freq: int, env_name: str | None, max_ep_len: int):
        """Refuse, before the run writes anything, videos of an environment that cannot be
        rebuilt in another process (one without a registered name)."""
        if video_freq and not env_name:
            raise SpinupError("video_freq needs an environment registered with gymnasium "
                              "(config.json's env_name), to render it in another process; this "
                              "env_fn makes one without a registered spec. Nothing was written. "
                              "Drop video_freq, or make the env with gymnasium.make(name).")
        self.video_freq, self.env_name, self.max_ep_len = video_freq, env_name, max_ep_len

    def after_epoch(self, output_dir: str | None, epoch: int, last: bool,
                    act: Callable) -> None:
        """Record ``act`` (observation -> action) into ``output_dir`` if ``epoch`` is due
        (or ``last``); nothing without an output directory (MPI processes but the first)."""
        if not self.video_freq or output_dir is None:
            return
        if not (epoch % self.video_freq == 0 or last):
            return
        from spinup_tf2.policy.video import record_episode

        path = rundir.video_path(output_dir, epoch)
        ep_ret, ep_len = record_episode(self.env_name, act, path, self.max_ep_len)
        print(f"Video of epoch {epoch}: {path} (return {ep_ret:.1f}, {ep_len} steps)",
              flush=True)
