"""What a run directory may ask a replay to build: the check of a recorded environment.

A run directory is data, never code. ``test_policy``, ``export`` and videos rebuild the
training environment from config.json's ``env_spec``, so everything in it that names code
is checked before anything is made (:func:`check_trusted`):

- every environment id, the top-level one and any inside the arguments (the ``-P`` tasks
  name the task they wrap), must be registered with gymnasium and hold no ``module:``
  part (gymnasium imports that module, from the working directory first) and be made by
  its registered entry point;
- no string anywhere in the arguments may name a module the way gymnasium's ids do;
- the wrappers are an explicit list (:data:`REPLAYED_WRAPPERS`), each with the arguments it
  may take and the kind of value each may hold: numbers, flags, short names, never a path
  or a function. Wrappers that only record or display (:data:`NOT_REPLAYED`: RecordVideo,
  HumanRendering, RenderCollection) are left out of a replay, which records and shows
  frames itself, in its own process.
"""

from __future__ import annotations

import difflib
import json
import math
import os
import os.path as osp
import re

import gymnasium as gym

from spinup_tf2 import rundir
from spinup_tf2.envs.packages import import_registering_package
from spinup_tf2.envs.pixels import BOUNDS as PIXEL_BOUNDS
from spinup_tf2.envs.pixels import PIXEL_WRAPPER
from spinup_tf2.envs.tasks import ensure_registered
from spinup_tf2.errors import SpinupError

# A string gymnasium would read as "import this module, then make this id".
_MODULE_REF = re.compile(r"^\s*[A-Za-z_][\w.]*\s*:")
_NAME = re.compile(r"^[A-Za-z0-9_]{1,64}$")
# Arguments of our own entry points that hold an environment id (checked as ids).
ID_ARGUMENTS = ("env_id",)


# ---- The kinds of value a replayed wrapper's argument may hold -----------------------------

def _flag(v) -> bool:
    return isinstance(v, bool)


def _number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _numbers(v, depth: int = 0) -> bool:
    """A finite number, or a (nested) list of them: a bound per dimension."""
    if isinstance(v, list):
        return depth < 4 and len(v) <= 100_000 and all(_numbers(x, depth + 1) for x in v)
    return _number(v)


def _count(low: int, high: int):
    def check(v) -> bool:
        return isinstance(v, int) and not isinstance(v, bool) and low <= v <= high
    check.__doc__ = f"a whole number from {low} to {high}"
    return check


def _counts(low: int, high: int, most: int = 8):
    one = _count(low, high)

    def check(v) -> bool:
        return one(v) or (isinstance(v, list) and 0 < len(v) <= most and all(map(one, v)))
    check.__doc__ = f"a whole number from {low} to {high}, or a list of up to {most}"
    return check


def _name(v) -> bool:
    return isinstance(v, str) and bool(_NAME.match(v))


def _names(v) -> bool:
    return isinstance(v, list) and len(v) <= 1000 and all(map(_name, v))


def _one_of(*choices):
    def check(v) -> bool:
        return v in choices
    check.__doc__ = "one of " + ", ".join(map(repr, choices))
    return check


def _or_none(kind):
    def check(v) -> bool:
        return v is None or kind(v)
    check.__doc__ = f"None or {_kind(kind)}"
    return check


_flag.__doc__ = "True or False"
_number.__doc__ = "a finite number"
_numbers.__doc__ = "a finite number or a list of them"
_name.__doc__ = "a short name of letters, digits and _"
_names.__doc__ = "a list of short names"


def _kind(check) -> str:
    return check.__doc__ or "a valid value"


