"""Load a trained policy and run it: ``python -m spinup_tf2.run test_policy DIR``.

The policy comes from the run's SavedModel (``tf2_save/``); the environment
is rebuilt from the ``env_name`` in ``config.json``. ``vars.pkl`` (the pickled
environment) is read only when asked for (``--trust_vars_pkl``): unpickling
runs code from the file, so only for run directories you trust. Without a
display, episodes run without rendering. Nothing is written to disk.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import os.path as osp
import sys
import time
import warnings

import joblib

from spinup_tf2.utils.atomic_files import existing_checkpoint_dir
from spinup_tf2.utils.errors import SpinupError, print_error
from spinup_tf2.utils.logx import EpochLogger
from spinup_tf2.utils.tf_setup import import_tensorflow
from spinup_tf2.utils.video import (
    RenderingEnv,
    VideoRecorder,
    check_video_path,
    has_display,
    render_frame,
)


def find_saves(fpath: str) -> dict:
    """``{itr: folder}`` of the SavedModels in a run directory; itr is '' for
    ``tf2_save`` and the number for ``tf2_save<N>``."""
    saves = {}
    for entry in os.listdir(fpath):
        name = entry[:-4] if entry.endswith(".old") else entry
        if name.startswith("tf2_save") and (name == "tf2_save" or name[8:].isdigit()):
            itr = name[8:]
            folder = existing_checkpoint_dir(osp.join(fpath, name))
            if folder is not None:
                saves[int(itr) if itr else ""] = folder
    return saves


def _no_model_error(fpath: str, cmd: str) -> SpinupError:
    runs = sorted(osp.relpath(root, fpath) for root, dirs, _ in os.walk(fpath)
                  if any(d.startswith("tf2_save") for d in dirs))
    if runs:
        return SpinupError(f"{fpath} holds no saved model itself, but these run directories "
                           f"below it do: {', '.join(runs[:10])}. Give one of them, e.g. "
                           f"python -m spinup_tf2.run {cmd} {osp.join(fpath, runs[0])}")
    return SpinupError(f"No saved model (tf2_save/) was found in {fpath}. Give the output "
                       f"directory of one run, e.g. data/exp_name/exp_name_s0, written by "
                       f"sac() with save_freq >= 1.")


def load_policy_and_env(fpath: str, itr="last", deterministic: bool = False, render: bool = False,
                        trust_pickle: bool = False, video: bool = False):
    """The environment and the policy of a finished (or interrupted) run.

    Args:
        fpath (str): The output directory of one run.

        itr: 'last' (the newest ``tf2_save<N>``, or ``tf2_save``) or the
            number N of a ``tf2_save<N>`` folder.

        deterministic (bool): Act with the mean action (``mu``) instead of
            sampling (``pi``).

        render (bool): Make the env (if rebuilt) with ``render_mode='human'``.

        trust_pickle (bool): Load the environment from ``vars<itr>.pkl`` when
            it is there, instead of rebuilding it from config.json. Unpickling
            runs code from the file: only for run directories you trust.

        video (bool): Make the env with ``render_mode='rgb_array'``, for
            ``run_policy(..., video=PATH)`` (rebuilt from config.json; without
            a display, MuJoCo renders through EGL).

    Returns:
        ``(env, get_action)``: ``env`` is None if it could not be restored;
        ``get_action(obs)`` maps one observation to one action (numpy).
    """
    itr, folder = select_save(fpath, itr)
    env = _load_env(fpath, itr, "rgb_array" if video else "human" if render else None,
                    trust_pickle)
    get_action = load_tf2_policy(folder, deterministic)
    return env, get_action


def select_save(fpath: str, itr="last", cmd: str = "test_policy") -> tuple:
    """``(itr, folder)``: the SavedModel of a run directory that ``itr`` names
    ('last', or the number N of a ``tf2_save<N>`` folder); ``itr`` is '' for
    ``tf2_save``. Raises :class:`SpinupError` naming what the directory holds
    (and the command, ``cmd``, to run on a run directory below it)."""
    if not osp.isdir(fpath):
        raise SpinupError(f"{fpath} is not a directory. Give the output directory of a run, "
                          f"e.g. data/exp_name/exp_name_s0.")
    saves = find_saves(fpath)
    if not saves:
        raise _no_model_error(fpath, cmd)
    if itr == "last":
        numbered = [k for k in saves if k != ""]
        itr = max(numbered) if numbered else ""
    elif not isinstance(itr, int) or itr not in saves:
        raise SpinupError(f"There is no tf2_save{itr} in {fpath}; saved iterations: "
                          f"{sorted(str(k) if k != '' else 'tf2_save' for k in saves)}.")
    return itr, saves[itr]


def _load_env(fpath: str, itr, render_mode: str | None, trust_pickle: bool):
    """The env rebuilt from config.json's env_name (with ``render_mode``), or
    (trusted directories only, no render mode) the one pickled in vars<itr>.pkl."""
    env_name = None
    config_path = osp.join(fpath, "config.json")
    if osp.exists(config_path):
        with open(config_path) as f:
            env_name = json.load(f).get("env_name")
    if render_mode == "rgb_array":
        if not env_name:
            raise SpinupError(f"A video needs the environment rebuilt from config.json, but "
                              f"{config_path} names no registered environment (env_name).")
        print(f"Rebuilding the environment {env_name} from config.json, rendering frames in a "
              f"separate process.")
        return RenderingEnv(env_name)
    if env_name and render_mode == "human":
        import gymnasium as gym

        try:
            return gym.make(env_name, render_mode="human")
        except Exception as err:
            raise SpinupError(f"Could not open a window to render {env_name} ({err}). Rendering "
                              f"needs a display and the env's rendering extra (e.g. pip install "
                              f"'gymnasium[classic-control]'); add --norender (-nr) to run "
                              f"without a window.") from None
    if trust_pickle:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                return joblib.load(osp.join(fpath, "vars" + str(itr) + ".pkl"))["env"]
        except Exception:
            pass
    if env_name:
        import gymnasium as gym

        print(f"Rebuilding the environment {env_name} from config.json.")
        return gym.make(env_name)
    return None


def load_tf2_policy(fpath: str, deterministic: bool = False):
    """``get_action(obs)`` from a SavedModel folder written by spinup_tf2."""
    tf = import_tensorflow()
    print("\n\nLoading from %s.\n\n" % fpath)
    model = load_saved_model(fpath)
    if deterministic:
        print("Using deterministic action op.")
        action_fn = model.mu
    else:
        print("Using default action op.")
        action_fn = model.pi

    def get_action(x):
        x = tf.convert_to_tensor([x], dtype=tf.float32)
        return action_fn(x)[0].numpy()

    get_action.model = model  # the loaded functions need the model (its variables) alive
    return get_action


def load_saved_model(fpath: str):
    """The SavedModel in the folder ``fpath`` (with its ``mu`` and ``pi``
    functions), or a :class:`SpinupError` saying why it cannot be used."""
    tf = import_tensorflow()
    try:
        model = tf.saved_model.load(fpath)
    except Exception as err:  # TensorFlow raises several kinds for a damaged model
        first = (str(err).strip().splitlines() or [""])[0][:200]
        raise SpinupError(
            f"The saved model in {fpath} cannot be loaded ({type(err).__name__}: {first}); "
            f"saved_model.pb or variables/ is cut short or damaged. Try an earlier save "
            f"with --itr N if the run kept numbered ones (save_freq), or train again.") from None
    if not (hasattr(model, "pi") and hasattr(model, "mu")):
        raise SpinupError(f"The saved model in {fpath} is not a spinup_tf2 policy (it has no "
                          f"pi and mu functions).")
    return model


def run_policy(env, get_action, max_ep_len: int | None = None, num_episodes: int = 100,
               render: bool = True, video: str | None = None) -> None:
    """Run ``num_episodes`` episodes, printing each one's return and length, then
    a table of their statistics. ``max_ep_len`` (0 or None: no cap besides the
    environment's own time limit) cuts episodes short. ``video`` (a path ending
    in .mp4 or .gif) records every episode into one file, from an env made with
    ``render_mode='rgb_array'``, at the env's ``render_fps``."""
    if env is None:
        raise SpinupError(
            "Environment not found! config.json names no registered environment (env_name) to "
            "rebuild. Make the environment yourself and call run_policy(env, get_action) (see "
            "the README), or, if you trust this run directory, add --trust_vars_pkl to load "
            "the environment pickled in vars.pkl (unpickling runs code from the file).")
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
        ep_ret, ep_len, n = 0.0, 0, 0
        while n < num_episodes:
            if video is not None:
                recorder.add(render_frame(env))
            elif render:
                env.render()
                time.sleep(1e-3)

            a = get_action(o)
            o, r, terminated, truncated, _ = env.step(a)
            ep_ret += float(r)
            ep_len += 1

            if terminated or truncated or (max_ep_len and ep_len == max_ep_len):
                if video is not None:
                    recorder.add(render_frame(env))  # the episode's last state
                logger.store(EpRet=ep_ret, EpLen=ep_len)
                print("Episode %d \t EpRet %.3f \t EpLen %d" % (n, ep_ret, ep_len))
                o, _ = env.reset()
                ep_ret, ep_len = 0.0, 0
                n += 1
    if video is not None:
        print(f"Wrote {recorder.frames} frames at {recorder.fps:g} fps to {video}.")

    logger.log_tabular("EpRet", with_min_and_max=True)
    logger.log_tabular("EpLen", average_only=True)
    logger.dump_tabular()


