"""The command line, through real subprocesses: `python -m spinup_tf2.run ...`."""

import json
import os
import re
import subprocess
import sys

import pytest
from helpers import HANG, assert_clean_error, cli, run_main

from spinup_tf2.family import ALGORITHMS


@pytest.mark.parametrize("args", [[], ["help"], ["-h"], ["--help"]])
def test_help_forms(args):
    res = cli(*args)
    assert res.returncode == 0
    for w in ("python -m spinup_tf2.run CMD [ARGS...]", "\tsac\n", "\tsac_tf2\n", "\tplot\n",
              "\ttest_policy\n", "--env       for       --env_name",
              "--hid       for       --ac_kwargs:hidden_sizes"):
        assert w in res.stdout, w


def test_algo_help_prints_docstring():
    res = cli("sac", "--help")
    assert res.returncode == 0
    assert "Using default backend (tf2) for sac." in res.stdout
    assert "Showing docstring for spinup_tf2.sac_tf2:" in res.stdout
    assert "polyak (float)" in res.stdout and "Soft Actor-Critic" in res.stdout


@pytest.mark.parametrize("algo", ALGORITHMS)
def test_algo_help_lists_every_flag_the_launcher_takes_with_its_default(algo):
    """--help's list is generated from the tables the launcher checks flags against (the
    function's signature, the launcher's Args), so no accepted flag can be missing."""
    from spinup_tf2.arguments import PIXEL_OPTIONS, RUN_KEYS, SWITCHES
    from spinup_tf2.family import MEMBERS
    from spinup_tf2.launch.flags import ALGOS, SUBSTITUTIONS

    res = cli(algo, "--help")
    assert res.returncode == 0
    listed = res.stdout.split("Showing docstring")[0]
    short = {v: k for k, v in SUBSTITUTIONS.items()}
    defaults = ALGOS[algo + "_tf2"][0].defaults()
    # the family takes neither --pixels (and its options) nor --recurrent: not listed
    refused = set(SWITCHES) | set(PIXEL_OPTIONS) if algo in MEMBERS else set()
    accepted = ((set(defaults) - {"env_fn"}) | set(SWITCHES) | set(PIXEL_OPTIONS) | set(
        RUN_KEYS) | {"env_name", "env_kwargs", "exp_name"}) - refused
    for name in refused:
        assert f"--{name}" not in listed, name
    for name in accepted:
        flags = {"--" + name, "--" + short.get(name, name)}  # its own name or its short form
        line = next((ln for ln in listed.splitlines() if ln.split()[:1] and
                     ln.split()[0].split(":")[0] in flags), None)
        assert line is not None, (name, listed)
        if name in defaults and isinstance(defaults[name], (int, float, str)):
            assert repr(defaults[name]) in line, (name, line)  # its default is shown


@pytest.mark.parametrize("flags", [
    ["--hid", "[16,16]", "--act", "tf.nn.tanh"],
    ["--ac_kwargs:hidden_sizes", "[16,16]", "--ac_kwargs:activation", "tf.nn.tanh"],
    ["--ac_kwargs", "dict(hidden_sizes=[16,16], activation=tf.nn.tanh)"],
])
def test_three_spellings_of_ac_kwargs_give_one_config(flags):
    """The three spellings reach sac() as the same ac_kwargs, as config.json records them
    (what a launched run then writes is checked end to end in test_cli_grid.py)."""
    import tensorflow as tf

    from spinup_tf2.run import parse_flags
    from spinup_tf2.utils.run_utils import ExperimentGrid, resolve_names
    from spinup_tf2.utils.serialization_utils import convert_json

    arg_dict, shorthands = parse_flags("sac_tf2", ["--env", "Pendulum-v1", *flags])
    eg = ExperimentGrid(name="ack")
    for k, v in arg_dict.items():
        eg.add(k, v, shorthand=shorthands.get(k))
    (variant,) = eg.variants()
    ac_kwargs = resolve_names(variant["ac_kwargs"])
    assert ac_kwargs == {"hidden_sizes": [16, 16], "activation": tf.nn.tanh}
    assert convert_json(ac_kwargs) == {"hidden_sizes": [16, 16], "activation": "tanh"}
    assert eg.variant_name(variant) == "ack"


