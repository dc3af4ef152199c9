"""Prioritized replay (issue 79): the sum tree and the buffer against brute-force numpy (the
leaf each draw lands in, the sampling distribution by a chi-square test, the importance
weights, beta's schedule, LAP's priorities), the weighted losses against their formulas,
exact resume (a straight run's progress.txt, and after kill -9), n-step returns, vector
environments and MPI, and what it refuses."""

import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
from helpers import HANG, TINY, cli, pendulum, rows, run_tiny, straight_and_resumed

from spinup_tf2.algos.sac.priority import PrioritizedReplayBuffer, SumTree
from spinup_tf2.errors import SpinupError


def filled(n=20, kind="per", alpha=0.6, beta=0.4, anneal=100, size=None, seed=0):
    """A buffer of ``n`` transitions (observation i is [i]) whose priorities were set from
    TD errors 0.1, 0.2, ..., n/10 by one update."""
    buf = PrioritizedReplayBuffer(1, 1, size or n, kind=kind, alpha=alpha, beta=beta,
                                  anneal_updates=anneal)
    for i in range(n):
        buf.store([i], [0.0], 0.0, [i + 1], 0.0)
    buf.sample_batch(n, np.random.default_rng(seed))  # draws something: then set every one
    buf.drawn = np.arange(n)
    buf.update_priorities(np.arange(1, n + 1) / 10)
    buf.draws = 0
    return buf


def test_each_draw_lands_in_the_leaf_a_cumulative_sum_names():
    rng = np.random.default_rng(0)
    for capacity in (1, 2, 5, 64, 1000):
        tree = SumTree(capacity)
        leaves = rng.integers(0, 5, capacity).astype(np.float64)  # zeros too: never found
        leaves[rng.integers(capacity)] = 3.0  # at least one non-zero leaf
        tree.set(np.arange(capacity), leaves)
        cums = np.cumsum(leaves)
        assert tree.total == cums[-1] and tree.min == leaves.min()
        # Integers are exact in float64: every boundary is hit, and each mass's leaf is
        # the one searchsorted finds.
        mass = np.concatenate([np.arange(0, cums[-1], 0.5), rng.random(500) * cums[-1]])
        np.testing.assert_array_equal(tree.find(mass), np.searchsorted(cums, mass, "right"))
        assert np.all(leaves[tree.find(mass)] > 0)


def test_the_tree_updated_piecewise_is_the_tree_rebuilt_from_its_leaves():
    rng = np.random.default_rng(1)
    tree = SumTree(300)
    tree.set(np.arange(300), rng.random(300))
    for _ in range(50):
        idx = np.unique(rng.integers(0, 300, 40))
        tree.set(idx, rng.random(idx.size) * 10)
    rebuilt = SumTree(300)
    rebuilt.set(np.arange(300), tree.leaves(300))
    np.testing.assert_array_equal(tree.sums, rebuilt.sums)
    np.testing.assert_array_equal(tree.mins, rebuilt.mins)
    # Every inner node is the sum of its leaves (to rounding), the root the total.
    assert np.isclose(tree.total, tree.leaves(300).sum(), rtol=1e-12)


def test_the_sampling_distribution_is_p_to_the_alpha_by_a_chi_square_test():
    from scipy.stats import chi2

    n, alpha, draws = 20, 0.6, 400_000
    buf = filled(n, alpha=alpha)
    p = (np.arange(1, n + 1) / 10 + buf.eps) ** alpha
    expected = p / p.sum() * draws
    idx = buf.tree.find(np.random.default_rng(2).random(draws) * buf.tree.total)
    counts = np.bincount(idx, minlength=n)
    stat = ((counts - expected) ** 2 / expected).sum()
    assert stat < chi2.ppf(0.999, n - 1), stat
    # The test can fail: the same counts are far from uniform, and from alpha = 1.
    for other in (np.ones(n), np.arange(1, n + 1) / 10):
        exp = other / other.sum() * draws
        assert ((counts - exp) ** 2 / exp).sum() > 100 * chi2.ppf(0.999, n - 1)
    # sample_batch draws the same way: its minibatches' observations are their indices.
    batch = buf.sample_batch(1000, np.random.default_rng(3), n_batches=200)
    counts = np.bincount(batch["obs"].reshape(-1).astype(int), minlength=n)
    expected = p / p.sum() * counts.sum()
    assert ((counts - expected) ** 2 / expected).sum() < chi2.ppf(0.999, n - 1)


