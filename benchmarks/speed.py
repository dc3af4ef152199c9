"""Time spinup_tf2's SAC the way benchmarks/timing/peers/peer_speed.py times its peers.

    python benchmarks/speed.py --env HalfCheetah-v5 --total 8000 --measure_from 2000 [--json]
    python benchmarks/speed.py --env Pendulum-P-v1 --recurrent      # recurrent SAC's defaults
    python benchmarks/speed.py --env Pendulum-v1 --pixels --start 200 --measure_from 250 --total 400
    python benchmarks/speed.py --algo tqc       # a variant of the SAC family, as FAMILY sets it
    python benchmarks/speed.py --algo tqc --n_critics 5  # TQC with its own default (5 critics)
    python benchmarks/speed.py --algo crossq --critic_width 2048  # CrossQ at the paper's width
    python benchmarks/speed.py --algo crossq --precision bfloat16  # products in bfloat16

Runs the real ``sac()`` training loop with Spinning Up's settings (256x256 ReLU,
batch 100, lr 1e-3, alpha 0.2, polyak 0.995, 50 updates after every 50 steps),
with random actions and no updates before step 1000 as the peers' loop does
(``learning_starts=1000``), no test episodes (SB3's loop has none) and one epoch
of ``--total`` steps.

The timing comes from a wrapper around the training env, so the real ``sac()``
runs untouched: the wall time between one env step's return and the next step's
call is the loop's own work (acting, storing, bookkeeping), and after every
``update_every``-th step it also holds the block of updates (drawing the
minibatches and noise, the compiled call, fetching its results).

updates_per_s: gradient updates per second of time spent in update blocks (each
such gap minus the median gap without one), counted after --measure_from env steps.
env_steps_per_s: env steps per second of wall time over the whole loop (acting,
env, storing, updating) from --measure_from to --total.

--algo tqc, crossq, droq or redq: that variant's function with the settings of FAMILY (the
published ones; TQC with 2 critics, CrossQ's critics 512 wide), alpha learned, batch 256;
peer_speed.py ``--algo`` gives SBX the same (REDQ has no SBX peer). updates_per_s counts
every update of a block (DroQ and REDQ: 20 per env step, 1,000 per block).

--pixels: the env as ``--pixels`` makes it (84x84 RGB, 3 frames, ``--action_repeat`` 8,
rendered in its own process), the pixel actor-critic with its defaults (DrQ's),
batch ``--batch_size`` (128); benchmarks/timing/peers/peer_speed.py ``--pixels`` is its peer.
"""

import argparse
import json
import os
import sys
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import gymnasium as gym  # noqa: E402
import numpy as np  # noqa: E402

import spinup_tf2  # noqa: E402
import spinup_tf2.family  # noqa: E402

UPDATE_EVERY = 50
# --algo: each variant's settings (beside its function's own defaults), from its family
# entry, as peer_speed.py's FAMILY gives SBX.
FAMILY = {m.name: m.evidence.settings for m in spinup_tf2.family.FAMILY}


