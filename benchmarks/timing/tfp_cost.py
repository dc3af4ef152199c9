"""What TensorFlow Probability would cost in the policy's log-probability.

    python benchmarks/timing/tfp_cost.py [--env HalfCheetah-v5] [--blocks 30] [--rounds 3]

The squashed Gaussian's log-probability written with TFP, as the design first
planned: ``tfd.Normal(mu, std).log_prob(u)`` for the Gaussian and
``tfb.Tanh().forward_log_det_jacobian(u)`` for the squashing, against the
hand-written form ``sac()`` uses (the density written in terms of the noise,
and the same stable ``log(1 - tanh(u)^2)``). Both run as the real fused block
of 50 updates, Spinning Up's networks and batch; the script prints the median
microseconds per update of each over alternating rounds, their ratio, and how
far the two log-probabilities are apart (they are the same function, computed
in a different order, so they agree to float32 rounding, not bit for bit).

Needs ``pip install tensorflow-probability tf-keras`` (not dependencies of
spinup_tf2; see docs/design.md, "Why no TensorFlow Probability").
"""

from __future__ import annotations

import argparse
import os
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import gymnasium as gym  # noqa: E402
import keras  # noqa: E402
import numpy as np  # noqa: E402
from floor import random_block  # noqa: E402  (benchmarks/timing/floor.py)

from spinup_tf2.algos.sac import core, fast_path  # noqa: E402
from spinup_tf2.algos.sac import sac as sac_mod  # noqa: E402

tf = core.tf
N_BLOCK, BATCH = 50, 100


class TFPSquashedGaussianMLPActor(core.SquashedGaussianMLPActor):
    """The same actor with its log-probability computed by TFP."""

    def call(self, obs, deterministic=False, with_logprob=True, noise=None):
        import tensorflow_probability as tfp

        net_out = self.net(self.prepare_obs(obs))
        mu = self.mu_layer(net_out)
        log_std = tf.clip_by_value(self.log_std_layer(net_out), core.LOG_STD_MIN,
                                   core.LOG_STD_MAX)
        std = tf.exp(log_std)
        noise = tf.random.normal(tf.shape(mu)) if noise is None else noise
        u = mu if deterministic else mu + std * noise
        logp_pi = None
        if with_logprob:
            logp_pi = (tf.reduce_sum(tfp.distributions.Normal(mu, std).log_prob(u), axis=-1)
                       - tfp.bijectors.Tanh().forward_log_det_jacobian(u, event_ndims=1))
        return self.act_limit * tf.tanh(u), logp_pi


class TFPActorCritic(core.MLPActorCritic):
    """:class:`core.MLPActorCritic` with the TFP actor."""

    def __init__(self, observation_space, action_space, **kwargs):
        super().__init__(observation_space, action_space, **kwargs)
        self.pi = TFPSquashedGaussianMLPActor(
            observation_space.shape[0], action_space.shape[0], (256, 256), tf.nn.relu,
            float(action_space.high[0]), None, name="pi")


def make_block(actor_critic, env):
    keras.utils.set_random_seed(0)
    ac, ac_targ = sac_mod.build_actor_critics(actor_critic, env.observation_space,
                                              env.action_space, {})
    pi_opt, q_opt = sac_mod.make_optimizers(ac, 1e-3)
    update = sac_mod.make_update(ac, ac_targ, pi_opt, q_opt, 0.2, 0.995)
    return ac, fast_path.make_update_block(update)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--env", default="HalfCheetah-v5")
    p.add_argument("--blocks", type=int, default=30)
    p.add_argument("--rounds", type=int, default=3)
    a = p.parse_args()
    import importlib.util

    if importlib.util.find_spec("tensorflow_probability") is None:
        print("tfp_cost.py times TensorFlow Probability's distributions against ours, and "
              "TFP is not installed: pip install tensorflow-probability tf-keras")
        return 2
    env = gym.make(a.env)
    data = random_block(env, BATCH)
    impls = {"hand-written": make_block(core.MLPActorCritic, env),
             "tfp": make_block(TFPActorCritic, env)}

    obs, noise = data[0][0], data[5][0][:BATCH]
    _, lp_hand = impls["hand-written"][0].pi(obs, noise=noise)
    tfp_ac = impls["tfp"][0]
    for v, w in zip(tfp_ac.pi.trainable_variables, impls["hand-written"][0].pi.trainable_variables):
        v.assign(w)
    _, lp_tfp = tfp_ac.pi(obs, noise=noise)
    print(f"log-probability, largest difference: {np.max(np.abs(lp_hand - lp_tfp)):.3g} "
          f"(values around {np.mean(np.abs(lp_hand)):.3g})")

    times = {name: [] for name in impls}
    for name, (_, block) in impls.items():
        block(*data)  # compile
    for _ in range(a.rounds):
        for name, (_, block) in impls.items():
            for _ in range(a.blocks):
                t = time.perf_counter()
                out = block(*data)
                out["LossPi"].numpy()
                times[name].append((time.perf_counter() - t) / N_BLOCK * 1e6)
    med = {name: float(np.median(ts)) for name, ts in times.items()}
    for name, us in med.items():
        print(f"{name:14} {us:8.1f} us per update (median of {len(times[name])} blocks)")
    print(f"tfp / hand-written = {med['tfp'] / med['hand-written']:.3f}")


if __name__ == "__main__":
    sys.exit(main())
