"""Our MuJoCo learning curves against Spinning Up's published SAC curves.

    python benchmarks/learning/compare_curves.py          # figures + table from data/benchmarks/
    python benchmarks/learning/compare_curves.py DIR      # ... from DIR (a copy of finished runs)
    python benchmarks/learning/compare_curves.py --suite dmc   # DeepMind Control: table only
    python benchmarks/learning/compare_curves.py --suite family  # the SAC family at 100k
    python benchmarks/learning/compare_curves.py --suite her     # goal tasks, hindsight replay
    python benchmarks/learning/compare_curves.py --suite humanoid  # Humanoid-v5 at 100k, 300k
    python benchmarks/learning/compare_curves.py --suite replay  # prioritized replay, actors
    python benchmarks/learning/compare_curves.py --suite precision  # bfloat16 against float32

Spinning Up's curves (``spinup_tf2/data/spinningup_sac_curves.csv``) are test
returns every 10k steps, each seed smoothed over an 11-point window, then
averaged over 10 seeds. Our runs test every 4,000 steps, so each of our seeds is
first interpolated to the same 10k-step points, then smoothed with the same
11-point window (``plot.smooth_curve``, Spinning Up's edge-renormalised moving
average), then averaged over seeds. Writes ``benchmarks/learning/<env>_vs_spinningup.png``
and ``benchmarks/learning/learning_table.md``.

``--suite dmc`` compares the pixel runs of ``benchmarks/learning/learning.py --suite dmc`` at 100k
environment frames (the test return after the last epoch, 10 episodes, as DrQ measured it)
with DrQ's Table 1, and writes ``benchmarks/learning/dmc_table.md``.

``--suite family`` compares the SAC family's runs (``learning.py --suite crossq``, ``tqc``,
``droq``, ``redq``) at 100k environment steps (each seed's test return after epoch 25, 10
episodes) with the per-seed results published with SimbaV2
(``benchmarks/learning/reference/simbav2_baselines_100k.csv``: -v4 tasks, 10 seeds, the point
nearest 100k) and with our own SAC at 100k (the bundled Spinning Up runs, interpolated), and
writes ``benchmarks/learning/family_table.md``. TQC has no published 100k point (rl-zoo
publishes 1M); it is read against our SAC.

``--suite her`` tables the goal-conditioned runs with hindsight replay: FetchReach-v4 and
PandaReach-v3 at 20k steps (``learning.py --suite her``) and the FetchPush-v4 race against
Stable-Baselines3's SAC+HER at 200k (``her_race.py``): each library's test success rate and
return after the last epoch, the steps each seed took to a test success rate of 0.95, the
race's wall-clock, beside rl-baselines3-zoo's published TQC+HER results
(``benchmarks/learning/reference/rl_zoo_her.csv``: one run each, -v1 tasks, the return's sd
over its evaluation episodes). Writes ``benchmarks/learning/her_table.md``.

``--suite humanoid`` compares our Humanoid-v5 runs (``HUMANOID``: SAC with alpha learned,
with Spinning Up's fixed 0.2, and with the SAC paper's lr and batch; CrossQ) at 100k and
300k steps (each seed's test return after epoch 25 and 75) with the per-seed Humanoid-v4
results published with SimbaV2 (``reference/simbav2_humanoid_and_simbav2.csv``, each seed's
point nearest the budget), and gives each finished run's wall-clock (its ``Time`` at epoch
75: elapsed time, whatever else shared the cores). Writes ``benchmarks/learning/humanoid_table.md``.

``--suite replay`` (issue 79) reads prioritized replay (``learning.py --replay per --epochs
75``: HalfCheetah-v5 and Hopper-v5 at 100k, 200k, 300k) and 4 Ray actors (``learning.py
--actors 4 --epochs 25``: HalfCheetah-v5 at 100k) against the bundled uniform single-process
SAC runs of the same seeds (0, 10, ..., 40): each seed's test return after the epoch, the
difference of the means with its standard error. Writes ``benchmarks/learning/replay_table.md``.

``--suite precision`` (issue 80) reads CrossQ on Hopper-v5 and TQC on HalfCheetah-v5 in
bfloat16 (``learning.py --suite crossq --env Hopper-v5 --precision bfloat16``, the same for
``tqc`` on HalfCheetah-v5: 100k, seeds 0, 10, 20) against the bundled float32 runs of the
same seeds, read the same way. Writes ``benchmarks/learning/precision_table.md``.
"""

