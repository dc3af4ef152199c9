"""Beyond Spinning Up: automatic entropy tuning, exact resume, TensorBoard, progress bar."""

import json
import os
import signal
import subprocess
import sys
import time

import gymnasium as gym
import numpy as np
import pytest
from progress_file import read_progress

from spinup_tf2 import sac
from spinup_tf2.algos.sac import core
from spinup_tf2.algos.sac import sac as sac_mod
from spinup_tf2.utils.errors import SpinupError

TINY = dict(steps_per_epoch=400, start_steps=200, update_after=100, update_every=50,
            batch_size=32, num_test_episodes=2, ac_kwargs=dict(hidden_sizes=(32, 32)))


def rows(path):
    """progress.txt without the Time column (the only one allowed to differ)."""
    header, out = read_progress(path)
    for row in out:
        row.pop("Time")
    return header, out


# ----------------------------------------------------------------- entropy tuning


def _alpha_after_updates(target_entropy, n=20):
    env = gym.make("Pendulum-v1")
    import keras
    keras.utils.set_random_seed(0)
    ac, ac_targ = sac_mod.build_actor_critics(core.MLPActorCritic, env.observation_space,
                                              env.action_space, dict(hidden_sizes=(16,)))
    pi_opt, q_opt = sac_mod.make_optimizers(ac, 1e-2)
    tuner = sac_mod.EntropyTuner(1.0, target_entropy, 1e-2)
    update = sac_mod.make_update(ac, ac_targ, pi_opt, q_opt, 0.99, 1.0, 0.995, tuner)
    assert update.logged_keys[-2:] == ("Alpha", "LossAlpha")
    block = sac_mod.make_update_block(update)
    rng = np.random.default_rng(0)
    f = np.float32
    data = (rng.normal(size=(n, 16, 3)).astype(f), rng.uniform(-2, 2, (n, 16, 1)).astype(f),
            rng.normal(size=(n, 16)).astype(f), rng.normal(size=(n, 16, 3)).astype(f),
            np.zeros((n, 16), f), rng.normal(size=(n, 32, 1)).astype(f))
    info = block(*data)
    alphas = info["Alpha"].numpy()
    assert alphas[0] == pytest.approx(1.0)  # the first update uses the initial alpha
    return float(np.exp(tuner.log_alpha.numpy())), alphas


def test_alpha_rises_when_entropy_is_below_target_and_falls_when_above():
    # A 1-D squashed Gaussian's entropy is far below +5 and far above -20.
    up, ups = _alpha_after_updates(target_entropy=5.0)
    down, downs = _alpha_after_updates(target_entropy=-20.0)
    assert up > 1.0 > down
    assert np.all(np.diff(ups) > 0) and np.all(np.diff(downs) < 0)


def test_auto_alpha_logs_columns_after_time(tmp_path):
    out = str(tmp_path / "auto")
    sac(lambda: gym.make("Pendulum-v1"), epochs=2, alpha="auto_0.5", **TINY,
        logger_kwargs=dict(output_dir=out))
    header, rs = rows(out)
    assert header[-3:] == ["Time", "Alpha", "LossAlpha"]
    assert len(header) == 30
    assert 0 < float(rs[0]["Alpha"]) < 0.5 * 1.2 and float(rs[0]["Alpha"]) != 0.5
    cfg = json.load(open(os.path.join(out, "config.json")))
    assert cfg["alpha"] == "auto_0.5" and cfg["target_entropy"] is None


@pytest.mark.parametrize("kwargs,words", [
    (dict(alpha="automatic"), ["alpha='automatic'", "'auto_<x>'"]),
    (dict(alpha="auto_-1"), ["alpha='auto_-1'"]),
    (dict(alpha="auto_x"), ["alpha='auto_x'"]),
    (dict(alpha=0.2, target_entropy=-1.0), ["target_entropy=-1.0", "fixed alpha=0.2"]),
])
def test_bad_alpha_arguments(kwargs, words, tmp_path):
    with pytest.raises(SpinupError) as err:
        sac(lambda: gym.make("Pendulum-v1"), **kwargs,
            logger_kwargs=dict(output_dir=str(tmp_path / "x")))
    for w in words:
        assert w in str(err.value)
    assert not (tmp_path / "x").exists()


# ------------------------------------------------------------------------- resume


