"""The flag grammar of ``python -m spinup_tf2.run ALGO ...``, as Spinning Up's.

Several values after a flag make a grid, a bare flag is True, ``--key[sh]`` sets a
shorthand, ``a:b`` sets a nested key. Values are Python literals where they parse as such,
names under ``tf``, ``keras`` or ``np`` (``tf.nn.relu``) resolve to those objects (in the
experiment's process: the launcher never imports TensorFlow), and anything else stays a
string. Nothing is passed to ``eval``.
"""

from __future__ import annotations

import ast
import difflib
import functools
import importlib
import importlib.util
from collections.abc import Callable

# From the declared table: the arguments of ExperimentGrid.run rather than of the algorithm
# (RUN_KEYS); on/off flags the launcher turns into arguments, with their defaults (SWITCHES:
# --recurrent is actor_critic="recurrent", the recurrent variant's record, see
# processes.experiment_command); how --pixels makes its pixel task (spinup_tf2.envs.make_pixels,
# PIXEL_OPTIONS); flags whose values are always names, never parsed as Python (STRING_KEYS).
from spinup_tf2.arguments import PIXEL_BOUNDS, PIXEL_OPTIONS, RUN_KEYS, STRING_KEYS, SWITCHES  # noqa: F401
from spinup_tf2.errors import SpinupError, error_line
from spinup_tf2.family import MEMBERS

# Command line shorthands for convenience.
SUBSTITUTIONS = {"env": "env_name", "hid": "ac_kwargs:hidden_sizes",
                 "act": "ac_kwargs:activation", "cpu": "num_cpu", "dt": "datestamp",
                 "tensorboard": "logger_kwargs:tensorboard", "quiet": "logger_kwargs:quiet",
                 "track": "logger_kwargs:track"}

# Run-level flags whose ExperimentGrid.run argument has another name.
RUN_ARG_NAMES = {"ray_address": "address", "ray_worker_dir": "worker_dir"}


# The calls a flag value may make.
SAFE_CALLS = {"dict": dict, "list": list, "tuple": tuple, "int": int, "float": float,
              "bool": bool, "str": str}


class FunctionPath:
    """A function named by its path, ``'package.module:function'``, imported only
    when called. A launcher hands it to the process that runs the experiment
    without importing the function's module (and TensorFlow) itself; it can
    still show the function's docstring and read its parameters, from the
    source (or, for a function made at import time, as the family's are, from the
    function itself: such a module must not import TensorFlow). ``__name__`` is the
    function's name, as config.json records it.
    """

    def __init__(self, path: str):
        self.path = path
        self.module, _, self.__name__ = path.partition(":")

    def __call__(self, *args, **kwargs):
        return getattr(importlib.import_module(self.module), self.__name__)(*args, **kwargs)

    def _definition(self) -> ast.FunctionDef | None:
        with open(importlib.util.find_spec(self.module).origin, encoding="utf-8") as f:
            tree = ast.parse(f.read())
        return next((node for node in tree.body
                     if isinstance(node, ast.FunctionDef) and node.name == self.__name__), None)

    def _made(self) -> Callable:
        """The function, made at import time (no ``def`` of its name in the source)."""
        return getattr(importlib.import_module(self.module), self.__name__)

    def doc(self) -> str:
        """The function's docstring."""
        node = self._definition()
        return (ast.get_docstring(node, clean=False) if node else self._made().__doc__) or ""

    def defaults(self) -> dict:
        """``{parameter: default}``; a default that is not a plain value (a class,
        say) or a missing one is :data:`NOT_A_VALUE`."""
        node = self._definition()
        if node is None:
            import inspect

            return {k: NOT_A_VALUE if p.default is inspect.Parameter.empty else p.default
                    for k, p in inspect.signature(self._made()).parameters.items()}
        args = node.args
        params = args.posonlyargs + args.args + args.kwonlyargs
        defaults = [None] * (len(args.posonlyargs + args.args) - len(args.defaults))
        defaults += list(args.defaults) + list(args.kw_defaults)
        return {p.arg: _default_value(d) for p, d in zip(params, defaults, strict=True)}


