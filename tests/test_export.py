"""Exported policies (ONNX, TF Lite) loaded with their own runtimes and compared
with the SavedModel's deterministic action, for continuous and discrete runs,
with and without observation normalization; and the export command's errors."""

import json
import os
import re
import shutil

import gymnasium as gym
import numpy as np
import onnxruntime as ort
import pytest
import tensorflow as tf
from ai_edge_litert.interpreter import Interpreter
from helpers import TINY, assert_clean_error, cli

from spinup_tf2 import sac
from spinup_tf2.errors import SpinupError
from spinup_tf2.policy.export import export_policy

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RUNS = {"pendulum": ("Pendulum-v1", False), "pendulum_norm": ("Pendulum-v1", True),
        "cartpole": ("CartPole-v1", False), "cartpole_norm": ("CartPole-v1", True)}


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """One short saved run per entry of RUNS."""
    root = tmp_path_factory.mktemp("export_runs")
    out = {}
    for key, (env_name, normalize) in RUNS.items():
        out[key] = str(root / key)
        sac(lambda: gym.make(env_name), epochs=1, normalize_obs=normalize,
            **dict(TINY, max_ep_len=100), logger_kwargs=dict(output_dir=out[key]))
    return out


def observations(obs_dim, n=100, seed=1):
    """Random observations, wider than the ones seen in training, so that the
    normalizer's clipping and the squashing are exercised too."""
    return np.random.default_rng(seed).normal(0.0, 5.0, size=(n, obs_dim)).astype(np.float32)


def run_onnx(path, obs):
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    (inp,), (out,) = session.get_inputs(), session.get_outputs()
    assert (inp.name, inp.shape) == ("obs", ["batch", obs.shape[1]])
    assert out.name == "action"
    return session.run(None, {"obs": obs})[0]


def run_tflite(path, obs):
    interpreter = Interpreter(model_path=path)
    (inp,) = interpreter.get_input_details()
    assert list(inp["shape_signature"]) == [-1, obs.shape[1]]
    interpreter.resize_tensor_input(inp["index"], list(obs.shape))
    interpreter.allocate_tensors()
    interpreter.set_tensor(inp["index"], obs)
    interpreter.invoke()
    return interpreter.get_tensor(interpreter.get_output_details()[0]["index"])


@pytest.mark.parametrize("fmt", ["onnx", "tflite"])
@pytest.mark.parametrize("key", list(RUNS))
def test_export_reproduces_savedmodel_mu(runs, key, fmt, tmp_path):
    out = str(tmp_path / f"policy.{fmt}")
    result = export_policy(runs[key], fmt, out)
    assert result["path"] == out and os.path.getsize(out) == result["bytes"] > 1_000
    assert sorted(os.listdir(tmp_path)) == [f"policy.{fmt}"]  # nothing partial left

    model = tf.saved_model.load(os.path.join(runs[key], "tf2_save"))
    obs_dim = 3 if key.startswith("pendulum") else 4
    obs = observations(obs_dim)
    expected = model.mu(tf.constant(obs)).numpy()
    actions = (run_onnx if fmt == "onnx" else run_tflite)(out, obs)
    assert actions.shape == expected.shape and actions.dtype == expected.dtype
    if key.startswith("cartpole"):  # discrete: the argmax action index
        assert actions.dtype == np.int64 and actions.shape == (100,)
        np.testing.assert_array_equal(actions, expected)
        assert len(set(expected.tolist())) == 2  # both actions occur: a real comparison
    else:
        assert np.max(np.abs(actions - expected)) <= 1e-5
        assert np.std(expected) > 1e-3  # the policy is not a constant
    assert result["normalize_obs"] == RUNS[key][1]


def test_normalized_runs_have_statistics_that_matter(runs):
    """What makes the comparison above bite for ``normalize_obs`` runs: their
    observation statistics are far from (mean 0, var 1), so a file that left the
    normalizer out would give other actions than the SavedModel's mu."""
    model = tf.saved_model.load(os.path.join(runs["pendulum_norm"], "tf2_save"))
    stats = {v.name.split("/")[-1].split(":")[0]: v.numpy() for v in model.variables_to_save
             if v.name.split("/")[-1].split(":")[0] in ("mean", "var")}
    assert set(stats) == {"mean", "var"}, [v.name for v in model.variables_to_save]
    assert np.max(np.abs(stats["mean"])) > 0.1 or np.max(np.abs(stats["var"] - 1)) > 0.1


