"""A non-editable install behaves: built as a wheel, installed outside the repository, it
writes runs under ./data of the working directory and finds its bundled reference curves."""

import os
import shutil
import subprocess
import sys

from conftest import REPO
from helpers import HANG

BUNDLED = os.path.join(REPO, "data", "benchmarks", "sac-halfcheetah-v5",
                       "sac-halfcheetah-v5_s0")


def test_wheel_installed_elsewhere_runs_the_quickstart_and_plots(tmp_path):
    wheels, site, work = tmp_path / "wheels", tmp_path / "site", tmp_path / "work"
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
    subprocess.run([*pip, "wheel", "--no-deps", "--no-build-isolation", "-w", str(wheels),
                    REPO], check=True, capture_output=True, timeout=HANG)
    (wheel,) = wheels.iterdir()
    assert wheel.name.startswith("spinup_tf2-0.2.0-") and wheel.suffix == ".whl"
    subprocess.run([*pip, "install", "--no-deps", "--target", str(site), str(wheel)],
                   check=True, capture_output=True, timeout=HANG)
    assert (site / "spinup_tf2" / "data" / "spinningup_sac_curves.csv").exists()
    work.mkdir()
    env = dict(os.environ, PYTHONPATH=str(site), SPINUP_TF2_WAIT_BEFORE_LAUNCH="0",
               MPLBACKEND="Agg")
    env.pop("SPINUP_TF2_DATA_DIR", None)

    def run(*args):
        return subprocess.run([sys.executable, *args], cwd=work, env=env, capture_output=True,
                              text=True, timeout=HANG)

    where = run("-c", "import spinup_tf2, spinup_tf2.user_config as u; "
                      "print(spinup_tf2.__file__); print(u.DEFAULT_DATA_DIR)")
    file, data_dir = where.stdout.split()
    assert file.startswith(str(site)) and data_dir == str(work / "data")

    res = run("-m", "spinup_tf2.run", "sac", "--env", "Pendulum-v1", "--exp_name", "quickstart",
              "--epochs", "1", "--steps_per_epoch", "300", "--start_steps", "200",
              "--update_after", "100", "--num_test_episodes", "1", "--hid", "[16]")
    assert res.returncode == 0, res.stderr[-2000:]
    run_dir = work / "data" / "quickstart" / "quickstart_s0"
    assert sorted(os.listdir(run_dir)) == ["config.json", "progress.txt", "tf2_save",
                                           "train_state", "vars.pkl"]
    assert not (site / "data").exists()

    shutil.copytree(BUNDLED, work / "hc", ignore=shutil.ignore_patterns("tf2_save*"))
    res = run("-m", "spinup_tf2.run", "plot", "hc", "--reference", "--savefig", "hc.png")
    assert res.returncode == 0, res.stderr[-2000:]
    assert "No published Spinning Up SAC curve" not in res.stdout
    assert (work / "hc.png").stat().st_size > 10_000
