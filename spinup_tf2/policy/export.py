"""Export a saved policy for use outside Python and TensorFlow:
``python -m spinup_tf2.run export DIR --format onnx|tflite [--out PATH] [--itr N]``.

What is exported is the deterministic policy, the SavedModel's ``mu``:
observations in (float32, ``[batch, obs_dim]``, input ``obs``; for Dict observations
one input per key, named by it), actions out
(output ``action``): float32 ``[batch, act_dim]`` for a continuous policy,
the int64 argmax action index ``[batch]`` for a discrete one. A run trained
with ``normalize_obs`` has its observation normalizer inside the exported
graph, so the file takes raw observations, as the environment gives them.

ONNX goes through ``tf2onnx``, TF Lite through TensorFlow's Lite converter.
Every file is checked before it is reported: loaded with its own runtime
(``onnxruntime``; LiteRT's interpreter, or TensorFlow's) and run beside the SavedModel's
``mu`` on the observations the policy meets: 3 episodes of the run's environment (rebuilt
from config.json; more until 100 steps), the SavedModel acting. Its actions must be
within 1e-5 (a discrete policy's, equal). Where the environment cannot be rebuilt, the
check is on 100 random observations. (A trained policy's float rounding grows far
outside the observations it was trained on, so random ones would refuse files that act as
the SavedModel does wherever it is used.) The file is written under a temporary name and
renamed when complete.

A recurrent policy (``--recurrent``) is exported as one step of it: inputs ``obs``
and ``state`` (float32 ``[batch, state_size]``, zeros at an episode's start), outputs
``action`` and ``next_state`` (feed it back as ``state`` at the next step). It is checked
over the same episodes, the file fed the same observations and its own returned state
(3 sequences of 200 random observations if the environment cannot be rebuilt).
"""

from __future__ import annotations

import argparse
import logging
import os
import os.path as osp
import sys

import numpy as np

from spinup_tf2 import rundir
from spinup_tf2.errors import SpinupError, cli_main, error_line, is_installed
from spinup_tf2.policy.load import is_recurrent, load_saved_model, obs_dim_of, obs_spec_of
from spinup_tf2.tf_setup import graph_function, import_tensorflow, quiet_stderr

FORMATS = {"onnx": ".onnx", "tflite": ".tflite"}
ONNX_OPSET = 17
CHECK_OBS = 100  # the fewest observations each export is checked on
EXTRA = ("pip install -e '.[export]' in a clone of spinup_tf2, or pip install tf2onnx "
         "onnxruntime ai-edge-litert")


