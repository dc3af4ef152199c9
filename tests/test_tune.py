"""Hyperparameter studies (``python -m spinup_tf2.run tune``): real Optuna studies of real
Pendulum-v1 runs, on this machine and on a local Ray cluster, stopped and resumed, shared by
two drivers; and their refusals of bad input before anything starts."""

import csv
import json
import os
import signal
import subprocess
import sys
import time

import pytest
from helpers import HANG, assert_clean_error, cli, column, like_a_terminal

from spinup_tf2.errors import SpinupError
from spinup_tf2.family import MEMBERS
from spinup_tf2.launch.tune import distribution_text, parse_distribution

# A study small enough for the tests: 4 trials of two seeds each, 3 epochs of 200 steps,
# one trial per round; each run's score scaled by target scores; the pruner keeps a trial
# only while it is at least as good as the best finished one.
STUDY = ["sac", "--env", "Pendulum-v1", "--seed", "0", "10", "--trials", "4", "--epochs", "3",
         "--target_scores:Pendulum-v1", "[-1600,-150]",
         "--steps_per_epoch", "200", "--start_steps", "100", "--update_after", "100",
         "--num_test_episodes", "2", "--max_ep_len", "200",
         "--lr", "loguniform:1e-4:1e-2", "--hid", "choice:[32],[64,64]",
         "--pruner", "percentile", "--pruner_kwargs:percentile", "99",
         "--pruner_kwargs:n_startup_trials", "1", "--objective_epochs", "2"]
LOOPBACK = {"RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0", "RAY_AUTH_MODE": "disabled"}


def table(study_dir):
    """The study's trials.tsv as dicts."""
    with open(os.path.join(study_dir, "trials.tsv"), newline="") as f:
        return list(csv.DictReader(f, delimiter="\t"))


def outcome(study_dir):
    """What must agree between two runs of one study: each trial's parameters, state,
    value and epochs."""
    keys = ["number", "state", "value", "epochs", "lr", "ac_kwargs:hidden_sizes"]
    return [{k: row[k] for k in keys} for row in table(study_dir)]


@pytest.fixture(scope="module")
def local_study(tmp_path_factory):
    data = tmp_path_factory.mktemp("tune")
    res = cli("tune", *STUDY, "--data_dir", str(data), "--exp_name", "st", timeout=900)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    return data / "st", res.stdout


def test_distributions_are_read_as_written():
    assert distribution_text(parse_distribution("lr", "loguniform:1e-4:3e-3")) == \
        "loguniform:0.0001:0.003"
    assert distribution_text(parse_distribution("gamma", "uniform:0.9:0.999")) == \
        "uniform:0.9:0.999"
    assert distribution_text(parse_distribution("batch_size", "int:32:256")) == "int:32:256"
    assert distribution_text(parse_distribution("batch_size", "logint:32:256")) == \
        "logint:32:256"
    hid = parse_distribution("ac_kwargs:hidden_sizes", "choice:[64,64],[256,256]")
    assert hid.choices == ("[64,64]", "[256,256]")  # kept as text, parsed for each run
    assert parse_distribution("batch_size", "choice:64,128,256").choices == (64, 128, 256)
    act = parse_distribution("ac_kwargs:activation", "choice:tf.nn.relu,tf.nn.tanh")
    assert act.choices == ("tf.nn.relu", "tf.nn.tanh")
    # Fixed values, including an environment's package:EnvId
    assert parse_distribution("lr", 0.001) is None
    assert parse_distribution("env_name", "gymnasium_robotics:FetchReach-v4") is None


def test_tune_help_lists_every_flag_tune_takes():
    from spinup_tf2.launch.tune import NESTED_FLAGS, SUBSTITUTED, TUNE_FLAGS

    res = cli("tune", "sac", "--help", timeout=HANG)
    assert res.returncode == 0
    for name in TUNE_FLAGS + NESTED_FLAGS:
        assert "--" + SUBSTITUTED.get(name, name) in res.stdout, name
    assert "loguniform:LOW:HIGH" in res.stdout and "Default: 20." in res.stdout


@pytest.mark.parametrize("key,text,words", [
    ("lr", "logunifrom:1e-4:1e-3", ["'logunifrom' is not a distribution",
                                    "did you mean loguniform"]),
    ("lr", "uniform:1e-3:1e-4", ["the range is empty", "LOW=1e-3, HIGH=1e-4"]),
    ("lr", "loguniform:0:1e-3", ["LOW > 0"]),
    ("batch_size", "int:32.5:64", ["whole-number bounds"]),
    ("batch_size", "choice:64", ["at least two values"]),
    ("lr", "uniform:a:b", ["takes two numbers"]),
])
def test_bad_distributions_are_named(key, text, words):
    with pytest.raises(SpinupError) as err:
        parse_distribution(key, text)
    for w in words:
        assert w in str(err.value), str(err.value)