@pytest.mark.parametrize("normalize_obs", [False, True])
def test_resume_after_finishing_two_epochs_equals_four_straight(tmp_path, normalize_obs):
    straight, resumed = str(tmp_path / "straight"), str(tmp_path / "resumed")
    kw = dict(TINY, normalize_obs=normalize_obs)
    sac(lambda: gym.make("Pendulum-v1"), epochs=4, **kw, logger_kwargs=dict(output_dir=straight))
    sac(lambda: gym.make("Pendulum-v1"), epochs=2, **kw, logger_kwargs=dict(output_dir=resumed))
    sac(lambda: gym.make("Pendulum-v1"), epochs=4, resume=True, **kw,
        logger_kwargs=dict(output_dir=resumed))
    h1, r1 = rows(straight)
    h2, r2 = rows(resumed)
    assert h1 == h2 and len(r1) == len(r2) == 4
    assert r1 == r2


KILL_SCRIPT = """
import sys, gymnasium as gym
from spinup_tf2 import sac
sac(lambda: gym.make("Pendulum-v1"), epochs=4, alpha="auto", steps_per_epoch=400,
    start_steps=200, update_after=100, update_every=50, batch_size=32, num_test_episodes=2,
    ac_kwargs=dict(hidden_sizes=(32, 32)), logger_kwargs=dict(output_dir=sys.argv[1]),
    resume=len(sys.argv) > 2)
"""


def test_kill_minus_9_then_resume_equals_straight_run(tmp_path):
    straight, killed = str(tmp_path / "straight"), str(tmp_path / "killed")
    script = tmp_path / "run.py"
    script.write_text(KILL_SCRIPT)
    subprocess.run([sys.executable, str(script), straight], check=True, capture_output=True)
    proc = subprocess.Popen([sys.executable, str(script), killed], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    progress = os.path.join(killed, "progress.txt")
    deadline = time.time() + 120
    while time.time() < deadline and proc.poll() is None:
        if os.path.exists(progress) and len(open(progress).read().splitlines()) >= 3:
            break
        time.sleep(0.01)
    assert proc.poll() is None, "the run ended before it could be killed"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    # Whatever the moment of the kill: progress.txt parses, a checkpoint loads.
    _, partial = rows(killed)
    assert 2 <= len(partial) <= 3
    import tensorflow as tf
    tf.saved_model.load(os.path.join(killed, "tf2_save"))
    subprocess.run([sys.executable, str(script), killed, "resume"], check=True,
                   capture_output=True)
    h1, r1 = rows(straight)
    h2, r2 = rows(killed)
    assert h1 == h2 and h1[-2:] == ["Alpha", "LossAlpha"]
    assert r1 == r2


def test_resume_errors(tmp_path):
    with pytest.raises(SpinupError, match="does not exist"):
        sac(lambda: gym.make("Pendulum-v1"), resume=True,
            logger_kwargs=dict(output_dir=str(tmp_path / "nothing")))
    (tmp_path / "empty").mkdir()
    with pytest.raises(SpinupError, match="no training checkpoint"):
        sac(lambda: gym.make("Pendulum-v1"), resume=True,
            logger_kwargs=dict(output_dir=str(tmp_path / "empty")))
    out = str(tmp_path / "run")
    sac(lambda: gym.make("Pendulum-v1"), epochs=1, **TINY, logger_kwargs=dict(output_dir=out))
    with pytest.raises(SpinupError) as err:
        sac(lambda: gym.make("Pendulum-v1"), epochs=2, resume=True, lr=3e-4, gamma=0.9,
            **TINY, logger_kwargs=dict(output_dir=out))
    assert "gamma: 0.99 there, 0.9 now" in str(err.value)
    assert "lr: 0.001 there, 0.0003 now" in str(err.value)
    _, r = rows(out)
    assert len(r) == 1  # the refused resume wrote nothing


# -------------------------------------------------------------------- TensorBoard


def test_tensorboard_scalars_read_back(tmp_path):
    import tensorflow as tf

    out = str(tmp_path / "tb_run")
    sac(lambda: gym.make("Pendulum-v1"), epochs=2, **TINY,
        logger_kwargs=dict(output_dir=out, tensorboard=True))
    seen = {}
    for path in tf.io.gfile.glob(os.path.join(out, "tb", "events.out.tfevents.*")):
        for event in tf.compat.v1.train.summary_iterator(path):
            for value in event.summary.value:
                seen.setdefault(value.tag, {})[event.step] = float(
                    tf.make_ndarray(value.tensor))
    assert {"EpRet/Average", "EpRet/Std", "EpRet/Max", "TestEpRet/Min", "Q1Vals/Average",
            "LossPi", "LossQ1", "EpLen", "Epoch", "Time"} <= set(seen)
    assert sorted(seen["LossPi"]) == [400, 800]
    _, r = rows(out)
    assert seen["EpRet/Average"][800] == pytest.approx(float(r[1]["AverageEpRet"]), rel=1e-5)


def test_tensorboard_name():
    from spinup_tf2.utils.logx import tensorboard_name
    assert tensorboard_name("AverageTestEpRet") == "TestEpRet/Average"
    assert tensorboard_name("MinQ1Vals") == "Q1Vals/Min"
    assert tensorboard_name("Std") == "Std" and tensorboard_name("LossPi") == "LossPi"


# ------------------------------------------------------------------- progress bar


def test_progress_bar_only_on_a_terminal(tmp_path):
    import pty

    code = ("import gymnasium as gym\nfrom spinup_tf2 import sac\n"
            "sac(lambda: gym.make('Pendulum-v1'), epochs=1, steps_per_epoch=400, "
            "start_steps=200, update_after=100, num_test_episodes=1, "
            "ac_kwargs=dict(hidden_sizes=(8,)), logger_kwargs=dict(output_dir=%r))\n")
    redirected = subprocess.run([sys.executable, "-c", code % str(tmp_path / "a")],
                                capture_output=True, text=True, check=True)
    assert "step/s" not in redirected.stderr and "Epoch 1/1" not in redirected.stderr
    master, slave = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-c", code % str(tmp_path / "b")], stdout=slave,
                            stderr=subprocess.PIPE, text=True)
    os.close(slave)
    out = b""
    while True:
        try:
            chunk = os.read(master, 4096)
        except OSError:
            break
        if not chunk:
            break
        out += chunk
    err = proc.stderr.read()
    proc.wait()
    assert proc.returncode == 0
    assert "Epoch 1/1" in err and "step/s" in err and "run ETA" in err
    assert b"AverageEpRet" in out


