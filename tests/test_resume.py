"""Exact resume from training checkpoints: after finished epochs, after kill -9, and
the errors of a resume that cannot be."""

import json
import os
import signal
import subprocess
import sys
import time

import gymnasium as gym
import keras
import numpy as np
import pytest
from helpers import TINY, pendulum, rows, run_tiny, straight_and_resumed

from spinup_tf2 import sac
from spinup_tf2.errors import SpinupError


# normalize_obs=True holds more state; the plain case runs with the slow tests.
@pytest.mark.parametrize("normalize_obs", [pytest.param(False, marks=pytest.mark.slow), True])
def test_resume_after_finishing_two_epochs_equals_four_straight(tmp_path, normalize_obs):
    (h1, r1), (h2, r2) = straight_and_resumed(tmp_path, 4, 2, normalize_obs=normalize_obs)
    assert h1 == h2 and len(r1) == len(r2) == 4
    assert r1 == r2


class LegacyRandomPendulum(gym.Wrapper):
    """Pendulum whose ``np_random`` is a legacy ``RandomState``, as DeepMind Control's
    is through Shimmy: its MT19937 state holds an array, unlike a Generator's."""

    def __init__(self):
        super().__init__(gym.make("Pendulum-v1"))
        self.unwrapped._np_random = np.random.RandomState(0)

    def reset(self, *, seed=None, options=None):
        if seed is not None:
            self.unwrapped._np_random = np.random.RandomState(seed)
        return self.env.reset(options=options)  # Pendulum draws from the RandomState


def test_an_env_with_a_legacy_random_state_resumes_exactly(tmp_path):
    """The checkpoint keeps and checks a RandomState's state too (episodes of 150 steps:
    the resumed run replays one in progress, then resets from the restored state)."""
    straight, resumed = straight_and_resumed(tmp_path, 3, 1, LegacyRandomPendulum,
                                             max_ep_len=150)
    assert straight == resumed and len(straight[1]) == 3


def normalized_pendulum():
    """Pendulum through both of gymnasium's normalizing wrappers: running statistics that
    live in the environment, not in the model."""
    env = gym.wrappers.NormalizeObservation(gym.make("Pendulum-v1"))
    return gym.wrappers.NormalizeReward(env)


def test_normalizing_wrappers_resume_exactly(tmp_path):
    """NormalizeObservation's and NormalizeReward's statistics go into the training
    checkpoint (as they were when the episode in progress began; replaying it brings them
    to the checkpoint's), so the resumed run sees what the straight one saw."""
    straight, resumed = straight_and_resumed(tmp_path, 3, 1, normalized_pendulum,
                                             max_ep_len=150)
    assert straight == resumed and len(straight[1]) == 3


def test_vector_copies_keep_their_normalizing_statistics_across_a_resume(tmp_path):
    """With --num_envs a resumed run begins new episodes in every copy (not exact), but
    each copy's statistics go on from the checkpoint's instead of starting afresh."""
    from helpers import run_tiny

    from spinup_tf2.envs import VectorEpisodes, stats_attributes

    attrs = stats_attributes(normalized_pendulum())
    assert set(attrs) == {"obs_rms", "return_rms", "discounted_reward"}
    copies = VectorEpisodes(normalized_pendulum, 2, "sync", 1000, 0, attrs)
    copies.reset()
    for _ in range(5):
        copies.envs.step(copies.envs.action_space.sample())
    state = copies.state()
    state["wrapper_stats"] = json.loads(json.dumps(state["wrapper_stats"]))  # as in state.json
    again = VectorEpisodes(normalized_pendulum, 2, "sync", 1000, 0, attrs)
    again.restore(state)
    for old, new in zip(copies.envs.get_attr("obs_rms"), again.envs.get_attr("obs_rms")):
        assert new.count == old.count + 1 and new.mean.dtype == old.mean.dtype  # + the reset
    assert np.array_equal(copies.envs.get_attr("discounted_reward"),
                          again.envs.get_attr("discounted_reward"))
    state["wrapper_stats"]["obs_rms"][0]["var"][0] = -1.0
    with pytest.raises(ValueError, match="negative variance"):
        VectorEpisodes(normalized_pendulum, 2, "sync", 1000, 0, attrs).restore(state)
    out = run_tiny(tmp_path / "vec", normalized_pendulum, num_envs=2, num_test_episodes=1)
    run_tiny(out, normalized_pendulum, num_envs=2, num_test_episodes=1, epochs=2, resume=True)
    assert len(rows(out)[1]) == 2


