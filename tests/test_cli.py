"""The command line, through real subprocesses: `python -m spinup_tf2.run ...`."""

import json
import os
import re
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

TINY = ["--epochs", "2", "--steps_per_epoch", "400", "--start_steps", "200", "--update_after",
        "100", "--num_test_episodes", "1", "--batch_size", "32"]


def cli(*args, cwd=None, timeout=300, env=None):
    """Run `python -m spinup_tf2.run ARGS` and return the CompletedProcess."""
    full_env = dict(os.environ, SPINUP_TF2_WAIT_BEFORE_LAUNCH="0", MPLBACKEND="Agg",
                    **(env or {}))
    return subprocess.run([sys.executable, "-m", "spinup_tf2.run", *args], capture_output=True,
                          text=True, cwd=cwd, timeout=timeout, env=full_env)


def assert_clean_error(res, *words):
    """A failure with a one-paragraph message and no traceback."""
    assert res.returncode != 0
    text = res.stdout + res.stderr
    assert "Traceback" not in text, text
    for w in words:
        assert w in text, (w, text)


@pytest.fixture(scope="module")
def grid(tmp_path_factory):
    """One small grid: two seeds x two batch sizes with a shorthand."""
    data = tmp_path_factory.mktemp("grid")
    res = cli("sac", "--env", "Pendulum-v1", "--exp_name", "g", "--seed", "0", "10",
              "--hid[h]", "[16,16]", "[8]", "--data_dir", str(data),
              *[a for a in TINY if a not in ()])
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    return data, res.stdout


@pytest.mark.parametrize("args", [[], ["help"], ["-h"], ["--help"]])
def test_help_forms(args):
    res = cli(*args)
    assert res.returncode == 0
    for w in ("python -m spinup_tf2.run CMD [ARGS...]", "\tsac\n", "\tsac_tf2\n", "\tplot\n",
              "\ttest_policy\n", "--env       for       --env_name",
              "--hid       for       --ac_kwargs:hidden_sizes"):
        assert w in res.stdout, w


def test_algo_help_prints_docstring():
    res = cli("sac", "--help")
    assert res.returncode == 0
    assert "Using default backend (tf2) for sac." in res.stdout
    assert "Showing docstring for spinup_tf2.sac_tf2:" in res.stdout
    assert "polyak (float)" in res.stdout and "Soft Actor-Critic" in res.stdout


def test_grid_directory_names_and_outputs(grid):
    data, out = grid
    runs = sorted(os.listdir(data))
    assert runs == ["g_h16-16", "g_h8"]
    for exp in runs:
        assert sorted(os.listdir(data / exp)) == [f"{exp}_s0", f"{exp}_s10"]
        run = data / exp / f"{exp}_s10"
        assert {"config.json", "progress.txt", "tf2_save", "vars.pkl"} <= set(os.listdir(run))
        cfg = json.load(open(run / "config.json"))
        assert cfg["exp_name"] == exp and cfg["seed"] == 10 and cfg["env_name"] == "Pendulum-v1"
    assert "Variants, counting seeds: " in out and "Preparing to run the following" in out
    assert "End of experiment." in out
    assert f"python -m spinup_tf2.run plot {data / 'g_h8' / 'g_h8_s10'}" in out
    assert f"python -m spinup_tf2.run test_policy {data / 'g_h8' / 'g_h8_s10'}" in out
    # Variants run in grid order: the first-added key (seed) varies slowest.
    order = re.findall(r"Running experiment:\n\S*\n(\S+)\n", out)
    assert order == ["g_h16-16", "g_h8", "g_h16-16", "g_h8"]


