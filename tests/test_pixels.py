"""The pixel replay buffer: each frame stored once, stacks rebuilt exactly."""

import json
import os

import joblib
import numpy as np
import pytest
from helpers import cli, column, rows

from spinup_tf2.algos.sac.frame_buffer import FrameReplayBuffer

H, W, C = 4, 5, 3


def episodes(rng, stack: int, lengths: list):
    """Transitions ``(obs, act, rew, next_obs, done)`` of episodes of the given lengths,
    frame-stacked as gymnasium's FrameStackObservation does (the newest frame last), each
    reset stack made of arbitrary frames; every action is unique, to find it again."""
    out = []
    for n in lengths:
        obs = rng.integers(0, 256, (H, W, stack * C), dtype=np.uint8)
        for t in range(n):
            frame = rng.integers(0, 256, (H, W, C), dtype=np.uint8)
            next_obs = np.concatenate([obs[..., C:], frame], axis=-1)
            out.append((obs, rng.normal(size=2).astype(np.float32), float(rng.normal()),
                        next_obs, float(t == n - 1)))
            obs = next_obs
    return out


@pytest.mark.parametrize("stack", [1, 3])
def test_minibatches_hold_exactly_the_stored_transitions(stack):
    """Across wrap-arounds of both rings and episodes of 1 to 40 steps, every transition
    drawn is one of the last ``size`` stored, with its obs and next_obs rebuilt bit for
    bit; only transitions whose frames were overwritten are left out."""
    rng = np.random.default_rng(0)
    size = 60
    buf = FrameReplayBuffer((H, W, stack * C), stack, act_dim=2, size=size)
    data = episodes(rng, stack, list(rng.integers(1, 41, 25)))
    by_act = {}
    for i, (o, a, r, o2, d) in enumerate(data):
        buf.store(o, a, r, o2, d)
        by_act[a.tobytes()] = i
        assert 0 < buf.size <= min(i + 1, size)
        if i % 37 == 0 or i == len(data) - 1:
            batch = buf.sample_batch(64, rng, n_batches=2)
            assert batch["obs"].shape == (2, 64, H, W, stack * C)
            assert batch["obs"].dtype == np.uint8
            for b in range(2):
                for j in range(64):
                    k = by_act[batch["act"][b, j].tobytes()]
                    assert i - size < k <= i  # among the last `size` stored
                    o, a, r, o2, d = data[k]
                    np.testing.assert_array_equal(batch["obs"][b, j], o)
                    np.testing.assert_array_equal(batch["obs2"][b, j], o2)
                    assert batch["rew"][b, j] == np.float32(r)
                    assert batch["done"][b, j] == d
    # Episodes of 1-40 steps spend up to `stack` more frames each than the slack covers.
    assert buf.size >= size - stack * 25 and buf.size >= 1


