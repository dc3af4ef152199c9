"""The training environment is the replayed environment: a run records how its environment
was made (wrappers, make arguments, normalizing statistics), and load_policy_and_env /
test_policy rebuild exactly that; what cannot be recorded is said, never replaced by a bare
environment."""

import json
import os

import gymnasium as gym
import joblib
import numpy as np
import pytest
from gymnasium.envs.classic_control.pendulum import PendulumEnv
from gymnasium.wrappers import (
    ClipAction,
    FlattenObservation,
    NormalizeObservation,
    RescaleAction,
    TimeLimit,
    TransformReward,
)
from helpers import pendulum, run_main

from spinup_tf2 import sac
from spinup_tf2.errors import SpinupError
from spinup_tf2.utils.test_policy import load_policy_and_env

TINY = dict(epochs=1, steps_per_epoch=300, start_steps=100, update_after=100,
            num_test_episodes=1, batch_size=32, ac_kwargs=dict(hidden_sizes=(8,)))


class DictPendulumEnv(PendulumEnv):
    """Pendulum with a Dict observation, registered by its module path."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.observation_space = gym.spaces.Dict({"cos_sin": gym.spaces.Box(-1, 1, (2,)),
                                                  "vel": gym.spaces.Box(-8, 8, (1,))})

    def _dict(self, o):
        return {"cos_sin": o[:2].astype(np.float32), "vel": o[2:].astype(np.float32)}

    def reset(self, **kwargs):
        o, info = super().reset(**kwargs)
        return self._dict(o), info

    def step(self, a):
        o, r, terminated, truncated, info = super().step(a)
        return self._dict(o), r, terminated, truncated, info


gym.register("DictPendulum-v0", entry_point=f"{__name__}:DictPendulumEnv", max_episode_steps=200)


class Bowl(gym.Env):
    """An environment defined in the user's script, not registered: reward -|x|, x += a."""

    observation_space = gym.spaces.Box(-10, 10, (1,), np.float32)
    action_space = gym.spaces.Box(-1, 1, (1,), np.float32)

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.x, self.t = self.np_random.uniform(-5, 5, 1).astype(np.float32), 0
        return self.x.copy(), {}

    def step(self, a):
        self.x = np.clip(self.x + a, -10, 10).astype(np.float32)
        self.t += 1
        return self.x.copy(), float(-abs(self.x[0])), False, self.t >= 30, {}


# name: (env_fn, recorded in config.json)
SETUPS = {
    "RescaleAction": (lambda: RescaleAction(gym.make("Pendulum-v1"), -1.0, 1.0), True),
    "TimeLimit": (lambda: TimeLimit(gym.make("Pendulum-v1"), 50), True),
    "ClipAction": (lambda: ClipAction(gym.make("Pendulum-v1")), True),
    "NormalizeObservation": (lambda: NormalizeObservation(gym.make("Pendulum-v1")), True),
    "FlattenObservation(Dict)": (lambda: FlattenObservation(gym.make("DictPendulum-v0")), True),
    "TransformReward": (lambda: TransformReward(gym.make("Pendulum-v1"), lambda r: r / 10),
                        False),
    "custom Env": (Bowl, False),
}


def episodes(env, act, seeds=(1, 2)):
    """(return, length) of one episode per reset seed."""
    out = []
    for seed in seeds:
        o, _ = env.reset(seed=seed)
        ret, length, done = 0.0, 0, False
        while not done:
            o, r, terminated, truncated, _ = env.step(act(o))
            ret, length, done = ret + float(r), length + 1, terminated or truncated
        out.append((round(ret, 3), length))
    return out


@pytest.mark.parametrize("name", SETUPS)
def test_the_replayed_environment_is_the_training_environment(tmp_path, capsys, name):
    env_fn, recorded = SETUPS[name]
    out = str(tmp_path / "run")
    sac(env_fn, **TINY, logger_kwargs=dict(output_dir=out))
    said = capsys.readouterr().out
    assert ("cannot be recorded for replay" in said) is not recorded
    # The training set-up, as it was at the last save (NormalizeObservation: its statistics).
    trained = joblib.load(os.path.join(out, "vars.pkl"))["env"]
    trained_act = None
    for trust in (False, True):
        env, act = load_policy_and_env(out, deterministic=True, trust_pickle=trust)
        trained_act = act
        if not recorded and not trust:
            assert env is None  # never the bare registered environment in its place
            assert "cannot be rebuilt from config.json" in capsys.readouterr().out
            continue
        reference = episodes(trained if trust else _frozen(trained), act)
        assert episodes(env, act) == reference, (name, trust)
    if name == "TimeLimit":
        assert {length for _, length in episodes(trained, trained_act)} == {50}


