"""Third-party tasks from the command line (issue 81): gymnasium wrappers named with
--env_wrappers (checked as a replay checks them, recorded, replayed), the refusal of
observations SAC cannot read before TensorFlow starts (with the chain that works), an image
inside a Dict refused whatever its dtype, and gymnasium-robotics' known MuJoCo failure as
one paragraph. The packages are real (the test extra installs minigrid, highway-env and
gymnasium-robotics)."""

import json
import os
import subprocess
import sys

import gymnasium as gym
import numpy as np
import pytest
from helpers import HANG, assert_clean_error, cli, run_tiny

from spinup_tf2.envs import parse_wrappers, readable_chain
from spinup_tf2.errors import SpinupError

MINIGRID_CHAIN = "FilterObservation(filter_keys=['direction', 'image']), FlattenObservation"
SHORT = ["--epochs", "1", "--steps_per_epoch", "300", "--start_steps", "100",
         "--update_after", "100", "--num_test_episodes", "1", "--hid", "[16]", "--quiet"]

# The launcher in this process, telling whether it imported TensorFlow.
LAUNCHER = """
import sys
from spinup_tf2.run import main
code = main(["run"] + sys.argv[1:])
print("launcher imported tensorflow:", "tensorflow" in sys.modules)
sys.exit(code)
"""


def launch(*args):
    env = dict(os.environ, SPINUP_TF2_WAIT_BEFORE_LAUNCH="0", MPLBACKEND="Agg")
    return subprocess.run([sys.executable, "-c", LAUNCHER, *args], capture_output=True,
                          text=True, env=env, timeout=HANG)


def test_a_chain_is_parsed_as_data():
    assert parse_wrappers(MINIGRID_CHAIN) == [
        ("FilterObservation", {"filter_keys": ["direction", "image"]}),
        ("FlattenObservation", {})]
    assert parse_wrappers("TimeLimit(max_episode_steps=50)") == [
        ("TimeLimit", {"max_episode_steps": 50})]


@pytest.mark.parametrize("text, words", [
    ("Flaten", "Flaten is not one of the wrappers a replay rebuilds (did you mean Flatten"),
    ("os.system('echo hi')", "is not a wrapper's name or a call of one"),
    ("__import__('os').system('echo hi')", "is not a wrapper's name or a call of one"),
    ("FilterObservation(filter_keys=open('x'))", "is not a plain value"),
    ("FlattenObservation(1)", "FlattenObservation takes its arguments by keyword (none)"),
    ("TimeLimit(max_episode_steps=-3)", "where a replay takes a whole number from 1"),
    ("RecordVideo(video_folder='/tmp')", "RecordVideo is not one of the wrappers"),
    ("FlattenObservation(", "that is not a chain of wrappers"),
])
def test_a_bad_chain_is_one_paragraph_naming_what_is_accepted(text, words):
    with pytest.raises(SpinupError) as err:
        parse_wrappers(text)
    msg = str(err.value)
    assert words in msg and f"--env_wrappers {text!r}" in msg
    assert "FlattenObservation, FrameStackObservation" in msg  # the accepted wrappers


def test_readable_chain_of_spaces():
    box = gym.spaces.Box(-1, 1, (5, 5))
    assert readable_chain(box) == "FlattenObservation"
    assert readable_chain(gym.spaces.Box(-1, 1, (5,))) is None
    text = gym.spaces.Text(10)
    mixed = gym.spaces.Dict(a=gym.spaces.Discrete(3), b=box, t=text)
    assert readable_chain(mixed) == ("FilterObservation(filter_keys=['a', 'b']), "
                                     "FlattenObservation")
    assert readable_chain(gym.spaces.Dict(t=text)) is None
    assert readable_chain(gym.spaces.Discrete(16)) == "FlattenObservation"  # FrozenLake's
    assert readable_chain(text) is None


@pytest.mark.processes
@pytest.mark.parametrize("env_name, chain", [
    ("highway_env:highway-fast-v0", '--env_wrappers "FlattenObservation"'),
    ("minigrid:MiniGrid-Empty-5x5-v0", f'--env_wrappers "{MINIGRID_CHAIN}"'),
])
def test_unreadable_observations_are_refused_before_tensorflow_with_the_chain_that_works(
        tmp_path, env_name, chain):
    res = launch("sac", "--env", env_name, "--data_dir", str(tmp_path), *SHORT)
    assert_clean_error(res, chain, "Nothing was launched")
    assert "launcher imported tensorflow: False" in res.stdout
    assert os.listdir(tmp_path) == []