def export_policy(fpath: str, fmt: str | None = None, out: str | None = None,
                  itr="last", trust_saved_model: bool = False) -> dict:
    """Write the deterministic policy of a saved run as an ONNX or TF Lite file.

    Args:
        fpath (str): The output directory of one run (holding ``tf2_save/``).

        fmt (str): ``'onnx'`` or ``'tflite'``; if None, taken from the suffix
            of ``out``.

        out (str): Where to write; default ``fpath/policy<itr>.onnx`` (or
            ``.tflite``).

        itr: ``'last'`` or the number N of a ``tf2_save<N>`` folder, as for
            ``test_policy``.

        trust_saved_model (bool): Export even a SavedModel whose graph holds
            operations a policy does not need (see
            :func:`spinup_tf2.policy.load.check_saved_model_ops`).

    Returns:
        A dict: ``path``, ``format``, ``bytes``, ``obs_dim``, ``discrete``,
        ``normalize_obs``, ``runtime`` (what checked it) and ``max_abs_diff``
        (largest difference from the SavedModel's ``mu`` on what ``checked``
        says: episodes of the run's environment, or random observations; for a
        discrete policy, the number of actions that differ).
    """
    fmt = _check_format(fmt, out)
    _check_extra(fmt)
    itr, folder = rundir.select_save(fpath, itr, cmd="export")
    if out is None:
        out = osp.join(fpath, f"policy{itr}{FORMATS[fmt]}")
    rundir.check_writable_dir(osp.dirname(osp.abspath(out)), f"--out {out!r}: the directory")
    if osp.isdir(out):
        raise SpinupError(f"--out {out!r} is a directory; give a file name ending in "
                          f"{FORMATS[fmt]}.")

    tf = import_tensorflow()
    model = load_saved_model(folder, trust_saved_model)
    obs_dim, obs_spec = obs_dim_of(model), obs_spec_of(model)
    # One input per observation: 'obs', or for Dict observations one per key.
    names = sorted(obs_spec) if isinstance(obs_spec, dict) else ["obs"]
    specs = obs_spec if isinstance(obs_spec, dict) else {"obs": obs_spec}
    sig = [tf.TensorSpec(specs[k].shape, specs[k].dtype, name=k) for k in names]
    n = len(names)

    def x_of(inputs):
        return dict(zip(names, inputs, strict=True)) if isinstance(obs_spec, dict) else inputs[0]

    memory = is_recurrent(model)
    _check_names(names, memory, fpath)
    if memory:
        state_size = int(model.mu.concrete_functions[0].structured_input_signature[0][1]
                         .shape[1])
        sig.append(tf.TensorSpec([None, state_size], tf.float32, name="state"))
        policy = graph_function(lambda *args: dict(zip(("action", "next_state"),
                                                       model.mu(x_of(args[:n]), args[n]),
                                                       strict=False)), sig)
    else:
        policy = graph_function(lambda *args: {"action": model.mu(x_of(args))}, sig)

    data = _to_onnx(policy, sig) if fmt == "onnx" else _to_tflite(policy, model)
    os.makedirs(osp.dirname(osp.abspath(out)), exist_ok=True)
    into_run = osp.realpath(osp.dirname(osp.abspath(out))) == osp.realpath(fpath)
    if into_run:  # one writer per run directory
        rundir.claim(fpath, "an export")
    try:
        with rundir.atomic_file(out) as tmp:
            with open(tmp, "wb") as f:
                f.write(data)
            runtime, run = _load_back(fmt, tmp, out)
            # On what the policy meets: a trained policy's rounding grows far outside its
            # observations (CrossQ Hopper: 1e-5 on normal(0, 3) noise, 3e-6 in play).
            checked, actions, expected = _check_over_episodes(fpath, model, run, memory) or (
                _check_on_random(model, run, names, specs, x_of))
            discrete = expected.dtype.kind in "iu"
            diff = (int(np.sum(actions != expected)) if discrete
                    else float(np.max(np.abs(actions - expected))))
            if discrete and diff or not discrete and not diff <= 1e-5:
                raise SpinupError(f"The {fmt} file does not reproduce the policy: on "
                                  f"{checked} its actions differ from the SavedModel's by "
                                  f"{diff} ({runtime}). Nothing was written to {out}.")
    except OSError as err:
        raise SpinupError(f"--out {out!r} cannot be written ({err.strerror}); give a file in "
                          f"a directory you can write in.") from None
    finally:
        if into_run:
            rundir.release(fpath)
    return dict(path=out, format=fmt, bytes=len(data), obs_dim=obs_dim, discrete=discrete,
                act_shape=list(expected.shape[1:]), dtype=str(expected.dtype), checked=checked,
                state_size=state_size if memory else None, n_checked=len(expected),
                normalize_obs=_normalizes(fpath), runtime=runtime, max_abs_diff=diff,
                saved_model=folder)


def _check_format(fmt: str | None, out: str | None) -> str:
    suffix = osp.splitext(out)[1].lower() if out else ""
    by_suffix = {v: k for k, v in FORMATS.items()}.get(suffix)
    if fmt is None:
        if by_suffix is None:
            got = f"; --out {out!r} ends in neither" if out else ""
            raise SpinupError(f"Give the format of the export: --format onnx or --format tflite "
                              f"(or --out FILE ending in .onnx or .tflite){got}.")
        return by_suffix
    if fmt not in FORMATS:
        raise SpinupError(f"--format {fmt!r} is not an export format; valid formats: "
                          f"{', '.join(FORMATS)}.")
    if out is not None and suffix != FORMATS[fmt]:
        raise SpinupError(f"--out {out!r} does not end in {FORMATS[fmt]}, the suffix of "
                          f"--format {fmt}; give a file name ending in {FORMATS[fmt]}.")
    return fmt


def _check_extra(fmt: str) -> None:
    """The converter and the runtime that checks its file must be installed."""
    needs = ["tf2onnx", "onnxruntime"] if fmt == "onnx" else []
    missing = [name for name in needs if not is_installed(name)]
    if missing:
        raise SpinupError(f"Exporting to {fmt} needs {' and '.join(missing)}, which "
                          f"{'is' if len(missing) == 1 else 'are'} not installed. The optional "
                          f"extra 'export' installs the converters and their runtimes: {EXTRA}.")


