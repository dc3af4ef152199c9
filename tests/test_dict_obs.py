"""Dict observations (goal-conditioned tasks): read as their entries in one vector, logged
with their success rate, saved and exported as dicts with one named input per key,
resumed exactly; and the Dicts SAC cannot read refused in one paragraph."""

import collections
import json
import os

import gymnasium as gym
import numpy as np
import onnxruntime as ort
import pytest
import tensorflow as tf
from ai_edge_litert.interpreter import Interpreter
from helpers import TINY, cli, column, read_progress, run_tiny, straight_and_resumed

import spinup_tf2  # noqa: F401  (registers PointReach-v0)
from spinup_tf2 import sac
from spinup_tf2.envs import DictLayout, dict_layout
from spinup_tf2.errors import SpinupError
from spinup_tf2.policy.export import export_policy
from spinup_tf2.utils.test_policy import load_tf2_policy, run_policy

BOX = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)


class ReorderedReach(gym.ObservationWrapper):
    """PointReach with its entries in an order that is not sorted (an OrderedDict), one
    of them 2-D: the order and shapes a run must keep from training to its exports."""

    def __init__(self, env=None):
        super().__init__(env or gym.make("PointReach-v0"))
        self.observation_space = gym.spaces.Dict(collections.OrderedDict([
            ("observation", BOX), ("desired_goal", BOX),
            ("both", gym.spaces.Box(-1.0, 1.0, (2, 2), np.float32))]))

    def observation(self, obs):
        return collections.OrderedDict([
            ("observation", obs["observation"]), ("desired_goal", obs["desired_goal"]),
            ("both", np.stack([obs["observation"], obs["desired_goal"]]))])


def test_a_dict_is_read_as_its_entries_in_the_space_order():
    layout = dict_layout(ReorderedReach().observation_space)
    assert layout.keys == ("observation", "desired_goal", "both")
    assert layout.slices == {"observation": slice(0, 2), "desired_goal": slice(2, 4),
                             "both": slice(4, 8)}
    assert layout.space.shape == (8,) and layout.space.dtype == np.float32
    obs = {"both": np.array([[5, 6], [7, 8]]), "desired_goal": np.array([3, 4]),
           "observation": np.array([1, 2])}
    flat = layout.flatten(obs)
    assert flat.tolist() == [1, 2, 3, 4, 5, 6, 7, 8] and flat.dtype == np.float32
    batch = {k: np.stack([v, 10 * v]) for k, v in obs.items()}  # as vector envs give them
    assert layout.flatten_batch(batch).tolist() == [flat.tolist(), (10 * flat).tolist()]
    back = layout.unflatten(flat)
    assert all(np.array_equal(back[k], obs[k]) for k in obs)
    assert dict_layout(BOX) is None  # not a Dict: read as it is


class SpaceEnv(gym.Env):
    """An environment of a given observation space (what the refusals need)."""

    def __init__(self, space):
        self.observation_space, self.action_space = space, BOX

    def reset(self, *, seed=None, options=None):
        return self.observation_space.sample(), {}

    def step(self, action):
        return self.observation_space.sample(), 0.0, False, False, {}


@pytest.mark.parametrize("entry, words", [
    (gym.spaces.Dict({"inner": BOX}), ["'nested'", "is itself a Dict"]),
    (gym.spaces.Tuple((BOX, BOX)), ["'nested'", "is itself a Tuple"]),
    (gym.spaces.Discrete(3), ["'nested'", "Discrete(3), not a Box"]),
    (gym.spaces.Box(0, 255, (16, 16, 3), np.uint8), ["'nested'", "is an image", "--pixels"]),
])
def test_a_dict_sac_cannot_read_is_refused_in_one_paragraph(tmp_path, entry, words):
    space = gym.spaces.Dict({"observation": BOX, "nested": entry})
    with pytest.raises(SpinupError) as err:
        run_tiny(tmp_path / "run", lambda: SpaceEnv(space))
    message = str(err.value)
    assert "\n" not in message and "FlattenObservation" in message
    assert all(w in message for w in words), message
    assert not os.path.exists(tmp_path / "run")  # refused before anything is written


