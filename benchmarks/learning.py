"""MuJoCo learning benchmark: SAC with Spinning Up's defaults on the five tasks of
Spinning Up's SAC benchmark (HalfCheetah, Hopper, Walker2d, Ant, Swimmer; their -v5
versions with gymnasium's defaults), 350k steps (88 epochs of 4,000) for each seed:
10 seeds (0, 10, ..., 90) on HalfCheetah and Hopper, 5 (0, ..., 40) on the others.

    python benchmarks/learning.py                       # everything not yet done
    python benchmarks/learning.py --env Hopper-v5 --seed 10
    python benchmarks/learning.py --epochs 75 --dry_run # list what would run

The comparison is made at 100k, 200k and 300k steps, on curves smoothed over
11 points of 10k steps as Spinning Up's are. Running on to 350k lets the window
at 300k be centred (250k-350k), as it is on Spinning Up's long runs; a run that
stops at 300k can only average 250k-300k, which reads low on a rising curve.

Runs go to ``data/benchmarks/sac-<env>/sac-<env>_s<seed>/`` as standard run
directories. A run whose progress.txt already has all its epochs is skipped, so
the script can be stopped and started again, or run seed by seed; an
unfinished run resumes from its last training checkpoint (``resume=True``), or
starts over if it has none. Each run is a fresh process (``call_experiment``).
Only config.json and progress.txt are tracked in git (see .gitignore);
checkpoints stay local.
"""

import argparse
import os
import os.path as osp
import shutil
import sys

os.environ.setdefault("SPINUP_TF2_WAIT_BEFORE_LAUNCH", "0")

REPO = osp.dirname(osp.dirname(osp.abspath(__file__)))
BENCH_DIR = osp.join(REPO, "data", "benchmarks")
ENVS = ["HalfCheetah-v5", "Hopper-v5", "Walker2d-v5", "Ant-v5", "Swimmer-v5"]
SEEDS = [0, 10, 20, 30, 40]
EXTRA_SEEDS = {"HalfCheetah-v5": [50, 60, 70, 80, 90], "Hopper-v5": [50, 60, 70, 80, 90]}


def epochs_done(run_dir: str) -> int:
    """Rows in a run's progress.txt (0 if none)."""
    path = osp.join(run_dir, "progress.txt")
    if not osp.exists(path):
        return 0
    with open(path) as f:
        return max(0, sum(1 for _ in f) - 1)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--env", nargs="*", default=ENVS)
    p.add_argument("--seed", nargs="*", type=int, default=None,
                   help="default: 0 10 20 30 40, and 50 ... 90 on HalfCheetah-v5 and Hopper-v5")
    p.add_argument("--epochs", type=int, default=88)
    p.add_argument("--data_dir", default=BENCH_DIR)
    p.add_argument("--dry_run", action="store_true")
    a = p.parse_args()

    from spinup_tf2.utils.run_utils import call_experiment, setup_logger_kwargs

    # Seeds first, then environments: after each full seed both curves have a point more.
    def seeds_for(env):
        return a.seed if a.seed is not None else SEEDS + EXTRA_SEEDS.get(env, [])

    todo = 0
    for seed in sorted(set().union(*(seeds_for(env) for env in a.env))):
        for env in a.env:
            if seed not in seeds_for(env):
                continue
            exp_name = "sac-" + env.lower()
            out = setup_logger_kwargs(exp_name, seed, a.data_dir)["output_dir"]
            done = epochs_done(out)
            if done >= a.epochs:
                print(f"done     {out} ({done} epochs)")
                continue
            todo += 1
            print(f"{'would run' if a.dry_run else 'running'}  {out} (has {done} epochs)",
                  flush=True)
            if a.dry_run:
                continue
            resume = osp.isdir(osp.join(out, "train_state"))
            if osp.exists(out) and not resume:
                shutil.rmtree(out)
            import spinup_tf2

            call_experiment(exp_name, spinup_tf2.sac, seed=seed, data_dir=a.data_dir,
                            env_name=env, epochs=a.epochs, resume=resume)
    if not todo:
        print(f"Nothing to run: every run listed already has its {a.epochs} epochs in "
              f"{a.data_dir} (the bundled results, on a fresh clone). Give --data_dir DIR to "
              f"run them anew there (hours per run on 2 cores), or --env/--seed for fewer.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
