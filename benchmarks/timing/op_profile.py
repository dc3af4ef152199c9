"""Where a variant's update block spends its time, op by op (issue 80's element-wise share).

    python benchmarks/timing/op_profile.py --algo crossq [--precision bfloat16] [--blocks 5]
    python benchmarks/timing/op_profile.py --algo tqc --out benchmarks/results/DATE_op_profile.jsonl

Builds the variant's real fused update block as ``floor.py`` does (speed.py's ``FAMILY``
settings: CrossQ's critics 512 wide, batch 256, alpha learned), warms it, then records
``--blocks`` blocks of 50 updates under TensorFlow's profiler and reads its per-op table
(TensorFlow's own ``framework_op_stats``, each op's self time). Prints the share of the busy
time (the time the profiler saw an op running, idle time apart) of each op type, grouped as
the issue asks: the matrix products, Batch Renormalization (every op under a BatchRenorm
layer: moments, scale and shift, their gradients), Adam, and the rest; and the idle share
(one of the inter-op threads waiting on the other). With ``--out``, the groups and the ten
largest op types are appended as one JSON line with the CPU (bf16_matmul.py's ``report``).
Shares, not times, are what carry over between machines; the machine should be quiet.
"""

from __future__ import annotations

import argparse
import collections
import glob
import json
import os
import os.path as osp
import sys
import tempfile

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
HERE = osp.dirname(osp.abspath(__file__))
sys.path[:0] = [HERE, osp.dirname(HERE)]

GROUPS = (("products", ("MatMul",)), ("Adam", ("ApplyAdam",)))


def op_table(block, inputs, blocks: int) -> list[dict]:
    """TensorFlow profiler's ``framework_op_stats`` rows (one per op: its name, type and
    self time in µs) over ``blocks`` calls of ``block(*inputs)``."""
    import tensorflow as tf
    from tensorflow.python.profiler.internal import _pywrap_profiler_plugin as plugin

    for _ in range(3):  # traced and warm before the profile
        {k: v.numpy() for k, v in block(*inputs).items()}
    logdir = tempfile.mkdtemp(prefix="op_profile_")
    tf.profiler.experimental.start(logdir)
    for _ in range(blocks):
        {k: v.numpy() for k, v in block(*inputs).items()}
    tf.profiler.experimental.stop()
    paths = glob.glob(osp.join(logdir, "**", "*.xplane.pb"), recursive=True)
    data, ok = plugin.xspace_to_tools_data(paths, "framework_op_stats", {})
    if not ok:
        sys.exit(f"op_profile.py: TensorFlow's profiler gave no op table from {logdir}.")
    table = json.loads(data)[0]
    cols = [c["id"] for c in table["cols"]]
    return [{c: (cell or {}).get("v") for c, cell in zip(cols, row["c"], strict=True)}
            for row in table["rows"]]


def group_of(row: dict) -> str:
    """The group an op's time counts to: idle, BatchRenorm, the products, Adam or other."""
    if row["type"] == "IDLE":
        return "idle"
    if "batch_renorm" in row["operation"]:
        return "BatchRenorm"
    return next((g for g, marks in GROUPS if any(m in row["type"] for m in marks)), "other")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--algo", default="crossq")
    p.add_argument("--env", default="HalfCheetah-v5")
    p.add_argument("--precision", choices=["float32", "bfloat16"], default="float32")
    p.add_argument("--blocks", type=int, default=5)
    p.add_argument("--out", help="append the shares as one JSON line to this .jsonl file")
    p.add_argument("--label", help="a name for the code profiled, kept in the JSON line "
                                   "(e.g. the commit, when comparing two checkouts)")
    a = p.parse_args(argv)
    import gymnasium as gym
    from bf16_matmul import report
    from floor import N_BLOCK, variant_parts
    from speed import family_settings

    env = gym.make(a.env)
    *_, block, inputs = variant_parts(env, a.algo, 256, family_settings(a.algo), a.precision)
    rows = op_table(block, inputs, a.blocks)
    total = sum(r["total_self_time"] for r in rows)
    busy = total - sum(r["total_self_time"] for r in rows if r["type"] == "IDLE")
    groups, types = collections.Counter(), collections.Counter()
    for r in rows:
        groups[group_of(r)] += r["total_self_time"]
        if r["type"] != "IDLE":
            types[(group_of(r), r["type"])] += r["total_self_time"]
    updates = a.blocks * N_BLOCK
    print(f"{a.algo} on {a.env}, {a.precision}, {a.blocks} blocks of {N_BLOCK} updates: shares "
          f"of the busy time (idle: of all the threads' time), and the ops' own time in µs "
          f"per update (both threads' time added: about twice the wall-clock they take)")
    print(f"  {'idle':12s} {groups['idle'] / total:6.1%}")
    for g in ("products", "BatchRenorm", "Adam", "other"):
        print(f"  {g:12s} {groups[g] / busy:6.1%} {groups[g] / updates:9.1f} µs")
        for (gg, ty), t in types.most_common():
            if gg == g and t / busy >= 0.002:
                print(f"      {ty:28s} {t / busy:6.1%} {t / updates:9.1f} µs")
    if a.out:
        report(dict(what="op_profile", label=a.label, algo=a.algo, env=a.env,
                    precision=a.precision,
                    blocks=a.blocks, idle=round(groups["idle"] / total, 4),
                    shares={g: round(groups[g] / busy, 4)
                            for g in ("products", "BatchRenorm", "Adam", "other")},
                    us_per_update={g: round(groups[g] / updates, 1)
                                   for g in ("products", "BatchRenorm", "Adam", "other")},
                    top={f"{g}/{ty}": round(t / busy, 4)
                         for (g, ty), t in types.most_common(10)}), a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