class MissingEntry(gym.Wrapper):
    """PointReach whose observations lose their desired goal after the reset."""

    def step(self, action):
        obs, *rest = self.env.step(action)
        return {k: v for k, v in obs.items() if k != "desired_goal"}, *rest


def test_a_dict_observation_that_does_not_fit_its_space_is_named(tmp_path):
    with pytest.raises(SpinupError, match="'desired_goal' entry has shape none .missing. "
                                          "from step"):
        run_tiny(tmp_path / "run", lambda: MissingEntry(gym.make("PointReach-v0")))


def test_point_reach_rewards_are_its_compute_reward():
    """The hand-made goal task: each reward is compute_reward of the step's goals (one pair
    or a batch), 0 exactly when the step reports success, and the point stays in bounds."""
    env = gym.make("PointReach-v0")
    obs, _ = env.reset(seed=3)
    seen = []
    for _ in range(50):
        target = obs["desired_goal"] - obs["achieved_goal"]  # walk to the goal
        obs, r, terminated, truncated, info = env.step(np.clip(10 * target, -1, 1))
        assert r == env.unwrapped.compute_reward(obs["achieved_goal"], obs["desired_goal"], {})
        assert (r == 0.0) == (info["is_success"] == 1.0) and not terminated
        assert np.all(np.abs(obs["observation"]) <= 1.0)
        seen.append((obs["achieved_goal"], obs["desired_goal"], r))
    assert truncated and seen[-1][2] == 0.0 and seen[0][2] == -1.0  # reached it, not at once
    ag, dg, r = (np.array(x) for x in zip(*seen))
    assert np.array_equal(env.unwrapped.compute_reward(ag, dg, {}), r)


def test_a_dict_run_logs_success_and_its_policy_takes_the_dict(tmp_path, capsys):
    """The actor-critic reads the entries in the space's order (not sorted); the
    SavedModel's mu takes the dict (as test_policy feeds it), and the ONNX and TF Lite
    files one named input per key, all within 1e-5 of the trained policy."""
    out = tmp_path / "run"
    ac = sac(ReorderedReach, **dict(TINY, epochs=2), logger_kwargs=dict(output_dir=str(out)))
    header, rows = read_progress(out)
    assert header[-2:] == ["SuccessRate", "TestSuccessRate"]
    assert all(0.0 <= float(r[k]) <= 1.0 for r in rows for k in header[-2:])

    rng = np.random.default_rng(0)
    obs = {"observation": rng.uniform(-1, 1, (50, 2)), "desired_goal": rng.uniform(-1, 1, (50, 2)),
           "both": rng.uniform(-1, 1, (50, 2, 2))}
    obs = {k: v.astype(np.float32) for k, v in obs.items()}
    flat = DictLayout(ReorderedReach().observation_space).flatten_batch(obs)
    expected = ac.pi(flat, deterministic=True, with_logprob=False)[0].numpy()
    assert np.std(expected) > 1e-3  # a policy that is not a constant: a real comparison
    model = tf.saved_model.load(str(out / "tf2_save"))
    got = model.mu({k: tf.constant(v) for k, v in obs.items()}).numpy()
    assert np.max(np.abs(got - expected)) <= 1e-6
    served = model.signatures["serving_default"](**{k: tf.constant(v) for k, v in obs.items()})
    assert np.max(np.abs(served["action"].numpy() - expected)) <= 1e-6

    export_policy(str(out), "onnx", str(tmp_path / "p.onnx"))
    session = ort.InferenceSession(str(tmp_path / "p.onnx"), providers=["CPUExecutionProvider"])
    assert {i.name: i.shape for i in session.get_inputs()} == {
        "observation": ["batch", 2], "desired_goal": ["batch", 2], "both": ["batch", 2, 2]}
    assert np.max(np.abs(session.run(None, obs)[0] - expected)) <= 1e-5
    export_policy(str(out), "tflite", str(tmp_path / "p.tflite"))
    runner = Interpreter(model_path=str(tmp_path / "p.tflite")).get_signature_runner()
    assert np.max(np.abs(runner(**obs)["action"] - expected)) <= 1e-5

    # test_policy's loop, on the environment made here (its wrapper is not recordable).
    run_policy(ReorderedReach(), load_tf2_policy(str(out / "tf2_save"), True), 0, 2, False)
    printed = capsys.readouterr().out
    assert printed.count("\t Success ") == 2 and "SuccessRate" in printed