def test_the_importance_weights_are_n_p_to_the_minus_beta_over_their_largest():
    n, alpha, beta = 20, 0.6, 0.4
    buf = filled(n, alpha=alpha, beta=beta, anneal=10)
    batch = buf.sample_batch(64, np.random.default_rng(4), n_batches=3)
    p = (np.arange(1, n + 1) / 10 + buf.eps) ** alpha
    prob = p / p.sum()
    w_all = (n * prob) ** -beta
    expect = w_all[batch["obs"][..., 0].astype(int)] / w_all.max()
    np.testing.assert_allclose(batch["weights"], expect, rtol=1e-6)
    assert batch["weights"].dtype == np.float32 and batch["weights"].max() <= 1.0
    # beta grows linearly to 1 over the anneal_updates minibatches, then stays.
    assert buf.draws == 3 and np.isclose(buf.beta(), beta + (1 - beta) * 3 / 10)
    buf.sample_batch(8, np.random.default_rng(5), n_batches=20)
    assert buf.beta() == 1.0


def test_priorities_follow_the_td_errors_and_new_transitions_come_first():
    buf = PrioritizedReplayBuffer(1, 1, 8, alpha=0.5)
    for i in range(4):
        buf.store([i], [0.0], 0.0, [i], 0.0)
    buf.sample_batch(2, np.random.default_rng(0), n_batches=3)
    buf.drawn = np.array([[0, 1], [0, 2], [3, 0]])  # 0 drawn three times: its last error
    buf.update_priorities(np.array([[5.0, -4.0], [7.0, 0.0], [np.nan, 9.0]]))
    leaves = buf.tree.leaves(4)
    eps = buf.eps
    np.testing.assert_allclose(leaves, [(9 + eps) ** 0.5, (4 + eps) ** 0.5, eps ** 0.5, 1.0])
    # 3's error was not finite: it kept its first priority (the largest then, 1).
    assert leaves[3] == 1.0
    buf.store([4], [0.0], 0.0, [4], 0.0)  # a new transition: the largest priority so far
    buf.sample_batch(1, np.random.default_rng(1))
    assert buf.tree.leaves(5)[4] == pytest.approx(3.0)
    lap = PrioritizedReplayBuffer(1, 1, 4, kind="lap")
    np.testing.assert_allclose(lap.priorities_of(np.array([0.1, -3.0])), [1.0, 3.0 ** 0.4])
    assert lap.alpha == 0.4
    for _ in range(3):
        lap.store([0], [0.0], 0.0, [0], 0.0)
    assert np.all(lap.sample_batch(5, np.random.default_rng(0))["weights"] == 1.0)


def test_a_restored_buffer_draws_what_the_first_would_have():
    buf = filled(30, size=40)
    buf.store([30], [0.0], 0.0, [31], 0.0)  # pending: written into the tree by the save
    state = {k: np.array(v) for k, v in buf.state_arrays().items()}
    twin = PrioritizedReplayBuffer(1, 1, 40, alpha=0.6, beta=0.4, anneal_updates=100)
    twin.load_state_arrays(state)
    a = buf.sample_batch(16, np.random.default_rng(7), n_batches=4)
    b = twin.sample_batch(16, np.random.default_rng(7), n_batches=4)
    for k in a:
        np.testing.assert_array_equal(a[k], b[k])
    np.testing.assert_array_equal(buf.tree.sums, twin.tree.sums)
    for bad, words in ((dict(per_leaves=state["per_leaves"][:-1]), "per_leaves"),
                       (dict(per_leaves=-state["per_leaves"]), "not finite and > 0"),
                       (dict(per_draws=np.array(-1)), "per_draws")):
        with pytest.raises(ValueError, match=words):
            PrioritizedReplayBuffer(1, 1, 40).load_state_arrays({**state, **bad})
    uniform = {k: v for k, v in state.items() if not k.startswith("per_")}
    with pytest.raises(ValueError, match="uniform replay"):
        PrioritizedReplayBuffer(1, 1, 40).load_state_arrays(uniform)


