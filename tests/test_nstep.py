"""n-step returns (``n_step``), transition by transition on a hand-made environment: each
stored transition is its n-step window, cut by its episode's end (a termination without
bootstrap, a time limit bootstrapped from the true last observation), never across two
episodes, with one environment and with vector copies; resume exact with windows open;
what cannot take n-step transitions refused."""

import numpy as np
import pytest
from helpers import pendulum, rows
from test_vector import TINY, Steps, buffer_of

from spinup_tf2 import sac
from spinup_tf2.algos.sac.buffers import ReplayBuffer, discount_of
from spinup_tf2.algos.sac.nstep import NStepReturns
from spinup_tf2.errors import SpinupError

GAMMA = 0.5  # powers of a half: the expected returns are exact in float32
MAX_EP_LEN = TINY["max_ep_len"]


def check_windows(buf, n, strict=True):
    """Every stored transition of Steps (observation (k, end), reward k after each step,
    terminated at k == end, cut at k == 4): within one episode, its reward the discounted
    sum of the rewards it spans, its done whether it ends in a termination, its steps those
    it spans. ``strict``: each spans exactly min(n, steps left in its episode)."""
    o, o2, r, d = buf["buf_obs"], buf["buf_obs2"], buf["buf_rew"], buf["buf_done"]
    k, end, steps = o[:, 0], o[:, 1], o2[:, 0] - o[:, 0]
    assert np.all(o2[:, 1] == end) and np.all(steps >= 1) and np.all(steps <= n)
    last = np.minimum(end, MAX_EP_LEN)  # the step the episode ends on
    if strict:
        np.testing.assert_array_equal(steps, np.minimum(n, last - k))
    assert np.all(o2[:, 0] <= last)  # no window runs past its episode's end
    expected = [sum(GAMMA ** j * (ki + 1 + j) for j in range(int(s))) for ki, s in zip(k, steps)]
    np.testing.assert_allclose(r, expected, rtol=1e-6)
    terminated = o2[:, 0] == end
    np.testing.assert_array_equal(d, terminated)
    np.testing.assert_array_equal(buf["buf_steps"], steps)
    return steps, terminated


@pytest.mark.parametrize("num_envs", [1, 3])
def test_every_stored_transition_is_its_n_step_window(tmp_path, num_envs):
    out = tmp_path / f"envs{num_envs}"
    sac(Steps, **TINY, num_envs=num_envs, n_step=3, gamma=GAMMA,
        logger_kwargs=dict(output_dir=str(out)))
    buf = buffer_of(out)
    steps, terminated = check_windows(buf, 3)
    # Full windows, windows cut by a termination, windows cut by the time limit: all seen.
    cut = steps < 3
    assert (steps == 3).any() and (cut & terminated).any() and (cut & ~terminated).any()
    with np.load(out / "train_state" / "arrays.npz") as arrays:
        open_windows = len(arrays["nstep_copy"])
    # Every step is stored once as a window's first, or waits in an open window (at most
    # n - 1 per copy).
    assert len(buf["buf_obs"]) + open_windows == 240 and open_windows <= 2 * num_envs


def test_the_writer_by_hand():
    """Rewards 1, 2, 4, 8 then a time limit at n=3: windows [1,2,4], [2,4,8], [4,8], [8];
    then 1, 2 and a termination: [1,2] and [2], done."""
    buf = ReplayBuffer(1, 1, 100)
    writer = NStepReturns(buf, n_step=3, gamma=GAMMA)
    for t, rew in enumerate([1, 2, 4, 8]):
        writer.store([t], [0], rew, [t + 1], 0.0)
    assert buf.size == 2  # two windows full so far
    writer.end_episode()
    for t, rew, done in [(10, 1, 0.0), (11, 2, 1.0)]:
        writer.store([t], [0], rew, [t + 1], done)
    writer.end_episode()  # nothing left open: the termination wrote them
    n = buf.size
    np.testing.assert_allclose(buf.rew_buf[:n], [1 + 1 + 1, 2 + 2 + 2, 4 + 4, 8, 1 + 1, 2])
    np.testing.assert_array_equal(buf.obs2_buf[:n, 0], [3, 4, 4, 4, 12, 12])
    np.testing.assert_array_equal(buf.done_buf[:n], [0, 0, 0, 0, 1, 1])  # terminations
    np.testing.assert_array_equal(buf.steps_buf[:n], [3, 3, 2, 1, 2, 1])
    # the backup's discount gamma ** k (1 - d): what the fractional done of 0.3 gave
    batch = dict(done=buf.done_buf[:n], steps=buf.steps_buf[:n])
    np.testing.assert_allclose(discount_of(batch, GAMMA),
                               GAMMA * (1 - np.array([0.75, 0.75, 0.5, 0, 1, 1])))


def test_a_buffer_of_ones_own_that_keeps_no_steps_is_refused_for_n_step_returns():
    class NoSteps:
        def store(self, obs, act, rew, next_obs, done):
            pass

    NStepReturns(NoSteps(), 1, GAMMA)  # one step needs none
    with pytest.raises(SpinupError, match=r"n_step=3 with the replay buffer NoSteps, whose "
                                          r"store\(\) takes no steps argument"):
        NStepReturns(NoSteps(), 3, GAMMA)


