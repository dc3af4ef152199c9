"""The family's race against SBX in both precisions (issue 80), as one table.

    python benchmarks/timing/family_race.py > benchmarks/family_race.md

Reads every ``benchmarks/results/*_race.jsonl`` that ``race.py --out`` wrote with ``--peers
sbx --precision float32 bfloat16`` (HalfCheetah-v5, state vectors, each variant's default
width), keeps the latest race of each variant (SAC, CrossQ, TQC, DroQ, REDQ), and prints the
medians over rounds of SBX's, ours in float32 and ours in bfloat16, with the ratios
ours/SBX, in updates per second and env steps per second. The family's page and the
Benchmarks page include the file; the tests hold it equal to what this script prints.
"""

from __future__ import annotations

import glob
import os.path as osp
import statistics
import sys

from race import read_race

HERE = osp.dirname(osp.abspath(__file__))
RESULTS = osp.join(osp.dirname(HERE), "results")
# Each variant, and what of SBX's it races (REDQ: SBX has none; its SAC with 10 critics).
VARIANTS = {"sac": ("SAC", "SAC"), "crossq": ("CrossQ", "CrossQ"), "tqc": ("TQC", "TQC"),
            "droq": ("DroQ", "DroQ"), "redq": ("REDQ", "SAC, 10 critics")}
AIM = {"float32": 1.0, "bfloat16": 1.5}  # the aims, ours/SBX in updates per second


def latest_races(results: str = RESULTS) -> dict[str, tuple[str, dict, dict]]:
    """The latest race of each variant against SBX in both precisions: ``{algo: (file name,
    machine record, rows by who)}``."""
    latest = {}
    for path in sorted(glob.glob(osp.join(results, "*_race.jsonl"))):  # dated names sort
        machine, rows = read_race(path)
        if (machine.get("algo", "sac") in VARIANTS and not machine.get("pixels")
                and machine.get("critic_width") is None and machine.get("env") == "HalfCheetah-v5"
                and {"sbx", "ours", "ours_bf16"} <= set(rows)):
            latest[machine.get("algo", "sac")] = (osp.basename(path), machine, rows)
    return latest


def table(races: dict[str, tuple[str, dict, dict]]) -> str:
    """The Markdown table of ``races``: medians and ratios ours/SBX in each precision."""
    machines = {(m["cpu"], " ".join(m.get("cpu_flags", []))) for _, m, _ in races.values()}
    cpus = "; ".join(f"{cpu.replace(', 2 logical CPUs', '')} (flags: {flags or 'not recorded'})"
                     for cpu, flags in sorted(machines))
    lines = [f"`race.py --algo NAME --peers sbx --precision float32 bfloat16` on 2 cores of "
             f"{cpus}: HalfCheetah-v5, each side's defaults as `speed.py` races them, medians of "
             "the rounds (updates per second; env steps per second in brackets).", "",
             "| variant | against SBX's | SBX | ours, float32 | ours/SBX | ours, bfloat16 | "
             "ours/SBX | race |",
             "|---|---|---:|---:|---:|---:|---:|---|"]
    for algo, (name, peer) in VARIANTS.items():
        if algo not in races:
            continue
        file, machine, rows = races[algo]
        med = {who: {k: statistics.median(r[k] for r in rows[who])
                     for k in ("updates_per_s", "env_steps_per_s")}
               for who in ("sbx", "ours", "ours_bf16")}
        cells = [f"{med['sbx']['updates_per_s']:.1f} ({med['sbx']['env_steps_per_s']:.1f})"]
        for who, prec in (("ours", "float32"), ("ours_bf16", "bfloat16")):
            ratio = med[who]["updates_per_s"] / med["sbx"]["updates_per_s"]
            steps = med[who]["env_steps_per_s"] / med["sbx"]["env_steps_per_s"]
            mark = "" if ratio >= AIM[prec] else f", aim {AIM[prec]:.1f}x"
            cells += [f"{med[who]['updates_per_s']:.1f} ({med[who]['env_steps_per_s']:.1f})",
                      f"{ratio:.2f}x ({steps:.2f}x{mark})"]
        rounds = len(rows["ours"])
        lines.append(f"| {name} | {peer} | " + " | ".join(cells)
                     + f" | {machine['date']}, {rounds} rounds (`results/{file}`) |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    races = latest_races()
    if not races:
        sys.exit(f"family_race.py: no race against SBX in both precisions in {RESULTS}; run "
                 "race.py --peers sbx --precision float32 bfloat16 "
                 f"--out {RESULTS}/DATE_race.jsonl")
    sys.stdout.write(table(races))