def test_the_weighted_and_huber_critic_losses_are_their_formulas():
    from spinup_tf2.algos.sac.losses import q_loss, td_error

    rng = np.random.default_rng(0)
    q, b, w = (rng.normal(size=64).astype(np.float32) * 2 for _ in range(3))
    w = np.abs(w)
    err = q - b
    assert np.isclose(float(q_loss(q, b)), 0.5 * np.mean(err ** 2), rtol=1e-6)
    assert np.isclose(float(q_loss(q, b, w)), 0.5 * np.mean(w * err ** 2), rtol=1e-6)
    huber = np.where(np.abs(err) <= 1, 0.5 * err ** 2, np.abs(err) - 0.5)
    assert np.isclose(float(q_loss(q, b, huber=True)), np.mean(huber), rtol=1e-6)
    q2 = q + 1.5
    np.testing.assert_allclose(td_error((q, q2), b), np.maximum(np.abs(q - b),
                                                                np.abs(q2 - b)), rtol=1e-6)


class Crash(RuntimeError):
    pass


def crashing_pendulum(after: int):
    """An ``env_fn`` of Pendulum-v1 that raises :class:`Crash` at its ``after``-th step
    (a simulator that dies mid-run; the training copy gets there first)."""
    import gymnasium as gym

    class Crashing(gym.Wrapper):
        steps = 0

        def step(self, action):
            self.steps += 1
            if self.steps == after:
                raise Crash("the simulator died")
            return self.env.step(action)

    return lambda: Crashing(pendulum())


@pytest.mark.parametrize("replay", ["per", "lap"])
def test_a_prioritized_run_that_crashed_resumes_as_the_straight_run(tmp_path, replay):
    # Beta anneals over the run's epochs: the crashed run is one of as many epochs as the
    # straight one, stopped in its second.
    kw = dict(replay=replay, n_step=3, epochs=2)
    straight = rows(run_tiny(tmp_path / "straight", **kw))
    with pytest.raises(Crash):
        run_tiny(tmp_path / "crashed", crashing_pendulum(after=600), **kw)
    assert len(rows(tmp_path / "crashed")[1]) == 1
    run_tiny(tmp_path / "crashed", crashing_pendulum(after=-1), resume=True, **kw)  # it lives
    assert rows(tmp_path / "crashed") == straight


def test_a_prioritized_run_given_more_epochs_anneals_beta_over_them(tmp_path):
    straight, resumed = straight_and_resumed(tmp_path, replay="per", priority_beta=1.0)
    assert straight == resumed  # beta 1 from the start: the length does not matter


def test_prioritized_replay_changes_the_run(tmp_path):
    uniform = rows(run_tiny(tmp_path / "uniform", epochs=2))
    per = rows(run_tiny(tmp_path / "per", epochs=2, replay="per"))
    alpha0 = rows(run_tiny(tmp_path / "alpha0", epochs=2, replay="per", priority_alpha=0.0,
                           priority_beta=1.0))
    assert uniform[1][-1]["LossQ1"] != per[1][-1]["LossQ1"]
    # alpha 0 draws uniformly, but with other random numbers than uniform replay's draw.
    assert alpha0[1][-1]["LossQ1"] != per[1][-1]["LossQ1"]


def test_prioritized_replay_with_vector_environments_and_n_step_returns(tmp_path):
    out = run_tiny(tmp_path / "run", epochs=1, replay="per", num_envs=4, n_step=3)
    assert rows(out)[1][0]["TotalEnvInteracts"] == "400"


@pytest.mark.parametrize("kwargs, words", [
    (dict(replay="ranked"), ["replay='ranked'", "'uniform', 'per', 'lap'"]),
    (dict(replay="per", priority_alpha=-1), ["priority_alpha=-1", "[0, 10]"]),
    (dict(replay="per", priority_beta=2.0), ["priority_beta=2.0", "[0, 1]"]),
    (dict(replay="lap", actor_critic="tqc"), ["replay='lap'", "distribution", "'per' works"]),
    (dict(replay="per", actor_critic="recurrent"), ["replay='per'", "windows"]),
])
def test_what_prioritized_replay_cannot_do_is_refused_before_anything_is_written(
        tmp_path, kwargs, words):
    from spinup_tf2 import sac

    out = tmp_path / "run"
    with pytest.raises(SpinupError) as err:
        sac(pendulum, **dict(TINY, epochs=1, **kwargs), logger_kwargs=dict(output_dir=str(out)))
    for w in words:
        assert w in str(err.value), (w, str(err.value))
    assert not out.exists()