def main(argv=None) -> int:
    """``test_policy.py fpath [--len] [--episodes] [--norender] [--itr] [--deterministic]``."""
    parser = argparse.ArgumentParser(description="Run a policy saved by spinup_tf2.")
    parser.add_argument("fpath", type=str)
    parser.add_argument("--len", "-l", type=int, default=0)
    parser.add_argument("--episodes", "-n", type=int, default=100)
    parser.add_argument("--norender", "-nr", action="store_true")
    parser.add_argument("--itr", "-i", type=int, default=-1)
    parser.add_argument("--deterministic", "-d", action="store_true")
    parser.add_argument("--video", metavar="PATH",
                        help="record the episodes to PATH (.mp4 or .gif) instead of showing "
                             "them; works without a display")
    parser.add_argument("--trust_vars_pkl", action="store_true",
                        help="load the environment pickled in vars.pkl (runs code from the "
                             "file: only for run directories you trust)")
    args = parser.parse_args(argv)
    render = not args.norender and args.video is None
    if render and sys.platform.startswith("linux") and not has_display():
        render = False
        print("No display here, so the episodes run without rendering (-nr). To see them, "
              "record a video: --video run.mp4 (or run under a virtual display: xvfb-run "
              "python -m spinup_tf2.run test_policy ...).", flush=True)
    try:
        if args.episodes < 1 or args.len < 0:
            raise SpinupError(f"--episodes must be >= 1 and --len >= 0; got --episodes "
                              f"{args.episodes} --len {args.len}.")
        if args.video is not None:
            check_video_path(args.video)
        env, get_action = load_policy_and_env(args.fpath, args.itr if args.itr >= 0 else "last",
                                              args.deterministic, render, args.trust_vars_pkl,
                                              video=args.video is not None)
        try:
            run_policy(env, get_action, args.len, args.episodes, render, video=args.video)
        finally:
            if env is not None:
                env.close()
    except SpinupError as err:
        print_error(err)
        return 2
    except KeyboardInterrupt:
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
