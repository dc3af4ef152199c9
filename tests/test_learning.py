"""Learning quality: SAC with Spinning Up's defaults learns Pendulum-v1."""


import gymnasium as gym
import pytest
from helpers import column

from spinup_tf2 import sac


@pytest.mark.slow
@pytest.mark.parametrize("seed", [0, 1])
def test_pendulum_learns_within_12k_steps(seed, tmp_path):
    out = str(tmp_path / f"pendulum_s{seed}")
    # Spinning Up's defaults except epochs, steps_per_epoch and start_steps.
    sac(lambda: gym.make("Pendulum-v1"), seed=seed, epochs=6, steps_per_epoch=2000,
        start_steps=2000, logger_kwargs=dict(output_dir=out))
    test_returns = column(out, "AverageTestEpRet")
    steps = column(out, "TotalEnvInteracts", int)
    print(f"seed {seed}: AverageTestEpRet by epoch {[round(r, 1) for r in test_returns]}")
    assert steps[-1] == 12000
    assert max(test_returns) > -250, test_returns
    assert test_returns[-1] > -250, test_returns
