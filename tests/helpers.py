"""What several test modules share: a tiny SAC configuration and progress.txt readers."""

import os
import signal
import subprocess
import sys

# A SAC run of a few seconds: enough for every column and a few updates per epoch.
TINY = dict(steps_per_epoch=400, start_steps=200, update_after=100, update_every=50,
            batch_size=32, num_test_episodes=2, ac_kwargs=dict(hidden_sizes=(32, 32)))


def pendulum():
    """Pendulum-v1, the tests' quick task (an ``env_fn``)."""
    import gymnasium as gym

    return gym.make("Pendulum-v1")


def small_critics(name: str, **wanted) -> dict:
    """``ac_kwargs`` for family member ``name`` with its critics cut down for a test's time:
    32 wide where the member has its own width (CrossQ's 1024, SimbaV2's 512) and 3 where it
    has many (REDQ's 10), plus those of ``wanted`` (e.g. ``network='simba'``) that its
    actor-critic takes. What the tests check (a resume, an epoch, an export) does not depend
    on the width."""
    import importlib
    import inspect

    from spinup_tf2.family import MEMBERS

    member = MEMBERS[name]
    takes = inspect.signature(getattr(importlib.import_module(member.math),
                                      member.actor_critic)).parameters
    options = dict(critic_hidden_sizes=(32, 32), n_critics=3, **wanted)
    return {k: v for k, v in options.items() if k in takes}


def actor_critics(seed=0, hidden_sizes=(32, 32), env_name="Pendulum-v1"):
    """A seeded main actor-critic and its target for ``env_name``, as sac() builds them."""
    import gymnasium as gym
    import keras

    from spinup_tf2.algos.sac import core
    from spinup_tf2.algos.sac import sac as sac_mod

    env = gym.make(env_name)
    keras.utils.set_random_seed(seed)
    return sac_mod.build_actor_critics(core.MLPActorCritic, env.observation_space,
                                       env.action_space, dict(hidden_sizes=hidden_sizes))


def run_tiny(out, env_fn=None, **kwargs):
    """A TINY SAC run (one epoch unless ``epochs`` is given) of ``env_fn`` (Pendulum-v1 by
    default) into ``out``; ``kwargs`` are sac()'s (over TINY's), ``logger_kwargs`` included.
    Returns ``out`` as a string: the tests' shared tiny run."""

    from spinup_tf2 import sac

    kw = dict(TINY, epochs=1)
    kw.update((k, v) for k, v in kwargs.items() if k != "logger_kwargs")
    sac(env_fn or pendulum, **kw,
        logger_kwargs=dict(kwargs.get("logger_kwargs") or {}, output_dir=str(out)))
    return str(out)


def straight_and_resumed(tmp_path, epochs=2, stop_after=1, env_fn=None, **kwargs):
    """``(rows(straight), rows(resumed))``: a run of ``epochs`` epochs, and the same run
    stopped after ``stop_after`` epochs then resumed to ``epochs`` (:func:`run_tiny`, in
    ``tmp_path/straight`` and ``tmp_path/resumed``). Exact resume makes them equal."""
    straight = run_tiny(tmp_path / "straight", env_fn, epochs=epochs, **kwargs)
    resumed = run_tiny(tmp_path / "resumed", env_fn, epochs=stop_after, **kwargs)
    run_tiny(resumed, env_fn, epochs=epochs, resume=True, **kwargs)
    return rows(straight), rows(resumed)


def read_progress(run_dir):
    """``(header, rows)``: the column names and one dict per row, values as strings."""
    with open(os.path.join(run_dir, "progress.txt")) as f:
        lines = f.read().splitlines()
    header = lines[0].split("\t")
    return header, [dict(zip(header, line.split("\t"))) for line in lines[1:]]


def column(run_dir, key, cast=float):
    """One column of progress.txt, cast to numbers."""
    return [cast(row[key]) for row in read_progress(run_dir)[1]]


def rows(run_dir):
    """progress.txt without the Time column (the only one allowed to differ)."""
    header, out = read_progress(run_dir)
    for row in out:
        row.pop("Time")
    return header, out


# A short run's command-line flags.
CLI_TINY = ["--epochs", "2", "--steps_per_epoch", "400", "--start_steps", "200", "--update_after",
            "100", "--num_test_episodes", "1", "--batch_size", "32"]


# The bound on any one wait of a test (a process, a file, a row): a hang detector, never a
# speed limit, so that the suite's verdicts hold on a slow or busy machine (load 8 on 2 cores).
HANG = 900


def cli(*args, cwd=None, timeout=HANG, env=None):
    """Run `python -m spinup_tf2.run ARGS` and return the CompletedProcess."""
    full_env = {**os.environ, "SPINUP_TF2_WAIT_BEFORE_LAUNCH": "0", "MPLBACKEND": "Agg",
                **(env or {})}
    return subprocess.run([sys.executable, "-m", "spinup_tf2.run", *args], capture_output=True,
                          text=True, cwd=cwd, timeout=timeout, env=full_env)


def run_main(capfd, *args):
    """``python -m spinup_tf2.run ARGS`` in this process, through the CLI's own ``main``
    (the launcher imports no TensorFlow, so nothing needs mocking); ``capfd`` is pytest's
    fixture, which also catches what a launched experiment process prints."""
    from spinup_tf2.run import main

    capfd.readouterr()
    code = main(["run", *args])
    out, err = capfd.readouterr()
    return subprocess.CompletedProcess(args, code, out, err)


def assert_clean_error(res, *words):
    """A failure with a one-paragraph message and no traceback."""
    assert res.returncode not in (0, None)
    text = res.stdout + res.stderr
    assert "Traceback" not in text, text
    for w in words:
        assert w in text, (w, text)


def like_a_terminal():
    """``preexec_fn`` for a process the tests send Ctrl-C (SIGINT) to: SIGINT at its
    default, as under a terminal, even when pytest itself was started in the
    background of a script (which ignores SIGINT, and children inherit that)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


class NoRender:
    """A task that renders nothing (no render modes): what --pixels cannot watch. Made
    by name (``helpers:NoRender``) in a rendering process, so it lives in this module."""

    def __new__(cls, render_mode=None):
        import gymnasium as gym
        import numpy as np

        class _NoRender(gym.Env):
            metadata = {"render_modes": []}
            observation_space = gym.spaces.Box(-1, 1, (3,), np.float32)
            action_space = gym.spaces.Box(-1, 1, (1,), np.float32)

            def __init__(self, render_mode=None):
                self.render_mode = render_mode

            def reset(self, seed=None, options=None):
                super().reset(seed=seed)
                return np.zeros(3, np.float32), {}

            def step(self, action):
                return np.zeros(3, np.float32), 0.0, False, False, {}

        return _NoRender(render_mode)