NOT_A_VALUE = object()

# Each algorithm of the command line: the function a launched process runs and the check of
# its arguments that the launcher runs first, both named by their paths (so the launcher
# imports neither, nor TensorFlow, until it needs them).
_CHECK = FunctionPath("spinup_tf2.checks:check_sac_args")
ALGOS: dict[str, tuple[FunctionPath, FunctionPath]] = {
    "sac_tf2": (FunctionPath("spinup_tf2.algos.sac.sac:sac"), _CHECK),
    **{f"{name}_tf2": (FunctionPath(f"spinup_tf2.algos.family:{name}"), _CHECK)
       for name in MEMBERS},
}


def _default_value(node):
    """A parameter's default from its source: a literal, or ``int``/``float``/``dict``
    of literals (``int(1e6)``); anything else is NOT_A_VALUE."""
    if node is None:
        return NOT_A_VALUE
    calls = {"int": int, "float": float, "dict": dict, "list": list, "tuple": tuple}
    try:
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) in calls:
            return calls[node.func.id](*(ast.literal_eval(a) for a in node.args))
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError):
        return NOT_A_VALUE


class NamedObject:
    """A flag value that names an object under ``tf``, ``keras`` or ``np``
    (``tf.nn.relu``), looked up only in the process that runs the experiment,
    so that the launcher never imports TensorFlow. ``__name__`` is the last
    part of the name, as directory names and config.json show it."""

    ROOTS = {"tf": "tensorflow", "keras": "keras", "np": "numpy"}

    def __init__(self, text: str, flag: str):
        self.text, self.flag = text, flag
        self.__name__ = text.rsplit(".", 1)[-1]

    def resolve(self):
        """The object itself; a :class:`SpinupError` naming the flag if there is none."""
        root, *attrs = self.text.split(".")
        if root in ("tf", "keras"):
            from spinup_tf2.tf_setup import import_tensorflow

            import_tensorflow()  # first, and quietly: keras would import it noisily
        value = importlib.import_module(self.ROOTS[root])
        for i, attr in enumerate(attrs):
            name = ".".join([root] + attrs[:i + 1])
            if not hasattr(value, attr):
                raise SpinupError(
                    f"The value {self.text!r} of --{self.flag} could not be used: {name} does "
                    f"not exist. Names under tf, keras or np must name a function or value, "
                    f"e.g. tf.nn.relu.")
            value = getattr(value, attr)
            if not _theirs(value):  # only their own: np.f2py.os is the os module
                raise SpinupError(
                    f"The value {self.text!r} of --{self.flag} could not be used: {name} is not "
                    f"one of tf's, keras' or np's own functions or values. Names under tf, "
                    f"keras or np must name one, e.g. tf.nn.relu.")
        if type(value).__name__ == "module":
            raise SpinupError(f"The value {self.text!r} of --{self.flag} names a module, not a "
                              f"function or value: give one inside it, e.g. tf.nn.relu.")
        if self.flag.split(":")[-1] in ("activation", "act") and not (
                callable(value) and type(value).__name__ != "type"
                and _module_of(value).startswith(("tensorflow", "keras"))):
            raise SpinupError(f"The value {self.text!r} of --{self.flag} is not an activation "
                              f"function: give one of TensorFlow's or Keras', e.g. tf.nn.relu, "
                              f"tf.nn.tanh, tf.nn.elu or keras.activations.gelu.")
        return value


def _module_of(value) -> str:
    """The module an object comes from ('' if it does not say)."""
    name = value.__name__ if type(value).__name__ == "module" else getattr(
        value, "__module__", None)
    return name if isinstance(name, str) else ""


def _theirs(value) -> bool:
    """Whether a module, function or class belongs to TensorFlow, Keras or numpy (a value
    such as np.pi, which says nothing of its module, passes)."""
    if not (type(value).__name__ == "module" or callable(value)):
        return True
    module = _module_of(value)
    return not module or module.split(".")[0] in ("tensorflow", "keras", "numpy", "tf_keras")


