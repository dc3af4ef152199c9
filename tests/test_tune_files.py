"""A study is a run directory's equal (issue 77): tune reads its flags as sac does, its
files are held to the run directory's rules (no link followed, no FIFO or device opened,
write faults one paragraph, a journal record cut short dropped), and Ctrl-C says what each
stopped run kept. Real Optuna studies of real, tiny Pendulum-v1 runs."""

import os
import resource
import shlex
import signal
import subprocess
import sys
import time

import pytest
from helpers import HANG, assert_clean_error, cli, like_a_terminal

from spinup_tf2.errors import SpinupError
from spinup_tf2.launch.study import format_flags

TINY = ["--env", "Pendulum-v1", "--epochs", "1", "--steps_per_epoch", "100",
        "--start_steps", "50", "--update_after", "50", "--num_test_episodes", "1",
        "--max_ep_len", "50"]


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    """One finished study of one trial: a searched lr, a fixed --hid [16], --epochs 1."""
    data = tmp_path_factory.mktemp("tunefiles")
    res = cli("tune", "sac", *TINY, "--hid", "[16]", "--trials", "1",
              "--lr", "choice:0.001,0.002", "--data_dir", str(data), "--exp_name", "st")
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    return data


def test_values_equal_to_one_stay_in_the_flags():
    assert format_flags({"epochs": 1, "alpha": 1.0, "hid": [16], "norm": True}) == \
        ["--epochs", "1", "--alpha", "1.0", "--hid", "[16]", "--norm"]
    assert format_flags({"seed": [0, 10]}, several=("seed",)) == ["--seed", "0", "10"]


def test_best_txt_reruns_the_trial_with_its_fixed_flags(study, tmp_path):
    """--hid [16] is read as sac reads it, and best.txt's command (with --epochs 1 and
    --hid [16]) runs the best trial again with the same arguments."""
    trial = study / "st" / "st_t000" / "st_t000_s0"
    import json

    ran = json.load(open(trial / "config.json"))
    assert ran["ac_kwargs"]["hidden_sizes"] == [16] and ran["epochs"] == 1
    text = (study / "st" / "best.txt").read_text()
    cmd = shlex.split(text.strip().splitlines()[-1])
    assert cmd[:4] == ["python", "-m", "spinup_tf2.run", "sac"]
    assert "--epochs" in cmd and cmd[cmd.index("--epochs") + 1] == "1"
    res = cli(*cmd[3:], "--data_dir", str(tmp_path))
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    again = json.load(open(tmp_path / "st_best" / "st_best_s0" / "config.json"))
    for key in ("ac_kwargs", "epochs", "lr", "steps_per_epoch", "max_ep_len"):
        assert again[key] == ran[key], key


@pytest.mark.parametrize("args,words", [
    (["--seed", "0", "0"], ["--seed 0 0: 0 is given twice"]),
    (["--objective", "AvgTestEpRet"], ["'AvgTestEpRet' is no column",
                                       "did you mean AverageTestEpRet"]),
    (["--objective", "LossAlpha"], ["logs LossAlpha only when alpha is learned"]),
    (["--hid", "[16]", "[32]"], ["--ac_kwargs:hidden_sizes has 2 values", "choice:[16],[32]"]),
])
def test_refused_before_anything_starts(tmp_path, args, words):
    res = cli("tune", "sac", *TINY, "--lr", "choice:0.001,0.002", *args,
              "--data_dir", str(tmp_path / "d"), timeout=HANG)
    assert_clean_error(res, *words)
    assert not (tmp_path / "d" / "tune_sac").exists()


def test_tune_help_alone_prints_the_study_help():
    res = cli("tune", "--help", timeout=HANG)
    assert res.returncode == 0, res.stderr
    assert "loguniform:LOW:HIGH" in res.stdout and "--objective" in res.stdout


def test_a_link_at_the_journal_is_not_followed(tmp_path):
    elsewhere = tmp_path / "elsewhere.txt"
    elsewhere.write_text("not the study's\n")
    (tmp_path / "d" / "st").mkdir(parents=True)
    os.symlink(elsewhere, tmp_path / "d" / "st" / "study.journal")
    res = cli("tune", "sac", *TINY, "--lr", "choice:0.001,0.002", "--trials", "1",
              "--data_dir", str(tmp_path / "d"), "--exp_name", "st", timeout=HANG)
    assert_clean_error(res, "study.journal is a symbolic link")
    assert elsewhere.read_text() == "not the study's\n"


