"""The declared table of sac()'s arguments (spinup_tf2.arguments) against sac() itself, and
what is derived from it."""

import inspect
import re

import pytest
from helpers import cli

from spinup_tf2 import arguments
from spinup_tf2.algos.sac.sac import sac
from spinup_tf2.errors import SpinupError


def test_the_table_is_sacs_signature_in_order_with_its_defaults():
    params = inspect.signature(sac).parameters
    assert [a.name for a in arguments.SAC_ARGS] == list(params)
    for arg in arguments.SAC_ARGS:
        default = params[arg.name].default
        if default is inspect.Parameter.empty or arg.name == "actor_critic":
            continue  # env_fn has none; actor_critic's is a class
        assert arg.default == default, arg.name


def test_every_argument_of_the_table_is_in_sacs_docstring():
    doc = inspect.getdoc(sac)
    documented = re.findall(r"^    (\w+)(?: \(\w+(?: or \w+)?\))? ?:", doc, re.MULTILINE)
    assert documented == [a.name for a in arguments.SAC_ARGS]


def test_what_the_launcher_and_the_resume_check_derive_from_it():
    checked = {a.name: a for a in arguments.CHECKED}
    assert checked["steps_per_epoch"].low == 1 and checked["start_steps"].low == 0
    assert checked["gamma"].high == 1.0 and checked["lr"].low_open
    assert checked["vector_mode"].choices == ("sync", "async")
    assert "alpha" not in checked  # a rule of its own
    assert arguments.FREE_ARGS == {"epochs", "save_freq", "resume", "logger", "logger_kwargs",
                                   "env_fn", "exp_name", "overwrite", "video_freq"}
    assert arguments.ADDED_ARGS == {"updates_per_step": 1, "num_envs": 1,
                                    "vector_mode": "sync", "replay_buffer_class": None,
                                    "n_step": 1, "her": False, "n_sampled_goal": 4,
                                    "goal_selection_strategy": "future", "replay": "uniform",
                                    "priority_alpha": None, "priority_beta": 0.4,
                                    "actors": 0, "actor_steps": 100, "actor_cpus": 1.0,
                                    "precision": "float32"}
    assert arguments.SWITCHES == {"recurrent": False, "pixels": False}
    assert arguments.RUN_KEYS[0] == "num_cpu" and "ray_address" in arguments.RUN_KEYS
    assert not {a.name for a in arguments.LAUNCHER_ARGS} & {a.name for a in arguments.SAC_ARGS}


def test_help_lists_the_launchers_flags_too(tmp_path):
    out = cli("sac", "--help")
    assert out.returncode == 0
    for flag in ("--pixels", "--action_repeat", "--image_size", "--frame_stack", "--recurrent",
                 "--env_kwargs", "--exp_name", "--data_dir", "--parallel", "--backend",
                 "replay_buffer_class"):
        assert flag in out.stdout, flag


def test_every_argument_has_one_line_of_help_and_its_checks_are_declared():
    from spinup_tf2.arguments import CHECKED, SAC_ARGS

    for a in SAC_ARGS:
        assert a.help and "\n" not in a.help and a.help.endswith("."), a.name
        assert not a.choices or (a.kind == "str" and a.default in a.choices), a.name
        # every whole number and float of sac() is bounded by the table, or by a rule of
        # its own (alpha, target_entropy: 'object')
        assert a.kind not in ("int", "float") or a in CHECKED, a.name


def _bad_and_edges(a):
    """A value outside ``a``'s declared bounds or choices, and the values on its edges."""
    if a.choices:
        return "bogus", list(a.choices)
    edges = [a.low] if not a.low_open else []
    edges += [a.high] if a.high is not None and a.high < 1e30 else []
    bad = a.low if a.low_open else (a.high + 1 if a.high is not None and a.high < 1e30
                                    else a.low - 1)
    return bad, edges


@pytest.mark.parametrize("name", [a.name for a in arguments.CHECKED])
def test_each_declared_bound_is_checked_by_sac_the_launcher_and_tune(name):
    """sac()'s check (which the launcher and tune run for every variant of a grid or study)
    refuses a value past the bound in one sentence naming it and what is accepted, and
    takes the values on the bound."""
    from spinup_tf2.arguments import SAC_ARGS, accepted
    from spinup_tf2.checks import check_sac_args

    good = {a.name: a.default for a in SAC_ARGS}
    good.update(env_fn=lambda: None, actor_critic=None, replay_size=1000)
    arg = next(a for a in SAC_ARGS if a.name == name)
    bad, edges = _bad_and_edges(arg)
    with pytest.raises(SpinupError) as err:
        check_sac_args(dict(good, **{name: bad}))
    assert f"{name}={bad!r}" in str(err.value) and accepted(arg) in str(err.value)
    for value in edges:
        if name == "batch_size" or (name == "replay_size" and value < 100):
            continue  # bounded by each other too (replay_size >= batch_size)
        check_sac_args(dict(good, **{name: value}))
    if arg.kind == "int":  # a whole number given as a float names the int to give
        with pytest.raises(SpinupError, match=r"\(e\.g\. "):
            check_sac_args(dict(good, **{name: float(max(arg.low, 1)) + 1.0}))
