"""What one compiled call per pixel update costs against one call for a block of updates.

    python benchmarks/timing/pixel_calls.py                        # 50 updates a block, 3 rounds
    python benchmarks/timing/pixel_calls.py --updates 20 --rounds 5

sac() runs a pixel actor-critic's updates one compiled call each (``replay.run_updates``), where
vector runs hand a whole block of ``update_every`` updates to one call: a compiled loop over
several convolutional updates gave different numbers from process to process on the same
seed. This times both ways on the same update (the DMC benchmark's: DrQ's encoder, 84x84
RGB frames stacked by 3, batch 128, alpha tuned, one action), on a replay buffer of random
frames filled as ``pixel_memory.py`` fills its (episodes of 125 steps). Each round runs a
block of ``--updates`` updates both ways, in turn, sampling included (the same work both
ways); the medians over rounds and their ratio are printed.
Time it on a quiet machine: the ratio is all it says.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import numpy as np


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--updates", type=int, default=50, help="updates in a block")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--transitions", type=int, default=2000, help="in the replay buffer")
    a = p.parse_args()
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from gymnasium import spaces
    from pixel_memory import BATCH, SIZE, STACK, frame_source, transitions
    from race import cpu_summary

    from spinup_tf2.algos.sac import fast_path, pixels, replay, sac
    from spinup_tf2.algos.sac.nstep import NStepReturns
    from spinup_tf2.algos.sac.variants import PIXELS

    rng = np.random.default_rng(0)
    shape = (SIZE, SIZE, 3 * STACK)
    act_space = spaces.Box(-1.0, 1.0, (1,), np.float32)
    ac, ac_targ = sac.build_actor_critics(
        pixels.PixelActorCritic, spaces.Box(0, 255, shape, np.uint8), act_space, {})
    pi_opt, q_opt = sac.make_optimizers(ac, 1e-3)
    tuner = sac.make_tuner((0.1, None), act_space, 1e-3)
    block = fast_path.make_update_block(sac.make_update(ac, ac_targ, pi_opt, q_opt, 0.1,
                                                        0.99, tuner))
    buf = NStepReturns(pixels.FrameReplayBuffer(shape, STACK, 1, a.transitions), 1, 0.99)
    act = np.zeros(1, np.float32)
    for obs, nxt, done in transitions(a.transitions, frame_source(rng, None)):
        buf.store(obs, act, 0.0, nxt, float(done))

    def per_call():  # what sac() does for images
        replay.run_updates(block, buf, BATCH, rng, a.updates, 1, ac, PIXELS)

    def one_call():  # what sac() does for vectors
        block(*replay.update_inputs(buf, BATCH, rng, a.updates, 1, ac, PIXELS))

    ways = {"one call per update": per_call, f"one call per {a.updates}": one_call}
    for run in ways.values():  # compile both first
        run()
    print(f"{cpu_summary()}; blocks of {a.updates} pixel updates (84x84x9, batch {BATCH})")
    seconds = {name: [] for name in ways}
    for r in range(a.rounds):
        for name, run in ways.items():
            start = time.perf_counter()
            run()
            seconds[name].append((time.perf_counter() - start) / a.updates)
            print(f"round {r + 1}: {name}: {seconds[name][-1]:.4f} s per update", flush=True)
    med = {name: statistics.median(s) for name, s in seconds.items()}
    for name, s in med.items():
        print(f"median, {name}: {s:.4f} s per update ({1 / s:.2f} updates/s)")
    per, one = med.values()
    print(f"one call per update / one call per block, time per update: {per / one:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