def test_long_episodes_keep_every_transition_and_each_frame_costs_one_slot():
    """With episodes of 100 steps or more all ``size`` transitions stay drawable, and
    the frames take one slot per transition plus the slack of ``stack`` per 100."""
    rng = np.random.default_rng(1)
    size, stack = 300, 3
    buf = FrameReplayBuffer((H, W, stack * C), stack, act_dim=2, size=size)
    for o, a, r, o2, d in episodes(rng, stack, [100, 150, 120, 130]):
        buf.store(o, a, r, o2, d)
    assert buf.size == size
    assert buf.frames.shape == (size + stack * (size // 100 + 1), H, W, C)


def interleaved(streams: list) -> list:
    """The transitions of several environment copies as a vector run stores them: one
    of each copy in turn (copies that ran out drop out)."""
    out = []
    for k in range(max(map(len, streams))):
        out += [s[k] for s in streams if k < len(s)]
    return out


def test_copies_storing_in_turn_share_frames_and_keep_every_transition():
    """num_envs copies' transitions arrive interleaved: each frame is still stored once
    (one per transition, ``stack`` more per episode), all ``size`` transitions stay
    drawable, and every one drawn is rebuilt bit for bit, also when two copies see the
    very same frames (a third copy repeats the first)."""
    rng = np.random.default_rng(2)
    size, stack, copies = 400, 3, 3
    buf = FrameReplayBuffer((H, W, stack * C), stack, act_dim=2, size=size, copies=copies)
    first = episodes(rng, stack, [90, 1, 2, 150])
    streams = [first, episodes(rng, stack, [120, 60, 70]), [
        (o, rng.normal(size=2).astype(np.float32), r, o2, d) for o, _, r, o2, d in first]]
    data = interleaved(streams)
    by_act = {a.tobytes(): i for i, (_, a, _, _, _) in enumerate(data)}
    for o, a, r, o2, d in data:
        buf.store(o, a, r, o2, d)
    assert buf.frames_written == len(data) + stack * (4 + 3 + 4)
    assert buf.size == size
    batch = buf.sample_batch(500, rng)
    for j in range(500):
        k = by_act[batch["act"][j].tobytes()]
        assert len(data) - size <= k
        np.testing.assert_array_equal(batch["obs"][j], data[k][0])
        np.testing.assert_array_equal(batch["obs2"][j], data[k][3])
    # Told of one copy only, the same stream stores whole stacks and keeps far fewer.
    one = FrameReplayBuffer((H, W, stack * C), stack, act_dim=2, size=size)
    for o, a, r, o2, d in data:
        one.store(o, a, r, o2, d)
    assert one.size < size / 2


def test_a_checkpoint_of_the_earlier_one_copy_layout_is_read_back():
    """Checkpoints written before frames were shared between copies kept each
    transition's newest frame and the last next_obs; a one-copy buffer resumes them."""
    rng = np.random.default_rng(4)
    buf = FrameReplayBuffer((H, W, 3 * C), 3, 2, 60)
    for o, a, r, o2, d in episodes(rng, 3, [7, 30, 1, 45]):
        buf.store(o, a, r, o2, d)
    arrays = buf.state_arrays()
    n = len(arrays["buf_frame_idx"])
    old = dict(arrays, buf_newest=arrays.pop("buf_frame_idx")[:, -1],
               buf_last_next=arrays.pop("buf_ends_obs")[0])
    del old["buf_ends_idx"]
    back = FrameReplayBuffer((H, W, 3 * C), 3, 2, 60)
    back.load_state_arrays(old)
    np.testing.assert_array_equal(back.frame_idx[:n], buf.frame_idx[:n])
    o = buf._ends[0][0]  # the episode in progress goes on
    for _ in range(5):
        o2 = np.concatenate([o[..., C:], rng.integers(0, 256, (H, W, C), np.uint8)], -1)
        a = rng.normal(size=2).astype(np.float32)
        buf.store(o, a, 0.5, o2, 0.0), back.store(o, a, 0.5, o2, 0.0)
        o = o2
    assert (buf.frames_written, buf.stored, buf.oldest) == (back.frames_written, back.stored,
                                                            back.oldest)
    a, b = (x.sample_batch(50, np.random.default_rng(3)) for x in (buf, back))
    for k in a:
        np.testing.assert_array_equal(a[k], b[k])
    with pytest.raises(ValueError, match="start the run afresh"):
        FrameReplayBuffer((H, W, 3 * C), 3, 2, 60, copies=2).load_state_arrays(old)


def test_a_hundred_thousand_84x84_frames_stacked_by_3_take_about_2_1_gb():
    """As the issue sizes it: about 2.1 GB, against about 12.7 GB for obs and next_obs of
    every transition as float32 (np.zeros maps the memory without touching it)."""
    buf = FrameReplayBuffer((84, 84, 9), 3, act_dim=1, size=100_000)
    naive = 2 * 100_000 * 84 * 84 * 9 * 4
    assert 2.1e9 < buf.nbytes < 2.2e9
    assert naive / buf.nbytes > 5.5


def test_an_observation_that_is_not_a_stack_is_refused():
    with pytest.raises(ValueError, match="stack must divide the channels"):
        FrameReplayBuffer((84, 84, 8), 3, act_dim=1, size=10)


# --- SAC from pixels: the actor-critic, the run, the checkpoint -----------------------

def test_random_shift_is_edge_padding_then_a_crop():
    import tensorflow as tf

    from spinup_tf2.algos.sac.pixels import random_shift

    rng = np.random.default_rng(0)
    images = rng.integers(0, 256, (5, 12, 10, 6), dtype=np.uint8)
    shifts = rng.integers(0, 9, (5, 2), dtype=np.int32)
    got = random_shift(tf.constant(images), tf.constant(shifts), 4).numpy()
    padded = np.pad(images, ((0, 0), (4, 4), (4, 4), (0, 0)), mode="edge")
    want = np.stack([p[dy:dy + 12, dx:dx + 10] for p, (dy, dx) in zip(padded, shifts)])
    np.testing.assert_array_equal(got, want)
    assert not np.array_equal(got, images)


def pixel_actor_critics(shape=(16, 16, 6), discrete=False):
    import gymnasium as gym
    import keras

    from spinup_tf2.algos.sac import pixels
    from spinup_tf2.algos.sac import sac as sac_mod

    keras.utils.set_random_seed(0)
    act = gym.spaces.Discrete(3) if discrete else gym.spaces.Box(-1, 1, (2,), np.float32)
    return sac_mod.build_actor_critics(
        pixels.PixelActorCritic, gym.spaces.Box(0, 255, shape, np.uint8), act,
        dict(hidden_sizes=(16, 16), feature_dim=8, conv_filters=4))


@pytest.mark.parametrize("discrete", [False, True])
def test_the_encoder_learns_from_the_critics_only(discrete):
    """DrQ's gradient routing: the policy loss reaches the actor's own layers and nothing
    of the encoder; the Q loss reaches the encoder and nothing of the actor."""
    import functools

    import tensorflow as tf

    from spinup_tf2.algos.sac import pixels
    from spinup_tf2.algos.sac import sac as sac_mod

    ac, ac_targ = pixel_actor_critics(discrete=discrete)
    rng = np.random.default_rng(1)
    o, o2 = (rng.integers(0, 256, (8, 16, 16, 6), dtype=np.uint8) for _ in range(2))
    a = (rng.integers(0, 3, (8, 1)) if discrete else rng.uniform(-1, 1, (8, 2))).astype(
        np.float32)
    base = sac_mod.discrete_losses if discrete else sac_mod.continuous_losses
    losses = functools.partial(pixels.pixel_losses, base)
    shifts = pixels.shift_draws(rng, ac, 1, 8)[0]
    with tf.GradientTape(persistent=True) as tape:
        out = losses(
            ac, ac_targ, o, a, np.ones(8, np.float32), o2, np.full(8, 0.99, np.float32),
            rng.standard_normal((16, 3 if discrete else 2)).astype(np.float32), 0.1, shifts)
        loss_pi, logp_pi, loss_q = out.loss_pi, out.logp_pi, out.loss_q[0] + out.loss_q[1]
        policy_only = tf.reduce_sum(logp_pi)  # what the actor computes from its features
    encoder = ac.encoder.trainable_variables
    # The actor reads the encoder through a stop-gradient, and the policy step moves only
    # its own variables (the Q values in its loss are the critics', not updated by it).
    assert all(g is None or not np.any(g.numpy())
               for g in tape.gradient(policy_only, encoder))
    assert not {id(v) for v in encoder} & {id(v) for v in ac.actor_variables}
    assert all(g is None or not np.any(g.numpy())
               for g in tape.gradient(loss_q, ac.actor_variables))
    assert all(g is not None and np.any(g.numpy()) for g in tape.gradient(loss_q, encoder))
    assert all(g is not None for g in tape.gradient(loss_pi, ac.actor_variables))
    # The target's encoder is averaged with the critics, as theirs.
    names = [v.path for v in ac_targ.critic_variables]
    assert any("encoder" in n for n in names) and any("critic_features" in n for n in names)


def test_frame_buffer_checkpoint_is_compressed_and_read_back_in_place(tmp_path):
    from spinup_tf2.training.checkpoint import NpzArrays, write_npz

    rng = np.random.default_rng(0)
    buf = FrameReplayBuffer((H, W, 3 * C), 3, 2, 60)
    for o, a, r, o2, d in episodes(rng, 3, [7, 30, 1, 45]):
        buf.store(o, a, r, o2, d)
    buf.frames[:] = buf.frames // 128  # frames compress (camera images do, noise does not)
    path = str(tmp_path / "arrays.npz")
    write_npz(path, buf.state_arrays(), compress=True)
    import zipfile

    info = zipfile.ZipFile(path).getinfo("buf_frames.npy")
    assert info.compress_type == zipfile.ZIP_DEFLATED
    assert info.compress_size < info.file_size / 2
    back = FrameReplayBuffer((H, W, 3 * C), 3, 2, 60)
    with np.load(path) as data:
        back.load_state_arrays(NpzArrays(data))
    a = buf.sample_batch(50, np.random.default_rng(3))
    b = back.sample_batch(50, np.random.default_rng(3))
    for k in a:
        np.testing.assert_array_equal(a[k], b[k])
    o, a_, r, o2, d = episodes(rng, 3, [2])[0]  # and it goes on storing as the original
    buf.store(o, a_, r, o2, d), back.store(o, a_, r, o2, d)
    assert (buf.stored, buf.oldest, buf.frames_written) == (back.stored, back.oldest,
                                                            back.frames_written)


def test_a_replay_size_that_does_not_fit_is_refused_with_one_that_does():
    import psutil

    from spinup_tf2.algos.sac.memory import check_memory
    from spinup_tf2.errors import SpinupError

    too_many = int(2 * psutil.virtual_memory().available / (84 * 84 * 3))
    with pytest.raises(SpinupError, match=r"replay_size=\d+: .* GiB, more than .* free here\. "
                                          r"Give replay_size at most \d+") as err:
        check_memory(too_many, (84, 84, 9), 6, frame_stack=3)
    fits = int(str(err.value).split("at most ")[1].split(".")[0])
    assert 0 < fits < too_many
    check_memory(fits, (84, 84, 9), 6, frame_stack=3)  # the size it offers is accepted


PIXEL_TINY = dict(steps_per_epoch=200, start_steps=100, update_after=100, update_every=50,
                  batch_size=16, num_test_episodes=1, max_ep_len=100, replay_size=2000,
                  ac_kwargs=dict(hidden_sizes=(16, 16), feature_dim=8, conv_filters=4))


def pendulum_pixels():
    from spinup_tf2.envs import make_pixels

    return make_pixels("Pendulum-v1", 32, 2, 2)


def test_pixel_run_resumes_exactly_and_ships(tmp_path, monkeypatch):
    """--pixels' environment (Pendulum rendered at 32x32, 2 frames, action repeat 2, in
    its own process): sac() picks the pixel actor-critic, a resumed run equals a straight
    one, test_policy replays the run on the same pixel task, and the exports take uint8
    frames and agree with the SavedModel."""
    from spinup_tf2 import sac
    from spinup_tf2.algos.sac.pixels import PixelActorCritic
    from spinup_tf2.policy.export import export_policy
    from spinup_tf2.utils.test_policy import load_policy_and_env, run_policy

    straight, resumed = str(tmp_path / "straight"), str(tmp_path / "resumed")
    ac = sac(pendulum_pixels, epochs=2, **PIXEL_TINY, logger_kwargs=dict(output_dir=straight))
    assert isinstance(ac, PixelActorCritic)
    sac(pendulum_pixels, epochs=1, **PIXEL_TINY, logger_kwargs=dict(output_dir=resumed))
    sac(pendulum_pixels, epochs=2, resume=True, **PIXEL_TINY,
        logger_kwargs=dict(output_dir=resumed))
    assert rows(straight) == rows(resumed) and len(rows(straight)[1]) == 2
    config = json.load(open(os.path.join(straight, "config.json")))
    wrappers = config["env_spec"]["additional_wrappers"]
    assert wrappers[0]["entry_point"] == "spinup_tf2.envs:PixelObservation"

    env, get_action = load_policy_and_env(straight, deterministic=True)
    assert env.observation_space.shape == (32, 32, 6) and env.observation_space.dtype == np.uint8
    run_policy(env, get_action, max_ep_len=20, num_episodes=1, render=False)
    env.close()
    # Watched in a window: the frames the policy sees, shown by the rendering process
    # (SDL's dummy display here; the pixel task itself still renders off-screen).
    monkeypatch.setenv("SDL_VIDEODRIVER", "dummy")
    env, get_action = load_policy_and_env(straight, deterministic=True, render=True)
    assert env.render_mode == "human"
    run_policy(env, get_action, max_ep_len=5, num_episodes=1, render=True)
    env.close()
    for fmt in ("onnx", "tflite"):
        result = export_policy(straight, fmt, str(tmp_path / f"policy.{fmt}"))
        assert tuple(result["obs_dim"]) == (32, 32, 6) and result["max_abs_diff"] <= 1e-5


def test_a_pixel_run_of_two_copies_stores_each_frame_once(tmp_path):
    """num_envs=2 on the pixel task: the two copies' transitions interleave in the replay
    buffer, and its checkpoint shows each frame stored once (one per transition, the
    first stack of each copy's episode) and every transition drawable."""
    from spinup_tf2 import sac

    out = str(tmp_path / "two")
    sac(pendulum_pixels, epochs=1, **PIXEL_TINY, num_envs=2,
        logger_kwargs=dict(output_dir=out))
    with np.load(os.path.join(out, "train_state", "arrays.npz")) as z:
        frames_written, stored, oldest = z["buf_counts"]
    assert stored == 200 and oldest == 0
    # Each copy played one 100-step episode (max_ep_len), its reset stack 2 frames.
    assert frames_written == stored + 2 * 2


def test_pixels_on_the_command_line(tmp_path):
    out = cli("sac", "--env", "Pendulum-v1", "--pixels", "--image_size", "32", "--frame_stack",
              "2", "--action_repeat", "2", "--epochs", "1", "--steps_per_epoch", "200",
              "--start_steps", "100", "--update_after", "100", "--batch_size", "16",
              "--num_test_episodes", "1", "--replay_size", "1000", "--hid", "[16,16]",
              "--exp_name", "pix", "--data_dir", str(tmp_path))
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    run = tmp_path / "pix" / "pix_s0"
    config = json.load(open(run / "config.json"))
    assert config["env_spec"]["additional_wrappers"][0]["kwargs"] == dict(
        size=32, frame_stack=2, action_repeat=2)
    assert len(rows(str(run))[1]) == 1
    # vars.pkl holds the task's recipe (its rendering process does not pickle): loading it
    # starts the same pixel task in a new rendering process.
    assert "could not pickle" not in out.stdout
    env = joblib.load(run / "vars.pkl")["env"]
    try:
        assert env.observation_space.shape == (32, 32, 6)
        assert env.reset(seed=0)[0].shape == (32, 32, 6)
    finally:
        env.close()
    bad = cli("sac", "--env", "Pendulum-v1", "--action_repeat", "4", "--data_dir",
              str(tmp_path))
    assert bad.returncode != 0 and "has no --pixels" in bad.stderr + bad.stdout


@pytest.mark.slow
def test_a_pixel_run_repeats_exactly_in_a_new_process(tmp_path):
    """The same seed in two fresh processes gives the same progress.txt (apart from Time).
    With 84x84 images and 200 updates this caught TensorFlow's compiled loop over several
    convolutional updates, whose numbers drifted from process to process (100 now, for
    CI's time)."""
    flags = ["--env", "Pendulum-v1", "--pixels", "--epochs", "1", "--steps_per_epoch", "200",
             "--start_steps", "100", "--update_after", "100", "--batch_size", "32",
             "--replay_size", "1000", "--num_test_episodes", "1", "--max_ep_len", "100",
             "--seed", "5", "--data_dir", str(tmp_path)]
    for name in ("first", "second"):
        out = cli("sac", *flags, "--exp_name", name)
        assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    first, second = (rows(str(tmp_path / name / f"{name}_s5")) for name in ("first", "second"))
    assert len(first[1]) == 1 and first == second


@pytest.mark.slow
def test_sac_learns_from_pixels(tmp_path):
    """A task seen only as an image (a dot to bring to the centre; random policies score
    about -30) is learned in 4,000 steps, about a minute on 2 cores."""
    from pixel_tasks import DotToCentre

    from spinup_tf2 import sac

    out = str(tmp_path / "dot")
    sac(DotToCentre, epochs=4, steps_per_epoch=1000, start_steps=500, update_after=500,
        batch_size=64, num_test_episodes=5, max_ep_len=40, alpha="auto_0.1",
        replay_size=20000, ac_kwargs=dict(hidden_sizes=(64, 64), feature_dim=32,
                                          conv_filters=16), logger_kwargs=dict(output_dir=out))
    train = column(out, "AverageEpRet")
    test = column(out, "AverageTestEpRet")
    assert train[0] < -20 and max(test[-2:]) > -20 and train[-1] > -18, (train, test)


def test_pixel_wrapper_refuses_a_bad_setting():
    import gymnasium as gym

    from spinup_tf2.envs import PixelObservation
    from spinup_tf2.errors import SpinupError

    env = gym.make("Pendulum-v1", render_mode="rgb_array")
    with pytest.raises(SpinupError, match=r"action_repeat=0 \(1-100\); each must be a whole"):
        PixelObservation(env, action_repeat=0)
    env.close()


@pytest.fixture
def x_display(monkeypatch):
    """A real X server (Xvfb; .ci/run installs it) as DISPLAY, on a display number no
    other test used (one just closed can refuse connections for a while)."""
    import shutil
    import subprocess
    import time

    xvfb = shutil.which("Xvfb")
    assert xvfb, "Xvfb is not installed (Debian: apt-get install xvfb; .ci/run installs it)"
    number = next(n for n in range(100 + os.getpid() % 800, 1000)
                  if not os.path.exists(f"/tmp/.X{n}-lock"))
    server = subprocess.Popen([xvfb, f":{number}", "-screen", "0", "640x480x24", "-nolisten",
                               "tcp"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 300
    while not os.path.exists(f"/tmp/.X11-unix/X{number}"):
        assert server.poll() is None, f"Xvfb :{number} stopped (exit code {server.returncode})"
        assert time.monotonic() < deadline, f"waited 300 s for Xvfb :{number}'s socket"
        time.sleep(0.05)
    monkeypatch.setenv("DISPLAY", f":{number}")
    for var in ("SDL_VIDEODRIVER", "WAYLAND_DISPLAY"):
        monkeypatch.delenv(var, raising=False)
    yield f":{number}"
    server.terminate()
    server.wait()


def on_screen(screen, image) -> bool:
    """True if ``image`` appears, pixel for pixel, somewhere on ``screen``."""
    h, w = image.shape[:2]
    ys, xs = np.nonzero((screen[:-h + 1, :-w + 1] == image[0, 0]).all(axis=-1))
    return any((screen[y:y + h, x:x + w] == image).all() for y, x in zip(ys, xs))


@pytest.mark.slow
@pytest.mark.parametrize("platform", [None, "egl"])
def test_a_pixel_task_plays_in_a_window(x_display, monkeypatch, platform):
    """test_policy's window on a MuJoCo pixel task, on a real X server, with MuJoCo's own
    choice of OpenGL (GLFW, as on a desktop) and with EGL: after every step the screen
    shows the frame the policy saw, 4x enlarged. (SDL drew its window through OpenGL
    beside MuJoCo's context: the window kept its first frame, or X refused the second
    context.)"""
    from PIL import ImageGrab

    from spinup_tf2 import envs
    from spinup_tf2.envs import RenderingEnv

    for var in ("MUJOCO_GL", "PYOPENGL_PLATFORM"):
        if platform:
            monkeypatch.setenv(var, platform)
        else:
            monkeypatch.delenv(var, raising=False)
    env = RenderingEnv(envs.pixel_ref("InvertedPendulum-v5", size=32, frame_stack=1), "human")
    try:
        env.reset(seed=0)
        frames = []
        for _ in range(6):  # pushed one way, the pole falls: every frame differs
            frames.append(env.step(env.action_space.high)[0])
            screen = np.asarray(ImageGrab.grab(xdisplay=x_display).convert("RGB"))
            assert on_screen(screen, frames[-1].repeat(4, axis=0).repeat(4, axis=1))
        assert all((a != b).any() for a, b in zip(frames, frames[1:]))
    finally:
        env.close()