KILL_SCRIPT = """
import sys, gymnasium as gym
from spinup_tf2 import sac
sac(lambda: gym.make("Pendulum-v1"), epochs=4, alpha="auto", steps_per_epoch=200,
    start_steps=100, update_after=50, update_every=50, batch_size=32, num_test_episodes=2,
    ac_kwargs=dict(hidden_sizes=(32, 32)), logger_kwargs=dict(output_dir=sys.argv[1]),
    resume=len(sys.argv) > 2)
"""


# A kill at any moment leaves whole files whatever the variant (one writer, atomic files);
# that each variant's checkpoint holds all its state (Batch Renormalization statistics,
# dropout generators, subset draws) its own file tests (test_crossq.py, test_droq.py,
# test_redq.py, test_tqc.py: stopped then resumed equals straight), so SAC's run here.
def test_kill_minus_9_then_resume_equals_straight_run(tmp_path):
    straight, killed = str(tmp_path / "straight"), str(tmp_path / "killed")
    script = tmp_path / "run.py"
    script.write_text(KILL_SCRIPT)
    subprocess.run([sys.executable, str(script), straight], check=True,
                   capture_output=True)
    proc = subprocess.Popen([sys.executable, str(script), killed],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    progress = os.path.join(killed, "progress.txt")
    # No deadline: on a busy machine an epoch may take minutes; the run ends by itself.
    while proc.poll() is None:
        if os.path.exists(progress) and len(open(progress).read().splitlines()) >= 3:
            break
        time.sleep(0.01)
    assert proc.poll() is None, (f"the run ended (exit {proc.returncode}) before its second "
                                 f"epoch's row, which the test waits for to kill it")
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    # Whatever the moment of the kill: progress.txt parses, a checkpoint loads.
    _, partial = rows(killed)
    assert 2 <= len(partial) <= 3
    import tensorflow as tf
    tf.saved_model.load(os.path.join(killed, "tf2_save"))
    subprocess.run([sys.executable, str(script), killed, "resume"], check=True,
                   capture_output=True)
    h1, r1 = rows(straight)
    h2, r2 = rows(killed)
    assert h1 == h2 and h1[-2:] == ["Alpha", "LossAlpha"]
    assert r1 == r2


def test_resume_errors(tmp_path):
    with pytest.raises(SpinupError, match="does not exist"):
        sac(pendulum, resume=True,
            logger_kwargs=dict(output_dir=str(tmp_path / "nothing")))
    (tmp_path / "empty").mkdir()
    with pytest.raises(SpinupError, match="no training checkpoint"):
        sac(pendulum, resume=True,
            logger_kwargs=dict(output_dir=str(tmp_path / "empty")))
    out = str(tmp_path / "run")
    run_tiny(out, epochs=1)
    with pytest.raises(SpinupError) as err:
        run_tiny(out, epochs=2, resume=True, lr=3e-4, gamma=0.9)
    assert "gamma: 0.99 there, 0.9 now" in str(err.value)
    assert "lr: 0.001 there, 0.0003 now" in str(err.value)
    _, r = rows(out)
    assert len(r) == 1  # the refused resume wrote nothing


def test_resume_without_a_checkpoint_says_the_command_that_works(tmp_path):
    """No train_state/ beside a progress.txt with rows: the refusal names --overwrite (starting
    again without --resume would be refused, as the directory holds a run), and it works."""
    import shutil

    out = str(tmp_path / "run")
    run_tiny(out, epochs=1)
    shutil.rmtree(os.path.join(out, "train_state"))
    with pytest.raises(SpinupError, match="with --overwrite .* instead of --resume; that "
                                          "replaces its progress.txt of 1 epochs"):
        run_tiny(out, epochs=2, resume=True)
    run_tiny(out, epochs=2, overwrite=True)
    assert len(rows(out)[1]) == 2



# ----------------------------------------------------------- restarts lose nothing

RUN = ["sac", "--env", "Pendulum-v1", "--exp_name", "again", "--steps_per_epoch", "300",
       "--start_steps", "100", "--update_after", "100", "--num_test_episodes", "1", "--hid", "[8]"]


def test_same_command_again_is_refused_then_overwrite_replaces(tmp_path):
    """Running a finished run's command again without --resume must not destroy its record."""
    from helpers import assert_clean_error, cli

    run = tmp_path / "again" / "again_s0"
    res = cli(*RUN, "--epochs", "2", "--data_dir", str(tmp_path))
    assert res.returncode == 0, res.stderr[-2000:]
    before = (run / "progress.txt").read_text()
    res = cli(*RUN, "--epochs", "1", "--data_dir", str(tmp_path))
    assert_clean_error(res, "already holds a run (progress.txt with 2 epochs, a training "
                            "checkpoint)", "--resume", "--overwrite")
    assert (run / "progress.txt").read_text() == before  # untouched
    res = cli(*RUN, "--epochs", "1", "--overwrite", "--data_dir", str(tmp_path))
    assert res.returncode == 0, res.stderr[-2000:]
    assert f"removed the earlier run in {run}" in res.stdout
    _, r = rows(str(run))
    assert len(r) == 1 and json.load(open(run / "config.json"))["epochs"] == 1


def test_checkpoint_of_another_progress_txt_is_never_resumed(tmp_path):
    """The issue's case: a restart that died in its first epoch left a fresh progress.txt
    beside the old run's checkpoint; resuming from it would keep only later rows."""
    out = str(tmp_path / "run")
    kw = dict(TINY, normalize_obs=False)
    sac(pendulum, epochs=2, **kw, logger_kwargs=dict(output_dir=out))
    other = str(tmp_path / "other")
    sac(pendulum, seed=1, epochs=2, **kw,
        logger_kwargs=dict(output_dir=other))
    # progress.txt of another run beside this run's checkpoint:
    with open(os.path.join(other, "progress.txt")) as f:
        foreign = f.read()
    with open(os.path.join(out, "progress.txt"), "w") as f:
        f.write(foreign)
    with pytest.raises(SpinupError, match="does not belong to the progress.txt beside it"):
        sac(pendulum, epochs=3, resume=True, **kw,
            logger_kwargs=dict(output_dir=out))
    # A progress.txt with fewer rows than the checkpoint's epoch (a restart that stopped early):
    with open(os.path.join(out, "progress.txt"), "w") as f:
        f.write(foreign.splitlines(keepends=True)[0])
    with pytest.raises(SpinupError, match="does not belong"):
        sac(pendulum, epochs=3, resume=True, **kw,
            logger_kwargs=dict(output_dir=out))
    assert open(os.path.join(out, "progress.txt")).read() == foreign.splitlines(True)[0]


def test_resumed_run_says_where_it_continues(tmp_path, capsys):
    out = str(tmp_path / "run")
    run_tiny(out, epochs=1)
    capsys.readouterr()
    run_tiny(out, epochs=2, resume=True)
    lines = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("Resuming")]
    assert lines == [f"Resuming the run in {out} after epoch 1 (env step 400)."]


