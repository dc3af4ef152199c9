"""Several environment copies stepping at once (num_envs): every stored transition lies
within one episode of one copy, a truncated episode stores its true last observation and
bootstraps, a terminated one stores done; num_envs=1 is the single-environment loop."""

import gymnasium as gym
import numpy as np
import pytest

from spinup_tf2 import sac
from spinup_tf2.errors import SpinupError

TINY = dict(epochs=2, steps_per_epoch=120, start_steps=60, update_after=30, update_every=6,
            num_test_episodes=1, batch_size=16, max_ep_len=4, ac_kwargs=dict(hidden_sizes=(8,)))


class Steps(gym.Env):
    """Observation (k, end): k counts the episode's steps, reward k. An episode terminates
    when k reaches `end` (drawn from 2..6 at reset); max_ep_len=4 truncates the others."""

    observation_space = gym.spaces.Box(0.0, 10.0, (2,), np.float32)
    action_space = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.k, self.end = 0, int(self.np_random.integers(2, 7))
        return self._obs(), {}

    def _obs(self):
        return np.array([self.k, self.end], dtype=np.float32)

    def step(self, action):
        self.k += 1
        return self._obs(), float(self.k), self.k == self.end, False, {}


def buffer_of(run_dir):
    with np.load(run_dir / "train_state" / "arrays.npz") as arrays:
        return {k: arrays[k] for k in ("buf_obs", "buf_obs2", "buf_rew", "buf_done",
                                       "buf_steps")}


@pytest.mark.parametrize("mode", ["sync", pytest.param("async", marks=[pytest.mark.slow,
                                                               pytest.mark.processes])])
def test_every_transition_lies_within_one_episode(tmp_path, mode):
    out = tmp_path / mode
    sac(Steps, **TINY, num_envs=3, vector_mode=mode, logger_kwargs=dict(output_dir=str(out)))
    buf = buffer_of(out)
    o, o2, r, d = buf["buf_obs"], buf["buf_obs2"], buf["buf_rew"], buf["buf_done"]
    assert len(o) == 240  # every transition of 2 epochs, counted as Spinning Up counts them
    assert np.all(o2[:, 0] == o[:, 0] + 1)  # one step of one episode: never a reset between
    assert np.all(o2[:, 1] == o[:, 1]) and np.all(r == o2[:, 0])
    terminated = o2[:, 0] == o2[:, 1]
    assert np.array_equal(d == 1.0, terminated)  # done exactly where the episode terminated
    truncated = (o2[:, 0] == 4) & ~terminated
    assert truncated.any() and terminated.any()  # both kinds of ending were stored
    assert np.all(o[:, 0] <= 3)  # max_ep_len=4 cut every episode: its true last o2 stored
    if mode == "async":  # the copies in their own processes: the same transitions
        sac(Steps, **TINY, num_envs=3, logger_kwargs=dict(output_dir=str(tmp_path / "sync")))
        same = buffer_of(tmp_path / "sync")
        assert all(np.array_equal(buf[k], same[k]) for k in buf)


def test_same_seed_same_numbers_and_episode_returns(tmp_path):
    from helpers import rows

    sac(Steps, **TINY, num_envs=3, logger_kwargs=dict(output_dir=str(tmp_path / "a")))
    sac(Steps, **TINY, num_envs=3, logger_kwargs=dict(output_dir=str(tmp_path / "b")))
    assert rows(str(tmp_path / "a")) == rows(str(tmp_path / "b"))  # same seed, same numbers
    header, table = rows(str(tmp_path / "a"))
    # Returns of Steps are 1 + 2 + ... + length, lengths 2..4.
    assert all(float(row["TotalEnvInteracts"]) == 120 * (i + 1) for i, row in enumerate(table))
    assert {float(row["MaxEpRet"]) for row in table} <= {3.0, 6.0, 10.0}


def test_num_envs_must_divide_the_epoch(tmp_path):
    for kwargs, words in [(dict(num_envs=7), "steps_per_epoch=120 with num_envs=7"),
                          (dict(num_envs=0), "num_envs=0"),
                          (dict(vector_mode="threads"), "vector_mode='threads'")]:
        with pytest.raises(SpinupError, match=words.replace("(", r"\(")):
            sac(Steps, **dict(TINY, **kwargs), logger_kwargs=dict(output_dir=str(tmp_path)))


def test_a_vectorised_run_resumes_with_new_episodes(tmp_path, capsys):
    out = str(tmp_path / "run")
    sac(Steps, **dict(TINY, epochs=1), num_envs=3, logger_kwargs=dict(output_dir=out))
    sac(Steps, **TINY, num_envs=3, resume=True, logger_kwargs=dict(output_dir=out))
    assert "Resuming the run" in capsys.readouterr().out
    from helpers import rows

    assert [r["Epoch"] for r in rows(out)[1]] == ["1", "2"]
    with np.load(tmp_path / "run" / "train_state" / "arrays.npz") as arrays:
        o, o2 = arrays["buf_obs"], arrays["buf_obs2"]
    assert len(o) == 240 and np.all(o2[:, 0] == o[:, 0] + 1)  # no transition spans a restart


@pytest.mark.slow  # two MPI processes
def test_num_envs_under_mpi(tmp_path, capfd):
    from helpers import run_main

    res = run_main(capfd, "sac", "--env", "Pendulum-v1", "--epochs", "1", "--steps_per_epoch",
                   "400", "--start_steps", "100", "--update_after", "100", "--update_every",
                   "40", "--num_test_episodes", "2", "--hid", "[8]", "--num_envs", "4",
                   "--cpu", "2", "--data_dir", str(tmp_path), "--exp_name", "vm")
    assert res.returncode == 0, res.stderr[-2000:]
    from helpers import rows

    (row,) = rows(str(tmp_path / "vm" / "vm_s0"))[1]
    assert row["TotalEnvInteracts"] == "400"


@pytest.mark.parametrize("num_envs, update_every", [(1, 50), (2, 50), (4, 50), (8, 50),
                                                     (16, 50), (3, 6), (4, 6), (64, 50)])
def test_blocks_of_updates_keep_one_update_per_transition_with_any_copies(num_envs,
                                                                         update_every):
    """update_every need not be a multiple of num_envs: a block comes with each step that
    passes a multiple of it (several, if the step passes several), so every epoch of a
    multiple of num_envs transitions gets one update per transition, and copies that
    divide update_every get their blocks where t % update_every == 0, as before."""
    from spinup_tf2.algos.sac.sac import update_blocks

    steps = 32 * num_envs * update_every  # whole vector steps, and whole blocks
    blocks = [update_blocks(t, num_envs, update_every) for t in range(0, steps, num_envs)]
    assert sum(blocks) * update_every == steps
    if update_every % num_envs == 0:
        assert blocks == [int(t % update_every == 0)
                                       for t in range(0, steps, num_envs)]


def test_four_copies_run_with_the_default_update_every(tmp_path):
    """--num_envs 4 alone (update_every=50, not a multiple of 4) is a run, not a refusal."""
    out = str(tmp_path / "run")
    sac(Steps, **dict(TINY, update_every=50, steps_per_epoch=200), num_envs=4,
        logger_kwargs=dict(output_dir=out))
    from helpers import rows

    assert [r["TotalEnvInteracts"] for r in rows(out)[1]] == ["200", "400"]