def _frozen(env):
    from spinup_tf2.envs import freeze_stats

    freeze_stats(env)
    return env


def test_test_policy_replays_the_wrappers_and_refuses_what_it_cannot_rebuild(tmp_path, capfd):
    out = str(tmp_path / "run")
    sac(lambda: TimeLimit(RescaleAction(gym.make("Pendulum-v1"), -1.0, 1.0), 50), **TINY,
        logger_kwargs=dict(output_dir=out))
    spec = json.load(open(os.path.join(out, "config.json")))["env_spec"]
    assert [w["name"] for w in spec["additional_wrappers"]] == ["RescaleAction"]
    assert spec["max_episode_steps"] == 50  # gymnasium records TimeLimit in the spec itself
    res = run_main(capfd, "test_policy", out, "-nr", "-n", "2", "-d")
    assert res.returncode == 0, res.stderr
    assert "Pendulum-v1 with RescaleAction" in res.stdout
    assert res.stdout.count("EpLen 50") == 2
    other = str(tmp_path / "other")
    sac(SETUPS["TransformReward"][0], **TINY, logger_kwargs=dict(output_dir=other))
    res = run_main(capfd, "test_policy", other, "-nr", "-n", "1")
    assert res.returncode == 2 and "--trust_vars_pkl" in res.stderr, res.stderr
    assert "cannot be rebuilt from config.json" in res.stdout


def test_where_sac_cannot_go_it_says_what_works(tmp_path):
    out = tmp_path / "run"
    with pytest.raises(SpinupError, match="returned a vector environment") as err:
        sac(lambda: gym.make_vec("Pendulum-v1", num_envs=2), **TINY,
            logger_kwargs=dict(output_dir=str(out)))
    assert "not make_vec, and give num_envs=2" in str(err.value) and not out.exists()

    class Unbounded(Bowl):
        action_space = gym.spaces.Box(-np.inf, np.inf, (1,), np.float32)

    with pytest.raises(SpinupError, match="needs bounded actions"):
        sac(Unbounded, **TINY, logger_kwargs=dict(output_dir=str(out)))
    # Bounds other than [-a, a] train as they are (tests/test_action_bounds.py), and so does
    # the RescaleAction that was once the advice for them.
    sac(lambda: RescaleAction(RescaleAction(gym.make("Pendulum-v1"), 0.0, 1.0), -1.0, 1.0),
        **TINY, logger_kwargs=dict(output_dir=str(out)))


def test_resume_refuses_another_environment_set_up(tmp_path):
    out = str(tmp_path / "run")
    sac(SETUPS["RescaleAction"][0], **TINY, logger_kwargs=dict(output_dir=out))
    with pytest.raises(SpinupError, match="env_spec"):
        sac(pendulum, **dict(TINY, epochs=2), resume=True,
            logger_kwargs=dict(output_dir=out))


def test_env_kwargs_from_the_command_line_grid_and_replay(tmp_path, capfd):
    """--env_kwargs:key values is a grid like any flag: in the directory names when it
    varies, in config.json (the recorded spec), and rebuilt by the replay."""
    from helpers import CLI_TINY

    args = ["sac", "--env", "Pendulum-v1", *CLI_TINY[2:], "--epochs", "1", "--hid", "[8]",
            "--data_dir", str(tmp_path), "--exp_name", "ek"]
    res = run_main(capfd, *args, "--env_kwargs:g", "9.81", "2.0",
                   "--env_kwargs:max_episode_steps", "60")
    assert res.returncode == 0, res.stderr
    runs = sorted(p.name for p in tmp_path.iterdir())
    assert runs == ["ek_env-g2-0", "ek_env-g9-81"], runs
    run = tmp_path / "ek_env-g2-0" / "ek_env-g2-0_s0"
    spec = json.load(open(run / "config.json"))["env_spec"]
    assert spec["kwargs"] == {"g": 2.0} and spec["max_episode_steps"] == 60
    env, _ = load_policy_and_env(str(run))
    assert env.unwrapped.g == 2.0 and env.spec.max_episode_steps == 60
    res = run_main(capfd, *args, "--env_kwargs", "dict(gravity=1)")
    assert res.returncode == 2 and "unexpected keyword argument 'gravity'" in res.stderr
    assert "Nothing was launched" in res.stderr
    res = run_main(capfd, *args, "--env_kwargs", "5")
    assert res.returncode == 2 and "--env_kwargs must be gymnasium.make's" in res.stderr
