"""Box actions with bounds of their own in each dimension (CarRacing's, many robot arms'):
the policy acts in [-1, 1], every action reaches the environment inside its bounds, and the
saved policy, its exports and its critics speak the environment's units."""

import gymnasium as gym
import numpy as np
import pytest
import tensorflow as tf
from helpers import TINY, run_tiny, straight_and_resumed
from test_export import run_onnx, run_tflite

from spinup_tf2.envs import action_scale
from spinup_tf2.policy.export import export_policy

TARGET = np.array([0.5, 0.8, 0.2], np.float32)


class Bandit(gym.Env):
    """One state; the reward is minus the squared distance of the action to TARGET, inside
    bounds [-1, 0, 0] .. [1, 1, 1]; episodes of 7 steps. Any action outside the bounds
    fails the run."""

    observation_space = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)
    action_space = gym.spaces.Box(np.array([-1, 0, 0], np.float32), np.ones(3, np.float32))

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return np.zeros(1, np.float32), {}

    def step(self, action):
        assert self.action_space.contains(np.asarray(action, np.float32)), action
        self.t += 1
        reward = -float(np.sum((np.asarray(action) - TARGET) ** 2))
        return np.zeros(1, np.float32), reward, False, self.t >= 7, {}


def test_the_map_onto_the_bounds():
    scale = action_scale(Bandit.action_space)
    assert np.allclose(scale.to_env([[-1, -1, -1], [1, 1, 1], [0, 0, 0]]),
                       [[-1, 0, 0], [1, 1, 1], [0, 0.5, 0.5]])
    assert scale.to_env([2.0, -3.0, 0.0]).tolist() == [1.0, 0.0, 0.5]  # clipped
    assert action_scale(gym.spaces.Box(-2.0, 2.0, (3,))) is None  # SAC's own [-a, a]
    assert action_scale(gym.spaces.Box(-np.inf, np.inf, (3,))) is None  # refused elsewhere


def test_a_policy_learns_in_the_environments_units_and_ships_in_them(tmp_path):
    """The deterministic action learned is TARGET in the environment's units, as the
    SavedModel gives it, the ONNX and TF Lite files (within 1e-5 of it), and the critics
    take such actions."""
    out = run_tiny(tmp_path / "run", Bandit, epochs=3, steps_per_epoch=1000, start_steps=500,
                   update_after=200, alpha=0.01)
    model = tf.saved_model.load(out + "/tf2_save")
    obs = np.zeros((4, 1), np.float32)
    mu = model.mu(tf.constant(obs)).numpy()
    assert np.max(np.abs(mu[0] - TARGET)) < 0.1, mu[0]
    q = model.q1(tf.constant(obs[:2]), tf.constant([TARGET, [-1, 0, 1]])).numpy()
    assert q[0] > q[1] + 1.0  # TARGET, in the environment's units, is the better action
    served = model.signatures["serving_default"](x=tf.constant(obs))["action"].numpy()
    assert np.max(np.abs(served - mu)) <= 1e-6
    for fmt, runner in (("onnx", run_onnx), ("tflite", run_tflite)):
        path = str(tmp_path / f"p.{fmt}")
        export_policy(out, fmt, path)
        assert np.max(np.abs(runner(path, obs) - mu)) <= 1e-5, fmt


@pytest.mark.parametrize("num_envs", [1, 2])
def test_bounded_actions_resume_exactly(tmp_path, num_envs):
    """With an episode in progress at the stop (7-step episodes, 400-step epochs), and over
    vector copies; every action of both runs inside the bounds (the env asserts it)."""
    straight, resumed = straight_and_resumed(tmp_path, 2, 1, Bandit, num_envs=num_envs,
                                             num_test_episodes=1)
    assert len(straight[1]) == 2
    if num_envs == 1:  # copies restart their episodes on resume, so only one env is exact
        assert straight == resumed


def test_bounded_actions_from_the_command_line_unchanged_for_symmetric_ones(tmp_path):
    """Pendulum's [-2, 2] is SAC's own a * tanh: no map, the numbers of before."""
    assert action_scale(gym.make("Pendulum-v1").action_space) is None
    run_tiny(tmp_path / "p", epochs=1, **{k: v for k, v in TINY.items() if k == "batch_size"})
