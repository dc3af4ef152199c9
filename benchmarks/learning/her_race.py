"""SAC+HER here against Stable-Baselines3's SAC+HER on a goal task, same settings, same step
budget, same machine: the success rate of deterministic test episodes after each epoch, and
the wall-clock time to it.

    python benchmarks/learning/her_race.py                 # FetchPush-v4, seeds 0 10 20, both
    python benchmarks/learning/her_race.py --seed 0 --only sb3
    python benchmarks/learning/compare_curves.py --suite her  # the table of what has finished

It needs gymnasium-robotics (whose Fetch tasks need MuJoCo before 3.12) and
stable-baselines3 with PyTorch in the same environment, e.g.::

    python3 -m venv ~/.venv-her && ~/.venv-her/bin/pip install -e ".[robotics]" \\
        "stable-baselines3==2.9.2" "torch==2.13.0"

The settings of both (rl-baselines3-zoo's FetchPush SAC+HER, ``hyperparams/tqc.yml`` at
commit 22e3ff24, with Spinning Up's networks and batch for a 2-core budget): HER 'future'
with 4 sampled goals, gamma 0.95, learning rate 1e-3, polyak 0.95 (SB3's tau 0.05),
alpha learned, 1,000 random steps before the first update, one update per environment step
(here in blocks of 50, Spinning Up's schedule; SB3 one per step, its default), batch 256,
networks [256, 256], replay 1M, 200k steps in 40 epochs of 5,000, 25 test episodes after
each. Runs go to ``data/benchmarks/her-race-fetchpush-v4/{ours,sb3}_s<seed>/`` (SB3's as a
progress.txt with the same column names). Each run is its own process; seeds alternate
between the two so that a stopped race leaves pairs; a stopped run of ours resumes from its
last checkpoint, SB3's starts again.
"""

from __future__ import annotations

import argparse
import os
import os.path as osp
import subprocess
import sys
import time

os.environ.setdefault("SPINUP_TF2_WAIT_BEFORE_LAUNCH", "0")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

REPO = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))
ENV = "FetchPush-v4"
OUT = osp.join(REPO, "data", "benchmarks", "her-race-" + ENV.lower())
SEEDS = [0, 10, 20]
EPOCHS, STEPS_PER_EPOCH, TEST_EPISODES = 40, 5000, 25
SETTINGS = dict(gamma=0.95, lr=1e-3, polyak=0.95, batch_size=256, hidden=(256, 256),
                start_steps=1000, replay_size=1_000_000, n_sampled_goal=4, strategy="future")
COLUMNS = ["Epoch", "TotalEnvInteracts", "AverageTestEpRet", "TestSuccessRate", "Time"]

sys.path.insert(0, osp.dirname(osp.abspath(__file__)))
from learning import epochs_done  # noqa: E402  (this folder's learning benchmark)


def make_env():
    import gymnasium as gym
    import gymnasium_robotics

    gym.register_envs(gymnasium_robotics)
    return gym.make(ENV)


def run_ours(seed: int, out: str) -> None:
    from spinup_tf2 import sac

    s = SETTINGS
    # An unfinished run takes up from its last training checkpoint (exactly, as --resume).
    resume = osp.isdir(osp.join(out, "train_state"))
    sac(make_env, seed=seed, epochs=EPOCHS, steps_per_epoch=STEPS_PER_EPOCH, her=True,
        n_sampled_goal=s["n_sampled_goal"], goal_selection_strategy=s["strategy"],
        gamma=s["gamma"], lr=s["lr"], polyak=s["polyak"], batch_size=s["batch_size"],
        ac_kwargs=dict(hidden_sizes=s["hidden"]), alpha="auto", start_steps=s["start_steps"],
        update_after=s["start_steps"], replay_size=s["replay_size"],
        num_test_episodes=TEST_EPISODES, max_ep_len=50, overwrite=not resume, resume=resume,
        logger_kwargs=dict(output_dir=out))


def run_sb3(seed: int, out: str) -> None:
    import numpy as np
    from stable_baselines3 import SAC, HerReplayBuffer
    from stable_baselines3.common.callbacks import BaseCallback

    s = SETTINGS
    env, test_env = make_env(), make_env()
    test_env.reset(seed=seed + 10_000)
    os.makedirs(out, exist_ok=True)
    progress = open(osp.join(out, "progress.txt"), "w")
    progress.write("\t".join(COLUMNS) + "\n")
    start = time.time()

    class Epochs(BaseCallback):
        """After each epoch: TEST_EPISODES deterministic episodes, one row."""

        def _on_step(self) -> bool:
            if self.num_timesteps % STEPS_PER_EPOCH:
                return True
            rets, wins = [], []
            for _ in range(TEST_EPISODES):
                o, _ = test_env.reset()
                done, ret = False, 0.0
                while not done:
                    a, _ = self.model.predict(o, deterministic=True)
                    o, r, terminated, truncated, info = test_env.step(a)
                    ret += float(r)
                    done = terminated or truncated
                rets.append(ret)
                wins.append(float(info.get("is_success", 0.0)))
            row = [self.num_timesteps // STEPS_PER_EPOCH, self.num_timesteps, np.mean(rets),
                   np.mean(wins), time.time() - start]
            progress.write("\t".join(str(x) for x in row) + "\n")
            progress.flush()
            print(f"sb3 s{seed} epoch {row[0]}: success {row[3]:.2f}, {row[4]:.0f} s", flush=True)
            return True

    model = SAC("MultiInputPolicy", env, learning_rate=s["lr"], buffer_size=s["replay_size"],
                learning_starts=s["start_steps"], batch_size=s["batch_size"],
                tau=1.0 - s["polyak"], gamma=s["gamma"], ent_coef="auto",
                replay_buffer_class=HerReplayBuffer,
                replay_buffer_kwargs=dict(n_sampled_goal=s["n_sampled_goal"],
                                          goal_selection_strategy=s["strategy"]),
                policy_kwargs=dict(net_arch=list(s["hidden"])), seed=seed, verbose=0)
    model.learn(EPOCHS * STEPS_PER_EPOCH, callback=Epochs())
    progress.close()


