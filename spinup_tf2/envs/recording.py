"""How a run's environment was made, and making it again (and first: ``env_fn()``, checked).

A run records its training environment in config.json: ``env_name`` (the registered id)
and ``env_spec``, gymnasium's ``EnvSpec`` as JSON, which holds the ``gym.make`` arguments
and every wrapper with its arguments (``additional_wrappers``). ``test_policy``, videos and
``load_policy_and_env`` rebuild the environment from it, so a policy is replayed on the
environment it was trained on, not on a bare one. What cannot be recorded (an environment
not made by ``gym.make``, a wrapper whose arguments are a function) is said once, at the
start of training, and again by a replay, which then offers the pickled environment.

A recorded environment is named to the rest of the package by one string, its *ref*: the
spec's JSON when there is one, else the registered id.
"""

from __future__ import annotations

import json
import os.path as osp
from typing import Any, NamedTuple

import gymnasium as gym
from gymnasium.error import DependencyNotInstalled

from spinup_tf2 import rundir
from spinup_tf2.envs.action_scale import action_scale
from spinup_tf2.envs.dict_obs import observation_layout
from spinup_tf2.envs.packages import known_failure
from spinup_tf2.envs.pixels import pixel_options
from spinup_tf2.envs.platform import quiet_mujoco
from spinup_tf2.envs.spaces import check_same_spaces
from spinup_tf2.envs.tasks import ensure_registered
from spinup_tf2.envs.trust import apply_wrappers, parse_wrappers, replayed
from spinup_tf2.errors import SpinupError, error_line

# Wrappers whose statistics change what the policy sees (or the returns), by attribute.
_RUNNING_STATS = ("obs_rms", "return_rms")
STATE_KEY = "spinup_tf2_wrapper_state"  # in a ref: the statistics to put back


def record(env) -> tuple[dict | None, str | None]:
    """``(spec, None)``: ``env``'s EnvSpec as a JSON-ready dict, wrappers included; or
    ``(None, why)`` when it cannot be recorded so that ``gym.make`` rebuilds it."""
    spec = env.spec
    if spec is None:
        return None, (f"{type(env.unwrapped).__name__} was not made by gymnasium.make, so "
                      f"it has no EnvSpec")
    for wrapper in spec.additional_wrappers:
        if wrapper.kwargs is None:
            return None, (f"the wrapper {wrapper.name} does not record its arguments (it "
                          f"does not inherit gymnasium.utils.RecordConstructorArgs)")
    try:
        spec = json.loads(spec.to_json())
    except (TypeError, ValueError) as err:
        names = ", ".join(w.name for w in spec.additional_wrappers) or spec.id
        return None, (f"the arguments of {names} cannot be written as JSON ({err}; a "
                      f"function, such as TransformReward's, cannot)")
    if pixel_options(spec.get("additional_wrappers")) is None:  # (a pixel task's rendering
        (spec.get("kwargs") or {}).pop("render_mode", None)  # is the task) how it was watched
    return spec, None


def ref_of(config: dict) -> str | None:
    """The ref of the environment config.json records: its spec as JSON, else its
    registered id, else None."""
    spec = config.get("env_spec")
    if isinstance(spec, dict):
        return json.dumps(spec)
    name = config.get("env_name")
    return name if isinstance(name, str) else None


def describe(ref: str) -> str:
    """A short name for messages: the id, with its wrappers."""
    if not ref.startswith("{"):
        return ref
    spec = json.loads(ref)
    wrappers = [w.get("name", "?") for w in spec.get("additional_wrappers") or []]
    return f"{spec.get('id')}" + (f" with {', '.join(wrappers)}" if wrappers else "")


def make_named(env_name: str, *, env_wrappers: str | None = None, **env_kwargs):
    """``gymnasium.make(env_name, **env_kwargs)``, after the registrations made on demand
    (:func:`~spinup_tf2.envs.tasks.ensure_registered`), inside the wrappers
    ``env_wrappers`` names (:func:`~spinup_tf2.envs.trust.parse_wrappers`): what ``--env
    NAME`` (with ``--env_kwargs`` and ``--env_wrappers``) makes. The wrappers are part of
    the environment's spec, so a replay rebuilds them."""
    chain = parse_wrappers(env_wrappers) if env_wrappers else []
    ensure_registered(env_name)
    quiet_mujoco()
    return apply_wrappers(gym.make(env_name, **env_kwargs), chain)