_BIG = 10**9
# The wrappers a replay rebuilds, by class, with each argument they may take and its kind.
# Every one takes only plain data; none reads or writes a file or calls a function.
_GYMNASIUM_WRAPPERS = {
    "AddRenderObservation": dict(render_only=_flag, render_key=_name, obs_key=_name),
    "AddWhiteNoise": dict(probability_of_noise_per_pixel=_number, is_noise_grayscale=_flag),
    "AtariPreprocessing": dict(noop_max=_count(0, 10_000), frame_skip=_count(1, 100),
                               screen_size=_counts(1, 4096, 2), terminal_on_life_loss=_flag,
                               grayscale_obs=_flag, grayscale_newaxis=_flag, scale_obs=_flag),
    "ClipAction": {},
    "ClipReward": dict(min_reward=_or_none(_numbers), max_reward=_or_none(_numbers)),
    "DelayObservation": dict(delay=_count(0, 10_000)),
    "FilterObservation": dict(filter_keys=_names),
    "FlattenObservation": {},
    "FrameStackObservation": dict(stack_size=_count(1, 64), padding_type=_one_of("reset",
                                                                                  "zero")),
    "GrayscaleObservation": dict(keep_dim=_flag),
    "MaxAndSkipObservation": dict(skip=_count(1, 100)),
    "NormalizeObservation": dict(epsilon=_number),
    "NormalizeReward": dict(gamma=_number, epsilon=_number),
    "ObstructView": dict(obstructed_pixels_ratio=_number, obstruction_width=_count(0, 4096),
                         is_noise_grayscale=_flag),
    "OrderEnforcing": dict(disable_render_order_enforcing=_flag),
    "PassiveEnvChecker": {},
    "RecordEpisodeStatistics": dict(buffer_length=_count(1, 10_000_000), stats_key=_name),
    "RepeatAction": dict(num_repeats=_count(1, 100)),
    "RescaleAction": dict(min_action=_numbers, max_action=_numbers),
    "RescaleObservation": dict(min_obs=_numbers, max_obs=_numbers),
    "ReshapeObservation": dict(shape=_counts(-1, _BIG)),
    "ResizeObservation": dict(shape=_counts(1, 4096, 2)),
    "StickyAction": dict(repeat_action_probability=_number,
                         repeat_action_duration=_counts(1, 10_000, 2)),
    "TimeAwareObservation": dict(flatten=_flag, normalize_time=_flag, dict_time_key=_name),
    "TimeLimit": dict(max_episode_steps=_count(1, _BIG)),
}
# Wrappers that only record or display what happens: a replay leaves them out.
_NOT_REPLAYED = ("HumanRendering", "RecordVideo", "RenderCollection")


def _entry(name: str) -> str:
    cls = getattr(gym.wrappers, name)
    return f"{cls.__module__}:{name}"


REPLAYED_WRAPPERS = {_entry(name): args for name, args in _GYMNASIUM_WRAPPERS.items()}
REPLAYED_WRAPPERS[PIXEL_WRAPPER] = {k: _count(*bounds) for k, bounds in PIXEL_BOUNDS.items()}
NOT_REPLAYED = frozenset(_entry(name) for name in _NOT_REPLAYED)


def replayed(spec: dict) -> dict:
    """``spec`` (an EnvSpec as a JSON dict) without the wrappers a replay leaves out
    (:data:`NOT_REPLAYED`) and without a recorded render mode other than
    ``'rgb_array'``: a replay decides whether and where it renders, never config.json
    (a window opened in the process that holds TensorFlow crashes it)."""
    spec = dict(spec)
    wrappers = spec.get("additional_wrappers")
    if isinstance(wrappers, list):
        spec["additional_wrappers"] = [w for w in wrappers if not (
            isinstance(w, dict) and w.get("entry_point") in NOT_REPLAYED)]
    kwargs = spec.get("kwargs")
    if isinstance(kwargs, dict) and kwargs.get("render_mode") not in (None, "rgb_array"):
        spec["kwargs"] = {k: v for k, v in kwargs.items() if k != "render_mode"}
    return spec


def check_trusted(ref, where: str, run_dir: str | None = None) -> None:
    """Raise :class:`SpinupError` unless the environment ``ref`` names (see
    :func:`~spinup_tf2.envs.recording.ref_of`) is one a replay may build from a run
    directory without running code the directory names: see this module's docstring.
    ``where`` names the file it came from in the message. An id not registered here is
    registered by the installed distribution of its recorded entry point, found outside
    the working directory and ``run_dir``
    (:func:`~spinup_tf2.envs.packages.import_registering_package`)."""
    if not isinstance(ref, str) or not ref:
        raise SpinupError(f"{where} names no environment to rebuild (env_name: {ref!r}).")
    try:
        spec = json.loads(ref) if ref.startswith("{") else {"id": ref}
    except ValueError:
        spec = None
    bad = (_untrusted(replayed(spec), run_dir) if isinstance(spec, dict)
           else "an env_spec that is not a JSON object")
    if bad:
        raise SpinupError(
            f"{where} names {bad}; a replay builds only what a run directory can hold as "
            f"data, so nothing was made. Make the environment yourself and call "
            f"run_policy(env, get_action) (docs/user/shipping.md), or, if you trust this run "
            f"directory, add --trust_vars_pkl (trust_pickle=True).")