@pytest.mark.parametrize("flags", [
    ["--hid", "[16,16]", "--act", "tf.nn.tanh"],
    ["--ac_kwargs:hidden_sizes", "[16,16]", "--ac_kwargs:activation", "tf.nn.tanh"],
    ["--ac_kwargs", "dict(hidden_sizes=[16,16], activation=tf.nn.tanh)"],
])
def test_three_spellings_of_ac_kwargs_give_one_config(flags, tmp_path):
    res = cli("sac", "--env", "Pendulum-v1", "--exp_name", "ack", "--data_dir", str(tmp_path),
              *flags, "--epochs", "1", "--steps_per_epoch", "300", "--start_steps", "100",
              "--update_after", "100", "--num_test_episodes", "1")
    assert res.returncode == 0, res.stderr[-2000:]
    cfg = json.load(open(tmp_path / "ack" / "ack_s0" / "config.json"))
    assert cfg["ac_kwargs"] == {"hidden_sizes": [16, 16], "activation": "tanh"}
    assert cfg["exp_name"] == "ack" and cfg["steps_per_epoch"] == 300


def test_datestamp_names(tmp_path):
    res = cli("sac", "--env", "Pendulum-v1", "--exp_name", "ds", "--dt", "--data_dir",
              str(tmp_path), "--epochs", "1", "--steps_per_epoch", "300", "--start_steps", "100",
              "--update_after", "100", "--num_test_episodes", "1")
    assert res.returncode == 0, res.stderr[-2000:]
    (top,) = os.listdir(tmp_path)
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}_ds", top)
    (sub,) = os.listdir(tmp_path / top)
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}_\d{2}-\d{2}-\d{2}-ds_s0", sub)


def test_experiment_grid_script_example(tmp_path):
    """Spinning Up's bench script from its running docs, adapted to SAC."""
    script = tmp_path / "bench_sac_pendulum.py"
    script.write_text(
        "import tensorflow as tf\n"
        "from spinup_tf2.utils.run_utils import ExperimentGrid\n"
        "from spinup_tf2 import sac\n"
        "if __name__ == '__main__':\n"
        "    eg = ExperimentGrid(name='sac-tf2-bench')\n"
        "    eg.add('env_name', 'Pendulum-v1', '', True)\n"
        "    eg.add('seed', [10 * i for i in range(2)])\n"
        "    eg.add('epochs', 1)\n"
        "    eg.add('steps_per_epoch', 300)\n"
        "    eg.add('start_steps', 100)\n"
        "    eg.add('update_after', 100)\n"
        "    eg.add('num_test_episodes', 1)\n"
        "    eg.add('ac_kwargs:hidden_sizes', [(8,), (8, 8)], 'hid')\n"
        "    eg.add('ac_kwargs:activation', [tf.nn.tanh, tf.nn.relu], '')\n"
        f"    eg.run(sac, num_cpu=1, data_dir={str(tmp_path / 'data')!r})\n")
    res = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                         env=dict(os.environ, SPINUP_TF2_WAIT_BEFORE_LAUNCH="0"), timeout=600)
    assert res.returncode == 0, res.stderr[-2000:]
    names = sorted(os.listdir(tmp_path / "data"))
    assert names == ["sac-tf2-bench_pendulum-v1_" + v
                     for v in ("hid8-8_relu", "hid8-8_tanh", "hid8_relu", "hid8_tanh")]
    assert " Variants, counting seeds:               8" in res.stdout
    assert " Variants, not counting seeds:           4" in res.stdout
    for name in names:
        assert sorted(os.listdir(tmp_path / "data" / name)) == [name + "_s0", name + "_s10"]


