"""Time a peer's SAC (Stable-Baselines3 on PyTorch, or SBX on JAX) with Spinning Up's
settings; run by ``benchmarks/timing/race.py`` inside the peer's own virtual environment.

    python peer_speed.py {sb3,sbx} --env HalfCheetah-v5 --total 8000 --measure_from 2000
    python peer_speed.py sb3 --pixels --encoder drq --env Pendulum-v1   # see "Pixels" below
    python peer_speed.py sbx --algo tqc      # SBX's TQC, CrossQ or DroQ: see FAMILY below
    python peer_speed.py sbx --algo crossq --critic_width 2048 --device cuda  # on a GPU

Prints one JSON line with the same two figures as ``benchmarks/speed.py``:

- updates_per_s: gradient updates per second of time spent in ``train()`` (each
  call runs one block of 50 updates), for the calls after ``--measure_from`` env
  steps. On JAX the call returns before the device is done, so the clock stops
  only after ``jax.block_until_ready`` on the trained states.
- env_steps_per_s: env steps per second of wall time over the whole loop
  (acting, env, storing, training) from ``--measure_from`` to ``--total``.

Settings: 256x256 ReLU networks for the actor and both critics, batch 100, Adam
with lr 1e-3, gamma 0.99, polyak 0.995 (SB3's tau = 1 - polyak = 0.005), fixed
alpha 0.2, 50 updates after every 50 env steps, updates from step 1000, replay
size 1e6, seed 0. The peers' own loop decides the rest: uniform random actions
before step 1000 (Spinning Up: 10000), no test episodes, the critic loss with a
factor 1/2, targets only for the critics; SBX also runs its temperature step with
a fixed alpha, and initialises its layers as flax does. None of these changes
the amount of matrix work per update by more than a few per cent.

Pixels (``--pixels``, SB3 only: SBX has no CNN policy): the task is ``--env`` as
spinup_tf2's ``--pixels`` makes it (``spinup_tf2.envs.PixelObservation``, imported
from this repository: 84x84 RGB, 3 frames stacked, ``--action_repeat`` 8), and SB3's
SAC runs with ``CnnPolicy`` on it: batch ``--batch_size`` (128), hidden layers
1024x1024 as DrQ's (and ours), everything else as above, updates from step
``--start``. ``--encoder nature`` keeps SB3's default image encoder (NatureCNN,
3 convolutions and a linear layer to 512 features, one copy for the actor and one
for the critics, each trained by its own loss); ``--encoder drq`` gives it DrQ's
(4 convolutions 3x3 of 32 channels, linear to 50, LayerNorm, tanh), one copy shared
by actor and critics (SB3's ``share_features_extractor=True``, which trains it by the
actor's loss where DrQ trains it by the critics'): one backward pass through the
encoder per update, the arithmetic spinup_tf2's pixel actor-critic does. SB3 has no
random-shift augmentation (spinup_tf2 has: a gather per minibatch, a few per cent of
its update).
"""

import argparse
import json
import os
import statistics
import time

p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
p.add_argument("impl", choices=["sb3", "sbx"])
p.add_argument("--env", default="HalfCheetah-v5")
p.add_argument("--total", type=int, default=8000)
p.add_argument("--measure_from", type=int, default=2000)
p.add_argument("--pixels", action="store_true", help="the env as --pixels makes it; CnnPolicy")
p.add_argument("--encoder", choices=["nature", "drq"], default="nature")
p.add_argument("--action_repeat", type=int, default=8)
p.add_argument("--batch_size", type=int, default=128)
p.add_argument("--start", type=int, default=1000, help="env steps before the first update")
p.add_argument("--algo", choices=["sac", "tqc", "crossq", "droq", "redq"], default="sac",
               help="sbx only beyond sac: a variant of the SAC family (see FAMILY below)")
p.add_argument("--critic_width", type=int,
               help="--algo crossq: the critics' width, default 512 (the paper's 2048, SBX's 1024)")
