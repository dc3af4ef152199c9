"""Third-party environment packages, as their users bring them: ``--env package:EnvId``
imports the package that registers the task (gymnasium's own form), and a replay in a
fresh process imports it again only as an installed distribution found outside the
working directory and the run directory. The package here is a real one on disk (a
module and its ``.dist-info``, as pip lays them out), made for the test."""

import os
import shutil

import pytest
from helpers import assert_clean_error, cli, column

pytestmark = pytest.mark.processes

PACKAGE = "fakegoalpkg"
INIT = f"""import gymnasium as gym

gym.register("FakeGoal-v0", entry_point="{PACKAGE}.env:FakeGoal", max_episode_steps=20)
gym.register("FakeSim-v0", entry_point="{PACKAGE}.env:FakeSim", max_episode_steps=20)
"""
ENV = """from spinup_tf2.envs import PointReach

CONNECTED = set()  # the simulator's clients: those of this process only


class FakeGoal(PointReach):
    '''PointReach, registered by a package of its own.'''


class FakeSim(PointReach):
    '''PointReach behind a client id of a simulator, which (as PyBullet's) a pickle keeps
    but another process does not know.'''

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.client = len(CONNECTED) + 1
        CONNECTED.add(self.client)

    def reset(self, **kwargs):
        if self.client not in CONNECTED:
            raise RuntimeError("Not connected to physics server.")
        return super().reset(**kwargs)
"""
FAST = ["--epochs", "1", "--steps_per_epoch", "200", "--start_steps", "100", "--update_after",
        "100", "--num_test_episodes", "1", "--batch_size", "32", "--hid", "[16]"]


def make_site(root, with_dist_info=True):
    """A directory holding the package (and its distribution's metadata)."""
    os.makedirs(root / PACKAGE)
    (root / PACKAGE / "__init__.py").write_text(INIT)
    (root / PACKAGE / "env.py").write_text(ENV)
    if with_dist_info:
        info = root / f"{PACKAGE}-1.0.dist-info"
        os.makedirs(info)
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {PACKAGE}\nVersion: 1.0\n")
        (info / "top_level.txt").write_text(PACKAGE + "\n")
    return root


def test_a_package_task_trains_from_the_command_line_and_replays(tmp_path):
    site = make_site(tmp_path / "site")
    work = tmp_path / "work"
    work.mkdir()
    installed = {"PYTHONPATH": str(site)}
    res = cli("sac", "--env", f"{PACKAGE}:FakeGoal-v0", "--her", "--exp_name", "p",
              "--data_dir", str(work / "data"), *FAST, cwd=work, env=installed)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    run = work / "data" / "p" / "p_s0"
    assert len(column(run, "TestSuccessRate")) == 1

    res = cli("test_policy", str(run), "-n", "1", "--norender", cwd=work, env=installed)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    assert (f"Importing {PACKAGE} (the installed distribution {PACKAGE} 1.0), which registers "
            f"FakeGoal-v0." in res.stdout)

    # The same package beside the run (in the working directory, and in the run directory
    # itself), metadata and all, but not installed: never imported, and the replay says why.
    make_site(work)
    shutil.copytree(work / PACKAGE, run / PACKAGE)
    res = cli("test_policy", str(run), "-n", "1", "--norender", cwd=work)
    assert_clean_error(res, "'FakeGoal-v0', which is not an id registered with gymnasium",
                       f"'{PACKAGE}' is not an installed distribution")
    assert "Importing" not in res.stdout


def test_a_package_that_cannot_be_imported_is_named(tmp_path):
    res = cli("sac", "--env", "nosuchpackage_xyz:Task-v0", *FAST, "--data_dir", str(tmp_path))
    assert_clean_error(res, "'nosuchpackage_xyz'", "could not be imported",
                       "ModuleNotFoundError")


def test_a_pickled_environment_cut_off_from_its_simulator_is_rebuilt(tmp_path):
    """--trust_vars_pkl with a task whose pickle keeps a client id but not the connection
    (panda-gym's PyBullet tasks): the replay says so and rebuilds it from config.json,
    instead of a traceback from the first reset."""
    site = make_site(tmp_path / "site")
    installed = {"PYTHONPATH": str(site)}
    res = cli("sac", "--env", f"{PACKAGE}:FakeSim-v0", "--exp_name", "p", "--data_dir",
              str(tmp_path / "data"), *FAST, cwd=tmp_path, env=installed)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    run = tmp_path / "data" / "p" / "p_s0"
    res = cli("test_policy", str(run), "-n", "2", "--norender", "--trust_vars_pkl",
              cwd=tmp_path, env=installed)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    assert (f"The environment pickled in {run / 'vars.pkl'} does not run once unpickled "
            f"(RuntimeError: Not connected to physics server.)" in res.stdout), res.stdout
    assert "Rebuilding the environment FakeSim-v0 from config.json." in res.stdout
    assert "Episode 1" in res.stdout


