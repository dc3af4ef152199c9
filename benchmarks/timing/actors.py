"""Collection past one process (issue 79): env steps/s of SAC with 0 (this process), 1, 2,
4 and 8 Ray actors on a simulator made slow on purpose.

The simulator: HalfCheetah-v5 behind a wrapper that sleeps ``--sleep_ms`` (10 ms) in every
step, as a slow simulator would spend it (it holds no core while it waits). Each setting is
one ``sac()`` run in a fresh process on a local Ray cluster (Spinning Up's networks, one
update per step, ``actor_steps`` 100, no test episodes, no checkpoint until the end); its
rate is the steps of its second epoch over that epoch's wall-clock (the first holds the
start-up, the last the checkpoint). The learner's own rate, for where it becomes the
limit, is ``priority.py cost``'s uniform updates/s on the same shapes.

    python benchmarks/timing/actors.py [--sleep_ms 10] [--actors 0 1 2 4 8] [--out FILE.jsonl]
"""

from __future__ import annotations

import argparse
import csv
import os
import os.path as osp
import subprocess
import sys
import tempfile

REPO = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))
sys.path.insert(0, osp.dirname(osp.abspath(__file__)))

STEPS_PER_EPOCH = 2400  # a multiple of every round here: 100, 200, 400 and 800 steps


def one(n: int, sleep_ms: float, out: str) -> None:
    """One run (in this process): ``n`` actors on the slow simulator, into ``out``."""
    import time

    import gymnasium as gym

    from spinup_tf2 import sac

    class Slow(gym.Wrapper):
        def step(self, action):
            time.sleep(sleep_ms / 1000)
            return self.env.step(action)

    def env_fn():  # defined here, so it travels to the actors by value
        return Slow(gym.make("HalfCheetah-v5"))

    sac(env_fn, actors=n, actor_steps=100, epochs=3, steps_per_epoch=STEPS_PER_EPOCH,
        start_steps=1000, update_after=1000, num_test_episodes=0, save_freq=100,
        logger_kwargs=dict(output_dir=out, quiet=True))


def rate(out: str) -> float:
    rows = list(csv.DictReader(open(osp.join(out, "progress.txt")), delimiter="\t"))
    return STEPS_PER_EPOCH / (float(rows[1]["Time"]) - float(rows[0]["Time"]))


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sleep_ms", type=float, default=10.0)
    p.add_argument("--actors", type=int, nargs="*", default=[0, 1, 2, 4, 8])
    p.add_argument("--one", type=int, help=argparse.SUPPRESS)
    p.add_argument("--run_dir", help=argparse.SUPPRESS)
    p.add_argument("--out", help="append the result to this .jsonl file")
    a = p.parse_args()
    if a.one is not None:
        one(a.one, a.sleep_ms, a.run_dir)
        return 0
    from bf16_matmul import report

    rates = {}
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", SPINUP_TF2_WAIT_BEFORE_LAUNCH="0")
    for n in a.actors:
        with tempfile.TemporaryDirectory() as tmp:
            run = osp.join(tmp, "run")
            subprocess.run([sys.executable, __file__, "--one", str(n), "--run_dir", run,
                            "--sleep_ms", str(a.sleep_ms)], check=True, env=env,
                           stdout=subprocess.DEVNULL)
            rates[n] = rate(run)
        print(f"{n} actors: {rates[n]:.1f} env steps/s", flush=True)
    report(dict(kind="actors", env="HalfCheetah-v5", sleep_ms=a.sleep_ms,
                steps_per_s={str(n): r for n, r in rates.items()},
                ideal_one_actor=1000 / a.sleep_ms), a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
