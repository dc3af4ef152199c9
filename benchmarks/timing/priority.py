"""What prioritized replay costs, and how stale a block's priorities are (issue 79).

``cost``: updates/s of SAC's update on HalfCheetah-v5's shapes (Spinning Up's networks and
batch of 100, blocks of 50 updates, a buffer of 100,000 transitions), drawing uniformly,
by priority (``'per'``) and by LAP: each block's draw, its compiled updates and (prioritized)
the write-back of its TD errors. Rounds alternate between the three; the median of
``--rounds`` is written, with the CPU.

``staleness``: a block's minibatches are all drawn from the priorities the previous block
left; a block of one update would have drawn its j-th minibatch after the first j - 1
updates' TD errors were written back. For each update of each block, this measures (a) the
total-variation distance between the distribution the block drew from and that fresher
one, and (b) the share of the minibatch's draws whose priority an earlier update of the
same block had changed (a transition drawn twice within a block). From a 20,000-step
HalfCheetah-v5 run's buffer (random actions, then blocks of SAC updates).

    python benchmarks/timing/priority.py cost [--rounds 5] [--out FILE.jsonl]
    python benchmarks/timing/priority.py staleness [--blocks 40] [--out FILE.jsonl]
"""

from __future__ import annotations

import argparse
import os
import os.path as osp
import statistics
import sys
import time

REPO = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))
sys.path.insert(0, REPO)
sys.path.insert(0, osp.dirname(osp.abspath(__file__)))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

from bf16_matmul import report  # noqa: E402  (written with the CPU, as the other timings)

ENV, BLOCK, BATCH = "HalfCheetah-v5", 50, 100


def learner(replay: str, size: int, fill: int, seed: int = 0):
    """``(ac, buffer, block, rng, act_dim)``: SAC on ENV's shapes with ``replay``'s buffer holding
    ``fill`` transitions of random actions."""
    import gymnasium as gym
    import keras
    import numpy as np

    from spinup_tf2.algos.sac import core
    from spinup_tf2.algos.sac import replay as R
    from spinup_tf2.algos.sac import sac as S
    from spinup_tf2.algos.sac.variants import MLP

    env = gym.make(ENV)
    keras.utils.set_random_seed(seed)
    obs_dim, act_dim = env.observation_space.shape[0], env.action_space.shape[0]
    ac, ac_targ = S.build_actor_critics(core.MLPActorCritic, env.observation_space,
                                        env.action_space, {})
    priority = None if replay == "uniform" else dict(kind=replay, anneal_updates=10**6)
    buf = R.make_replay(MLP, ac, obs_dim, act_dim, size, priority=priority)
    rng = np.random.default_rng(seed)
    o, _ = env.reset(seed=seed)
    for _ in range(fill):
        a = env.action_space.sample()
        o2, r, term, trunc, _ = env.step(a)
        buf.store(o, a, r, o2, float(term))
        o = o2 if not (term or trunc) else env.reset()[0]
    *_, block = S.make_learner(ac, ac_targ, MLP, 1e-3, None, env.action_space, 0.2, 0.995,
                               replay=replay)
    return ac, buf, block, rng, act_dim


def cost(rounds: int) -> dict:
    from spinup_tf2.algos.sac import replay as R
    from spinup_tf2.algos.sac.variants import MLP

    kinds = ("uniform", "per", "lap")
    made = {k: learner(k, 100_000, 100_000) for k in kinds}
    for ac, buf, block, rng, act_dim in made.values():  # compile and warm
        for _ in range(3):
            R.run_updates(block, buf, BATCH, rng, BLOCK, act_dim, ac, MLP)
    times = {k: [] for k in kinds}
    for _ in range(rounds):
        for k in kinds:
            ac, buf, block, rng, act_dim = made[k]
            start = time.perf_counter()
            for _ in range(20):
                R.run_updates(block, buf, BATCH, rng, BLOCK, act_dim, ac, MLP)
            times[k].append(20 * BLOCK / (time.perf_counter() - start))
    med = {k: statistics.median(v) for k, v in times.items()}
    return dict(kind="cost", env=ENV, batch=BATCH, block=BLOCK, buffer=100_000,
                updates_per_s=med, rounds={k: v for k, v in times.items()},
                ratio_to_uniform={k: med[k] / med["uniform"] for k in kinds})


def staleness(blocks: int) -> dict:
    import numpy as np

    from spinup_tf2.algos.sac import replay as R
    from spinup_tf2.algos.sac.variants import MLP

    ac, buf, block, rng, act_dim = learner("per", 20_000, 20_000)
    inner = buf.buffer  # the prioritized buffer behind the n-step door
    tv, repeat = np.zeros((blocks, BLOCK)), np.zeros((blocks, BLOCK))
    for b in range(blocks):
        inputs = R.update_inputs(buf, BATCH, rng, BLOCK, act_dim, ac, MLP)
        start = inner.tree.leaves(inner.size)
        drawn = inner.drawn.copy()
        td = np.asarray(block(*inputs)["TD"])
        inner.update_priorities(td)
        fresh = start.copy()
        changed = np.zeros(inner.size, bool)
        p0 = start / start.sum()
        for j in range(BLOCK):
            tv[b, j] = 0.5 * np.abs(p0 - fresh / fresh.sum()).sum()
            repeat[b, j] = changed[drawn[j]].mean()
            fresh[drawn[j]] = inner.priorities_of(td[j])  # what update j writes back
            changed[drawn[j]] = True
    return dict(kind="staleness", env=ENV, batch=BATCH, block=BLOCK, buffer=20_000,
                blocks=blocks, tv_by_update=tv.mean(0).round(5).tolist(),
                tv_last=float(tv[:, -1].mean()), tv_mean=float(tv.mean()),
                repeat_share_mean=float(repeat.mean()),
                repeat_share_last=float(repeat[:, -1].mean()))


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("what", choices=["cost", "staleness"])
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--blocks", type=int, default=40)
    p.add_argument("--out", help="append the result to this .jsonl file")
    a = p.parse_args()
    report(cost(a.rounds) if a.what == "cost" else staleness(a.blocks), a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