from __future__ import annotations

import glob
import os
import os.path as osp
import sys

import numpy as np
import pandas as pd

from spinup_tf2.family import FAMILY_NAMES, MEMBERS

HERE = osp.dirname(osp.abspath(__file__))
REPO = osp.dirname(osp.dirname(HERE))
# The five tasks of Spinning Up's SAC benchmark page (theirs are the -v3 versions).
ENVS = {"HalfCheetah-v5": "halfcheetah", "Hopper-v5": "hopper", "Walker2d-v5": "walker2d",
        "Ant-v5": "ant", "Swimmer-v5": "swimmer"}
CHECKPOINTS = (100_000, 200_000, 300_000)
REF_SEEDS = 10  # seeds behind each of Spinning Up's curves
# 100k-frame scores from DrQ's Table 1 (Kostrikov, Yarats and Fergus 2021; mean ± sd over
# 10 seeds), with the CURL and SAC-AE scores it quotes. spinup_tf2 implements DrQ's
# [K=1,M=1] form (one random shift per image), which Table 1 also reports.
DMC_PUBLISHED = {
    "dm_control/cartpole-swingup-v0": {"DrQ [K=2,M=2]": (759, 92), "DrQ [K=1,M=1]": (537, 119),
                                       "CURL": (592, 170), "SAC-AE": (276, 38)},
    "dm_control/ball_in_cup-catch-v0": {"DrQ [K=2,M=2]": (913, 53), "DrQ [K=1,M=1]": (667, 146),
                                        "CURL": (772, 241), "SAC-AE": (338, 196)},
}
DMC_EPOCHS = 10  # 100k frames at the suite's action repeats
FAMILY_CSV = osp.join(HERE, "reference", "simbav2_baselines_100k.csv")
# SimbaV2's own rows (and every algorithm's on Humanoid), from the same published files.
MORE_CSV = osp.join(HERE, "reference", "simbav2_humanoid_and_simbav2.csv")
FAMILY_EPOCHS = 25  # 100k steps of 4,000
# How SimbaV2's files name the variants they have (each family entry says; no TQC).
SIMBAV2_NAMES = {m.name: m.evidence.published_as for m in MEMBERS.values()
                 if m.evidence.published_as}


# The family table's rows: each member's runs at its defaults (``<name>-<env>/``), then runs
# at another published setting (their folder prefix, label and published name).
FAMILY_ROWS = [*((n, t, SIMBAV2_NAMES.get(n)) for n, t in FAMILY_NAMES.items()),
               ("simbav2-w256", "SimbaV2, critics 256 wide", "SimbaV2 (UTD 2)")]


def published_rows() -> pd.DataFrame:
    """Every published per-seed row of the family (both reference files)."""
    return pd.concat([pd.read_csv(FAMILY_CSV), pd.read_csv(MORE_CSV)], ignore_index=True)
# --suite humanoid: our runs (their experiment folder) and the published row each is read
# against.
HUMANOID = {"SAC, alpha learned": ("sac-alphaauto-300k-humanoid-v5", "SAC"),
            "SAC, Spinning Up's alpha 0.2": ("sac-humanoid-v5", "SAC"),
            "SAC, alpha learned, the SAC paper's lr 3e-4 and batch 256":
                ("sac-paper-300k-humanoid-v5", "SAC"),
            "CrossQ": ("crossq-300k-humanoid-v5", "CrossQ")}
RL_ZOO_HER_CSV = osp.join(HERE, "reference", "rl_zoo_her.csv")
# --suite her: each task's runs (a glob under data_dir, by library), their epochs, and the
# task rl-zoo published.
HER_RUNS = [("FetchReach-v4", {"spinup_tf2": "her-fetchreach-v4/*"}, 10, "FetchReach-v1"),
            ("PandaReach-v3", {"spinup_tf2": "her-pandareach-v3/*"}, 10, "PandaReach-v1"),
            ("FetchPush-v4", {"spinup_tf2": "her-race-fetchpush-v4/ours_s*",
                              "Stable-Baselines3": "her-race-fetchpush-v4/sb3_s*"},
             40, "FetchPush-v1")]


