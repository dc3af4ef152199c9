"""The headline speed figures: ours against each peer, from the latest race on each CPU.

    python benchmarks/timing/headline.py > benchmarks/headline.md

Reads every ``benchmarks/results/*_race.jsonl`` that ``race.py --out`` wrote (HalfCheetah-v5,
not pixels, float32: a race with a bfloat16 side is ``family_race.py``'s), keeps the latest
race of each CPU (its machine record names it), and prints the
ratios ours/peer of the medians, updates per second then env steps per second. README.md,
the introduction, the design page and the Benchmarks page all show this one file, so the
figures are stated once; the tests hold it equal to what this script prints.
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
                and "ours_bf16" not in rows  # float32's race (family_race.py has bfloat16's)
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
        med = {who: {k: statistics.median(r[k] for r in rs) for k in FIGURES}
               for who, rs in rows.items()}
        ratios = [" / ".join(f"{med['ours'][k] / med[p][k]:.2f}" for k in FIGURES)
                  if p in med else "-" for p in PEERS]
        cpu = machine["cpu"].replace(", 2 logical CPUs", "")
        lines.append(f"| {cpu} | {machine['date']} (`results/{name}`) | " + " | ".join(ratios)
                     + f" | {med['ours']['updates_per_s']:.0f} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    races = latest_races()
    if not races:
        sys.exit(f"headline.py: no race with a machine record in {RESULTS}; "
                 f"run race.py --out {RESULTS}/DATE_race.jsonl first.")
    sys.stdout.write(headline(races))
