"""Where one SAC update's time goes, and the lowest time TensorFlow's kernels allow.

    python benchmarks/timing/floor.py [--env HalfCheetah-v5] [--blocks 30] [--bfloat16]
    python benchmarks/timing/floor.py --algo crossq    # a variant of the SAC family

``--algo tqc``, ``crossq``, ``droq`` or ``redq`` times the variant's real fused block with
the settings ``benchmarks/speed.py`` races against SBX (its ``FAMILY``: batch 256, alpha
learned, CrossQ's critics 512 wide, TQC with 2 critics), against its matrix products
alone (see :func:`traced_matmuls`): whether the variant's update is bound by arithmetic on
this machine, and so the most any float32 implementation on TensorFlow's kernels could
reach.

``--bfloat16`` also times what lower precision gains: the products in bfloat16 with and
without the casts from float32 weights, and the real block of ``sac(precision='bfloat16')``
(its hidden layers' products in bfloat16, :func:`spinup_tf2.algos.sac.core.products`); with
``--algo``, the variant's real block and its products in bfloat16 beside float32's.

Times four things on this machine, each as microseconds per update (medians over
``--blocks`` compiled blocks of 50 updates, Spinning Up's networks and batch):

1. ``block``: the real fused update block of ``sac()`` (what ``speed.py`` times).
2. ``matmuls``: only the matrix products one update needs (forward and backward,
   listed by :func:`update_matmuls`), split into two independent chains so that
   both cores are busy all the time: the arithmetic at TensorFlow's kernel speed,
   with perfect parallelism and nothing else.
3. ``optimizer``: the Adam steps and the polyak averaging alone, on the real
   variables with fixed gradients (memory-bound: they stream every parameter,
   both Adam moments and the targets).
4. ``fixed``: the real block with 8-unit networks on a batch of 2, where the
   arithmetic is negligible: the cost of running the graph's ~500 ops at all.

``matmuls + optimizer`` is a ceiling for one float32 update made of
TensorFlow's kernels on this machine, even if every other op were free; the
script prints the share of that ceiling the real block reaches.
``matmuls + optimizer + fixed`` (which counts the optimizer's op dispatch
twice, so slightly high) set against ``block`` shows how much a different
arrangement of the same ops could still gain.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import gymnasium as gym  # noqa: E402
import numpy as np  # noqa: E402

from spinup_tf2.algos.sac import core, fast_path, replay, variants  # noqa: E402  (TF's threads first)
from spinup_tf2.algos.sac import sac as sac_mod  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from speed import FAMILY, family_settings  # noqa: E402  (benchmarks/: the races' settings)

from spinup_tf2.family import MEMBERS  # noqa: E402

tf = core.tf
N_BLOCK = 50


def update_matmuls(obs_dim: int, act_dim: int, hidden: int, batch: int) -> list:
    """``(m, k, n)`` of every matrix product in one continuous SAC update with
    two hidden layers (the products TensorFlow keeps after pruning)."""
    o, a, h, b = obs_dim, act_dim, hidden, batch
    pi_fwd = [(b, o, h), (b, h, h), (b, h, a), (b, h, a)]  # hidden layers, mu, log_std
    q_fwd = [(b, o + a, h), (b, h, h), (b, h, 1)]
    fwd = 2 * pi_fwd + 6 * q_fwd  # pi at s, s'; q1, q2 at (s,a), (s,pi); targets at (s',pi')
    # Q losses: weight gradients of all layers, input gradients of the upper two.
    q_loss = [(o + a, b, h), (h, b, h), (h, b, 1), (b, 1, h), (b, h, h)]
    # Policy loss through q1, q2 at (s, pi): input gradients only, down to the action.
    q_pi = [(b, 1, h), (b, h, h), (b, h, o + a)]
    # Policy: weight gradients of all layers, input gradients of the upper ones.
    pi_bwd = [(h, b, a), (h, b, a), (h, b, h), (o, b, h), (b, a, h), (b, a, h), (b, h, h)]
    return fwd + 2 * q_loss + 2 * q_pi + pi_bwd


def flops(shapes: list) -> int:
    """Floating-point operations of the products ``shapes`` (``(m, k, n)`` each)."""
    return sum(2 * m * k * n for m, k, n in shapes)


def per_update(fn, blocks: int) -> float:
    """Median microseconds per update of ``fn()`` (one call = one block)."""
    fn()
    times = []
    for _ in range(blocks):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return float(np.median(times)) / N_BLOCK * 1e6


def random_block(env, batch: int) -> tuple:
    """Inputs of one update block, ``(o, a, r, o2, d, noise)`` for N_BLOCK updates of
    ``batch`` transitions, drawn at random (seed 0) in the env's shapes."""
    od, ad = env.observation_space.shape[0], env.action_space.shape[0]
    rng = np.random.default_rng(0)
    f = np.float32
    return (rng.normal(size=(N_BLOCK, batch, od)).astype(f),
            rng.uniform(-1, 1, (N_BLOCK, batch, ad)).astype(f),
            rng.normal(size=(N_BLOCK, batch)).astype(f),
            rng.normal(size=(N_BLOCK, batch, od)).astype(f), np.zeros((N_BLOCK, batch), f),
            rng.normal(size=(N_BLOCK, 2 * batch, ad)).astype(f))