def our_curves(env: str, data_dir: str, min_epochs: int = 75) -> tuple[np.ndarray, np.ndarray]:
    """``(steps, smoothed)``: 10k-step points and one smoothed row per finished
    seed (a run with at least ``min_epochs`` rows)."""
    from spinup_tf2.utils.plot import smooth_curve

    rows = []
    steps = None
    for path in sorted(glob.glob(osp.join(data_dir, f"sac-{env.lower()}", "*", "progress.txt"))):
        df = pd.read_table(path)
        if len(df) < min_epochs:
            print(f"skipped (unfinished, {len(df)} epochs): {path}")
            continue
        x, y = df["TotalEnvInteracts"].to_numpy(), df["AverageTestEpRet"].to_numpy()
        grid = np.arange(10_000, x.max() + 1, 10_000)
        if steps is None or len(grid) < len(steps):
            steps = grid
        rows.append(smooth_curve(np.interp(grid, x, y), 11))
    if not rows:
        return np.zeros(0), np.zeros((0, 0))
    return steps, np.array([r[:len(steps)] for r in rows])


def reading(diff: float, se: float) -> str:
    """How our mean stands against a published one (Spinning Up's, DrQ's): at or above
    it, below it by at most one standard error of the difference, or below by more; with
    one seed (no standard error), only the side, as no verdict."""
    if not np.isfinite(se):
        return ("at or above" if diff >= 0 else "below") + " (one seed: no verdict)"
    if diff >= 0:
        return "at or above"
    return "below, within 1 s.e." if -diff <= se else "below by more than 1 s.e."


