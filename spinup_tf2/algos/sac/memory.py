"""What ``sac()`` refuses of a replay buffer before it is made: one larger than this
machine's memory (numpy would reserve it lazily, and the run would be killed once it
filled up), with the size it would take and the largest ``replay_size`` that fits."""

from __future__ import annotations

from spinup_tf2.algos.sac.frame_buffer import FrameReplayBuffer
from spinup_tf2.errors import SpinupError


def check_memory(replay_size: int, obs_dim: int | tuple, act_dim: int, n_procs: int = 1,
                 state_size: int = 0, frame_stack: int = 1, copies: int = 1) -> None:
    """Refuse a replay buffer larger than this machine's memory (numpy would reserve it
    lazily, and the run would be killed once it filled up). ``state_size``: the recurrent
    memory stored with each transition (and its episode-start flag), if any; for images
    (``obs_dim`` their shape), see :func:`check_frame_memory`."""
    import psutil

    if isinstance(obs_dim, tuple):
        return check_frame_memory(replay_size, obs_dim, frame_stack, act_dim, n_procs, copies)
    per_step = 2 * obs_dim + act_dim + 2 + (state_size + 1 if state_size else 0)
    need = replay_size * per_step * 4 * n_procs
    total = psutil.virtual_memory().total
    if need > total:
        raise SpinupError(
            f"sac() got replay_size={replay_size}: {n_procs} replay buffer(s) of that many "
            f"transitions of {obs_dim}-dim observations take {need / 2**30:.3g} GiB, more than "
            f"the {total / 2**30:.3g} GiB of memory here. Give replay_size at most "
            f"{total // (per_step * 4 * n_procs)}. Nothing was written.")


def check_frame_memory(replay_size: int, obs_shape: tuple, frame_stack: int, act_dim: int,
                       n_procs: int = 1, copies: int = 1) -> None:
    """Refuse a pixel replay buffer (:class:`FrameReplayBuffer`, ``frame_stack`` frames
    per observation, of ``copies`` environment copies) larger than the memory free now,
    with the size it would take and the largest ``replay_size`` that fits."""
    import psutil

    def need(size):
        return n_procs * FrameReplayBuffer.bytes_for(obs_shape, frame_stack, act_dim, size,
                                                     copies)

    free = psutil.virtual_memory().available
    if need(replay_size) <= free:
        return
    fits = max(0, int(replay_size * free / need(replay_size)))
    while fits > 0 and need(fits) > free:
        fits = int(fits * 0.99)
    raise SpinupError(
        f"sac() got replay_size={replay_size}: {n_procs} replay buffer(s) of that many "
        f"transitions of {'x'.join(map(str, obs_shape))} uint8 images ({frame_stack} frames "
        f"each, every frame stored once) take {need(replay_size) / 2**30:.3g} GiB, more than "
        f"the {free / 2**30:.3g} GiB of memory free here. Give replay_size at most {fits}. "
        f"Nothing was written.")
