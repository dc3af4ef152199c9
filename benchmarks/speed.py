"""Time spinup_tf2's SAC the way ../shared/bench/sb3_speed.py times Stable-Baselines3.

    python benchmarks/speed.py --env HalfCheetah-v5 --total 8000 --measure_from 2000 [--json]

Runs the real ``sac()`` training loop with Spinning Up's settings (256x256 ReLU,
batch 100, lr 1e-3, alpha 0.2, polyak 0.995, 50 updates after every 50 steps),
with random actions and no updates before step 1000 as the SB3 script does
(``learning_starts=1000``), no test episodes (SB3's loop has none) and one epoch
of ``--total`` steps.

updates_per_s: gradient updates per second of time spent in the compiled update
blocks (including fetching their results), counted after --measure_from env steps.
env_steps_per_s: env steps per second of wall time over the whole loop (acting,
env, storing, updating) from --measure_from to --total.
"""

import argparse
import json
import os
import sys
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import gymnasium as gym  # noqa: E402

import spinup_tf2  # noqa: E402
from spinup_tf2.algos.sac import sac as sac_module  # noqa: E402


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--env", default="HalfCheetah-v5")
    p.add_argument("--total", type=int, default=8000)
    p.add_argument("--measure_from", type=int, default=2000)
    p.add_argument("--json", action="store_true", help="print one JSON line only")
    a = p.parse_args()

    clock = dict(t0=None, t1=None, steps=0, upd_time=0.0, n_upd=0, n_blocks=0,
                 act_time=0.0, n_act=0)
    make_block = sac_module.make_update_block
    make_get_action = sac_module.make_get_action

    def timed_make_block(update, **kw):
        block = make_block(update, **kw)

        def timed_block(*args):
            t = time.perf_counter()
            out = block(*args)
            out = {k: v.numpy() for k, v in out.items()}
            if clock["steps"] >= a.measure_from:
                clock["upd_time"] += time.perf_counter() - t
                clock["n_upd"] += len(out["LossPi"])
                clock["n_blocks"] += 1
            return out
        return timed_block

    def timed_make_get_action(*args, **kw):
        get_action = make_get_action(*args, **kw)

        def timed_get_action(o, deterministic=False):
            t = time.perf_counter()
            act = get_action(o, deterministic)
            if clock["steps"] >= a.measure_from:
                clock["act_time"] += time.perf_counter() - t
                clock["n_act"] += 1
            return act
        timed_get_action.refresh = get_action.refresh
        return timed_get_action

    class Clock(gym.Wrapper):
        def step(self, action):
            out = self.env.step(action)
            clock["steps"] += 1
            if clock["steps"] == a.measure_from:
                clock["t0"] = time.perf_counter()
            if clock["steps"] == a.total:
                clock["t1"] = time.perf_counter()
            return out

    sac_module.make_update_block = timed_make_block
    sac_module.make_get_action = timed_make_get_action
    envs = []

    def env_fn():  # the first env made is the training env; only it is clocked
        env = gym.make(a.env)
        envs.append(env)
        return Clock(env) if len(envs) == 1 else env

    out = tempfile.mkdtemp(prefix="spinup_tf2_speed_")
    stdout = sys.stdout
    if a.json:
        sys.stdout = open(os.devnull, "w")
    try:
        spinup_tf2.sac(env_fn, seed=0, steps_per_epoch=a.total, epochs=1, start_steps=1000,
                       update_after=1000, update_every=50, batch_size=100, lr=1e-3, alpha=0.2,
                       num_test_episodes=0, logger_kwargs=dict(output_dir=out))
    finally:
        sys.stdout = stdout
    res = dict(impl="spinup_tf2", env=a.env, tensorflow=spinup_tf2.tf_version(),
               updates_per_s=clock["n_upd"] / clock["upd_time"],
               env_steps_per_s=(a.total - a.measure_from) / (clock["t1"] - clock["t0"]),
               act_us_per_step=1e6 * clock["act_time"] / max(clock["n_act"], 1),
               update_ms_per_block=1e3 * clock["upd_time"] / max(clock["n_blocks"], 1))
    if a.json:
        print(json.dumps(res))
    else:
        print(f"{'environment':24} {a.env}")
        print(f"{'measured steps':24} {a.measure_from} -> {a.total}")
        print(f"{'updates per second':24} {res['updates_per_s']:10.1f}")
        print(f"{'env steps per second':24} {res['env_steps_per_s']:10.1f}")
        print(f"{'acting time per step':24} {res['act_us_per_step']:10.1f} us")
        print(f"{'update time per block':24} {res['update_ms_per_block']:10.1f} ms (50 updates)")


if __name__ == "__main__":
    main()
