"""Success as environments report it: ``info['is_success']`` (gymnasium-robotics, SB3) or
``info['success']`` (PointMaze, Meta-World). A real Pendulum-v1 whose wrapper reports
``success`` (the pendulum upright at the episode's last step) gets SuccessRate and
TestSuccessRate columns, from one copy and from two, and test_policy prints each episode's."""

import gymnasium as gym
import numpy as np
import pytest
from helpers import column, read_progress

from spinup_tf2 import sac
from spinup_tf2.envs import success_key


class ReportsSuccess(gym.Wrapper):
    """Pendulum-v1 that says, under ``info['success']``, whether the pole is upright."""

    def step(self, action):
        o, r, terminated, truncated, info = self.env.step(action)
        return o, r, terminated, truncated, dict(info, success=float(o[0] > 0.9))


def upright_pendulum():
    return ReportsSuccess(gym.make("Pendulum-v1", max_episode_steps=100))


def test_the_success_key_is_the_first_an_info_holds():
    assert success_key({"is_success": 1.0, "success": 0.0}) == "is_success"
    assert success_key({"success": True}) == "success"
    assert success_key({"reward_ctrl": 0.1}) is None and success_key(None) is None


@pytest.mark.parametrize("num_envs", [1, 2])
def test_an_env_reporting_success_gets_success_columns(num_envs, tmp_path):
    out = str(tmp_path / "s")
    sac(upright_pendulum, seed=0, epochs=2, steps_per_epoch=400, start_steps=200,
        update_after=200, num_test_episodes=2, batch_size=32, num_envs=num_envs,
        ac_kwargs=dict(hidden_sizes=(16,)), logger_kwargs=dict(output_dir=out))
    header, _ = read_progress(out)
    assert header[-2:] == ["SuccessRate", "TestSuccessRate"]
    for key in ("SuccessRate", "TestSuccessRate"):
        values = column(out, key)
        assert len(values) == 2 and all(0.0 <= v <= 1.0 for v in values), (key, values)
    assert not np.isnan(column(out, "SuccessRate")).any()  # 400 steps end 4 episodes
