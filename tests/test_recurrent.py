"""Recurrent SAC (--recurrent): the GRU math, the window buffer, the losses' masks and
resets, and recurrent runs through test_policy, export, resume, MPI and the launcher."""

import json
import os

import gymnasium as gym
import numpy as np
import pytest
from helpers import CLI_TINY, TINY, cli, column, rows

import spinup_tf2  # noqa: F401  (registers Pendulum-P-v1 and CartPole-P-v1)
from spinup_tf2.errors import SpinupError
from spinup_tf2.tf_setup import import_tensorflow

tf = import_tensorflow()

from spinup_tf2 import sac  # noqa: E402
from spinup_tf2.algos.sac import recurrent as R  # noqa: E402
from spinup_tf2.algos.sac import sac as S  # noqa: E402

SMALL = dict(hidden_sizes=(32, 32), memory_size=16, sequence_length=4, burn_in=3)
REC_TINY = dict(TINY, ac_kwargs=SMALL)


def actor_critics(env_id="Pendulum-P-v1", **kwargs):
    env = gym.make(env_id)
    tf.keras.utils.set_random_seed(0)
    return S.build_actor_critics(R.RecurrentActorCritic, env.observation_space,
                                 env.action_space, dict(SMALL, **kwargs))


def test_position_only_tasks_hide_the_velocities():
    full, masked = gym.make("Pendulum-v1"), gym.make("Pendulum-P-v1")
    o_full, o_masked = full.reset(seed=3)[0], masked.reset(seed=3)[0]
    assert masked.observation_space.shape == (2,)
    np.testing.assert_array_equal(o_masked, o_full[:2])
    a = np.array([0.5], np.float32)
    np.testing.assert_array_equal(masked.step(a)[0], full.step(a)[0][:2])
    cart_full, cart = gym.make("CartPole-v1"), gym.make("CartPole-P-v1")
    np.testing.assert_array_equal(cart.reset(seed=1)[0], cart_full.reset(seed=1)[0][[0, 2]])
    assert cart.spec.max_episode_steps == 500


def test_gru_step_is_keras_gru_cell_and_the_fused_unroll_is_the_step_loop():
    ac, ac_targ = actor_critics()
    rng = np.random.default_rng(0)
    o = rng.normal(size=(5, 2)).astype(np.float32)
    h = rng.normal(size=(5, 16)).astype(np.float32)
    np.testing.assert_allclose(ac.q1.step(o, h), ac.q1.cell(o, h)[0], atol=1e-6)

    # Windows of 7 steps (burn-in 3), an episode starting at step 5 of window 0.
    n, w = 4, ac.window
    obs = rng.normal(size=(n, w, 2)).astype(np.float32)
    obs2 = rng.normal(size=(n, w, 2)).astype(np.float32)
    start = np.zeros((n, w), np.float32)
    start[0, 5] = 1.0
    state = rng.normal(size=(n, ac.state_size)).astype(np.float32)
    y, y2 = R.unroll((ac.pi, ac.q1, ac.q2), obs, obs2, start, state, ac.burn_in, w)
    for j, net in enumerate((ac.pi, ac.q1, ac.q2)):
        hj = state[:, net.lo:net.hi]
        want, want2 = [], []
        for k in range(w):
            hj = net.step(obs[:, k], hj * (1 - start[:, k:k + 1])).numpy()
            if k >= ac.burn_in:
                want.append(hj)
                want2.append(net.step(obs2[:, k], hj).numpy())
        got = y.numpy().reshape(n, -1, ac.state_size)[..., net.lo:net.hi]
        got2 = y2.numpy().reshape(n, -1, ac.state_size)[..., net.lo:net.hi]
        np.testing.assert_allclose(got, np.stack(want, 1), atol=1e-5)
        np.testing.assert_allclose(got2, np.stack(want2, 1), atol=1e-5)
    # After the reset, window 0 remembers nothing of the episode before it.
    fresh = np.zeros((1, 16), np.float32)
    for k in (5, 6):
        fresh = ac.pi.step(obs[:1, k], fresh).numpy()
    np.testing.assert_allclose(y.numpy().reshape(n, -1, ac.state_size)[0, -1, :16], fresh[0],
                               atol=1e-5)


def test_buffer_windows_masks_and_stored_memory():
    buf = R.SequenceReplayBuffer(1, 1, size=10, state_size=2, window=4, burn_in=2)
    for i in range(13):  # wraps: slots hold steps 3..12, the write pointer at slot 3
        buf.store([i], [0.0], float(i), [i + 1], 0.0, [i, -i], float(i % 5 == 0))
    assert (buf.ptr, buf.size) == (3, 10)
    rng = np.random.default_rng(0)
    batch = buf.sample_batch(128, rng, n_batches=3)  # 128 steps with a loss: 64 windows
    assert batch["obs"].shape == (3, 64, 4, 1) and batch["state"].shape == (3, 64, 2)
    first = batch["obs"][..., 0, 0]
    # Windows start at steps 3..10 (at least burn_in + 1 steps of data after them) and
    # carry their first step's stored memory.
    assert first.min() == 3 and first.max() == 10
    np.testing.assert_array_equal(batch["state"][..., 0], first)
    steps = batch["obs"][..., 0]
    # Kept steps are the window's own consecutive steps; what follows step 12 is masked.
    kept = batch["mask"] > 0
    np.testing.assert_array_equal(steps[kept], (first[..., None] + np.arange(4))[kept])
    np.testing.assert_array_equal(kept, first[..., None] + np.arange(4) <= 12)
    assert kept[..., 2].all()  # every window has a step to learn from after the burn-in
    np.testing.assert_array_equal(batch["start"], (steps % 5 == 0).astype(np.float32))