p.add_argument("--device", choices=["cpu", "cuda"], default="cpu",
               help="sbx: where JAX runs (the race is on the CPU; cuda: an NVIDIA GPU)")
args = p.parse_args()
if args.pixels and args.impl != "sb3":
    p.error("--pixels: only sb3 (SBX has no CNN policy)")
if args.algo != "sac" and (args.impl != "sbx" or args.pixels):
    p.error("--algo: the SAC family is raced against sbx, on vector observations")
if args.critic_width and args.algo != "crossq":
    p.error(f"--critic_width {args.critic_width} sets CrossQ's critics: give it with --algo crossq")
args.critic_width = args.critic_width or 512
if args.device != "cpu" and args.impl != "sbx":
    p.error(f"--device {args.device}: sbx only (the sb3 peer is a CPU build of torch)")

if args.impl == "sbx":
    os.environ["JAX_PLATFORMS"] = args.device  # race.py's is the CPU, even where a GPU exists
    import flax.linen as nn
    import jax
    import sbx

    SAC = {"sac": sbx.SAC, "tqc": sbx.TQC, "crossq": sbx.CrossQ, "droq": sbx.SAC,
           "redq": sbx.SAC}[args.algo]

    activation = nn.relu
    versions = dict(jax=jax.__version__, backend=jax.default_backend())

    def wait_for(model):  # every train state the policy holds (TQC: one per critic)
        states = [v for k, v in vars(model.policy).items() if k.endswith("_state")]
        jax.block_until_ready((states, model.ent_coef_state))
else:
    import torch
    from stable_baselines3 import SAC

    activation = torch.nn.ReLU
    versions = dict(torch=torch.__version__, threads=torch.get_num_threads())

    def wait_for(model):  # PyTorch on the CPU has finished when train() returns
        pass

import gymnasium as gym  # noqa: E402
from stable_baselines3.common.callbacks import BaseCallback  # noqa: E402


class TimedSAC(SAC):
    """The peer's SAC, with the time of each ``train()`` call recorded."""

    def train(self, gradient_steps: int, batch_size: int = 64) -> None:
        start = time.perf_counter()
        super().train(gradient_steps=gradient_steps, batch_size=batch_size)
        wait_for(self)
        self.train_calls.append((self.num_timesteps, gradient_steps,
                                 time.perf_counter() - start))


class LoopClock(BaseCallback):
    """Wall-clock time at env step ``measure_from`` and at ``total``."""

    def __init__(self):
        super().__init__()
        self.marks = {}

    def _on_step(self) -> bool:
        if self.num_timesteps in (args.measure_from, args.total):
            self.marks[self.num_timesteps] = time.perf_counter()
        return True


def drq_encoder():
    """DrQ's image encoder as an SB3 features extractor (channels first, as SB3 feeds it)."""
    from stable_baselines3.common.torch_layers import BaseFeaturesExtractor

    class DrQEncoder(BaseFeaturesExtractor):
        def __init__(self, observation_space, features_dim: int = 50):
            super().__init__(observation_space, features_dim)
            c, h, w = observation_space.shape
            layers, n = [], c
            for i in range(4):
                layers += [torch.nn.Conv2d(n, 32, 3, stride=2 if i == 0 else 1),
                           torch.nn.ReLU()]
                n = 32
            self.convs = torch.nn.Sequential(*layers, torch.nn.Flatten())
            with torch.no_grad():
                n_flat = self.convs(torch.zeros(1, c, h, w)).shape[1]
            self.head = torch.nn.Sequential(torch.nn.Linear(n_flat, features_dim),
                                            torch.nn.LayerNorm(features_dim), torch.nn.Tanh())

        def forward(self, obs):  # SB3 has scaled the images to [0, 1]
            return self.head(self.convs(obs))

    return DrQEncoder


