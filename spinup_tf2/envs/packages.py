"""Environment packages that register their tasks when imported (gymnasium-robotics,
panda-gym, highway-env, ...): gymnasium 1.x knows their ids only once the package is
imported.

- On the command line, ``--env package:EnvId`` (gymnasium's own ``module:EnvId`` form)
  imports ``package`` first, as ``gymnasium.make`` does (:func:`import_env_module`).
- On replay (``test_policy``, ``export``, videos of a finished run), a run directory's
  config.json names its environment by id and entry point; an id that is not registered
  in the fresh process is registered by importing the package of its entry point, only if
  that package is an installed distribution (the module and its distribution's metadata in
  one folder of ``sys.path``), found without the working directory itself and the run
  directory (which are never searched for it: a run directory is data, and a file dropped
  beside it must not run), and saying which (:func:`import_registering_package`).
"""

from __future__ import annotations

import importlib
import importlib.machinery
import importlib.metadata
import os
import os.path as osp
import sys

from spinup_tf2.errors import SpinupError, error_line


def import_env_module(env_name: str) -> str:
    """For ``module:EnvId``, import ``module`` (which registers ``EnvId``) and return
    ``EnvId``; any other name is returned as it is. A module that cannot be imported is a
    :class:`SpinupError` naming it."""
    if not isinstance(env_name, str) or ":" not in env_name:
        return env_name
    module, env_id = env_name.split(":", 1)
    try:
        importlib.import_module(module)
    except Exception as err:  # an environment package may raise anything while importing
        first = error_line(err)
        raise SpinupError(
            f"--env {env_name} names the module {module!r}, which registers {env_id} when "
            f"imported, but it could not be imported ({first}). Install "
            f"the package that provides it (pip install ...), or check the name before the "
            f"colon.") from None
    return env_id


def _within(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder + os.sep)


def search_path(run_dir: str | None = None) -> list[str]:
    """``sys.path`` without the working directory itself ('' or its path: a file dropped
    there would be found first) and without the run directory and everything in it. A
    folder below the working directory stays: a virtual environment in the clone (README's
    layout) or a Python installed under the home folder run from home."""
    cwd = osp.realpath(os.getcwd())
    run = osp.realpath(run_dir) if run_dir else None
    kept = []
    for entry in sys.path:
        real = osp.realpath(entry or os.getcwd())
        if real != cwd and not (run and _within(real, run)):
            kept.append(entry)
    return kept


def _top_level(dist) -> set:
    """The top-level modules a distribution provides: its ``top_level.txt``, or the first
    part of each file it installed."""
    declared = (dist.read_text("top_level.txt") or "").split()
    if declared:
        return set(declared)
    return {f.parts[0].split(".")[0] for f in dist.files or [] if f.parts
            and not f.parts[0].endswith((".dist-info", ".egg-info"))}


def installed_distribution(module: str, run_dir: str | None = None) -> tuple | None:
    """``(distribution name, version, search path)`` of the installed distribution that
    provides the top-level ``module``: the module found on :func:`search_path`, and the
    metadata of a distribution that names it in the same ``sys.path`` folder (as pip lays
    them out), so that neither a module nor a ``.dist-info`` folder placed in the working
    or run directory counts; None if there is none."""
    path = search_path(run_dir)
    spec = importlib.machinery.PathFinder.find_spec(module, path)
    if spec is None:
        return None
    # The sys.path folder it was found in: a package's folder's parent, a module's folder.
    where = list(spec.submodule_search_locations or []) or [spec.origin]
    if not where[0]:
        return None
    home = osp.dirname(where[0])
    for dist in importlib.metadata.distributions(path=[home]):
        if module in _top_level(dist):
            return dist.metadata["Name"], dist.version, path
    return None


def import_registering_package(env_id: str, entry_point: str, run_dir: str | None = None) -> None:
    """Register ``env_id`` for a replay by importing the top-level package of its recorded
    ``entry_point`` (``package.module:Class``), if it is an installed distribution (see
    :func:`installed_distribution`), saying which; otherwise do nothing (the id stays
    unregistered, and the replay says so)."""
    if not isinstance(entry_point, str) or ":" not in entry_point:
        return
    package = entry_point.split(":", 1)[0].split(".", 1)[0]
    if not package.isidentifier() or package in sys.modules:
        return
    found = installed_distribution(package, run_dir)
    if found is None:
        return
    name, version, path = found
    print(f"Importing {package} (the installed distribution {name} {version}), which "
          f"registers {env_id}.", flush=True)
    saved = list(sys.path)
    sys.path[:] = path  # the copy found there, not one in the working or run directory
    try:
        importlib.import_module(package)
    except Exception as err:  # an environment package may raise anything while importing
        first = error_line(err)
        raise SpinupError(f"{env_id} is registered by {package} (the installed distribution "
                          f"{name} {version}), which could not be imported "
                          f"({first}). Nothing was run.") from None
    finally:
        sys.path[:] = saved


# gymnasium-robotics' MuJoCo helpers assert joint types that MuJoCo changed in this release:
# its Fetch tasks stop at that assertion when made with it or a later one.
ROBOTICS_MUJOCO_LIMIT = (3, 12)


def known_failure(err: BaseException, env_name: str) -> str | None:
    """What a third-party package's known failure while making ``env_name`` means and how
    to avoid it, as one paragraph; None for any other failure. Known: gymnasium-robotics'
    tasks made with a MuJoCo at or past :data:`ROBOTICS_MUJOCO_LIMIT` (a bare
    ``AssertionError`` in its ``mujoco_utils``, 40 lines of traceback)."""
    import traceback

    frames = traceback.extract_tb(err.__traceback__)
    if not (isinstance(err, AssertionError) and frames
            and f"{os.sep}gymnasium_robotics{os.sep}" in frames[-1].filename):
        return None
    try:
        import mujoco

        version = mujoco.__version__
        major_minor = tuple(int(p) for p in version.split(".")[:2])
    except (ImportError, ValueError, AttributeError):
        return None
    if major_minor < ROBOTICS_MUJOCO_LIMIT:
        return None
    try:
        robotics = f"gymnasium-robotics {importlib.metadata.version('gymnasium-robotics')}"
    except importlib.metadata.PackageNotFoundError:
        robotics = "gymnasium-robotics"
    limit = ".".join(map(str, ROBOTICS_MUJOCO_LIMIT))
    return (f"{env_name} could not be made: {robotics} stops at an assertion in its MuJoCo "
            f"helpers ({frames[-1].name}, {osp.basename(frames[-1].filename)} line "
            f"{frames[-1].lineno}) with the installed MuJoCo {version}; its tasks need MuJoCo "
            f"below {limit}. Install the robotics extra, which pins it, in a virtual "
            f"environment of its own (python3 -m venv .venv-robotics && . "
            f".venv-robotics/bin/activate && pip install -e \".[robotics]\"; the dmc extra "
            f"needs a newer MuJoCo, so the two cannot share one: docs/user/goals.md, 'Tasks "
            f"from other packages'). Nothing was written.")
