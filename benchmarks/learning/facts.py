"""Figures in the prose of README.md and docs/ about bundled runs, made from the runs.

Tables come from ``compare_curves.py`` and ``time_to_score.py``; a figure in a sentence
(a count of runs, a run's last test, its wall-clock, a range) is written between markers,
so that it is made from ``data/benchmarks/`` too::

    All <!-- fact runs spinningup -->35<!-- /fact --> runs are bundled.

    python benchmarks/learning/facts.py          # rewrite every marked figure from the data
    python benchmarks/learning/facts.py --check  # exit 1 naming each figure the data disagrees with

A fact is its kind and its runs: a group name (:data:`GROUPS`), a folder of
``data/benchmarks/`` (every seed in it) or one run (``FOLDER/RUN``, e.g.
``sac-halfcheetah-v5/sac-halfcheetah-v5_s50``), or several of them joined by commas. The
kinds:

- ``runs RUNS``: how many runs there are;
- ``spreadmean RUNS N``: the mean and standard deviation over runs of each one's mean test
  over its last N epochs, ``m ± s``;
- ``solvedby RUNS``: the environment steps by which every run's tests all succeed
  (``TestSuccessRate`` 1) and stay so to its end (``never`` if one does not);
- ``smoothed TASK STEP [N]``: the mean and standard deviation over seeds (the first N) of
  our SAC's test return on TASK (``HalfCheetah-v5``) at STEP, smoothed as Spinning Up
  smooths its curves (``compare_curves.our_curves``, which makes the Benchmarks table);
  ``smoothedmean``: the mean alone;
- ``spread RUNS [E]``: the mean and standard deviation (n - 1) of their last tests (or
  their tests at epoch E), ``m ± s``;
- ``minutes RUNS``: the runs' wall-clock by their last ``Time``, in minutes (``a-b`` for
  several; the column counts pauses and whatever shared the cores);
- ``hours RUNS``: their ``Time`` added up, in hours (one decimal); ``seconds RUN``: a run's,
  in seconds;
- ``last RUN``: the run's last ``AverageTestEpRet``; ``curve RUN``: every epoch's, in order;
- ``epoch RUN E``: its ``AverageTestEpRet`` at epoch E;
- ``mean RUN N [E]``: the mean ``AverageTestEpRet`` of its last N epochs (up to epoch E);
- ``colrange RUN NAME A B``: column NAME's lowest and highest over epochs A to B, whole;
- ``colmean RUNS NAME A B D``: column NAME's mean over epochs A to B of every run, with D
  decimals (``thousands``: a number with separators);
- ``minutesat RUN E``: its ``Time`` at the end of epoch E, in minutes;
- ``range RUN A B``: the lowest and highest ``AverageTestEpRet`` of epochs A to B (``low``
  and ``high``: one of them);
- ``column RUN NAME E D``: column NAME at epoch E, with D decimals (``thousands`` for a
  number with separators);
- ``full RUN N``: how many of the last N tests ran full episodes (``TestEpLen`` at
  ``max_ep_len``);
- ``timed WHAT PART``: README's newcomer commands as measured
  (``benchmarks/timing/newcomer.py``: ``quickstart install``, ``quickstart run``, ``tests
  install``, ``tests run``; ``timed machine``: the machine they were measured on).
- ``result FILE KIND KEY FORMAT``: a timing's figure, from the last row of
  ``benchmarks/results/FILE`` whose ``kind`` is KIND: its KEY (``a.b`` for a key inside
  one), as FORMAT: ``percent`` (0.046: 4.6%), ``x`` (a ratio, 0.87x), ``whole``, or a
  number of decimals.
- ``costs FILE ALGO``: how many times as long an environment step of ALGO takes as one of
  SAC, by the median env steps/s of the speed rows of ``benchmarks/results/FILE`` that
  ``time_to_score.py --family`` reads (``9x``; ``simbav2-w256`` for the 256-wide rows);
  ``speedratio FILE OTHER ALGO``: ALGO's median env steps/s in FILE over that in OTHER
  (``3.8x``), for two machines' speeds.

``tests/test_facts.py`` fails when a marked figure and the data disagree.
"""

from __future__ import annotations

import csv
import glob
import json
import os.path as osp
import re
import sys

REPO = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))
BENCH = osp.join(REPO, "data", "benchmarks")
DOCS = ["README.md", "docs/benchmarks.md", "docs/algorithms/family.md", "docs/user/pixels.md",
        "docs/user/goals.md", "docs/user/memory.md", "docs/user/running.md",
        "docs/user/installation.md"]