def family_settings(algo: str, critic_width: int | None = None) -> dict:
    """``FAMILY``'s settings of ``algo``, its critics ``critic_width`` wide (each of its
    ``critic_hidden_sizes``) where given; ValueError where its actor-critic has none."""
    import importlib
    import inspect

    settings = dict(FAMILY[algo])
    if critic_width is not None:
        member = spinup_tf2.family.MEMBERS[algo]
        ac = getattr(importlib.import_module(member.math), member.actor_critic)
        widths = inspect.signature(ac).parameters.get("critic_hidden_sizes")
        if widths is None:
            raise ValueError(f"--critic_width {critic_width} sets the width of a family "
                             f"member's critic_hidden_sizes; {algo}'s actor-critic has none")
        settings["ac_kwargs"] = dict(settings.get("ac_kwargs", {}), critic_hidden_sizes=(
            critic_width,) * len(widths.default))
    return settings


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--env", default="HalfCheetah-v5")
    p.add_argument("--total", type=int, default=8000)
    p.add_argument("--measure_from", type=int, default=2000)
    p.add_argument("--recurrent", action="store_true",
                   help="RecurrentActorCritic with its defaults (batch_size counts transitions)")
    p.add_argument("--pixels", action="store_true", help="the env as --pixels makes it")
    p.add_argument("--action_repeat", type=int, default=8, help="with --pixels")
    p.add_argument("--batch_size", type=int, help="default 100, with --pixels 128")
    p.add_argument("--start", type=int, default=1000,
                   help="random actions and no updates before this step, as peer_speed.py")
    p.add_argument("--algo", choices=["sac", *FAMILY], default="sac",
                   help="a variant of the SAC family, with FAMILY's settings")
    p.add_argument("--n_critics", type=int,
                   help="TQC or REDQ: this many critics instead of FAMILY's (TQC's own default "
                        "is 5, REDQ's 10)")
    p.add_argument("--critic_width", type=int,
                   help="CrossQ or SimbaV2: critics this wide instead of FAMILY's (CrossQ's "
                        "512; the paper's 2048)")
    p.add_argument("--precision", choices=["float32", "bfloat16"], default="float32",
                   help="sac(precision=...): the update's hidden-layer products in bfloat16 "
                        "(a CPU with avx512_bf16 or amx_bf16)")
    p.add_argument("--json", action="store_true", help="print one JSON line only")
    a = p.parse_args()
    if a.critic_width and a.algo == "sac":
        p.error(f"--critic_width {a.critic_width} sets a family member's critics: give it "
                "with --algo crossq or simbav2")
    batch_size = a.batch_size or (128 if a.pixels else 100)

    gaps = {True: [], False: []}  # loop time after a step, with and without an update block

    class Clock(gym.Wrapper):
        steps, last, t0, t1 = 0, None, None, None

        def step(self, action):
            now = time.perf_counter()
            if self.last is not None and self.steps > a.measure_from:
                t = self.steps - 1  # sac()'s loop index of the step before this gap
                gaps[t >= a.start and t % UPDATE_EVERY == 0].append(now - self.last)
            out = self.env.step(action)
            self.steps += 1
            if self.steps == a.measure_from:
                self.t0 = time.perf_counter()
            if self.steps == a.total:
                self.t1 = time.perf_counter()
            self.last = time.perf_counter()
            return out

    envs = []

    def make():
        if a.pixels:
            from spinup_tf2.envs import make_pixels
            return make_pixels(a.env, 84, 3, a.action_repeat)
        return gym.make(a.env)

    def env_fn():  # the first env made is the training env; only it is clocked
        envs.append(Clock(make()) if not envs else make())
        return envs[-1]

    out = tempfile.mkdtemp(prefix="spinup_tf2_speed_")
    stdout = sys.stdout
    if a.json:
        sys.stdout = open(os.devnull, "w")
    ac = {}
    if a.recurrent:
        from spinup_tf2.algos.sac.recurrent import RecurrentActorCritic
        ac = dict(actor_critic=RecurrentActorCritic)
    settings = dict(batch_size=batch_size, lr=1e-3, alpha=0.2)
    if a.algo != "sac":
        try:
            settings = dict(family_settings(a.algo, a.critic_width),
                            batch_size=a.batch_size or 256)
        except ValueError as e:
            p.error(str(e))
        if a.n_critics:
            settings["ac_kwargs"] = dict(settings.get("ac_kwargs", {}), n_critics=a.n_critics)
    # The member's own update ratio (SimbaV2's 2) unless FAMILY changes it.
    own = dict(spinup_tf2.family.MEMBERS[a.algo].defaults if a.algo != "sac" else {},
               **settings)
    updates_per_block = UPDATE_EVERY * own.get("updates_per_step", 1)
    try:
        getattr(spinup_tf2, a.algo)(
            env_fn, **ac, seed=0, steps_per_epoch=a.total, epochs=1, start_steps=a.start,
            update_after=a.start, update_every=UPDATE_EVERY,
            replay_size=a.total + 1 if a.pixels else int(1e6), num_test_episodes=0,
            logger_kwargs=dict(output_dir=out), precision=a.precision, **settings)
    finally:
        sys.stdout = stdout
    clock = envs[0]
    loop = float(np.median(gaps[False]))
    block = float(np.mean(gaps[True])) - loop
    res = dict(impl="spinup_tf2", env=a.env, algo=a.algo, recurrent=a.recurrent,
               n_critics=settings.get("ac_kwargs", {}).get("n_critics"),
               critic_width=(settings["ac_kwargs"]["critic_hidden_sizes"][0]
                             if "critic_hidden_sizes" in settings.get("ac_kwargs", {})
                             else None),
               pixels=a.pixels, batch_size=settings["batch_size"], precision=a.precision,
               tensorflow=spinup_tf2.tf_version(),
               updates_per_s=updates_per_block / block,
               env_steps_per_s=(a.total - a.measure_from) / (clock.t1 - clock.t0),
               loop_us_per_step=1e6 * loop, update_ms_per_block=1e3 * block)
    if a.json:
        print(json.dumps(res))
    else:
        print(f"{'environment':24} {a.env}")
        print(f"{'measured steps':24} {a.measure_from} -> {a.total}")
        print(f"{'updates per second':24} {res['updates_per_s']:10.1f}")
        print(f"{'env steps per second':24} {res['env_steps_per_s']:10.1f}")
        print(f"{'loop time per step':24} {res['loop_us_per_step']:10.1f} us (acting, storing)")
        print(f"{'update time per block':24} {res['update_ms_per_block']:10.1f} ms "
              f"({updates_per_block} updates)")


if __name__ == "__main__":
    main()