def make(ref: str, render_mode: str | None = None):
    """The environment ``ref`` names (see :func:`ref_of`), made by ``gym.make``, with the
    statistics of its normalizing wrappers put back and frozen (see :func:`with_state`);
    without the wrappers and render mode a replay leaves out
    (:func:`~spinup_tf2.envs.trust.replayed`): it renders only as ``render_mode`` says."""
    import gymnasium as gym
    from gymnasium.envs.registration import EnvSpec

    state = None
    if ref.startswith("{"):
        spec = replayed(json.loads(ref))
        state = spec.pop(STATE_KEY, None)
        ref = json.dumps(spec)
    target = EnvSpec.from_json(ref) if ref.startswith("{") else ref
    quiet_mujoco()
    env = gym.make(target, render_mode=render_mode) if render_mode else gym.make(target)
    if state:
        set_wrapper_state(env, state)
    return env


def policy_action_space(env):
    """The action space the policy acts in: ``env.action_space``, except that an unbounded
    Box under gymnasium's ClipAction (which widens the space to (-inf, inf) and clips to
    the inner bounds) gives the inner, bounded space: SAC's squashed actions stay inside
    it, so the clip never changes them."""
    import numpy as np
    from gymnasium.spaces import Box
    from gymnasium.wrappers import ClipAction

    space = env.action_space
    if isinstance(space, Box) and not np.all(np.isfinite(space.high)):
        for layer in _chain(env):
            if isinstance(layer, ClipAction):
                return layer.env.action_space
    return space


class NetworkSpaces(NamedTuple):
    """How the networks see an environment: see :func:`network_spaces`."""

    layout: Any
    scale: Any
    observation_space: Any
    action_space: Any


def network_spaces(env, test_env=None) -> NetworkSpaces:
    """``(layout, scale, observation_space, action_space)``: how the networks see ``env``.
    ``layout`` reads a Dict as one vector and channels-first or 2-D images as ``(H, W, C)``
    (:func:`~spinup_tf2.envs.dict_obs.observation_layout`); ``scale`` maps ``[-1, 1]`` onto
    Box bounds of their own (:func:`~spinup_tf2.envs.action_scale.action_scale`); each is
    None where the environment's own space serves, and the spaces are those the networks
    take. With ``test_env``, its spaces must be the same (:func:`check_same_spaces`)."""
    layout = observation_layout(env.observation_space)
    scale = action_scale(policy_action_space(env))
    spaces = NetworkSpaces(layout, scale,
                           env.observation_space if layout is None else layout.space,
                           policy_action_space(env) if scale is None else scale.space)
    if test_env is not None:
        check_same_spaces(spaces, network_spaces(test_env))
    return spaces


def _chain(env):
    while env is not None:
        yield env
        env = getattr(env, "env", None)


def wrapper_state(env) -> list:
    """The running statistics of ``env``'s normalizing wrappers (NormalizeObservation,
    NormalizeReward, with its running discounted return), outermost first, as JSON-ready
    dicts; [] if it has none."""
    import numpy as np

    state = []
    for layer in _chain(env):
        attrs = getattr(layer, "__dict__", {})  # anything a logger's state_dict holds as env
        for attr in _RUNNING_STATS:
            rms = attrs.get(attr)
            if rms is not None:
                state.append(dict(wrapper=type(layer).__name__, attr=attr,
                                  mean=rms.mean.tolist(), var=rms.var.tolist(),
                                  count=float(rms.count)))
                if "discounted_reward" in attrs:  # NormalizeReward's running return
                    state[-1]["discounted_reward"] = np.asarray(
                        layer.discounted_reward, dtype=np.float64).tolist()
    return state