def _untrusted(spec: dict, run_dir: str | None = None) -> str | None:
    """What in ``spec`` is not trusted, in words; None if all of it is."""
    bad = _untrusted_id(spec.get("id"), spec.get("entry_point"), "entry_point" in spec,
                        run_dir)
    if bad:
        return bad
    steps = spec.get("max_episode_steps")
    if not _or_none(_count(1, _BIG))(steps):
        return (f"max_episode_steps={repr(steps)[:80]}, where a replay takes None or a whole "
                f"number from 1 to {_BIG}")
    kwargs = spec.get("kwargs") or {}
    if not isinstance(kwargs, dict):
        return f"the arguments {str(kwargs)[:80]!r}, which are not a JSON object"
    for key in ID_ARGUMENTS:
        if key in kwargs:
            bad = _untrusted_id(kwargs[key], None, False)
            if bad:
                return f"{bad}, as the argument {key} of {spec.get('id')}"
    bad = (_module_string(kwargs, f"the arguments of {spec.get('id')}")
           or _special_file(kwargs))
    if bad:
        return bad
    wrappers = spec.get("additional_wrappers") or []
    if not isinstance(wrappers, list):
        return f"additional_wrappers {str(wrappers)[:80]!r}, which is not a list"
    for wrapper in wrappers:
        bad = _untrusted_wrapper(wrapper)
        if bad:
            return bad
    return None


def _untrusted_id(env_id, entry_point, has_entry: bool, run_dir: str | None = None
                  ) -> str | None:
    if not isinstance(env_id, str) or ":" in env_id:
        module = f" (the module {env_id.split(':')[0]!r})" if isinstance(env_id, str) else ""
        return (f"the environment {env_id!r}, which is not an id registered with gymnasium"
                f"{module}")
    ensure_registered(env_id)
    if env_id not in gym.registry and has_entry:
        import_registering_package(env_id, entry_point, run_dir)
    registered = gym.registry.get(env_id)
    if registered is None:
        package = (f" (its entry point's package {entry_point.split('.')[0].split(':')[0]!r} "
                   f"is not an installed distribution: a module with its distribution's "
                   f"metadata in a folder of sys.path other than the working and run "
                   f"directories)" if has_entry and isinstance(entry_point, str) else "")
        return (f"the environment {env_id!r}, which is not an id registered with gymnasium"
                f"{package}")
    if has_entry and entry_point != registered.entry_point:
        return (f"{env_id} made by {entry_point!r}, not by its registered entry point "
                f"{registered.entry_point!r}")
    return None


def _module_string(value, where: str) -> str | None:
    """The first string in ``value`` (nested lists and dicts too) that names a module as
    gymnasium's ``module:Env`` ids do, in words; None if there is none."""
    if isinstance(value, str):
        return f"{value!r} in {where}, which names a module" if _MODULE_REF.match(value) else None
    items = value.values() if isinstance(value, dict) else value if isinstance(value, list) else ()
    keys = [k for k in value if not isinstance(k, str)] if isinstance(value, dict) else []
    if keys:
        return f"the key {keys[0]!r} in {where}"
    for item in items:
        bad = _module_string(item, where)
        if bad:
            return bad
    return None


def _special_file(kwargs: dict) -> str | None:
    """Why a file an argument names (a MuJoCo ``xml_file``) may not be opened: it must be a
    regular file of bounded size, as every file a replay reads (a FIFO would hang the
    replay, a device would read without end); None if every one may."""
    for key, value in kwargs.items():
        if isinstance(value, str) and os.sep in value and osp.lexists(value):
            try:
                rundir.check_file(value)
            except SpinupError as err:
                return f"the file {key}={value!r}, which cannot be read: {err}"
    return None


