"""Loading a trained policy and the environment it was trained on, from a run directory.

The policy comes from the run's SavedModel (``tf2_save/``); the environment is rebuilt
as config.json records it (:mod:`spinup_tf2.envs`: its id, ``gym.make`` arguments and
wrappers). ``vars.pkl`` (the pickled environment) is read
only when asked for (``trust_pickle``): unpickling runs code from the file, so only for run
directories you trust.
"""

from __future__ import annotations

import os.path as osp
import warnings

import joblib

from spinup_tf2 import envs, rundir
from spinup_tf2.envs.rendering import RenderingEnv, make_isolated
from spinup_tf2.errors import SpinupError, error_line
from spinup_tf2.tf_setup import import_tensorflow


def load_policy_and_env(fpath: str, itr="last", deterministic: bool = False, render: bool = False,
                        trust_pickle: bool = False, video: bool = False,
                        trust_saved_model: bool = False):
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

        trust_saved_model (bool): Load the SavedModel even if its graph holds
            operations a policy does not need (see :func:`check_saved_model_ops`):
            only for run directories you trust.

    Returns:
        ``(env, get_action)``: ``env`` is None if it could not be restored;
        ``get_action(obs)`` maps one observation to one action (numpy).
    """
    itr, folder = rundir.select_save(fpath, itr)
    env = _load_env(fpath, itr, "rgb_array" if video else "human" if render else None,
                    trust_pickle)
    get_action = load_tf2_policy(folder, deterministic, trust_saved_model)
    if env is not None:
        _check_fits(get_action.model, env, folder)
    return env, get_action


def _check_fits(model, env, folder: str) -> None:
    """Refuse a SavedModel whose observations are not the environment's (a tf2_save/
    copied from another run, or a config.json naming another environment)."""
    import numpy as np

    space = env.observation_space
    if isinstance(getattr(space, "spaces", None), dict):  # a Dict: each entry's shape
        obs_shape = {k: list(getattr(v, "shape", None) or ()) for k, v in space.spaces.items()}
    else:
        obs_shape = list(getattr(space, "shape", None) or ())
    spec = obs_spec_of(model)
    outputs = model.mu.concrete_functions[0].structured_outputs
    if _shapes(spec) != obs_shape:
        raise SpinupError(
            f"The saved model in {folder} takes observations of shape {_shapes(spec)}, but "
            f"the environment rebuilt for it ({getattr(env.spec, 'id', env)}) gives "
            f"observations of shape {obs_shape}: they are not from the same run. Check that "
            f"config.json and tf2_save/ belong together (or load the policy with "
            f"load_tf2_policy and pair it with its own environment yourself).")
    act_space = env.action_space
    want = () if not hasattr(act_space, "low") else tuple(np.shape(act_space.low))
    action = outputs[0] if isinstance(outputs, (tuple, list)) else outputs  # with memory
    got = tuple(action.shape[1:])
    if got != want:
        raise SpinupError(
            f"The saved model in {folder} gives actions of shape {list(got)}, but the "
            f"environment rebuilt for it ({getattr(env.spec, 'id', env)}) takes actions of "
            f"shape {list(want)}: they are not from the same run. Check that config.json and "
            f"tf2_save/ belong together.")


def _load_env(fpath: str, itr, render_mode: str | None, trust_pickle: bool):
    """The training environment rebuilt from config.json (its recorded spec, wrappers
    included; with ``render_mode``), or (trusted directories only, no render mode) the
    one pickled in vars<itr>.pkl. One that cannot be rebuilt is None after a line saying
    why, never a bare environment in its place."""
    config = rundir.read_config(fpath) or {}
    ref = envs.ref_of(config)
    if ref is not None and not trust_pickle:
        envs.check_trusted(ref, f"{fpath}'s config.json", fpath)
    ref = envs.with_state(ref, envs.read_state(fpath, ref))  # NormalizeObservation's statistics
    # Runs before 0.2 recorded only env_name; a null env_spec says it could not be recorded.
    recorded = ref is not None and config.get("env_spec", "") is not None
    if render_mode is not None:
        if not recorded:
            raise SpinupError(f"Rendering needs the environment rebuilt from config.json, but "
                              f"{fpath}'s config.json records no environment that can be "
                              f"rebuilt (made without gymnasium.make, or with a wrapper whose "
                              f"arguments are a function). Run without rendering (-nr) with "
                              f"--trust_vars_pkl, or make the environment yourself and call "
                              f"run_policy(env, get_action).")
        where = "a separate process" + ("" if render_mode == "rgb_array" else ", in a window")
        print(f"Rebuilding the environment {envs.describe(ref)} from config.json, rendering in "
              f"{where}.")
        # Its own process: MuJoCo's renderers and a window that cannot open crash one
        # that holds TensorFlow.
        return RenderingEnv(ref, render_mode)
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
            if not (callable(getattr(env, "reset", None)) and callable(getattr(env, "step",
                                                                              None))):
                print(f"{path} holds no environment under 'env' (its type is "
                      f"{type(env).__name__}).", flush=True)
            else:
                envs.freeze_stats(env)  # before the trial reset, which would move them
                if _runs(env, path):
                    return env
    if recorded:
        print(f"Rebuilding the environment {envs.describe(ref)} from config.json.")
        try:
            env = make_isolated(ref)
            # Recorded arguments it takes but cannot step with fail here, before any episode.
            envs.check_first_step(env, f"{fpath}'s config.json")
            return env
        except SpinupError:
            raise
        except Exception as err:  # a constructor may raise anything for what it is given
            first = error_line(err)
            raise SpinupError(
                f"The environment recorded in {fpath}'s config.json ({envs.describe(ref)}) "
                f"could not be made ({first}): its recorded arguments "
                f"are not ones it takes, or a file it names is not what it should be. Nothing "
                f"was run. Make the environment yourself and call run_policy(env, get_action) "
                f"(docs/user/shipping.md).") from None
    if not trust_pickle:
        bare = (f", and the bare {config['env_name']} would not be the same environment"
                if config.get("env_name") else "")
        print(f"The environment of {fpath} cannot be rebuilt from config.json: it was made by "
              f"a function or with a wrapper that could not be recorded{bare}.", flush=True)
    return None


def _runs(env, path: str) -> bool:
    """Whether an unpickled environment can start an episode. One holding a connection to
    a simulator in another process (PyBullet's, under panda-gym's tasks) unpickles
    without error but is cut off from it: a line says so, and the caller rebuilds it."""
    try:
        env.reset()
    except Exception as err:  # a simulator may raise anything once cut off
        first = error_line(err, 160)
        print(f"The environment pickled in {path} does not run once unpickled "
              f"({first}); an environment connected to a simulator "
              f"outside Python (PyBullet's, as panda-gym's are) loses that connection in a "
              f"pickle.", flush=True)
        return False
    return True


def load_tf2_policy(fpath: str, deterministic: bool = False, trust_saved_model: bool = False):
    """``get_action(obs)`` from a SavedModel folder written by spinup_tf2 (see
    :func:`load_saved_model` for ``trust_saved_model``). A recurrent policy's
    ``get_action`` carries its memory from call to call; ``get_action.reset()`` starts
    an episode (zero memory)."""
    tf = import_tensorflow()
    print(f"\n\nLoading from {fpath}.\n\n")
    model = load_saved_model(fpath, trust_saved_model)
    if deterministic:
        print("Using deterministic action op.")
        action_fn = model.mu
    else:
        print("Using default action op.")
        action_fn = model.pi

    spec = obs_spec_of(model)
    if is_recurrent(model):
        state = [model.initial_state(tf.nest.map_structure(
            lambda s: tf.zeros([1, *s.shape[1:]]), spec))]

        def get_action(x):
            a, state[0] = action_fn(one_observation(spec, x), state[0])
            return a[0].numpy()

        def reset():
            state[0] = tf.zeros_like(state[0])

        get_action.reset = reset
    else:
        def get_action(x):
            return action_fn(one_observation(spec, x))[0].numpy()

    get_action.model = model  # the loaded functions need the model (its variables) alive
    return get_action


def is_recurrent(model) -> bool:
    """True for a recurrent policy's SavedModel: ``mu(x, state)`` takes its memory."""
    return len(model.mu.concrete_functions[0].structured_input_signature[0]) == 2


