"""Wall-clock time for SAC to reach Spinning Up's 100k-step HalfCheetah score.

    python benchmarks/timing/race.py --out race.jsonl          # measure the three speeds first
    python benchmarks/timing/time_to_score.py race.jsonl [--env HalfCheetah-v5] [--data_dir DIR]
    python benchmarks/timing/time_to_score.py --family SPEEDS.jsonl...  # SAC and its family

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

``--family`` answers "which one should I run on my machine" for SAC and each variant of the
SAC family: the time to Spinning Up's 100k and 300k HalfCheetah scores (6,081 and 9,163) on
2 cores. For every algorithm alike, the steps are the first epoch at which the mean over
finished seeds of the raw test return reaches the score (SAC: the bundled 350k runs;
the variants: their 100k evidence runs, ``learning.py --suite crossq`` etc., and CrossQ's
runs on to 300k in a row of their own), and the speed is the median env steps/s of our
rows with the evidence runs' settings in the JSON lines given (``race.py --out`` files,
``speed.py --algo A --json`` lines): SAC's rows (a race's or ``speed.py``'s), CrossQ's
512-wide critics, TQC with its 5 critics (``speed.py --algo tqc --n_critics 5``), DroQ and
REDQ at 20 updates per step. A variant without finished runs here on the task (REDQ, whose
runs are on Hopper) takes its steps from SimbaV2's published mean curve
(``compare_curves.py``'s reference data, 10 seeds, -v4, a point every 16,666 steps), marked
as upper bounds. Prints the table (``benchmarks/timing/family_time_to_score.md``).
"""

from __future__ import annotations

import argparse
import os.path as osp
import re
import statistics
import sys

import numpy as np
import pandas as pd

HERE = osp.dirname(osp.abspath(__file__))
sys.path.insert(0, osp.join(osp.dirname(HERE), "learning"))
from compare_curves import ENVS, REPO, SIMBAV2_NAMES, our_curves, published_rows  # noqa: E402
from race import read_race  # noqa: E402

from spinup_tf2.family import MEMBERS  # noqa: E402


def steps_to_score(env: str, data_dir: str, score: float) -> tuple[int | None, int]:
    """``(steps, seeds)``: the first 10k-step point where our seed-mean curve
    reaches ``score`` (None if it never does), and how many seeds made the curve."""
    steps, rows = our_curves(env, data_dir)
    if len(rows) == 0:
        return None, 0
    mean = rows.mean(axis=0)
    hit = np.nonzero(mean >= score)[0]
    return (int(steps[hit[0]]) if len(hit) else None), len(rows)


# Other runs of a member, which have directories of their own: CrossQ's on to 300k
# (learning.py --suite crossq --epochs 75), timed at its member's speed; SimbaV2's with
# critics 256 wide (--critic_width 256), timed by the speed rows of that width alone, since
# an update's cost grows with the square of the width.
OTHER_RUNS = {"crossq": ("crossq-300k",), "simbav2": ("simbav2-w256",)}
FAMILY = ("sac", *(n for m in MEMBERS for n in (m, *OTHER_RUNS.get(m, ()))))
# SAC's runs are 350k, the family's 100k unless longer.
RUN_EPOCHS = {"sac": 88, "crossq-300k": 75, **{n: 25 for n in FAMILY if n not in
                                                 ("sac", "crossq-300k")},
              **{f"{m}-bf16": 25 for m in MEMBERS}}  # learning.py --precision bfloat16


def family_speeds(paths: list[str]) -> dict[tuple[str, str], list[float]]:
    """Our env steps/s in the JSON lines files ``paths``, by algorithm and precision, from the
    rows whose settings are the evidence runs' (TQC: 5 critics). A row at a critic width that
    has runs of its own (``simbav2`` at 256: ``simbav2-w256``) is that row's speed, not its
    member's."""
    import json

    out: dict[tuple[str, str], list[float]] = {}
    for path in paths:
        with open(path) as f:
            for line in filter(str.strip, f):
                row = json.loads(line)
                if row.get("impl") != "spinup_tf2" or row.get("pixels") or row.get("recurrent"):
                    continue
                algo = row.get("algo", "sac")
                if algo == "tqc" and row.get("n_critics") != 5:
                    continue  # the SBX race's TQC has SBX's 2 critics
                precision = row.get("precision", "float32")
                if f"{algo}-w{row.get('critic_width')}" in FAMILY:
                    algo = f"{algo}-w{row['critic_width']}"
                out.setdefault((algo, precision), []).append(row["env_steps_per_s"])
    return out


def mean_curve(algo: str, env: str, data_dir: str) -> tuple[np.ndarray, np.ndarray, int]:
    """``(steps, mean, seeds)``: the mean over finished runs of the raw test return at each
    epoch."""
    import glob

    runs = []
    for path in sorted(glob.glob(osp.join(data_dir, f"{algo}-{env.lower()}", "*",
                                          "progress.txt"))):
        if osp.getsize(path):
            df = pd.read_table(path)
            if len(df) >= RUN_EPOCHS[algo]:
                runs.append(df.iloc[:RUN_EPOCHS[algo]])
    if not runs:
        return np.zeros(0), np.zeros(0), 0
    mean = np.mean([r["AverageTestEpRet"].to_numpy() for r in runs], axis=0)
    return runs[0]["TotalEnvInteracts"].to_numpy(), mean, len(runs)