@pytest.mark.slow  # a whole CLI run for the names; the naming itself is tested below
def test_datestamp_names(tmp_path):
    res = cli("sac", "--env", "Pendulum-v1", "--exp_name", "ds", "--dt", "--data_dir",
              str(tmp_path), "--epochs", "1", "--steps_per_epoch", "300", "--start_steps", "100",
              "--update_after", "100", "--num_test_episodes", "1")
    assert res.returncode == 0, res.stderr[-2000:]
    (top,) = os.listdir(tmp_path)
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}_ds", top)
    (sub,) = os.listdir(tmp_path / top)
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}_\d{2}-\d{2}-\d{2}-ds_s0", sub)


def test_datestamp_directory_names_in_process():
    from spinup_tf2.rundir import output_dir_for

    out = output_dir_for("ds", 3, "/d", datestamp=True)
    top, sub = out.split(os.sep)[-2:]
    assert out.startswith("/d/") and re.fullmatch(r"\d{4}-\d{2}-\d{2}_ds", top)
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}_\d{2}-\d{2}-\d{2}-ds_s3", sub)
    assert output_dir_for("ds", 3, "/d") == "/d/ds/ds_s3" and output_dir_for("ds") .endswith(
        os.path.join("data", "ds"))


@pytest.mark.slow  # four TensorFlow processes in turn; the default tests cover grids too
def test_experiment_grid_script_example(tmp_path):
    """Spinning Up's bench script from its running docs, adapted to SAC."""
    script = tmp_path / "bench_sac_pendulum.py"
    script.write_text(
        "from spinup_tf2 import sac\n"  # first, as the docs say: TensorFlow comes in quietly
        "from spinup_tf2.utils.run_utils import ExperimentGrid\n"
        "import tensorflow as tf\n"
        "if __name__ == '__main__':\n"
        "    eg = ExperimentGrid(name='sac-tf2-bench')\n"
        "    eg.add('env_name', 'Pendulum-v1', '', True)\n"
        "    eg.add('seed', [10 * i for i in range(2)])\n"
        "    eg.add('epochs', 1)\n"
        "    eg.add('steps_per_epoch', 300)\n"
        "    eg.add('start_steps', 100)\n"
        "    eg.add('update_after', 100)\n"
        "    eg.add('num_test_episodes', 1)\n"
        "    eg.add('ac_kwargs:hidden_sizes', [(8,)], 'hid')\n"
        "    eg.add('ac_kwargs:activation', [tf.nn.tanh, tf.nn.relu], '')\n"
        f"    eg.run(sac, num_cpu=1, data_dir={str(tmp_path / 'data')!r})\n")
    # As a user runs it: no TF_CPP_MIN_LOG_LEVEL. Each run unpickles tf.nn.tanh, which once
    # imported TensorFlow loudly (CUDA and absl notes) before import_tensorflow could.
    env = {k: v for k, v in os.environ.items() if not k.startswith("TF_")}
    res = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                         env=dict(env, SPINUP_TF2_WAIT_BEFORE_LAUNCH="0"), timeout=600)
    assert res.returncode == 0, res.stderr[-2000:]
    assert not re.search(r"absl|cuda|oneDNN", res.stderr + res.stdout, re.I), res.stderr
    names = sorted(os.listdir(tmp_path / "data"))
    # one value of hidden_sizes: not in the names; the shorthand '' names by value alone
    assert names == ["sac-tf2-bench_pendulum-v1_" + v for v in ("relu", "tanh")]
    assert " Variants, counting seeds:               4" in res.stdout
    assert " Variants, not counting seeds:           2" in res.stdout
    for name in names:
        assert sorted(os.listdir(tmp_path / "data" / name)) == [name + "_s0", name + "_s10"]


