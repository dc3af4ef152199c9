"""Does num_envs pay? Environment steps per second of collection with N copies.

    python benchmarks/timing/vector_envs.py                  # N = 1, 2, 4; sync and async; 3 rounds
    python benchmarks/timing/vector_envs.py --step_ms 2 --steps 2000 --rounds 5

Times :class:`spinup_tf2.envs.vector.VectorEpisodes`, the collector ``sac(num_envs=N)``
uses, stepping a CPU-bound environment (Pendulum-v1 plus ``--step_ms`` of arithmetic per
step, as a slow simulator or a renderer would cost) with random actions and storing every
transition in a replay buffer; and, as the baseline, one environment stepped as sac()'s
single-environment loop steps it. Medians of ``--rounds`` alternating rounds; async start-up
(spawning the processes) is not counted. With 'sync' the copies step one after another, so
only 'async' can use more cores than one.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import gymnasium as gym  # noqa: E402


class BusyPendulum(gym.Wrapper):
    """Pendulum-v1 whose every step also costs ``step_ms`` of CPU time."""

    def __init__(self, step_ms: float):
        super().__init__(gym.make("Pendulum-v1"))
        self.step_ms = step_ms

    def step(self, action):
        end = time.perf_counter() + self.step_ms / 1000
        x = 0.0
        while time.perf_counter() < end:
            x += sum(i * i for i in range(50))
        return self.env.step(action)


class Make:
    """A picklable env_fn (the async copies are made in spawned processes)."""

    def __init__(self, step_ms: float):
        self.step_ms = step_ms

    def __call__(self):
        return BusyPendulum(self.step_ms)


def time_single(step_ms: float, steps: int) -> float:
    from spinup_tf2.algos.sac.sac import ReplayBuffer

    env, buf = Make(step_ms)(), ReplayBuffer(3, 1, steps)
    o, _ = env.reset(seed=0)
    t0 = time.perf_counter()
    for _ in range(steps):
        a = env.action_space.sample()
        o2, r, terminated, truncated, _ = env.step(a)
        buf.store(o, a, r, o2, float(terminated))
        o = env.reset()[0] if terminated or truncated else o2
    return steps / (time.perf_counter() - t0)


def time_vector(step_ms: float, steps: int, n: int, mode: str) -> float:
    from spinup_tf2.algos.sac.sac import ReplayBuffer
    from spinup_tf2.envs.vector import VectorEpisodes

    vec = VectorEpisodes(Make(step_ms), n, mode, max_ep_len=1000, seed=0)
    buf = ReplayBuffer(3, 1, steps)
    try:
        o = vec.reset()[0]
        vec.step(o, vec.action_space.sample(), ReplayBuffer(3, 1, n))  # processes warm
        t0 = time.perf_counter()
        for _ in range(steps // n):
            o, _ = vec.step(o, vec.action_space.sample(), buf)
        return (steps // n) * n / (time.perf_counter() - t0)
    finally:
        vec.close()


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--step_ms", type=float, default=1.0)
    p.add_argument("--steps", type=int, default=1200)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--ns", type=int, nargs="+", default=[1, 2, 4])
    args = p.parse_args()
    cases = [("single env (num_envs=1)", None, None)] + [
        (f"num_envs={n} {mode}", n, mode) for mode in ("sync", "async") for n in args.ns]
    results = {name: [] for name, _, _ in cases}
    for _ in range(args.rounds):
        for name, n, mode in cases:
            rate = (time_single(args.step_ms, args.steps) if n is None
                    else time_vector(args.step_ms, args.steps, n, mode))
            results[name].append(rate)
    base = statistics.median(results[cases[0][0]])
    print(f"CPU-bound Pendulum-v1, {args.step_ms:g} ms of work per step, {args.steps} steps, "
          f"medians of {args.rounds} rounds; {os.cpu_count()} logical CPUs\n")
    print("| collector | env steps / s | vs one env |\n|---|---:|---:|")
    for name, _, _ in cases:
        med = statistics.median(results[name])
        print(f"| {name} | {med:.0f} | {med / base:.2f} |")
    print("\n" + json.dumps({k: [round(v, 1) for v in vals] for k, vals in results.items()}))


if __name__ == "__main__":
    main()
