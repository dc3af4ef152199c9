"""A grid launched from the command line, and the plot and test_policy commands on its
runs, through real subprocesses. The tests share one grid (the ``grid`` fixture)."""

import json
import os
import re
import shutil

import numpy as np
import pytest
from helpers import CLI_TINY, assert_clean_error, cli, run_main


@pytest.fixture(scope="module")
def grid(tmp_path_factory):
    """One small grid: two seeds x two batch sizes with a shorthand."""
    data = tmp_path_factory.mktemp("grid")
    res = cli("sac", "--env", "Pendulum-v1", "--exp_name", "g", "--seed", "0", "10",
              "--hid[h]", "[16,16]", "[8]", "--act", "tf.nn.tanh", "--data_dir", str(data),
              *CLI_TINY)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    return data, res.stdout


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
        assert cfg["ac_kwargs"]["activation"] == "tanh" and cfg["steps_per_epoch"] == 400
    assert "Variants, counting seeds: " in out and "Preparing to run the following" in out
    assert "End of experiment." in out
    assert f"python -m spinup_tf2.run plot {data / 'g_h8' / 'g_h8_s10'}" in out
    assert f"python -m spinup_tf2.run test_policy {data / 'g_h8' / 'g_h8_s10'}" in out
    # Variants run in grid order: the first-added key (seed) varies slowest.
    order = re.findall(r"Running experiment:\n\S*\n(\S+)\n", out)
    assert order == ["g_h16-16", "g_h8", "g_h16-16", "g_h8"]


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


def test_plot_matches_names_containing_the_last_part(grid, tmp_path):
    """As in Spinning Up, a logdir's last part selects every directory beside it whose
    name contains it (not only those that start with it)."""
    data, _ = grid
    res = cli("plot", str(data / "h8"), "--savefig", str(tmp_path / "c.png"))
    assert res.returncode == 0, res.stderr
    listed = res.stdout.split("Plotting from...")[1].split("=" * 50)[1].split()
    assert listed == [str(data / "g_h8")]


def test_plot_without_display_never_replaces_an_earlier_figure(grid):
    data, _ = grid
    run = str(data / "g_h16-16" / "g_h16-16_s0")
    first, second = run + "_LossQ1.png", run + "_LossQ1-2.png"
    res = cli("plot", run, "--value", "LossQ1")
    assert res.returncode == 0 and f"Saved the figure of LossQ1 to {first}" in res.stdout
    before = open(first, "rb").read()
    res = cli("plot", run, "--value", "LossQ1", "--smooth", "2")
    assert res.returncode == 0 and f"Saved the figure of LossQ1 to {second}" in res.stdout
    assert open(first, "rb").read() == before and image_is_nontrivial(second)
    os.remove(first)
    os.remove(second)


def test_plot_skips_a_row_cut_mid_line(grid, tmp_path):
    """A progress.txt whose last row was cut mid-line (e.g. -859.19 cut to -85): the row
    is skipped with a warning, never read as data."""
    from spinup_tf2.utils.plot import read_progress

    data, _ = grid
    run = tmp_path / "cut" / "cut_s0"
    shutil.copytree(data / "g_h8" / "g_h8_s0", run)
    text = (run / "progress.txt").read_text()
    whole = read_progress(str(run / "progress.txt"))
    (run / "progress.txt").write_text(text + text.splitlines()[-1][:25])
    cut = read_progress(str(run / "progress.txt"))
    assert cut.equals(whole)
    res = cli("plot", str(run), "--savefig", str(tmp_path / "cut.png"))
    assert res.returncode == 0, res.stderr
    assert "skipped the last line of" in res.stdout and "cut mid-line" in res.stdout


def test_plot_long_legend_stays_inside_the_figure(grid):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from spinup_tf2.utils.plot import get_all_datasets, plot_data

    data, _ = grid
    long = "sac_halfcheetah_hid256-256_lr0-0003_alpha-auto_batch256_polyak0-995_seedsweep_" * 2
    runs = get_all_datasets([str(data / "g_h8") + os.sep], legend=[long])
    fig = plt.figure()
    ax = plot_data(runs, xaxis="TotalEnvInteracts", value="Performance", ax=fig.gca())
    legend = ax.get_legend()
    box, frame = legend.get_window_extent(fig.canvas.get_renderer()), fig.bbox
    assert frame.x0 <= box.x0 and box.x1 <= frame.x1 and frame.y0 <= box.y0 <= box.y1 <= frame.y1
    assert legend.get_texts()[0].get_text().replace("\n", "") == long  # wrapped, not cut
    plt.close(fig)