def real_block(env, hidden: int, batch: int, blocks: int, precision: str = "float32") -> float:
    """The fused block of ``sac()`` with ``hidden``-unit networks, its products in
    ``precision``."""
    ac, ac_targ = sac_mod.build_actor_critics(core.MLPActorCritic, env.observation_space,
                                              env.action_space, dict(hidden_sizes=(hidden,) * 2))
    pi_opt, q_opt = sac_mod.make_optimizers(ac, 1e-3)
    block = fast_path.make_update_block(sac_mod.make_update(ac, ac_targ, pi_opt, q_opt,
                                                          alpha=0.2, polyak=0.995,
                                                          precision=precision))
    args = random_block(env, batch)

    def run():
        return {k: v.numpy() for k, v in block(*args).items()}
    return per_update(run, blocks)


def matmuls_only(shapes: list, blocks: int, dtype=None, cast: bool = True) -> float:
    """The products in ``shapes``, dealt alternately to two independent chains.

    Each product's input is scaled by a number carried through the loop, so
    TensorFlow cannot hoist it out of the loop or run a chain out of order; the
    same loop without the products is timed too and subtracted. With ``dtype``
    (``tf.bfloat16``), each product casts its float32 input and weights to it and
    its result back, as mixed precision with float32 master weights would; with
    ``cast=False`` inputs and weights are held in ``dtype`` already (only the result is cast
    back), so little but the products is timed (the most lower precision could gain).
    """
    rng = np.random.default_rng(0)
    chains = [[], []]
    for i, (m, k, n) in enumerate(shapes):
        x = tf.constant(rng.normal(size=(m, k)).astype(np.float32))
        w = tf.Variable(rng.normal(size=(k, n)).astype(np.float32) * 0.01)
        if dtype is not None and not cast:
            x, w = tf.cast(x, dtype), tf.Variable(tf.cast(w, dtype))
        chains[i % 2].append((x, w))

    def make_run(with_products: bool):
        def chain_step(total, chain):
            for x, w in chain:
                y = x * tf.cast(1.0 + 1e-9 * total, x.dtype)
                if with_products:  # tf.cast to the dtype a tensor already has adds no op
                    y = tf.matmul(tf.cast(y, dtype or tf.float32), tf.cast(w, dtype or tf.float32))
                    y = tf.cast(y, tf.float32)
                total = total + tf.cast(y[0, 0], tf.float32)
            return total

        @tf.function
        def run():
            t0, t1 = tf.constant(0.0), tf.constant(0.0)
            for _ in tf.range(N_BLOCK):
                t0, t1 = chain_step(t0, chains[0]), chain_step(t1, chains[1])
            return t0, t1
        return lambda: [t.numpy() for t in run()]
    return per_update(make_run(True), blocks) - per_update(make_run(False), blocks)


