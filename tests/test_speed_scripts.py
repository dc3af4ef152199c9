"""The speed scripts' arguments: a setting given to the wrong variant is refused, in one line
that names it, before anything is built or timed."""

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
    """``--critic_width`` sets CrossQ's critics: race.py and speed.py refuse it for TQC and
    SAC, naming the width and the variant it belongs to."""
    race = run(osp.join(BENCH, "timing", "race.py"), "--algo", "tqc", "--critic_width", "2048",
               "--peers", "sbx", "--venv_dir", "/nonexistent")
    assert race.returncode != 0
    assert "--critic_width 2048" in race.stderr and "--algo crossq" in race.stderr
    assert "Traceback" not in race.stderr
    speed = run(osp.join(BENCH, "speed.py"), "--critic_width", "64")
    assert speed.returncode == 2
    assert "--critic_width 64" in speed.stderr and "--algo crossq" in speed.stderr
    assert "Traceback" not in speed.stderr
