"""REDQ (``actor_critic='redq'``, ``redq()``): the backup takes the minimum over exactly the
drawn subset of target critics, the policy the ensemble's mean; the variant through the
real sac(): the policy stepped once per 20 critic updates, resume exact (the subsets come
from the checkpointed generator), ten critics exported, bad settings refused."""
import json
import os

import gymnasium as gym
import keras
import numpy as np
import pytest
import tensorflow as tf
from helpers import TINY, pendulum, run_tiny, straight_and_resumed

from spinup_tf2.algos.sac import redq
from spinup_tf2.algos.sac.variants import VARIANTS
from spinup_tf2.errors import SpinupError
from spinup_tf2.family import EACH_STEP, MEMBERS

SMALL = dict(hidden_sizes=(16, 16), n_critics=5, subset_size=2)


def _ensemble(**kwargs):
    env = gym.make("Pendulum-v1")
    return (redq.REDQActorCritic(env.observation_space, env.action_space, **kwargs),
            redq.REDQActorCritic(env.observation_space, env.action_space, **kwargs))


def test_the_backup_is_the_minimum_of_the_drawn_target_critics_and_the_policy_the_mean():
    keras.utils.set_random_seed(0)
    ac, ac_targ = _ensemble(**SMALL)  # the targets differ from the critics, and each other
    rng = np.random.default_rng(0)
    b = 32
    o, a = rng.standard_normal((b, 3), np.float32), rng.uniform(-2, 2, (b, 1)).astype(np.float32)
    r, o2 = rng.standard_normal(b).astype(np.float32), rng.standard_normal((b, 3), np.float32)
    d = (rng.random(b) < 0.2).astype(np.float32)
    noise = rng.standard_normal((2 * b, 1), np.float32)
    alpha, gamma = 0.2, 0.99
    pi_next, logp_next = ac.pi(o2, noise=noise[b:])
    targ = [q(o2, pi_next).numpy() for q in ac_targ.critics]
    pi, logp = ac.pi(o, noise=noise[:b])
    for subset in ([3, 1], [0, 4], [2, 0]):
        out = redq.redq_losses(ac, ac_targ, o, a, r, o2, gamma * (1 - d), noise, alpha,
                               tf.constant(subset, tf.int32))
        backup = r + gamma * (1 - d) * (np.minimum(targ[subset[0]], targ[subset[1]])
                                        - alpha * logp_next.numpy())
        for qi, loss in zip(ac.critics, out.loss_q):
            expected = 0.5 * np.mean((qi(o, a).numpy() - backup) ** 2)
            np.testing.assert_allclose(loss.numpy(), expected, rtol=1e-5)
    q_mean = np.mean([qi(o, pi).numpy() for qi in ac.critics], axis=0)
    np.testing.assert_allclose(out.loss_pi.numpy(), np.mean(alpha * logp.numpy() - q_mean),
                               rtol=1e-5)
    critic_only = redq.redq_losses(ac, ac_targ, o, a, r, o2, gamma * (1 - d), noise, alpha,
                                   tf.constant([2, 0], tf.int32), policy=False)
    assert critic_only.loss_pi is None and critic_only.logp_pi is None
    np.testing.assert_allclose([x.numpy() for x in critic_only.loss_q],
                               [x.numpy() for x in out.loss_q])


def test_subsets_are_distinct_critics_drawn_anew_for_each_update():
    ac, _ = _ensemble(hidden_sizes=(8,), n_critics=10, subset_size=2)
    draws = redq.subset_draws(np.random.default_rng(0), ac, 2000, 256)
    assert draws.shape == (2000, 2) and draws.dtype == np.int32
    assert (draws[:, 0] != draws[:, 1]).all() and draws.min() == 0 and draws.max() == 9
    # every critic is drawn about equally often (2000 * 2 / 10 = 400 each)
    assert np.all(np.abs(np.bincount(draws.ravel(), minlength=10) - 400) < 80)
    assert VARIANTS["redq"].policy_delay == EACH_STEP and VARIANTS["redq"].targets