def test_minigrid_trains_replays_and_exports_through_its_chain(tmp_path):
    """The chain the refusal gives works: the run trains, config.json records the
    wrappers in its spec, and test_policy and the ONNX export rebuild them (they act on the
    flattened observation, so without the wrappers the replay could not run)."""
    res = cli("sac", "--env", "minigrid:MiniGrid-Empty-5x5-v0", "--env_wrappers",
              MINIGRID_CHAIN, "--exp_name", "mg", "--data_dir", str(tmp_path), *SHORT)
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    run = tmp_path / "mg" / "mg_s0"
    spec = json.load(open(run / "config.json"))["env_spec"]
    assert [w["name"] for w in spec["additional_wrappers"]] == ["FilterObservation",
                                                                "FlattenObservation"]
    assert spec["additional_wrappers"][0]["kwargs"]["filter_keys"] == ["direction", "image"]
    res = cli("test_policy", str(run), "--episodes", "2", "--norender")
    assert res.returncode == 0, res.stderr[-2000:]
    assert "EpLen" in res.stdout
    res = cli("export", str(run), "--format", "onnx")
    assert res.returncode == 0, res.stderr[-2000:]
    assert "actions equal" in res.stdout


@pytest.mark.processes
def test_a_bad_chain_and_one_with_pixels_are_refused_before_anything_runs(tmp_path):
    res = launch("sac", "--env", "Pendulum-v1", "--env_wrappers", "Flatten",
                 "--data_dir", str(tmp_path), *SHORT)
    assert_clean_error(res, "Flatten is not one of the wrappers", "Nothing was launched")
    assert "launcher imported tensorflow: False" in res.stdout
    res = launch("sac", "--env", "Pendulum-v1", "--env_wrappers", "FlattenObservation",
                 "--pixels", "--data_dir", str(tmp_path), *SHORT)
    assert_clean_error(res, "--env_wrappers 'FlattenObservation' with --pixels")
    assert os.listdir(tmp_path) == []


class FloatPixels(gym.ObservationWrapper):
    """Pendulum's state beside its rendered frame as float32 numbers in [0, 1]: an image
    of floats inside a Dict."""

    def __init__(self, env):
        super().__init__(env)
        pixels = env.observation_space["pixels"]
        self.observation_space = gym.spaces.Dict(
            state=env.observation_space["state"],
            pixels=gym.spaces.Box(0.0, 1.0, pixels.shape, np.float32))

    def observation(self, obs):
        return dict(state=obs["state"], pixels=obs["pixels"].astype(np.float32) / 255)


def float_pixels():
    env = gym.make("Pendulum-v1", render_mode="rgb_array")
    return FloatPixels(gym.wrappers.AddRenderObservation(env, render_only=False,
                                                         render_key="pixels", obs_key="state"))


def test_an_image_of_floats_inside_a_dict_is_refused_not_flattened(tmp_path):
    with pytest.raises(SpinupError) as err:
        run_tiny(tmp_path / "fp", float_pixels)
    msg = str(err.value)
    assert "'pixels' is an image (Box(0.0, 1.0, (500, 500, 3), float32))" in msg
    assert "Nothing was written" in msg and not (tmp_path / "fp" / "progress.txt").exists()


@pytest.mark.processes
def test_gymnasium_robotics_with_a_mujoco_it_does_not_support_is_one_paragraph(tmp_path):
    """gymnasium-robotics 1.4.2's Fetch tasks stop at a bare AssertionError with MuJoCo
    3.12 or later (the test extra installs the newest MuJoCo); below 3.12 they are made."""
    import mujoco

    newer = tuple(int(p) for p in mujoco.__version__.split(".")[:2]) >= (3, 12)
    res = launch("sac", "--env", "gymnasium_robotics:FetchReach-v4", "--data_dir",
                 str(tmp_path), *SHORT)
    if newer:
        assert_clean_error(res, "gymnasium-robotics", f"installed MuJoCo {mujoco.__version__}",
                           "its tasks need MuJoCo below 3.12", 'pip install -e ".[robotics]"')
        assert "launcher imported tensorflow: False" in res.stdout
        assert os.listdir(tmp_path) == []
    else:
        assert "could not be made" not in res.stdout + res.stderr