STATE_EDITS = {  # state.json that parses but holds what the loop cannot use
    "state.json a list": lambda s: [],
    "state.json epoch a string": lambda s: dict(s, epoch="1"),
    "state.json t negative": lambda s: dict(s, t=-5),
    "state.json no rng": lambda s: {k: v for k, v in s.items() if k != "rng"},
    "state.json rng garbage": lambda s: dict(s, rng={"bit_generator": "PCG64", "x": 1}),
    "state.json env without actions": lambda s: dict(s, env={"first_seed": 0}),
}


@pytest.mark.parametrize("damage", ["truncate arrays.npz", "flip a byte of arrays.npz",
                                    "truncate state.json", *STATE_EDITS])
def test_damaged_checkpoint_is_refused_before_anything_is_written(tmp_path, damage):
    out = tmp_path / "run"
    run_tiny(out, epochs=1)
    if damage in STATE_EDITS:
        path = out / "train_state" / "state.json"
        path.write_text(json.dumps(STATE_EDITS[damage](json.loads(path.read_text()))))
    else:
        path = out / "train_state" / damage.split()[-1]
        data = path.read_bytes()
        if damage.startswith("truncate"):
            path.write_bytes(data[:len(data) // 2])
        else:  # inside the stored arrays, past the zip's first local header
            mid = len(data) // 2
            path.write_bytes(data[:mid] + bytes([data[mid] ^ 0xFF]) + data[mid + 1:])
    before = {f: (out / f).read_bytes() for f in ("progress.txt", "config.json")}
    with pytest.raises(SpinupError) as err:
        run_tiny(out, epochs=2, resume=True)
    assert "is damaged and cannot be read" in str(err.value)
    assert "Nothing was written" in str(err.value) and "--overwrite" in str(err.value)
    assert {f: (out / f).read_bytes() for f in before} == before


# --- State by name: every variable, trainable or not; release 0.2's checkpoints ---------

class RunningMean(keras.layers.Layer):
    """Subtracts a running mean of its inputs, updated at every call: non-trainable state
    that training changes, as BatchNorm's and BatchRenorm's moments are."""

    def build(self, shape):
        self.mean = self.add_weight(shape=(shape[-1],), initializer="zeros", trainable=False,
                                    name="mean")

    def call(self, x):
        import tensorflow as tf

        self.mean.assign(0.9 * self.mean + 0.1 * tf.reduce_mean(x, axis=0))
        return x - self.mean


def centered_actor_critic(observation_space, action_space, hidden_sizes=(32, 32)):
    """The default actor-critic with critics that centre their inputs by a RunningMean."""
    import tensorflow as tf

    from spinup_tf2.algos.sac import core

    class CenteredQ(keras.Model):
        def __init__(self, obs_dim, act_dim, **kwargs):
            super().__init__(**kwargs)
            self.center = RunningMean()
            self.q = core.mlp([obs_dim + act_dim, *hidden_sizes, 1])
            self(tf.zeros((1, obs_dim)), tf.zeros((1, act_dim)))

        def call(self, obs, act):
            return tf.squeeze(self.q(self.center(tf.concat([obs, act], -1))), -1)

    ac = core.MLPActorCritic(observation_space, action_space, hidden_sizes)
    obs_dim, act_dim = observation_space.shape[0], action_space.shape[0]
    ac.q1, ac.q2 = CenteredQ(obs_dim, act_dim, name="q1"), CenteredQ(obs_dim, act_dim, name="q2")
    return ac


def test_non_trainable_state_resumes_exactly(tmp_path):
    """A critic's running statistic (non-trainable, changed by every update) is in the
    checkpoint by name and comes back: the resumed run equals the straight one. (Release
    0.2 kept only trainable variables: the statistic restarted from its initial value and
    the resumed rows differed.)"""
    stopped = run_tiny(tmp_path / "stopped", actor_critic=centered_actor_critic)
    with np.load(os.path.join(stopped, "train_state", "arrays.npz")) as arrays:
        for model in ("ac/q1", "ac/q2", "ac_targ/q1"):
            assert np.abs(arrays[f"var:{model}/center/mean"]).max() > 1e-3  # it moved
    straight, resumed = straight_and_resumed(tmp_path, actor_critic=centered_actor_critic)
    assert straight == resumed and len(straight[1]) == 2


def test_variable_names_do_not_depend_on_what_the_process_made_before():
    """Keras names layers dense, dense_1, ... by a count over the process; checkpoint names
    come from the models' structure, so a resume in a busier process finds every one."""
    from helpers import actor_critics

    from spinup_tf2.training.checkpoint import named_variables

    first = list(named_variables(dict(zip(("ac", "ac_targ"), actor_critics()))))
    [keras.layers.Dense(3) for _ in range(5)]  # noqa: B018 (advance Keras' name counters)
    again = list(named_variables(dict(zip(("ac", "ac_targ"), actor_critics()))))
    assert first == again and "ac/q2/q/2/kernel" in first and len(first) == 2 * (8 + 6 + 6)


OLD = dict(steps_per_epoch=300, start_steps=150, update_after=100, update_every=50,
           batch_size=16, num_test_episodes=1, max_ep_len=100, ac_kwargs=dict(hidden_sizes=(8,)),
           alpha="auto", normalize_obs=True, replay_size=1000)


def test_a_release_0_2_checkpoint_resumes(tmp_path):
    """tests/data/checkpoint_0_2_0: one epoch of the OLD run made by release 0.2.0, whose
    checkpoint keeps variables by position (var0, var1, ...). It resumes, and each variable
    comes back from the array of its position (networks, targets, optimizers, tuner,
    observation statistics: release 0.2's order)."""
    import shutil

    from spinup_tf2.training import checkpoint as ck

    run = str(tmp_path / "old")
    shutil.copytree(os.path.join(os.path.dirname(__file__), "data", "checkpoint_0_2_0"), run)
    seen = {}
    real = ck.TrainingCheckpoint._assign_variables

    def assign_and_look(self, arrays):  # what restore assigned, next to what the file holds
        real(self, arrays)
        seen.update(files=list(arrays.files), values=[v.numpy() for v in self.legacy_variables],
                    stored=[arrays[f"var{i}"] for i in range(len(self.legacy_variables))])

    ck.TrainingCheckpoint._assign_variables = assign_and_look
    try:
        sac(pendulum, epochs=2, resume=True, **OLD,
            logger_kwargs=dict(output_dir=run))
    finally:
        ck.TrainingCheckpoint._assign_variables = real
    assert "var66" in seen["files"] and "var67" not in seen["files"]
    assert len(seen["values"]) == 67
    for value, stored in zip(seen["values"], seen["stored"]):
        np.testing.assert_array_equal(value, stored)
    _, r = rows(run)
    assert [row["Epoch"] for row in r] == ["1", "2"]
    with np.load(os.path.join(run, "train_state", "arrays.npz")) as arrays:  # now by name
        assert "var:tuner/log_alpha" in arrays.files and "var0" not in arrays.files


def test_a_checkpoint_by_position_resumes_as_the_straight_run(tmp_path):
    """A checkpoint rewritten in release 0.2's layout (variables by position, in its order)
    resumes to the same rows as the run that never stopped: positions map to the same
    variables the names do."""
    from spinup_tf2.training.checkpoint import write_npz

    straight, resumed = str(tmp_path / "straight"), str(tmp_path / "resumed")
    sac(pendulum, epochs=2, **OLD, logger_kwargs=dict(output_dir=straight))
    sac(pendulum, epochs=1, **OLD, logger_kwargs=dict(output_dir=resumed))
    path = os.path.join(resumed, "train_state", "arrays.npz")
    with np.load(path) as data:
        arrays = {k: data[k] for k in data.files}
    # Release 0.2's order: trainable variables of ac and ac_targ (pi, q1, q2 each), the
    # policy's and the critics' Adam (m, v, beta powers), the tuner, the statistics.
    order = [n for m in ("ac", "ac_targ") for part in ("pi", "q1", "q2")
             for n in arrays if n.startswith(f"var:{m}/{part}/")]
    for opt in ("pi_optimizer", "q_optimizer", "tuner/optimizer"):
        if opt == "tuner/optimizer":
            order.append("var:tuner/log_alpha")
        order += [n for slot in ("m", "v") for n in arrays if n.startswith(f"var:{opt}/{slot}/")]
        order += [f"var:{opt}/beta_1_power", f"var:{opt}/beta_2_power"]
    order += ["var:ac/obs_normalizer/mean", "var:ac/obs_normalizer/var"]
    assert sorted(order) == sorted(n for n in arrays if n.startswith("var:"))
    old = {f"var{i}": arrays.pop(n) for i, n in enumerate(order)}
    write_npz(path, {**old, **arrays})
    sac(pendulum, epochs=2, resume=True, **OLD,
        logger_kwargs=dict(output_dir=resumed))
    assert rows(straight) == rows(resumed) and len(rows(straight)[1]) == 2