def test_open_windows_round_trip_through_a_buffer_of_ones_own():
    """A replay_buffer_class need not keep ReplayBuffer's arrays: the open windows of a
    checkpoint still load (checked against each other) and write what they would have."""

    class ListBuffer:
        def __init__(self):
            self.rows = []

        def store(self, *transition, steps=1):
            self.rows.append((*transition, steps))

        def state_arrays(self):
            return {}

        def load_state_arrays(self, arrays):
            pass

    first, second = NStepReturns(ListBuffer(), 3, GAMMA), NStepReturns(ListBuffer(), 3, GAMMA)
    for t in range(2):
        first.store([t, t], [0.5], 1.0, [t + 1, t + 1], 0.0)
    second.load_state_arrays(first.state_arrays())
    for writer in (first, second):
        writer.end_episode()
    assert len(first.rows) == len(second.rows) == 2
    for a, b in zip(first.rows, second.rows):
        assert all(np.allclose(x, y) for x, y in zip(a, b))


def test_n_step_runs_resume_exactly_with_windows_open(tmp_path):
    kw = dict(TINY, n_step=3, gamma=GAMMA)
    straight, resumed = tmp_path / "straight", tmp_path / "resumed"
    sac(Steps, **kw, logger_kwargs=dict(output_dir=str(straight)))
    sac(Steps, **dict(kw, epochs=1), logger_kwargs=dict(output_dir=str(resumed)))
    with np.load(resumed / "train_state" / "arrays.npz") as arrays:
        assert len(arrays["nstep_copy"]) > 0  # the checkpoint was taken with a window open
    sac(Steps, **kw, resume=True, logger_kwargs=dict(output_dir=str(resumed)))
    assert rows(str(straight)) == rows(str(resumed))
    a, b = buffer_of(straight), buffer_of(resumed)
    assert all(np.array_equal(a[k], b[k]) for k in a)


def test_n_step_runs_resume_exactly_from_a_checkpoint_at_an_episodes_end(tmp_path):
    """Pendulum's 200-step episodes end with each 400-step epoch, so the checkpoint holds no
    open window (its window arrays empty): the run resumes, as the straight one (it was
    refused as damaged: 'nstep_obs has shape [0], not [0, 3]')."""
    from helpers import straight_and_resumed

    straight, resumed = straight_and_resumed(tmp_path, n_step=3)
    with np.load(tmp_path / "resumed" / "train_state" / "arrays.npz") as arrays:
        assert len(arrays["nstep_copy"]) == 0  # no window open at the checkpoint
    assert straight == resumed


def test_a_vectorised_n_step_run_writes_its_open_windows_when_it_resumes(tmp_path):
    """Vector copies resume with new episodes: the windows open at the checkpoint are
    written, bootstrapped, and no window spans the restart."""
    out = tmp_path / "run"
    kw = dict(TINY, num_envs=3, n_step=3, gamma=GAMMA)
    sac(Steps, **dict(kw, epochs=1), logger_kwargs=dict(output_dir=str(out)))
    sac(Steps, **kw, resume=True, logger_kwargs=dict(output_dir=str(out)))
    steps, _ = check_windows(buffer_of(out), 3, strict=False)
    with np.load(out / "train_state" / "arrays.npz") as arrays:
        assert len(steps) + len(arrays["nstep_copy"]) == 240


@pytest.mark.parametrize("kwargs,words", [
    (dict(n_step=0), "n_step=0"),
    (dict(n_step=2, actor_critic="recurrent"), "n_step=2 with the recurrent variant")])
def test_what_cannot_take_n_step_returns_is_refused(tmp_path, kwargs, words):
    with pytest.raises(SpinupError, match=words):
        sac(pendulum, **dict(TINY, **kwargs),
            logger_kwargs=dict(output_dir=str(tmp_path / "run")))
    assert not (tmp_path / "run" / "progress.txt").exists()


def test_a_checkpoint_of_0_3_with_a_fractional_done_resumes_with_its_discounts():
    """Before the discount was a named batch entry, an n-step transition kept it in done
    (1 - gamma ** (k - 1) (1 - terminated)) and the buffer kept no steps: such a checkpoint
    loads with one step each, and the discounts are the ones its run used, gamma (1 - d)."""
    old_done = np.array([0.75, 0.5, 0.0, 1.0], np.float32)
    arrays = dict(buf_obs=np.zeros((4, 1), np.float32), buf_obs2=np.zeros((4, 1), np.float32),
                  buf_act=np.zeros((4, 1), np.float32), buf_rew=np.ones(4, np.float32),
                  buf_done=old_done, buf_ptr=np.array(4), buf_size=np.array(4))
    buf = ReplayBuffer(1, 1, 10)
    buf.load_state_arrays(arrays)
    batch = buf.sample_batch(64, np.random.default_rng(0))
    np.testing.assert_array_equal(batch["steps"], 1)
    np.testing.assert_array_equal(discount_of(batch, GAMMA),
                                  (np.float32(GAMMA) * (1 - batch["done"])).astype(np.float32))
    assert set(np.round(discount_of(batch, GAMMA), 6)) <= {0.125, 0.25, 0.5, 0.0}