def published_curve(algo: str, env: str) -> tuple[np.ndarray, np.ndarray]:
    """``(steps, mean)``: SimbaV2's published mean test return of ``algo`` over its 10 seeds
    at each of its evaluation points on ``env``'s -v4 task (empty if it has none)."""
    if algo not in SIMBAV2_NAMES:
        return np.zeros(0), np.zeros(0)
    pub = published_rows()
    pub = pub[(pub.algorithm == SIMBAV2_NAMES[algo])
              & (pub.env == env.replace("-v5", "-v4"))]  # as compare_curves.py reads it
    mean = pub.groupby("env_step").avg_return.mean()
    return mean.index.to_numpy(), mean.to_numpy()


def family_table(paths: list[str], env: str, data_dir: str, scores: list[float]) -> str:
    """The markdown table of ``--family``. A variant with no finished runs of ours on ``env``
    but a published curve (REDQ, whose runs here are on Hopper) gets a row from that curve
    at our speed, marked as such: its score is reached somewhere after the published point
    before, so its steps and time are upper bounds ("≤"). Where ``paths`` hold speeds in
    bfloat16 too (``speed.py --precision bfloat16``), a variant gets a bfloat16 row: its
    steps from its bfloat16 runs on ``env`` (``learning.py --precision bfloat16``) where
    they have finished, else from its float32 curve (marked so: the learning check found
    bfloat16 within one s.e. of float32)."""
    speeds = family_speeds(paths)
    head = " | ".join(f"to {s:,.0f}: steps | time" for s in scores)
    lines = [f"| algorithm | seeds | env steps/s (median, runs) | {head} |",
             "|---|---:|---:|" + "---:|---:|" * len(scores)]
    for algo, precision in ((a, p) for a in FAMILY for p in ("float32", "bfloat16")):
        # A longer run's speed is its variant's; a run at another width has its own.
        variant = algo if re.search(r"-w\d+$", algo) else algo.split("-")[0]
        if precision == "bfloat16" and (variant, precision) not in speeds:
            continue
        curve = algo if precision == "float32" else f"{variant}-bf16"
        steps, mean, seeds = mean_curve(curve, env, data_dir)
        bound, count = "", str(seeds)
        if not seeds and precision == "bfloat16":
            steps, mean, seeds = mean_curve(algo, env, data_dir)
            count = f"{seeds}, float32's curve"
        if not seeds:
            steps, mean = published_curve(algo, env)
            if not len(steps):
                continue
            bound, count = "≤", "10, published -v4"
        runs = speeds.get((variant, precision))
        v = statistics.median(runs) if runs else None
        cells = []
        for score in scores:
            hit = np.nonzero(mean >= score)[0]
            if not len(hit):
                cells.append(f"not by {round(steps[-1] / 1000)}k | ")
                continue
            at = int(steps[hit[0]])
            cells.append(f"{bound}{round(at / 1000)}k | "
                         + (f"{bound}{at / v / 60:.0f} min" if v else "no speed"))
        speed = f"{v:.1f} ({len(runs)})" if v else "not measured"
        name = (algo.replace("-300k", " (runs to 300k)") + (", bfloat16" if precision != "float32"
                                                            else "")
                + (" (published curve)" if bound else ""))
        lines.append(f"| {name} | {count} | {speed} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("race", nargs="+", help="JSON lines written by race.py --out (with "
                   "--family: any number of race.py and speed.py --json files)")
    p.add_argument("--family", action="store_true",
                   help="SAC and each variant of the family, to the 100k and 300k scores")
    p.add_argument("--env", default="HalfCheetah-v5", choices=sorted(ENVS))
    p.add_argument("--data_dir", default=osp.join(REPO, "data", "benchmarks"))
    p.add_argument("--at", type=int, default=100_000,
                   help="the step of Spinning Up's curve whose score is the target")
    a = p.parse_args(argv)

    from spinup_tf2.utils.plot import REFERENCE_CSV

    ref = pd.read_csv(REFERENCE_CSV)
    pyt = ref[(ref.env == ENVS[a.env]) & (ref.version == "pyt")]
    if a.family:
        scores = [float(pyt[pyt.timesteps == at].mean_smoothed.iloc[0])
                  for at in (100_000, 300_000)]
        print(family_table(a.race, a.env, a.data_dir, scores), end="")
        return 0
    score = float(pyt[pyt.timesteps == a.at].mean_smoothed.iloc[0])
    steps, seeds = steps_to_score(a.env, a.data_dir, score)
    if steps is None:
        print(f"Our {a.env} curve ({seeds} seeds) never reaches {score:.0f}.")
        return 1
    speeds = {who: [row["env_steps_per_s"] for row in rows]
              for who, rows in read_race(a.race[0])[1].items()}
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