def optimizer_only(env, blocks: int) -> float:
    """Adam on every variable and polyak averaging of the targets, fixed gradients."""
    ac, ac_targ = sac_mod.build_actor_critics(core.MLPActorCritic, env.observation_space,
                                              env.action_space, {})
    pi_opt, q_opt = sac_mod.make_optimizers(ac, 1e-3)
    n_pi = len(ac.pi.trainable_variables)
    grads = [tf.constant(np.full(v.shape, 1e-3, np.float32)) for v in ac.trainable_variables]
    update_targets = fast_path.make_polyak_update(ac, ac_targ, polyak=0.995)

    @tf.function
    def run():
        for _ in tf.range(N_BLOCK):
            pi_opt.apply(grads[:n_pi])
            q_opt.apply(grads[n_pi:])
            update_targets()
        return tf.constant(0.0)
    return per_update(lambda: run().numpy(), blocks)


def variant_parts(env, algo: str, batch: int, settings: dict,
                  precision: str = "float32") -> tuple:
    """``(variant, ac, ac_targ, block, inputs)`` of ``algo`` with ``settings``
    (speed.py's ``family_settings``) and alpha learned: its real fused update block (its
    products in ``precision``) and the arrays of one block of ``N_BLOCK`` updates, drawn
    from a buffer of random transitions (seed 0)."""
    variant = variants.VARIANTS[algo]
    ac, ac_targ = sac_mod.build_actor_critics(variant.actor_critic, env.observation_space,
                                              env.action_space, settings.get("ac_kwargs", {}),
                                              targets=variant.targets)
    # The member's own lr and update ratio unless the settings change them.
    own = dict(MEMBERS[algo].defaults, **settings)
    *_, block = sac_mod.make_learner(ac, ac_targ, variant, own.get("lr", 1e-3), (1.0, None),
                                     env.action_space, alpha=0.2, polyak=0.995,
                                     updates_per_step=own.get("updates_per_step", 1),
                                     precision=precision)
    od, ad = env.observation_space.shape[0], env.action_space.shape[0]
    rng = np.random.default_rng(0)
    buffer = variant.returns(variant.replay_buffer(od, ad, 10_000, ac), 1, 0.99)
    for _ in range(10_000):
        buffer.store(rng.normal(size=od), rng.uniform(-1, 1, ad), rng.normal(), rng.normal(size=od),
                     0.0)
    return variant, ac, ac_targ, block, replay.update_inputs(buffer, batch, rng, N_BLOCK, ad,
                                                             ac, variant)


def traced_matmuls(variant, ac, ac_targ, inputs: list, step_pi: bool) -> list:
    """``(m, k, n)`` of every matrix product of one update of ``variant`` (its losses and
    the gradients the update takes: the critics', and the policy's when ``step_pi``), read
    from the traced graph rather than listed by hand (for SAC it gives
    :func:`update_matmuls`'s list); a batched product counts as its batch of products."""
    o, a, r, o2, discount, noise, *extra = [tf.constant(x[0]) for x in inputs]
    losses = variant.losses if step_pi or variant.critic_losses is None \
        else variant.critic_losses

    @tf.function
    def gradients():
        with tf.GradientTape(persistent=True) as tape:
            out = losses(ac, ac_targ, o, a, r, o2, discount, noise, tf.constant(0.2), *extra)
            loss_q = tf.add_n(list(out.loss_q))
        grads = tape.gradient(loss_q, ac.critic_variables)
        if step_pi:
            grads += tape.gradient(out.loss_pi, ac.actor_variables)
        return [g for g in grads if g is not None]

    # Only the products the gradients and losses need: TensorFlow prunes the rest (e.g. the
    # critics' weight gradients that a persistent tape builds for the policy's loss).
    graph = gradients.get_concrete_function().graph
    needed, todo = set(), [t.op for t in graph.outputs]
    while todo:
        op = todo.pop()
        if op not in needed:
            needed.add(op)
            todo += [t.op for t in op.inputs] + list(op.control_inputs)
    shapes = []
    for op in graph.get_operations():
        if op not in needed or op.type not in ("MatMul", "BatchMatMulV2", "BatchMatMulV3"):
            continue
        x, w = (op.inputs[0].shape.as_list(), op.inputs[1].shape.as_list())
        ta = op.get_attr("transpose_a" if op.type == "MatMul" else "adj_x")
        tb = op.get_attr("transpose_b" if op.type == "MatMul" else "adj_y")
        m, k = (x[-1], x[-2]) if ta else (x[-2], x[-1])
        n = w[-2] if tb else w[-1]
        shapes += [(m, k, n)] * int(np.prod(x[:-2] or [1]))
    return shapes