def _to_onnx(policy, sig) -> bytes:
    import tf2onnx

    logging.getLogger("tf2onnx").setLevel(logging.ERROR)
    with quiet_stderr():
        proto, _ = tf2onnx.convert.from_function(policy, input_signature=sig, opset=ONNX_OPSET)
    # Name the free batch dimension (tf2onnx leaves it as "unk__N").
    for value in list(proto.graph.input) + list(proto.graph.output):
        dims = value.type.tensor_type.shape.dim
        if len(dims) and not dims[0].HasField("dim_value"):
            dims[0].dim_param = "batch"
    proto.producer_name = f"spinup_tf2 (tf2onnx {tf2onnx.__version__})"
    return proto.SerializeToString()


def _to_tflite(policy, model) -> bytes:
    tf = import_tensorflow()
    converter = tf.lite.TFLiteConverter.from_concrete_functions(
        [policy.get_concrete_function()], model)
    with quiet_stderr():
        return converter.convert()


def _onnx_runner(path: str):
    """``(runtime, run)``: ``run(**inputs)`` gives the file's outputs by name."""
    import onnxruntime as ort

    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]

    def run(**inputs):
        return dict(zip(names, session.run(names, inputs), strict=True))

    return f"onnxruntime {ort.__version__}", run


def _check_over_episodes(fpath: str, model, run, memory: bool, n: int = 3,
                         length: int = 200) -> tuple | None:
    """The SavedModel (``mu``) and its exported file (``run``) side by side over ``n``
    whole episodes of the run's environment (rebuilt from config.json), and more until
    :data:`CHECK_OBS` steps, the SavedModel acting. A recurrent policy carries its state
    in each; it is checked on ``n`` sequences of ``length`` random observations if the
    environment cannot be rebuilt, a feedforward one gets None then. Returns what was
    checked and the two actions at every step."""
    tf = import_tensorflow()
    env, max_len = _rebuilt_env(fpath)
    if env is not None and not _fits(env, obs_spec_of(model)):
        env.close()  # another environment than the policy's (an env_fn config.json lacks)
        env = None
    if env is None and not memory:
        return None
    rng = np.random.default_rng(0)
    obs_dim = obs_dim_of(model)

    def random_obs():
        if isinstance(obs_dim, dict):
            return {k: rng.normal(size=d) for k, d in obs_dim.items()}
        return rng.normal(size=obs_dim)

    size = (int(model.mu.concrete_functions[0].structured_input_signature[0][1].shape[1])
            if memory else 0)
    dtype = _obs_dtype(model)
    got, want, episode = [], [], 0
    while episode < n or (env is not None and len(got) < CHECK_OBS and episode < CHECK_OBS):
        o = env.reset(seed=episode)[0] if env else random_obs()
        episode += 1
        saved, state = tf.zeros((1, size)), np.zeros((1, size), np.float32)
        for _ in range(max_len if env else length):
            if isinstance(o, dict):  # Dict observations: one input per key
                inputs = {k: np.asarray(v, dtype[k])[None] for k, v in o.items()}
                x = {k: tf.constant(v) for k, v in inputs.items()}
            else:
                inputs = {"obs": np.asarray(o, dtype)[None]}
                x = tf.constant(inputs["obs"])
            if memory:
                a, saved = model.mu(x, saved)
                out = run(**inputs, state=state)
                state = out["next_state"]
            else:
                a, out = model.mu(x), run(**inputs)
            got.append(out["action"][0])
            want.append(a.numpy()[0])
            if env is None:
                o = random_obs()
                continue
            o, _, terminated, truncated, _ = env.step(want[-1])
            if terminated or truncated:
                break
    if env is not None:
        env.close()
    kind = "episodes" if env is not None else "random observation sequences"
    return f"{episode} {kind} ({len(got)} steps)", np.array(got), np.array(want)


def _fits(env, spec) -> bool:
    """Whether the environment's observations are what the policy takes (the same Dict
    keys, the same shapes)."""
    o = env.reset(seed=0)[0]
    if isinstance(spec, dict):
        return (isinstance(o, dict) and set(o) == set(spec)
                and all(np.shape(o[k]) == tuple(spec[k].shape[1:]) for k in spec))
    return not isinstance(o, dict) and np.shape(o) == tuple(spec.shape[1:])