@pytest.mark.parametrize("args,words", [
    (["sak", "--env", "Pendulum-v1"], ["'sak' is not a spinup_tf2 command", "sac_tf2",
                                       "test_policy", "Did you mean 'sac'"]),
    (["sac", "--epochs", "1"], ["You did not give a value for --env_name"]),
    (["sac", "Pendulum-v1"], ["You didn't specify a first flag"]),
    (["sac", "--env", "HalfCheetah-v2"], ["HalfCheetah-v2 is a mujoco-py environment",
                                          "HalfCheetah-v5", "spinup_tf2[mujoco]"]),
    (["sac", "--env", "HalfCheeta-v5"], ["HalfCheeta-v5 is not registered", "HalfCheetah-v5"]),
    (["sac", "--env", "Pendulm-v1"], ["Pendulm-v1 is not registered", "Pendulum-v1"]),
    (["sac", "--env", "Pendulum-v1", "--exp_name", "a", "b"],
     ["You can only provide one value for exp_name"]),
    (["sac", "--env", "Pendulum-v1", "--data_dir", "/tmp/a", "/tmp/b"],
     ["You can only provide one value for data_dir"]),
    (["sac", "--env", "Pendulum-v1", "--act", "tf.nn.reluu"], ["--act", "tf.nn.reluu",
                                                                "does not exist"]),
    (["sac", "--env", "Pendulum-v1", "--act", "os.system"], ["--act", "os.system"]),
    (["sac", "--env", "Pendulum-v1", "--hid", "__import__('os')"], ["--hid", "not allowed"]),
    (["sac", "--env", "Pendulum-v1", "--cpu", "0"], ["num_cpu (--cpu)", "got 0"]),
    (["sac", "--env", "Pendulum-v1", "--cpu", "many"], ["num_cpu (--cpu)", "'many'"]),
    (["sac", "--env", "Pendulum-v1", "--cpu", "1", "2"], ["only provide one value for num_cpu"]),
    (["sac", "--env", "Pendulum-v1", "--parallel", "0"], ["parallel must be", "got 0"]),
    (["sac", "--env", "Pendulum-v1", "--polyak", "2"], ["polyak=2", "[0, 1]"]),
    (["sac", "--env", "Blackjack-v1", "--epochs", "1"], ["1-D", "Tuple"]),
])
def test_cli_errors_are_clear(args, words, tmp_path):
    launchable = args[0] == "sac" and len(args) > 1 and args[1].startswith("--")
    if launchable and "--data_dir" not in args:
        args = args + ["--data_dir", str(tmp_path / "d")]  # a launch writes only under tmp
    assert_clean_error(cli(*args), *words)


def test_nothing_launched_for_bad_env(tmp_path):
    res = cli("sac", "--env", "Pendulum-v1", "Nope-v0", "--data_dir", str(tmp_path))
    assert_clean_error(res, "Nope-v0 is not registered")
    assert "Running experiment" not in res.stdout and os.listdir(tmp_path) == []


# ---------------------------------------------------------------------------------- plot


def image_is_nontrivial(path):
    import matplotlib.image as mpimg

    img = mpimg.imread(path)
    assert img.shape[0] > 200 and img.shape[1] > 200
    return float(np.std(img[..., :3])) > 0.05


def test_plot_one_run_several_seeds_count_and_values(grid, tmp_path):
    data, _ = grid
    one = data / "g_h8" / "g_h8_s0"
    res = cli("plot", str(one), "--savefig", str(tmp_path / "one.png"))
    assert res.returncode == 0, res.stderr
    assert image_is_nontrivial(tmp_path / "one.png")
    res = cli("plot", str(data / "g_h8"), "--savefig", str(tmp_path / "seeds.png"), "--count")
    assert res.returncode == 0 and image_is_nontrivial(tmp_path / "seeds.png")
    res = cli("plot", str(data / "g"), "--savefig", str(tmp_path / "v.png"), "--value",
              "Performance", "AverageQ1Vals", "LossPi", "--smooth", "5")
    assert res.returncode == 0, res.stderr
    for v in ("Performance", "AverageQ1Vals", "LossPi"):
        assert image_is_nontrivial(tmp_path / f"v_{v}.png")
    assert "g_h16-16" in res.stdout and "g_h8" in res.stdout


def test_plot_select_exclude_legend(grid, tmp_path):
    data, _ = grid
    res = cli("plot", str(data / "g"), "--select", "h8", "--savefig", str(tmp_path / "s.png"))
    assert res.returncode == 0 and "g_h16-16" not in res.stdout and "g_h8" in res.stdout
    res = cli("plot", str(data / "g"), "--exclude", "h8", "--savefig", str(tmp_path / "e.png"),
              "--legend", "wide")
    assert res.returncode == 0 and "g_h16-16" in res.stdout and "/g_h8\n" not in res.stdout
    assert image_is_nontrivial(tmp_path / "e.png")
    res = cli("plot", str(data / "g"), "--legend", "only-one")
    assert_clean_error(res, "Must give a legend title for each set of experiments", "2 logdirs")


