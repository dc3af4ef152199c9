"""Throughput of data-parallel SAC at N = 1 and N = 2 MPI processes.

    python benchmarks/timing/mpi_speed.py [--env HalfCheetah-v5] [--n 1 2] [--epochs 3]

Runs sac() with Spinning Up's settings (4,000 steps per epoch in total over the
processes, no test episodes) under `mpirun -np N` and reports env steps per
second of each epoch after the first (Time column differences), median over
epochs.
"""

import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np

SCRIPT = """
import sys, gymnasium as gym
from spinup_tf2 import sac
sac(lambda: gym.make(sys.argv[1]), seed=0, epochs=int(sys.argv[2]), steps_per_epoch=4000,
    start_steps=1000, update_after=1000, num_test_episodes=0, save_freq=1000,
    logger_kwargs=dict(output_dir=sys.argv[3]))
"""


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--env", default="HalfCheetah-v5")
    p.add_argument("--n", nargs="*", type=int, default=[1, 2])
    p.add_argument("--epochs", type=int, default=3)
    a = p.parse_args()
    from spinup_tf2.utils.mpi_tools import find_mpirun

    tmp = tempfile.mkdtemp(prefix="spinup_tf2_mpi_speed_")
    script = os.path.join(tmp, "run.py")
    with open(script, "w") as f:
        f.write(SCRIPT)
    print(f"{'processes':>10} {'env steps/s (median over epochs 2..)':>38}")
    for n in a.n:
        out = os.path.join(tmp, f"n{n}")
        cmd = [sys.executable, script, a.env, str(a.epochs), out]
        if n > 1:
            cmd = [find_mpirun(), "-np", str(n)] + cmd
        subprocess.run(cmd, check=True, capture_output=True,
                       env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
        lines = open(os.path.join(out, "progress.txt")).read().splitlines()
        header = lines[0].split("\t")
        times = [float(ln.split("\t")[header.index("Time")]) for ln in lines[1:]]
        rates = 4000 / np.diff(times)
        per_epoch = ", ".join(f"{r:.0f}" for r in rates)
        print(f"{n:>10} {np.median(rates):>38.1f}   (epochs: {per_epoch})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
