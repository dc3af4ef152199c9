"""What memory costs: recurrent SAC's update block against the MLP's, side by side.

    python benchmarks/timing/recurrent_speed.py                      # Pendulum-P-v1, 3 rounds
    python benchmarks/timing/recurrent_speed.py --env HalfCheetah-v5 --rounds 5

Each round runs benchmarks/speed.py twice in fresh processes, MLP SAC then recurrent SAC
(``--recurrent``: a GRU of 64 before each network's 256x256 MLP, windows of 10 burn-in + 10
trained steps, batch_size 100 counted in transitions, so 10 windows of 20 steps), on the same
task with Spinning Up's other settings, and prints each round and the medians over rounds of
updates per second (time in update blocks only) and env steps per second (the whole loop).
The ratio is recurrent / MLP, so below 1 means the recurrent run is slower.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys

# benchmarks/timing/race.py: the same timing, the same figures
from race import FIGURES, SPEED, time_one


def speed(env: str, total: int, measure_from: int, recurrent: bool) -> dict:
    """One benchmarks/speed.py run in its own process; its JSON result."""
    cmd = [sys.executable, SPEED, "--env", env, "--total", str(total),
           "--measure_from", str(measure_from), "--json"] + (["--recurrent"] if recurrent else [])
    return time_one(cmd, dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--env", default="Pendulum-P-v1")
    p.add_argument("--total", type=int, default=6000)
    p.add_argument("--measure_from", type=int, default=2000)
    p.add_argument("--rounds", type=int, default=3)
    a = p.parse_args()

    keys = FIGURES
    runs: dict[str, list[dict]] = {"mlp": [], "recurrent": []}
    print(f"{a.env}: steps {a.measure_from} -> {a.total} measured, {a.rounds} rounds")
    print(f"{'round':>5} {'':10} {'updates/s':>10} {'env steps/s':>12}")
    for r in range(a.rounds):
        for name in runs:
            res = speed(a.env, a.total, a.measure_from, name == "recurrent")
            runs[name].append(res)
            print(f"{r:5d} {name:10} {res[keys[0]]:10.1f} {res[keys[1]]:12.1f}", flush=True)
    med = {n: {k: statistics.median(x[k] for x in runs[n]) for k in keys} for n in runs}
    print(f"{'median':>5} {'mlp':10} {med['mlp'][keys[0]]:10.1f} {med['mlp'][keys[1]]:12.1f}")
    print(f"{'':5} {'recurrent':10} {med['recurrent'][keys[0]]:10.1f} "
          f"{med['recurrent'][keys[1]]:12.1f}")
    ratios = {k: statistics.median(rr[k] / m[k] for rr, m in zip(runs["recurrent"], runs["mlp"]))
              for k in keys}
    print(f"recurrent / MLP, median of the rounds' ratios: updates/s {ratios[keys[0]]:.2f}, "
          f"env steps/s {ratios[keys[1]]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
