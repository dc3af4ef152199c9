"""The run directory's owner: atomic writers, readers with one error policy, exact overwrite."""

import json
import os

import gymnasium as gym
import pytest
from helpers import TINY, rows

from spinup_tf2 import rundir, sac
from spinup_tf2.errors import SpinupError


def test_temporary_names_keep_the_suffix():
    assert rundir.tmp_name("/r/config.json") == "/r/config.tmp.json"
    assert rundir.tmp_name("/r/videos/epoch_3.mp4") == "/r/videos/epoch_3.tmp.mp4"
    assert rundir.tmp_name("/r/tf2_save") == "/r/tf2_save.tmp"


def test_atomic_writers_leave_the_old_version_whole_on_failure(tmp_path):
    path = str(tmp_path / "config.json")
    rundir.write_text(path, "old")
    with pytest.raises(RuntimeError):
        with rundir.atomic_file(path) as tmp:
            open(tmp, "w").write("half")
            raise RuntimeError("killed mid-write")
    assert open(path).read() == "old" and os.listdir(tmp_path) == ["config.json"]

    folder = str(tmp_path / "tf2_save")
    with rundir.atomic_dir(folder) as tmp:
        open(os.path.join(tmp, "a"), "w").write("1")
    with pytest.raises(RuntimeError):
        with rundir.atomic_dir(folder) as tmp:
            open(os.path.join(tmp, "a"), "w").write("2")
            raise RuntimeError("killed mid-write")
    assert open(os.path.join(folder, "a")).read() == "1"
    assert sorted(os.listdir(tmp_path)) == ["config.json", "tf2_save"]
    # A kill between the two renames leaves only the previous version, under .old: found.
    os.rename(folder, folder + rundir.OLD)
    assert rundir.existing_dir(folder) == folder + rundir.OLD
    assert rundir.find_saves(str(tmp_path)) == {"": folder + rundir.OLD}


@pytest.mark.parametrize("text, words", [
    ("{not json", "cannot be read as JSON"),
    ('["a", "list"]', "holds a JSON list"),
    ("", "cannot be read as JSON"),
])
def test_read_config_one_error_policy(tmp_path, text, words):
    (tmp_path / "config.json").write_text(text)
    with pytest.raises(SpinupError, match=words):
        rundir.read_config(str(tmp_path))
    assert rundir.read_config(str(tmp_path / "none")) is None


def test_malformed_config_is_one_paragraph_in_every_reader(tmp_path, capfd):
    from helpers import run_main

    (tmp_path / "progress.txt").write_text("Epoch\tAverageEpRet\n1\t2.0\n")
    (tmp_path / "config.json").write_text("[1, 2]")
    os.makedirs(tmp_path / "tf2_save")
    for args in (["plot", str(tmp_path), "--savefig", str(tmp_path / "f.png")],
                 ["test_policy", str(tmp_path), "-nr", "-n", "1"]):
        res = run_main(capfd, *args)
        assert res.returncode == 2 and "holds a JSON list" in res.stderr, (args, res.stderr)
    assert not (tmp_path / "f.png").exists()


def test_read_progress_keeps_whole_rows_only(tmp_path, capsys):
    (tmp_path / "progress.txt").write_text("Epoch\tX\n1\t1.5\n2\n3\t3.5\n4\t4")
    frame = rundir.read_progress(str(tmp_path))
    assert list(frame["Epoch"]) == [1, 3] and list(frame["X"]) == [1.5, 3.5]
    out = capsys.readouterr().out
    assert "skipped line 3" in out and "skipped the last line" in out
    assert rundir.progress_rows(str(tmp_path)) == 2


def test_overwrite_removes_exactly_what_a_run_writes(tmp_path):
    out = str(tmp_path / "run")
    kw = dict(TINY, epochs=1, num_test_episodes=1)
    sac(lambda: gym.make("Pendulum-v1"), **kw, logger_kwargs=dict(output_dir=out))
    keep = ["tf2_save_backup", "vars_notes.pkl", "my_progress.txt", "train_state_copy",
            "stdout.txt", "policy.onnx"]
    for name in keep:
        os.makedirs(os.path.join(out, name)) if "." not in name else open(
            os.path.join(out, name), "w").write("mine")
    first = rows(out)
    with pytest.raises(SpinupError, match="already holds a run"):
        sac(lambda: gym.make("Pendulum-v1"), **kw, logger_kwargs=dict(output_dir=out))
    sac(lambda: gym.make("Pendulum-v1"), **kw, overwrite=True,
        logger_kwargs=dict(output_dir=out))
    assert rows(out) == first
    assert sorted(os.listdir(out)) == sorted(keep + ["config.json", "progress.txt", "tf2_save",
                                                     "train_state", "vars.pkl"])
    config = json.load(open(os.path.join(out, "config.json")))
    assert config["overwrite"] is True and config["video_freq"] == 0


def test_logger_kwargs_overwrite_still_works_with_a_note(tmp_path, capsys):
    out = str(tmp_path / "run")
    kw = dict(TINY, epochs=1, num_test_episodes=1)
    sac(lambda: gym.make("Pendulum-v1"), **kw, logger_kwargs=dict(output_dir=out))
    capsys.readouterr()
    sac(lambda: gym.make("Pendulum-v1"), **kw,
        logger_kwargs=dict(output_dir=out, overwrite=True))
    printed = capsys.readouterr().out
    assert "logger_kwargs['overwrite'] is deprecated" in printed
    assert "overwrite=True: removed the earlier run" in printed
    config = json.load(open(os.path.join(out, "config.json")))
    assert config["overwrite"] is True and "overwrite" not in config["logger_kwargs"]


def test_plot_savefig_names_its_format_or_refuses(tmp_path, capfd):
    from helpers import run_main

    run = tmp_path / "exp" / "exp_s0"
    os.makedirs(run)
    (run / "progress.txt").write_text("Epoch\tTotalEnvInteracts\tAverageEpRet\n1\t10\t1.0\n"
                                      "2\t20\t2.0\n")
    res = run_main(capfd, "plot", str(run), "--savefig", str(tmp_path / "f.xyz"))
    assert res.returncode == 2 and "cannot write '.xyz' files" in res.stderr
    res = run_main(capfd, "plot", str(run), "--savefig", str(tmp_path / "fig"))
    assert res.returncode == 0, res.stderr
    assert sorted(os.listdir(tmp_path)) == ["exp", "fig.png"]  # no .tmp left, no bare 'fig'
