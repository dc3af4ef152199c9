"""Videos of saved policies on a machine without a display: `test_policy --video`,
for a classic-control and a MuJoCo task, decoded back and counted."""

import os
import subprocess
import sys

import gymnasium as gym
import imageio.v3 as iio
import pytest
from helpers import HANG, TINY, assert_clean_error, cli, pendulum, rows, run_tiny

from spinup_tf2 import sac
from spinup_tf2.errors import SpinupError
from spinup_tf2.utils.test_policy import load_policy_and_env, run_policy

# Videos render in a process of their own, and ffmpeg writes them.
pytestmark = pytest.mark.processes

NO_DISPLAY = {"DISPLAY": "", "WAYLAND_DISPLAY": ""}


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """One tiny saved run on Pendulum-v1 and one on HalfCheetah-v5."""
    root = tmp_path_factory.mktemp("video_runs")
    out = {}
    for env_name in ("Pendulum-v1", "HalfCheetah-v5"):
        out[env_name] = str(root / env_name)
        sac(lambda: gym.make(env_name), epochs=1, **dict(TINY, max_ep_len=100),
            logger_kwargs=dict(output_dir=out[env_name]))
    return out


def frames_of(path):
    return iio.imread(path)  # all frames: (n, height, width, 3)


def test_gif_of_a_classic_control_policy_without_a_display(runs, tmp_path):
    video = tmp_path / "pendulum.gif"
    res = cli("test_policy", runs["Pendulum-v1"], "--video", str(video), "-n", "2", "-l", "60",
              "-d", env=dict(NO_DISPLAY, XDG_RUNTIME_DIR=""))
    assert res.returncode == 0, res.stderr[-2000:]
    # 60 steps an episode: a frame before each step and one of the last state.
    assert f"Wrote 122 frames at 30 fps to {video}." in res.stdout
    # GIF merges identical consecutive frames into one longer frame and keeps each duration
    # in whole hundredths of a second (k frames of 33.3 ms: k * 33.3 cut to 10 ms), so count
    # the frames each stored frame stands for.
    from PIL import Image, ImageSequence

    with Image.open(video) as gif:
        assert gif.size == (500, 500)
        durations = [frame.info["duration"] for frame in ImageSequence.Iterator(gif)]
    frame_ms = 1000 / 30
    counts = [round(d / frame_ms) for d in durations]
    assert all(k >= 1 and k * frame_ms - 10 < d <= k * frame_ms + 1e-6
               for d, k in zip(durations, counts))
    assert sum(counts) == 122
    assert "Traceback" not in res.stderr
    assert "XDG_RUNTIME_DIR" not in res.stderr  # pygame's SDL has no video to set up
    assert sorted(os.listdir(tmp_path)) == ["pendulum.gif"]  # nothing partial left


def test_mp4_of_a_mujoco_policy_without_a_display(runs, tmp_path):
    video = tmp_path / "cheetah.mp4"
    res = cli("test_policy", runs["HalfCheetah-v5"], "--video", str(video), "-n", "1",
              "-l", "50", env=NO_DISPLAY)
    assert res.returncode == 0, res.stderr[-2000:]
    assert f"Wrote 51 frames at 20 fps to {video}." in res.stdout
    assert "settotalmass" not in res.stdout + res.stderr  # MuJoCo's note on gymnasium's files
    frames = frames_of(video)
    assert frames.shape == (51, 480, 480, 3)
    assert frames.std() > 5  # a scene, not a blank screen
    assert iio.immeta(video)["fps"] == 20


def test_video_from_python(runs, tmp_path):
    env, get_action = load_policy_and_env(runs["Pendulum-v1"], deterministic=True, video=True)
    try:
        run_policy(env, get_action, max_ep_len=30, num_episodes=1, render=False,
                   video=str(tmp_path / "p.mp4"))
    finally:
        env.close()
    assert frames_of(tmp_path / "p.mp4").shape == (31, 500, 500, 3)