@pytest.mark.parametrize("args,words", [
    (["sak", "--env", "Pendulum-v1"], ["'sak' is not a spinup_tf2 command", "sac_tf2",
                                       "test_policy", "Did you mean 'sac'"]),
    (["sac", "--epochs", "1"], ["You did not give a value for --env_name"]),
    (["sac", "Pendulum-v1"], ["You didn't specify a first flag"]),
    (["sac", "--env", "HalfCheetah-v2"], ["HalfCheetah-v2 is a mujoco-py environment",
                                          "HalfCheetah-v5", "spinup_tf2[mujoco]"]),
    (["sac", "--env", "HalfCheeta-v5"], ["HalfCheeta-v5 is not registered", "HalfCheetah-v5"]),
    (["sac", "--env", "Pendulm-v1"], ["Pendulm-v1 is not registered", "Pendulum-v1"]),
    (["sac", "--env", "Pendulum-v1", "--exp_name", "a", "b"],
     ["You can only provide one value for exp_name"]),
    (["sac", "--env", "Pendulum-v1", "--data_dir", "/tmp/a", "/tmp/b"],
     ["You can only provide one value for data_dir"]),
    (["sac", "--env", "Pendulum-v1", "--act", "tf.nn.reluu"], ["--act", "tf.nn.reluu",
                                                                "does not exist"]),
    (["sac", "--env", "Pendulum-v1", "--act", "os.system"], ["--act", "os.system"]),
    (["sac", "--env", "Pendulum-v1", "--hid", "__import__('os')"], ["--hid", "not allowed"]),
    (["sac", "--env", "Pendulum-v1", "--cpu", "0"], ["num_cpu (--cpu)", "got 0"]),
    (["sac", "--env", "Pendulum-v1", "--cpu", "many"], ["num_cpu (--cpu)", "'many'"]),
    (["sac", "--env", "Pendulum-v1", "--cpu", "1", "2"], ["only provide one value for num_cpu"]),
    (["sac", "--env", "Pendulum-v1", "--parallel", "0"], ["parallel must be", "got 0"]),
    (["sac", "--env", "Pendulum-v1", "--polyak", "2"], ["polyak=2", "[0, 1]"]),
    (["sac", "--env", "Blackjack-v1", "--epochs", "1"], ["1-D", "Tuple"]),
    # Refused by the launcher, before any process starts:
    (["sac", "--env", "Pendulum-v1", "--nosuchflag", "1"], ["--nosuchflag is not an argument"]),
    (["sac", "--env", "Pendulum-v1", "--epochs", "abc"], ["epochs='abc'", "whole number"]),
    (["sac", "--env", "Pendulum-v1", "--epochs"], ["--epochs was given no value"]),
    (["sac", "--env", "Pendulum-v1", "--seed", "-1"], ["seed=-1", "whole number in [0, "]),
    (["sac", "--env", "Pendulum-v1", "--seed", "1.5"], ["seed=1.5", "whole number"]),
    (["sac", "--env", "Pendulum-v1", "--hid", "[]"], ["hidden_sizes=[]", "non-empty"]),
    (["sac", "--env", "Pendulum-v1", "--hid", "[0]"], ["hidden_sizes=[0]"]),
    (["sac", "--env", "Pendulum-v1", "--hid", "[-64]"], ["hidden_sizes=[-64]"]),
    (["sac", "--env", "Pendulum-v1", "--hid", "64.5"], ["hidden_sizes=64.5"]),
    (["sac", "--env", "Pendulum-v1", "--exp_name", ""], ["exp_name=''", "not a plain name"]),
    (["sac", "--env", "Pendulum-v1", "--exp_name", "../up"], ["exp_name='../up'",
                                                              "not a plain name"]),
    (["sac", "--env", "Pendulum-v1", "--exp_name", "/tmp/abs"], ["exp_name='/tmp/abs'"]),
    (["sac", "--env", "Pendulum-v1", "--data_dir", "/etc/passwd/runs"],
     ["--data_dir '/etc/passwd/runs'", "/etc/passwd is a file"]),
    (["sac", "--env", "LunarLanderContinuous-v3"],  # the box2d extra is not installed
     ["LunarLanderContinuous-v3 needs a package that is not installed", "gymnasium[box2d]"]),
    (["sac", "--env", "Pendulum-v1", "--lr", "1e39"], ["lr=1e+39", "float32"]),
    (["sac", "--env", "Pendulum-v1", "--alpha", "1e39"], ["alpha=1e+39", "float32"]),
    (["sac", "--env", "Pendulum-v1", "--replay_size", "10", "--batch_size", "100"],
     ["replay_size=10 with batch_size=100"]),
    (["sac", "--env", "Pendulum-v1", "--parallel", "99"], ["parallel=99", "--oversubscribe"]),
    # Refused by the run's process, before it writes anything:
    (["sac", "--env", "Pendulum-v1", "--act", "tf.nn"], ["--act", "names a module"]),
    (["sac", "--env", "Pendulum-v1", "--ac_kwargs:width", "3"], ["'width'", "hidden_sizes"]),
])
def test_cli_errors_are_clear(args, words, tmp_path, capfd):
    """Through the CLI's main() in this process; the last three launch an experiment
    process, which refuses before it writes anything."""
    launchable = args[0] == "sac" and len(args) > 1 and args[1].startswith("--")
    if launchable and "--data_dir" not in args:
        args = args + ["--data_dir", str(tmp_path / "d")]  # a launch writes only under tmp
    res = run_main(capfd, *args)
    assert_clean_error(res, *words)
    assert res.returncode == 2
    runs = [r for r, _, files in os.walk(tmp_path) if "config.json" in files]
    assert runs == []  # nothing written: no run directory has a config.json