def stats_attributes(env) -> tuple:
    """The attributes of ``env``'s normalizing wrappers that hold running statistics
    (``obs_rms``, ``return_rms`` and NormalizeReward's ``discounted_reward``), as
    gymnasium's vector environments reach them in each copy (``get_attr``)."""
    found = [s["attr"] for s in wrapper_state(env)]
    return tuple(dict.fromkeys(found + (["discounted_reward"] if "return_rms" in found else [])))


def set_wrapper_state(env, state: list, freeze: bool = True) -> None:
    """Put :func:`wrapper_state`'s statistics back into the same wrappers of ``env``, and
    (``freeze``) stop them updating: a replay sees observations as the policy saw them at
    the end of training; a resumed run (``freeze=False``) goes on updating them."""
    import numpy as np

    layers = [(layer, attr) for layer in _chain(env) for attr in _RUNNING_STATS
              if layer.__dict__.get(attr) is not None]
    try:
        check_stats(state)
        for (layer, attr), saved in zip(layers, state, strict=True):
            rms = getattr(layer, attr)
            mean, var = (np.asarray(saved[k], dtype=rms.mean.dtype) for k in ("mean", "var"))
            if mean.shape != rms.mean.shape or var.shape != rms.var.shape:
                raise ValueError(f"shapes {mean.shape}, {var.shape} for {rms.mean.shape}")
            rms.mean, rms.var, rms.count = mean, var, float(saved["count"])
            if "discounted_reward" in saved and "discounted_reward" in layer.__dict__:
                layer.discounted_reward = np.asarray(saved["discounted_reward"], np.float64)
    except (KeyError, TypeError, ValueError) as err:
        raise SpinupError(f"The saved statistics of the environment's normalizing wrappers "
                          f"({rundir.ENV_STATE}, or the training checkpoint's) do not fit it "
                          f"({type(err).__name__}: {err}); the file was altered, or comes "
                          f"from another run.") from None
    if freeze:
        freeze_stats(env)


def freeze_stats(env) -> None:
    """Stop ``env``'s normalizing wrappers updating their statistics (a replay of a trained
    policy, whether rebuilt or unpickled, sees observations as training last did)."""
    for layer in _chain(env):
        if any(layer.__dict__.get(attr) is not None for attr in _RUNNING_STATS):
            layer.update_running_mean = False


def with_state(ref: str | None, state: list):
    """``ref`` carrying the wrapper statistics ``state``, which :func:`make` puts back."""
    if not state or ref is None or not ref.startswith("{"):
        return ref
    return json.dumps(dict(json.loads(ref), **{STATE_KEY: state}))


def save_state(run_dir: str | None, env) -> None:
    """Write ``env``'s wrapper statistics to the run's env_state.json (nothing if it has
    none), beside the policy saved with them."""
    state = wrapper_state(env)
    if run_dir is not None and state:
        rundir.write_text(osp.join(run_dir, rundir.ENV_STATE), json.dumps(state))


def read_state(run_dir: str, ref: str | None = None) -> list:
    """The wrapper statistics :func:`save_state` wrote, checked: [] if there are none and
    the recorded environment ``ref`` has no normalizing wrapper. A file that is missing
    where ``ref`` needs it, is not a regular file, does not parse, or holds statistics no
    run could write (a mean not finite, a variance below 0, a count not above 0) is a
    :class:`SpinupError` naming it: a replay never runs on statistics it cannot trust."""
    path = osp.join(run_dir, rundir.ENV_STATE)
    if not osp.lexists(path):
        needs = [w for w in _wrapper_names(ref) if w in _NORMALIZING]
        if needs:
            raise SpinupError(f"{run_dir}'s config.json records {', '.join(needs)}, whose "
                              f"statistics the policy was trained with, but {rundir.ENV_STATE} "
                              f"is missing: the run directory is damaged (or was copied "
                              f"without it). Copy it back, or use another run.")
        return []
    rundir.check_file(path)
    try:
        with open(path, encoding="utf-8") as f:
            state = json.load(f)
        check_stats(state)
    except (OSError, UnicodeDecodeError, ValueError) as err:
        raise SpinupError(f"{path} is damaged ({type(err).__name__}: {str(err)[:160]}): it was "
                          f"cut short or altered after the run wrote it, so the replay was not "
                          f"started. Restore it from a copy, or use another run.") from None
    return state


