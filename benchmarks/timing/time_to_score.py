"""Wall-clock time for SAC to reach Spinning Up's 100k-step HalfCheetah score.

    python benchmarks/timing/race.py --out race.jsonl          # measure the three speeds first
    python benchmarks/timing/time_to_score.py race.jsonl [--env HalfCheetah-v5] [--data_dir DIR]

The score is Spinning Up's own (PyTorch SAC, mean of 10 seeds, smoothed) at 100k
env steps: about 6,000 on HalfCheetah. The number of env steps needed to reach it
comes from our bundled curves (``data/benchmarks/``, each seed on 10k-step points
and smoothed as ``compare_curves.py`` does, then averaged over seeds): the first
10k-step point where the seed mean reaches the score. All three implementations
run the same algorithm with the same settings, so the same curve is used for the
peers too, and the time is that step count divided by each one's median env
steps/s in the race (``race.py --out``: steps 2,000 to 8,000, updates included,
test episodes not). Spinning Up's test episodes (10 per epoch) are left out for
everyone, since the peers evaluate differently.
"""

from __future__ import annotations

import argparse
import os.path as osp
import statistics
import sys

import numpy as np
import pandas as pd

HERE = osp.dirname(osp.abspath(__file__))
sys.path.insert(0, osp.join(osp.dirname(HERE), "learning"))
from compare_curves import ENVS, REPO, our_curves  # noqa: E402
from race import read_race  # noqa: E402


def steps_to_score(env: str, data_dir: str, score: float) -> tuple[int | None, int]:
    """``(steps, seeds)``: the first 10k-step point where our seed-mean curve
    reaches ``score`` (None if it never does), and how many seeds made the curve."""
    steps, rows = our_curves(env, data_dir)
    if len(rows) == 0:
        return None, 0
    mean = rows.mean(axis=0)
    hit = np.nonzero(mean >= score)[0]
    return (int(steps[hit[0]]) if len(hit) else None), len(rows)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("race", help="JSON lines written by race.py --out")
    p.add_argument("--env", default="HalfCheetah-v5", choices=sorted(ENVS))
    p.add_argument("--data_dir", default=osp.join(REPO, "data", "benchmarks"))
    p.add_argument("--at", type=int, default=100_000,
                   help="the step of Spinning Up's curve whose score is the target")
    a = p.parse_args(argv)

    from spinup_tf2.utils.plot import REFERENCE_CSV

    ref = pd.read_csv(REFERENCE_CSV)
    pyt = ref[(ref.env == ENVS[a.env]) & (ref.version == "pyt") & (ref.timesteps == a.at)]
    score = float(pyt.mean_smoothed.iloc[0])
    steps, seeds = steps_to_score(a.env, a.data_dir, score)
    if steps is None:
        print(f"Our {a.env} curve ({seeds} seeds) never reaches {score:.0f}.")
        return 1
    speeds = {who: [row["env_steps_per_s"] for row in rows]
              for who, rows in read_race(a.race)[1].items()}
    print(f"{a.env}: Spinning Up's score at {a.at:,} steps is {score:,.0f}; our mean curve "
          f"({seeds} seeds) reaches it at {steps:,} env steps.\n")
    print("| who | env steps/s (median of rounds) | time to the score | time / ours' |")
    print("|---|---:|---:|---:|")
    ours = statistics.median(speeds["ours"])
    for who in [w for w in speeds if w != "ours"] + ["ours"]:
        v = statistics.median(speeds[who])
        minutes = steps / v / 60
        print(f"| {who} | {v:.1f} ({len(speeds[who])}) | {minutes:.1f} min | "
              f"{ours / v:.2f}x |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