def test_prioritized_replay_beside_a_buffer_of_ones_own_or_her_is_refused(tmp_path):
    from spinup_tf2 import sac
    from spinup_tf2.algos.sac.buffers import ReplayBuffer
    from spinup_tf2.envs import make_named

    with pytest.raises(SpinupError, match="replay_buffer_class of one's own"):
        sac(pendulum, **dict(TINY, epochs=1), replay="per", replay_buffer_class=ReplayBuffer,
            logger_kwargs=dict(output_dir=str(tmp_path / "a")))
    with pytest.raises(SpinupError, match="her=True"):
        sac(lambda: make_named("PointReach-v0"), **dict(TINY, epochs=1), replay="lap",
            her=True, logger_kwargs=dict(output_dir=str(tmp_path / "b")))
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()


@pytest.mark.processes
def test_the_command_line_takes_replay_and_lists_it(tmp_path):
    res = cli("sac", "--env", "Pendulum-v1", "--replay", "lap", "--epochs", "1",
              "--steps_per_epoch", "300", "--start_steps", "100", "--update_after", "100",
              "--num_test_episodes", "1", "--exp_name", "lap", "--data_dir", str(tmp_path))
    assert res.returncode == 0, res.stderr[-3000:]
    import json

    (run,) = [r for r, _, files in os.walk(tmp_path) if "config.json" in files]
    assert json.load(open(os.path.join(run, "config.json")))["replay"] == "lap"
    res = cli("sac", "--help")
    assert "--replay" in res.stdout and "'uniform'" in res.stdout
    assert "--priority_beta" in res.stdout


SCRIPT = """
import sys
import gymnasium as gym
from spinup_tf2 import sac
sac(lambda: gym.make("Pendulum-v1"), replay="per", n_step=2, epochs=4, steps_per_epoch=300,
    start_steps=100, update_after=100, batch_size=32, num_test_episodes=1,
    ac_kwargs=dict(hidden_sizes=(32, 32)), logger_kwargs=dict(output_dir=sys.argv[1]),
    resume=len(sys.argv) > 2)
"""


@pytest.mark.processes
@pytest.mark.slow
def test_a_prioritized_run_killed_with_sigkill_resumes_as_if_never_stopped(tmp_path):
    script = tmp_path / "run.py"
    script.write_text(SCRIPT)
    straight, killed = str(tmp_path / "straight"), str(tmp_path / "killed")
    res = subprocess.run([sys.executable, str(script), straight], capture_output=True,
                         text=True, timeout=HANG)
    assert res.returncode == 0, res.stderr[-3000:]
    proc = subprocess.Popen([sys.executable, str(script), killed],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    progress = os.path.join(killed, "progress.txt")
    deadline = time.time() + HANG  # a hang detector, not a speed limit
    while proc.poll() is None and time.time() < deadline:
        if os.path.exists(progress) and len(open(progress).read().splitlines()) >= 3:
            break
        time.sleep(0.01)
    assert proc.poll() is None, f"the run ended (exit {proc.returncode}) before the kill"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    res = subprocess.run([sys.executable, str(script), killed, "resume"], capture_output=True,
                         text=True, timeout=HANG)
    assert res.returncode == 0, res.stderr[-3000:]
    assert rows(straight) == rows(killed)


@pytest.mark.processes
@pytest.mark.slow
def test_two_mpi_ranks_each_prioritise_their_own_replay(tmp_path):
    res = cli("sac", "--env", "Pendulum-v1", "--exp_name", "mp", "--cpu", "2", "--replay",
              "per", "--data_dir", str(tmp_path), "--epochs", "2", "--steps_per_epoch", "800",
              "--start_steps", "400", "--update_after", "200", "--num_test_episodes", "2",
              "--hid", "[16]")
    assert res.returncode == 0, res.stderr[-3000:]
    run = tmp_path / "mp" / "mp_s0"
    header, table = rows(run)
    assert [r["TotalEnvInteracts"] for r in table] == ["800", "1600"]
    assert np.isfinite(float(table[-1]["LossQ1"]))
