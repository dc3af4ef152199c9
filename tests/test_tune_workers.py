"""Optuna's multi-worker mode: two tune drivers share one study through its storage (a
file of its own, so that xdist runs it beside test_tune.py's studies)."""

import os
import subprocess
import sys
import time

import pytest
from helpers import HANG, cli
from test_tune import STUDY, table


@pytest.mark.slow
def test_two_drivers_share_one_study(tmp_path):
    env = dict(os.environ, SPINUP_TF2_WAIT_BEFORE_LAUNCH="0", MPLBACKEND="Agg")
    # One seed per trial: what is tested is who runs which trial.
    study = STUDY[:4] + ["0"] + STUDY[6:] + ["--data_dir", str(tmp_path), "--exp_name", "sh"]
    first = subprocess.Popen([sys.executable, "-m", "spinup_tf2.run", "tune", *study],
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                             env=env)
    journal = tmp_path / "sh" / "study.journal"
    deadline = time.time() + HANG
    while not journal.exists():
        assert first.poll() is None and time.time() < deadline, "waited for the study's journal"
        time.sleep(0.2)
    second = cli("tune", *study, "--resume", timeout=HANG)
    out_first = first.communicate(timeout=HANG)[0]
    assert first.returncode == 0 and second.returncode == 0, out_first + second.stdout
    ran = [{int(line.split()[1]) for line in out.splitlines() if line.startswith("trial ")
            and " started " in line} for out in (out_first, second.stdout)]
    assert ran[0] and ran[1] and not ran[0] & ran[1], ran  # each ran trials, none twice
    assert ran[0] | ran[1] == {0, 1, 2, 3}
    assert [r["number"] for r in table(tmp_path / "sh")] == ["0", "1", "2", "3"]