def _check_on_random(model, run, names: list, specs: dict, x_of) -> tuple:
    """A feedforward policy whose environment cannot be rebuilt: the SavedModel and the
    file on :data:`CHECK_OBS` random observations (see :func:`random_observations`)."""
    tf = import_tensorflow()
    obs = {k: random_observations(_dim(specs[k]), specs[k].dtype.as_numpy_dtype)
           for k in names}
    expected = model.mu(x_of([tf.constant(obs[k]) for k in names])).numpy()
    return f"{CHECK_OBS} random observations", run(**obs)["action"], expected


def _obs_dtype(model):
    """The numpy dtype of the policy's observation input (a dict of them for Dict
    observations): uint8 for raw frames, float32 otherwise."""
    spec = obs_spec_of(model)
    if isinstance(spec, dict):
        return {k: v.dtype.as_numpy_dtype for k, v in spec.items()}
    return spec.dtype.as_numpy_dtype


def _rebuilt_env(fpath: str) -> tuple:
    """``(env, max_ep_len)``: the run's environment rebuilt from config.json, or
    ``(None, None)`` if it cannot be."""
    from spinup_tf2 import envs

    config = rundir.read_config(fpath) or {}
    ref = envs.ref_of(config)
    try:
        envs.check_trusted(ref, f"{fpath}'s config.json", fpath)
        return (envs.make(envs.with_state(ref, envs.read_state(fpath, ref))),
                int(config.get("max_ep_len") or 1000))
    except Exception:  # not rebuildable, or anything its constructor raises
        return None, None


def _load_back(fmt: str, path: str, out: str) -> tuple:
    """``(runtime, run)`` of the file just written, by its format's runtime; a file that
    runtime cannot load is a :class:`SpinupError` (the converters write temporary files of
    their own, which a full disk or a file-size limit cuts short without a word)."""
    try:
        return (_onnx_runner if fmt == "onnx" else _tflite_runner)(path)
    except Exception as err:  # a runtime may raise anything for a damaged model
        import tempfile

        first = error_line(err)
        raise SpinupError(f"The {fmt} file the converter made does not load back "
                          f"({first}). The converter writes temporary "
                          f"files (a copy of the policy in {tempfile.gettempdir()}), which a "
                          f"full disk or a file-size limit cuts short. Nothing was written to "
                          f"{out}. Free space there, then export again.") from None


def _tflite_runner(path: str):
    """``(runtime, run)`` as :func:`_onnx_runner`, with LiteRT's interpreter."""
    try:
        from ai_edge_litert.interpreter import Interpreter

        runtime = "LiteRT interpreter"
    except ImportError:  # TensorFlow's own (deprecated) copy of it
        Interpreter = import_tensorflow().lite.Interpreter
        runtime = "TF Lite interpreter (TensorFlow)"
    with quiet_stderr():
        signature = Interpreter(model_path=path).get_signature_runner()

    def run(**inputs):
        with quiet_stderr():  # LiteRT announces its XNNPACK delegate at the first call
            return signature(**inputs)

    return runtime, run


def _dim(spec) -> int | tuple:
    """An observation's width, or its shape if it has more than one axis."""
    shape = tuple(int(d) for d in spec.shape[1:])
    return shape[0] if len(shape) == 1 else shape


def random_observations(obs_dim: int | tuple, dtype) -> np.ndarray:
    """:data:`CHECK_OBS` observations to check an export on: normal with scale 3 (float),
    or uniform over 0..255 (uint8 images, ``obs_dim`` their shape)."""
    rng = np.random.default_rng(0)
    if np.dtype(dtype) == np.uint8:
        return rng.integers(0, 256, size=(CHECK_OBS, *obs_dim), dtype=np.uint8)
    shape = obs_dim if isinstance(obs_dim, tuple) else (obs_dim,)
    return rng.normal(0.0, 3.0, size=(CHECK_OBS, *shape)).astype(np.float32)


