"""Reading a run directory back: data, never code, at every depth; every file checked
before it is opened; every value checked against what the run could have written."""

import json
import os
import shutil
import time

import gymnasium as gym
import numpy as np
import pytest
from helpers import HANG, assert_clean_error, cli, run_main, run_tiny

from spinup_tf2 import envs
from spinup_tf2.algos.sac.frame_buffer import FrameReplayBuffer
from spinup_tf2.errors import SpinupError
from spinup_tf2.training.checkpoint import write_npz


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """One tiny run of Pendulum-P-v1 (a task whose arguments name the task it wraps) and
    one of Pendulum-v1 through NormalizeObservation; copies are edited per test."""
    base = tmp_path_factory.mktemp("runs")
    run_tiny(base / "p", lambda: gym.make("Pendulum-P-v1"), num_test_episodes=1)
    run_tiny(base / "norm", lambda: gym.wrappers.NormalizeObservation(gym.make("Pendulum-v1")),
             num_test_episodes=1)
    return base


def copy_of(runs, name, tmp_path):
    out = tmp_path / name
    shutil.copytree(runs / name, out)
    return out


def edit_spec(out, edit):
    config = json.load(open(out / "config.json"))
    config["env_spec"] = edit(config["env_spec"])
    json.dump(config, open(out / "config.json", "w"))


NORMALIZE = "gymnasium.wrappers.stateful_observation:NormalizeObservation"
FRAME_STACK = "gymnasium.wrappers.stateful_observation:FrameStackObservation"