def speed_ours(seed: int, steps: int) -> float:
    """Environment steps per second here, one update per step, over the ``steps - 1000``
    steps after 1,000 random ones (from the end of the first epoch to the end of the one
    before the last, whose save is left out; no test episodes)."""
    import tempfile

    import pandas as pd

    from spinup_tf2 import sac

    s = SETTINGS
    out = tempfile.mkdtemp()
    sac(make_env, seed=seed, epochs=steps // 1000 + 1, steps_per_epoch=1000, her=True,
        gamma=s["gamma"], lr=s["lr"], polyak=s["polyak"], batch_size=s["batch_size"],
        ac_kwargs=dict(hidden_sizes=s["hidden"]), alpha="auto", start_steps=1000,
        update_after=1000, num_test_episodes=0, max_ep_len=50, save_freq=10_000,
        logger_kwargs=dict(output_dir=out))
    t = pd.read_csv(osp.join(out, "progress.txt"), sep="\t")["Time"]
    return (steps - 1000) / float(t.iloc[-2] - t.iloc[0])


def speed_sb3(seed: int, steps: int) -> float:
    """SB3's environment steps per second, one update per step, over the ``steps - 1000``
    steps after 1,000 random ones."""
    from stable_baselines3 import SAC, HerReplayBuffer

    s = SETTINGS
    model = SAC("MultiInputPolicy", make_env(), learning_rate=s["lr"], learning_starts=1000,
                batch_size=s["batch_size"], tau=1.0 - s["polyak"], gamma=s["gamma"],
                buffer_size=s["replay_size"], replay_buffer_class=HerReplayBuffer,
                replay_buffer_kwargs=dict(n_sampled_goal=s["n_sampled_goal"],
                                          goal_selection_strategy=s["strategy"]),
                policy_kwargs=dict(net_arch=list(s["hidden"])), seed=seed, verbose=0)
    model.learn(1000)
    start = time.time()
    model.learn(steps - 1000, reset_num_timesteps=False)
    return (steps - 1000) / (time.time() - start)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--seed", nargs="*", type=int, default=SEEDS)
    p.add_argument("--only", choices=["ours", "sb3"])
    p.add_argument("--run", nargs=2, metavar=("WHO", "SEED"), help=argparse.SUPPRESS)
    p.add_argument("--speed", type=int, metavar="REPEATS",
                   help="time 3,000 steps with updates of each library, alternating, REPEATS "
                        "times (fresh processes), and print env steps/s and their ratio")
    p.add_argument("--speed_one", nargs=2, help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.speed_one:
        who = a.speed_one[0]
        run = speed_ours if who == "ours" else speed_sb3
        print("STEPS_PER_S", run(int(a.speed_one[1]), 4000))
        return 0
    if a.speed:
        import statistics

        rates = {"ours": [], "sb3": []}
        for i in range(a.speed):
            for who in rates:
                res = subprocess.run([sys.executable, __file__, "--speed_one", who, str(i)],
                                     capture_output=True, text=True, check=True)
                rates[who].append(float(res.stdout.split("STEPS_PER_S")[-1]))
                print(f"{who} repeat {i}: {rates[who][-1]:.1f} env steps/s", flush=True)
        med = {k: statistics.median(v) for k, v in rates.items()}
        print(f"median env steps/s with one update per step on {ENV}: spinup_tf2 "
              f"{med['ours']:.1f}, Stable-Baselines3 {med['sb3']:.1f}; ratio "
              f"{med['ours'] / med['sb3']:.2f}x (repeats: {rates})")
        return 0
    if a.run:  # one run, in this process
        who, seed = a.run[0], int(a.run[1])
        (run_ours if who == "ours" else run_sb3)(seed, osp.join(OUT, f"{who}_s{seed}"))
        return 0
    for seed in a.seed:
        for who in ("ours", "sb3"):
            out = osp.join(OUT, f"{who}_s{seed}")
            if (a.only and who != a.only) or epochs_done(out) >= EPOCHS:
                continue
            print(f"running {who} seed {seed} -> {out}", flush=True)
            subprocess.run([sys.executable, __file__, "--run", who, str(seed)], check=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