def obs_spec_of(model):
    """The TensorSpec of the observations a SavedModel's ``mu`` takes (for Dict
    observations, a dict of them by key)."""
    return model.mu.concrete_functions[0].structured_input_signature[0][0]


def obs_dim_of(model) -> int | tuple | dict:
    """The observation width a SavedModel's ``mu`` takes, or an image's shape (for Dict
    observations, a dict of them by key)."""
    spec = obs_spec_of(model)
    if isinstance(spec, dict):
        return {k: _dim(v) for k, v in sorted(spec.items())}
    return _dim(spec)


def _dim(spec) -> int | tuple:
    shape = tuple(int(n) for n in spec.shape[1:])
    return shape[0] if len(shape) == 1 else shape


def _shapes(spec) -> list | dict:
    """The observation shape(s) a spec (or dict of specs) takes, without the batch."""
    if isinstance(spec, dict):
        return {k: list(v.shape[1:]) for k, v in spec.items()}
    return list(spec.shape[1:])


def one_observation(spec, x):
    """One observation ``x`` (an array, or a dict of arrays) as a batch of one in the
    dtype(s) of ``spec``, what the SavedModel's functions take."""
    tf = import_tensorflow()
    if isinstance(spec, dict):
        return {k: tf.convert_to_tensor([x[k]], dtype=v.dtype) for k, v in spec.items()}
    return tf.convert_to_tensor([x], dtype=spec.dtype)