def resolve_names(value):
    """``value`` with every :class:`NamedObject` in it (in dicts, lists and tuples)
    replaced by the object it names."""
    if isinstance(value, NamedObject):
        return value.resolve()
    if isinstance(value, dict):
        return {k: resolve_names(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(resolve_names(v) for v in value)
    return value


def parse_value(text: str, flag: str):
    """One flag value: a Python literal, a whitelisted name or call, or the
    string itself.

    ``0.1`` -> float, ``[64,64]`` -> list, ``tf.nn.tanh`` -> a
    :class:`NamedObject` (looked up in the experiment's process),
    ``dict(hidden_sizes=[64], activation=tf.nn.relu)`` -> dict,
    ``HalfCheetah-v5`` -> str. A value that uses a name or a call it cannot
    take is an error naming the flag.
    """
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        pass
    try:
        tree = ast.parse(text.strip(), mode="eval").body
    except SyntaxError:
        return text
    if not _uses_code(tree):
        return text
    try:
        return _eval_node(tree, flag)
    except SpinupError as err:
        raise SpinupError(f"The value {text!r} of --{flag} could not be used: {err} Values may "
                          f"be Python literals (0.1, [64,64], True), names under tf, keras or np "
                          f"(tf.nn.relu), or dict(...)/list(...)/tuple(...) of those.") from None


def _uses_code(node) -> bool:
    """True if the expression names a whitelisted root or makes a call, i.e. it
    is meant as code, not as a string that happens to parse (``Pendulum-v1``)."""
    for sub in ast.walk(node):
        if isinstance(sub, ast.Call):
            return True
        if isinstance(sub, ast.Attribute):
            root = sub
            while isinstance(root, ast.Attribute):
                root = root.value
            if isinstance(root, ast.Name):
                return True
    return False


def _eval_node(node, flag: str):
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        items = [_eval_node(e, flag) for e in node.elts]
        return {ast.List: list, ast.Tuple: tuple, ast.Set: set}[type(node)](items)
    if isinstance(node, ast.Dict):
        return {_eval_node(k, flag): _eval_node(v, flag)
                for k, v in zip(node.keys, node.values, strict=True)}
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        val = _eval_node(node.operand, flag)
        return -val if isinstance(node.op, ast.USub) else +val
    if isinstance(node, (ast.Name, ast.Attribute)):
        root = node
        while isinstance(root, ast.Attribute):
            root = root.value
        if not isinstance(root, ast.Name):
            raise SpinupError(f"{ast.unparse(node)!r} is not a literal or an allowed name.")
        parts = ast.unparse(node).split(".")
        if parts[0] not in NamedObject.ROOTS:
            raise SpinupError(f"the name {parts[0]!r} is not one it can use.")
        if len(parts) == 1 or any(p.startswith("_") for p in parts):
            raise SpinupError(f"{ast.unparse(node)} does not exist.")
        return NamedObject(ast.unparse(node), flag)
    if isinstance(node, ast.Call):
        if not (isinstance(node.func, ast.Name) and node.func.id in SAFE_CALLS):
            raise SpinupError(f"the call {ast.unparse(node.func)}(...) is not allowed.")
        args = [_eval_node(a, flag) for a in node.args]
        kwargs = {kw.arg: _eval_node(kw.value, flag) for kw in node.keywords
                  if kw.arg is not None}
        return SAFE_CALLS[node.func.id](*args, **kwargs)
    raise SpinupError(f"{ast.unparse(node)!r} is not a literal or an allowed name.")


def parse_flags(cmd: str, args: list[str]) -> tuple[dict, dict]:
    """Turn ``--key v1 v2 ...`` tokens into ``(arg_dict, shorthands)``.

    A token that starts with ``--`` is a flag; any other token is a value of the flag
    before it (so ``--exp_name my--run`` is one name). A flag given twice, under its own
    name or a substitution's, is refused rather than the last one silently winning.
    """
    if not args or not args[0].startswith("--"):
        raise SpinupError(f"You didn't specify a first flag: after '{cmd}' come flags such as "
                          f"--env Pendulum-v1 --epochs 10 (got {args[:1] or 'nothing'}).")
    arg_dict: dict = {}
    given_shorthands: dict = {}
    key = None
    for arg in args:
        if arg.startswith("--"):
            key = arg[2:]
            if "[" in key:
                if not key.endswith("]"):
                    raise SpinupError(f"The flag {arg} has an unclosed shorthand: write "
                                      f"--key[sh], e.g. --lr[lr] 0.001 0.0003.")
                key, sh = key[:-1].split("[", 1)
                given_shorthands[key] = sh
            if not key or key.startswith("-"):
                raise SpinupError(f"The flag {arg!r} has no name: flags are --name.")
            if key in arg_dict:
                raise SpinupError(f"--{key} is given twice; give it once, with all its values "
                                  f"(several values make a grid: --{key} A B).")
            arg_dict[key] = []
        else:
            is_name = SUBSTITUTIONS.get(key, key) in STRING_KEYS
            arg_dict[key].append(arg if is_name else parse_value(arg, key))
    for v in arg_dict.values():
        if len(v) == 0:  # a bare flag is a boolean switch
            v.append(True)

    # Make substitutions, moving each substituted key to the end (the order
    # of keys sets the order of parts in variant names).
    for special_name, true_name in SUBSTITUTIONS.items():
        if special_name in arg_dict:
            if true_name in arg_dict:
                raise SpinupError(f"--{special_name} and --{true_name} are the same flag, given "
                                  f"twice; give one of them, with all its values.")
            arg_dict[true_name] = arg_dict.pop(special_name)
        if special_name in given_shorthands:
            given_shorthands[true_name] = given_shorthands.pop(special_name)
    return arg_dict, given_shorthands


def check_env_names(env_names: list) -> None:
    """Refuse unregistered environment names (with the closest registered
    ones) and MuJoCo environments without mujoco installed."""
    import gymnasium as gym

    from spinup_tf2.envs import ensure_registered

    registered = list(gym.envs.registry.keys())
    for name in env_names:
        if not isinstance(name, str):
            raise SpinupError(f"--env must be an environment name; got {name!r}.")
        ensure_registered(name)  # package:EnvId imports the package
        name = name.split(":", 1)[-1]
        if name.startswith("dm_control/") and name not in gym.envs.registry:
            raise SpinupError(f"{name} is a DeepMind Control task, which gymnasium knows "
                              f"through Shimmy: install the dmc extra (pip install -e "
                              f"'.[dmc]') and run again.")
        spec = gym.envs.registry.get(name)
        base = name.split("-v")[0]
        mujoco_names = {k.split("-v")[0] for k, s in gym.envs.registry.items()
                        if "mujoco" in str(s.entry_point)}
        if spec is None:
            close = difflib.get_close_matches(name, registered, n=5, cutoff=0.6)
            same_base = sorted(k for k in registered if k.split("-v")[0] == base)
            suggestions = same_base + [c for c in close if c not in same_base]
            hint = (" It is a MuJoCo environment: install the mujoco extra with "
                    "pip install 'spinup_tf2[mujoco]'." if base in mujoco_names else "")
            raise SpinupError(
                f"{name} is not registered with gymnasium. "
                + (f"Closest registered names: {', '.join(suggestions[:5])}. "
                   if suggestions else "")
                + "Check for a typo (did you include the version tag, e.g. -v5?); "
                  "gymnasium.pprint_registry() lists them all." + hint)
        if "mujoco_py" in getattr(spec.entry_point, "__name__", ""):
            newer = sorted(k for k in registered if k.split("-v")[0] == base
                           and "mujoco_py" not in getattr(gym.spec(k).entry_point,
                                                          "__name__", ""))
            raise SpinupError(
                f"{name} is a mujoco-py environment, which gymnasium no longer provides "
                f"(its -v2/-v3 MuJoCo tasks moved to gymnasium-robotics). Use "
                f"{' or '.join(newer[-2:]) or 'a -v5 version'} instead; it needs the mujoco "
                f"extra: pip install 'spinup_tf2[mujoco]'.")
        if "mujoco" in str(spec.entry_point):
            try:
                import mujoco  # noqa: F401
            except ImportError:
                raise SpinupError(f"{name} needs MuJoCo, which is not installed: pip install "
                                  f"'spinup_tf2[mujoco]' (gymnasium[mujoco]).") from None
        if isinstance(spec.entry_point, str):
            try:  # imports the env's module, which names a missing extra (Box2D, ...)
                gym.envs.registration.load_env_creator(spec.entry_point)
            except (gym.error.DependencyNotInstalled, ImportError) as err:
                raise SpinupError(f"{name} needs a package that is not installed: {err}. "
                                  f"Nothing was launched.") from None
            except Exception as err:  # a registering package may name what it lacks
                first = error_line(err)
                raise SpinupError(f"{name} is registered with the entry point "
                                  f"{spec.entry_point!r}, which cannot be loaded "
                                  f"({first}). Check the package that "
                                  f"registers {name}. Nothing was launched.") from None


def whole_numbers_as_ints(arg_dict: dict, defaults: dict) -> None:
    """Whole-number floats (``--replay_size 1e6``) as ints, for arguments whose default
    is an int."""
    for key, vals in arg_dict.items():
        default = defaults.get(key)
        if isinstance(default, int) and not isinstance(default, bool):
            arg_dict[key] = [int(v) if isinstance(v, float) and v.is_integer() else v
                             for v in vals]


def check_variants(algo: FunctionPath, check_args: Callable, variants: list[dict]) -> None:
    """Refuse, before anything is launched, a flag the algorithm has no argument
    for, or a value its argument check refuses, in any variant of the grid."""
    defaults = dict(algo.defaults(), **SWITCHES, **PIXEL_OPTIONS)
    known = (set(defaults) - {"env_fn"}) | {"env_name", "env_kwargs", "env_wrappers"}
    for variant in variants:
        unknown = [k for k in variant if k not in known]
        if unknown:
            close = difflib.get_close_matches(unknown[0], sorted(known), n=3)
            raise SpinupError(
                f"--{unknown[0]} is not an argument of {algo.__name__}()"
                + (f"; did you mean {' or '.join('--' + c for c in close)}?" if close else ".")
                + f" Its arguments are listed by python -m spinup_tf2.run {algo.__name__} "
                  f"--help, and the launcher's own flags are --cpu, --data_dir, --datestamp "
                  f"(--dt), --parallel, --oversubscribe, --backend, --ray_address and "
                  f"--ray_worker_dir.")
        for key, value in variant.items():
            default = defaults.get(key)
            if key in SWITCHES and not isinstance(value, bool):
                raise SpinupError(f"--{key} is an on/off switch: give it alone (on), or "
                                  f"--{key} True False for both; got {value!r}.")
            if value is True and not isinstance(default, bool) and default is not NOT_A_VALUE:
                raise SpinupError(
                    f"--{key} was given no value. A flag alone means True, which only on/off "
                    f"arguments (--resume, --normalize_obs, ...) take; give one, e.g. --{key} "
                    f"{default!r} (the default).")
        check_pixel_options(variant)
        args = {k: v for k, v in defaults.items() if v is not NOT_A_VALUE}
        check_args({**args, **variant})
    check_environments(variants)


def check_pixel_options(variant: dict) -> None:
    """Refuse --action_repeat, --frame_stack or --image_size without --pixels, or with
    a value that is not a whole number within its bounds (:data:`PIXEL_BOUNDS`)."""
    for key in PIXEL_OPTIONS:
        if key not in variant:
            continue
        value, (low, high) = variant[key], PIXEL_BOUNDS[key]
        if not (isinstance(value, int) and not isinstance(value, bool) and low <= value <= high):
            raise SpinupError(f"--{key} must be a whole number from {low} to {high}; got "
                              f"{value!r}. Nothing was written.")
        if not variant.get("pixels"):
            raise SpinupError(f"--{key} {value} sets how --pixels renders the environment "
                              f"into a pixel task, but this command (or a variant of its "
                              f"grid) has no --pixels. Add --pixels, or drop --{key}.")


def check_environments(variants: list[dict]) -> None:
    """Refuse, before TensorFlow starts, an environment the grid cannot train on: each
    distinct ``--env`` with its ``env_kwargs`` (``gym.make``'s keyword arguments:
    ``--env_kwargs:key value`` or ``--env_kwargs "dict(key=value)"``) and ``env_wrappers``
    (:func:`~spinup_tf2.envs.trust.parse_wrappers`) is made once: arguments it does not
    take, spaces SAC cannot read (:func:`check_observations`), and, with ``env_kwargs``,
    a first step that fails (:func:`~spinup_tf2.envs.recording.check_first_step`: a value
    the constructor takes may still fail there) are one paragraph each."""
    from spinup_tf2.envs import check_first_step, make_env, make_named, parse_wrappers

    tried = set()
    for variant in variants:
        env_name, env_kwargs = variant.get("env_name"), variant.get("env_kwargs")
        wrappers = variant.get("env_wrappers")
        if env_kwargs is not None and not isinstance(env_kwargs, dict):
            raise SpinupError(f"--env_kwargs must be gymnasium.make's keyword arguments, as "
                              f"--env_kwargs:name value or --env_kwargs \"dict(name=value)\"; "
                              f"got {env_kwargs!r}.")
        if wrappers is not None:
            parse_wrappers(wrappers)
            if variant.get("pixels"):
                raise SpinupError(f"--env_wrappers {wrappers!r} with --pixels: --pixels "
                                  f"replaces the observations with rendered frames, so "
                                  f"observation wrappers under it would change nothing the "
                                  f"networks see. Nothing was launched. Drop one of them.")
        key = (env_name, repr(sorted((env_kwargs or {}).items())), wrappers,
               bool(variant.get("pixels")))
        if key in tried or not isinstance(env_name, str):
            continue
        tried.add(key)
        if variant.get("pixels") and env_kwargs is None:
            continue  # rendered frames: the pixel task checks its own spaces
        try:
            env = make_env(functools.partial(make_named, env_name, **(env_kwargs or {}), **(
                {"env_wrappers": wrappers} if wrappers else {})))
        except SpinupError:
            raise
        except Exception as err:  # an env's constructor may raise anything for a bad value
            first = error_line(err)
            if env_kwargs:
                raise SpinupError(f"--env_kwargs {env_kwargs!r}: gymnasium.make({env_name!r}, "
                                  f"...) refused them ({first}). Nothing was launched. Give "
                                  f"arguments {env_name}'s constructor takes (see its "
                                  f"documentation), or max_episode_steps.") from None
            raise SpinupError(f"gymnasium.make({env_name!r}) failed ({first}). Nothing was "
                              f"launched.") from None
        try:
            if env_kwargs is not None:
                check_first_step(env, f"--env_kwargs {env_kwargs!r}")
            if not variant.get("pixels"):
                check_observations(env, env_name, wrappers)
        finally:
            env.close()


def check_observations(env, env_name: str, wrappers: str | None) -> None:
    """Refuse, in the launcher, an environment whose spaces sac() would refuse
    (:func:`~spinup_tf2.envs.recording.network_spaces`,
    :func:`~spinup_tf2.envs.spaces.check_spaces`), adding the ``--env_wrappers`` chain
    that makes its observations readable where there is one (a Dict's readable entries,
    flattened; an observation of several axes, flattened)."""
    from spinup_tf2.envs import network_spaces, readable_chain
    from spinup_tf2.envs.spaces import check_spaces, is_image_space

    try:
        net = network_spaces(env)
        check_spaces(net.observation_space, net.action_space)
    except SpinupError as err:
        chain = readable_chain(env.observation_space)
        space = env.observation_space
        if chain is None or is_image_space(space):
            raise
        where = f" after --env_wrappers {wrappers!r}" if wrappers else ""
        before = f"{wrappers}, " if wrappers else ""
        why = str(err).replace(" Nothing was written.", "")
        raise SpinupError(f"{env_name}{where}: {why} On the command line: --env_wrappers "
                          f"\"{before}{chain}\" (replayed by test_policy and export). "
                          f"Nothing was launched.") from None
