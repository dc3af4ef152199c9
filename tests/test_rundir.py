"""The run directory's owner: atomic writers, readers with one error policy, exact overwrite."""

import json
import os

import pytest
from helpers import TINY, pendulum, rows, run_main

from spinup_tf2 import rundir, sac
from spinup_tf2.errors import SpinupError


def test_temporary_names_keep_the_suffix():
    assert rundir.tmp_name("/r/config.json") == "/r/config.tmp.json"
    assert rundir.tmp_name("/r/videos/epoch_3.mp4") == "/r/videos/epoch_3.tmp.mp4"
    assert rundir.tmp_name("/r/tf2_save") == "/r/tf2_save.tmp"


def test_a_shared_file_written_by_two_processes_at_once(tmp_path):
    """A study's tables are rewritten by every driver of the study: while this process
    writes its version, another process writes the same file. With ``shared`` both renames
    succeed and the file is one whole version (the last renamed); a common temporary name
    would let the other writer remove this one's, whose rename then fails (the failure
    seen with two tune drivers, 2026-11-27)."""
    import subprocess
    import sys

    path = tmp_path / "trials.tsv"
    other = (f"from spinup_tf2 import rundir; "
             f"rundir.write_text({str(path)!r}, 'other\\n', shared=True)")
    with rundir.atomic_file(str(path), shared=True) as tmp:
        with open(tmp, "w") as f:
            f.write("mine\n")
        subprocess.run([sys.executable, "-c", other], check=True, timeout=120)
        assert path.read_text() == "other\n"
    assert path.read_text() == "mine\n"
    assert sorted(os.listdir(tmp_path)) == ["trials.tsv"]  # no temporary file left


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


def test_read_progress_of_a_run_stopped_before_its_first_epoch(tmp_path):
    """Its progress.txt is empty (the first row writes the header): no rows, not pandas'
    EmptyDataError."""
    (tmp_path / "progress.txt").write_text("")
    frame = rundir.read_progress(str(tmp_path))
    assert len(frame) == 0 and list(frame.columns) == []


def test_overwrite_removes_exactly_what_a_run_writes(tmp_path):
    out = str(tmp_path / "run")
    kw = dict(TINY, epochs=1, num_test_episodes=1)
    sac(pendulum, **kw, logger_kwargs=dict(output_dir=out))
    keep = ["tf2_save_backup", "vars_notes.pkl", "my_progress.txt", "train_state_copy",
            "stdout.txt", "policy.onnx"]
    for name in keep:
        os.makedirs(os.path.join(out, name)) if "." not in name else open(
            os.path.join(out, name), "w").write("mine")
    first = rows(out)
    with pytest.raises(SpinupError, match="already holds a run"):
        sac(pendulum, **kw, logger_kwargs=dict(output_dir=out))
    sac(pendulum, **kw, overwrite=True,
        logger_kwargs=dict(output_dir=out))
    assert rows(out) == first
    assert sorted(os.listdir(out)) == sorted(keep + ["config.json", "progress.txt", "tf2_save",
                                                     "train_state", "vars.pkl"])
    config = json.load(open(os.path.join(out, "config.json")))
    assert config["overwrite"] is True and config["video_freq"] == 0


def test_logger_kwargs_overwrite_still_works_with_a_note(tmp_path, capsys):
    out = str(tmp_path / "run")
    kw = dict(TINY, epochs=1, num_test_episodes=1)
    sac(pendulum, **kw, logger_kwargs=dict(output_dir=out))
    capsys.readouterr()
    sac(pendulum, **kw,
        logger_kwargs=dict(output_dir=out, overwrite=True))
    printed = capsys.readouterr().out
    assert "logger_kwargs['overwrite'] is deprecated" in printed
    assert "overwrite=True: removed the earlier run" in printed
    config = json.load(open(os.path.join(out, "config.json")))
    assert config["overwrite"] is True and "overwrite" not in config["logger_kwargs"]


def test_plot_savefig_names_its_format_or_refuses(tmp_path, capfd):

    run = tmp_path / "exp" / "exp_s0"
    os.makedirs(run)
    (run / "progress.txt").write_text("Epoch\tTotalEnvInteracts\tAverageEpRet\n1\t10\t1.0\n"
                                      "2\t20\t2.0\n")
    res = run_main(capfd, "plot", str(run), "--savefig", str(tmp_path / "f.xyz"))
    assert res.returncode == 2 and "cannot write '.xyz' files" in res.stderr
    res = run_main(capfd, "plot", str(run), "--savefig", str(tmp_path / "fig"))
    assert res.returncode == 0, res.stderr
    assert sorted(os.listdir(tmp_path)) == ["exp", "fig.png"]  # no .tmp left, no bare 'fig'


