"""SAC's parts: replay buffer, target networks, polyak averaging, the fused
update block against single updates, argument checks."""

import os

import gymnasium as gym
import numpy as np
import pytest
from helpers import actor_critics, pendulum

from spinup_tf2.algos.sac import fast_path
from spinup_tf2.algos.sac import sac as sac_mod
from spinup_tf2.checks import check_sac_args
from spinup_tf2.envs.spaces import check_spaces
from spinup_tf2.errors import SpinupError

tf = sac_mod.tf


def test_buffer_wraps_around_fifo():
    buf = sac_mod.ReplayBuffer(obs_dim=2, act_dim=1, size=5)
    for i in range(7):
        buf.store(np.full(2, i), np.full(1, -i), float(i), np.full(2, i + 1), i % 2)
    assert buf.size == 5 and buf.ptr == 2
    # The two oldest (0, 1) were overwritten by 5, 6 in slots 0, 1.
    np.testing.assert_array_equal(buf.rew_buf, [5, 6, 2, 3, 4])
    np.testing.assert_array_equal(buf.obs2_buf[:, 0], [6, 7, 3, 4, 5])
    np.testing.assert_array_equal(buf.done_buf, [1, 0, 0, 1, 0])
    assert buf.obs_buf.dtype == np.float32


def test_buffer_samples_uniformly_from_filled_part_only():
    buf = sac_mod.ReplayBuffer(obs_dim=1, act_dim=1, size=100)
    for i in range(10):
        buf.store([i], [i], i, [i + 1], False)
    rng = np.random.default_rng(0)
    batch = buf.sample_batch(5000, rng)
    assert set(batch) == {"obs", "act", "rew", "obs2", "done", "steps"}
    assert (batch["steps"] == 1).all()  # one-step transitions
    assert batch["obs"].shape == (5000, 1) and batch["rew"].shape == (5000,)
    counts = np.bincount(batch["rew"].astype(int), minlength=10)
    assert counts.min() > 400  # each of the 10 about 500 times, nothing from the empty part
    np.testing.assert_array_equal(batch["obs2"][:, 0], batch["obs"][:, 0] + 1)  # rows stay whole
    blocks = buf.sample_batch(7, rng, n_batches=3)
    assert blocks["obs"].shape == (3, 7, 1) and blocks["done"].shape == (3, 7)


def _setup(seed=0, lr=1e-3):
    ac, ac_targ = actor_critics(seed)
    pi_opt, q_opt = sac_mod.make_optimizers(ac, lr)
    return ac, ac_targ, pi_opt, q_opt


def _batches(n, batch=16, seed=0):
    rng = np.random.default_rng(seed)
    f = np.float32
    return (rng.normal(size=(n, batch, 3)).astype(f), rng.uniform(-2, 2, (n, batch, 1)).astype(f),
            rng.normal(size=(n, batch)).astype(f), rng.normal(size=(n, batch, 3)).astype(f),
            (rng.uniform(size=(n, batch)) < 0.1).astype(f),
            rng.normal(size=(n, 2 * batch, 1)).astype(f))


def _values(vs):
    return [v.numpy() for v in vs]


def test_targets_start_equal_to_main_networks_and_are_separate():
    ac, ac_targ, _, _ = _setup()
    main, targ = ac.trainable_variables, ac_targ.trainable_variables
    assert len(main) == len(targ) == 20  # pi: 2 hidden + mu + log_std layers; q1, q2: 3 each
    for v, vt in zip(main, targ):
        np.testing.assert_array_equal(np.array(v), vt.numpy())
        assert v is not vt
    main[0].assign(main[0] + 1.0)
    assert not np.allclose(main[0].numpy(), targ[0].numpy())


def test_one_update_moves_targets_by_polyak():
    ac, ac_targ, pi_opt, q_opt = _setup()
    polyak = 0.9
    update = tf.function(sac_mod.make_update(ac, ac_targ, pi_opt, q_opt, alpha=0.2,
                                             polyak=polyak))
    targ_before = _values(ac_targ.q1.trainable_variables + ac_targ.q2.trainable_variables)
    targ_pi_before = _values(ac_targ.pi.trainable_variables)
    main_before = _values(ac.trainable_variables)
    info = update(*(x[0] for x in _batches(1)))
    main_after = _values(ac.q1.trainable_variables + ac.q2.trainable_variables)
    targ_after = ac_targ.q1.trainable_variables + ac_targ.q2.trainable_variables
    for tb, ma, vt in zip(targ_before, main_after, targ_after):
        np.testing.assert_allclose(vt.numpy(), polyak * tb + (1 - polyak) * ma, rtol=1e-5,
                                   atol=1e-7)
    # The target policy, which SAC never reads, is not averaged.
    for before, v in zip(targ_pi_before, ac_targ.pi.trainable_variables):
        np.testing.assert_array_equal(v.numpy(), before)
    # Every main variable (pi and both Qs) took a step.
    assert all(not np.allclose(a, b) for a, b in zip(main_before,
                                                     _values(ac.trainable_variables)))
    assert set(info) == set(sac_mod.logged_keys(2)) == {"LossPi", "LossQ1", "LossQ2", "Q1Vals",
                                                    "Q2Vals", "LogPi"}
    assert info["Q1Vals"].shape == (16,) and info["LogPi"].shape == (16,)
    assert info["LossPi"].shape == ()


