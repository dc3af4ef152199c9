"""The package's layout holds: no import circles, layers point one way, commands import only
what they use, and Spinning Up's import paths keep working."""

import ast
import os
import subprocess
import sys

import pytest

PKG = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "spinup_tf2")

# Floors, bottom first: a module may import its own floor or lower ones, never higher ones.
# (docs/design.md, "Layout", describes the same floors.) The environment's home, envs/, is
# floored inside too: platform, packages < dict_obs, tasks < pixels < recording < episodes <
# rendering, vector.
LAYERS = [
    ["errors", "tf_setup", "lifetime", "user_config", "arguments", "family", "columns",
     "utils.serialization_utils",
     "utils.aggregate", "utils.errors", "utils.tf_setup"],
    ["rundir", "utils.mpi_tools"],
    ["envs.platform", "envs.packages", "envs.spaces"],
    ["envs.dict_obs", "envs.action_scale", "envs.tasks"],
    ["envs.pixels"],
    ["envs.trust"],
    ["envs.recording"],
    ["envs.episodes"],
    ["envs.rendering", "envs.vector"],
    ["envs"],
    ["policy.*"],
    ["checks"],
    ["launch.*"],
    ["utils.*"],
    ["training.*"],
    ["algos.*"],
    ["run", "__init__", "__main__"],
]


def layer_of(module: str) -> int:
    """The floor of ``module``: an exact name wins over a folder's ``.*``."""
    for i, names in enumerate(LAYERS):
        if module in names:
            return i
    for i, names in enumerate(LAYERS):
        for name in names:
            if name.endswith(".*") and (module + ".").startswith(name[:-1]):
                return i
    raise AssertionError(f"spinup_tf2.{module} is in no layer: add it to LAYERS "
                         f"(and docs/design.md)")


def modules() -> dict:
    """{module name relative to spinup_tf2: set of spinup_tf2 modules it imports}."""
    graph = {}
    for root, _, files in os.walk(PKG):
        for f in files:
            if not f.endswith(".py"):
                continue
            rel = os.path.relpath(os.path.join(root, f), PKG)[:-3].replace(os.sep, ".")
            name = rel[:-len(".__init__")] if rel.endswith(".__init__") else rel
            with open(os.path.join(root, f), encoding="utf-8") as fh:
                tree = ast.parse(fh.read())
            deps = set()
            for node in ast.walk(tree):  # function-level imports count too
                if isinstance(node, ast.ImportFrom) and node.module and \
                        node.module.startswith("spinup_tf2"):
                    base = node.module[len("spinup_tf2."):] if "." in node.module else ""
                    for alias in node.names:  # "from spinup_tf2 import rundir" is a module
                        sub = f"{base}.{alias.name}".lstrip(".")
                        path = os.path.join(PKG, *sub.split("."))  # a module, or a package
                        is_module = (os.path.exists(path + ".py")
                                     or os.path.exists(os.path.join(path, "__init__.py")))
                        deps.add(sub if is_module else base)
                elif isinstance(node, ast.Import):
                    deps |= {a.name[len("spinup_tf2."):] for a in node.names
                             if a.name.startswith("spinup_tf2.")}
            graph[name] = {d for d in deps if d and d != name}
    return graph


def test_no_import_circles():
    graph = modules()
    assert len(graph) > 30  # it found the package
    seen, stack, cycles = set(), [], []

    def visit(m):
        if m in stack:
            cycles.append(stack[stack.index(m):] + [m])
            return
        if m in seen:
            return
        seen.add(m)
        stack.append(m)
        for d in sorted(graph.get(m, ())):
            visit(d)
        stack.pop()

    for m in sorted(graph):
        visit(m)
    assert cycles == []


def test_layers_point_one_way():
    """No arrow back up: no module imports one on a higher floor (release 0.2 had six:
    the launcher imported algos/ and policy/, training/ and utils/ imported policy/, which
    imported training/)."""
    upward = [f"{m} (layer {layer_of(m)}) imports {d} (layer {layer_of(d)})"
              for m, deps in modules().items() for d in deps if layer_of(d) > layer_of(m)]
    assert upward == []