_NORMALIZING = ("NormalizeObservation", "NormalizeReward")


def _wrapper_names(ref: str | None) -> list:
    if not ref or not ref.startswith("{"):
        return []
    wrappers = json.loads(ref).get("additional_wrappers") or []
    return [w.get("name") for w in wrappers if isinstance(w, dict)]


def check_stats(state) -> None:
    """Raise ValueError unless ``state`` is what :func:`wrapper_state` writes: a list of
    statistics with finite means and variances, variances not negative, counts above 0."""
    import numpy as np

    if not isinstance(state, list):
        raise ValueError(f"it holds a JSON {type(state).__name__}, not a list")
    for i, entry in enumerate(state):
        if not isinstance(entry, dict) or not {"mean", "var", "count"} <= set(entry):
            raise ValueError(f"entry {i} is not an object with mean, var and count")
        try:
            mean, var, count = (np.asarray(entry[k], dtype=np.float64)
                                for k in ("mean", "var", "count"))
        except (TypeError, ValueError):
            raise ValueError(f"entry {i}'s mean, var or count is not numbers") from None
        if not (np.all(np.isfinite(mean)) and np.all(np.isfinite(var))):
            raise ValueError(f"entry {i} ({entry.get('wrapper')}) has a mean or variance that "
                             f"is not finite")
        if np.any(var < 0) or mean.shape != var.shape:
            raise ValueError(f"entry {i} ({entry.get('wrapper')}) has a negative variance, or "
                             f"a variance of another shape than its mean")
        if count.shape != () or not (np.isfinite(count) and count > 0):
            raise ValueError(f"entry {i} ({entry.get('wrapper')}) has the count {entry['count']!r}"
                             f", not a number above 0")


def check_first_step(env, where: str = "env_fn") -> dict:
    """Try ``env`` as a run will use it, before anything is written: a reset and one step
    with a valid action (the middle of a Box, a Discrete space's first action). What
    fails there (arguments the constructor took but stepping rejects, such as
    ``--env_kwargs`` of the wrong kind) or returns what SAC cannot store (an observation
    of another shape than its space, a reward that is not a number, ``terminated`` or
    ``truncated`` that are not booleans) is a :class:`SpinupError` naming it and what
    ``step`` should return. ``where`` says where the environment came from. The
    environment's normalizing statistics are put back afterwards (its random generator
    is reseeded by the run's first reset). Returns the step's ``info`` (``{}`` if it is
    not a dict)."""
    import numpy as np
    from gymnasium import spaces

    stats, space = wrapper_state(env), env.observation_space
    kwargs = getattr(env.spec, "kwargs", None) or {}
    given = {k: v for k, v in kwargs.items() if k != "render_mode"}
    try:
        o = env.reset()[0]
        act_space = policy_action_space(env)
        if isinstance(act_space, spaces.Box):
            action = np.clip(np.zeros(act_space.shape), act_space.low, act_space.high)
            action = action.astype(act_space.dtype)
        elif isinstance(act_space, spaces.Discrete):
            action = act_space.start
        else:
            action = act_space.sample()
        o2, r, terminated, truncated, info = env.step(action)
    except SpinupError:
        raise
    except Exception as err:  # a user's environment may raise anything
        first = error_line(err)
        raise SpinupError(
            f"The environment from {where} fails at its first step ({first})"
            + (f"; it was made with the arguments {given} (gym.make's kwargs, "
                           + ("--env_kwargs on the command line" if where == "env_fn" else
                              "as recorded there")
                           + "): one of them is likely of the wrong kind" if given else "")
            + ". Nothing was written.") from None
    finally:
        if stats:
            set_wrapper_state(env, stats, freeze=False)
    bad = []
    for when, obs in (("reset", o), ("step", o2)):
        if isinstance(space, spaces.Dict):
            entries = obs if isinstance(obs, dict) else {}
            bad += [f"an observation whose {k!r} entry has shape "
                    f"{list(np.shape(entries[k])) if k in entries else 'none (missing)'} from "
                    f"{when} where its observation_space {space} says {list(box.shape)}"
                    for k, box in space.spaces.items()
                    if isinstance(box, spaces.Box) and (
                        k not in entries or np.shape(entries[k]) != box.shape)]
        elif isinstance(space, spaces.Box) and np.shape(obs) != space.shape:
            bad.append(f"an observation of shape {list(np.shape(obs))} from {when} where its "
                       f"observation_space {space} says {list(space.shape)}")
        elif isinstance(space, spaces.Box) and np.asarray(obs).dtype.kind not in "biuf":
            bad.append(f"an observation of type {np.asarray(obs).dtype} from {when} (not "
                       f"numbers)")
    if isinstance(r, (bool, np.bool_)) or np.ndim(r) != 0 or not _is_number(r):
        bad.append(f"reward={r!r} ({type(r).__name__}), not a number")
    for name, flag in (("terminated", terminated), ("truncated", truncated)):
        if not isinstance(flag, (bool, np.bool_)):
            bad.append(f"{name}={flag!r} ({type(flag).__name__}), not True or False")
    if bad:
        raise SpinupError(
            f"The environment from {where} returned {'; '.join(bad)} at its first steps. "
            f"env.step(action) must return (observation, reward, terminated, truncated, "
            f"info): an observation that fits observation_space, the reward as a float, "
            f"terminated and truncated as booleans, info a dict. Nothing was written.")
    return info if isinstance(info, dict) else {}


