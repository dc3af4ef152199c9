"""Discrete-action SAC evidence: CartPole-v1 for 50k steps (10 epochs of 5,000), 2 seeds,
Spinning Up's other defaults (alpha 0.2 fixed; pass --alpha auto to tune it).

    python benchmarks/learning/cartpole.py [--seed 0 1] [--alpha 0.2]

Runs go to data/benchmarks/sac-cartpole-v1[-alpha-auto]/..._s<seed>/; the script prints, per
seed, the test return of each epoch and the first step at which it reached 400. It refuses to
replace runs already there (the bundled results among them) unless given --overwrite.
"""

import argparse
import os
import os.path as osp
import sys

os.environ.setdefault("SPINUP_TF2_WAIT_BEFORE_LAUNCH", "0")
REPO = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--seed", nargs="*", type=int, default=[0, 1])
    p.add_argument("--alpha", default="0.2")
    p.add_argument("--data_dir", default=osp.join(REPO, "data", "benchmarks"))
    p.add_argument("--overwrite", action="store_true", help="replace runs already there")
    a = p.parse_args()
    alpha = a.alpha if a.alpha.startswith("auto") else float(a.alpha)
    exp_name = "sac-cartpole-v1" + ("" if alpha == 0.2 else "-alpha-" + str(alpha))

    import gymnasium as gym

    from spinup_tf2 import sac
    from spinup_tf2.errors import SpinupError, print_error
    from spinup_tf2.utils.run_utils import setup_logger_kwargs

    for seed in a.seed:
        kw = setup_logger_kwargs(exp_name, seed, a.data_dir)
        try:
            sac(lambda: gym.make("CartPole-v1"), seed=seed, epochs=10, steps_per_epoch=5000,
                alpha=alpha, logger_kwargs=kw, overwrite=a.overwrite)
        except SpinupError as err:
            print_error(err)
            if "already holds a run" in str(err):
                print(f"(This script's flags: --data_dir DIR to make new runs elsewhere, or "
                      f"--overwrite to replace those in {a.data_dir}; the bundled results "
                      f"are there.)", file=sys.stderr)
            return 2
    for seed in a.seed:
        path = osp.join(setup_logger_kwargs(exp_name, seed, a.data_dir)["output_dir"],
                        "progress.txt")
        lines = open(path).read().splitlines()
        header = lines[0].split("\t")
        rows = [dict(zip(header, ln.split("\t"))) for ln in lines[1:]]
        rets = [float(r["AverageTestEpRet"]) for r in rows]
        first = next((int(r["TotalEnvInteracts"]) for r in rows
                      if float(r["AverageTestEpRet"]) >= 400), None)
        print(f"seed {seed}: AverageTestEpRet by epoch {[round(x) for x in rets]}; "
              f"first >= 400 at step {first}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