@pytest.mark.parametrize("args,words", [
    (["sak"], ["'sak' is not a spinup_tf2 command"]),
    (["sac", "--env", "Pendulm-v1"], ["Pendulm-v1 is not registered"]),
    (["sac", "--env", "Pendulum-v1", "--epochs", "abc"], ["epochs='abc'"]),
    (["sac", "--env", "Pendulum-v1", "--ac_kwargs:width", "3"], ["'width'"]),  # in the run
    (["plot"], ["Give at least one logdir"]),
    (["test_policy", "/nonexistent"], ["/nonexistent is not a directory"]),
    (["export", "/nonexistent", "--format", "onnx"], ["/nonexistent is not a directory"]),
])
def test_every_command_exits_2_with_one_paragraph_on_stderr(args, words, tmp_path):
    """Real processes: the exit code and stderr a shell sees, for each command."""
    res = cli(*args, "--data_dir", str(tmp_path)) if args[0] == "sac" else cli(*args)
    assert_clean_error(res, *words)
    assert res.returncode == 2
    assert "Error: " in res.stderr and words[0] in res.stderr


def test_whole_number_floats_are_ints():
    from spinup_tf2.run import ALGOS, parse_flags, whole_numbers_as_ints

    arg_dict, _ = parse_flags("sac_tf2", ["--replay_size", "1e6", "--epochs", "2.0", "--lr",
                                          "1e-3", "--seed", "1.5"])
    whole_numbers_as_ints(arg_dict, ALGOS["sac_tf2"][0].defaults())
    assert arg_dict["replay_size"] == [1000000] and type(arg_dict["replay_size"][0]) is int
    assert arg_dict["epochs"] == [2] and type(arg_dict["epochs"][0]) is int
    assert arg_dict["lr"] == [1e-3] and arg_dict["seed"] == [1.5]  # left for the checks