# ---- One writer per run directory (#28) -----------------------------------------------------

def test_a_second_writer_is_refused_while_a_run_writes_and_a_kill_frees_the_directory(
        tmp_path, capfd):
    import signal
    import subprocess
    import sys
    import time

    from helpers import like_a_terminal

    out = tmp_path / "busy" / "busy_s0"
    args = ["sac", "--env", "Pendulum-v1", "--exp_name", "busy", "--data_dir", str(tmp_path),
            "--epochs", "5000", "--steps_per_epoch", "300", "--start_steps", "100",
            "--update_after", "100", "--num_test_episodes", "1", "--hid", "[8]"]
    env = dict(os.environ, SPINUP_TF2_WAIT_BEFORE_LAUNCH="0")
    proc = subprocess.Popen([sys.executable, "-m", "spinup_tf2.run", *args], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True, preexec_fn=like_a_terminal)
    try:
        while rundir.progress_rows(str(out)) < 1:
            assert proc.poll() is None
            time.sleep(0.1)
        before = (out / "config.json").read_text()
        # The same command in another terminal, then a resume and sac() from Python with
        # overwrite=True: each refused in one paragraph naming the writer.
        res = run_main(capfd, *args, "--overwrite")
        assert res.returncode == 2, res.stderr
        assert "is being written by another process (PID" in res.stderr, res.stderr
        assert "spinup_tf2.launch.entrypoint" in res.stderr
        for extra in (dict(resume=True), dict(overwrite=True)):
            assert proc.poll() is None  # the first run is still writing
            with pytest.raises(SpinupError, match="being written by another process"):
                sac(pendulum, **dict(TINY, epochs=5000), **extra,
                    logger_kwargs=dict(output_dir=str(out)))
        assert (out / "config.json").read_text() == before and proc.poll() is None
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    # The kill released the lock (once the kernel has ended the killed experiment process,
    # which its dead launcher no longer waits for): nothing is stuck.
    deadline = time.time() + 300
    while True:
        try:
            rundir.claim(str(out), "a test")
            break
        except SpinupError:
            assert time.time() < deadline, f"waited 300 s for the lock of {out} to be released"
            time.sleep(0.1)
    rundir.release(str(out))


def test_a_checkpoint_without_its_progress_digest_is_not_resumed(tmp_path):
    out = str(tmp_path / "run")
    kw = dict(TINY, epochs=1, num_test_episodes=1)
    sac(pendulum, **kw, logger_kwargs=dict(output_dir=out))
    state_path = os.path.join(out, "train_state", "state.json")
    state = json.load(open(state_path))
    state["progress_sha256"] = None
    json.dump(state, open(state_path, "w"))
    progress = open(os.path.join(out, "progress.txt")).read()
    with pytest.raises(SpinupError, match="does not belong to the progress.txt"):
        sac(pendulum, **dict(kw, epochs=2), resume=True,
            logger_kwargs=dict(output_dir=out))
    assert open(os.path.join(out, "progress.txt")).read() == progress


@pytest.mark.parametrize("name", ["progress.txt", "config.tmp.json", "vars.tmp.pkl"])
def test_run_files_that_are_symlinks_are_refused(tmp_path, name):
    out, target = tmp_path / "run", tmp_path / "elsewhere.txt"
    out.mkdir()
    target.write_text("not yours")
    os.symlink(target, out / name)
    with pytest.raises(SpinupError, match=f"symbolic links where a run writes.*{name}"):
        sac(pendulum, **dict(TINY, epochs=1),
            logger_kwargs=dict(output_dir=str(out)))
    assert target.read_text() == "not yours" and sorted(os.listdir(out)) == [name]


def test_grid_variants_sharing_a_directory_are_refused_before_launch(tmp_path, capfd):

    res = run_main(capfd, "sac", "--env", "Pendulum-v1", "--exp_name", "dup", "--seed", "0",
                   "0", "--data_dir", str(tmp_path))
    assert res.returncode == 2
    assert "2 variants of this grid would write the same directory" in res.stderr
    assert "dup (seed 0), dup (seed 0)" in res.stderr
    assert "Running experiment" not in res.stdout and os.listdir(tmp_path) == []