def test_plot_without_display_saves_next_to_logdir(grid):
    data, _ = grid
    res = cli("plot", str(data / "g_h8" / "g_h8_s10"), "--xaxis", "Epoch", "--est", "max")
    assert res.returncode == 0, res.stderr
    saved = str(data / "g_h8" / "g_h8_s10") + "_Performance.png"
    assert f"Saved the figure of Performance to {saved}" in res.stdout
    assert image_is_nontrivial(saved)
    os.remove(saved)


def test_plot_errors(tmp_path, grid):
    assert_clean_error(cli("plot", str(tmp_path / "nothing_here")), "No run directories match")
    (tmp_path / "empty").mkdir()
    assert_clean_error(cli("plot", str(tmp_path / "empty")), "No progress.txt")
    data, _ = grid
    assert_clean_error(cli("plot", str(data / "g"), "--value", "Reward"), "no column 'Reward'",
                       "AverageTestEpRet")


# --------------------------------------------------------------------------- test_policy


def test_test_policy_runs_episodes(grid):
    data, _ = grid
    run = data / "g_h8" / "g_h8_s0"
    res = cli("test_policy", str(run), "-n", "3", "-nr", "-l", "50")
    assert res.returncode == 0, res.stderr
    eps = re.findall(r"Episode (\d+) \t EpRet (-?[\d.]+) \t EpLen (\d+)", res.stdout)
    assert [e[0] for e in eps] == ["0", "1", "2"] and all(e[2] == "50" for e in eps)
    assert "Using default action op." in res.stdout and "AverageEpRet" in res.stdout
    res = cli("test_policy", str(run), "-n", "1", "-nr", "-d")
    assert "Using deterministic action op." in res.stdout
    assert re.search(r"Episode 0 \t EpRet -?[\d.]+ \t EpLen 200", res.stdout)


def test_load_policy_and_env_deterministic(grid):
    from spinup_tf2.utils.test_policy import load_policy_and_env

    data, _ = grid
    run = str(data / "g_h16-16" / "g_h16-16_s0")
    env, act_det = load_policy_and_env(run, deterministic=True)
    _, act_sto = load_policy_and_env(run, deterministic=False)
    o, _ = env.reset(seed=0)
    a1, a2 = act_det(o), act_det(o)
    assert a1.shape == (1,) and np.array_equal(a1, a2) and abs(a1[0]) <= 2
    samples = np.array([act_sto(o) for _ in range(20)])
    assert samples.std() > 0 and np.all(np.abs(samples) <= 2)


def test_test_policy_rebuilds_env_from_config(grid, tmp_path):
    import shutil

    data, _ = grid
    run = tmp_path / "copy"
    shutil.copytree(data / "g_h8" / "g_h8_s0", run)
    os.remove(run / "vars.pkl")
    res = cli("test_policy", str(run), "-n", "1", "-nr")
    assert res.returncode == 0, res.stderr
    assert "Rebuilding the environment Pendulum-v1 from config.json" in res.stdout
    assert "Episode 0" in res.stdout


def test_test_policy_errors(tmp_path, grid):
    assert_clean_error(cli("test_policy", str(tmp_path), "-nr"), "No saved model (tf2_save/)")
    data, _ = grid
    assert_clean_error(cli("test_policy", str(data / "g_h8"), "-nr"), "g_h8_s0",
                       "Give one of them")
    assert_clean_error(cli("test_policy", str(data / "g_h8" / "g_h8_s0"), "-nr", "-i", "7"),
                       "There is no tf2_save7")


# ------------------------------------------------------------------------------- Ctrl-C


