"""The pixel replay buffer: each frame stored once, stacks rebuilt exactly."""

import numpy as np
import pytest

from spinup_tf2.algos.sac.frame_buffer import FrameReplayBuffer

H, W, C = 4, 5, 3


def episodes(rng, stack: int, lengths: list):
    """Transitions ``(obs, act, rew, next_obs, done)`` of episodes of the given lengths,
    frame-stacked as gymnasium's FrameStackObservation does (the newest frame last), each
    reset stack made of arbitrary frames; every action is unique, to find it again."""
    out = []
    for n in lengths:
        obs = rng.integers(0, 256, (H, W, stack * C), dtype=np.uint8)
        for t in range(n):
            frame = rng.integers(0, 256, (H, W, C), dtype=np.uint8)
            next_obs = np.concatenate([obs[..., C:], frame], axis=-1)
            out.append((obs, rng.normal(size=2).astype(np.float32), float(rng.normal()),
                        next_obs, float(t == n - 1)))
            obs = next_obs
    return out


@pytest.mark.parametrize("stack", [1, 3])
def test_minibatches_hold_exactly_the_stored_transitions(stack):
    """Across wrap-arounds of both rings and episodes of 1 to 40 steps, every transition
    drawn is one of the last ``size`` stored, with its obs and next_obs rebuilt bit for
    bit; only transitions whose frames were overwritten are left out."""
    rng = np.random.default_rng(0)
    size = 60
    buf = FrameReplayBuffer((H, W, stack * C), stack, act_dim=2, size=size)
    data = episodes(rng, stack, list(rng.integers(1, 41, 25)))
    by_act = {}
    for i, (o, a, r, o2, d) in enumerate(data):
        buf.store(o, a, r, o2, d)
        by_act[a.tobytes()] = i
        assert 0 < buf.size <= min(i + 1, size)
        if i % 37 == 0 or i == len(data) - 1:
            batch = buf.sample_batch(64, rng, n_batches=2)
            assert batch["obs"].shape == (2, 64, H, W, stack * C)
            assert batch["obs"].dtype == np.uint8
            for b in range(2):
                for j in range(64):
                    k = by_act[batch["act"][b, j].tobytes()]
                    assert i - size < k <= i  # among the last `size` stored
                    o, a, r, o2, d = data[k]
                    np.testing.assert_array_equal(batch["obs"][b, j], o)
                    np.testing.assert_array_equal(batch["obs2"][b, j], o2)
                    assert batch["rew"][b, j] == np.float32(r)
                    assert batch["done"][b, j] == d
    # Episodes of 1-40 steps spend up to `stack` more frames each than the slack covers.
    assert buf.size >= size - stack * 25 and buf.size >= 1


def test_long_episodes_keep_every_transition_and_each_frame_costs_one_slot():
    """With episodes of 100 steps or more all ``size`` transitions stay drawable, and
    the frames take one slot per transition plus the slack of ``stack`` per 100."""
    rng = np.random.default_rng(1)
    size, stack = 300, 3
    buf = FrameReplayBuffer((H, W, stack * C), stack, act_dim=2, size=size)
    for o, a, r, o2, d in episodes(rng, stack, [100, 150, 120, 130]):
        buf.store(o, a, r, o2, d)
    assert buf.size == size
    assert buf.frames.shape == (size + stack * (size // 100 + 1), H, W, C)


def test_a_hundred_thousand_84x84_frames_stacked_by_3_take_about_2_1_gb():
    """As the issue sizes it: about 2.1 GB, against about 12.7 GB for obs and next_obs of
    every transition as float32 (np.zeros maps the memory without touching it)."""
    buf = FrameReplayBuffer((84, 84, 9), 3, act_dim=1, size=100_000)
    naive = 2 * 100_000 * 84 * 84 * 9 * 4
    assert 2.1e9 < buf.nbytes < 2.2e9
    assert naive / buf.nbytes > 5.5


def test_an_observation_that_is_not_a_stack_is_refused():
    with pytest.raises(ValueError, match="stack must divide the channels"):
        FrameReplayBuffer((84, 84, 8), 3, act_dim=1, size=10)
