"""The quick-start notebook, executed end to end."""

import os

import pytest


@pytest.mark.slow
@pytest.mark.processes  # a Jupyter kernel runs the notebook
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
    # The policy's video, inline: a GIF of one 200-step Pendulum episode (a frame
    # before each step and one of the last state), as the notebook's text says.
    import base64
    import io

    from PIL import Image, ImageSequence

    gifs = [o["data"]["image/gif"] for o in outputs if "image/gif" in o.get("data", {})]
    assert len(gifs) == 1
    with Image.open(io.BytesIO(base64.b64decode(gifs[0]))) as gif:
        assert gif.size == (500, 500)
        durations = [frame.info["duration"] for frame in ImageSequence.Iterator(gif)]
    # GIF merges identical consecutive frames (a balanced pendulum) into longer ones
    # and keeps hundredths of a second: 201 frames of 1/30 s, give or take rounding.
    assert 201 * 30 <= sum(durations) <= 201 * 1000 / 30 + 10 * len(durations)
    assert "Wrote 201 frames at 30 fps" in text
