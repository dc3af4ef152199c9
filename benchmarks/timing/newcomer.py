"""How long README's newcomer commands take on this machine: the figures README promises.

README begins with two commands (set up and train a short SAC; set up and run the tests),
each with a time, and gives CI's command (set up, ``ruff``, every test) with its time.
Those times are measured here, by running the commands as README gives
them in a fresh clone of the working tree (a new ``.venv`` each, pip's cache as it is), and
written with the machine they were measured on; README's figures are facts made from this
file (``benchmarks/learning/facts.py``: ``timed WHAT``), so each promise is one measured
figure with its machine, and ``tests/test_facts.py`` fails when README and the file disagree.

    python benchmarks/timing/newcomer.py run [--what quickstart,tests,ci]   # measure, append
    python benchmarks/timing/newcomer.py show                            # the latest figures

Measure on a quiet machine (nothing else running: the share of CPU time busy just before
each part is recorded, and a part measured with the CPU busy is marked so). Each part is one
run, not a median: the figures are rounded as README writes them (installs to half minutes,
the quickstart to 5 s, the test runs to whole minutes).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import os.path as osp
import platform
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time

REPO = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))
RESULTS = osp.join(REPO, "benchmarks", "results", "newcomer_times.jsonl")
# What README's commands are made of, after `python3 -m venv .venv && . .venv/bin/activate`.
PARTS = {
    "quickstart": ('pip install -e .', "python -m spinup_tf2.run sac --env Pendulum-v1 "
                   "--exp_name quickstart --epochs 5 --steps_per_epoch 2000 --start_steps 2000"),
    "tests": ('pip install -e ".[test]"', "pytest"),
    # .ci/run also installs the system libraries a fresh machine misses; here they are present.
    "ci": ('pip install -e ".[test]"',
           'ruff check . && pytest -m "slow or not slow" --durations=15'),
}


def readme_command(what: str) -> str:
    """README's own command for ``what``: the first bash block with its install line."""
    with open(osp.join(REPO, "README.md"), encoding="utf-8") as f:
        blocks = re.findall(r"```bash\n(.*?)\n```", f.read(), re.S)
    install, run = PARTS[what]
    for block in blocks:
        if install in block and block.rstrip().endswith(run):
            return block.strip()
    raise SystemExit(f"README.md has no command that installs with {install!r} and runs "
                     f"{run!r}: PARTS is out of date")


def machine() -> dict:
    """The CPU model, its core count and the flags the figures depend on (lscpu)."""
    out = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
    model = re.search(r"Model name:\s*(.+)", out)
    flags = (re.search(r"Flags:\s*(.+)", out) or [None, ""])[1].split()
    return {"cpu": model[1].strip() if model else platform.processor(),
            "cores": os.cpu_count(),
            "flags": [f for f in ("avx2", "avx512f", "avx512_bf16", "amx_bf16") if f in flags]}


def busy_share(seconds: float = 3.0) -> float:
    """The share of the CPUs' time spent busy over the last ``seconds`` (the load
    average lags by minutes, so a machine just freed reads busy by it)."""
    import psutil

    return round(psutil.cpu_percent(interval=seconds) / 100, 3)


def timed(command: str, cwd: str) -> float:
    """Seconds ``command`` took in ``cwd``; on a failure, its output's end and the exit."""
    start = time.perf_counter()
    res = subprocess.run(["bash", "-c", command], cwd=cwd, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True,
                         env=dict(os.environ, SPINUP_TF2_WAIT_BEFORE_LAUNCH="0"))
    seconds = time.perf_counter() - start
    if res.returncode != 0:
        raise SystemExit(f"{command!r} failed (exit {res.returncode}) after {seconds:.0f} s; "
                         f"nothing was recorded. Its output ends:\n{res.stdout[-4000:]}")
    return seconds


def measure(what: str) -> dict:
    """One measurement of README's command for ``what``: install and run, in seconds, in a
    fresh clone of this working tree (its committed state)."""
    install, run = PARTS[what]
    readme_command(what)  # README still says so
    with tempfile.TemporaryDirectory() as tmp:
        clone = osp.join(tmp, "clone")
        subprocess.run(["git", "clone", "-q", REPO, clone], check=True)
        busy = busy_share()
        seconds_install = timed(f"python3 -m venv .venv && . .venv/bin/activate && {install}",
                                clone)
        seconds_run = timed(f". .venv/bin/activate && {run}", clone)
    return {"what": what, "install_s": round(seconds_install, 1), "run_s": round(seconds_run, 1),
            "busy_before": busy, "quiet": busy < 0.1,
            "date": datetime.date.today().isoformat(), **machine(),
            "commit": subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO,
                                     capture_output=True, text=True).stdout.strip()}


def latest(path: str = RESULTS) -> dict:
    """The newest measurement of each part, by name."""
    out = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.strip():
                row = json.loads(line)
                out[row["what"]] = row
    return out


def half_minutes(seconds: float) -> str:
    value = round(seconds / 30) / 2
    return f"{value:g} minute" + ("" if value == 1 else "s")


def figure(what: str, part: str, path: str = RESULTS) -> str:
    """A measured figure as README writes it: ``quickstart install`` -> ``1.5 minutes``,
    ``quickstart run`` -> ``25 s``, ``tests run`` -> ``10 minutes``; ``machine`` -> the
    machine of the newest measurement, ``2-core AMD EPYC with AVX-512``."""
    rows = latest(path)
    if what == "machine":
        row = max(rows.values(), key=lambda r: r["date"])
        flags = row["flags"]
        feature = ("AMX" if "amx_bf16" in flags else "AVX-512" if "avx512f" in flags
                   else "AVX2" if "avx2" in flags else "no AVX2")
        return f"{row['cores']}-core {row['cpu']} with {feature}"
    row = rows[what]
    seconds = row[f"{part}_s"]
    if part == "install":
        return half_minutes(seconds)
    if what == "quickstart":
        return f"{5 * round(seconds / 5)} s"
    return f"{round(seconds / 60)} minutes"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("action", choices=("run", "show"))
    parser.add_argument("--what", default=",".join(PARTS))
    args = parser.parse_args(argv)
    if args.action == "run":
        for what in args.what.split(","):
            row = measure(what)
            os.makedirs(osp.dirname(RESULTS), exist_ok=True)
            with open(RESULTS, "a", encoding="utf-8") as f:
                f.write(json.dumps(row) + "\n")
            print(json.dumps(row))
    for what in PARTS:
        try:
            print(f"{what}: {shlex.quote(readme_command(what))}\n  install "
                  f"{figure(what, 'install')}, then {figure(what, 'run')}")
        except (KeyError, FileNotFoundError):
            print(f"{what}: not measured yet")
    if shutil.which("lscpu"):
        print("machine:", figure("machine", ""))


if __name__ == "__main__":
    main(sys.argv[1:])