# The operations a policy's functions may run: arithmetic, activations, random draws and
# reading its own variables (those of spinup_tf2's actor-critics with any Keras activation,
# and the common ones of a custom network). Nothing that reads or writes files, runs Python
# (PyFunc), starts processes or talks to the network.
_POLICY_OP_NAMES = """
Abs Acos Acosh Add AddN AddV2 All Any ArgMax ArgMin Asin Asinh AssignVariableOp Atan Atan2
Atanh AvgPool BatchMatMul BatchMatMulV2 BatchMatMulV3 BiasAdd BroadcastArgs BroadcastTo Cast
Ceil CheckNumerics ClipByValue ConcatV2 Const Conv1D Conv2D Cos Cosh Cumsum DepthwiseConv2dNative
DisableCopyOnRead Einsum Elu Equal Erf Erfc Exp ExpandDims Expm1 Fill Floor FloorDiv FloorMod
FusedBatchNormV3 GatherNd GatherV2 Greater GreaterEqual Identity IdentityN IsFinite IsNan
L2Loss LeakyRelu Less LessEqual Log Log1p LogSoftmax LogicalAnd LogicalNot LogicalOr MatMul
Max MaxPool Maximum Mean Min Minimum Mod Mul Multinomial Neg NoOp NotEqual OneHot OnesLike Pack
Pad PadV2 PartitionedCall Placeholder Pow Prod RandomStandardNormal RandomUniform
RandomUniformInt Range Rank ReadVariableOp RealDiv Reciprocal Relu Relu6 Reshape Round Rsqrt
Select SelectV2 Selu Shape Sigmoid Sign Sin Sinh Size Slice Softmax Softplus Softsign Split
SplitV Sqrt Square SquaredDifference Squeeze StatefulPartitionedCall
StatelessRandomGetKeyCounter StatelessRandomNormalV2 StatelessRandomUniformV2 StopGradient
StridedSlice Sub Sum Tan Tanh Tile Transpose TruncatedNormal Unpack VarHandleOp Where
ZerosLike"""
POLICY_OPS = frozenset(_POLICY_OP_NAMES.split())
# What tf.saved_model.save adds to save and restore the variables (not run by loading).
SAVER_OPS = frozenset(("MergeV2Checkpoints", "RestoreV2", "SaveV2", "ShardedFilename",
                       "StaticRegexFullMatch", "StringJoin"))