LAUNCHER = """
import sys
from spinup_tf2.run import main
code = main(["run"] + sys.argv[1:])
print("launcher imported tensorflow:", "tensorflow" in sys.modules)
sys.exit(code)
"""


def test_launcher_never_imports_tensorflow(tmp_path):
    """The launcher hands sac to the run's process by its path, and a flag value such as
    tf.nn.tanh by its name: only the run's process imports TensorFlow."""
    env = dict(os.environ, SPINUP_TF2_WAIT_BEFORE_LAUNCH="0")
    args = ["sac", "--env", "Pendulum-v1", "--exp_name", "lz", "--act", "tf.nn.tanh",
            "--hid", "[8]", "--data_dir", str(tmp_path), "--epochs", "1", "--steps_per_epoch",
            "300", "--start_steps", "100", "--update_after", "100", "--num_test_episodes", "1"]
    res = subprocess.run([sys.executable, "-c", LAUNCHER, *args], capture_output=True,
                         text=True, env=env, timeout=HANG)
    assert res.returncode == 0, res.stderr[-2000:]
    assert "launcher imported tensorflow: False" in res.stdout
    cfg = json.load(open(tmp_path / "lz" / "lz_s0" / "config.json"))
    assert cfg["ac_kwargs"] == {"hidden_sizes": [8], "activation": "tanh"}
    for bad, words in ((["--epochs", "abc"], "epochs='abc'"), (["--nosuchflag", "1"],
                                                               "--nosuchflag is not an argument")):
        res = subprocess.run([sys.executable, "-c", LAUNCHER, *args[:11], *bad], env=env,
                             capture_output=True, text=True, timeout=HANG)
        assert_clean_error(res, words)
        assert "launcher imported tensorflow: False" in res.stdout


def test_nothing_launched_for_bad_env(tmp_path):
    res = cli("sac", "--env", "Pendulum-v1", "Nope-v0", "--data_dir", str(tmp_path))
    assert_clean_error(res, "Nope-v0 is not registered")
    assert "Running experiment" not in res.stdout and os.listdir(tmp_path) == []


def test_a_run_that_fails_before_writing_says_nothing_was_written(tmp_path):
    """The launcher's trailer after a failed run: no 'data written so far' when there is
    none (here sac() refuses --her on a task without goals, inside the run's process)."""
    res = cli("sac", "--env", "Pendulum-v1", "--her", "--exp_name", "n", "--data_dir",
              str(tmp_path), "--epochs", "1")
    assert res.returncode != 0 and "goal-conditioned" in res.stdout + res.stderr
    assert "Nothing was written (" in res.stdout and "written so far" not in res.stdout


@pytest.mark.parametrize("module, groups", [
    ("spinup_tf2.utils.test_policy", ["Spinning Up's flags:", "beyond Spinning Up:"]),
    ("spinup_tf2.utils.plot", ["Spinning Up's flags:", "beyond Spinning Up:"]),
    ("spinup_tf2.policy.export", [])])
def test_the_other_commands_help_explains_every_flag(module, groups, capsys):
    """test_policy, plot and export: every flag has its line of help, under its group, and
    the usage names the command a user types."""
    import importlib

    with pytest.raises(SystemExit) as stop:
        importlib.import_module(module).main(["--help"])
    assert stop.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: python -m spinup_tf2.run "), out[:80]
    for group in groups:
        assert "\n" + group + "\n" in out, group
    usage, body = out.split("\n\n", 1)
    flags = set(re.findall(r"\[(--\w+)", usage)) - {"--help"}
    assert flags
    for flag in flags:
        # the flag's entry: its line, and a description on it or on the next one
        entry = re.search(rf"^  {flag}\b.*\n(?:\s{{20,}}\S.*\n)*", body, re.M)
        assert entry is not None, flag
        words = entry.group(0).split(flag, 1)[1]
        assert len(re.findall(r"[a-z]{3,}", words)) >= 3, (flag, entry.group(0))