def test_masked_steps_do_not_reach_the_losses():
    ac, ac_targ = actor_critics()
    rng = np.random.default_rng(1)
    n, w = 6, ac.window
    batch = dict(o=rng.normal(size=(n, w, 2)), a=rng.uniform(-2, 2, size=(n, w, 1)),
                 r=rng.normal(size=(n, w)), o2=rng.normal(size=(n, w, 2)),
                 d=np.zeros((n, w)), start=np.zeros((n, w)),
                 state=rng.normal(size=(n, ac.state_size)) * 0.1, mask=np.ones((n, w)))
    batch["mask"][0, 5:] = 0
    batch = {k: tf.constant(v, tf.float32) for k, v in batch.items()}
    noise = tf.constant(rng.normal(size=(2 * n * ac.sequence_length, 1)), tf.float32)

    def losses(b):
        out = R.sequence_losses(
            S.continuous_losses, ac, ac_targ, b["o"], b["a"], b["r"], b["o2"],
            0.99 * (1 - b["d"]), noise, 0.2, b["start"], b["state"], b["mask"])
        return [v.numpy() for v in (out.loss_pi, *out.loss_q)]

    before = losses(batch)
    for key in ("o", "a", "r", "o2"):  # change window 0's masked steps
        v = batch[key].numpy()
        v[0, 5:] += 3.0
        changed = dict(batch, **{key: tf.constant(v)})
        np.testing.assert_allclose(losses(changed), before, rtol=1e-6)
    v = batch["r"].numpy()
    v[0, 4] += 3.0  # a kept step's reward does change the Q losses
    assert not np.allclose(losses(dict(batch, r=tf.constant(v)))[1], before[1])


def test_agent_memory_carries_and_resets():
    ac, _ = actor_critics()
    agent = R.RecurrentAgent(ac, np.random.default_rng(0), 1)
    o = np.array([0.3, -0.2], np.float32)
    a1, a2 = agent(o, True), agent(o, True)
    assert not np.allclose(a1, a2)  # the second sees the first in its memory
    state, start = agent.memory()
    assert start == 0.0 and np.abs(state).sum() > 0
    agent.reset()
    np.testing.assert_allclose(agent(o, True), a1)
    assert agent.memory()[1] == 1.0 and not agent.memory()[0].any()
    other = agent.fork()
    np.testing.assert_allclose(other(o, True), a1)  # its own memory, the same policy
    np.testing.assert_allclose(agent.explore(o, 0.5), 0.5)
    with pytest.raises(SpinupError, match="memory"):
        ac.act(o)


@pytest.fixture(scope="module")
def run_dirs(tmp_path_factory):
    """Two epochs straight; and the same run stopped after epoch 1 and resumed."""
    base = tmp_path_factory.mktemp("rec")
    kwargs = dict(REC_TINY, actor_critic=R.RecurrentActorCritic, seed=3, max_ep_len=150)
    straight, resumed = str(base / "straight"), str(base / "resumed")
    sac(lambda: gym.make("Pendulum-P-v1"), epochs=2, logger_kwargs=dict(output_dir=straight),
        **kwargs)
    sac(lambda: gym.make("Pendulum-P-v1"), epochs=1, logger_kwargs=dict(output_dir=resumed),
        **kwargs)
    sac(lambda: gym.make("Pendulum-P-v1"), epochs=2, resume=True,
        logger_kwargs=dict(output_dir=resumed), **kwargs)
    return straight, resumed


def test_recurrent_run_writes_spinning_up_files_and_resumes_bit_exact(run_dirs):
    straight, resumed = run_dirs
    header, straight_rows = rows(straight)
    assert header[:4] == ["Epoch", "AverageEpRet", "StdEpRet", "MaxEpRet"]
    assert len(straight_rows) == 2
    assert rows(resumed) == (header, straight_rows)  # the episode in progress kept its memory
    config = json.load(open(os.path.join(straight, "config.json")))
    assert config["actor_critic"] == "RecurrentActorCritic"
    assert np.isfinite(column(straight, "LossQ1")).all()


