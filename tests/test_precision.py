"""bfloat16 products (``sac(precision='bfloat16')``, ``--precision bfloat16``): the hidden
layers' products against numpy's, what stays float32, the CPU check, and a run's exact
resume, its float32 SavedModel and exports. On a CPU without a bfloat16 multiply the runs'
tests check that such a run is refused before anything is written, as a user there sees it."""

import os

import gymnasium as gym
import keras
import ml_dtypes
import numpy as np
import pytest
import tensorflow as tf
from helpers import (
    TINY,
    assert_clean_error,
    pendulum,
    rows,
    run_main,
    run_tiny,
    small_critics,
    straight_and_resumed,
)

from spinup_tf2.algos.sac import core
from spinup_tf2.algos.sac.crossq import CrossQActorCritic
from spinup_tf2.algos.sac.simbav2 import SimbaV2ActorCritic
from spinup_tf2.arguments import BF16_CPU_FLAGS
from spinup_tf2.checks import check_precision, cpu_flags
from spinup_tf2.errors import SpinupError
from spinup_tf2.family import FAMILY
from spinup_tf2.policy.export import export_policy

HAS_BF16 = bool(cpu_flags()[1] & set(BF16_CPU_FLAGS))
# /proc/cpuinfo's lines of a CPU without a bfloat16 multiply (an AVX2-only AMD EPYC, Zen 2).
AVX2_EPYC = ("processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC 7B12\n"
             "flags\t\t: fpu vme sse sse2 ssse3 fma sse4_1 sse4_2 avx f16c avx2 bmi2 sha_ni\n")
AVX512_BF16 = AVX2_EPYC.replace("7B12", "9B14").replace("sha_ni", "avx512f avx512_bf16 sha_ni")


def bf16(x: np.ndarray) -> np.ndarray:
    """``x`` rounded to bfloat16 (to nearest even), back in float64."""
    return x.astype(np.float32).astype(ml_dtypes.bfloat16).astype(np.float64)


def test_a_hidden_layer_multiplies_in_bfloat16_only_inside_products():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(64, 300)).astype(np.float32)
    layer = core.Dense(200, activation=tf.nn.relu)
    layer.build((None, 300))
    layer.kernel.assign((rng.normal(size=(300, 200)) / np.sqrt(300)).astype(np.float32))
    layer.bias.assign(rng.normal(size=200).astype(np.float32))
    w, b = layer.kernel.numpy().astype(np.float64), layer.bias.numpy().astype(np.float64)
    exact = x.astype(np.float64) @ w + b
    y32 = layer(tf.constant(x)).numpy()
    np.testing.assert_allclose(y32, np.maximum(exact, 0), rtol=1e-5, atol=1e-5)
    with core.products("bfloat16"):
        y16 = layer(tf.constant(x)).numpy()
    assert y16.dtype == np.float32
    # bfloat16 inputs and kernel, the product (summed in float32) rounded to bfloat16 (8
    # significant bits: within one bfloat16 step of the exact product's rounding, as the
    # float32 sum may fall on the other side of a rounding boundary), then the float32 bias
    # and activation.
    product = bf16(x) @ bf16(w)
    summing = 2 ** -20 * (np.abs(bf16(x)) @ np.abs(bf16(w)))  # float32 sums of 300 terms
    assert np.all(np.abs(y16 - np.maximum(bf16(product) + b, 0))
                  <= 2 ** -7 * np.abs(product) + summing + 1e-6)
    # A real difference from float32: the rounding of a 300-term product shows.
    assert np.max(np.abs(y16 - y32)) > 1e-3
    with core.products("float32"):
        np.testing.assert_array_equal(layer(tf.constant(x)).numpy(), y32)


def test_the_gradients_of_bfloat16_products_reach_float32_weights():
    layer = core.Dense(64)
    layer.build((None, 32))
    x = tf.constant(np.random.default_rng(1).normal(size=(128, 32)), tf.float32)
    grads = {}
    for precision in ("float32", "bfloat16"):
        with tf.GradientTape() as tape, core.products(precision):
            loss = tf.reduce_sum(tf.square(layer(x)))
        grads[precision] = tape.gradient(loss, layer.trainable_variables)
    for g32, g16, v in zip(grads["float32"], grads["bfloat16"], layer.trainable_variables,
                           strict=True):
        assert g16.dtype == v.dtype == tf.float32
        rel = np.linalg.norm(g16 - g32) / np.linalg.norm(g32)
        assert 0 < rel < 2e-2, rel


@pytest.mark.parametrize("make, outputs", [(core.MLPActorCritic, ["mu", "log_std", "q1", "q2"]),
                                           (CrossQActorCritic, ["mu", "log_std", "q1", "q2"]),
                                           (SimbaV2ActorCritic, ["pi", "pi", "q1", "q2"])])
def test_only_hidden_layers_multiply_in_bfloat16(make, outputs):
    """The policy's mean and log std and each critic's Q value (SimbaV2's: its 101 bins'
    logits) come out of Keras' own Dense, float32 in every precision; every other Dense
    is a hidden :class:`core.Dense`."""
    env = gym.make("HalfCheetah-v5")
    ac = make(env.observation_space, env.action_space)
    found = [(model.name, layer) for model in ac.models for layer in model._flatten_layers()
             if isinstance(layer, keras.layers.Dense)]
    last = [(name, layer) for name, layer in found if not isinstance(layer, core.Dense)]
    assert sorted(layer.name if name == "pi" and layer.name in ("mu", "log_std") else name
                  for name, layer in last) == sorted(outputs)
    assert {layer.units for _, layer in last} <= {6, 1, 101}  # 6: HalfCheetah's actions
    assert all(layer.units >= 64 for _, layer in found if isinstance(layer, core.Dense))


