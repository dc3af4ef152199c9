"""The declared table of sac()'s arguments (spinup_tf2.arguments) against sac() itself, and
what is derived from it."""

import inspect
import re

from helpers import cli

from spinup_tf2 import arguments
from spinup_tf2.algos.sac.sac import sac


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
    assert dict(arguments.WHOLE_NUMBERS)["steps_per_epoch"] == 1
    assert dict(arguments.WHOLE_NUMBERS)["start_steps"] == 0
    assert "updates_per_step" not in dict(arguments.WHOLE_NUMBERS)  # a rule of its own
    assert arguments.FREE_ARGS == {"epochs", "save_freq", "resume", "logger", "logger_kwargs",
                                   "env_fn", "exp_name", "overwrite", "video_freq"}
    assert arguments.ADDED_ARGS == {"updates_per_step": 1, "num_envs": 1,
                                    "vector_mode": "sync", "replay_buffer_class": None,
                                    "n_step": 1, "her": False, "n_sampled_goal": 4,
                                    "goal_selection_strategy": "future"}
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