def _is_number(x) -> bool:
    try:
        float(x)
    except (TypeError, ValueError):
        return False
    return True


def _name_of(env_fn) -> str:
    """The environment id an ``env_fn`` of the launcher's makes, or ``'The environment'``."""
    args = getattr(env_fn, "args", ())
    return args[0] if args and isinstance(args[0], str) else "The environment"


def make_env(env_fn):
    """``env_fn()``, checked to be an environment; one whose optional dependency (Box2D,
    MuJoCo, ...) is missing is a :class:`SpinupError` saying what to install."""
    quiet_mujoco()  # gymnasium's -v5 model files make MuJoCo warn at every make
    try:
        env = env_fn()
    except DependencyNotInstalled as err:
        raise SpinupError(f"The environment could not be made: a package it needs is not "
                          f"installed ({err}). Nothing was written; install it and run "
                          f"again.") from None
    except AssertionError as err:  # a package's known failure gets its paragraph
        known = known_failure(err, _name_of(env_fn))
        if known is None:
            raise
        raise SpinupError(known) from None
    from gymnasium.vector import VectorEnv

    if isinstance(env, VectorEnv):
        env.close()
        raise SpinupError(f"env_fn returned a vector environment ({type(env).__name__} of "
                          f"{env.num_envs}); env_fn must make one environment, and sac() "
                          f"makes the copies itself. Return gymnasium.make(...), not make_vec, "
                          f"and give num_envs={env.num_envs} (--num_envs {env.num_envs}; "
                          f"vector_mode='async' for copies in their own processes). Nothing "
                          f"was written.")
    missing = [k for k in ("observation_space", "action_space", "reset", "step")
               if not hasattr(env, k)]
    if missing:
        raise SpinupError(f"env_fn returned {env!r}, which is not a gymnasium environment (it "
                          f"has no {', '.join(missing)}). env_fn must return a new environment "
                          f"on each call, e.g. lambda: gymnasium.make('Pendulum-v1'). Nothing "
                          f"was written.")
    if getattr(env, "render_mode", None) == "human":
        env.close()
        raise SpinupError("env_fn made an environment with render_mode='human': it would draw a "
                          "window at every training step, in the process that runs "
                          "TensorFlow, where a window that cannot open crashes the run. Make "
                          "it without render_mode; watch the trained policy with test_policy "
                          "(which renders in its own process), or record videos during "
                          "training with --video_freq N. Nothing was written.")
    return env