@pytest.mark.parametrize("edit, words", [
    (lambda s: dict(s, kwargs=dict(s["kwargs"], env_id="mymod:Pendulum-v1")),
     "'mymod:Pendulum-v1', which is not an id registered with gymnasium (the module 'mymod'), "
     "as the argument env_id of Pendulum-P-v1"),
    (lambda s: dict(s, additional_wrappers=[dict(name="FrameStackObservation",
                                                 entry_point=FRAME_STACK,
                                                 kwargs=dict(stack_size=10**6))]),
     "stack_size=1000000, where a replay takes a whole number from 1 to 64"),
    (lambda s: dict(s, additional_wrappers=[dict(name="NormalizeObservation",
                                                 entry_point=NORMALIZE,
                                                 kwargs=dict(epsilon=1e-8, path="/etc"))]),
     "with the argument 'path', which it is not rebuilt with (it may take epsilon)"),
    (lambda s: dict(s, additional_wrappers=[dict(name="ArrayConversion",
                                                 entry_point="gymnasium.wrappers.array_"
                                                             "conversion:ArrayConversion",
                                                 kwargs={})]),
     "which is not one a replay rebuilds"),
    (lambda s: dict(s, max_episode_steps="200"), "max_episode_steps='200'"),
])
def test_every_identifier_and_wrapper_in_a_recorded_environment_is_checked(
        runs, tmp_path, capfd, monkeypatch, edit, words):
    """Ids inside the arguments are checked as the top-level id is (gymnasium would import
    'mymod' from the working directory); the wrappers a replay builds are an explicit list,
    each with the arguments and values it may take."""
    out = copy_of(runs, "p", tmp_path)
    edit_spec(out, edit)
    (tmp_path / "mymod.py").write_text("open('RAN', 'w').close()\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))  # as `python -m` puts the working directory
    res = run_main(capfd, "test_policy", str(out), "-nr", "-n", "1")
    assert_clean_error(res, words, "--trust_vars_pkl")
    assert res.returncode == 2 and not (tmp_path / "RAN").exists()


def test_a_replay_leaves_out_recording_wrappers_and_never_opens_a_window(runs, tmp_path, capfd):
    """RecordVideo (writing wherever config.json said), HumanRendering and a recorded
    render_mode='human' are left out: the replay runs headless, in this process."""
    out = copy_of(runs, "p", tmp_path)
    video = dict(name="RecordVideo", entry_point="gymnasium.wrappers.rendering:RecordVideo",
                 kwargs=dict(video_folder=str(tmp_path / "elsewhere")))
    human = dict(name="HumanRendering", entry_point="gymnasium.wrappers.rendering:"
                                                    "HumanRendering", kwargs={})
    edit_spec(out, lambda s: dict(s, kwargs=dict(s["kwargs"], render_mode="human"),
                                  additional_wrappers=[video, human]))
    res = run_main(capfd, "test_policy", str(out), "-nr", "-n", "1")
    assert res.returncode == 0, res.stderr
    assert "Episode 0" in res.stdout and not (tmp_path / "elsewhere").exists()
    env = envs.make(envs.ref_of(json.load(open(out / "config.json"))))
    assert env.render_mode is None and "HumanRendering" not in str(env)


def test_a_saved_model_the_check_cannot_read_is_refused(runs, tmp_path, capfd):
    """The operation check fails closed: a saved_model.pb it cannot parse is refused, and a
    saved_model.pbtxt (which TensorFlow's loader reads when there is no .pb) is read and
    checked as the loader would read it."""
    import tensorflow as tf
    from google.protobuf import text_format
    from tensorflow.core.protobuf import saved_model_pb2

    class FileWritingPolicy(tf.Module):
        def __init__(self, target: str):
            super().__init__()
            self.target = target

        @tf.function(input_signature=[tf.TensorSpec([None, 2], tf.float32)])
        def mu(self, x):
            tf.io.write_file(self.target, "written by the saved model")
            return tf.tanh(x[:, :1])

        @tf.function(input_signature=[tf.TensorSpec([None, 2], tf.float32)])
        def pi(self, x):
            return self.mu(x)

    out = copy_of(runs, "p", tmp_path)
    target = tmp_path / "WRITTEN"
    shutil.rmtree(out / "tf2_save")
    tf.saved_model.save(FileWritingPolicy(str(target)), str(out / "tf2_save"))
    model = saved_model_pb2.SavedModel()
    model.ParseFromString((out / "tf2_save" / "saved_model.pb").read_bytes())
    (out / "tf2_save" / "saved_model.pbtxt").write_text(text_format.MessageToString(model))
    (out / "tf2_save" / "saved_model.pb").unlink()
    res = run_main(capfd, "test_policy", str(out), "-nr", "-n", "1", "-d")
    assert_clean_error(res, "holds operations a policy does not need: WriteFile")
    assert not target.exists()
    (out / "tf2_save" / "saved_model.pbtxt").unlink()
    (out / "tf2_save" / "saved_model.pb").write_bytes(b"\xff" * 64)  # not a protobuf
    res = run_main(capfd, "test_policy", str(out), "-nr", "-n", "1", "-d")
    assert_clean_error(res, "cannot be loaded: its graph cannot be read", "cut short or damaged")
    assert not target.exists()


@pytest.mark.parametrize("where", ["train_state/arrays.npz", "train_state/state.json",
                                   "tf2_save/variables/variables.index", "env_state.json"])
@pytest.mark.parametrize("kind", ["device", "fifo"])
def test_special_files_at_any_depth_are_refused_within_seconds(runs, tmp_path, where, kind):
    """A train_state/ array linked to /dev/zero was read until the kernel killed the process
    (18 GB); env_state.json as a FIFO hung test_policy. Now each is a paragraph at once."""
    out = copy_of(runs, "norm", tmp_path)
    path = out / where
    path.unlink()
    if kind == "device":
        os.symlink("/dev/zero", path)
    else:
        os.mkfifo(path)
    started = time.time()
    if where.startswith("train_state"):
        res = cli("sac", "--env", "Pendulum-v1", "--resume", str(out), timeout=HANG)
    else:
        res = cli("test_policy", str(out), "-nr", "-n", "1", timeout=HANG)
    assert time.time() - started < 60
    assert_clean_error(res, "a symbolic link" if kind == "device" else "a FIFO",
                       "it was not read")


def rewrite_arrays(out, **changes):
    """Rewrite train_state/arrays.npz with some arrays replaced (its checksums stay good)."""
    path = out / "train_state" / "arrays.npz"
    with np.load(path) as data:
        arrays = {k: data[k] for k in data.files}
    arrays.update(changes)
    write_npz(str(path), arrays)


@pytest.mark.parametrize("changes, words", [
    (dict(buf_ptr=np.array(-500)), "pointers (size 400, ptr -500)"),
    (dict(buf_ptr=np.array(5)), "pointers (size 400, ptr 5)"),  # the ring is not yet full
    (dict(buf_rew=np.zeros(1, np.float32)), "buf_rew has shape [1], not [400]"),
])
def test_buffer_values_a_run_could_not_write_are_a_damaged_checkpoint(runs, tmp_path, changes,
                                                                      words):
    """A pointer of -500 resumed and trained on other data; a one-element array broadcast
    into the whole buffer. Now the checkpoint is named damaged and progress.txt is kept."""
    out = copy_of(runs, "p", tmp_path)
    rewrite_arrays(out, **changes)
    before = (out / "progress.txt").read_text()
    with pytest.raises(SpinupError, match="is damaged") as err:
        run_tiny(out, lambda: gym.make("Pendulum-P-v1"), num_test_episodes=1, epochs=2,
                 resume=True)
    assert words in str(err.value)
    assert (out / "progress.txt").read_text() == before


def test_frame_positions_outside_the_ring_are_refused():
    """A pixel buffer's frame index off by 10^9 trained to the end; now it is refused."""
    buf = FrameReplayBuffer((8, 8, 3), 3, 1, size=10)
    o = np.zeros((8, 8, 3), np.uint8)
    for i in range(4):
        buf.store(o + i, np.zeros(1), 0.0, o + i + 1, False)
    arrays = {k: np.array(v) for k, v in buf.state_arrays().items()}
    FrameReplayBuffer((8, 8, 3), 3, 1, size=10).load_state_arrays(arrays)  # as written: fine
    arrays["buf_frame_idx"][1, 0] += 10**9
    with pytest.raises(ValueError, match="names frames outside"):
        FrameReplayBuffer((8, 8, 3), 3, 1, size=10).load_state_arrays(arrays)


@pytest.mark.parametrize("state, words", [
    (None, "env_state.json is missing"),
    ('[{"wrapper": "NormalizeObservation", "attr": "obs_rms", "mean": [NaN, 0, 0], '
     '"var": [1, 1, 1], "count": 5}]', "not finite"),
    ('[{"wrapper": "NormalizeObservation", "attr": "obs_rms", "mean": [0, 0, 0], '
     '"var": [1, -1, 1], "count": 5}]', "negative variance"),
    ("[{", "is damaged (JSONDecodeError"),
])
def test_normalizing_statistics_are_checked_before_a_replay(runs, tmp_path, capfd, state,
                                                            words):
    """NaN means and negative variances were replayed without a word; a missing or
    unparsable env_state.json was dropped silently."""
    out = copy_of(runs, "norm", tmp_path)
    if state is None:
        (out / "env_state.json").unlink()
    else:
        (out / "env_state.json").write_text(state)
    res = run_main(capfd, "test_policy", str(out), "-nr", "-n", "1")
    assert_clean_error(res, words)
    assert res.returncode == 2


def test_the_replay_as_written_still_runs(runs, tmp_path, capfd):
    """The checks refuse what a run could not have written, not what it writes."""
    for name in ("p", "norm"):
        res = run_main(capfd, "test_policy", str(runs / name), "-nr", "-n", "1")
        assert res.returncode == 0 and "Episode 0" in res.stdout, res.stderr
    out = copy_of(runs, "p", tmp_path)
    run_tiny(out, lambda: gym.make("Pendulum-P-v1"), num_test_episodes=1, epochs=2, resume=True)
    assert len((out / "progress.txt").read_text().splitlines()) == 3


def test_a_recorded_environment_that_cannot_be_made_is_a_paragraph(runs, tmp_path, capfd):
    """Arguments the constructor refuses (or a file it cannot parse) were a traceback."""
    out = copy_of(runs, "p", tmp_path)
    edit_spec(out, lambda s: dict(s, kwargs=dict(s["kwargs"], nonsense=1)))
    res = run_main(capfd, "test_policy", str(out), "-nr", "-n", "1")
    assert_clean_error(res, "could not be made (TypeError", "Nothing was run")


def test_files_named_in_a_recorded_environment_are_checked_before_they_are_opened(tmp_path):
    """A MuJoCo xml_file that is a FIFO would hang the replay; a device would read forever."""
    fifo = tmp_path / "model.xml"
    os.mkfifo(fifo)
    spec = dict(id="Hopper-v5", entry_point="gymnasium.envs.mujoco.hopper_v5:HopperEnv",
                kwargs=dict(xml_file=str(fifo)), additional_wrappers=[])
    with pytest.raises(SpinupError, match="is a FIFO, not a file a run writes"):
        envs.check_trusted(json.dumps(spec), "config.json")
    fifo.unlink()
    fifo.write_text("<mujoco/>")
    envs.check_trusted(json.dumps(spec), "config.json")  # a regular file: the replay may try