# ------------------------------------------------------------ observation normalisation


def test_normalizer_matches_numpy_statistics():
    rng = np.random.default_rng(0)
    data = rng.normal(loc=[5.0, -3.0, 100.0], scale=[1.0, 0.1, 20.0], size=(1000, 3))
    norm = core.ObsNormalizer(3)
    for chunk in np.array_split(data, [1, 50, 51, 700]):
        norm.update(chunk)
    np.testing.assert_allclose(norm.mean.numpy(), data.mean(0), rtol=1e-5)
    np.testing.assert_allclose(norm.var.numpy(), data.var(0), rtol=1e-4)
    out = norm(data.astype(np.float32)).numpy()
    np.testing.assert_allclose(out.mean(0), 0, atol=1e-3)
    np.testing.assert_allclose(out.std(0), 1, atol=1e-3)


class Shifted(gym.ObservationWrapper):
    """Pendulum with observations far from zero, which normalisation must undo."""

    def __init__(self):
        super().__init__(gym.make("Pendulum-v1"))
        self.observation_space = gym.spaces.Box(-np.inf, np.inf, (3,), np.float32)

    def observation(self, obs):
        return (obs * np.array([1.0, 1.0, 10.0]) + np.array([50.0, -20.0, 0.0])).astype(
            np.float32)


def test_normalize_obs_run_and_standalone_savedmodel(tmp_path):
    import tensorflow as tf

    out = str(tmp_path / "norm")
    ac = sac(Shifted, epochs=2, normalize_obs=True, **TINY, logger_kwargs=dict(output_dir=out))
    norm = ac.obs_normalizer
    assert norm.count > 600 and abs(norm.mean.numpy()[0] - 50.0) < 1.0
    obs = Shifted().reset(seed=3)[0][None]
    model = tf.saved_model.load(os.path.join(out, "tf2_save"))
    np.testing.assert_allclose(model.mu(obs).numpy(), ac.pi(obs, deterministic=True)[0].numpy(),
                               rtol=1e-5, atol=1e-6)
    # The numpy acting path normalises the same way.
    np_actor = core.NumpyActor.maybe(ac.pi)
    np.testing.assert_allclose(np_actor(obs, np.zeros((1, 1), np.float32)),
                               model.mu(obs).numpy(), rtol=1e-4, atol=1e-5)
    assert json.load(open(os.path.join(out, "config.json")))["normalize_obs"] is True


def test_normalize_obs_needs_box_observations(tmp_path):
    with pytest.raises(SpinupError, match="normalize_obs=True needs a Box observation space"):
        sac(lambda: gym.make("FrozenLake-v1"), normalize_obs=True,
            logger_kwargs=dict(output_dir=str(tmp_path / "f")))


# ---------------------------------------------------------------- discrete actions


