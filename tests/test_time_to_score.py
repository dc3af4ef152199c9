"""benchmarks/timing/time_to_score.py on hand-made curves and race results, worked out by hand."""

import json
import os
import os.path as osp
import subprocess
import sys

import numpy as np
import pytest
from helpers import HANG

REPO = osp.dirname(osp.dirname(osp.abspath(__file__)))
SCRIPT = osp.join(REPO, "benchmarks", "timing", "time_to_score.py")


def write_run(data_dir, seed, offset, algo="sac", epochs=88, slope=0.1):
    """A finished HalfCheetah-v5 run (88 epochs of 4,000 steps) whose test return is
    steps / 10 + offset: linear, so an 11-point moving average leaves it unchanged
    away from the ends (``algo``'s run of ``epochs``, return ``slope`` * steps + offset)."""
    run = osp.join(data_dir, f"{algo}-halfcheetah-v5", f"{algo}-halfcheetah-v5_s{seed}")
    os.makedirs(run)
    steps = np.arange(1, epochs + 1) * 4000
    with open(osp.join(run, "progress.txt"), "w") as f:
        f.write("Epoch\tTotalEnvInteracts\tAverageTestEpRet\n")
        for e, t in enumerate(steps, 1):
            f.write(f"{e}\t{t}\t{slope * t + offset}\n")


def family_times(tmp_path, rows: list[dict]) -> str:
    """``time_to_score.py --family``'s table for the speed ``rows`` and the runs written in
    ``tmp_path / 'data'``."""
    speeds = tmp_path / "speeds.jsonl"
    speeds.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = subprocess.run([sys.executable, SCRIPT, "--family", str(speeds), "--data_dir",
                          str(tmp_path / "data")], capture_output=True, text=True, timeout=HANG)
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_time_to_score_by_hand(tmp_path):
    """Seeds at steps/10 - 50 and steps/10 + 50 average to steps/10, which is 6,000 at
    60k and 7,000 at 70k: the first 10k point at or above Spinning Up's 6,081 is 70k.
    At 500 and 250 env steps/s (medians of the rows) that is 2.3 and 4.7 minutes."""
    data = tmp_path / "data"
    write_run(str(data), 0, -50.0)
    write_run(str(data), 10, 50.0)
    race = tmp_path / "race.jsonl"
    rows = [("sbx", 240.0), ("ours", 500.0), ("sbx", 250.0), ("ours", 490.0), ("sbx", 999.0),
            ("ours", 510.0)]
    race.write_text("".join(json.dumps(dict(who=w, env_steps_per_s=v, updates_per_s=0.0)) + "\n"
                            for w, v in rows))
    out = subprocess.run([sys.executable, SCRIPT,
                          str(race), "--data_dir", str(data)],
                         capture_output=True, text=True, timeout=HANG)
    assert out.returncode == 0, out.stderr
    assert "score at 100,000 steps is 6,081" in out.stdout
    assert "(2 seeds) reaches it at 70,000 env steps" in out.stdout
    assert "| sbx | 250.0 (3) | 4.7 min | 2.00x |" in out.stdout
    assert "| ours | 500.0 (3) | 2.3 min | 1.00x |" in out.stdout


def test_time_to_score_never_reached(tmp_path):
    """A curve that stays below the score says so and exits 1."""
    data = tmp_path / "data"
    write_run(str(data), 0, -40_000.0)
    race = tmp_path / "race.jsonl"
    race.write_text(json.dumps(dict(who="ours", env_steps_per_s=500.0)) + "\n")
    out = subprocess.run([sys.executable, SCRIPT,
                          str(race), "--data_dir", str(data)],
                         capture_output=True, text=True, timeout=HANG)
    assert out.returncode == 1
    assert "never reaches 6081" in out.stdout


@pytest.mark.processes  # family_times runs the script
def test_the_family_times_by_hand(tmp_path):
    """SAC at steps/10 (two seeds, +-50) first reaches 6,081 at the 64k epoch and 9,163 at
    92k; CrossQ at steps/5 (25 epochs) at 32k and 48k. At 500 and 50 env steps/s: 64k/500 s
    = 2 min, 32k/50 s = 11 min, 48k/50 s = 16 min. TQC's only row has 2 critics, not its
    runs' 5: no speed; and its 100k run never reaches the scores. CrossQ's run on to 300k
    (steps/25; one more still at 30 epochs, not counted) at CrossQ's speed: 156k and 232k,
    52 and 77 min."""
    data = tmp_path / "data"
    write_run(str(data), 0, -50.0)
    write_run(str(data), 10, 50.0)
    write_run(str(data), 0, 0.0, "crossq", 25, 0.2)
    write_run(str(data), 0, 0.0, "crossq-300k", 75, 0.04)
    write_run(str(data), 10, 0.0, "crossq-300k", 30, 1.0)
    write_run(str(data), 0, 0.0, "tqc", 25, 0.01)
    rows = [dict(who="ours", impl="spinup_tf2", env_steps_per_s=500.0),
            dict(who="sbx", impl="sbx", algo="crossq", env_steps_per_s=999.0),
            dict(impl="spinup_tf2", algo="crossq", env_steps_per_s=40.0),
            dict(impl="spinup_tf2", algo="crossq", env_steps_per_s=50.0),
            dict(impl="spinup_tf2", algo="crossq", env_steps_per_s=60.0),
            dict(impl="spinup_tf2", algo="tqc", n_critics=None, env_steps_per_s=80.0)]
    stdout = family_times(tmp_path, rows)
    assert "| sac | 2 | 500.0 (1) | 64k | 2 min | 92k | 3 min |" in stdout
    assert "| crossq | 1 | 50.0 (3) | 32k | 11 min | 48k | 16 min |" in stdout
    assert "| tqc | 1 | not measured | not by 100k |  | not by 100k |  |" in stdout
    assert ("| crossq (runs to 300k) | 1 | 50.0 (3) | 156k | 52 min | 232k | 77 min |"
            in stdout)


