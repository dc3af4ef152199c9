import os
import sys

import pytest

# Tests and the subprocesses they launch: no countdown, no TensorFlow start-up noise.
os.environ["SPINUP_TF2_WAIT_BEFORE_LAUNCH"] = "0"
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PYTHON = sys.executable


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: learning runs and notebook execution (minutes)")


@pytest.fixture
def pendulum_fn():
    import gymnasium as gym

    return lambda: gym.make("Pendulum-v1")