# Spinning Up's five MuJoCo tasks, as learning.py's default suite runs them.
GROUPS = {"spinningup": [f"sac-{t}-v5" for t in ("halfcheetah", "hopper", "walker2d", "ant",
                                                 "swimmer")]}
MARK = re.compile(r"<!-- fact ([^>]*?) -->(.*?)<!-- /fact -->", re.S)


def run_dirs(spec: str) -> list[str]:
    """The run directories ``spec`` names (a group, a folder, or one run)."""
    if "," in spec:  # several, each a folder or a run
        return [d for part in spec.split(",") for d in run_dirs(part)]
    folders = GROUPS.get(spec, [spec])
    dirs = []
    for folder in folders:
        path = osp.join(BENCH, folder)
        if osp.exists(osp.join(path, "progress.txt")):
            dirs.append(path)
        else:
            dirs += sorted(osp.dirname(p) for p in glob.glob(osp.join(path, "*",
                                                                      "progress.txt")))
    if not dirs:
        raise ValueError(f"no bundled run for {spec!r}")
    return dirs


def progress(run: str) -> list[dict]:
    with open(osp.join(run, "progress.txt")) as f:
        return list(csv.DictReader(f, delimiter="\t"))


def number(x: float) -> str:
    """As the docs write numbers: thousands separated, no decimals."""
    return f"{round(x):,}"


def smoothed(task: str, step: int, n: int | None = None, mean_only: bool = False) -> str:
    """Our SAC's smoothed test return on ``task`` at ``step``, ``mean ± sd`` over seeds."""
    sys.path.insert(0, osp.dirname(osp.abspath(__file__)))
    from compare_curves import our_curves

    steps, rows = our_curves(task, BENCH)
    values = rows[:n, list(steps).index(step)] if n else rows[:, list(steps).index(step)]
    mean, sd = float(values.mean()), float(values.std(ddof=1))
    return number(mean) if mean_only else f"{number(mean)} ± {number(sd)}"


def result(file: str, kind: str, key: str, fmt: str) -> str:
    """A figure of a timing's result (see the ``result`` kind in the module's docstring)."""
    with open(osp.join(REPO, "benchmarks", "results", file)) as f:
        row = [r for r in map(json.loads, f) if r.get("kind") == kind][-1]
    for part in key.split("."):
        row = row[part]
    x = float(row)
    if fmt == "percent":
        return f"{100 * x:.1f}%"
    if fmt == "x":
        return f"{x:.2f}x"
    return number(x) if fmt == "whole" else f"{x:.{int(fmt)}f}"


def median_speed(file: str, algo: str) -> float:
    """The median float32 env steps/s of ``algo`` in the speed rows of
    ``benchmarks/results/FILE`` that ``time_to_score.py --family`` reads."""
    import statistics

    sys.path.insert(0, osp.join(osp.dirname(osp.dirname(osp.abspath(__file__))), "timing"))
    try:
        from time_to_score import family_speeds
    finally:
        sys.path.pop(0)
    speeds = family_speeds([osp.join(REPO, "benchmarks", "results", file)])
    if (algo, "float32") not in speeds:
        raise ValueError(f"no float32 speed row of {algo!r} in benchmarks/results/{file}")
    return statistics.median(speeds[(algo, "float32")])