@pytest.mark.parametrize("jit_compile", [True, False])
def test_fused_block_equals_single_compiled_updates(jit_compile):
    """K updates in one compiled block give what K separate compiled updates give,
    from the same weights, optimiser state and minibatches."""
    k = 5
    data = _batches(k, seed=1)
    runs = []
    for fused in (True, False):
        ac, ac_targ, pi_opt, q_opt = _setup(seed=3)
        update = sac_mod.make_update(ac, ac_targ, pi_opt, q_opt, alpha=0.2,
                                     polyak=0.995)
        if fused:
            info = fast_path.make_update_block(update, jit_compile=jit_compile)(*data)
            losses = np.array(info["LossQ1"])
        else:
            single = tf.function(update)
            losses = np.array([single(*(x[j] for x in data))["LossQ1"] for j in range(k)])
        state = (_values(ac.trainable_variables) + _values(ac_targ.trainable_variables)
                 + _values(pi_opt.variables) + _values(q_opt.variables))
        runs.append((state, losses))
    (state_a, loss_a), (state_b, loss_b) = runs
    assert len(state_a) == len(state_b) > 36
    for a, b in zip(state_a, state_b):
        np.testing.assert_allclose(a, b, rtol=2e-4, atol=2e-6)
    np.testing.assert_allclose(loss_a, loss_b, rtol=2e-4, atol=1e-6)
    assert not np.allclose(loss_a[0], loss_a[-1])  # the updates did change something


GOOD = dict(steps_per_epoch=4000, epochs=100, replay_size=int(1e6), gamma=0.99, polyak=0.995,
            lr=1e-3, alpha=0.2, batch_size=100, start_steps=10000, update_after=1000,
            update_every=50, num_test_episodes=10, max_ep_len=1000, save_freq=1, seed=0,
            ac_kwargs=dict())


@pytest.mark.parametrize("name,value,words", [
    ("update_every", 0, "update_every=0"), ("batch_size", -1, "batch_size=-1"),
    ("epochs", 0, "epochs=0"), ("polyak", 1.5, "[0, 1]"), ("gamma", -0.1, "gamma=-0.1"),
    ("lr", 0, "lr=0"), ("epochs", 2.5, "whole number"), ("alpha", "fast", "alpha='fast'"),
    ("seed", -1, "seed=-1"), ("seed", 1.5, "seed=1.5"),
])
def test_bad_arguments_are_named(name, value, words):
    with pytest.raises(SpinupError) as err:
        check_sac_args({**GOOD, name: value})
    assert words in str(err.value) and name in str(err.value)


def test_good_arguments_pass_and_give_alpha_as_sac_reads_it():
    """Good arguments pass, and the check returns alpha as sac() uses it: a fixed alpha and
    no tuner, or the initial alpha and the tuner's (initial alpha, target entropy)."""
    assert check_sac_args(GOOD) == (0.2, None)
    assert check_sac_args({**GOOD, "steps_per_epoch": 1001, "update_after": 1000}) == (0.2, None)
    assert check_sac_args({**GOOD, "alpha": "auto"}) == (1.0, (1.0, None))
    assert check_sac_args({**GOOD, "alpha": "auto_0.1", "target_entropy": -3}) == (
        0.1, (0.1, -3.0))


def test_bad_spaces_rejected_before_any_output(tmp_path):
    out = tmp_path / "run"
    cases = [
        (_MultiDiscretePendulum, "Box) or a Discrete action space"),
        (_ImageObsPendulum, "1-D"),
        # the box2d extra is not installed: gymnasium's DependencyNotInstalled, as a message
        (lambda: gym.make("LunarLanderContinuous-v3"), 'pip install "gymnasium[box2d]"'),
    ]
    for env_fn, words in cases:
        with pytest.raises(SpinupError, match=None) as err:
            sac_mod.sac(env_fn, logger_kwargs=dict(output_dir=str(out)))
        assert words in str(err.value)
        assert not out.exists()


