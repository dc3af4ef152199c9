"""Videos of the policy while it trains (``video_freq``): one episode after every
``video_freq``-th epoch and after the last, in ``videos/epoch_<N>.mp4``."""

from __future__ import annotations

from collections.abc import Callable

from spinup_tf2 import envs, rundir
from spinup_tf2.errors import SpinupError


class EpochVideos:
    """Records, when due, one episode of the deterministic policy on a fresh copy of the
    training environment, rendered in its own process (so training's environments and
    random numbers are untouched). ``video_freq=0`` records nothing and costs nothing."""

    def __init__(self, video_freq: int, env_ref: str | None, max_ep_len: int,
                 unrecorded: str | None = None, layout=None, scale=None):
        """``env_ref``: the training environment as :func:`spinup_tf2.envs.ref_of` names it;
        ``unrecorded``: why it could not be recorded; ``layout``: that of its Dict
        observations (the agent acts on their flat vectors); ``scale``: that of its actions
        (the agent acts in [-1, 1]). Refuse, before the run writes
        anything, videos of an environment that cannot be rebuilt in another process."""
        if video_freq and (unrecorded or not env_ref):
            raise SpinupError(f"video_freq renders the training environment rebuilt in another "
                              f"process, but this one cannot be rebuilt "
                              f"({unrecorded or 'it has no registered name'}). Nothing was "
                              f"written. Drop video_freq, or make the env with gymnasium.make "
                              f"and wrappers that record their arguments.")
        self.video_freq, self.env_ref, self.max_ep_len = video_freq, env_ref, max_ep_len
        self.flatten = (lambda o: o) if layout is None else layout.flatten
        self.to_env = (lambda a: a) if scale is None else scale.to_env

    def after_epoch(self, output_dir: str | None, epoch: int, last: bool,
                    agent: Callable, env=None) -> None:
        """Record the deterministic actions of ``agent`` (``agent(o, True)``; a recurrent
        one is reset at the episode's start) into ``output_dir`` if ``epoch`` is due (or
        ``last``); nothing without an output directory (MPI processes but the first).
        ``env``: the training env, whose normalizing statistics the copy takes."""
        if not self.video_freq or output_dir is None:
            return
        if not (epoch % self.video_freq == 0 or last):
            return
        from spinup_tf2.policy.video import record_episode

        path = rundir.video_path(output_dir, epoch)
        ref = envs.with_state(self.env_ref, envs.wrapper_state(env))
        def act(o):
            return self.to_env(agent(self.flatten(o), True))

        act.reset = agent.reset
        ep_ret, ep_len = record_episode(ref, act, path, self.max_ep_len)
        print(f"Video of epoch {epoch}: {path} (return {ep_ret:.1f}, {ep_len} steps)",
              flush=True)
