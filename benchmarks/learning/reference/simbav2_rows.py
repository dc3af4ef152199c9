"""How ``simbav2_humanoid_and_simbav2.csv`` was made from the per-seed result files published
with SimbaV2, and what it says at 100k and 300k steps.

    python benchmarks/learning/reference/simbav2_rows.py make SIMBAV2_CHECKOUT  # rewrite it
    python benchmarks/learning/reference/simbav2_rows.py table                 # the figures
    python benchmarks/learning/reference/simbav2_rows.py widths                # what width costs

``make`` reads ``results/baseline/{sac,crossq,droq_utd20,redq_utd20,simbaV2_utd2}.csv`` and
``results/scaling/utd/simbaV2_utd1.csv`` of a checkout of github.com/dojeon-ai/SimbaV2 (at
commit 14fafb27e6f78f0b65d19b8873b4433547a2193c), keeps the rows with ``metric ==
avg_return`` up to 300k environment steps of Humanoid-v4 (every algorithm) and of
HalfCheetah-v4, Hopper-v4, Walker2d-v4 and Ant-v4 (SimbaV2 at 1 and 2 updates per step;
``simbaV2_utd1.csv`` writes the tasks ``Hopper_v4``...), and writes them as
``simbav2_baselines_100k.csv`` does (``algorithm, env, seed, env_step, avg_return``, values
rounded to 0.01, labels as there plus ``SimbaV2 (UTD 2)`` and ``SimbaV2 (UTD 1)``).

``make`` also writes ``simbav2_width_scaling.csv`` from ``results/scaling/param/
simbaV2_cwidth{128,256,512,1024}.csv`` (SimbaV2's critic-width study: the tasks all four
widths ran, DeepMind Control's dog and humanoid tasks and HumanoidBench's h1 tasks, up to 1M
steps; ``critic_width, env, seed, env_step, avg_return``). ``widths`` gives each width's
return as a share of width 512's, task by task (each task's seed-mean at the step), then the
mean and range over the tasks: what a narrower critic costs, on the paper's own tasks.

``table`` gives, per algorithm, task and budget, the mean ± standard error over seeds of each
seed's logged point nearest the budget (within 5 %), the method of
``../shared/reference/sac_family_mujoco.csv``, whose rows these reproduce.
"""

from __future__ import annotations

import os.path as osp
import sys

import numpy as np
import pandas as pd

HERE = osp.dirname(osp.abspath(__file__))
OUT = osp.join(HERE, "simbav2_humanoid_and_simbav2.csv")
FILES = {"results/baseline/sac.csv": "SAC", "results/baseline/crossq.csv": "CrossQ",
         "results/baseline/droq_utd20.csv": "DroQ (UTD 20)",
         "results/baseline/redq_utd20.csv": "REDQ (UTD 20)",
         "results/baseline/simbaV2_utd2.csv": "SimbaV2 (UTD 2)",
         "results/scaling/utd/simbaV2_utd1.csv": "SimbaV2 (UTD 1)"}
WIDTHS_OUT = osp.join(HERE, "simbav2_width_scaling.csv")
WIDTHS = (128, 256, 512, 1024)
FOUR = ("HalfCheetah-v4", "Hopper-v4", "Walker2d-v4", "Ant-v4")
MAX_STEP = 300_000


def make(checkout: str) -> pd.DataFrame:
    """The rows, from the published files in ``checkout``."""
    parts = []
    for path, label in FILES.items():
        d = pd.read_csv(osp.join(checkout, path))
        d = d[d.metric == "avg_return"].copy()
        d["env"] = d.env_name.str.replace("_v4", "-v4")
        keep = (d.env == "Humanoid-v4") | (d.env.isin(FOUR) & label.startswith("SimbaV2"))
        d = d[keep & (d.env_step <= MAX_STEP)]
        parts.append(pd.DataFrame(dict(algorithm=label, env=d.env, seed=d.seed.astype(int),
                                       env_step=d.env_step.astype(int),
                                       avg_return=d.value.round(2))))
    return pd.concat(parts, ignore_index=True)


def make_widths(checkout: str) -> pd.DataFrame:
    """The width study's rows on the tasks every width ran, from ``checkout``."""
    parts = {}
    for w in WIDTHS:
        d = pd.read_csv(osp.join(checkout, f"results/scaling/param/simbaV2_cwidth{w}.csv"))
        parts[w] = d[d.metric == "avg_return"]
    shared = set.intersection(*(set(d.env_name) for d in parts.values()))
    return pd.concat([pd.DataFrame(dict(critic_width=w, env=d.env_name, seed=d.seed.astype(int),
                                        env_step=d.env_step.astype(int),
                                        avg_return=d.value.round(2)))
                      for w, d in parts.items() for d in [d[d.env_name.isin(shared)]]],
                     ignore_index=True)


def widths_table(rows: pd.DataFrame, steps=(100_000, 300_000, 1_000_000)) -> str:
    """Each width's seed-mean return as a share of width 512's, per task, at ``steps``:
    mean (min-max) over the tasks."""
    mean = rows.groupby(["critic_width", "env", "env_step"]).avg_return.mean()
    lines = ["| critic width | " + " | ".join(f"at {s // 1000}k: share of 512's (mean, range "
                                              f"over tasks)" for s in steps) + " | tasks |",
             "|---:|" + "---:|" * (len(steps) + 1)]
    for w in WIDTHS:
        cells, tasks = [], 0
        for s in steps:
            share = (mean.loc[w, :, s] / mean.loc[512, :, s]).dropna()
            share = share[np.isfinite(share)]
            tasks = len(share)
            cells.append(f"{share.mean():.2f} ({share.min():.2f}-{share.max():.2f})")
        lines.append(f"| {w} | " + " | ".join(cells) + f" | {tasks} |")
    return "\n".join(lines)


def at_budget(rows: pd.DataFrame, budget: int) -> tuple[float, float, int] | None:
    """``(mean, standard error, seeds)`` of each seed's point nearest ``budget`` (within
    5 %), or None if no seed has one."""
    values = []
    for _, seed in rows.groupby("seed"):
        near = seed.iloc[(seed.env_step - budget).abs().argsort()[:1]]
        if abs(int(near.env_step.iloc[0]) - budget) <= 0.05 * budget:
            values.append(float(near.avg_return.iloc[0]))
    if not values:
        return None
    v = np.array(values)
    return v.mean(), (v.std(ddof=1) / np.sqrt(len(v)) if len(v) > 1 else float("nan")), len(v)


def table(rows: pd.DataFrame) -> str:
    lines = ["| algorithm | task | seeds | 100k | 300k |", "|---|---|---:|---:|---:|"]
    for (alg, env), r in rows.groupby(["algorithm", "env"], sort=True):
        cells = []
        for budget in (100_000, 300_000):
            got = at_budget(r, budget)
            cells.append("" if got is None else f"{got[0]:,.0f} ± {got[1]:,.0f}")
        lines.append(f"| {alg} | {env} | {r.seed.nunique()} | {cells[0]} | {cells[1]} |")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    if argv[:1] == ["make"] and len(argv) == 2:
        make(argv[1]).to_csv(OUT, index=False)
        make_widths(argv[1]).to_csv(WIDTHS_OUT, index=False)
        print(f"wrote {OUT} and {WIDTHS_OUT}")
        return 0
    if argv == ["widths"]:
        print(widths_table(pd.read_csv(WIDTHS_OUT)))
        return 0
    if argv == ["table"]:
        print(table(pd.read_csv(OUT)))
        return 0
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
