"""Observation normalisation (normalize_obs=True)."""

import json
import os

import gymnasium as gym
import numpy as np
import pytest
from helpers import TINY

from spinup_tf2 import sac
from spinup_tf2.algos.sac import core, fast_path
from spinup_tf2.errors import SpinupError


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
    np_actor = fast_path.NumpyActor.maybe(ac.pi)
    np.testing.assert_allclose(np_actor(obs, np.zeros((1, 1), np.float32)),
                               model.mu(obs).numpy(), rtol=1e-4, atol=1e-5)
    assert json.load(open(os.path.join(out, "config.json")))["normalize_obs"] is True


def test_normalize_obs_needs_box_observations(tmp_path):
    with pytest.raises(SpinupError, match="normalize_obs=True needs a Box observation space"):
        sac(lambda: gym.make("FrozenLake-v1"), normalize_obs=True,
            logger_kwargs=dict(output_dir=str(tmp_path / "f")))

