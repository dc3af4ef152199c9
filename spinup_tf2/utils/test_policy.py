"""Load a trained policy and run it: ``python -m spinup_tf2.run test_policy DIR``.

Spinning Up's ``test_policy``: :func:`run_policy` and the command. Loading lives in
:mod:`spinup_tf2.policy.load` (imported here under Spinning Up's names), videos in
:mod:`spinup_tf2.policy.video`. Without a display, episodes run without rendering.
Nothing is written to disk but an asked-for video.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import time

from spinup_tf2.envs import has_display, render_frame, success_key
from spinup_tf2.errors import SpinupError, cli_main
from spinup_tf2.policy.load import (  # noqa: F401  (Spinning Up's import path)
    load_policy_and_env,
    load_saved_model,
    load_tf2_policy,
)
from spinup_tf2.policy.video import VideoRecorder, check_video_path
from spinup_tf2.rundir import find_saves, itr_of, select_save  # noqa: F401  (paths of 0.1)
from spinup_tf2.utils.logx import EpochLogger


def run_policy(env, get_action, max_ep_len: int | None = None, num_episodes: int = 100,
               render: bool = True, video: str | None = None) -> None:
    """Run ``num_episodes`` episodes, printing each one's return and length (and, for an
    environment that reports ``info['is_success']`` or ``info['success']``, whether it
    succeeded), then a table
    of their statistics (with the success rate). ``max_ep_len`` (0 or None: no cap besides the
    environment's own time limit) cuts episodes short. ``video`` (a path ending
    in .mp4 or .gif) records every episode into one file, from an env made with
    ``render_mode='rgb_array'``, at the env's ``render_fps``. A policy with memory
    (a ``get_action.reset`` method, as a recurrent run's has) carries its state from
    step to step and is reset at each episode's start."""
    reset_memory = getattr(get_action, "reset", lambda: None)
    if env is None:
        raise SpinupError(
            "Environment not found! config.json names no registered environment (env_name) to "
            "rebuild. Make the environment yourself and call run_policy(env, get_action) "
            "(docs/user/shipping.md), or, if you trust this run directory, add "
            "--trust_vars_pkl to load the environment pickled in vars.pkl (unpickling runs "
            "code from the file).")
    if video is not None:
        if env.render_mode != "rgb_array":
            raise SpinupError(f"A video needs the environment made with "
                              f"render_mode='rgb_array'; this one has {env.render_mode!r}. Use "
                              f"load_policy_and_env(..., video=True).")
        recorder = VideoRecorder(video, env.metadata.get("render_fps") or 30)
    else:
        recorder = contextlib.nullcontext()
    logger = EpochLogger(output_fname=None)
    with recorder:
        o, _ = env.reset()
        reset_memory()
        ep_ret, ep_len, n, success = 0.0, 0, 0, False
        while n < num_episodes:
            if video is not None:
                recorder.add(render_frame(env))
            elif render:
                env.render()
                time.sleep(1e-3)

            a = get_action(o)
            o, r, terminated, truncated, info = env.step(a)
            ep_ret += float(r)
            ep_len += 1

            if terminated or truncated or (max_ep_len and ep_len == max_ep_len):
                if video is not None:
                    recorder.add(render_frame(env))  # the episode's last state
                logger.store(EpRet=ep_ret, EpLen=ep_len)
                line = f"Episode {int(n)} \t EpRet {float(ep_ret):.3f} \t EpLen {int(ep_len)}"
                key = success_key(info)
                if key:  # goal tasks
                    success = True
                    logger.store(SuccessRate=float(info[key]))
                    line += f" \t Success {int(bool(info[key]))}"
                print(line)
                o, _ = env.reset()
                reset_memory()
                ep_ret, ep_len = 0.0, 0
                n += 1
    if video is not None:
        print(f"Wrote {recorder.frames} frames at {recorder.fps:g} fps to {video}.")

    logger.log_tabular("EpRet", with_min_and_max=True)
    logger.log_tabular("EpLen", average_only=True)
    if success:
        logger.log_tabular("SuccessRate", average_only=True)
    logger.dump_tabular()


def main(argv=None) -> int:
    """``test_policy.py fpath [--len] [--episodes] [--norender] [--itr] [--deterministic]``."""
    parser = argparse.ArgumentParser(prog="python -m spinup_tf2.run test_policy",
                                     description="Run a policy saved by spinup_tf2.")
    parser.add_argument("fpath", type=str, help="the output directory of one run")
    spinup = parser.add_argument_group("Spinning Up's flags")
    beyond = parser.add_argument_group("beyond Spinning Up")
    spinup.add_argument("--len", "-l", type=int, default=0,
                        help="cut episodes at this many steps (0, the default: only the "
                             "environment's own time limit)")
    spinup.add_argument("--episodes", "-n", type=int, default=100,
                        help="episodes to run (default 100)")
    spinup.add_argument("--norender", "-nr", action="store_true",
                        help="do not render (without a display this is the default)")
    spinup.add_argument("--itr", "-i", type=int, default=-1,
                        help="run the policy saved at epoch N (tf2_save<N>, kept with "
                             "save_freq) instead of the last one")
    spinup.add_argument("--deterministic", "-d", action="store_true",
                        help="act with the mean action (mu) instead of sampling (pi; the default)")
    beyond.add_argument("--video", metavar="PATH",
                        help="record the episodes to PATH (.mp4 or .gif) instead of showing "
                             "them; works without a display (default: none)")
    trusted = "only for run directories you trust)"
    for flag, what in (("--trust_vars_pkl", "load the environment pickled in vars.pkl (runs "
                                             f"code from the file: {trusted}"),
                       ("--trust_saved_model", "load the SavedModel even if it holds "
                                               f"operations a policy does not need ({trusted}")):
        beyond.add_argument(flag, action="store_true", help=what)
    args = parser.parse_args(argv)
    render = not args.norender and args.video is None
    if render and sys.platform.startswith("linux") and not has_display():
        render = False
        print("No display here, so the episodes run without rendering (-nr). To see them, "
              "record a video: --video run.mp4 (or run under a virtual display: xvfb-run "
              "python -m spinup_tf2.run test_policy ...).", flush=True)

    def command():
        if args.episodes < 1 or args.len < 0:
            raise SpinupError(f"--episodes must be >= 1 and --len >= 0; got --episodes "
                              f"{args.episodes} --len {args.len}.")
        if args.video is not None:
            check_video_path(args.video)
        env, get_action = load_policy_and_env(args.fpath, itr_of(args.itr),
                                              args.deterministic, render, args.trust_vars_pkl,
                                              video=args.video is not None,
                                              trust_saved_model=args.trust_saved_model)
        try:
            run_policy(env, get_action, args.len, args.episodes, render, video=args.video)
        finally:
            if env is not None:
                env.close()

    return cli_main(command)


if __name__ == "__main__":
    sys.exit(main())