def test_the_environment_has_one_home():
    """Everything about environments is in envs/: no module elsewhere makes, wraps, steps
    or renders one (gymnasium's make and its wrappers, vector API and registry are used
    only there, and by the docs' and the launcher's checks of an id)."""
    outside = {}
    for root, _, files in os.walk(PKG):
        for f in files:
            path = os.path.join(root, f)
            rel = os.path.relpath(path, PKG)
            if not f.endswith(".py") or rel.startswith("envs" + os.sep):
                continue
            with open(path, encoding="utf-8") as fh:
                text = fh.read()
            used = [w for w in ("gym.make(", "gym.Wrapper", "gymnasium.vector", "gym.register(",
                                "RenderingEnv(", "VectorEpisodes(", "ReplayableEpisodes(")
                    if w in text]
            if used:
                outside[rel] = used
    # sac() wraps its environments in envs' classes (and its __main__, Spinning Up's script,
    # calls gym.make), as each of its Ray actors wraps its copy; test_policy and the videos
    # render in envs' RenderingEnv.
    assert outside == {"algos/sac/sac.py": ["gym.make(", "VectorEpisodes(", "ReplayableEpisodes("],
                       "algos/sac/actors.py": ["ReplayableEpisodes("],
                       "policy/video.py": ["RenderingEnv("],
                       "policy/load.py": ["RenderingEnv("]}


def test_leaves_import_nothing_of_the_package():
    graph = modules()
    for leaf in ("errors", "tf_setup", "lifetime"):
        assert graph[leaf] == set(), leaf


def test_launching_sac_imports_neither_pandas_nor_matplotlib_nor_tensorflow(tmp_path):
    """A refused launch runs the whole launcher (flags, checks, the grid) in-process."""
    code = ("import sys\nfrom spinup_tf2.run import main\n"
            f"code = main(['run', 'sac', '--env', 'Pendulum-v1', '--lr', '-1', '--data_dir', "
            f"{str(tmp_path)!r}])\n"
            "print(code, sorted(m for m in ('pandas', 'matplotlib', 'tensorflow', 'seaborn') "
            "if m in sys.modules))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.stdout.strip().splitlines()[-1] == "2 []", out.stdout + out.stderr


@pytest.mark.parametrize("path, name", [
    ("spinup_tf2.utils.logx", "EpochLogger"),
    ("spinup_tf2.utils.logx", "colorize"),
    ("spinup_tf2.utils.run_utils", "ExperimentGrid"),
    ("spinup_tf2.utils.run_utils", "setup_logger_kwargs"),
    ("spinup_tf2.utils.run_utils", "call_experiment"),
    ("spinup_tf2.utils.test_policy", "load_policy_and_env"),
    ("spinup_tf2.utils.test_policy", "run_policy"),
    ("spinup_tf2.utils.plot", "make_plots"),
    ("spinup_tf2.utils.plot", "smooth_curve"),
    ("spinup_tf2.utils.mpi_tools", "mpi_fork"),
    ("spinup_tf2.utils.mpi_tools", "find_mpirun"),
    ("spinup_tf2.utils.serialization_utils", "convert_json"),
    ("spinup_tf2.utils.errors", "SpinupError"),  # README of 0.1: kept for one release
    ("spinup_tf2.utils.errors", "print_error"),
    ("spinup_tf2.utils.tf_setup", "import_tensorflow"),
])
def test_spinning_up_and_documented_import_paths(path, name):
    import importlib

    assert callable(getattr(importlib.import_module(path), name))


def test_version_from_one_place():
    import spinup_tf2

    with open(os.path.join(os.path.dirname(PKG), "pyproject.toml")) as f:
        text = f.read()
    assert 'version = {attr = "spinup_tf2.__version__"}' in text
    assert spinup_tf2.__version__.count(".") == 2
    with open(os.path.join(os.path.dirname(PKG), "CHANGELOG.md")) as f:
        assert f"## {spinup_tf2.__version__}" in f.read()