def test_export_command_prints_what_it_wrote(runs):
    res = cli("export", runs["cartpole_norm"], "--format", "tflite")
    assert res.returncode == 0, res.stderr[-2000:]
    path = os.path.join(runs["cartpole_norm"], "policy.tflite")
    assert f"to {path}: TF Lite, {os.path.getsize(path):,} bytes." in res.stdout
    assert "int64 [batch] (the index of the most likely action)" in res.stdout
    assert "observation normalizer is inside" in res.stdout
    # Episodes of CartPole-v1, 3 and more until 100 steps, every action equal.
    found = re.search(r"on (\d+) episodes \((\d+) steps\): (\d+)/(\d+) actions equal",
                      res.stdout)
    assert found, res.stdout
    episodes, n = int(found.group(1)), int(found.group(2))
    assert episodes >= 3 and n >= 100 and found.group(3) == found.group(4) == str(n)
    assert res.stderr == ""  # TensorFlow's start-up noise kept out


def test_export_errors_are_one_paragraph(runs, tmp_path):
    run = runs["pendulum"]
    empty = tmp_path / "empty"
    empty.mkdir()
    assert_clean_error(cli("export", str(empty), "-f", "onnx"), "No saved model (tf2_save/)")
    assert_clean_error(cli("export", run, "--format", "pt"), "'pt' is not an export format",
                       "onnx, tflite")
    assert_clean_error(cli("export", run), "--format onnx or --format tflite")
    assert_clean_error(cli("export", run, "-f", "onnx", "-o", str(tmp_path / "p.tflite")),
                       "does not end in .onnx")
    blocker = tmp_path / "file"
    blocker.write_text("")
    res = cli("export", run, "-f", "onnx", "-o", str(blocker / "p.onnx"))
    assert_clean_error(res, "cannot be a directory", str(blocker))
    assert_clean_error(cli("export", run, "-f", "tflite", "--itr", "7"), "no tf2_save7")
    assert sorted(os.listdir(tmp_path)) == ["empty", "file"]
    assert not [f for f in os.listdir(run) if f.startswith("policy")]


def test_missing_extra_names_it(runs):
    """Without tf2onnx (hidden from import, as if not installed)."""
    import subprocess
    import sys

    code = ("import sys; sys.modules['tf2onnx'] = None; from spinup_tf2.run import main; "
            f"sys.exit(main(['run', 'export', {runs['pendulum']!r}, '-f', 'onnx']))")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert_clean_error(res, "needs tf2onnx", "[export]")


def test_export_policy_raises_for_bad_input(runs):
    with pytest.raises(SpinupError, match="not an export format"):
        export_policy(runs["pendulum"], "savedmodel")


def test_bundled_halfcheetah_policy_exports(tmp_path):
    """The policy README's examples use (data/benchmarks/.../sac-halfcheetah-v5_s50)."""
    run = os.path.join(REPO, "data", "benchmarks", "sac-halfcheetah-v5", "sac-halfcheetah-v5_s50")
    result = export_policy(run, out=str(tmp_path / "hc.onnx"))
    assert (result["format"], result["obs_dim"], result["act_shape"]) == ("onnx", 17, [6])
    assert result["max_abs_diff"] <= 1e-5


def test_a_trained_crossq_policy_exports_within_1e_5_where_it_acts(tmp_path):
    """The bundled CrossQ Hopper-v5 policy (seed 20, 100k steps): its files act within
    1e-5 of the SavedModel over 3 episodes of Hopper-v5, which rebuilt from config.json.
    (On normal(0, 3) noise, far outside what the policy meets, float rounding reached
    1.0e-5 in ONNX and 1.2e-5 in TF Lite, and the export was refused.)"""
    run = os.path.join(REPO, "data", "benchmarks", "crossq-hopper-v5", "crossq-hopper-v5_s20")
    for fmt in ("onnx", "tflite"):
        result = export_policy(run, fmt, str(tmp_path / f"hopper.{fmt}"))
        assert result["checked"].startswith("3 episodes (") and result["n_checked"] >= 1000
        assert (result["obs_dim"], result["act_shape"]) == (11, [3])
        assert result["max_abs_diff"] <= 1e-5


def test_without_a_rebuildable_environment_the_check_is_on_random_observations(runs,
                                                                               tmp_path):
    """A run whose config.json names no environment (or one that cannot be made here)."""
    run = str(tmp_path / "run")
    shutil.copytree(runs["pendulum_norm"], run)
    with open(os.path.join(run, "config.json")) as f:
        config = json.load(f)
    config.update(env_name=None, env_spec=None, env_fn=None)
    with open(os.path.join(run, "config.json"), "w") as f:
        json.dump(config, f)
    result = export_policy(run, "onnx", str(tmp_path / "p.onnx"))
    assert result["checked"] == "100 random observations" and result["n_checked"] == 100
    assert result["max_abs_diff"] <= 1e-5