def fact(words: list[str]) -> str:
    """The text of the fact ``words`` (its kind, then its arguments)."""
    kind, spec, *rest = words
    if kind == "timed":
        sys.path.insert(0, osp.join(REPO, "benchmarks", "timing"))
        try:
            import newcomer
        finally:
            sys.path.pop(0)
        return newcomer.figure(spec, rest[0] if rest else "")
    if kind == "result":
        return result(spec, *rest)
    if kind == "costs":  # SAC's speed over the variant's, in one file
        return f"{median_speed(spec, 'sac') / median_speed(spec, rest[0]):.0f}x"
    if kind == "speedratio":  # one algorithm's speed in one file over its speed in another
        return f"{median_speed(spec, rest[1]) / median_speed(rest[0], rest[1]):.1f}x"
    if kind in ("smoothed", "smoothedmean"):
        return smoothed(spec, int(rest[0]), int(rest[1]) if len(rest) > 1 else None,
                        kind == "smoothedmean")
    runs = run_dirs(spec)
    if kind == "runs":
        return str(len(runs))
    if kind == "spread":
        at = int(rest[0]) - 1 if rest else -1
        last = [float(progress(r)[at]["AverageTestEpRet"]) for r in runs]
        mean = sum(last) / len(last)
        sd = (sum((x - mean) ** 2 for x in last) / (len(last) - 1)) ** 0.5
        return f"{number(mean)} ± {number(sd)}"
    if kind == "spreadmean":
        n = int(rest[0])
        means = [sum(float(row["AverageTestEpRet"]) for row in progress(r)[-n:]) / n
                 for r in runs]
        mean = sum(means) / len(means)
        sd = (sum((x - mean) ** 2 for x in means) / (len(means) - 1)) ** 0.5
        return f"{number(mean)} ± {number(sd)}"
    if kind == "solvedby":
        steps = []
        for r in runs:
            rows = progress(r)
            solved = [float(row["TestSuccessRate"]) == 1.0 for row in rows]
            if not solved[-1]:
                return "never"
            first = len(solved) - next(i for i, s in enumerate(reversed(solved)) if not s) \
                if not all(solved) else 0
            steps.append(int(rows[first]["TotalEnvInteracts"]))
        return number(max(steps))
    if kind == "colrange":
        name, a, b = rest
        part = [float(row[name]) for row in progress(runs[0])[int(a) - 1:int(b)]]
        return f"{number(min(part))}-{number(max(part))}"
    if kind == "colmean":
        name, a, b, decimals = rest
        values = [float(row[name]) for r in runs for row in progress(r)[int(a) - 1:int(b)]]
        value = sum(values) / len(values)
        return number(value) if decimals == "thousands" else f"{value:.{int(decimals)}f}"
    if kind in ("minutes", "hours", "seconds"):
        times = [float(progress(r)[-1]["Time"]) for r in runs]
        if kind == "hours":
            return f"{sum(times) / 3600:.1f}"
        if kind == "seconds":
            return number(sum(times))
        low, high = round(min(times) / 60), round(max(times) / 60)
        return str(low) if low == high else f"{low}-{high}"
    (run,) = runs
    rows = progress(run)
    tests = [float(r["AverageTestEpRet"]) for r in rows]
    if kind == "last":
        return number(tests[-1])
    if kind == "curve":
        return ", ".join(number(x) for x in tests)
    if kind == "epoch":
        return number(tests[int(rest[0]) - 1])
    if kind == "mean":
        end = int(rest[1]) if len(rest) > 1 else len(tests)
        part = tests[end - int(rest[0]):end]
        return number(sum(part) / len(part))
    if kind == "minutesat":
        return number(float(rows[int(rest[0]) - 1]["Time"]) / 60)
    if kind in ("range", "low", "high"):
        a, b = int(rest[0]), int(rest[1])
        part = tests[a - 1:b]
        low, high = number(min(part)), number(max(part))
        span = f"{low} to {high}" if min(part) < 0 else f"{low}-{high}"
        return {"range": span, "low": low, "high": high}[kind]
    if kind == "column":
        name, epoch, decimals = rest
        value = float(rows[int(epoch) - 1][name])
        return number(value) if decimals == "thousands" else f"{value:.{int(decimals)}f}"
    if kind == "full":
        with open(osp.join(run, "config.json")) as f:
            max_ep_len = json.load(f)["max_ep_len"]
        n = int(rest[0])
        return str(sum(float(r["TestEpLen"]) >= max_ep_len for r in rows[-n:]))
    raise ValueError(f"unknown fact kind {kind!r}")


def check_or_write(write: bool) -> list[str]:
    """Each marked figure that the data disagrees with (``write``: rewritten instead)."""
    wrong = []
    for name in DOCS:
        path = osp.join(REPO, name)
        with open(path, encoding="utf-8") as f:
            text = f.read()

        def replace(m: re.Match) -> str:
            value = fact(m[1].split())
            if value != m[2]:
                wrong.append(f"{name}: fact {m[1]!r} says {m[2]!r}, the data {value!r}")
            return f"<!-- fact {m[1]} -->{value}<!-- /fact -->"

        new = MARK.sub(replace, text)
        if write and new != text:
            with open(path, "w", encoding="utf-8") as f:
                f.write(new)
    return wrong


if __name__ == "__main__":
    check = "--check" in sys.argv[1:]
    wrong = check_or_write(write=not check)
    print("\n".join(wrong) or "every marked figure agrees with the data")
    sys.exit(1 if check and wrong else 0)