def test_the_cpu_check_reads_lscpus_flags(tmp_path):
    plain, bf16_cpu = tmp_path / "avx2", tmp_path / "bf16"
    plain.write_text(AVX2_EPYC)
    bf16_cpu.write_text(AVX512_BF16)
    assert cpu_flags(str(plain)) == ("AMD EPYC 7B12", set(AVX2_EPYC.split(": ")[-1].split()))
    with pytest.raises(SpinupError) as err:
        check_precision("bfloat16", str(plain))
    text = str(err.value)
    for words in ("precision='bfloat16'", "AMD EPYC 7B12", "avx2", "avx512_bf16 or amx_bf16",
                  "Nothing was written", "precision='float32'"):
        assert words in text, (words, text)
    assert "\n" not in text
    check_precision("bfloat16", str(bf16_cpu))  # no error
    check_precision("float32", str(plain))
    with pytest.raises(SpinupError, match="unknown"):
        check_precision("bfloat16", str(tmp_path / "no such file"))


def test_an_unknown_precision_is_refused_before_anything_is_written(tmp_path, capfd):
    data = tmp_path / "data"
    res = run_main(capfd, "sac", "--env", "Pendulum-v1", "--precision", "float16",
                   "--data_dir", str(data), "--epochs", "1")
    assert_clean_error(res, "float16", "'float32'", "'bfloat16'")
    assert not data.exists()


def refused_here(tmp_path, **kwargs) -> bool:
    """On a CPU without a bfloat16 multiply: True, after checking that a bfloat16 run is
    refused in one paragraph with nothing written. Elsewhere False."""
    if HAS_BF16:
        return False
    with pytest.raises(SpinupError, match="no bfloat16 multiply"):
        run_tiny(tmp_path / "refused", precision="bfloat16", **kwargs)
    assert not (tmp_path / "refused").exists()
    return True


@pytest.mark.slow  # three runs (18 s): the default run is at its 15 minutes
def test_a_bfloat16_run_resumes_exactly_and_differs_from_float32(tmp_path):
    if refused_here(tmp_path):
        return
    straight, resumed = straight_and_resumed(tmp_path, precision="bfloat16", alpha="auto")
    assert straight == resumed
    # The same run in float32: the same columns, other numbers once the updates begin.
    float32 = rows(run_tiny(tmp_path / "f32", epochs=2, alpha="auto"))
    assert float32[0] == straight[0]
    assert float32[1][-1]["LossQ1"] != straight[1][-1]["LossQ1"]


def saved_dtypes(run: str) -> set:
    """Every dtype the ops of a run's SavedModel produce, over all its functions."""
    from tensorflow.core.protobuf import saved_model_pb2

    sm = saved_model_pb2.SavedModel()
    with open(os.path.join(run, "tf2_save", "saved_model.pb"), "rb") as f:
        sm.ParseFromString(f.read())
    graph = sm.meta_graphs[0].graph_def
    nodes = list(graph.node) + [n for fn in graph.library.function for n in fn.node_def]
    return {tf.dtypes.as_dtype(v.type).name for n in nodes for k, v in n.attr.items()
            if k in ("T", "dtype", "DstT", "SrcT") and v.type}


def test_a_bfloat16_run_saves_and_exports_float32(tmp_path):
    if refused_here(tmp_path, normalize_obs=True):
        return
    run = run_tiny(tmp_path / "run", precision="bfloat16", normalize_obs=True,
                   **dict(TINY, max_ep_len=100))
    assert "bfloat16" not in saved_dtypes(run) and "float32" in saved_dtypes(run)
    for fmt in ("onnx", "tflite"):
        result = export_policy(run, fmt, str(tmp_path / f"policy.{fmt}"))
        assert result["max_abs_diff"] <= 1e-5


@pytest.mark.slow
@pytest.mark.parametrize("name", [m.name for m in FAMILY])
def test_every_variant_trains_in_bfloat16(tmp_path, name):
    """Each member's own function with bfloat16 products: an epoch with updates, finite
    losses, and a float32 SavedModel (or, on a CPU without a bfloat16 multiply, the
    refusal). Critics narrow and few (:func:`helpers.small_critics`): at the members' own
    widths CrossQ's 1024 and SimbaV2's 512 took 17 and 95 s of this test's 170."""
    import spinup_tf2

    algo = getattr(spinup_tf2, name)
    kw = dict(epochs=1, steps_per_epoch=300, start_steps=100, update_after=100,
              num_test_episodes=1, ac_kwargs=dict(hidden_sizes=(32, 32), **small_critics(name)),
              precision="bfloat16",
              logger_kwargs=dict(output_dir=str(tmp_path / "run"), quiet=True))
    if not HAS_BF16:
        with pytest.raises(SpinupError, match="no bfloat16 multiply"):
            algo(pendulum, **kw)
        return
    algo(pendulum, **kw)
    _, (row,) = rows(str(tmp_path / "run"))
    assert np.isfinite(float(row["LossQ1"])) and np.isfinite(float(row["LossPi"]))
    assert "bfloat16" not in saved_dtypes(str(tmp_path / "run"))