@pytest.mark.parametrize("args,words", [
    (["--lrr", "uniform:1e-4:1e-3"], ["--lrr is not an argument of sac()", "--lr"]),
    (["--lr", "logunifrom:1e-4:1e-3"], ["'logunifrom' is not a distribution"]),
    (["--lr", "uniform:1e-3:1e-4"], ["the range is empty"]),
    (["--lr", "uniform:1e-4:1e-3", "--storage", "/proc/no/study.journal"],
     ["--storage /proc/no/study.journal: the study's storage could not be opened"]),
    (["--lr", "uniform:1e-4:1e-3", "--pruner", "medain"], ["--pruner) must be one of"]),
    (["--lr", "uniform:1e-4:1e-3", "--pruner_kwargs:n_startup", "2"],
     ["--pruner_kwargs (Optuna's MedianPruner)", "n_startup"]),
    (["--batch_size", "64", "128"], ["not grids", "choice:64,128"]),
    (["--lr", "0.001"], ["nothing to search"]),
])
def test_bad_input_is_a_paragraph_before_anything_starts(tmp_path, args, words):
    res = cli("tune", "sac", "--env", "Pendulum-v1", "--epochs", "1", *args,
              "--data_dir", str(tmp_path / "d"), timeout=HANG)
    assert_clean_error(res, *words)
    assert not (tmp_path / "d" / "tune_sac").exists()


@pytest.mark.slow  # a whole study (80 s on 2 cores); the default run keeps tune's checks
def test_a_study_prunes_and_its_trials_are_runs(local_study, tmp_path):
    study_dir, out = local_study
    rows = table(study_dir)
    assert [r["number"] for r in rows] == ["0", "1", "2", "3"]
    states = [r["state"] for r in rows]
    assert set(states) <= {"COMPLETE", "PRUNED"} and "COMPLETE" in states
    pruned = [r for r in rows if r["state"] == "PRUNED"]
    assert pruned, rows  # the pruner stopped at least one trial
    for r in pruned:
        assert int(r["epochs"]) < 3 and f"trial {r['number']} PRUNED at epoch" in out
    for r in rows:  # a line per epoch of each trial as it ran, before its outcome
        lines = out.splitlines()
        said = [n for n, ln in enumerate(lines)
                if ln.startswith(f"trial {r['number']}: epoch ")]
        assert len(said) == int(r["epochs"]), (r, out[-3000:])
        assert max(said) < next(n for n, ln in enumerate(lines)
                                if ln.startswith(f"trial {r['number']} {r['state']}"))
    for r in rows:
        runs = [study_dir / run for run in r["runs"].split()]
        assert [run.name[-3:] for run in runs] == ["_s0", "s10"]
        for run in runs:
            for name in ("config.json", "progress.txt", "stdout.txt", "tf2_save"):
                assert (run / name).exists(), (run, name)
        if r["state"] == "COMPLETE":  # its value is what its runs' progress.txt say
            scores = [(sum(column(run, "AverageTestEpRet")[-2:]) / 2 + 1600) / 1450
                      for run in runs]
            assert float(r["value"]) == pytest.approx(sum(scores) / 2, rel=1e-12)
    for plot in ("optimization_history", "param_importances", "parallel_coordinate",
                 "intermediate_values"):
        with open(study_dir / "plots" / f"{plot}.png", "rb") as f:
            assert f.read(8) == b"\x89PNG\r\n\x1a\n"
    assert f"optuna-dashboard {study_dir / 'study.journal'}" in out

    # best.txt's command runs the best trial's settings again, to the same numbers.
    best = max((r for r in rows if r["state"] == "COMPLETE"), key=lambda r: float(r["value"]))
    text = (study_dir / "best.txt").read_text()
    assert f"Best trial: {best['number']}," in text
    command = text.strip().splitlines()[-1]
    assert command.startswith("python -m spinup_tf2.run sac ")
    import shlex

    argv = shlex.split(command)[3:] + ["--data_dir", str(tmp_path)]
    res = cli(*argv, timeout=HANG)
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    for seed in (0, 10):
        again = column(tmp_path / "st_best" / f"st_best_s{seed}", "AverageTestEpRet")
        assert again == column(study_dir / f"st_t{int(best['number']):03d}" /
                               f"st_t{int(best['number']):03d}_s{seed}", "AverageTestEpRet")

    # A trial's run is an ordinary run: test_policy watches it.
    res = cli("test_policy", str(study_dir / best["runs"].split()[0]), "--episodes", "1",
              "--norender",
              timeout=HANG)
    assert res.returncode == 0 and "EpRet" in res.stdout, res.stdout[-2000:] + res.stderr