@pytest.mark.parametrize("kwargs,words", [
    (dict(seed=2**32), "seed=4294967296"),
    (dict(replay_size=10**13), "replay_size=10000000000000"),
    (dict(ac_kwargs=dict(hidden_sizes=(10**7, 10**7))), "do not fit in memory"),
    (dict(actor_critic=lambda *a, **k: None), "returned None"),
    (dict(env_fn=lambda: None), "env_fn returned None"),
    (dict(env_fn=lambda: gym.make("Pendulum-v1", render_mode="human")), "render_mode='human'"),
    (dict(logger_kwargs=dict(output_fname="../progress.txt")), "'../progress.txt'"),
    (dict(logger_kwargs=dict(exp_name=5)), "exp_name must be a string"),
    (dict(logger_kwargs=dict(tensorboard="yes")), "'yes'"),
    (dict(logger_kwargs=dict(outptu_dir="x")), "'outptu_dir' is not a logger setting"),
])
def test_arguments_that_would_fail_later_are_refused_before_any_output(tmp_path, kwargs, words):
    """Values check_sac_args let through that Keras, numpy or the Logger refused after
    config.json was written (or, for output_fname, wrote outside the run directory)."""
    out = tmp_path / "run"
    kwargs = dict(kwargs)
    logger_kwargs = dict(output_dir=str(out), **kwargs.pop("logger_kwargs", {}))
    env_fn = kwargs.pop("env_fn", pendulum)
    with pytest.raises(SpinupError) as err:
        sac_mod.sac(env_fn, logger_kwargs=logger_kwargs, **kwargs)
    assert words in str(err.value)
    assert not out.exists() and os.listdir(tmp_path) == []


def test_per_dimension_bounds_rejected():
    from gymnasium import spaces
    with pytest.raises(SpinupError, match="same"):
        check_spaces(spaces.Box(-1, 1, (3,)),
                             spaces.Box(np.array([-1, -2]), np.array([1, 2]), dtype=np.float32))


class _ImageObsPendulum(gym.ObservationWrapper):
    """Pendulum whose observation is a 2-D array: something SAC's MLPs can't take."""

    def __init__(self):
        super().__init__(gym.make("Pendulum-v1"))
        self.observation_space = gym.spaces.Box(-np.inf, np.inf, (3, 1), np.float32)

    def observation(self, obs):
        return obs.reshape(3, 1)


class _MultiDiscretePendulum(gym.ActionWrapper):
    """Pendulum driven by a MultiDiscrete action: a space SAC does not take."""

    def __init__(self):
        super().__init__(gym.make("Pendulum-v1"))
        self.action_space = gym.spaces.MultiDiscrete([3, 3])

    def action(self, act):
        return np.array([act[0] - 1.0], dtype=np.float32)


def test_continuous_losses_match_numpy():
    """The Bellman backup and both losses against a direct numpy computation on fixed inputs."""
    ac, ac_targ, _, _ = _setup(seed=4)
    o, a, r, o2, d, noise = (x[0] for x in _batches(1, batch=6, seed=5))
    d[2] = 1.0
    alpha, gamma = 0.2, 0.99
    out = sac_mod.continuous_losses(ac, ac_targ, o, a, r, o2, gamma * (1 - d), noise, alpha)
    (loss_q1, loss_q2), (q1, q2), loss_pi, logp = out.loss_q, out.q, out.loss_pi, out.logp_pi
    pi, logp_pi = (x.numpy() for x in ac.pi(o, noise=noise[:6]))
    pi2, logp_pi2 = (x.numpy() for x in ac.pi(o2, noise=noise[6:]))
    q1_a, q2_a = ac.q1(o, a).numpy(), ac.q2(o, a).numpy()
    min_q_pi = np.minimum(ac.q1(o, pi).numpy(), ac.q2(o, pi).numpy())
    min_q_targ = np.minimum(ac_targ.q1(o2, pi2).numpy(), ac_targ.q2(o2, pi2).numpy())
    backup = r + gamma * (1 - d) * (min_q_targ - alpha * logp_pi2)
    np.testing.assert_allclose(q1.numpy(), q1_a, rtol=1e-6)
    np.testing.assert_allclose(q2.numpy(), q2_a, rtol=1e-6)
    np.testing.assert_allclose(logp.numpy(), logp_pi, rtol=1e-6)
    np.testing.assert_allclose(loss_q1.numpy(), 0.5 * np.mean((q1_a - backup) ** 2), rtol=1e-5)
    np.testing.assert_allclose(loss_q2.numpy(), 0.5 * np.mean((q2_a - backup) ** 2), rtol=1e-5)
    np.testing.assert_allclose(loss_pi.numpy(), np.mean(alpha * logp_pi - min_q_pi), rtol=1e-5)


