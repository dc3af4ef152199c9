"""Peak memory of SAC from pixels at 100k transitions: spinup_tf2 against SB3's CnnPolicy,
and the size of spinup_tf2's checkpoint of that replay buffer.

    python benchmarks/timing/pixel_memory.py                      # both sides, 100,000 transitions
    python benchmarks/timing/pixel_memory.py --frames_from RUN    # checkpoint real frames of RUN

Each side runs in a fresh process of its own (SB3 in the "sb3" environment that
``benchmarks/timing/race.py`` builds): it builds its agent for 84x84 RGB frames stacked by 3
(Pendulum-v1 as ``--pixels`` makes it: the actor-critics of ``race.py --pixels``, SB3
with its default encoder), fills its replay buffer with ``--transitions`` transitions
(episodes of 125 steps, as DMC's at action repeat 8), runs 50 updates at batch 128, and
prints its peak resident memory (``ru_maxrss``) and its replay buffer's bytes. SB3 keeps
its buffer's defaults (``optimize_memory_usage=False``: observation and next
observation stored, 3 frames each); spinup_tf2's stores each frame once.

The frames are random unless ``--frames_from`` names a pixel run whose training
checkpoint (``train_state/``) holds real ones: they are then cycled to fill the buffer,
and spinup_tf2 also writes the buffer's checkpoint (deflated, as ``--resume`` does) and
prints its size and the seconds it took. Repeating frames does not flatter the
compression: a frame (21 KB) repeats only after thousands of others, far beyond zlib's
32 KB window. Random frames do not compress; their checkpoint would say nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import os.path as osp
import resource
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = osp.dirname(osp.abspath(__file__))
SIZE, STACK, EP_LEN, BATCH = 84, 3, 125, 128


def frame_source(rng: np.random.Generator, run: str | None):
    """``next_frame()``: 84x84x3 uint8 frames, cycled from ``run``'s checkpoint or random."""
    if run is None:
        return lambda: rng.integers(0, 256, (SIZE, SIZE, 3), dtype=np.uint8)
    with np.load(osp.join(run, "train_state", "arrays.npz")) as z:
        frames = z["buf_frames"]
    frames = frames[frames.reshape(len(frames), -1).any(axis=1)]  # the filled ones
    count = iter(range(10**12))
    return lambda: frames[next(count) % len(frames)]


def transitions(n: int, next_frame):
    """``n`` transitions ``(obs, next_obs, done)`` of stacked frames, episodes of EP_LEN."""
    obs = np.concatenate([next_frame()] * STACK, axis=-1)
    for t in range(n):
        nxt = np.concatenate([obs[..., 3:], next_frame()], axis=-1)
        done = (t + 1) % EP_LEN == 0
        yield obs, nxt, done
        obs = np.concatenate([next_frame()] * STACK, axis=-1) if done else nxt


def peak_gb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20


def ours(n: int, run: str | None) -> dict:
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    from spinup_tf2.algos.sac import fast_path, pixels, replay, sac
    from spinup_tf2.algos.sac.nstep import NStepReturns
    from spinup_tf2.algos.sac.variants import PIXELS
    from spinup_tf2.training.checkpoint import write_npz

    rng = np.random.default_rng(0)
    shape = (SIZE, SIZE, 3 * STACK)
    from gymnasium import spaces
    ac, ac_targ = sac.build_actor_critics(
        pixels.PixelActorCritic, spaces.Box(0, 255, shape, np.uint8),
        spaces.Box(-2.0, 2.0, (1,), np.float32), {})
    pi_opt, q_opt = sac.make_optimizers(ac, 1e-3)
    block = fast_path.make_update_block(sac.make_update(ac, ac_targ, pi_opt, q_opt, 0.2,
                                                        0.995))
    buf = NStepReturns(pixels.FrameReplayBuffer(shape, STACK, 1, n), 1, 0.99)
    act = np.zeros(1, np.float32)
    for obs, nxt, done in transitions(n, frame_source(rng, run)):
        buf.store(obs, act, 0.0, nxt, float(done))
    replay.run_updates(block, buf, BATCH, rng, 50, 1, ac, PIXELS)
    out = dict(side="spinup_tf2", transitions=n, buffer_gb=buf.nbytes / 2**30)
    if run is not None:
        path = osp.join(tempfile.mkdtemp(prefix="pixel_ckpt_"), "arrays.npz")
        start = time.perf_counter()
        write_npz(path, buf.state_arrays(), compress=True)
        out.update(checkpoint_gb=osp.getsize(path) / 2**30,
                   checkpoint_s=time.perf_counter() - start)
        os.remove(path)
    return dict(out, peak_gb=peak_gb())


def sb3(n: int, run: str | None) -> dict:
    import torch
    from stable_baselines3 import SAC
    from stable_baselines3.common.logger import configure

    from spinup_tf2 import envs

    os.environ.setdefault("SDL_VIDEODRIVER", "dummy")
    env = envs.make(envs.pixel_ref("Pendulum-v1", SIZE, STACK, 8))
    model = SAC("CnnPolicy", env, buffer_size=n, batch_size=BATCH, learning_starts=0,
                device="cpu", seed=0, verbose=0,
                policy_kwargs=dict(net_arch=[1024, 1024], activation_fn=torch.nn.ReLU))
    model.set_logger(configure(None, []))
    rb, rng = model.replay_buffer, np.random.default_rng(0)
    act = np.zeros((1, 1), np.float32)
    for obs, nxt, done in transitions(n, frame_source(rng, run)):
        # SB3 stores images channels first (its VecTransposeImage)
        rb.add(obs.transpose(2, 0, 1)[None], nxt.transpose(2, 0, 1)[None], act,
               np.zeros(1), np.array([done]), [{}])
    model.train(gradient_steps=50, batch_size=BATCH)
    nbytes = sum(a.nbytes for a in (rb.observations, rb.next_observations, rb.actions,
                                    rb.rewards, rb.dones, rb.timeouts))
    return dict(side="sb3", transitions=n, buffer_gb=nbytes / 2**30, peak_gb=peak_gb())


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--transitions", type=int, default=100_000)
    p.add_argument("--frames_from", help="a pixel run whose checkpoint's frames to use")
    p.add_argument("--side", choices=["ours", "sb3"], help="measure one side, here")
    p.add_argument("--venv_dir", default=osp.expanduser("~/.cache/spinup_tf2/peers"))
    a = p.parse_args()
    if a.side:
        print(json.dumps((ours if a.side == "ours" else sb3)(a.transitions, a.frames_from)))
        return 0
    sys.path.insert(0, HERE)
    from race import cpu_summary, peer_python

    env = dict(os.environ, PYTHONPATH=osp.dirname(osp.dirname(HERE)), TF_CPP_MIN_LOG_LEVEL="3")
    extra = ["--frames_from", a.frames_from] if a.frames_from else []
    print(f"{cpu_summary()}; {a.transitions} transitions of 84x84x3 frames stacked by 3")
    for side, python in (("ours", sys.executable), ("sb3", peer_python("sb3", a.venv_dir))):
        res = subprocess.run([python, __file__, "--side", side, "--transitions",
                              str(a.transitions), *extra], capture_output=True, text=True,
                             env=env)
        lines = [ln for ln in res.stdout.splitlines() if ln.startswith("{")]
        if res.returncode != 0 or not lines:
            print(f"{side}: failed (exit {res.returncode}):\n{res.stderr[-3000:]}")
            continue
        print(lines[-1], flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
