"""Does memory pay? Recurrent SAC against MLP SAC on position-only Pendulum (Pendulum-P-v1,
the velocity removed), and MLP SAC on the full task (Pendulum-v1), 5 seeds x 50k steps.

    python benchmarks/learning/memory.py run    # the 15 runs (about 2 h on 2 cores), then the table
    python benchmarks/learning/memory.py          # the table and figure from the bundled runs

``run`` launches two commands (``--parallel 2``), into data/benchmarks/:
sac-pendulum-p-v1 (MLP, masked), sac-pendulum-p-v1_rec (recurrent, masked) and
sac-pendulum-v1 (MLP, full). Each run has 25 epochs of 2,000 steps, random actions for the
first 2,000 and updates from step 1,000, Spinning Up's other defaults, and the recurrent
actor-critic's defaults (GRU of 64, windows of 10 burn-in + 10 trained steps).

The table (benchmarks/learning/memory_table.md) gives the test return (10 test episodes per epoch),
mean ± standard deviation over seeds, after 10k and 20k steps and over the last 10k
(epochs 21-25, each seed's mean), and how much of the gap between the masked MLP and the
full MLP the recurrent agent closes. The figure (benchmarks/learning/pendulum_p_memory.png) is
drawn by ``python -m spinup_tf2.run plot``, the command a user would type.
"""

from __future__ import annotations

import glob
import os
import os.path as osp
import subprocess
import sys

import numpy as np

HERE = osp.dirname(osp.abspath(__file__))
REPO = osp.dirname(osp.dirname(HERE))
BENCH = osp.join(REPO, "data", "benchmarks")
GROUPS = [("MLP, position only (Pendulum-P-v1)", "sac-pendulum-p-v1"),
          ("recurrent, position only (Pendulum-P-v1)", "sac-pendulum-p-v1_rec"),
          ("MLP, full observation (Pendulum-v1)", "sac-pendulum-v1")]
LEGEND = ["MLP, Pendulum-P", "recurrent, Pendulum-P", "MLP, Pendulum (full)"]
SETTINGS = ["--seed", "0", "1", "2", "3", "4", "--epochs", "25", "--steps_per_epoch", "2000",
            "--start_steps", "2000", "--update_after", "1000", "--parallel", "2",
            "--data_dir", BENCH]
COMMANDS = [["--exp_name", "sac-pendulum-p-v1", "--env", "Pendulum-P-v1", "--recurrent",
             "True", "False"],
            ["--exp_name", "sac-pendulum-v1", "--env", "Pendulum-v1"]]
LAST = 5  # epochs averaged for the final figure: the last 10k steps


def returns(folder: str) -> np.ndarray:
    """AverageTestEpRet of each seed's run in ``data/benchmarks/<folder>/``, seeds x epochs."""
    runs = sorted(glob.glob(osp.join(BENCH, folder, "*", "progress.txt")))
    if not runs:
        sys.exit(f"No runs in {osp.join(BENCH, folder)}: python benchmarks/learning/memory.py run")
    curves = []
    for path in runs:
        lines = open(path).read().splitlines()
        col = lines[0].split("\t").index("AverageTestEpRet")
        curves.append([float(ln.split("\t")[col]) for ln in lines[1:]])
    n = min(len(c) for c in curves)
    return np.array([c[:n] for c in curves])


def table() -> str:
    """The Markdown table of the three groups (see the module docstring)."""
    lines = ["| agent | seeds | 10k steps | 20k steps | last 10k steps (40k-50k) |",
             "|---|---:|---:|---:|---:|"]
    finals = []
    for name, folder in GROUPS:
        r = returns(folder)
        final = r[:, -LAST:].mean(axis=1)
        finals.append(final.mean())

        def cell(x):
            return f"{x.mean():.0f} ± {x.std(ddof=1):.0f}"

        lines.append(f"| {name} | {len(r)} | {cell(r[:, 4])} | {cell(r[:, 9])} | "
                     f"{cell(final)} (s.e. {final.std(ddof=1) / np.sqrt(len(final)):.0f}) |")
    masked, rec, full = finals
    lines.append("")
    lines.append(f"Over the last 10k steps the recurrent agent closes "
                 f"{100 * (rec - masked) / (full - masked):.0f} % of the gap between the "
                 f"masked MLP ({masked:.0f}) and the fully observed MLP ({full:.0f}).")
    return "\n".join(lines)


def main() -> int:
    env = dict(os.environ, SPINUP_TF2_WAIT_BEFORE_LAUNCH="0", TF_CPP_MIN_LOG_LEVEL="3")
    if sys.argv[1:] == ["run"]:
        for cmd in COMMANDS:
            subprocess.run([sys.executable, "-m", "spinup_tf2.run", "sac", *cmd, *SETTINGS],
                           check=True, env=env)
    elif sys.argv[1:]:
        sys.exit(__doc__)
    text = table()
    print(text)
    with open(osp.join(HERE, "memory_table.md"), "w") as f:
        f.write(text + "\n")
    subprocess.run([sys.executable, "-m", "spinup_tf2.run", "plot",
                    *[osp.join(BENCH, folder, "") for _, folder in GROUPS],  # "/": no prefix
                    "--legend", *LEGEND, "--value", "AverageTestEpRet",
                    "--smooth", "3", "--savefig",
                    osp.join(HERE, "pendulum_p_memory.png")],
                   check=True, env=dict(env, MPLBACKEND="Agg"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
