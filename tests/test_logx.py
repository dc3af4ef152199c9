"""EpochLogger: statistics, the table, progress.txt, config.json, save_state."""

import json
import os

import gymnasium as gym
import numpy as np
import pytest

from spinup_tf2.utils.logx import EpochLogger, Logger, colorize


def test_logger_docs_example(tmp_path, capsys):
    logger = EpochLogger(output_dir=str(tmp_path))
    for i in range(10):
        logger.store(Test=i)
    logger.log_tabular("Test", with_min_and_max=True)
    row = dict(logger.log_current_row)
    assert list(row) == ["AverageTest", "StdTest", "MaxTest", "MinTest"]
    assert row["AverageTest"] == pytest.approx(4.5)
    assert row["StdTest"] == pytest.approx(2.87, abs=5e-3)
    assert row["MaxTest"] == 9 and row["MinTest"] == 0
    logger.dump_tabular()
    out = capsys.readouterr().out
    assert "|     AverageTest |             4.5 |" in out
    assert "|         StdTest |            2.87 |" in out
    assert "-" * 37 in out  # 22 + max(15, longest key)
    lines = (tmp_path / "progress.txt").read_text().splitlines()
    assert lines[0] == "AverageTest\tStdTest\tMaxTest\tMinTest"
    assert lines[1] == "4.5\t2.8722813\t9.0\t0.0"


def test_arrays_are_pooled_and_average_only(tmp_path):
    logger = EpochLogger(output_dir=str(tmp_path))
    logger.store(Q=np.array([1.0, 2.0]), Loss=1.0)
    logger.store(Q=np.array([3.0, 4.0]), Loss=3.0)
    logger.log_tabular("Q")
    logger.log_tabular("Loss", average_only=True)
    assert logger.log_current_row["AverageQ"] == pytest.approx(2.5)
    assert logger.log_current_row["StdQ"] == pytest.approx(np.std([1, 2, 3, 4]))
    assert logger.log_current_row["Loss"] == pytest.approx(2.0)
    assert "StdLoss" not in logger.log_current_row


def test_new_key_after_first_row_and_key_twice_are_errors(tmp_path):
    logger = Logger(output_dir=str(tmp_path))
    logger.log_tabular("A", 1)
    with pytest.raises(KeyError, match="already set A"):
        logger.log_tabular("A", 2)
    logger.dump_tabular()
    with pytest.raises(KeyError, match="new key B"):
        logger.log_tabular("B", 1)


def test_missing_key_in_later_row_writes_empty(tmp_path):
    logger = Logger(output_dir=str(tmp_path))
    logger.log_tabular("A", 1)
    logger.log_tabular("B", 2.5)
    logger.dump_tabular()
    logger.log_tabular("A", 3)
    logger.dump_tabular()
    assert (tmp_path / "progress.txt").read_text() == "A\tB\n1\t2.5\n3\t\n"


def test_stored_key_with_no_values_this_epoch_is_nan(tmp_path):
    logger = EpochLogger(output_dir=str(tmp_path))
    logger.store(EpRet=1.0)
    logger.log_tabular("EpRet", with_min_and_max=True)
    logger.dump_tabular()
    logger.log_tabular("EpRet", with_min_and_max=True)
    assert all(np.isnan(v) for v in logger.log_current_row.values())


def test_config_json_format(tmp_path, capsys):
    logger = EpochLogger(output_dir=str(tmp_path), exp_name="exp")
    logger.save_config(dict(alpha=0.2, hid=(64, 64), act=np.tanh, env_fn=lambda: None))
    text = (tmp_path / "config.json").read_text()
    assert '    "alpha":\t0.2,' in text.splitlines()
    cfg = json.loads(text)
    assert cfg == {"act": "tanh", "alpha": 0.2, "env_fn": cfg["env_fn"], "exp_name": "exp",
                   "hid": [64, 64]}
    assert cfg["env_fn"].startswith("<function ") and "lambda" in cfg["env_fn"]
    assert list(cfg) == sorted(cfg)
    assert "Saving config:" in capsys.readouterr().out


def test_existing_run_dir_warns(tmp_path, capsys):
    Logger(output_dir=str(tmp_path))
    assert "already exists" not in capsys.readouterr().out  # an empty directory is fine
    Logger(output_dir=str(tmp_path))  # now it holds a progress.txt
    assert "already exists! Storing info there anyway." in capsys.readouterr().out


def test_save_state_warns_when_env_cannot_be_pickled(tmp_path, capsys):
    logger = EpochLogger(output_dir=str(tmp_path))
    logger.save_state({"env": gym.make("Pendulum-v1"), "bad": (x for x in range(3))})
    assert "could not pickle state_dict" in capsys.readouterr().out
    assert not os.path.exists(tmp_path / "vars.pkl")
    assert not os.path.exists(tmp_path / "vars.tmp.pkl")
    logger.save_state({"env": gym.make("Pendulum-v1")}, itr=3)
    import joblib
    assert joblib.load(tmp_path / "vars3.pkl")["env"].spec.id == "Pendulum-v1"


