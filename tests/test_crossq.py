"""CrossQ (``actor_critic='crossq'``): Batch Renormalization against its formulas, and the
variant through the real sac(): no target networks, the policy on every third critic
step, Adam's beta_1 0.5, the running statistics checkpointed by name and resumed exactly,
the SavedModel in inference mode, and what it refuses."""
import os

import gymnasium as gym
import numpy as np
import pytest
import tensorflow as tf
from helpers import TINY, pendulum, run_tiny, straight_and_resumed

from spinup_tf2.algos.sac import crossq
from spinup_tf2.errors import SpinupError

SMALL = dict(hidden_sizes=(16, 16), critic_hidden_sizes=(32, 32))


def test_batch_renorm_is_batch_norm_during_warmup_then_renormalises():
    rng = np.random.default_rng(0)
    x = (rng.normal(size=(64, 3)) * [1.0, 4.0, 0.1] + [0.0, 2.0, -1.0]).astype(np.float32)
    layer = crossq.BatchRenorm(momentum=0.9, warmup_steps=2)
    layer.build(x.shape)
    # Inference before any training: the initial running statistics (mean 0, variance 1).
    np.testing.assert_allclose(layer(x).numpy(), x / np.sqrt(1 + 1e-3), rtol=1e-5)
    # Training during the warm-up: plain batch normalisation; the running statistics move.
    mean, var = x.mean(0), x.var(0)
    np.testing.assert_allclose(layer(x, training=True).numpy(),
                               (x - mean) / np.sqrt(var + 1e-3), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(layer.moving_mean.numpy(), 0.1 * mean, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(layer.moving_var.numpy(), 0.9 + 0.1 * var, rtol=1e-5)
    layer(x, training=True)
    assert int(layer.steps.numpy()) == 2
    # After the warm-up: the batch's normalisation corrected towards the running one. Where
    # r and d are inside their clips, the result is the running normalisation exactly.
    layer.moving_mean.assign(mean + [0.1, -0.2, 0.01])
    layer.moving_var.assign(var * [1.5, 0.8, 2.0])
    ra_mean, ra_std = layer.moving_mean.numpy(), np.sqrt(layer.moving_var.numpy() + 1e-3)
    np.testing.assert_allclose(layer(x, training=True).numpy(), (x - ra_mean) / ra_std,
                               rtol=1e-4, atol=1e-5)
    # Where the running statistics are far off, r is clipped at [1/3, 3] and d at [-5, 5].
    layer.moving_mean.assign(mean - 10 * np.sqrt(var))
    layer.moving_var.assign(var * [100.0, 0.01, 1.0])
    ra_std = np.sqrt(var * [100.0, 0.01, 1.0] + 1e-3)
    std = np.sqrt(var + 1e-3)
    r = np.clip(std / ra_std, 1 / 3, 3)
    d = np.clip(10 * np.sqrt(var) / ra_std, -5, 5)
    assert r[0] == 1 / 3 and r[1] == 3 and d[0] < 5 and d[1] == d[2] == 5
    np.testing.assert_allclose(layer(x, training=True).numpy(), (x - mean) / std * r + d,
                               rtol=1e-4, atol=1e-4)


def test_batch_renorm_passes_no_gradient_through_r_and_d():
    """The batch's statistics carry gradients; r and d are constants (Ioffe 2017)."""
    rng = np.random.default_rng(1)
    x = tf.constant(rng.normal(size=(32, 2)), tf.float32)
    layer = crossq.BatchRenorm(warmup_steps=0)
    layer.build(x.shape)
    layer.moving_var.assign([4.0, 0.25])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.reduce_sum(layer(x, training=True) * tf.range(32.0)[:, None])
    g = tape.gradient(y, x).numpy()
    # Through batch normalisation the gradient of a weighted sum sums to 0 per feature.
    np.testing.assert_allclose(g.sum(0), 0.0, atol=1e-3)


def two_layer_step(x, kernels, norms):
    """A compiled step: the output of ``x -> (Dense -> relu -> BatchRenorm) x 2`` and the
    gradients of a loss on it for the kernels, gammas and betas."""
    weights = kernels + [w for n in norms for w in (n.gamma, n.beta)]

    @tf.function
    def step():
        with tf.GradientTape() as tape:
            h = norms[0](tf.nn.relu(x @ kernels[0]), training=True)
            h = norms[1](tf.nn.relu(h @ kernels[1]), training=True)
            loss = tf.reduce_mean((tf.nn.relu(h) @ kernels[2]) ** 2)
        return [h, *tape.gradient(loss, weights)]
    return step


@pytest.mark.parametrize("batch,width,warmup", [(512, 128, 0), (200, 64, 10_000), (6, 32, 0)])
def test_batch_renorm_fused_gradient_is_tensorflows_bit_for_bit(batch, width, warmup):
    """renorm_train's gradient (fewer passes over the batch) against TensorFlow's own
    gradient of the same layer, in a compiled step through two Dense -> relu -> BatchRenorm
    layers, as CrossQ's critics use them: the output, every gradient and the running
    statistics are equal bit for bit, with the renormalisation on (warm-up 0) and off."""
    rng = np.random.default_rng(batch)
    x = tf.constant(rng.normal(size=(batch, 5)) * 2 + 1, tf.float32)
    init = [rng.normal(size=(5, width)) / 2, rng.normal(size=(width, width)) / width ** 0.5,
            rng.normal(size=(width, 1))]
    stats = [(rng.normal(size=width) * 0.3, 1 + rng.random(width)) for _ in range(2)]
    results = {}
    for fused in (False, True):
        kernels = [tf.Variable(k, dtype=tf.float32) for k in init]
        norms = [crossq.BatchRenorm(warmup_steps=warmup, fused_gradient=fused) for _ in range(2)]
        for norm, (mean, var) in zip(norms, stats, strict=True):
            norm.build((None, width))
            norm.moving_mean.assign(mean.astype(np.float32))
            norm.moving_var.assign(var.astype(np.float32))
        out = [t.numpy() for t in two_layer_step(x, kernels, norms)()]
        results[fused] = out + [v.numpy() for n in norms for v in (n.moving_mean, n.moving_var)]
    assert all(np.array_equal(a, b) for a, b in zip(results[False], results[True], strict=True))
    assert np.abs(results[True][1]).sum() > 0  # the first kernel's gradient went through both


def test_crossq_trains_through_sac_without_targets_and_resumes_exactly(tmp_path):
    (header, r), resumed = straight_and_resumed(tmp_path, actor_critic="crossq",
                                                ac_kwargs=SMALL, alpha="auto")
    assert resumed == (header, r) and len(r) == 2
    straight = str(tmp_path / "straight")
    with np.load(os.path.join(straight, "train_state", "arrays.npz")) as arrays:
        assert not any(k.startswith("var:ac_targ") for k in arrays.files)
        # 700 critic updates; the policy and alpha on every third (234).
        def steps(name):
            return round(float(np.log(arrays[f"var:{name}"]) / np.log(0.999)))
        assert steps("q_optimizer/beta_2_power") == 700
        assert steps("pi_optimizer/beta_2_power") == 234
        assert steps("tuner/optimizer/beta_2_power") == 234
        # Running statistics are kept by name, and they moved; each critic BatchRenorm counted
        # 700 training calls, each of the actor's 234 (its policy loss, on policy steps only).
        names = [k for k in arrays.files if k.startswith("var:ac/q1/") and "moving_mean" in k]
        assert len(names) == 3
        assert all(np.abs(arrays[k]).max() > 0 for k in names)
        counts = [int(arrays[k]) for k in arrays.files
                  if k.startswith(("var:ac/pi/", "var:ac/q1/")) and k.endswith("/steps")]
        assert counts == [234] * 3 + [700] * 3


def test_updates_without_a_policy_step_skip_its_part_and_log_its_latest():
    """On the two critic-only updates of every three the policy's loss is not computed (the
    actor's statistics stay), and LossPi and LogPi repeat the latest policy step's."""
    from spinup_tf2.algos.sac.sac import make_optimizers, make_update
    from spinup_tf2.algos.sac.variants import VARIANTS

    CROSSQ = VARIANTS["crossq"]

    env = gym.make("Pendulum-v1")
    ac = crossq.CrossQActorCritic(env.observation_space, env.action_space, **SMALL)
    pi_opt, q_opt = make_optimizers(ac, 1e-3, CROSSQ.adam_betas)
    update = tf.function(make_update(ac, None, pi_opt, q_opt, 0.2, 0.995, variant=CROSSQ))
    rng = np.random.default_rng(3)
    batch = [rng.normal(size=shape).astype(np.float32)
             for shape in ((8, 3), (8, 1), (8,), (8, 3), (8,), (16, 1))]
    actor_steps = ac.pi.net.layers[0].steps
    infos = []
    for _ in range(4):
        infos.append({k: v.numpy() for k, v in update(*batch).items()})
    assert int(actor_steps.numpy()) == 2 and int(update.python_function.variables["count"]) == 4
    for i in (1, 2):
        assert infos[i]["LossPi"] == infos[0]["LossPi"]
        np.testing.assert_array_equal(infos[i]["LogPi"], infos[0]["LogPi"])
    assert infos[3]["LossPi"] != infos[0]["LossPi"]  # a new policy step, after critic steps
    assert all(infos[i]["LossQ1"] != infos[0]["LossQ1"] for i in (1, 2, 3))


def test_the_saved_policy_uses_the_running_statistics(tmp_path):
    """tf2_save's deterministic action is the actor at its running statistics (worked out
    in numpy from the checkpoint), not at the batch's."""
    out = run_tiny(tmp_path / "run", actor_critic="crossq", ac_kwargs=SMALL)
    obs = np.random.default_rng(2).normal(size=(4, 3)).astype(np.float32)
    mu = tf.saved_model.load(os.path.join(out, "tf2_save")).signatures["mu"](x=obs)
    mu = next(iter(mu.values())).numpy()
    with np.load(os.path.join(out, "train_state", "arrays.npz")) as arrays:
        w = {k[len("var:ac/pi/"):]: arrays[k] for k in arrays.files if k.startswith("var:ac/pi/")}
    assert np.abs(w["net/1/moving_mean"]).max() > 0.01  # the statistics moved in training

    def renorm(x, i):
        return (w[f"net/{i}/gamma"] * (x - w[f"net/{i}/moving_mean"])
                / np.sqrt(w[f"net/{i}/moving_var"] + 1e-3) + w[f"net/{i}/beta"])

    h = renorm(obs, 1)
    for dense, norm in ((2, 3), (4, 5)):
        h = renorm(np.maximum(h @ w[f"net/{dense}/kernel"] + w[f"net/{dense}/bias"], 0), norm)
    expected = 2.0 * np.tanh(h @ w["mu_layer/kernel"] + w["mu_layer/bias"])
    np.testing.assert_allclose(mu, expected, rtol=1e-4, atol=1e-5)


class Images(gym.Env):
    """A task with image observations (never stepped: the refusal comes first)."""
    observation_space = gym.spaces.Box(0, 255, (16, 16, 3), np.uint8)
    action_space = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)

    def reset(self, seed=None, options=None):
        return np.zeros((16, 16, 3), np.uint8), {}


@pytest.mark.parametrize("env_fn,words", [(lambda: gym.make("CartPole-v1"),
                                           "a Discrete action space"),
                                          (Images, "image observations")])
def test_crossq_refuses_what_it_cannot_take(tmp_path, env_fn, words):
    from spinup_tf2 import sac

    with pytest.raises(SpinupError, match=words) as err:
        sac(env_fn, actor_critic="crossq", **TINY,
            logger_kwargs=dict(output_dir=str(tmp_path / "run")))
    assert "Nothing was written" in str(err.value)
    assert not (tmp_path / "run" / "progress.txt").exists()


def test_crossq_runs_with_its_own_defaults(tmp_path):
    """``from spinup_tf2 import crossq``: sac() on the crossq record, with CrossQ's batch,
    learned alpha and random start where the caller gives none."""
    import json

    from spinup_tf2 import crossq as crossq_fn

    out = tmp_path / "run"
    crossq_fn(pendulum, epochs=1, steps_per_epoch=400, update_after=100,
              num_test_episodes=1, replay_size=1000, ac_kwargs=SMALL,
              logger_kwargs=dict(output_dir=str(out)))
    config = json.loads((out / "config.json").read_text())
    assert (config["actor_critic"], config["batch_size"], config["alpha"],
            config["start_steps"]) == ("CrossQActorCritic", 256, "auto", 5000)
    assert "LossAlpha" in (out / "progress.txt").read_text().splitlines()[0]


@pytest.mark.parametrize("cmd,doc,setting,flag,refusal", [
    ("crossq", "CrossQ: SAC without target networks", "critic_hidden_sizes", "--pixels",
     "CrossQ got --pixels"),
    ("tqc", "Truncated Quantile Critics", "top_quantiles_to_drop_per_net", "--recurrent",
     "TQC got --recurrent"),
    ("droq", "DroQ: SAC with dropout and layer normalization", "dropout_rate", "--pixels",
     "DroQ got --pixels"),
    ("redq", "Randomized Ensembled Double Q-learning", "subset_size", "--recurrent",
     "REDQ got --recurrent"),
])
def test_a_family_command_shows_its_settings_and_refuses_what_it_cannot_take(
        tmp_path, cmd, doc, setting, flag, refusal):
    from helpers import cli

    res = cli(cmd, "--help", cwd=tmp_path)
    assert res.returncode == 0 and doc in res.stdout and setting in res.stdout
    res = cli(cmd, "--env", "Pendulum-v1", flag, "--data_dir", str(tmp_path), cwd=tmp_path)
    assert res.returncode != 0 and refusal in res.stdout + res.stderr
    assert "Traceback" not in res.stdout + res.stderr and not list(tmp_path.rglob("*.json"))