def dmc_table(data_dir: str) -> str:
    """The markdown table of our DMC pixel runs at 100k frames against DrQ's Table 1: each
    finished seed's AverageTestEpRet after its last epoch; differences with the standard
    error of a difference of two means (our seeds' sample sd, DrQ's 10 seeds)."""
    names = list(next(iter(DMC_PUBLISHED.values())))
    lines = ["| task | spinup_tf2 at 100k frames (mean ± sd, seeds) | " + " | ".join(names)
             + " | ours - DrQ [K=1,M=1] (± s.e.) | reading | ours - DrQ [K=2,M=2] (± s.e.) "
             "| reading |", "|---|---:|" + "---:|" * len(names) + "---:|---|---:|---|"]
    for env, published in DMC_PUBLISHED.items():
        exp = "sac-" + env.lower().replace("dm_control/", "dmc-").removesuffix("-v0")
        scores = []
        for path in sorted(glob.glob(osp.join(data_dir, exp, "*", "progress.txt"))):
            progress = pd.read_table(path)
            if len(progress) >= DMC_EPOCHS:
                scores.append(float(progress["AverageTestEpRet"].iloc[DMC_EPOCHS - 1]))
        if not scores:
            lines.append(f"| {env} | no finished run | " + " | ".join(
                f"{m} ± {d}" for m, d in published.values()) + " | | | | |")
            continue
        ours, n = np.array(scores), len(scores)
        cells = []
        for name in ("DrQ [K=1,M=1]", "DrQ [K=2,M=2]"):
            m, d = published[name]
            se = np.sqrt((ours.var(ddof=1) / n if n > 1 else np.nan) + d ** 2 / REF_SEEDS)
            se_text = f"± {se:.0f}" if np.isfinite(se) else "one seed: no s.e."
            cells.append(f"{ours.mean() - m:+.0f} ({se_text}) | {reading(ours.mean() - m, se)}")
        # The sample sd (ddof=1), the one the standard errors below use.
        spread = f" ± {ours.std(ddof=1):.0f}" if n > 1 else ""
        lines.append(f"| {env} | {ours.mean():.0f}{spread} ({n}) | "
                     + " | ".join(f"{m} ± {d}" for m, d in published.values()) + " | "
                     + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def scores_at(pattern: str, epochs: int) -> np.ndarray:
    """Each finished run's AverageTestEpRet after epoch ``epochs`` (runs matching
    ``pattern`` with at least that many rows)."""
    out = []
    for path in sorted(glob.glob(pattern)):
        if not osp.getsize(path):  # a run whose first epoch has not ended
            continue
        progress = pd.read_table(path)
        if len(progress) >= epochs:
            out.append(float(progress["AverageTestEpRet"].iloc[epochs - 1]))
    return np.array(out)


def mean_sd(x: np.ndarray) -> str:
    """``mean ± sd (n)`` with the sample sd; ``mean (1)`` for one seed."""
    spread = f" ± {x.std(ddof=1):.0f}" if len(x) > 1 else ""
    return f"{x.mean():.0f}{spread} ({len(x)})"


def versus(ours: np.ndarray, m: float, se_ref: float) -> str:
    """``diff (± s.e.) | reading`` of our seeds against a mean ``m`` whose standard error
    is ``se_ref``. Two seeds' standard error rests on one degree of freedom, so their
    reading is marked provisional (the issues ask for three seeds a row)."""
    n = len(ours)
    se = np.sqrt((ours.var(ddof=1) / n if n > 1 else np.nan) + se_ref ** 2)
    se_text = f"± {se:.0f}" if np.isfinite(se) else "one seed: no s.e."
    provisional = " (two seeds: provisional)" if n == 2 else ""
    return f"{ours.mean() - m:+.0f} ({se_text}) | {reading(ours.mean() - m, se)}{provisional}"


def family_table(data_dir: str) -> str:
    """The markdown table of the SAC family's runs at 100k steps against SimbaV2's published
    per-seed results (mean ± standard error over their seeds, -v4) and against our SAC at 100k
    (the bundled runs' test returns interpolated at 100k)."""
    published = published_rows()
    lines = ["| variant | task | spinup_tf2 at 100k (mean ± sd, seeds) | published (mean ± "
             "s.e., seeds, -v4) | ours - published (± s.e.) | reading | our SAC (mean ± sd, "
             "seeds) | ours - our SAC (± s.e.) | reading |",
             "|---|---|---:|---:|---:|---|---:|---:|---|"]
    for variant, name, published_as in FAMILY_ROWS:
        for env in ENVS:
            ours = scores_at(osp.join(data_dir, f"{variant}-{env.lower()}", "*",
                                      "progress.txt"), FAMILY_EPOCHS)
            if not len(ours):
                continue
            sac_runs = []
            for path in sorted(glob.glob(osp.join(data_dir, f"sac-{env.lower()}", "*",
                                                  "progress.txt"))):
                df = pd.read_table(path)
                if df["TotalEnvInteracts"].max() >= 100_000:
                    sac_runs.append(np.interp(100_000, df["TotalEnvInteracts"],
                                              df["AverageTestEpRet"]))
            sac = np.array(sac_runs)
            pub = published[(published.algorithm == published_as)
                            & (published.env == env.replace("-v5", "-v4"))]
            if pub.empty:
                against_published = "none published | |"
            else:
                # Each seed's point nearest 100k, then mean and standard error over the seeds.
                at = pub.loc[(pub.env_step - 100_000).abs().groupby(pub.seed).idxmin()]
                m, se_pub = at.avg_return.mean(), at.avg_return.std(ddof=1) / np.sqrt(len(at))
                against_published = (f"{m:.0f} ± {se_pub:.0f} ({len(at)}) | "
                                     f"{versus(ours, m, se_pub)}")
            se_sac = sac.std(ddof=1) / np.sqrt(len(sac)) if len(sac) > 1 else np.nan
            against_sac = (f"{mean_sd(sac)} | {versus(ours, sac.mean(), se_sac)}" if len(sac)
                           else "none | | ")
            lines.append(f"| {name} | {env} | {mean_sd(ours)} | {against_published} | "
                         f"{against_sac} |")
    return "\n".join(lines) + "\n"


def humanoid_table(data_dir: str) -> str:
    """The markdown table of our Humanoid-v5 runs (``HUMANOID``) at 100k and 300k steps
    against the published Humanoid-v4 rows (mean ± standard error over their seeds, each
    seed's point nearest the budget), with each finished run's wall-clock."""
    sys.path.insert(0, osp.join(HERE, "reference"))
    try:
        from simbav2_rows import at_budget
    finally:
        sys.path.pop(0)
    published = pd.read_csv(MORE_CSV)
    published = published[published.env == "Humanoid-v4"]
    lines = ["| algorithm | steps | spinup_tf2, Humanoid-v5 (mean ± sd, seeds) | published, "
             "Humanoid-v4 (mean ± s.e., seeds) | ours - published (± s.e.) | reading | "
             "wall-clock per run to 300k (minutes) |",
             "|---|---:|---:|---:|---:|---|---:|"]
    for label, (exp, name) in HUMANOID.items():
        pattern = osp.join(data_dir, exp, "*", "progress.txt")
        minutes = []
        for path in sorted(glob.glob(pattern)):
            progress = pd.read_table(path) if osp.getsize(path) else None
            if progress is not None and len(progress) >= 75:
                minutes.append(progress["Time"].iloc[74] / 60)
        clock = (f"{min(minutes):.0f}-{max(minutes):.0f} ({len(minutes)})" if minutes
                 else "")
        for epochs in (25, 75):
            ours = scores_at(pattern, epochs)
            if not len(ours):
                continue
            m, se, seeds = at_budget(published[published.algorithm == name], epochs * 4000)
            lines.append(f"| {label} | {epochs * 4}k | {mean_sd(ours)} | {m:.0f} ± {se:.0f} "
                         f"({seeds}) | {versus(ours, m, se)} | {clock if epochs == 75 else ''} |")
    return "\n".join(lines) + "\n"


# --suite replay (issue 79): runs that change how SAC's data is drawn or collected, each against
# the bundled uniform single-process runs of the same seeds: (label, their folder, the
# baseline's folder, the tasks, the epochs compared).
REPLAY_ROWS = [("prioritized (per)", "sac-per-300k-{env}", "sac-{env}",
                ("HalfCheetah-v5", "Hopper-v5"), (25, 50, 75)),
               ("4 Ray actors", "sac-actors4-100k-{env}", "sac-{env}",
                ("HalfCheetah-v5", "Hopper-v5"), (25,))]
REPLAY_SEEDS = (0, 10, 20, 30, 40)
# --suite precision (issue 80): the variants in bfloat16 against their bundled float32 runs.
PRECISION_ROWS = [("CrossQ, bfloat16", "crossq-bf16-{env}", "crossq-{env}", ("Hopper-v5",), (25,)),
                  ("TQC, bfloat16", "tqc-bf16-{env}", "tqc-{env}", ("HalfCheetah-v5",), (25,))]
PRECISION_SEEDS = (0, 10, 20)
BUNDLED = osp.join(REPO, "data", "benchmarks")


def paired_table(data_dir: str, rows: list, seeds: tuple, baseline: str) -> str:
    """The markdown table of each of ``rows`` (label, folder, baseline's folder, tasks,
    epochs) against its baseline: each finished seed's test return after the epoch (10
    episodes), mean ± sample sd over seeds, the difference with the standard error of a
    difference of two means, read as above, below or within one s.e.; only those of
    ``seeds`` that have finished, and the baseline's same seeds (always the bundled runs of
    ``data/benchmarks/``, whatever ``data_dir`` holds the others)."""
    def pattern(exp: str, env: str, folder_of: str = data_dir) -> str:
        folder = exp.format(env=env.lower())
        return osp.join(folder_of, folder, f"{folder}_s{{}}", "progress.txt")

    lines = [f"| what | task | steps | it (mean ± sd, seeds) | {baseline} (mean ± sd, "
             "seeds) | difference (± s.e.) | reading |",
             "|---|---|---:|---:|---:|---:|---|"]
    for label, exp, base, envs, epochs_list in rows:
        for env in envs:
            for epochs in epochs_list:
                have = [s for s in seeds if len(scores_at(pattern(exp, env).format(s), epochs))]
                if not have:
                    continue
                ours = np.concatenate([scores_at(pattern(exp, env).format(s), epochs)
                                       for s in have])
                sac = np.concatenate([scores_at(pattern(base, env, BUNDLED).format(s), epochs)
                                      for s in have])
                n, m = len(ours), len(sac)
                se = np.sqrt((ours.var(ddof=1) / n if n > 1 else np.nan)
                             + (sac.var(ddof=1) / m if m > 1 else np.nan))
                diff = ours.mean() - sac.mean()
                if not np.isfinite(se):
                    verdict = "one seed: no verdict"
                elif abs(diff) <= se:
                    verdict = "within 1 s.e."
                else:
                    verdict = ("above" if diff > 0 else "below") + " by more than 1 s.e."
                se_text = f"± {se:.0f}" if np.isfinite(se) else "one seed: no s.e."
                lines.append(f"| {label} | {env} | {epochs * 4}k | {mean_sd(ours)} | "
                             f"{mean_sd(sac)} | {diff:+.0f} ({se_text}) | {verdict} |")
    return "\n".join(lines) + "\n"


def replay_table(data_dir: str) -> str:
    """The markdown table of prioritized replay and of Ray actors against uniform replay in
    one process (``REPLAY_ROWS``, seeds ``REPLAY_SEEDS``; see :func:`paired_table`)."""
    return paired_table(data_dir, REPLAY_ROWS, REPLAY_SEEDS, "uniform, one process")


def precision_table(data_dir: str) -> str:
    """The markdown table of CrossQ and TQC in bfloat16 against their bundled float32 runs
    (``PRECISION_ROWS``, seeds ``PRECISION_SEEDS``; see :func:`paired_table`)."""
    return paired_table(data_dir, PRECISION_ROWS, PRECISION_SEEDS, "float32")


def her_table(data_dir: str) -> str:
    """The markdown table of the goal-conditioned runs with hindsight replay (finished runs
    only): test success and return after the last epoch (mean ± sample sd over seeds), the
    steps each seed took to a test success rate of 0.95, the mean wall-clock of the race's
    runs, and rl-baselines3-zoo's published TQC+HER return."""
    zoo = pd.read_csv(RL_ZOO_HER_CSV).set_index("env_id")
    lines = ["| task | library (SAC+HER) | steps | test success (mean ± sd, seeds) | steps to "
             "0.95 success, each seed | test return (mean ± sd) | wall-clock (min) | "
             "rl-zoo TQC+HER, published (return ± sd of its episodes, one run) |",
             "|---|---|---:|---:|---|---:|---:|---:|"]
    for env, libraries, epochs, zoo_env in HER_RUNS:
        published = (f"{zoo.loc[zoo_env, 'mean_reward']:.2f} ± "
                     f"{zoo.loc[zoo_env, 'std_reward']:.2f} at {zoo.loc[zoo_env, 'n_timesteps']}"
                     f" ({zoo_env})")
        for library, pattern in libraries.items():
            runs = [pd.read_table(path) for path in sorted(glob.glob(
                osp.join(data_dir, pattern, "progress.txt"))) if osp.getsize(path)]
            runs = [df for df in runs if len(df) >= epochs]
            if not runs:
                continue
            last = pd.DataFrame([df.iloc[epochs - 1] for df in runs])
            sd = len(runs) > 1
            success, ret = last["TestSuccessRate"], last["AverageTestEpRet"]
            reached = []
            for df in runs:
                hit = df.loc[df["TestSuccessRate"] >= 0.95, "TotalEnvInteracts"]
                reached.append(f"{hit.iloc[0] / 1000:g}k" if len(hit) else "not reached")
            race = "race" in pattern
            lines.append(
                f"| {env} | {library} | {int(last['TotalEnvInteracts'].iloc[0]) // 1000}k | "
                f"{success.mean():.2f}" + (f" ± {success.std(ddof=1):.2f}" if sd else "")
                + f" ({len(runs)}) | {', '.join(reached)} | {ret.mean():.2f}"
                + (f" ± {ret.std(ddof=1):.2f}" if sd else "") + " | "
                + (f"{last['Time'].mean() / 60:.0f}" if race else "") + f" | {published} |")
    return "\n".join(lines) + "\n"


def main() -> int:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import seaborn as sns

    from spinup_tf2.utils.plot import REFERENCE_CSV

    ref = pd.read_csv(REFERENCE_CSV)
    # A finished copy of the runs may be given (e.g. `git archive HEAD data/benchmarks`
    # unpacked elsewhere), so that runs still in progress here are left out.
    import argparse

    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("data_dir", nargs="?", default=osp.join(REPO, "data", "benchmarks"))
    tables = {"dmc": dmc_table, "family": family_table, "her": her_table,
              "humanoid": humanoid_table, "replay": replay_table,
              "precision": precision_table}
    p.add_argument("--suite", choices=["mujoco", *tables], default="mujoco")
    args = p.parse_args()
    data_dir = args.data_dir
    if args.suite in tables:
        text = tables[args.suite](data_dir)
        with open(osp.join(HERE, f"{args.suite}_table.md"), "w") as f:
            f.write(text)
        print(text)
        return 0
    if not glob.glob(osp.join(data_dir, "sac-*", "*", "progress.txt")):
        print(f"No runs in {data_dir} (sac-<env>/<run>/progress.txt); nothing was written. "
              f"Give the folder of benchmarks/learning/learning.py's runs.", file=sys.stderr)
        return 2
    sns.set_theme(style="darkgrid", font_scale=1.2)
    table = ["| env | steps | spinup_tf2 (mean ± sd, seeds) | Spinning Up PyTorch | "
             "Spinning Up TF1 | ours - PyTorch (± s.e.) | reading |",
             "|---|---:|---:|---:|---:|---:|---|"]
    for env, key in ENVS.items():
        steps, curves = our_curves(env, data_dir)
        if len(curves) == 0:
            print(f"{env}: no runs in {data_dir}")
            continue
        # Sample sd over seeds (ddof=1), as in the standard errors below.
        mean, sd = curves.mean(0), curves.std(0, ddof=1 if len(curves) > 1 else 0)
        fig, ax = plt.subplots(figsize=(8, 5))
        line, = ax.plot(steps, mean, label=f"spinup_tf2 ({env}, {len(curves)} seeds)")
        ax.fill_between(steps, mean - sd, mean + sd, color=line.get_color(), alpha=0.2)
        for version, label in (("pyt", "Spinning Up PyTorch (-v3, 10 seeds)"),
                               ("tf1", "Spinning Up TF1 (-v3, 10 seeds)")):
            part = ref[(ref.env == key) & (ref.version == version)
                       & (ref.timesteps <= steps.max())]
            ln, = ax.plot(part.timesteps, part.mean_smoothed, "--", label=label)
            ax.fill_between(part.timesteps, part.mean_smoothed - part.sd_over_seeds,
                            part.mean_smoothed + part.sd_over_seeds, color=ln.get_color(),
                            alpha=0.1)
        ax.set_xlabel("TotalEnvInteracts")
        ax.set_ylabel("AverageTestEpRet, smoothed")
        ax.ticklabel_format(style="sci", axis="x", scilimits=(0, 0))
        ax.legend(loc="lower right", fontsize=10)
        fig.tight_layout()
        png = osp.join(HERE, f"{key}_vs_spinningup.png")
        fig.savefig(png, dpi=100)
        print(f"wrote {png}")
        for c in CHECKPOINTS:
            if c > steps.max():
                continue
            i = int(np.searchsorted(steps, c))
            refs = []
            for version in ("pyt", "tf1"):
                r = ref[(ref.env == key) & (ref.version == version) & (ref.timesteps == c)]
                refs.append((r.mean_smoothed.iloc[0], r.sd_over_seeds.iloc[0]))
            # Standard error of the difference of two means: our seeds (sample sd)
            # against Spinning Up's REF_SEEDS seeds.
            n = len(curves)
            se = np.sqrt((sd[i] ** 2 / n if n > 1 else np.nan) + refs[0][1] ** 2 / REF_SEEDS)
            # Near a run's end the window only reaches back; say so.
            label = f"{c // 1000}k" + ("" if steps.max() >= c + 50_000 else
                                        f" (window {(c - 50_000) // 1000}k-{steps.max() // 1000}k)")
            table.append(f"| {env} | {label} | {mean[i]:.0f} ± {sd[i]:.0f} ({n}) "
                         + "".join(f"| {m:.0f} ± {d:.0f} " for m, d in refs)
                         + f"| {mean[i] - refs[0][0]:+.0f} (± {se:.0f}) "
                         + f"| {reading(mean[i] - refs[0][0], se)} |")
    text = "\n".join(table) + "\n"
    with open(osp.join(HERE, "learning_table.md"), "w") as f:
        f.write(text)
    print(text)
    return 0


if __name__ == "__main__":
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    sys.exit(main())