def test_a_run_directory_naming_a_module_runs_no_code(tmp_path):
    """config.json's env_name 'mymod:Pendulum-v1' would make gymnasium import mymod.py from
    the working directory: test_policy and --video refuse it unless trusted."""
    from helpers import assert_clean_error, cli

    out = tmp_path / "run"
    sac(pendulum, **dict(TINY, epochs=1, num_test_episodes=1),
        logger_kwargs=dict(output_dir=str(out)))
    config = json.load(open(out / "config.json"))
    config["env_name"] = "mymod:Pendulum-v1"
    del config["env_spec"]  # as runs before 0.2 recorded it: the id alone
    json.dump(config, open(out / "config.json", "w"))
    (tmp_path / "mymod.py").write_text("open('RAN', 'w').close()\n")
    for extra in ([], ["--video", str(tmp_path / "v.gif")]):
        res = cli("test_policy", str(out), "-nr", "-n", "1", *extra, cwd=tmp_path)
        assert_clean_error(res, "'mymod:Pendulum-v1', which is not an id registered",
                           "(the module 'mymod')", "--trust_vars_pkl")
        assert res.returncode == 2 and not (tmp_path / "RAN").exists()
    res = cli("test_policy", str(out), "-nr", "-n", "1", "--trust_vars_pkl", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert "Episode 0" in res.stdout  # trusted: vars.pkl's env, as asked


@pytest.mark.parametrize("edit,words", [
    (lambda s: dict(s, id="mymod:Pendulum-v1"), "'mymod:Pendulum-v1', which is not an id"),
    (lambda s: dict(s, entry_point="mymod:PendulumEnv"), "made by 'mymod:PendulumEnv', not by"),
    (lambda s: dict(s, additional_wrappers=[dict(name="W", entry_point="mymod:W", kwargs={})]),
     "the wrapper 'W' from 'mymod:W'"),
])
def test_a_recorded_env_spec_naming_a_module_runs_no_code(tmp_path, capfd, monkeypatch, edit,
                                                          words):
    """config.json's env_spec (the environment with its wrappers) names entry points that
    gymnasium would import: only a registered id, its registered entry point and
    gymnasium's own wrappers are made unless the directory is trusted."""
    out = tmp_path / "run"
    sac(pendulum, **dict(TINY, epochs=1, num_test_episodes=1),
        logger_kwargs=dict(output_dir=str(out)))
    config = json.load(open(out / "config.json"))
    json.dump(dict(config, env_spec=edit(config["env_spec"])), open(out / "config.json", "w"))
    (tmp_path / "mymod.py").write_text("open('RAN', 'w').close()\nW = PendulumEnv = None\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))  # as `python -m` puts the working directory
    res = run_main(capfd, "test_policy", str(out), "-nr", "-n", "1")
    assert res.returncode == 2 and words in res.stderr, res.stderr
    assert "--trust_vars_pkl" in res.stderr and not (tmp_path / "RAN").exists()


def test_python_runs_without_output_dir_get_distinct_directories(tmp_path, monkeypatch):
    import spinup_tf2.user_config as user_config

    monkeypatch.setattr(user_config, "DEFAULT_DATA_DIR", str(tmp_path))
    made = [rundir.new_run_dir() for _ in range(3)]  # the same second, most likely
    assert len(set(made)) == 3 and all(os.path.isdir(m) and not os.listdir(m) for m in made)
    assert all(os.path.dirname(m) == str(tmp_path / "sac") for m in made)
    sac(pendulum, **dict(TINY, epochs=1, num_test_episodes=1),
        logger_kwargs=dict(exp_name="py"))
    (run,) = os.listdir(tmp_path / "py")
    config = json.load(open(tmp_path / "py" / run / "config.json"))
    assert config["logger_kwargs"]["output_dir"] == str(tmp_path / "py" / run)
    assert rundir.progress_rows(str(tmp_path / "py" / run)) == 1


def test_special_files_in_a_run_directory_are_refused_or_skipped_at_once(tmp_path, capfd):

    good = tmp_path / "exp" / "exp_s0"
    os.makedirs(good)
    (good / "progress.txt").write_text("Epoch\tTotalEnvInteracts\tAverageEpRet\n1\t10\t1.0\n")
    fifo = tmp_path / "exp" / "exp_s1"
    os.makedirs(fifo)
    os.mkfifo(fifo / "progress.txt")
    # plot skips the FIFO (a reader would block forever) and plots the other run
    res = run_main(capfd, "plot", str(tmp_path / "exp"), "--savefig", str(tmp_path / "p.png"))
    assert res.returncode == 0 and "Could not read from" in res.stdout
    assert (tmp_path / "p.png").exists()
    # a run refuses to write into it; test_policy refuses a FIFO config.json
    with pytest.raises(SpinupError, match="is a FIFO"):
        sac(pendulum, **dict(TINY, epochs=1), overwrite=True,
            logger_kwargs=dict(output_dir=str(fifo)))
    os.makedirs(fifo / "tf2_save")
    os.mkfifo(fifo / "config.json")
    res = run_main(capfd, "test_policy", str(fifo), "-nr")
    assert res.returncode == 2 and "config.json is a FIFO" in res.stderr


@pytest.mark.parametrize("args, words", [
    (["--exp_name", "my--run"], None),  # a value with -- inside is a value
    (["--epochs", "1", "--epochs", "2"], "--epochs is given twice"),
    (["--env_name", "Pendulum-v1"], "--env and --env_name are the same flag"),
    (["--cpu", "2", "--resume"], "--resume with --cpu 2"),
])
def test_flag_grammar_and_launcher_checks(tmp_path, capfd, args, words):

    from spinup_tf2.launch.flags import parse_flags

    if words is None:
        arg_dict, _ = parse_flags("sac", ["--env", "Pendulum-v1", *args])
        assert arg_dict["exp_name"] == ["my--run"]
        return
    res = run_main(capfd, "sac", "--env", "Pendulum-v1", *args, "--data_dir", str(tmp_path))
    assert res.returncode == 2 and words in res.stderr, res.stderr
    assert os.listdir(tmp_path) == [] and "Running experiment" not in res.stdout


@pytest.mark.parametrize("args, words", [
    (["--est", "test"], "--est 'test' is not an estimator"),
    (["--smooth", "100000000"], "--smooth must be from 1"),
    (["--ci", "95", "--n_boot", "1000000000"], "--n_boot must be a whole number from 1"),
])
def test_plot_refuses_what_it_cannot_use(tmp_path, capfd, args, words):

    run = tmp_path / "exp" / "exp_s0"
    os.makedirs(run)
    (run / "progress.txt").write_text("Epoch\tTotalEnvInteracts\tAverageEpRet\n1\t10\t1.0\n")
    res = run_main(capfd, "plot", str(run), "--savefig", str(tmp_path / "f.png"), *args)
    assert res.returncode == 2 and words in res.stderr, res.stderr
    assert not (tmp_path / "f.png").exists()



def test_a_saved_model_that_does_more_than_act_is_refused(tmp_path, capfd):
    """test_policy and export load a SavedModel only if its functions compute actions and
    nothing else (no file I/O, PyFunc, processes); --trust_saved_model loads it anyway. A
    SavedModel that does not fit the rebuilt environment is a paragraph, not a traceback."""
    import shutil

    import tensorflow as tf

    class FileWritingPolicy(tf.Module):
        """A crafted 'policy' for Pendulum-v1 whose mu writes a file when called."""

        def __init__(self, target: str):
            super().__init__()
            self.target, self.w = target, tf.Variable([[1.0]])

        @tf.function(input_signature=[tf.TensorSpec([None, 3], tf.float32)])
        def mu(self, x):
            tf.io.write_file(self.target, "written by the saved model")
            return tf.tanh(x[:, :1] @ self.w)

        @tf.function(input_signature=[tf.TensorSpec([None, 3], tf.float32)])
        def pi(self, x):
            return self.mu(x)

    out = tmp_path / "run"
    sac(pendulum, **dict(TINY, epochs=1, num_test_episodes=1),
        logger_kwargs=dict(output_dir=str(out)))
    res = run_main(capfd, "test_policy", str(out), "-nr", "-n", "1", "-d")
    assert res.returncode == 0 and "Episode 0" in res.stdout  # ours passes the check

    # Another run's policy beside this config.json: observations of another shape.
    config = json.load(open(out / "config.json"))
    other = {k: v for k, v in config.items() if k != "env_spec"}  # the id alone, as before 0.2
    json.dump(dict(other, env_name="MountainCarContinuous-v0"), open(out / "config.json", "w"))
    res = run_main(capfd, "test_policy", str(out), "-nr", "-n", "1")
    assert res.returncode == 2 and "Traceback" not in res.stderr, res.stderr
    assert "takes observations of shape [3]" in res.stderr and "shape [2]" in res.stderr
    json.dump(config, open(out / "config.json", "w"))

    target = tmp_path / "WRITTEN"
    shutil.rmtree(out / "tf2_save")
    tf.saved_model.save(FileWritingPolicy(str(target)), str(out / "tf2_save"))
    for cmd in (["test_policy", str(out), "-nr", "-n", "1", "-d"],
                ["export", str(out), "--format", "onnx", "--out", str(tmp_path / "p.onnx")]):
        res = run_main(capfd, *cmd)
        assert res.returncode == 2, res.stderr
        assert "holds operations a policy does not need: WriteFile" in res.stderr, res.stderr
        assert "--trust_saved_model" in res.stderr and "Traceback" not in res.stderr
        assert not target.exists() and not (tmp_path / "p.onnx").exists()
    res = run_main(capfd, "test_policy", str(out), "-nr", "-n", "1", "-d", "--trust_saved_model")
    assert res.returncode == 0, res.stderr
    assert target.read_text() == "written by the saved model"  # trusted: it ran, as asked


def test_a_disk_that_refuses_a_write_mid_run_is_a_paragraph_and_the_run_resumes(tmp_path):
    """A file-size limit (RLIMIT_FSIZE: writes past it fail with EFBIG, as a full disk fails
    them with ENOSPC) stops the run at the checkpoint of epoch 4, which outgrows it: one
    paragraph, exit 2, progress.txt whole with its 4 rows and the checkpoint of epoch 3
    intact; the same command with --resume then finishes the run."""
    import resource
    import signal
    import subprocess
    import sys

    from helpers import assert_clean_error

    def limited():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # the write fails instead of killing
        resource.setrlimit(resource.RLIMIT_FSIZE, (80_000, 80_000))

    out = tmp_path / "run"
    args = [sys.executable, "-m", "spinup_tf2.run", "sac", "--env", "Pendulum-v1",
            "--epochs", "4", "--steps_per_epoch", "600", "--start_steps", "200",
            "--update_after", "100", "--num_test_episodes", "1", "--hid", "[8]",
            "--batch_size", "32", "--data_dir", str(tmp_path), "--exp_name", "run"]
    env = dict(os.environ, SPINUP_TF2_WAIT_BEFORE_LAUNCH="0")
    res = subprocess.run(args, capture_output=True, text=True, env=env, preexec_fn=limited)
    assert res.returncode == 2, res.stderr[-3000:]
    assert_clean_error(res, "could not be written (File too large", "progress.txt holds 3 "
                       "epoch(s), and the training checkpoint is of epoch 2", "--resume")
    run = out / "run_s0"
    assert len(rows(str(run))[1]) == 3
    assert not [p for p in run.rglob("*") if ".tmp" in p.name or p.name.endswith(".old")]
    res = subprocess.run(args + ["--resume"], capture_output=True, text=True, env=env)
    assert res.returncode == 0, res.stderr[-3000:]
    assert "Resuming the run" in res.stdout and "after epoch 2" in res.stdout
    assert [r["Epoch"] for r in rows(str(run))[1]] == ["1", "2", "3", "4"]


def test_a_datestamped_run_resumes_by_naming_its_directory(tmp_path, capfd):
    """--dt puts the start time in the directory, so `--dt --resume` cannot find the run:
    it is refused before launch with the command that works, --resume DIR, which does."""
    import shlex

    from helpers import CLI_TINY

    args = ["sac", "--env", "Pendulum-v1", *CLI_TINY[2:], "--hid", "[8]", "--data_dir",
            str(tmp_path), "--exp_name", "p"]
    res = run_main(capfd, *args, "--epochs", "1", "--dt")
    assert res.returncode == 0, res.stderr
    (run,) = tmp_path.glob("*_p/*-p_s0")
    res = run_main(capfd, *args, "--epochs", "2", "--dt", "--resume")
    assert res.returncode == 2 and "Traceback" not in res.stderr, res.stderr
    assert "cannot work out which run to resume. Nothing was launched" in res.stderr
    again = res.stderr.split(": python -m spinup_tf2.run ")[1].strip().rstrip(".")
    assert again.endswith(f"--resume {run}")
    res = run_main(capfd, *shlex.split(again))
    assert res.returncode == 0, res.stderr
    assert "Resuming the run" in res.stdout and len(rows(str(run))[1]) == 2
    res = run_main(capfd, *args, "--seed", "0", "1", "--resume", str(run))
    assert res.returncode == 2 and "names one run, but these flags make a grid" in res.stderr
    res = run_main(capfd, *args, "--resume", str(tmp_path))
    assert res.returncode == 2 and "is not a run directory (it holds no config.json)" in res.stderr
