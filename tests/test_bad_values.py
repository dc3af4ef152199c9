"""Bad values are refused before anything is written, each in one paragraph: tried the way
the run uses them (a step, not only a construction), within documented bounds, and the
launcher's own checks before a grid is built."""

import os
import resource
import subprocess
import sys

import gymnasium as gym
import numpy as np
import pytest
from helpers import HANG, assert_clean_error, cli, run_main

from spinup_tf2 import sac
from spinup_tf2.errors import SpinupError

SHORT = ["--epochs", "1", "--steps_per_epoch", "200", "--start_steps", "100",
         "--update_after", "100", "--num_test_episodes", "1"]


@pytest.mark.parametrize("args, words", [
    (["--env_kwargs:g", '"abc"'], "fails at its first step (TypeError"),
    (["--exp_name", "x" * 300], "exp_name of 300 bytes"),
    (["--pixels", "--image_size", "8"], "--image_size must be a whole number from 16 to 1024"),
    (["--pixels", "--frame_stack", "100000"], "--frame_stack must be a whole number from 1 to 16"),
    (["--recurrent", "--ac_kwargs:sequence_length", "100000000"],
     "sequence_length=100000000 (ac_kwargs); it must be a whole number from 1 to 1000"),
])
def test_a_bad_value_is_refused_before_anything_is_written(tmp_path, capfd, args, words):
    """Each of these was a traceback after config.json was written, or no answer in a
    minute (a 100,000-frame stack filled the memory until the renderer was killed)."""
    data = tmp_path / "data"
    res = run_main(capfd, "sac", "--env", "Pendulum-v1", *args, "--data_dir", str(data), *SHORT)
    assert_clean_error(res, words, "Nothing was written")
    assert not data.exists() or not any(files for _, _, files in os.walk(data))


def test_an_empty_data_dir_is_refused_not_replaced_by_the_default(capfd):
    res = run_main(capfd, "sac", "--env", "Pendulum-v1", "--data_dir", "", *SHORT)
    assert_clean_error(res, "--data_dir '' names no directory")


class Misbehaving(gym.Wrapper):
    """Pendulum whose step returns one thing of the wrong kind."""

    def __init__(self, kind):
        super().__init__(gym.make("Pendulum-v1"))
        self.kind = kind

    def step(self, action):
        o, r, terminated, truncated, info = self.env.step(action)
        if self.kind == "reward":
            r = None
        elif self.kind == "shape":
            o = np.zeros(5)
        elif self.kind == "flag":
            terminated = "no"
        return o, r, terminated, truncated, info


@pytest.mark.parametrize("kind, words", [
    ("reward", "reward=None (NoneType), not a number"),
    ("shape", "an observation of shape [5] from step where its observation_space"),
    ("flag", "terminated='no' (str), not True or False"),
])
def test_a_user_environment_that_returns_the_wrong_thing_is_named_at_its_first_step(
        tmp_path, kind, words):
    out = tmp_path / "run"
    with pytest.raises(SpinupError, match="at its first steps") as err:
        sac(lambda: Misbehaving(kind), epochs=1, steps_per_epoch=2000,
            logger_kwargs=dict(output_dir=str(out)))
    assert words in str(err.value) and "the reward as a float" in str(err.value)
    assert not out.exists() or not os.listdir(out)


def test_images_smaller_than_the_encoder_takes_are_refused():
    from spinup_tf2.algos.sac.pixels import PixelEncoder

    with pytest.raises(SpinupError, match="need at least 15x15"):
        PixelEncoder((14, 14, 9))
    assert PixelEncoder((15, 15, 9)).out_dim == 32  # one pixel left, 32 channels


def test_the_cpu_check_comes_before_a_million_variant_grid(tmp_path):
    """A 1M-variant grid took 90 s to reach a --cpu refusal that needs no grid."""
    tens = [str(x) for x in range(11, 21)]
    fractions = [f"0.9{d}" for d in range(10)]
    res = cli("sac", "--env", "Pendulum-v1", "--data_dir", str(tmp_path), "--cpu", "64",
              "--seed", *[str(s) for s in range(10)], "--batch_size", *tens,
              "--gamma", *fractions, "--polyak", *fractions, "--lr", *fractions,
              "--alpha", *fractions, timeout=HANG)
    assert_clean_error(res, "num_cpu=64 (--cpu) asks for 64 processes")
    assert "Preparing to run" not in res.stdout