@pytest.mark.slow
@pytest.mark.ray
def test_a_study_on_ray_stopped_then_resumed_here_gives_the_local_trials(local_study, tmp_path):
    """The same study on a local Ray cluster, Ctrl-C in its last round, then --resume on
    this machine: the trials are the local study's (settings, states, values, epochs), none
    repeated or lost, and the stopped trial's runs went on from their checkpoints."""
    study_dir, _ = local_study
    env = dict(os.environ, SPINUP_TF2_WAIT_BEFORE_LAUNCH="0", MPLBACKEND="Agg", **LOOPBACK)
    cmd = [sys.executable, "-m", "spinup_tf2.run", "tune", *STUDY, "--data_dir", str(tmp_path),
           "--exp_name", "st", "--backend", "ray"]
    log = open(tmp_path / "driver.log", "w")
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env,
                            start_new_session=True, preexec_fn=like_a_terminal)
    # Wait for the last round to be under way: a row of trial 3's first run.
    progress = tmp_path / "st" / "st_t003" / "st_t003_s0" / "progress.txt"
    deadline = time.time() + HANG  # a hang detector, not a speed limit
    while not (progress.exists() and len(progress.read_text().splitlines()) >= 2):
        assert proc.poll() is None, (tmp_path / "driver.log").read_text()[-3000:]
        assert time.time() < deadline, f"waited {HANG} s for the first epoch of trial 3"
        time.sleep(0.5)
    os.killpg(proc.pid, signal.SIGINT)  # Ctrl-C in the driver's terminal
    assert proc.wait(timeout=HANG) == 130
    log.close()
    said = (tmp_path / "driver.log").read_text()
    assert "Ray cluster (local, started for the sweep)" in said
    assert "stopped midway" in said and "--resume continues the study" in said, said[-2000:]
    assert [r["number"] for r in table(tmp_path / "st")] == ["0", "1", "2"]  # 3 not recorded
    assert outcome(tmp_path / "st") == outcome(study_dir)[:3]  # Ray's trials are the local ones

    res = cli("tune", *STUDY, "--data_dir", str(tmp_path), "--exp_name", "st", "--resume")
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    assert "1 stopped midway to go on" in res.stdout
    assert outcome(tmp_path / "st") == outcome(study_dir)
    for seed in (0, 10):
        run = progress.parent.parent / f"st_t003_s{seed}"
        epochs = column(run, "Epoch")
        assert epochs == list(range(1, len(epochs) + 1))  # resumed, not run twice


@pytest.mark.slow
@pytest.mark.parametrize("member", list(MEMBERS))
def test_a_family_members_study_tunes_its_own_function(member, tmp_path):
    """``tune NAME`` for each member of the family: its trial is a run of its own function
    (its config.json names its actor-critic), complete with a value. (One trial: drawing
    distinct values over several is the other tests' part.)"""
    small = {"crossq": ["--ac_kwargs:critic_hidden_sizes", "[32]"],
             "simbav2": ["--ac_kwargs:critic_hidden_sizes", "[32]"],
             "redq": ["--ac_kwargs:n_critics", "3"]}.get(member, [])
    res = cli("tune", member, "--env", "Pendulum-v1", "--seed", "0", "--trials", "1",
              "--epochs", "1", "--steps_per_epoch", "200", "--start_steps", "100",
              "--update_after", "100", "--num_test_episodes", "1", "--max_ep_len", "200",
              "--updates_per_step", "1", "--hid", "[16]", *small,
              "--lr", "loguniform:1e-4:1e-3", "--data_dir", str(tmp_path), "--exp_name", "fm",
              timeout=900)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    trials = table(tmp_path / "fm")
    assert [t["state"] for t in trials] == ["COMPLETE"], trials
    assert float(trials[0]["value"]) < 0 and 1e-4 <= float(trials[0]["lr"]) <= 1e-3, trials
    config = json.load(open(tmp_path / "fm" / "fm_t000" / "fm_t000_s0" / "config.json"))
    assert config["actor_critic"].lower() == f"{member}actorcritic"
    assert config["lr"] == pytest.approx(float(trials[0]["lr"]), rel=1e-4)
