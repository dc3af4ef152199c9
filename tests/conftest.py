import os

import pytest

# Tests and the subprocesses they launch: no countdown, no TensorFlow start-up noise.
os.environ["SPINUP_TF2_WAIT_BEFORE_LAUNCH"] = "0"
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: learning runs and notebook execution (minutes)")
    config.addinivalue_line("markers", "processes: the test starts processes (see below)")


# --- Two floors of tests: in process, and those that start processes ----------------------
# A test that starts a process (the command line, MPI, a rendering or vector worker, ffmpeg,
# a Ray cluster) is marked `processes`: `pytest -m "not slow and not processes"` runs the
# rest, in this process, in about a minute. Marked by what the test's own code calls; a test
# that starts one some other way is marked by hand (@pytest.mark.processes), and the guard
# below fails any unmarked test that starts one, so the in-process floor stays in process.
STARTS_PROCESSES = ("cli(", "run_main(", "subprocess.", "Popen(", "sys.executable", "mpirun",
                    "make_pixels", "pendulum_pixels", "RenderingEnv(", "vector_mode=\"async\"",
                    "record_episode(")


def pytest_collection_modifyitems(config, items):
    import inspect

    for item in items:
        functions = [item.function] + [  # and the fixtures it uses (a module's shared runs)
            d.func for defs in getattr(item, "_fixtureinfo").name2fixturedefs.values()
            for d in defs if d.baseid]
        sources = []
        for function in functions:
            try:
                sources.append(inspect.getsource(function))
            except (OSError, TypeError):
                pass
        if any(call in source for source in sources for call in STARTS_PROCESSES):
            item.add_marker(pytest.mark.processes)
    # Longest files first. pytest-xdist hands whole files to its workers (--dist loadfile) in
    # this order (--no-loadscope-reorder, pytest.ini); a long file handed out last keeps one
    # worker busy alone at the end (CI's learning and Ray files, each minutes, went last when
    # xdist put the files with the most tests first). The weights are rough costs in seconds.
    cost: dict = {}
    for item in items:
        slow, starts = (item.get_closest_marker(m) is not None for m in ("slow", "processes"))
        cost[item.path] = cost.get(item.path, 0) + (100 if slow else 10 if starts else 1)
    items.sort(key=lambda item: -cost[item.path])  # stable: a file's tests keep their order


@pytest.fixture(autouse=True)
def _in_process_tests_start_no_process(request, monkeypatch):
    """Fail a test not marked ``processes`` that starts a process."""
    if request.node.get_closest_marker("processes") is not None:
        yield
        return
    import inspect
    import multiprocessing.process
    import subprocess as sp

    name = request.node.nodeid

    def refusing(original):
        def refuse(*args, **kwargs):
            # A library may run a helper while it is imported (glfw asks for its version):
            # that is the import's business, not the test's.
            if any("importlib._bootstrap" in f.filename for f in inspect.stack(0)):
                return original(*args, **kwargs)
            raise AssertionError(f"{name} starts a process but is not marked 'processes': add "
                                 f"@pytest.mark.processes (see tests/conftest.py)")
        return refuse

    monkeypatch.setattr(sp.Popen, "__init__", refusing(sp.Popen.__init__))
    monkeypatch.setattr(multiprocessing.process.BaseProcess, "start",
                        refusing(multiprocessing.process.BaseProcess.start))
    yield