def test_ctrl_c_stops_quickly_and_keeps_data(tmp_path):
    env = dict(os.environ, SPINUP_TF2_WAIT_BEFORE_LAUNCH="0")
    proc = subprocess.Popen(
        [sys.executable, "-m", "spinup_tf2.run", "sac", "--env", "Pendulum-v1", "--exp_name",
         "intr", "--data_dir", str(tmp_path), "--epochs", "50", "--steps_per_epoch", "400",
         "--start_steps", "200", "--update_after", "100", "--num_test_episodes", "1",
         "--hid", "[16]"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
        start_new_session=True)
    progress = tmp_path / "intr" / "intr_s0" / "progress.txt"
    deadline = time.time() + 180
    while time.time() < deadline:
        if progress.exists() and len(progress.read_text().splitlines()) >= 3:
            break
        time.sleep(0.2)
    else:
        proc.kill()
        pytest.fail("the run did not log two epochs in time")
    t0 = time.time()
    os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C in a terminal does: the whole group
    out, err = proc.communicate(timeout=30)
    assert time.time() - t0 < 10
    assert proc.returncode != 0
    assert "Traceback" not in out + err
    lines = [ln for ln in (out + err).splitlines() if "Interrupted" in ln]
    assert len(lines) == 1 and str(tmp_path / "intr" / "intr_s0") in lines[0]
    rows = progress.read_text().splitlines()
    assert all(len(r.split("\t")) == 28 for r in rows)
    import tensorflow as tf

    m = tf.saved_model.load(str(tmp_path / "intr" / "intr_s0" / "tf2_save"))
    assert m.mu(np.zeros((1, 3), np.float32)).shape == (1, 1)


def test_resume_and_tensorboard_flags(tmp_path):
    common = ["sac", "--env", "Pendulum-v1", "--exp_name", "rs", "--data_dir", str(tmp_path),
              "--steps_per_epoch", "300", "--start_steps", "100", "--update_after", "100",
              "--num_test_episodes", "1", "--hid", "[8]", "--tensorboard"]
    res = cli(*common, "--epochs", "1")
    assert res.returncode == 0, res.stderr[-2000:]
    res = cli(*common, "--epochs", "2", "--resume")
    assert res.returncode == 0, res.stderr[-2000:]
    run = tmp_path / "rs" / "rs_s0"
    lines = (run / "progress.txt").read_text().splitlines()
    assert [ln.split("\t")[0] for ln in lines[1:]] == ["1", "2"]
    assert any(name.startswith("events.out.tfevents") for name in os.listdir(run / "tb"))
    assert json.load(open(run / "config.json"))["resume"] is True
    res = cli(*common, "--epochs", "3", "--resume", "--lr", "0.01")
    assert_clean_error(res, "lr: 0.001 there, 0.01 now")


def test_cpu_without_mpi_installed_says_how_to_install(tmp_path):
    # A stand-in package that fails to import, as mpi4py does where it is not installed.
    (tmp_path / "mpi4py").mkdir()
    (tmp_path / "mpi4py" / "__init__.py").write_text("raise ImportError('No module named mpi4py')")
    res = cli("sac", "--env", "Pendulum-v1", "--cpu", "2", "--data_dir", str(tmp_path / "d"),
              env={"PYTHONPATH": str(tmp_path)})
    assert_clean_error(res, "pip install 'spinup_tf2[mpi]'", "mpi4py")
    assert not (tmp_path / "d").exists()


def test_parallel_grid_one_line_per_run(tmp_path):
    res = cli("sac", "--env", "Pendulum-v1", "--exp_name", "par", "--seed", "0", "1", "2",
              "--parallel", "2", "--data_dir", str(tmp_path), "--epochs", "1",
              "--steps_per_epoch", "300", "--start_steps", "100", "--update_after", "100",
              "--num_test_episodes", "1", "--hid", "[8]")
    assert res.returncode == 0, res.stderr[-2000:]
    lines = res.stdout.splitlines()
    for seed in (0, 1, 2):
        assert sum(ln.startswith(f"started  par_s{seed} ") for ln in lines) == 1
        assert sum(ln.startswith(f"finished par_s{seed} ") for ln in lines) == 1
        run = tmp_path / "par" / f"par_s{seed}"
        assert len((run / "progress.txt").read_text().splitlines()) == 2
        assert "AverageEpRet" in (run / "stdout.txt").read_text()  # each run's own output
    assert "|      AverageEpRet |" not in res.stdout  # no run's table in the grid's output
    started = [i for i, ln in enumerate(lines) if ln.startswith("started")]
    finished = [i for i, ln in enumerate(lines) if ln.startswith("finished")]
    assert started[1] < finished[0]  # two ran at once