def test_a_dict_run_resumes_exactly(tmp_path):
    """Stopped with an episode in progress (60-step episodes, 400-step epochs): the
    resumed run replays it and goes on as the straight run did."""
    straight, resumed = straight_and_resumed(
        tmp_path, 3, 1, lambda: gym.make("PointReach-v0", max_episode_steps=60))
    assert straight == resumed and len(straight[1]) == 3
    assert "TestSuccessRate" in straight[0]


@pytest.mark.slow
def test_a_goal_task_from_the_command_line_with_every_option(tmp_path):
    """--env PointReach-v0 with MPI ranks, vector copies (their episodes' success read from
    gymnasium's final_info), TensorBoard and videos; the recurrent variant trains on the
    same Dict and replays."""
    res = cli("sac", "--env", "PointReach-v0", "--exp_name", "g", "--data_dir", str(tmp_path),
              "--cpu", "2", "--num_envs", "2", "--tensorboard", "--video_freq", "2",
              "--epochs", "2", "--steps_per_epoch", "400", "--start_steps", "200",
              "--update_after", "100", "--batch_size", "32", "--num_test_episodes", "2",
              "--hid", "[16]", timeout=600)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    run = tmp_path / "g" / "g_s0"
    assert json.load(open(run / "config.json"))["num_envs"] == 2
    rates = column(run, "SuccessRate")
    assert len(rates) == 2 and all(0.0 <= x <= 1.0 for x in rates)  # episodes ended: a value
    assert sorted(os.listdir(run / "videos")) == ["epoch_2.mp4"]
    assert any(f.startswith("events.") for f in os.listdir(run / "tb"))
    res = cli("sac", "--env", "PointReach-v0", "--exp_name", "h", "--data_dir", str(tmp_path),
              "--epochs", "1", "--steps_per_epoch", "400", "--start_steps", "200",
              "--update_after", "100", "--hid", "[16]", "--recurrent")
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    res = cli("test_policy", str(tmp_path / "h" / "h_s0"), "-n", "1", "--norender")
    assert res.returncode == 0 and "Success" in res.stdout, res.stderr[-2000:]


class ReachWithState(gym.ObservationWrapper):
    """PointReach whose 'observation' entry is called 'state', the name a recurrent
    policy's exported memory input has."""

    def __init__(self):
        super().__init__(gym.make("PointReach-v0"))
        spaces = dict(self.env.observation_space.spaces)
        spaces["state"] = spaces.pop("observation")
        self.observation_space = gym.spaces.Dict(spaces)

    def observation(self, obs):
        obs = dict(obs)
        obs["state"] = obs.pop("observation")
        return obs


def test_an_entry_named_as_the_exports_own_tensor_is_refused_at_export(tmp_path):
    """A recurrent run on a Dict with a 'state' entry trains and saves (the SavedModel takes
    the Dict and the memory apart); its ONNX export, whose inputs are named once each, is
    refused in one paragraph naming the entry, and nothing is written."""
    from spinup_tf2.algos.sac.recurrent import RecurrentActorCritic

    out = tmp_path / "run"
    sac(ReachWithState, RecurrentActorCritic, **dict(TINY, ac_kwargs=dict(hidden_sizes=(16,))),
        epochs=1, max_ep_len=50, logger_kwargs=dict(output_dir=str(out)))
    with pytest.raises(SpinupError) as err:
        export_policy(str(out), "onnx", str(tmp_path / "p.onnx"))
    assert "entry 'state'" in str(err.value) and "Nothing was written" in str(err.value)
    assert not (tmp_path / "p.onnx").exists()