def test_plot_errors(tmp_path, grid):
    assert_clean_error(cli("plot", str(tmp_path / "nothing_here")), "No run directories match")
    (tmp_path / "empty").mkdir()
    assert_clean_error(cli("plot", str(tmp_path / "empty")), "No progress.txt")
    data, _ = grid
    assert_clean_error(cli("plot", str(data / "g"), "--value", "Reward"), "no column 'Reward'",
                       "AverageTestEpRet")


# --------------------------------------------------------------------------- test_policy
# In this process, through the CLI's main(argv): its TensorFlow is loaded once for all.


def test_test_policy_runs_episodes(grid, capfd):
    data, _ = grid
    run = data / "g_h8" / "g_h8_s0"
    res = run_main(capfd, "test_policy", str(run), "-n", "3", "-nr", "-l", "50")
    assert res.returncode == 0, res.stderr
    eps = re.findall(r"Episode (\d+) \t EpRet (-?[\d.]+) \t EpLen (\d+)", res.stdout)
    assert [e[0] for e in eps] == ["0", "1", "2"] and all(e[2] == "50" for e in eps)
    assert "Using default action op." in res.stdout and "AverageEpRet" in res.stdout
    res = run_main(capfd, "test_policy", str(run), "-n", "1", "-nr", "-d")
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


def test_test_policy_rebuilds_env_from_config(grid, tmp_path, capfd):
    import shutil

    data, _ = grid
    run = tmp_path / "copy"
    shutil.copytree(data / "g_h8" / "g_h8_s0", run)
    os.remove(run / "vars.pkl")
    res = run_main(capfd, "test_policy", str(run), "-n", "1", "-nr")
    assert res.returncode == 0, res.stderr
    assert "Rebuilding the environment Pendulum-v1 from config.json" in res.stdout
    assert "Episode 0" in res.stdout


def test_test_policy_errors(tmp_path, grid, capfd):
    assert_clean_error(run_main(capfd, "test_policy", str(tmp_path), "-nr"),
                       "No saved model (tf2_save/)")
    data, _ = grid
    assert_clean_error(run_main(capfd, "test_policy", str(data / "g_h8"), "-nr"), "g_h8_s0",
                       "Give one of them")
    assert_clean_error(run_main(capfd, "test_policy", str(data / "g_h8" / "g_h8_s0"), "-nr",
                                "-i", "7"),
                       "There is no tf2_save7")
    cut = tmp_path / "cut_s0"
    shutil.copytree(data / "g_h8" / "g_h8_s0", cut)
    pb = cut / "tf2_save" / "saved_model.pb"
    pb.write_bytes(pb.read_bytes()[:pb.stat().st_size // 2])
    assert_clean_error(run_main(capfd, "test_policy", str(cut), "-nr"),
                       f"{cut / 'tf2_save'} cannot be loaded",
                       "cut short or damaged")




PICKLE_BOMB = """
import os, pickle, sys


class Bomb:
    def __reduce__(self):
        return (os.system, ("touch " + sys.argv[2],))


with open(sys.argv[1], "wb") as f:
    pickle.dump({"env": Bomb()}, f)
"""


def test_test_policy_runs_no_code_from_vars_pkl_unless_trusted(grid, tmp_path, capfd):
    import shutil
    import subprocess
    import sys

    data, _ = grid
    run = tmp_path / "crafted"
    shutil.copytree(data / "g_h8" / "g_h8_s0", run)
    marker = tmp_path / "ran_foreign_code"
    subprocess.run([sys.executable, "-c", PICKLE_BOMB, str(run / "vars.pkl"), str(marker)],
                   check=True)
    res = run_main(capfd, "test_policy", str(run), "-n", "1", "-nr")
    assert res.returncode == 0, res.stderr
    assert "Rebuilding the environment Pendulum-v1 from config.json" in res.stdout
    assert not marker.exists()
    res = run_main(capfd, "test_policy", str(run), "-n", "1", "-nr", "--trust_vars_pkl")
    assert marker.exists()  # the flag does what it says: it unpickles the file
    # What it unpickled is no environment: said in one line, and the config's env is used.
    assert res.returncode == 0, res.stderr
    assert "vars.pkl holds no environment under 'env' (its type is int)" in res.stdout
    assert "Rebuilding the environment Pendulum-v1 from config.json" in res.stdout


def test_test_policy_without_a_display_runs_without_rendering(grid, monkeypatch, capfd):
    data, _ = grid
    for k in ("DISPLAY", "WAYLAND_DISPLAY"):
        monkeypatch.setenv(k, "")
    res = run_main(capfd, "test_policy", str(data / "g_h8" / "g_h8_s0"), "-n", "2")
    assert res.returncode == 0, res.stderr
    assert "Traceback" not in res.stdout + res.stderr
    assert sum("No display here" in ln for ln in res.stdout.splitlines()) == 1
    assert "Episode 1" in res.stdout
