"""What bfloat16 matrix products buy on this CPU, before any of SAC is changed (issue 80).

One ``tf.linalg.matmul`` of a batch of 256 rows by a square weight in a ``tf.function``,
float32 against bfloat16 (the inputs cast once, outside the timed calls), at the widths the
family's layers have (SAC's 256, CrossQ's and TQC's 512 to 1024 critics, SimbaV2's 512
with its 4x inner layers), on the threads the runs use (``tf_setup``'s). Each figure is the
best of ``--rounds`` timings of ``--calls`` calls, in GFLOP/s (2 * batch * n * n flops a
product); the ratio is bf16's over float32's. The CPU's model and its bf16 flags (lscpu:
``avx512_bf16``, ``amx_bf16``) are written with the figures.

    python benchmarks/timing/bf16_matmul.py [--out benchmarks/results/DATE_bf16_matmul.jsonl]
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import os.path as osp
import re
import subprocess
import sys
import time

REPO = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))
sys.path.insert(0, REPO)
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

WIDTHS = (256, 512, 1024, 2048)
BATCH = 256


def cpu() -> dict:
    out = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
    model = re.search(r"Model name:\s*(.+)", out)
    flags = (re.search(r"Flags:\s*(.+)", out) or [None, ""])[1].split()
    return {"cpu": model[1].strip() if model else "?", "cores": os.cpu_count(),
            "flags": [f for f in ("avx2", "avx512f", "avx512_bf16", "amx_bf16", "amx_tile")
                      if f in flags]}


def report(result: dict, out: str | None) -> None:
    """Print a timing's ``result`` (with the CPU and the date added) and append it to ``out``
    (a .jsonl file), if given: how the timings here write what they measured."""
    result.update(cpu(), date=datetime.date.today().isoformat())
    print(json.dumps(result))
    if out:
        with open(out, "a", encoding="utf-8") as f:
            f.write(json.dumps(result) + "\n")


def gflops(tf, n: int, dtype, calls: int, rounds: int) -> float:
    x = tf.cast(tf.random.normal([BATCH, n]), dtype)
    w = tf.cast(tf.random.normal([n, n]) / n ** 0.5, dtype)

    @tf.function
    def products(x, w):
        y = x
        for _ in range(calls):  # unrolled: one call, `calls` products
            y = tf.linalg.matmul(y, w)
        return y

    products(x, w).numpy()  # compile and warm
    best = float("inf")
    for _ in range(rounds):
        start = time.perf_counter()
        products(x, w).numpy()
        best = min(best, time.perf_counter() - start)
    return 2 * BATCH * n * n * calls / best / 1e9


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--calls", type=int, default=20)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--out", default=osp.join(REPO, "benchmarks", "results",
                                             f"{datetime.date.today()}_bf16_matmul.jsonl"))
    a = p.parse_args(argv)
    from spinup_tf2.tf_setup import import_tensorflow

    tf = import_tensorflow()
    machine = cpu()
    rows = []
    for n in WIDTHS:
        f32 = gflops(tf, n, tf.float32, a.calls, a.rounds)
        bf16 = gflops(tf, n, tf.bfloat16, a.calls, a.rounds)
        rows.append(dict(date=str(datetime.date.today()), batch=BATCH, width=n,
                         float32_gflops=round(f32, 1), bfloat16_gflops=round(bf16, 1),
                         ratio=round(bf16 / f32, 2), tensorflow=tf.__version__, **machine))
        print(f"{BATCH} x {n} x {n}: float32 {f32:7.1f} GFLOP/s, bfloat16 {bf16:7.1f} "
              f"GFLOP/s, {bf16 / f32:.2f}x")
    with open(a.out, "a", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps(row) + "\n")
    print(f"{machine['cpu']}, {machine['cores']} cores, flags {' '.join(machine['flags'])}: "
          f"appended to {a.out}")


if __name__ == "__main__":
    main()