def check_saved_model_ops(fpath: str) -> None:
    """Refuse, before TensorFlow loads it, a SavedModel in the folder ``fpath`` whose
    functions hold operations a policy does not need (:data:`POLICY_OPS`): a crafted
    model could read or write files, or run code, when test_policy or export calls it.
    The saver's own functions may also hold :data:`SAVER_OPS`. The check fails closed:
    the folder's files must all be regular files of bounded size
    (:func:`~spinup_tf2.rundir.check_tree`), and the graph is read as TensorFlow's loader
    would read it (``saved_model.pb``, else ``saved_model.pbtxt``); one that cannot be
    read so is refused, not passed to the loader."""
    from google.protobuf import message, text_format
    from tensorflow.core.protobuf import saved_model_pb2

    rundir.check_tree(fpath)
    model = saved_model_pb2.SavedModel()
    pb, pbtxt = osp.join(fpath, "saved_model.pb"), osp.join(fpath, "saved_model.pbtxt")
    try:
        if osp.lexists(pb):
            with open(pb, "rb") as f:
                model.ParseFromString(f.read())
        elif osp.lexists(pbtxt):
            with open(pbtxt, encoding="utf-8") as f:
                text_format.Parse(f.read(), model)
        else:
            raise OSError("it holds neither saved_model.pb nor saved_model.pbtxt")
    except (OSError, UnicodeDecodeError, message.DecodeError, text_format.ParseError) as err:
        raise SpinupError(
            f"The saved model in {fpath} cannot be loaded: its graph cannot be read "
            f"({type(err).__name__}: {str(err)[:160]}), so its operations cannot be checked; "
            f"it is cut short or damaged. Try an earlier save with --itr N if the run kept "
            f"numbered ones (save_freq), or train again.") from None
    bad = {}
    for graph in model.meta_graphs:
        functions = {fn.signature.name: fn for fn in graph.graph_def.library.function}
        # What loading and calling the model runs: the object graph's functions and
        # everything they call. The rest (the saver's functions) only saves and restores.
        called = _calls(functions, graph.object_graph_def.concrete_functions.keys())
        for name, fn in functions.items():
            allowed = POLICY_OPS if name in called else POLICY_OPS | SAVER_OPS
            for node in fn.node_def:
                if node.op not in allowed and node.op not in functions:
                    bad.setdefault(node.op, name)
        for node in graph.graph_def.node:
            if node.op not in POLICY_OPS | SAVER_OPS and node.op not in functions:
                bad.setdefault(node.op, "the top-level graph")
    if bad:
        ops = ", ".join(f"{op} (in {where})" for op, where in sorted(bad.items())[:8])
        raise SpinupError(
            f"The saved model in {fpath} holds operations a policy does not need: {ops}. A "
            f"policy saved by spinup_tf2 only computes actions from observations; a crafted "
            f"model could read or write files or run code when called, so it was not loaded. "
            f"If you trust this run directory (a custom actor-critic with unusual operations), "
            f"add --trust_saved_model (trust_saved_model=True).")


def _calls(functions: dict, roots) -> set:
    """The names of ``roots`` and every library function they call, directly or not."""
    seen, todo = set(), [r for r in roots if r in functions]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        for node in functions[name].node_def:
            callees = [node.op] + [v.func.name for v in node.attr.values()]
            callees += [f.name for v in node.attr.values() for f in v.list.func]
            todo += [c for c in callees if c in functions and c not in seen]
    return seen


def load_saved_model(fpath: str, trust_saved_model: bool = False):
    """The SavedModel in the folder ``fpath`` (with its ``mu`` and ``pi``
    functions), or a :class:`SpinupError` saying why it cannot be used; unless
    ``trust_saved_model``, only after :func:`check_saved_model_ops`."""
    if trust_saved_model:
        rundir.check_tree(fpath)  # trusted to hold code, never to be a FIFO or a device
    else:
        check_saved_model_ops(fpath)
    tf = import_tensorflow()
    try:
        model = tf.saved_model.load(fpath)
    except Exception as err:  # TensorFlow raises several kinds for a damaged model
        first = error_line(err)
        raise SpinupError(
            f"The saved model in {fpath} cannot be loaded ({first}); "
            f"saved_model.pb or variables/ is cut short or damaged. Try an earlier save "
            f"with --itr N if the run kept numbered ones (save_freq), or train again.") from None
    if not (hasattr(model, "pi") and hasattr(model, "mu")):
        raise SpinupError(f"The saved model in {fpath} is not a spinup_tf2 policy (it has no "
                          f"pi and mu functions).")
    return model
