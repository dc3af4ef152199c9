"""Learning quality: SAC with Spinning Up's defaults learns Pendulum-v1."""

import os

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


@pytest.mark.slow
def test_pendulum_learns_with_auto_alpha(tmp_path):
    out = str(tmp_path / "pendulum_auto")
    sac(lambda: gym.make("Pendulum-v1"), seed=0, epochs=6, steps_per_epoch=2000,
        start_steps=2000, alpha="auto", logger_kwargs=dict(output_dir=out))
    test_returns = column(out, "AverageTestEpRet")
    alphas = column(out, "Alpha")
    print(f"alpha='auto': AverageTestEpRet {[round(r, 1) for r in test_returns]}, "
          f"Alpha {[round(a, 3) for a in alphas]}")
    assert test_returns[-1] > -250, test_returns
    assert alphas[-1] < 1.0  # it moved from its start


@pytest.mark.slow
def test_quickstart_notebook_runs_end_to_end():
    """The notebook, executed through a real Jupyter kernel."""
    import nbformat
    from nbclient import NotebookClient

    here = os.path.dirname(os.path.abspath(__file__))
    nb_dir = os.path.join(os.path.dirname(here), "notebooks")
    nb = nbformat.read(os.path.join(nb_dir, "sac_quickstart.ipynb"), as_version=4)
    NotebookClient(nb, timeout=900, kernel_name="python3",
                   resources={"metadata": {"path": nb_dir}}).execute()
    outputs = [o for cell in nb.cells if cell.cell_type == "code" for o in cell.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    images = [o for o in outputs if "image/png" in o.get("data", {})]
    assert len(images) >= 3  # Performance, AverageQ1Vals, the HalfCheetah comparison
    text = "".join(o.get("text", "") for o in outputs if o.output_type == "stream")
    assert "Episode 0 \t EpRet" in text and "AverageTestEpRet" in text
