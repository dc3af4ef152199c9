"""How much of a Humanoid-v5 return is the contact cost that Humanoid-v4 does not charge?

The published Humanoid rows (SimbaV2's files) are Humanoid-v4, whose reward has no contact
cost (gymnasium removed it in v4 and restored it in v5, weight 5e-7 on the squared external
contact forces, capped at 10 a step). Our runs are on -v5. This script runs a finished
run's last policy (the mean action, as the test episodes do) on Humanoid-v5 and splits each
episode's return into the terms the environment reports (``info['reward_forward']``,
``reward_survive``, ``reward_ctrl``, ``reward_contact``), so the return the same episode
would have scored under -v4's reward (everything but the contact cost; -v4 also paid the
survival bonus on the falling step, at most 5) can be read beside the published row.

    python benchmarks/learning/humanoid_reward_terms.py RUN_DIR... [--episodes 10]

One JSON line per run is appended to ``benchmarks/results/humanoid_reward_terms.jsonl``:
``kind`` (the run's name, for ``facts.py``'s ``result`` figures), its steps and last logged
test return, the episodes' mean of each term and of both returns, and each episode's; a
table is printed. It needs the run's checkpoint (``tf2_save``), which the bundled runs in
``data/benchmarks/`` do not carry: run it on the run directories the runs wrote.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import sys

import numpy as np

REPO = pathlib.Path(__file__).resolve().parents[2]
RESULTS = REPO / "benchmarks" / "results" / "humanoid_reward_terms.jsonl"
TERMS = ("reward_forward", "reward_survive", "reward_ctrl", "reward_contact")


def episode_terms(env, get_action, seed: int) -> dict:
    """One episode from ``env.reset(seed=seed)``: its return, length and the sum of each of
    :data:`TERMS`."""
    o, _ = env.reset(seed=seed)
    out = dict(ret=0.0, len=0, **{t: 0.0 for t in TERMS})
    done = False
    while not done:
        o, r, terminated, truncated, info = env.step(get_action(o))
        out["ret"] += float(r)
        out["len"] += 1
        for t in TERMS:
            out[t] += float(info[t])
        done = terminated or truncated
    parts = sum(out[t] for t in TERMS)
    if abs(parts - out["ret"]) > 1e-6 * max(1.0, abs(out["ret"])):
        raise RuntimeError(f"Humanoid-v5's reward terms sum to {parts}, its rewards to "
                           f"{out['ret']}: this gymnasium splits the reward differently, so "
                           f"the -v4 return cannot be read off the terms.")
    out["ret_v4_reward"] = out["ret"] - out["reward_contact"]
    return out


def main() -> int:
    """Split each given run's test returns into Humanoid-v5's reward terms."""
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("runs", nargs="+", help="run directories (each holding tf2_save)")
    p.add_argument("--episodes", type=int, default=10,
                   help="episodes per run, from reset seeds 0..N-1 (default 10, as the "
                        "test episodes of an epoch)")
    a = p.parse_args()
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    from spinup_tf2.policy.load import load_policy_and_env
    from spinup_tf2.rundir import read_progress

    rows = []
    for run in a.runs:
        env, get_action = load_policy_and_env(run, "last", deterministic=True)
        if env is None or env.spec is None or not env.spec.id.startswith("Humanoid-v5"):
            sys.exit(f"{run}: its environment is {getattr(env, 'spec', None)}, not Humanoid-v5; "
                     f"give runs of Humanoid-v5 (the reward terms are -v5's).")
        eps = [episode_terms(env, get_action, seed) for seed in range(a.episodes)]
        mean = {k: float(np.mean([e[k] for e in eps])) for k in eps[0]}
        last = read_progress(run).iloc[-1]
        row = dict(kind=os.path.basename(os.path.normpath(run)), episodes=a.episodes,
                   steps=int(last["TotalEnvInteracts"]),
                   test_return_in_progress=float(last["AverageTestEpRet"]), mean=mean,
                   per_episode=eps)
        rows.append(row)
        RESULTS.parent.mkdir(parents=True, exist_ok=True)
        with open(RESULTS, "a") as f:
            f.write(json.dumps(row) + "\n")
    head = ("run", "length", "return (-v5)", "forward", "survive", "ctrl", "contact",
            "return, -v4 reward")
    print(" | ".join(head))
    for row in rows:
        m = row["mean"]
        print(" | ".join([row["kind"], f"{m['len']:.0f}", f"{m['ret']:.0f}",
                          *(f"{m[t]:.0f}" for t in TERMS), f"{m['ret_v4_reward']:.0f}"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
