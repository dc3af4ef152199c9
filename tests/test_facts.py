"""Figures in README and the docs about bundled runs are made from the runs
(benchmarks/learning/facts.py): every marked figure agrees with data/benchmarks/, and a
figure typed against the data is found."""

import os
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "benchmarks", "learning"))

import facts  # noqa: E402


def test_every_marked_figure_agrees_with_the_bundled_runs():
    assert facts.check_or_write(write=False) == []
    assert sum(len(facts.MARK.findall(open(os.path.join(REPO, d)).read()))
               for d in facts.DOCS) >= 40


def test_a_figure_that_disagrees_is_named(tmp_path, monkeypatch):
    """The issue's own example: '40 runs' where 35 are bundled, and seed 50's last epoch."""
    doc = tmp_path / "page.md"
    doc.write_text("All <!-- fact runs spinningup -->40<!-- /fact --> runs; seed 50 "
                   "(<!-- fact last sac-halfcheetah-v5/sac-halfcheetah-v5_s50 -->9,652"
                   "<!-- /fact -->).")
    monkeypatch.setattr(facts, "REPO", str(tmp_path))
    monkeypatch.setattr(facts, "DOCS", ["page.md"])
    wrong = facts.check_or_write(write=False)
    assert len(wrong) == 2 and "'40'" in wrong[0] and "'35'" in wrong[0]
    assert "'9,652'" in wrong[1] and "'10,134'" in wrong[1]
    facts.check_or_write(write=True)
    assert "-->35<!--" in doc.read_text() and "-->10,134<!--" in doc.read_text()


def test_a_cost_is_the_ratio_of_median_speeds(tmp_path, monkeypatch):
    """``costs`` and ``speedratio`` on speed rows written by hand: medians of each algorithm's
    rows, a 256-wide SimbaV2 row as ``simbav2-w256``, TQC's rows with 2 critics left out."""
    import json

    def row(algo, speed, **kw):
        return json.dumps({"impl": "spinup_tf2", "algo": algo, "env_steps_per_s": speed, **kw})

    results = tmp_path / "benchmarks" / "results"
    results.mkdir(parents=True)
    (results / "a.jsonl").write_text("\n".join([
        json.dumps({"who": "machine"}), row("sac", 300.0), row("sac", 290.0), row("sac", 330.0),
        row("crossq", 30.0), row("crossq", 31.0), row("crossq", 29.0),
        row("tqc", 100.0, n_critics=2), row("tqc", 20.0, n_critics=5),
        row("simbav2", 6.0, critic_width=384), row("simbav2", 15.0, critic_width=256)]) + "\n")
    (results / "b.jsonl").write_text(row("sac", 1200.0) + "\n")
    monkeypatch.setattr(facts, "REPO", str(tmp_path))
    assert facts.fact(["costs", "a.jsonl", "crossq"]) == "10x"  # 300 / 30
    assert facts.fact(["costs", "a.jsonl", "tqc"]) == "15x"  # 300 / 20: 2 critics not TQC's
    assert facts.fact(["costs", "a.jsonl", "simbav2-w256"]) == "20x"
    assert facts.fact(["costs", "a.jsonl", "simbav2"]) == "50x"
    assert facts.fact(["speedratio", "b.jsonl", "a.jsonl", "sac"]) == "4.0x"
