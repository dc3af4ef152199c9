"""Loading a trained policy and the environment it was trained on, from a run directory.

The policy comes from the run's SavedModel (``tf2_save/``); the environment is rebuilt
from the ``env_name`` in ``config.json``. ``vars.pkl`` (the pickled environment) is read
only when asked for (``trust_pickle``): unpickling runs code from the file, so only for run
directories you trust.
"""

from __future__ import annotations

import warnings

import joblib

from spinup_tf2 import rundir
from spinup_tf2.errors import SpinupError
from spinup_tf2.policy.video import RenderingEnv
from spinup_tf2.tf_setup import import_tensorflow


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
    itr, folder = rundir.select_save(fpath, itr)
    env = _load_env(fpath, itr, "rgb_array" if video else "human" if render else None,
                    trust_pickle)
    get_action = load_tf2_policy(folder, deterministic)
    return env, get_action


def _load_env(fpath: str, itr, render_mode: str | None, trust_pickle: bool):
    """The env rebuilt from config.json's env_name (with ``render_mode``), or
    (trusted directories only, no render mode) the one pickled in vars<itr>.pkl."""
    env_name = (rundir.read_config(fpath) or {}).get("env_name")
    if env_name is not None and not trust_pickle:
        _check_registered(env_name, fpath)
    if render_mode == "rgb_array":
        if not env_name:
            raise SpinupError(f"A video needs the environment rebuilt from config.json, but "
                              f"{fpath}'s config.json names no registered environment (env_name).")
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
        path = rundir.vars_path(fpath, itr)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                env = joblib.load(path)["env"]
        except Exception as err:  # unpickling can raise anything
            print(f"Could not load the environment from {path} ({type(err).__name__}: "
                  f"{str(err)[:160]}).", flush=True)
        else:
            if callable(getattr(env, "reset", None)) and callable(getattr(env, "step", None)):
                return env
            print(f"{path} holds no environment under 'env' (its type is "
                  f"{type(env).__name__}).", flush=True)
    if env_name:
        import gymnasium as gym

        print(f"Rebuilding the environment {env_name} from config.json.")
        return gym.make(env_name)
    return None


def _check_registered(env_name, fpath: str) -> None:
    """A run directory is data, not code: its config.json may name only an environment id
    registered with gymnasium. (``gym.make('mod:Name-v0')`` would import ``mod`` from the
    working directory, running its code.)"""
    import gymnasium as gym

    if isinstance(env_name, str) and ":" not in env_name and env_name in gym.registry:
        return
    raise SpinupError(
        f"{fpath}'s config.json names the environment {env_name!r}, which is not an id "
        f"registered with gymnasium; making it could import and run code named by the run "
        f"directory{' (the module ' + env_name.split(':')[0] + ')' if ':' in str(env_name) else ''}"
        f". Make the environment yourself and call run_policy(env, get_action) (see the README), "
        f"or, if you trust this run directory, add --trust_vars_pkl (trust_pickle=True).")


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
