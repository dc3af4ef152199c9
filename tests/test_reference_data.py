"""The SAC family's published curves (benchmarks/learning/reference/) say what their README
says: the means and standard errors at 100k steps are computed here from the bundled file."""
import sys
from pathlib import Path

import numpy as np
import pandas as pd

REF = Path(__file__).resolve().parent.parent / "benchmarks" / "learning" / "reference"


def test_the_published_100k_scores_are_those_of_the_bundled_file():
    data = pd.read_csv(REF / "simbav2_baselines_100k.csv")
    readme = " ".join((REF / "README.md").read_text().split())
    assert set(data.algorithm) == {"SAC", "CrossQ", "REDQ (UTD 20)", "DroQ (UTD 20)"}
    for algorithm, rows in data.groupby("algorithm"):
        cells = []
        for env in ("HalfCheetah-v4", "Hopper-v4", "Walker2d-v4", "Ant-v4"):
            runs = rows[rows.env == env]
            last = runs[runs.env_step == runs.env_step.max()].avg_return
            assert len(last) == 10 and runs.env_step.max() in (99_996, 100_000)
            cells.append(f"{last.mean():.0f} ± {last.std(ddof=1) / np.sqrt(10):.0f}")
        assert ", ".join(cells) in readme, (algorithm, cells)


def test_the_family_table_finds_each_variants_published_rows():
    """compare_curves.py's names for SimbaV2's rows are the file's: each variant it says was
    published has rows on all four tasks (a misspelt name would leave "none published")."""
    sys.path.insert(0, str(REF.parent))
    try:
        import compare_curves
    finally:
        sys.path.pop(0)
    data = compare_curves.published_rows()
    data = data[data.env != "Humanoid-v4"]  # the four tasks of the 100k table
    assert set(compare_curves.SIMBAV2_NAMES) == set(compare_curves.FAMILY_NAMES) - {"tqc"}
    for variant, name in compare_curves.SIMBAV2_NAMES.items():
        assert set(data[data.algorithm == name].env) == \
            {"HalfCheetah-v4", "Hopper-v4", "Walker2d-v4", "Ant-v4"}, (variant, name)


def test_the_humanoid_and_simbav2_rows_hold_every_seed_at_300k():
    """simbav2_rows.py's file: every algorithm's seeds each have a point within 5 % of 300k
    steps on Humanoid-v4 (10 seeds; SimbaV2 at 1 update per step, 5), and SimbaV2's on the
    four other tasks, so the table's means are over whole seed sets."""
    sys.path.insert(0, str(REF))
    try:
        import simbav2_rows
    finally:
        sys.path.pop(0)
    rows = pd.read_csv(REF / "simbav2_humanoid_and_simbav2.csv")
    for (alg, env), r in rows.groupby(["algorithm", "env"]):
        mean, se, seeds = simbav2_rows.at_budget(r, 300_000)
        assert seeds == (5 if alg == "SimbaV2 (UTD 1)" else 10), (alg, env, seeds)
        assert np.isfinite(mean) and se > 0
    assert set(rows[rows.env == "Humanoid-v4"].algorithm) == set(simbav2_rows.FILES.values())


def test_the_width_study_holds_every_width_on_the_same_tasks():
    """simbav2_rows.py's width file: the four critic widths on the same 12 tasks, each task's
    seeds (5, 10 at 512) with points to 1M steps; width 512's share of itself is 1 and the
    table has a row per width."""
    sys.path.insert(0, str(REF))
    try:
        import simbav2_rows
    finally:
        sys.path.pop(0)
    rows = pd.read_csv(REF / "simbav2_width_scaling.csv")
    tasks = {w: set(r.env) for w, r in rows.groupby("critic_width")}
    assert sorted(tasks) == list(simbav2_rows.WIDTHS)
    assert len(set(map(frozenset, tasks.values()))) == 1 and len(tasks[512]) == 12
    seeds = rows.groupby(["critic_width", "env"]).seed.nunique()
    assert set(seeds.loc[512]) == {10} and set(seeds.drop(512, level=0)) == {5}
    assert rows.groupby(["critic_width", "env", "seed"]).env_step.max().min() == 1_000_000
    table = simbav2_rows.widths_table(rows).splitlines()
    assert len(table) == 2 + len(simbav2_rows.WIDTHS)
    assert "| 512 | 1.00 (1.00-1.00) |" in table[4]


def test_a_reading_says_how_many_seeds_it_rests_on():
    """One seed gives only the side, two a reading marked provisional (their standard error
    has one degree of freedom), three or more a reading."""
    sys.path.insert(0, str(REF.parent))
    try:
        import compare_curves
    finally:
        sys.path.pop(0)
    one, two, three = (compare_curves.versus(np.array(x), 100.0, 10.0)
                       for x in ([150.0], [90.0, 150.0], [90.0, 150.0, 120.0]))
    assert one == "+50 (one seed: no s.e.) | at or above (one seed: no verdict)"
    assert two == "+20 (± 32) | at or above (two seeds: provisional)"
    assert three == "+20 (± 20) | at or above"
