"""Learning quality with automatic entropy tuning: alpha='auto' learns Pendulum-v1."""

import pytest
from helpers import column, pendulum

from spinup_tf2 import sac


@pytest.mark.slow
def test_pendulum_learns_with_auto_alpha(tmp_path):
    out = str(tmp_path / "pendulum_auto")
    sac(pendulum, seed=0, epochs=6, steps_per_epoch=2000,
        start_steps=2000, alpha="auto", logger_kwargs=dict(output_dir=out))
    test_returns = column(out, "AverageTestEpRet")
    alphas = column(out, "Alpha")
    print(f"alpha='auto': AverageTestEpRet {[round(r, 1) for r in test_returns]}, "
          f"Alpha {[round(a, 3) for a in alphas]}")
    assert test_returns[-1] > -250, test_returns
    assert alphas[-1] < 1.0  # it moved from its start
