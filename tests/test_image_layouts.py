"""Images as third-party packages give them: channels-first (gymnasium's frame stacks,
Atari's ``(4, 84, 84)``) or without a channel axis (grayscale ``(H, W)``), read as
``(H, W, C)`` by the pixel actor-critic, and saved and exported taking them as given."""

import gymnasium as gym
import numpy as np
import pytest
import tensorflow as tf
from helpers import run_tiny, straight_and_resumed
from pixel_tasks import DotToCentre

from spinup_tf2.envs import ImageLayout, image_layout
from spinup_tf2.errors import SpinupError
from spinup_tf2.policy.export import export_policy

PIXELS = dict(batch_size=16, replay_size=2000, ac_kwargs=dict(hidden_sizes=(16,)))


class ChannelsFirst(gym.ObservationWrapper):
    """DotToCentre's RGB image as (3, H, W)."""

    def __init__(self, size=24):
        super().__init__(DotToCentre(size))
        self.observation_space = gym.spaces.Box(0, 255, (3, size, size), np.uint8)

    def observation(self, obs):
        return np.ascontiguousarray(np.moveaxis(obs, -1, 0))


class Gray(gym.ObservationWrapper):
    """DotToCentre's image in grayscale, (H, W)."""

    def __init__(self, size=24):
        super().__init__(DotToCentre(size))
        self.observation_space = gym.spaces.Box(0, 255, (size, size), np.uint8)

    def observation(self, obs):
        return obs[..., 0]


def test_which_images_get_a_layout():
    box = lambda *shape: gym.spaces.Box(0, 255, shape, np.uint8)  # noqa: E731
    assert image_layout(box(4, 84, 84)).space.shape == (84, 84, 4)
    assert image_layout(box(84, 84)).space.shape == (84, 84, 1)
    assert image_layout(box(84, 84, 4)) is None  # channels-last: as it is
    assert image_layout(box(7, 7, 3)) is None  # MiniGrid's: channels-last, small
    layout = ImageLayout(box(2, 20, 30))
    img = np.arange(2 * 20 * 30, dtype=np.uint8).reshape(2, 20, 30)
    assert np.array_equal(layout.flatten(img)[..., 1], img[1])
    assert np.array_equal(layout.flatten_batch(img[None])[0], layout.flatten(img))


@pytest.mark.parametrize("env_fn", [ChannelsFirst, pytest.param(Gray, marks=pytest.mark.slow)])
def test_channels_first_and_gray_images_train_resume_and_ship(tmp_path, env_fn):
    straight, resumed = straight_and_resumed(tmp_path, 2, 1, env_fn, **PIXELS)
    assert straight == resumed and len(straight[1]) == 2
    out = str(tmp_path / "straight")
    model = tf.saved_model.load(out + "/tf2_save")
    env = env_fn()
    obs = np.stack([env.reset(seed=i)[0] for i in range(5)])  # as the environment gives them
    mu = model.mu(tf.constant(obs)).numpy()
    assert mu.shape == (5, 2) and np.std(mu) > 1e-4
    for fmt in ("onnx", "tflite"):
        result = export_policy(out, fmt, str(tmp_path / f"p.{fmt}"))
        assert result["max_abs_diff"] <= 1e-5
        assert tuple(result["obs_dim"]) == env.observation_space.shape


def test_images_too_small_are_refused_with_the_smallest_size(tmp_path):
    with pytest.raises(SpinupError, match="need at least 15x15"):
        run_tiny(tmp_path / "run", lambda: DotToCentre(8), **PIXELS)