@pytest.mark.processes  # family_times runs the script
def test_a_variant_without_runs_on_the_task_reads_the_published_curve(tmp_path):
    """REDQ has no HalfCheetah runs here: its row comes from SimbaV2's published mean curve
    (bundled data, points every 16,666 steps), whose 10 seeds average 5,464 at 33,332 and
    6,477 at 49,998: 6,081 is reached after the first and by the second, so "≤50k"; at 12.5
    env steps/s that is 49,998 / 12.5 / 60 = 67 min at most. Its mean never reaches 9,163
    (7,823 at 99,996). DroQ, with a run of ours at steps/10, keeps its own
    curve (64k and 92k, 43 and 61 min at 25 env steps/s); CrossQ, with none and
    no speed, reads its published curve (points every 2,000 steps: 5,641 at 42k, 6,200 at
    44k)."""
    data = tmp_path / "data"
    write_run(str(data), 0, 0.0, "droq", 25, 0.1)
    rows = [dict(impl="spinup_tf2", algo="redq", env_steps_per_s=12.5),
            dict(impl="spinup_tf2", algo="droq", env_steps_per_s=25.0)]
    stdout = family_times(tmp_path, rows)
    assert ("| redq (published curve) | 10, published -v4 | 12.5 (1) | ≤50k | ≤67 min | "
            "not by 100k |  |" in stdout)
    assert "| droq | 1 | 25.0 (1) | 64k | 43 min | 92k | 61 min |" in stdout
    assert ("| crossq (published curve) | 10, published -v4 | not measured | ≤44k | no speed | "
            "not by 100k |  |" in stdout)


@pytest.mark.processes  # family_times runs the script
def test_the_family_times_in_bfloat16_by_hand(tmp_path):
    """Speed rows with ``precision: bfloat16`` give a variant a bfloat16 row. CrossQ has
    bfloat16 runs (steps/4: 6,081 first at the 28k epoch, 9,163 at 40k; at 100 env steps/s,
    5 and 7 min); TQC has none, so its row reads its float32 curve (steps/10: 64k and 92k,
    at 80 env steps/s 13 and 19 min) and says so. Without bfloat16 speeds, no bfloat16 row
    (DroQ)."""
    data = tmp_path / "data"
    write_run(str(data), 0, 0.0, "crossq", 25, 0.2)
    write_run(str(data), 0, 0.0, "crossq-bf16", 25, 0.25)
    write_run(str(data), 0, 0.0, "tqc", 25, 0.1)
    write_run(str(data), 0, 0.0, "droq", 25, 0.1)
    rows = [dict(impl="spinup_tf2", algo="crossq", env_steps_per_s=50.0),
            dict(impl="spinup_tf2", algo="crossq", precision="bfloat16", env_steps_per_s=100.0),
            dict(impl="spinup_tf2", algo="tqc", n_critics=5, precision="bfloat16",
                 env_steps_per_s=80.0),
            dict(impl="spinup_tf2", algo="droq", precision="float32", env_steps_per_s=25.0)]
    stdout = family_times(tmp_path, rows)
    assert "| crossq | 1 | 50.0 (1) | 32k | 11 min | 48k | 16 min |" in stdout
    assert "| crossq, bfloat16 | 1 | 100.0 (1) | 28k | 5 min | 40k | 7 min |" in stdout
    assert ("| tqc, bfloat16 | 1, float32's curve | 80.0 (1) | 64k | 13 min | 92k | 19 min |"
            in stdout)
    assert "droq, bfloat16" not in stdout


@pytest.mark.processes  # family_times runs the script
def test_a_run_at_another_width_is_timed_at_that_width(tmp_path):
    """SimbaV2's runs with critics 256 wide (``simbav2-w256``, steps/10: 64k and 92k) take
    the speed rows of that width alone: 20 env steps/s, so 64k / 20 / 60 = 53 min and
    92k / 20 / 60 = 77 min. The row at 384 wide (10 env steps/s) stays SimbaV2's own, which
    has no runs here and reads its published curve."""
    data = tmp_path / "data"
    write_run(str(data), 0, 0.0, "simbav2-w256", 25, 0.1)
    rows = [dict(impl="spinup_tf2", algo="simbav2", critic_width=256, env_steps_per_s=20.0),
            dict(impl="spinup_tf2", algo="simbav2", critic_width=384, env_steps_per_s=10.0)]
    stdout = family_times(tmp_path, rows)
    assert "| simbav2-w256 | 1 | 20.0 (1) | 64k | 53 min | 92k | 77 min |" in stdout
    assert "| simbav2 (published curve) | 10, published -v4 | 10.0 (1) |" in stdout