def _untrusted_wrapper(wrapper) -> str | None:
    if not isinstance(wrapper, dict):
        return f"the wrapper {str(wrapper)[:80]!r}, which is not a JSON object"
    name, entry = wrapper.get("name"), wrapper.get("entry_point")
    allowed = REPLAYED_WRAPPERS.get(entry) if isinstance(entry, str) else None
    if allowed is None:
        known = sorted(e.split(":")[1] for e in REPLAYED_WRAPPERS)
        return (f"the wrapper {name!r} from {entry!r}, which is not one a replay rebuilds "
                f"(those are gymnasium's {', '.join(known)})")
    kwargs = wrapper.get("kwargs") or {}
    if not isinstance(kwargs, dict):
        return f"the wrapper {name!r} with arguments {str(kwargs)[:80]!r}, not a JSON object"
    for key, value in kwargs.items():
        check = allowed.get(key)
        if check is None:
            return (f"the wrapper {name!r} with the argument {key!r}, which it is not rebuilt "
                    f"with (it may take {', '.join(allowed) or 'none'})")
        if not check(value):
            return (f"the wrapper {name!r} with {key}={repr(value)[:80]}, where a replay "
                    f"takes {_kind(check)}")
    return None


def parse_wrappers(text: str, flag: str = "--env_wrappers") -> list[tuple[str, dict]]:
    """The chain of gymnasium wrappers ``text`` names, innermost first, as ``(name,
    kwargs)`` pairs: ``"FilterObservation(filter_keys=['image', 'direction']),
    FlattenObservation"``. Each must be one a replay rebuilds (:data:`REPLAYED_WRAPPERS`),
    with keyword arguments of the kinds a replay takes, so the run it starts replays
    through the same chain (test_policy, export, videos). Anything else, code included,
    is a :class:`SpinupError` naming ``flag``, the bad part and what is accepted."""
    import ast

    def refuse(why: str):
        names = ", ".join(sorted(_GYMNASIUM_WRAPPERS))
        raise SpinupError(
            f"{flag} {text!r}: {why}. Give a comma-separated chain of gymnasium's wrappers, "
            f"innermost first, each a name or a call with keyword arguments of plain values, "
            f"e.g. {flag} \"FilterObservation(filter_keys=['image']), FlattenObservation\". "
            f"Those a run can be replayed through (test_policy, export) are {names}. "
            f"Nothing was launched.")

    try:
        tree = ast.parse(text.strip(), mode="eval").body if isinstance(text, str) else None
    except SyntaxError:
        tree = None
    if tree is None:
        refuse("that is not a chain of wrappers")
    chain = []
    for node in tree.elts if isinstance(tree, ast.Tuple) else [tree]:
        call = node if isinstance(node, ast.Call) else None
        func = call.func if call else node
        if not isinstance(func, ast.Name):
            refuse(f"{ast.unparse(node)!r} is not a wrapper's name or a call of one")
        name = func.id
        if name not in _GYMNASIUM_WRAPPERS:
            close = [n for n in _GYMNASIUM_WRAPPERS if n.lower().startswith(name.lower()[:4])
                     ] or difflib.get_close_matches(name, list(_GYMNASIUM_WRAPPERS), n=1)
            refuse(f"{name} is not one of the wrappers a replay rebuilds"
                   + (f" (did you mean {' or '.join(close[:3])}?)" if close else ""))
        if call and (call.args or any(kw.arg is None for kw in call.keywords)):
            allowed = ", ".join(_GYMNASIUM_WRAPPERS[name]) or "none"
            refuse(f"{name} takes its arguments by keyword ({allowed})")
        kwargs = {}
        for kw in call.keywords if call else ():
            try:
                kwargs[kw.arg] = _as_json(ast.literal_eval(kw.value))
            except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
                refuse(f"{name}'s {kw.arg}={ast.unparse(kw.value)} is not a plain value "
                       f"(a number, a flag, a name in quotes, or a list of those)")
        bad = _untrusted_wrapper({"name": name, "entry_point": _entry(name), "kwargs": kwargs})
        if bad:
            refuse(bad)
        chain.append((name, kwargs))
    return chain


def _as_json(value):
    """A literal as JSON holds it (tuples as lists), as a replay reads it back."""
    if isinstance(value, (list, tuple)):
        return [_as_json(v) for v in value]
    if isinstance(value, dict):
        return {k: _as_json(v) for k, v in value.items()}
    return value


def apply_wrappers(env, chain: list[tuple[str, dict]]):
    """``env`` inside the chain :func:`parse_wrappers` returns, innermost first."""
    for name, kwargs in chain:
        env = getattr(gym.wrappers, name)(env, **kwargs)
    return env