def test_redq_trains_through_sac_resumes_exactly_and_exports_every_critic(tmp_path):
    (header, r), resumed = straight_and_resumed(tmp_path, actor_critic="redq", ac_kwargs=SMALL,
                                                alpha="auto", updates_per_step=2)
    assert resumed == (header, r) and len(r) == 2
    assert {"AverageQ5Vals", "LossQ5", "Alpha"} <= set(header) and "LossQ6" not in header
    straight = str(tmp_path / "straight")
    with np.load(os.path.join(straight, "train_state", "arrays.npz")) as arrays:
        assert {"var:ac_targ/q5/q/1/kernel", "var:ac/q1/q/1/kernel"} <= set(arrays.files)
    saved = tf.saved_model.load(os.path.join(straight, "tf2_save"))
    assert {f"q{i}" for i in range(1, 6)} <= set(saved.signatures)


@pytest.mark.slow  # REDQ trains through sac() in the default run too, on small settings
def test_redq_runs_with_its_own_defaults(tmp_path):
    from spinup_tf2 import redq as redq_fn

    out = tmp_path / "run"
    redq_fn(pendulum, epochs=1, steps_per_epoch=300, start_steps=200,
            update_after=250, update_every=50, num_test_episodes=1, replay_size=1000,
            ac_kwargs=dict(hidden_sizes=(16, 16)), logger_kwargs=dict(output_dir=str(out)))
    config = json.loads((out / "config.json").read_text())
    assert (config["actor_critic"], config["batch_size"], config["alpha"], config["lr"],
            config["updates_per_step"]) == ("REDQActorCritic", 256, "auto", 3e-4, 20)
    assert "AverageQ10Vals" in (out / "progress.txt").read_text().splitlines()[0]


def test_redq_updates_start_with_its_policy_as_in_its_code():
    """REDQ's code updates from its 5,000th transition, when its policy starts to act; from
    SAC's 1,000 its Hopper-v5 critics ran away (mean Q 2.5 million by step 4,000:
    data/benchmarks/redq-update1000-hopper-v5)."""
    import inspect

    from spinup_tf2 import redq as redq_fn

    params = inspect.signature(redq_fn).parameters
    assert params["update_after"].default == params["start_steps"].default == 5000


@pytest.mark.parametrize("ac_kwargs,words", [
    (dict(n_critics=0), "n_critics=0"), (dict(subset_size=2.5), "subset_size=2.5"),
    (dict(n_critics=3, subset_size=4), "subset_size=4 with n_critics=3")])
def test_bad_redq_settings_are_refused_before_anything_is_written(tmp_path, ac_kwargs, words):
    with pytest.raises(SpinupError, match=words):
        run_tiny(tmp_path / "run", actor_critic="redq", ac_kwargs=ac_kwargs)
    assert not (tmp_path / "run" / "progress.txt").exists()


def test_redq_refuses_discrete_actions(tmp_path):
    from spinup_tf2 import sac

    with pytest.raises(SpinupError, match="a Discrete action space with REDQ"):
        sac(lambda: gym.make("CartPole-v1"), actor_critic="redq", **TINY,
            logger_kwargs=dict(output_dir=str(tmp_path / "run")))


@pytest.mark.parametrize("name", list(MEMBERS))
def test_each_family_functions_own_defaults_pass_the_checks(name):
    """What `python -m spinup_tf2.run NAME --env ...` runs with: the function's defaults
    (a REDQ with updates from step 5,000 was refused: epoch 1 would log no losses)."""
    import inspect

    import spinup_tf2
    from spinup_tf2.checks import check_sac_args

    params = inspect.signature(getattr(spinup_tf2, name)).parameters
    check_sac_args({k: p.default for k, p in params.items() if k != "env_fn"})