def test_discrete_fused_block_equals_single_updates():
    env = gym.make("CartPole-v1")
    rng = np.random.default_rng(0)
    f = np.float32
    k, b = 4, 16
    data = (rng.normal(size=(k, b, 4)).astype(f), rng.integers(0, 2, (k, b, 1)).astype(f),
            rng.normal(size=(k, b)).astype(f), rng.normal(size=(k, b, 4)).astype(f),
            np.zeros((k, b), f), np.zeros((k, 2 * b, 0), f))
    results = []
    for fused in (True, False):
        import keras
        keras.utils.set_random_seed(1)
        ac, ac_targ = sac_mod.build_actor_critics(core.DiscreteMLPActorCritic,
                                                  env.observation_space, env.action_space,
                                                  dict(hidden_sizes=(16,)))
        pi_opt, q_opt = sac_mod.make_optimizers(ac, 1e-3)
        tuner = sac_mod.EntropyTuner(1.0, 0.3, 1e-3)
        update = sac_mod.make_update(ac, ac_targ, pi_opt, q_opt, 0.99, 0.2, 0.995, tuner)
        if fused:
            losses = sac_mod.make_update_block(update)(*data)["LossQ1"].numpy()
        else:
            single = tf_function(update)
            losses = np.array([single(*(x[j] for x in data))["LossQ1"] for j in range(k)])
        results.append((losses, [v.numpy() for v in ac.trainable_variables + tuner.variables]))
    np.testing.assert_allclose(results[0][0], results[1][0], rtol=1e-4, atol=1e-6)
    for a, b_ in zip(results[0][1], results[1][1]):
        np.testing.assert_allclose(a, b_, rtol=1e-4, atol=1e-6)


def tf_function(fn):
    import tensorflow as tf
    return tf.function(fn)


def test_discrete_losses_match_numpy():
    """The discrete backup and policy loss against a direct numpy computation."""
    import keras
    env = gym.make("CartPole-v1")
    keras.utils.set_random_seed(2)
    ac, ac_targ = sac_mod.build_actor_critics(core.DiscreteMLPActorCritic, env.observation_space,
                                              env.action_space, dict(hidden_sizes=(8,)))
    rng = np.random.default_rng(0)
    o, o2 = rng.normal(size=(5, 4)).astype(np.float32), rng.normal(size=(5, 4)).astype(np.float32)
    a = np.array([[0], [1], [1], [0], [1]], np.float32)
    r, d = rng.normal(size=5).astype(np.float32), np.array([0, 0, 1, 0, 0], np.float32)
    loss_pi, loss_q1, _, q1, _, logp = sac_mod.discrete_losses(ac, ac_targ, o, a, r, o2, d,
                                                              None, 0.2, 0.99)
    p, lp = (x.numpy() for x in ac.pi.dist(o))
    p2, lp2 = (x.numpy() for x in ac.pi.dist(o2))
    q1a, q2a = ac.q1(o).numpy(), ac.q2(o).numpy()
    qt = np.minimum(ac_targ.q1(o2).numpy(), ac_targ.q2(o2).numpy())
    backup = r + 0.99 * (1 - d) * (p2 * (qt - 0.2 * lp2)).sum(-1)
    q1_taken = q1a[np.arange(5), a[:, 0].astype(int)]
    np.testing.assert_allclose(q1.numpy(), q1_taken, rtol=1e-5)
    np.testing.assert_allclose(loss_q1.numpy(), 0.5 * np.mean((q1_taken - backup) ** 2),
                               rtol=1e-4)
    np.testing.assert_allclose(loss_pi.numpy(),
                               np.mean((p * (0.2 * lp - np.minimum(q1a, q2a))).sum(-1)),
                               rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(logp.numpy(), (p * lp).sum(-1), rtol=1e-5)


def test_discrete_run_savedmodel_and_test_policy(tmp_path):
    import tensorflow as tf

    from spinup_tf2.utils.test_policy import load_policy_and_env

    out = str(tmp_path / "cartpole")
    sac(lambda: gym.make("CartPole-v1"), epochs=2, alpha="auto", **TINY,
        logger_kwargs=dict(output_dir=out))
    cfg = json.load(open(os.path.join(out, "config.json")))
    assert cfg["actor_critic"] == "DiscreteMLPActorCritic"
    header, rs = rows(out)
    assert header[-2:] == ["Alpha", "LossAlpha"] and len(rs) == 2
    model = tf.saved_model.load(os.path.join(out, "tf2_save"))
    obs = np.random.default_rng(0).normal(size=(6, 4)).astype(np.float32)
    mu = model.mu(obs).numpy()
    assert mu.dtype == np.int64 and set(mu) <= {0, 1}
    assert model.q1(obs, mu).numpy().shape == (6,)
    env, get_action = load_policy_and_env(out, deterministic=True)
    o, _ = env.reset(seed=0)
    act = get_action(o)
    assert env.action_space.contains(act)
    env.step(act)