def test_video_errors(runs, tmp_path):
    assert_clean_error(cli("test_policy", runs["Pendulum-v1"], "--video", str(tmp_path / "v.avi"),
                           env=NO_DISPLAY), "must end in .mp4 or .gif", "'.avi'")
    assert_clean_error(cli("test_policy", runs["Pendulum-v1"], "--video",
                           "/etc/passwd/v.mp4", env=NO_DISPLAY), "/etc/passwd is a file")
    assert_clean_error(cli("test_policy", str(tmp_path), "--video", str(tmp_path / "v.mp4"),
                           env=NO_DISPLAY), "No saved model (tf2_save/)")
    assert not list(tmp_path.iterdir())


def test_videos_during_training_change_no_number(tmp_path):
    """video_freq=1: a video after every epoch, in videos/, from a separate process; the
    run's numbers are those of the same run without videos."""
    kw = dict(TINY, epochs=2, max_ep_len=60)
    with_video, without = str(tmp_path / "with"), str(tmp_path / "without")
    sac(pendulum, **kw, video_freq=1,
        logger_kwargs=dict(output_dir=with_video))
    sac(pendulum, **kw, logger_kwargs=dict(output_dir=without))
    assert sorted(os.listdir(os.path.join(with_video, "videos"))) == ["epoch_1.mp4",
                                                                      "epoch_2.mp4"]
    for name in ("epoch_1.mp4", "epoch_2.mp4"):
        assert frames_of(os.path.join(with_video, "videos", name)).shape == (61, 500, 500, 3)
    assert rows(with_video) == rows(without)
    assert not os.path.exists(os.path.join(without, "videos"))


@pytest.mark.slow  # 25 s, a whole script run twice
def test_a_script_without_a_main_guard_gets_told_why_its_video_failed(tmp_path):
    """The rendering process is spawned, so it runs an unguarded script's top level again
    (here: a second sac() into the same, locked, directory) and stops at once."""
    script = tmp_path / "train.py"
    script.write_text(
        "import gymnasium as gym\nfrom spinup_tf2 import sac\n"
        "sac(lambda: gym.make('Pendulum-v1'), epochs=1, steps_per_epoch=300, start_steps=100,"
        " update_after=100, num_test_episodes=1, max_ep_len=50, video_freq=1,"
        " ac_kwargs=dict(hidden_sizes=(16,)), logger_kwargs=dict(output_dir='run'))\n")
    res = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True,
                         text=True, timeout=HANG, env=dict(os.environ, **NO_DISPLAY))
    assert res.returncode == 1
    assert ("rendering process stopped before it began (exit code 1). It is started with "
            "'spawn'") in res.stderr
    assert "under if __name__ == '__main__':" in res.stderr
    assert len(rows(tmp_path / "run")[1]) == 1  # the epoch's row is kept


def test_video_freq_flag_and_bad_values(tmp_path):
    res = cli("sac", "--env", "Pendulum-v1", "--exp_name", "v", "--data_dir", str(tmp_path),
              "--epochs", "1", "--steps_per_epoch", "300", "--start_steps", "100",
              "--update_after", "100", "--num_test_episodes", "1", "--hid", "[8]",
              "--max_ep_len", "20", "--video_freq", "5", env=NO_DISPLAY)
    assert res.returncode == 0, res.stderr[-2000:]
    # Not yet 5 epochs, but the last epoch always gets one.
    assert sorted(os.listdir(tmp_path / "v" / "v_s0" / "videos")) == ["epoch_1.mp4"]
    assert "Video of epoch 1:" in res.stdout
    with pytest.raises(SpinupError, match="video_freq=-1"):
        run_tiny(tmp_path / "bad", video_freq=-1)
    # The launcher refuses it before anything launches (no experiment process, no directory).
    res = cli("sac", "--env", "Pendulum-v1", "--exp_name", "w", "--data_dir", str(tmp_path),
              "--video_freq", "1.5")
    assert_clean_error(res, "video_freq=1.5")
    assert "Running experiment" not in res.stdout and not (tmp_path / "w").exists()
    # 0.1's spelling, logger_kwargs=dict(video_freq=...), still works, with a note.
    with pytest.raises(SpinupError, match="video_freq=-2"):
        run_tiny(tmp_path / "bad", video_freq=-2)