if args.pixels:
    from spinup_tf2 import envs

    os.environ.setdefault("SDL_VIDEODRIVER", "dummy")  # pygame draws off-screen, no complaint
    env = envs.make(envs.pixel_ref(args.env, 84, 3, args.action_repeat))
    policy, batch_size, buffer_size = "CnnPolicy", args.batch_size, args.total + 1
    policy_kwargs = dict(net_arch=[1024, 1024], activation_fn=activation)
    if args.encoder == "drq":
        policy_kwargs.update(features_extractor_class=drq_encoder(),
                             share_features_extractor=True)
else:
    env, policy, batch_size, buffer_size = gym.make(args.env), "MlpPolicy", 100, 1_000_000
    policy_kwargs = dict(net_arch=[256, 256], activation_fn=activation)
# The SAC family (--algo, SBX): each variant's published settings, those benchmarks/speed.py
# --algo gives spinup_tf2's: TQC 2 critics of 25 quantiles, the top 2 per critic dropped (the
# paper has 5, but SBX's TQC builds two critics whatever n_critics says: sbx-rl 0.28.0,
# sbx/tqc/policies.py keeps qf1_state and qf2_state, so both sides run SBX's default 2);
# CrossQ with critics --critic_width wide (512: our bundled runs'; the paper's 2048, SBX's 1024),
# its own Adam betas, policy delay 3 and no targets; DroQ as SBX's README configures SAC
# (dropout 0.01 and LayerNorm in the critics, 20 updates per step, the policy every 20th).
# REDQ: SBX has none, so its SAC with REDQ's 10 critics and schedule (20 updates per step, the
# policy every 20th): the same critic arithmetic, its backup the minimum over all 10 rather
# than over a random 2 (a cheaper reduction, not fewer products: every critic still learns).
# All with alpha learned, batch 256, updates in blocks after every 50 steps.
FAMILY = {
    "tqc": dict(learning_rate=3e-4, top_quantiles_to_drop_per_net=2,
                policy_kwargs=dict(n_critics=2, n_quantiles=25)),
    "crossq": dict(learning_rate=1e-3, policy_kwargs=dict(net_arch=dict(
        pi=[256, 256], qf=[args.critic_width] * 2))),
    "droq": dict(learning_rate=3e-4, gradient_steps=1000, policy_delay=20,
                 policy_kwargs=dict(dropout_rate=0.01, layer_norm=True)),
    "redq": dict(learning_rate=3e-4, gradient_steps=1000, policy_delay=20,
                 policy_kwargs=dict(n_critics=10)),
}
settings = dict(learning_rate=1e-3, batch_size=batch_size, tau=0.005, gradient_steps=50,
                ent_coef=0.2)
if args.algo != "sac":
    family = dict(FAMILY[args.algo])
    policy_kwargs = {**dict(net_arch=[256, 256], activation_fn=activation),
                     **family.pop("policy_kwargs")}
    settings.update(batch_size=256, ent_coef="auto", **family)
    if args.algo == "crossq":
        del settings["tau"]  # no target networks
model = TimedSAC(policy, env, buffer_size=buffer_size, learning_starts=args.start, gamma=0.99,
                 train_freq=50, seed=0, device="cpu", verbose=0, policy_kwargs=policy_kwargs,
                 **settings)
model.train_calls = []
clock = LoopClock()
model.learn(total_timesteps=args.total, callback=clock)

measured = [(n, dt) for step, n, dt in model.train_calls if step >= args.measure_from]
print(json.dumps(dict(
    impl=args.impl, env=args.env, algo=args.algo, **versions,
    **(dict(critic_width=args.critic_width) if args.algo == "crossq" else {}),
    **(dict(pixels=True, encoder=args.encoder, batch_size=batch_size) if args.pixels else {}),
    updates_per_s=sum(n for n, _ in measured) / sum(dt for _, dt in measured),
    env_steps_per_s=(args.total - args.measure_from)
    / (clock.marks[args.total] - clock.marks[args.measure_from]),
    first_train_s=model.train_calls[0][2],
    median_train_s=statistics.median(dt for _, dt in measured))))