def _check_names(names: list, memory: bool, fpath: str) -> None:
    """Refuse Dict entries named as the exported graph's other inputs and outputs: ONNX and
    TF Lite name every tensor once."""
    taken = ["action"] + (["state", "next_state"] if memory else [])
    clash = sorted(set(names) & set(taken))
    if clash:
        raise SpinupError(
            f"The run in {fpath} observes a Dict with the entr{'ies' if len(clash) > 1 else 'y'}"
            f" {', '.join(map(repr, clash))}; the exported policy takes one input per entry and "
            f"names its own tensors {', '.join(map(repr, taken))}, and an ONNX or TF Lite file "
            f"names each tensor once. Nothing was written. Rename the entry in the environment "
            f"(a gymnasium ObservationWrapper) and train again, or ship the SavedModel "
            f"(tf2_save/), which takes the Dict as it is.")


def _normalizes(fpath: str) -> bool:
    return bool((rundir.read_config(fpath) or {}).get("normalize_obs", False))


def describe(result: dict) -> str:
    """What the command line prints about an export (the dict ``export_policy`` returns)."""
    kind = f"ONNX (opset {ONNX_OPSET})" if result["format"] == "onnx" else "TF Lite"
    act = ("int64 [batch] (the index of the most likely action)" if result["discrete"]
           else f"{result['dtype']} [batch, {', '.join(map(str, result['act_shape']))}]")
    n = result.get("n_checked", CHECK_OBS)
    check = (f"{n - result['max_abs_diff']}/{n} actions equal"
             if result["discrete"] else f"max |difference| {result['max_abs_diff']:.2g}")
    return "\n".join([
        f"Wrote the deterministic policy of {result['saved_model']} to {result['path']}: "
        f"{kind}, {result['bytes']:,} bytes.",
        *_describe_inputs(result["obs_dim"], result["normalize_obs"]),
        *([f"  input  'state':  float32 [batch, {result['state_size']}], the memory: zeros at "
           f"an episode's start, then the 'next_state' of the step before"]
          if result.get("state_size") else []),
        f"  output 'action': {act}",
        *([f"  output 'next_state': float32 [batch, {result['state_size']}], the memory after "
           f"this observation"] if result.get("state_size") else []),
        f"Checked with {result['runtime']} against the SavedModel's mu on {result['checked']}"
        f"{', carrying the state' if result.get('state_size') else ''}: {check}.",
    ])


def _describe_inputs(obs_dim, normalizes: bool) -> list:
    """The lines :func:`describe` prints for the observation input(s)."""
    inside = " (the run's observation normalizer is inside)" if normalizes else ""
    if isinstance(obs_dim, dict):  # Dict observations: one input per key
        return [f"  input  {k!r}: float32 [batch, "
                f"{', '.join(map(str, d if isinstance(d, (tuple, list)) else (d,)))}], the "
                f"observation's {k!r} entry" for k, d in obs_dim.items()] + (
            ["  (the entries are concatenated inside, in the training run's key order)"
             + inside])
    if isinstance(obs_dim, (tuple, list)):
        return [f"  input  'obs':    uint8 [batch, {', '.join(map(str, obs_dim))}], the "
                f"environment's raw frames{inside}"]
    return [f"  input  'obs':    float32 [batch, {obs_dim}], raw observations{inside}"]


def main(argv=None) -> int:
    """``export DIR --format onnx|tflite [--out PATH] [--itr N]``."""
    parser = argparse.ArgumentParser(
        prog="python -m spinup_tf2.run export",
        description="Export the deterministic policy of a saved run as ONNX or TF Lite.")
    parser.add_argument("fpath", help="the output directory of one run")
    parser.add_argument("--format", "-f", dest="fmt", metavar="{onnx,tflite}",
                        help="the file format (default: from the suffix of --out)")
    parser.add_argument("--out", "-o", help="the file to write (default: DIR/policy.onnx or "
                                            "DIR/policy.tflite)")
    parser.add_argument("--itr", "-i", type=int, default=-1,
                        help="export tf2_save<N> instead of the last save")
    parser.add_argument("--trust_saved_model", action="store_true",
                        help="export even a SavedModel holding operations a policy does not "
                             "need (only for run directories you trust)")
    args = parser.parse_args(argv)

    def command():
        print(describe(export_policy(args.fpath, args.fmt, args.out,
                                     rundir.itr_of(args.itr),
                                     args.trust_saved_model)))

    return cli_main(command)

if __name__ == "__main__":
    sys.exit(main())
