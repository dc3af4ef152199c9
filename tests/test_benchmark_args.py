"""The benchmark scripts' arguments: a setting given to the wrong variant is refused, in one
line that names it, before anything is built, timed or run."""

import os.path as osp
import subprocess
import sys

import pytest

REPO = osp.dirname(osp.dirname(osp.abspath(__file__)))
BENCH = osp.join(REPO, "benchmarks")


def run(*args):
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=120,
                          cwd=REPO)


@pytest.mark.processes
def test_critic_width_only_with_crossq():
    """``--critic_width`` sets CrossQ's critics: race.py, peer_speed.py and speed.py refuse
    it for TQC and SAC, naming the width and the variant it belongs to."""
    race = run(osp.join(BENCH, "timing", "race.py"), "--algo", "tqc", "--critic_width", "2048",
               "--peers", "sbx", "--venv_dir", "/nonexistent")
    assert race.returncode != 0
    assert "--critic_width 2048" in race.stderr and "--algo crossq" in race.stderr
    assert "Traceback" not in race.stderr
    peer = run(osp.join(BENCH, "timing", "peers", "peer_speed.py"), "sbx", "--algo", "tqc",
               "--critic_width", "2048")  # refused before the peer's packages are imported
    assert peer.returncode == 2
    assert "--critic_width 2048" in peer.stderr and "--algo crossq" in peer.stderr
    speed = run(osp.join(BENCH, "speed.py"), "--critic_width", "64")
    assert speed.returncode == 2
    assert "--critic_width 64" in speed.stderr and "--algo crossq" in speed.stderr
    assert "Traceback" not in speed.stderr


@pytest.mark.processes
def test_learning_tqc_checks_run_into_their_own_folders(tmp_path):
    """learning.py's TQC checks (``--tqc_drop``, ``--tqc_sac_settings``) name folders of their
    own, so they never mix with the bundled TQC runs; each is refused outside ``--suite tqc``,
    and the two together (one change at a time)."""
    script = osp.join(BENCH, "learning", "learning.py")
    dry = run(script, "--suite", "tqc", "--tqc_sac_settings", "--seed", "0", "--dry_run",
              "--data_dir", str(tmp_path))
    assert dry.returncode == 0, dry.stderr
    assert dry.stdout.count("would run") == 2
    assert "tqc-sacsettings-hopper-v5/tqc-sacsettings-hopper-v5_s0" in dry.stdout
    assert "tqc-drop5-hopper-v5_s0" in run(script, "--suite", "tqc", "--tqc_drop", "5", "--env",
                                          "Hopper-v5", "--seed", "0", "--dry_run",
                                          "--data_dir", str(tmp_path)).stdout
    for bad in (["--suite", "crossq", "--tqc_sac_settings"], ["--suite", "droq", "--tqc_drop", "0"],
                ["--suite", "tqc", "--tqc_drop", "0", "--tqc_sac_settings"]):
        refused = run(script, *bad, "--dry_run", "--data_dir", str(tmp_path))
        assert refused.returncode == 2 and "--suite tqc" in refused.stderr, bad
        assert "Traceback" not in refused.stderr