def test_test_policy_and_export_carry_the_memory(run_dirs, capsys):
    from spinup_tf2.policy.export import describe, export_policy
    from spinup_tf2.policy.load import load_policy_and_env
    from spinup_tf2.utils.test_policy import run_policy

    straight, _ = run_dirs
    env, get_action = load_policy_and_env(straight, deterministic=True)
    o, _ = env.reset(seed=0)
    first = get_action(o)
    get_action(o)
    get_action.reset()
    np.testing.assert_allclose(get_action(o), first)
    run_policy(env, get_action, max_ep_len=30, num_episodes=2, render=False)
    assert "Episode 1" in capsys.readouterr().out

    for fmt in ("onnx", "tflite"):
        result = export_policy(straight, fmt)
        assert result["state_size"] == 48 and result["max_abs_diff"] <= 1e-5
        assert result["checked"].startswith("3 episodes (")
        text = describe(result)
        assert "input  'state':  float32 [batch, 48]" in text
        assert "output 'next_state'" in text and "carrying the state" in text


@pytest.mark.slow  # videos are tested by default on the MLP policy (test_video.py)
def test_videos_of_a_recurrent_policy(run_dirs, tmp_path):
    """test_policy --video plays the policy with its memory; videos during training play a
    fork of the agent, so the run's numbers (and the training episode's memory) are those
    of the same run without videos."""
    import imageio.v3 as iio

    straight, _ = run_dirs
    video = tmp_path / "p.mp4"
    res = cli("test_policy", straight, "--video", str(video), "-n", "1", "-l", "30", "-d",
              env={"DISPLAY": "", "WAYLAND_DISPLAY": ""})
    assert res.returncode == 0, res.stderr[-2000:]
    assert iio.imread(video).shape == (31, 500, 500, 3)

    kwargs = dict(REC_TINY, actor_critic=R.RecurrentActorCritic, epochs=1, max_ep_len=150)
    with_video, without = str(tmp_path / "with"), str(tmp_path / "without")
    sac(lambda: gym.make("Pendulum-P-v1"), video_freq=1,
        logger_kwargs=dict(output_dir=with_video), **kwargs)
    sac(lambda: gym.make("Pendulum-P-v1"), logger_kwargs=dict(output_dir=without), **kwargs)
    assert iio.imread(os.path.join(with_video, "videos", "epoch_1.mp4")).shape[0] == 151
    assert rows(with_video) == rows(without)


@pytest.mark.slow  # 23 s; --recurrent on the command line is checked by default below
def test_cli_recurrent_discrete_on_position_only_cartpole(tmp_path):
    out = cli("sac", "--env", "CartPole-P-v1", "--recurrent", "--exp_name", "rec",
              "--ac_kwargs:memory_size", "8", "--ac_kwargs:sequence_length", "4",
              "--ac_kwargs:burn_in", "2", "--hid", "[16]", "--max_ep_len", "100",
              *CLI_TINY, "--data_dir", str(tmp_path))
    assert out.returncode == 0, out.stderr[-2000:]
    run = tmp_path / "rec" / "rec_s0"
    config = json.load(open(run / "config.json"))
    assert config["actor_critic"] == "RecurrentActorCritic"
    assert config["ac_kwargs"]["memory_size"] == 8
    assert len(column(str(run), "AverageTestEpRet")) == 2
    played = cli("test_policy", str(run), "-n", "2", "-nr", "-l", "50")
    assert played.returncode == 0 and "Episode 1" in played.stdout, played.stderr[-2000:]


def test_bad_recurrent_settings_are_refused(tmp_path):
    bad = cli("sac", "--env", "Pendulum-P-v1", "--recurrent", "yes", *CLI_TINY,
              "--data_dir", str(tmp_path))
    assert bad.returncode != 0 and "--recurrent is an on/off switch" in bad.stderr + bad.stdout
    # An MLP variant of a grid would only fail once launched: the grid is refused whole.
    grid = cli("sac", "--env", "Pendulum-P-v1", "--recurrent", "True", "False",
               "--ac_kwargs:burn_in", "4", *CLI_TINY, "--data_dir", str(tmp_path))
    assert grid.returncode != 0
    assert "--ac_kwargs:burn_in sets a recurrent" in grid.stderr + grid.stdout
    assert not list(tmp_path.iterdir())
    with pytest.raises(SpinupError, match="sequence_length=0"):
        actor_critics(sequence_length=0)
    with pytest.raises(SpinupError, match="num_envs=2"):
        sac(lambda: gym.make("Pendulum-P-v1"), actor_critic=R.RecurrentActorCritic,
            num_envs=2, logger_kwargs=dict(output_dir=str(tmp_path / "n")),
            **TINY)
    assert not (tmp_path / "n").exists()


@pytest.mark.slow  # two MPI ranks; test_mpi.py's default CLI test covers --cpu 2 itself
def test_mpi_two_processes_recurrent(tmp_path):
    out = cli("sac", "--env", "Pendulum-P-v1", "--recurrent", "--cpu", "2", "--exp_name", "m",
              "--ac_kwargs:memory_size", "8", "--ac_kwargs:sequence_length", "4",
              "--ac_kwargs:burn_in", "2", "--hid", "[16]", *CLI_TINY,
              "--data_dir", str(tmp_path), timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    assert len(column(str(tmp_path / "m" / "m_s0"), "AverageTestEpRet")) == 2