@pytest.fixture
def words_and_nans(tmp_path):
    run = tmp_path / "exp" / "exp_s0"
    os.makedirs(run)
    (run / "progress.txt").write_text("Epoch\tTotalEnvInteracts\tAverageEpRet\tWord\tNothing\n"
                                      "1\t10\t1.0\tabc\tnan\n2\t20\t2.0\tdef\tnan\n")
    return tmp_path / "exp"


@pytest.mark.parametrize("value, words", [
    ("Word", "column 'Word' holds words ('abc', 'def'), not numbers"),
    ("Nothing", "The column 'Nothing' holds no numbers in any run (all NaN"),
])
def test_plot_refuses_columns_it_cannot_draw(words_and_nans, tmp_path, capfd, value, words):
    res = run_main(capfd, "plot", str(words_and_nans), "--value", value,
                   "--savefig", str(tmp_path / "p.png"))
    assert_clean_error(res, words)
    assert not (tmp_path / "p.png").exists()


def test_plot_on_a_file_size_limit_is_a_paragraph_and_leaves_no_file(words_and_nans, tmp_path):
    def limit():
        resource.setrlimit(resource.RLIMIT_FSIZE, (2000, 2000))  # a PNG takes more

    out = tmp_path / "p.png"
    res = subprocess.run([sys.executable, "-m", "spinup_tf2.run", "plot", str(words_and_nans),
                          "--savefig", str(out)], capture_output=True, text=True, timeout=HANG,
                         preexec_fn=limit, env=dict(os.environ, MPLBACKEND="Agg"))
    assert_clean_error(res, f"The figure could not be written to {out} (File too large)",
                       "no partial file")
    assert os.listdir(tmp_path) == ["exp"]


def test_pixels_of_an_environment_that_cannot_render_is_named_as_such(tmp_path):
    """It was blamed on the OpenGL platform (install EGL); a class as the entry point was a
    traceback from gymnasium's JSON."""
    from helpers import NoRender

    from spinup_tf2.envs import make_pixels

    gym.register("NoRenderByName-v0", entry_point="helpers:NoRender", max_episode_steps=20)
    gym.register("NoRenderByClass-v0", entry_point=NoRender, max_episode_steps=20)
    out = tmp_path / "run"
    with pytest.raises(SpinupError, match="must render RGB frames") as err:
        sac(lambda: make_pixels("NoRenderByName-v0", 32), epochs=1, steps_per_epoch=2000,
            logger_kwargs=dict(output_dir=str(out)))
    assert "OpenGL" not in str(err.value) and (not out.exists() or not os.listdir(out))
    with pytest.raises(SpinupError, match="not a 'module:Name' string"):
        make_pixels("NoRenderByClass-v0", 32)


@pytest.mark.parametrize("fmt", ["onnx", "tflite"])
def test_export_on_a_file_size_limit_is_a_paragraph_and_leaves_no_file(tmp_path, fmt):
    """A write the disk refuses (here RLIMIT_FSIZE: past it writes fail with EFBIG, as on a
    full disk) says what failed, and no partial file is left at the name asked for."""
    from helpers import run_tiny

    run = run_tiny(tmp_path / "run", num_test_episodes=1)

    def limit():
        resource.setrlimit(resource.RLIMIT_FSIZE, (2000, 2000))  # the policy file takes more

    out = tmp_path / f"policy.{fmt}"
    res = subprocess.run([sys.executable, "-m", "spinup_tf2.run", "export", run, "--format", fmt,
                          "--out", str(out)], capture_output=True, text=True, timeout=HANG,
                         preexec_fn=limit, env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"))
    assert_clean_error(res, f"--out '{out}' cannot be written (File too large)")
    assert sorted(os.listdir(tmp_path)) == ["run"]