def test_updates_per_step_multiplies_the_updates_of_each_block(tmp_path):
    """updates_per_step=k runs k * update_every updates after every update_every steps:
    the policy optimizer's iteration count in the checkpoint says how many ran."""
    import numpy as np
    from helpers import TINY

    counts = {}
    for k in (1, 3):
        out = tmp_path / f"k{k}"
        sac_mod.sac(pendulum, **dict(TINY, epochs=1),
                    updates_per_step=k, logger_kwargs=dict(output_dir=str(out)))
        with np.load(out / "train_state" / "arrays.npz") as arrays:
            # The policy optimizer's beta_2 ** t (fast_path's Adam; beta_2 = 0.999) gives t.
            beta_2_power = arrays["var:pi_optimizer/beta_2_power"]
            counts[k] = round(float(np.log(beta_2_power) / np.log(0.999)))
    # 400 steps, blocks at t = 100, 150, ..., 350: 6 blocks of 50 updates each.
    assert counts == {1: 300, 3: 900}
    with pytest.raises(SpinupError, match="updates_per_step=0"):
        check_sac_args({**GOOD, "updates_per_step": 0})


def _epoch(q_means, logp=(-2.0, 5.0), alpha=None):
    """An epoch's stored diagnostics: two updates of 4 samples per critic, around q_means."""
    d = {f"Q{i}Vals": [np.full((2, 4), q) + np.array([-1.0, 1.0])[:, None]]
         for i, q in enumerate(q_means, 1)}
    d["LogPi"] = [np.linspace(*logp, 8).reshape(2, 4)]
    if alpha is not None:
        d["Alpha"] = [np.array([alpha, alpha * 0.9])]
    return d


def test_q_runaway_names_critics_beyond_what_the_rewards_allow():
    from spinup_tf2.training.watches import q_runaway

    rewards = np.array([-1.0, 0.5, 3.8], np.float32)  # Hopper-like
    # REDQ's diverged Hopper run at step 4,000: mean Q 2.5 million, alpha 1.7, log pi to 60
    msg = q_runaway(_epoch([2.49e6, 2.5e6], logp=(-3.0, 60.0), alpha=1.72), rewards, 0.99)
    assert msg is not None and "Q2Vals is 2.5e+06" in msg and "[-1, 3.8]" in msg
    assert "gamma 0.99" in msg and "alpha up to 1.72" in msg and "updates_per_step" in msg
    # A healthy SAC epoch (fixed alpha 0.2): Q near 300 is within [L, U] = [-200, 420]
    assert q_runaway(_epoch([300.0, 310.0]), rewards, 0.99, alpha=0.2) is None
    # Beyond U but within its slack (U - L = 620): noise, not divergence
    assert q_runaway(_epoch([1000.0, 900.0]), rewards, 0.99, alpha=0.2) is None
    # Beyond U + slack (1,040): reported, whichever critic is farthest
    assert "Q1Vals is 2500" in q_runaway(_epoch([2500.0, 10.0]), rewards, 0.99, alpha=0.2)
    # Far below L - slack (Pendulum-like rewards, fixed alpha): reported too
    pend = np.array([-16.3, -0.01], np.float32)
    assert q_runaway(_epoch([-300.0, -310.0]), pend, 0.99, alpha=0.2) is None
    assert "-1e+05" in q_runaway(_epoch([-1e5, -1e5]), pend, 0.99, alpha=0.2)


def test_q_runaway_stays_quiet_without_what_it_needs():
    from spinup_tf2.algos.sac.buffers import ReplayBuffer
    from spinup_tf2.training.watches import q_runaway, stored_rewards

    rewards = np.array([0.0, 1.0], np.float32)
    huge = _epoch([1e9, 1e9], alpha=1.0)
    assert q_runaway(huge, rewards, 0.99) is not None
    assert q_runaway({}, rewards, 0.99) is None  # an epoch without updates
    assert q_runaway(huge, None, 0.99) is None  # a buffer that does not show its rewards
    assert q_runaway(huge, rewards, 1.0) is None  # no discount, no bound
    assert q_runaway(_epoch([1e9, 1e9]), rewards, 0.99) is None  # learned alpha, none logged
    # A sparse task before its first success: every reward 0, so L = U = 0 with alpha 0; a
    # fresh critic's values are not divergence (one reward unit a step of slack: 100)
    zeros = np.zeros(50, np.float32)
    assert q_runaway(_epoch([0.7, -0.4]), zeros, 0.99, alpha=0.0) is None
    assert q_runaway(_epoch([150.0, 0.0]), zeros, 0.99, alpha=0.0) is not None
    buf = ReplayBuffer(3, 1, 10)
    assert stored_rewards(buf).size == 0
    buf.store(np.zeros(3), np.zeros(1), 2.5, np.zeros(3), 0.0)
    np.testing.assert_array_equal(stored_rewards(buf), [2.5])
    assert stored_rewards(object()) is None
