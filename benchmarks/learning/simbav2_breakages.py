"""Does SimbaV2's learning test catch a broken SimbaV2? Run the test
(``tests/test_learning_family.py``) with one of its defining pieces broken and say whether it
failed, as it should.

    python benchmarks/learning/simbav2_breakages.py intact       # passes
    python benchmarks/learning/simbav2_breakages.py no_projection
    python benchmarks/learning/simbav2_breakages.py mean_critic

``no_projection``: the kernels are no longer projected back onto the unit sphere after each
step. ``mean_critic``: each critic is trained on its mean alone (squared error to SAC's
backup, the smaller target critic's mean), not on the distribution by cross-entropy.
About 2 minutes each on 2 cores.
"""

import argparse
import dataclasses
import pathlib
import sys
import tempfile

REPO = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests"))

BREAKAGES = ("intact", "no_projection", "mean_critic")


def mean_critic_losses(ac, ac_targ, o, a, r, o2, discount, noise, alpha, weights=None):
    """SimbaV2's networks with SAC's losses on the critics' means: what a distributional
    critic would be without its distribution."""
    import tensorflow as tf

    from spinup_tf2.algos.sac.losses import SACLosses, td_error

    batch = tf.shape(o)[0]
    pi, logp_pi = ac.pi(o, noise=noise[:batch])
    pi_next, logp_pi_next = ac.pi(o2, noise=noise[batch:2 * batch])
    q_next = tf.minimum(ac_targ.critic(0, o2, pi_next), ac_targ.critic(1, o2, pi_next))
    backup = tf.stop_gradient(r + discount * (q_next - alpha * logp_pi_next))
    q = tuple(ac.critic(i, o, a) for i in range(2))
    loss_q = tuple(tf.reduce_mean((qi - backup) ** 2) for qi in q)
    q_pi = tf.minimum(ac.critic(0, o, pi), ac.critic(1, o, pi))
    loss_pi = tf.reduce_mean(alpha * logp_pi - q_pi)
    return SACLosses(loss_pi, loss_q, q, logp_pi, td_error(q, backup))


def main(breakage: str) -> int:
    """Run the test with ``breakage``; 0 when the outcome is the expected one (the intact
    SimbaV2 passes, a broken one fails)."""
    from spinup_tf2.algos.sac import simbav2, variants

    if breakage == "no_projection":
        simbav2.UnitColumns.__call__ = lambda self, w: w
    elif breakage == "mean_critic":
        variants.VARIANTS["simbav2"] = dataclasses.replace(variants.VARIANTS["simbav2"],
                                                           losses=mean_critic_losses)
    import test_learning_family

    try:
        test_learning_family.test_simbav2_learns_pendulum_on_the_sphere_with_a_distributional_critic(
            pathlib.Path(tempfile.mkdtemp()))
    except AssertionError as err:
        print(f"{breakage}: the test FAILED ({str(err)[:200]})")
        return 0 if breakage != "intact" else 1
    print(f"{breakage}: the test passed")
    return 0 if breakage == "intact" else 1


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("breakage", choices=BREAKAGES)
    sys.exit(main(parser.parse_args().breakage))