@pytest.fixture
def installed_in_the_venv():
    """The package installed into the test's own environment as pip lays it out (module,
    ``.dist-info`` with a RECORD), so that ``pip uninstall`` removes it again: in CI and in
    README's layout that environment is ``.venv`` inside the clone."""
    import subprocess
    import sys
    import sysconfig

    name = PACKAGE + "venv"
    site = sysconfig.get_paths()["purelib"]
    os.makedirs(os.path.join(site, name))
    # It imports a module of the standard library at once, as gymnasium-robotics does (xml):
    # a replay that searched no standard library failed there.
    init = "import xml.dom.minidom  # noqa: F401\n" + INIT.replace(PACKAGE, name).replace(
        "FakeGoal-", "VenvGoal-")
    for fname, text in (("__init__.py", init), ("env.py", ENV)):
        with open(os.path.join(site, name, fname), "w") as f:
            f.write(text)
    info = os.path.join(site, f"{name}-1.0.dist-info")
    os.makedirs(info)
    files = {"METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n",
             "top_level.txt": name + "\n", "INSTALLER": "pip\n"}
    for fname, text in files.items():
        with open(os.path.join(info, fname), "w") as f:
            f.write(text)
    record = [f"{name}/__init__.py,,", f"{name}/env.py,,"] + [
        f"{name}-1.0.dist-info/{f},," for f in [*files, "RECORD"]]
    with open(os.path.join(info, "RECORD"), "w") as f:
        f.write("\n".join(record) + "\n")
    try:
        yield name
    finally:
        subprocess.run([sys.executable, "-m", "pip", "uninstall", "-y", "-q", name],
                       capture_output=True)
        shutil.rmtree(os.path.join(site, name), ignore_errors=True)
        shutil.rmtree(info, ignore_errors=True)


def test_a_package_in_the_clones_venv_replays_from_the_clone_and_from_root(
        installed_in_the_venv, tmp_path):
    """README's layout: the package installed in the environment the tests run in (in CI,
    .venv inside the clone), training run from the clone's root, the replay from the folder
    that holds the environment (the clone, in README's layout) and from a folder that holds
    the standard library (as the home folder holds a Python installed under it, pyenv's or
    conda's): the standard library and the environment are still searched."""
    import sys
    import sysconfig

    name = installed_in_the_venv
    clone = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    res = cli("sac", "--env", f"{name}:VenvGoal-v0", "--her", "--exp_name", "v",
              "--data_dir", str(tmp_path), *FAST, cwd=clone)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    run = tmp_path / "v" / "v_s0"
    holds_the_venv = os.path.dirname(sys.prefix)
    holds_the_stdlib = os.path.dirname(sysconfig.get_paths()["stdlib"])
    for cwd in (holds_the_venv, holds_the_stdlib):
        res = cli("test_policy", str(run), "-n", "1", "--norender", cwd=cwd)
        assert res.returncode == 0, (cwd, res.stdout[-3000:] + res.stderr[-3000:])
        assert (f"Importing {name} (the installed distribution {name} 1.0), which registers "
                f"VenvGoal-v0." in res.stdout)


def test_a_planted_dist_info_does_not_make_a_module_importable(tmp_path):
    """A ``.dist-info`` naming a module the Python has (the standard library's ``this``),
    placed in the run directory and the working directory, makes no distribution of it:
    config.json naming ``this:Env`` is refused, and ``this`` is never imported (it prints
    the Zen of Python when it is)."""
    import json

    from helpers import run_tiny

    run = tmp_path / "run"
    run_tiny(run, num_test_episodes=1)
    config = json.loads((run / "config.json").read_text())
    config["env_name"] = "PlantedZen-v0"
    config["env_spec"].update(id="PlantedZen-v0", entry_point="this:Env")
    (run / "config.json").write_text(json.dumps(config))
    for folder in (run, tmp_path):
        info = folder / "this-1.0.dist-info"
        os.makedirs(info)
        (info / "METADATA").write_text("Metadata-Version: 2.1\nName: this\nVersion: 1.0\n")
        (info / "top_level.txt").write_text("this\n")
    res = cli("test_policy", str(run), "-n", "1", "--norender", cwd=tmp_path)
    assert_clean_error(res, "'PlantedZen-v0', which is not an id registered with gymnasium",
                       "'this' is not an installed distribution")
    assert "Beautiful is better than ugly" not in res.stdout + res.stderr