def test_save_state_writes_the_env_wrapper_statistics(tmp_path):
    """An env with a normalizing wrapper: its statistics go beside the policy
    (env_state.json), which replays read back; an env without one, or a state_dict
    whose env is no environment at all, writes none."""
    from spinup_tf2 import envs

    env = gym.wrappers.NormalizeObservation(gym.make("Pendulum-v1"))
    env.reset(seed=0)
    for _ in range(5):
        env.step(env.action_space.sample())
    EpochLogger(output_dir=str(tmp_path / "norm")).save_state({"env": env})
    [stats] = envs.read_state(str(tmp_path / "norm"))
    assert stats["wrapper"] == "NormalizeObservation" and stats["count"] > 5
    np.testing.assert_allclose(stats["mean"], env.obs_rms.mean)
    for name, other in [("plain", gym.make("Pendulum-v1")), ("odd", 3)]:
        EpochLogger(output_dir=str(tmp_path / name)).save_state({"env": other})
        assert not os.path.exists(tmp_path / name / "env_state.json")


def test_no_file_mode_writes_nothing(tmp_path, capsys):
    logger = EpochLogger(output_fname=None)
    logger.store(X=1.0)
    logger.log_tabular("X")
    logger.dump_tabular()
    assert logger.output_dir is None
    assert "AverageX" in capsys.readouterr().out


def test_colorize_only_where_colour_shows(monkeypatch):
    """Spinning Up's codes on a terminal (FORCE_COLOR stands for one here); plain text into
    a file or a pipe, as pytest's capture is, and with NO_COLOR."""
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    assert colorize("hi", "green", bold=True) == "hi"  # stdout is not a terminal here
    monkeypatch.setenv("FORCE_COLOR", "1")
    assert colorize("hi", "green", bold=True) == "\x1b[32;1mhi\x1b[0m"
    assert colorize("hi", "red", highlight=True) == "\x1b[41mhi\x1b[0m"
    monkeypatch.setenv("NO_COLOR", "1")
    assert colorize("hi", "green") == "hi"


def test_a_new_output_is_one_class_and_gets_every_row(tmp_path):
    """logger_kwargs=dict(outputs=[...]): an Output subclass receives each row as progress.txt
    has it (columns in order, the row's index), from a real SAC run; a value that is not an
    Output is refused before anything is written."""
    from helpers import read_progress, run_tiny

    from spinup_tf2.errors import SpinupError
    from spinup_tf2.utils.logx import Output

    class Rows(Output):
        def __init__(self):
            self.rows = []

        def write(self, row, index):
            self.rows.append((index, dict(row)))

    rows = Rows()
    out = str(tmp_path / "run")
    run_tiny(out, epochs=2, logger_kwargs=dict(outputs=[rows]))
    header, written = read_progress(out)
    assert [i for i, _ in rows.rows] == [0, 1]
    assert [list(r) for _, r in rows.rows] == [header, header]
    assert [{k: str(v) for k, v in r.items()} for _, r in rows.rows] == written
    with pytest.raises(SpinupError, match="outputs must be a list of logx.Output"):
        run_tiny(tmp_path / "bad", logger_kwargs=dict(outputs=[print]))
    assert not os.path.exists(tmp_path / "bad")


def test_a_save_survives_an_edit_of_the_source_during_the_run(tmp_path):
    """The export is traced at every save; with an editable install a user may edit the
    package while a run goes on. Saving must not read the source again (AutoGraph did, at
    the old line numbers, picked the wrong lambda, and the run died at its next save)."""
    import shutil
    import subprocess
    import sys

    import spinup_tf2

    pkg = tmp_path / "pkg"
    shutil.copytree(os.path.dirname(spinup_tf2.__file__), pkg / "spinup_tf2",
                    ignore=shutil.ignore_patterns("__pycache__"))
    script = f"""
import pathlib
import gymnasium as gym
import tensorflow as tf
from spinup_tf2.algos.sac import core
env = gym.make("Pendulum-v1")
ac = core.MLPActorCritic(env.observation_space, env.action_space, hidden_sizes=(8,))
export = core.ActorCriticExport(ac, 3, 1)
src = pathlib.Path(core.__file__)
src.write_text("\\n\\n" + src.read_text())  # the edit moves every line down two
tf.saved_model.save(export, {str(tmp_path / 'save')!r}, signatures=export.export_signatures())
print(sorted(tf.saved_model.load({str(tmp_path / 'save')!r}).signatures))
"""
    env = dict(os.environ, PYTHONPATH=str(pkg), TF_CPP_MIN_LOG_LEVEL="2")
    res = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                         text=True, timeout=300, cwd=tmp_path)
    assert res.returncode == 0, res.stderr[-3000:]
    assert "['mu', 'pi', 'q1', 'q2', 'serving_default']" in res.stdout