def variant_floor(env, algo: str, blocks: int, critic_width: int | None = None,
                  bfloat16: bool = False) -> int:
    """Print ``algo``'s real block against its products alone (µs per update, the policy's
    products weighted by its ``policy_delay``), its critics ``critic_width`` wide if given;
    with ``bfloat16``, the same in ``sac(precision='bfloat16')``."""
    batch = 256
    try:
        settings = family_settings(algo, critic_width)
    except ValueError as e:
        sys.exit(f"floor.py: {e}.")
    variant, ac, ac_targ, block, inputs = variant_parts(env, algo, batch, settings)
    real = per_update(lambda: {k: v.numpy() for k, v in block(*inputs).items()}, blocks)
    k = variant.delay(dict(MEMBERS[algo].defaults, **settings).get("updates_per_step", 1))
    # One policy step in k updates: its products once, the critic-only ones k - 1 times.
    parts = [(1, traced_matmuls(variant, ac, ac_targ, inputs, True))]
    if k > 1:
        parts.append((k - 1, traced_matmuls(variant, ac, ac_targ, inputs, False)))
    products = sum(n * matmuls_only(shapes, blocks) for n, shapes in parts) / k
    gflop = sum(n * flops(shapes) for n, shapes in parts) / k / 1e9
    print(f"{env.spec.id}, {algo} ({settings}, batch {batch}, alpha learned): one update = "
          f"{gflop:.3f} GFLOP ({len(parts[0][1])} products with the policy's step, "
          f"{len(parts[-1][1])} without; the policy steps 1 in {k}), "
          f"µs per update, medians of {blocks} blocks")
    print(f"  block      {real:8.1f} µs  {1e6 / real:7.1f} /s   the real fused update block")
    print(f"  matmuls    {products:8.1f} µs  {1e6 / products:7.1f} /s   its matrix products "
          f"alone, 2 balanced chains, at {gflop / products * 1e6:.0f} GFLOP/s")
    print(f"  the products are {products / real:.0%} of the block's time: at most "
          f"{1e6 / products:.0f} updates/s from TensorFlow's float32 kernels even if every "
          f"other op were free")
    if bfloat16:
        *_, block16, inputs16 = variant_parts(env, algo, batch, settings, "bfloat16")
        real16 = per_update(lambda: {k: v.numpy() for k, v in block16(*inputs16).items()},
                            blocks)
        products16 = sum(n * matmuls_only(shapes, blocks, tf.bfloat16)
                         for n, shapes in parts) / k
        print(f"  bf16 block {real16:8.1f} µs  {1e6 / real16:7.1f} /s   precision='bfloat16', "
              f"{real / real16:.2f}x the float32 block")
        print(f"  bf16 matmuls {products16:6.1f} µs  {1e6 / products16:7.1f} /s   every product "
              f"in bfloat16 (casts included), {products / products16:.2f}x float32's")
        print(f"  outside the products: float32 {real - products:.1f} µs, bfloat16 "
              f"{real16 - products16:.1f} µs a update; the products are {products16 / real16:.0%} "
              f"of the bfloat16 block: at most {1e6 / products16:.0f} updates/s")
    return 0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--env", default="HalfCheetah-v5")
    p.add_argument("--blocks", type=int, default=30)
    p.add_argument("--algo", choices=["sac", *FAMILY], default="sac",
                   help="a variant of the SAC family, with speed.py's FAMILY settings")
    p.add_argument("--critic_width", type=int,
                   help="a variant whose critics are critic_hidden_sizes: each this wide")
    p.add_argument("--bfloat16", action="store_true",
                   help="also time the products in bfloat16 (float32 weights cast at each "
                        "product) and the real block in precision='bfloat16'")
    p.add_argument("--block_only", action="store_true",
                   help="--algo: time the variant's real block alone (one JSON line), e.g. "
                        "to compare two checkouts: PYTHONPATH=OTHER python floor.py ...")
    a = p.parse_args()
    env = gym.make(a.env)
    if a.algo != "sac" and a.block_only:
        *_, block, inputs = variant_parts(env, a.algo, 256, family_settings(a.algo,
                                                                             a.critic_width))
        us = per_update(lambda: {k: v.numpy() for k, v in block(*inputs).items()}, a.blocks)
        print(json.dumps(dict(algo=a.algo, us_per_update=round(us, 1), blocks=a.blocks,
                              code=os.path.dirname(sac_mod.__file__))))
        return 0
    if a.algo != "sac":
        return variant_floor(env, a.algo, a.blocks, a.critic_width, a.bfloat16)
    od, ad = env.observation_space.shape[0], env.action_space.shape[0]
    shapes = update_matmuls(od, ad, 256, 100)
    gflop = flops(shapes) / 1e9

    rows = [("block", "the real fused update block", real_block(env, 256, 100, a.blocks)),
            ("matmuls", f"its {len(shapes)} matrix products, 2 balanced chains",
             matmuls_only(shapes, a.blocks)),
            ("optimizer", "Adam + polyak alone", optimizer_only(env, a.blocks)),
            ("fixed", "real block, 8-unit networks, batch 2", real_block(env, 8, 2, a.blocks))]
    t = {name: us for name, _, us in rows}
    ceiling = t["matmuls"] + t["optimizer"]
    pieces = ceiling + t["fixed"]
    print(f"{a.env}: one update = {gflop:.3f} GFLOP in {len(shapes)} products "
          f"(256x256 networks, batch 100), µs per update, medians of {a.blocks} blocks")
    for name, what, us in rows:
        print(f"  {name:10s} {us:8.1f} µs  {1e6 / us:7.1f} /s   {what}")
    print(f"  products at {gflop / t['matmuls'] * 1e6:.0f} GFLOP/s")
    print(f"  matmuls + optimizer = {ceiling:.1f} µs: at most {1e6 / ceiling:.0f} updates/s "
          f"even if every other op were free")
    print(f"  the real block runs at {ceiling / t['block']:.0%} of that ceiling "
          f"({1e6 / t['block']:.0f} of {1e6 / ceiling:.0f} updates/s)")
    print(f"  matmuls + optimizer + fixed = {pieces:.1f} µs ({1e6 / pieces:.0f} updates/s); "
          f"the real block is {t['block'] / pieces:.2f}x that sum")
    if a.bfloat16:
        bf16 = matmuls_only(shapes, a.blocks, tf.bfloat16)
        from race import cpu_model_and_flags  # benchmarks/, this script's folder

        has = [f for f in ("avx512_bf16", "amx_bf16") if f in cpu_model_and_flags()[1]]
        has = has or ["neither"]
        best = t["block"] - t["matmuls"] + bf16
        print(f"  bfloat16 products (casts included): {bf16:.1f} µs, {t['matmuls'] / bf16:.2f}x "
              f"the float32 products' speed; CPU bfloat16 flags: {' '.join(has)}")
        print(f"  a block whose products all ran so: at best {best:.1f} µs, "
              f"{t['block'] / best:.2f}x the float32 block")
        bare = matmuls_only(shapes, a.blocks, tf.bfloat16, cast=False)
        best = t["block"] - t["matmuls"] + bare
        print(f"  bfloat16 products alone (inputs and weights held in bfloat16, no casts): "
              f"{bare:.1f} µs, {t['matmuls'] / bare:.2f}x; a block of them at best "
              f"{t['block'] / best:.2f}x the float32 block")
        real16 = real_block(env, 256, 100, a.blocks, "bfloat16")
        print(f"  the real block in precision='bfloat16': {real16:.1f} µs, "
              f"{t['block'] / real16:.2f}x the float32 block")
    return 0


if __name__ == "__main__":
    sys.exit(main())
