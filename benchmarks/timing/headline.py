"""The headline speed figures: ours against each peer, from the latest race on each CPU;
with ``--family``, the family's race against SBX in both precisions (issue 80).

    python benchmarks/timing/headline.py > benchmarks/headline.md
    python benchmarks/timing/headline.py --family > benchmarks/family_race.md

Reads every ``benchmarks/results/*_race.jsonl`` that ``race.py --out`` wrote (HalfCheetah-v5,
not pixels, float32: a race with a bfloat16 side is ``--family``'s), keeps the latest
race of each CPU (its machine record names it), and prints the
ratios ours/peer of the medians, updates per second then env steps per second. README.md,
the introduction, the design page and the Benchmarks page all show this one file, so the
figures are stated once; the tests hold it equal to what this script prints.

``--family`` reads the races that ``race.py --out`` wrote with ``--peers sbx --precision
float32 bfloat16`` (HalfCheetah-v5, state vectors, each variant's default width), keeps the
latest race of each variant (SAC, CrossQ, TQC, DroQ, REDQ), and prints the medians over
rounds of SBX's, ours in float32 and ours in bfloat16, with the ratios ours/SBX, in updates
per second and env steps per second. The family's page includes the file; the tests hold it
equal to what this script prints.
"""

from __future__ import annotations

import glob
import os.path as osp
import statistics
import sys

from race import FIGURES, read_race

HERE = osp.dirname(osp.abspath(__file__))
RESULTS = osp.join(osp.dirname(HERE), "results")
PEERS = {"sb3": "Stable-Baselines3", "sbx": "SBX", "tfagents": "TF-Agents"}


def latest_races(results: str = RESULTS) -> list[tuple[str, dict, dict]]:
    """The latest state-vector race of SAC on each CPU: (file name, machine record, rows by
    who)."""
    latest: dict[str, tuple[str, dict, dict]] = {}
    for path in sorted(glob.glob(osp.join(results, "*_race.jsonl"))):  # dated names sort
        machine, rows = read_race(path)
        peers = set(rows) & set(PEERS)  # a race against the peers, not another checkout
        if (machine and peers and not machine.get("pixels")
                and machine.get("algo", "sac") == "sac"  # SAC's race, not a variant's
                and "ours_bf16" not in rows  # float32's race (--family has bfloat16's)
                and "(model not recorded)" not in machine["cpu"]):
            latest[machine["cpu"]] = (osp.basename(path), machine, rows)
    return sorted(latest.values(), key=lambda race: race[0], reverse=True)


def headline(races: list[tuple[str, dict, dict]]) -> str:
    """The Markdown paragraph and table of ``races``' ratios ours/peer."""
    lines = ["Speed of the real training loop on 2 cores (`python benchmarks/timing/race.py`: "
             "HalfCheetah-v5, Spinning Up's settings on all sides, each peer followed by ours "
             "in every round, medians of the rounds), as ours/peer in updates per second / "
             "env steps per second, on the latest race of each CPU. All are float32, the "
             "default, and the CPU column names the vector extensions each machine had (AVX2 "
             "is the least of them); `--precision bfloat16`, on a CPU with AVX512_BF16 or "
             "AMX_BF16, is raced on the family's page (`benchmarks/family_race.md`):", "",
             "| CPU | race | " + " | ".join(f"ours/{name}" for name in PEERS.values())
             + " | ours, updates/s |",
             "|---|---|" + "---:|" * (len(PEERS) + 1)]
    for name, machine, rows in races:
        med = medians(rows)
        ratios = [" / ".join(f"{med['ours'][k] / med[p][k]:.2f}" for k in FIGURES)
                  if p in med else "-" for p in PEERS]
        cpu = machine["cpu"].replace(", 2 logical CPUs", "")
        lines.append(f"| {cpu} | {machine['date']} (`results/{name}`) | " + " | ".join(ratios)
                     + f" | {med['ours']['updates_per_s']:.0f} |")
    return "\n".join(lines) + "\n"


def medians(rows: dict[str, list[dict]]) -> dict[str, dict[str, float]]:
    """Each side's median over rounds of each of race.py's ``FIGURES``."""
    return {who: {k: statistics.median(r[k] for r in rs) for k in FIGURES}
            for who, rs in rows.items()}


# --family: each variant, and what of SBX's it races (REDQ: SBX has none; its SAC with 10
# critics), and issue 80's aims, ours/SBX in updates per second.
VARIANTS = {"sac": ("SAC", "SAC"), "crossq": ("CrossQ", "CrossQ"), "tqc": ("TQC", "TQC"),
            "droq": ("DroQ", "DroQ"), "redq": ("REDQ", "SAC, 10 critics")}
AIM = {"float32": 1.0, "bfloat16": 1.5}


def latest_family_races(results: str = RESULTS) -> dict[str, tuple[str, dict, dict]]:
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


def family_table(races: dict[str, tuple[str, dict, dict]]) -> str:
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
        med = medians(rows)
        cells = [f"{med['sbx']['updates_per_s']:.1f} ({med['sbx']['env_steps_per_s']:.1f})"]
        for who, prec in (("ours", "float32"), ("ours_bf16", "bfloat16")):
            ratio = med[who]["updates_per_s"] / med["sbx"]["updates_per_s"]
            steps = med[who]["env_steps_per_s"] / med["sbx"]["env_steps_per_s"]
            mark = "" if ratio >= AIM[prec] else f", aim {AIM[prec]:.1f}x"
            cells += [f"{med[who]['updates_per_s']:.1f} ({med[who]['env_steps_per_s']:.1f})",
                      f"{ratio:.2f}x ({steps:.2f}x{mark})"]
        lines.append(f"| {name} | {peer} | " + " | ".join(cells)
                     + f" | {machine['date']}, {len(rows['ours'])} rounds (`results/{file}`) |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    if sys.argv[1:] == ["--family"]:
        if not (family := latest_family_races()):
            sys.exit(f"headline.py: no race against SBX in both precisions in {RESULTS}; run "
                     "race.py --peers sbx --precision float32 bfloat16 "
                     f"--out {RESULTS}/DATE_race.jsonl")
        sys.stdout.write(family_table(family))
        sys.exit(0)
    races = latest_races()
    if not races:
        sys.exit(f"headline.py: no race with a machine record in {RESULTS}; "
                 f"run race.py --out {RESULTS}/DATE_race.jsonl first.")
    sys.stdout.write(headline(races))