@pytest.mark.parametrize("kind", ["fifo", "device", "plots_link"])
def test_storage_that_is_no_file_is_refused_at_once(tmp_path, kind):
    (tmp_path / "d" / "st").mkdir(parents=True)
    extra = []
    if kind == "fifo":
        os.mkfifo(tmp_path / "fifo")
        extra = ["--storage", str(tmp_path / "fifo")]
        words = ["is a FIFO, not a study's journal"]
    elif kind == "device":
        extra, words = ["--storage", "/dev/null"], ["/dev/null is a device or socket"]
    else:
        (tmp_path / "other").mkdir()
        os.symlink(tmp_path / "other", tmp_path / "d" / "st" / "plots")
        words = ["plots is a symbolic link, where a study writes"]
    res = cli("tune", "sac", *TINY, "--lr", "choice:0.001,0.002", "--trials", "1", *extra,
              "--data_dir", str(tmp_path / "d"), "--exp_name", "st", timeout=120)
    assert_clean_error(res, *words)
    assert not os.listdir(tmp_path / "d" / "st") or kind == "plots_link"
    if kind == "plots_link":
        assert not os.listdir(tmp_path / "other")


def test_a_fifo_at_a_runs_log_is_refused_not_waited_on(tmp_path):
    from spinup_tf2 import rundir

    os.mkfifo(tmp_path / "stdout.txt")
    for append in (False, True):
        with pytest.raises(SpinupError, match="FIFO"):
            rundir.open_log(str(tmp_path / "stdout.txt"), append=append)


def test_a_report_past_a_file_size_limit_is_a_paragraph(study):
    """tune_report rewriting the tables under RLIMIT_FSIZE (writes fail with EFBIG, as on
    a full disk): one paragraph, and the old tables stay whole."""
    before = (study / "st" / "trials.tsv").read_text()

    def limit():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (100, 100))

    res = subprocess.run([sys.executable, "-m", "spinup_tf2.run", "tune_report",
                          str(study / "st")], capture_output=True, text=True, timeout=HANG,
                         preexec_fn=limit, env=dict(os.environ, MPLBACKEND="Agg"))
    assert_clean_error(res, "The study stopped: a file of", "File too large", "--resume")
    assert (study / "st" / "trials.tsv").read_text() == before


def test_a_journal_record_cut_short_is_dropped(study):
    """A record whose writing was cut short (a crash, a full disk) is cut away when the
    study is next opened, so the next record starts on its own line."""
    journal = study / "st" / "study.journal"
    whole = journal.read_bytes()
    with open(journal, "ab") as f:
        f.write(b'{"op_code": 4, "worker_id": "x", "study_id"')
    res = cli("tune_report", str(study / "st"))
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    assert journal.read_bytes() == whole


def test_ctrl_c_says_what_each_stopped_run_kept(tmp_path):
    """Stopped before its first epoch ends, a trial's run has no checkpoint: the message
    says --resume starts it over (it said the checkpoints were kept)."""
    cmd = [sys.executable, "-m", "spinup_tf2.run", "tune", "sac", "--env", "Pendulum-v1",
           "--epochs", "2", "--steps_per_epoch", "100000", "--lr", "choice:0.001,0.002",
           "--trials", "1", "--data_dir", str(tmp_path), "--exp_name", "st"]
    env = dict(os.environ, SPINUP_TF2_WAIT_BEFORE_LAUNCH="0", MPLBACKEND="Agg")
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env=env, start_new_session=True, preexec_fn=like_a_terminal)
    log = tmp_path / "st" / "st_t000" / "st_t000_s0" / "stdout.txt"
    deadline = time.time() + HANG  # a hang detector, not a speed limit
    while not (log.exists() and "Number of parameters" in log.read_text()):
        assert proc.poll() is None and time.time() < deadline
        time.sleep(0.5)
    os.killpg(proc.pid, signal.SIGINT)
    out, _ = proc.communicate(timeout=HANG)
    assert "st_t000/st_t000_s0: no epoch finished, --resume starts it over" in out, out
    assert "checkpoints kept" not in out