@pytest.mark.slow  # 150 rendered MuJoCo steps; the default MP4 test renders MuJoCo too
def test_mujoco_camera_follows_the_body():
    """A runner stays in the picture: after each rendered step the camera looks at
    the torso's x, which has moved. Run in a fresh process without TensorFlow (see
    RenderingEnv for why MuJoCo's off-screen rendering needs one)."""
    import subprocess
    import sys

    code = """if True:
        import gymnasium as gym, numpy as np
        from spinup_tf2.envs import render_following, use_headless_gl
        use_headless_gl()
        env = gym.make("HalfCheetah-v5", render_mode="rgb_array")
        env.reset(seed=0)
        first = render_following(env)
        viewer = env.unwrapped.mujoco_renderer._viewers["rgb_array"]
        x0 = float(viewer.cam.lookat[0])
        rng = np.random.default_rng(0)
        gaps = []
        for _ in range(150):
            env.step(rng.uniform(-1, 1, 6))
            frame = render_following(env)
            gaps.append(abs(viewer.cam.lookat[0] - env.unwrapped.data.xpos[1][0]))
        print(first.shape, frame.shape, max(gaps), abs(env.unwrapped.data.xpos[1][0] - x0))
    """
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=dict(os.environ, **NO_DISPLAY), timeout=HANG)
    assert res.returncode == 0, res.stderr[-2000:]
    assert res.stdout.startswith("(480, 480, 3) (480, 480, 3)")
    gap, moved = map(float, res.stdout.split()[-2:])
    assert gap == 0.0  # the camera is on the torso at every frame
    assert moved > 0.05  # and the torso went somewhere


def test_a_mujoco_video_shows_the_ground_far_from_the_start():
    """gymnasium's floors are 40 m; a good HalfCheetah runs 100+ m in an episode. With the
    torso put 300 m out, the lower half of the frame is lit floor tiles with the floor
    extended, and the dark void without; the physics is the same either way (the same
    observations for the same actions). In a fresh process without TensorFlow."""
    code = """if True:
        import gymnasium as gym, numpy as np
        from spinup_tf2.envs import extend_floor, render_following, use_headless_gl
        use_headless_gl()
        out = []
        for extend in (False, True):
            env = gym.make("HalfCheetah-v5", render_mode="rgb_array")
            env.reset(seed=0)
            if extend:
                extend_floor(env)
            rng = np.random.default_rng(0)
            obs = [env.step(rng.uniform(-1, 1, 6))[0] for _ in range(100)]
            u = env.unwrapped
            qpos = u.data.qpos.copy()
            qpos[0] = 300.0
            u.set_state(qpos, u.data.qvel)
            frame = render_following(env)
            ground = frame[frame.shape[0] * 3 // 4:].astype(float) / 255
            out.append((np.array(obs), (ground.min(axis=2) > 0.6).mean()))
        print(np.abs(out[0][0] - out[1][0]).max(), out[0][1], out[1][1])
    """
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=dict(os.environ, **NO_DISPLAY), timeout=HANG)
    assert res.returncode == 0, res.stderr[-2000:]
    diff, lit_without, lit_with = map(float, res.stdout.split()[-3:])
    assert diff == 0.0
    assert lit_without < 0.01 and lit_with > 0.2, (lit_without, lit_with)


def test_a_window_that_cannot_open_is_a_message_not_a_crash(runs, monkeypatch):
    """Human rendering runs in its own process: a DISPLAY that answers no one made MuJoCo's
    window code abort the process holding TensorFlow (exit 134); now one paragraph."""
    monkeypatch.delenv("MUJOCO_GL", raising=False)
    res = cli("test_policy", runs["HalfCheetah-v5"], "-n", "1", "-l", "20",
              env={"DISPLAY": ":99", "WAYLAND_DISPLAY": ""})
    assert res.returncode == 2, (res.returncode, res.stderr[-2000:])
    assert_clean_error(res, "HalfCheetah-v5 could not be shown in a window",
                       "its rendering process died", "--norender (-nr)", "--video run.mp4")
