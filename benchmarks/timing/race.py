"""Race spinup_tf2's SAC against its peers on this machine, side by side.

    python benchmarks/timing/race.py                          # HalfCheetah-v5, every peer, 3 rounds
    python benchmarks/timing/race.py --env Hopper-v5 --peers sbx --rounds 5
    python benchmarks/timing/race.py --pixels              # SAC from pixels against SB3's CnnPolicy
    python benchmarks/timing/race.py --peers checkout --checkout ../base  # against another checkout
    python benchmarks/timing/race.py --algo tqc --peers sbx --total 4000  # TQC against SBX's
    python benchmarks/timing/race.py --algo crossq --critic_width 2048 --peers sbx  # paper's width
    python benchmarks/timing/race.py --algo crossq --peers sbx --precision float32 bfloat16

Each round times every peer once, each followed by spinup_tf2 (so a machine
that slows down or speeds up during the race affects both sides alike), with
Spinning Up's SAC settings on both sides; then the medians over rounds and the
ratios ours/peer are printed. Only the ratios mean something: absolute figures
on a shared 2-core machine vary by +-25 % from run to run.

The peers run in their own virtual environments, built from PyPI the first time
(a few minutes and ~2 GB each) under ``--venv_dir`` (default
``~/.cache/spinup_tf2/peers``):

- ``sb3``: Stable-Baselines3 (PyTorch, CPU build torch==2.13.0);
- ``sbx``: SBX, Stable-Baselines3 rewritten in JAX (``sbx-rl==0.28.0``, CPU
  jax), which also runs each 50-update block as one compiled loop;
- ``tfagents``: TF-Agents' SAC (``tf-agents==0.19.0``, its last release, on
  ``tensorflow-cpu==2.15.1`` with Keras 2 and ``tensorflow-probability==0.23.0``, the
  versions it was released for; Python 3.11 at most), the TensorFlow peer.

SB3 and SBX are timed by ``benchmarks/timing/peers/peer_speed.py``, TF-Agents by
``benchmarks/timing/peers/tfagents_speed.py``, spinup_tf2 by ``benchmarks/speed.py`` (same
figures, same settings; see their docstrings).
Every JSON line measured is also written to ``--out`` if given.

``--peers checkout --checkout DIR`` races another checkout of spinup_tf2 (say, a git
worktree of the last release, to show that a refactor kept the speed): its own
``benchmarks/speed.py`` on its own code, with this Python and the same flags.

``--pixels`` races SAC from pixels (default env Pendulum-v1 as ``--pixels`` makes it:
84x84 RGB, 3 frames, action repeat 8; batch 128; updates from step 200, steps 250-350
timed) against SB3's SAC with ``CnnPolicy``, twice: ``sb3`` with SB3's own image
encoder (NatureCNN, what ``CnnPolicy`` gives), ``sb3_drq`` with DrQ's encoder, the
arithmetic of ours (see ``peer_speed.py``).
"""

from __future__ import annotations

import argparse
import json
import os
import os.path as osp
import platform
import statistics
import subprocess
import sys
from datetime import date

HERE = osp.dirname(osp.abspath(__file__))
SPEED = osp.join(osp.dirname(HERE), "speed.py")  # benchmarks/speed.py: the timed sac() loop
REPO = osp.dirname(osp.dirname(HERE))
FIGURES = ("updates_per_s", "env_steps_per_s")

# What each peer's virtual environment holds. torch is pinned to a CPU build and
# installed first, so that pip never pulls a CUDA torch in as a dependency.
PEER_PACKAGES = {
    "sb3": [["torch==2.13.0"], ["stable-baselines3", "gymnasium[mujoco,classic-control]",
                                "torch==2.13.0"]],
    "sbx": [["torch==2.13.0"], ["sbx-rl==0.28.0", "jax", "jaxlib", "gymnasium[mujoco]",
                                "torch==2.13.0"]],
    # TF-Agents 0.19 pins typing-extensions 4.5 and pygame 2.1.3 and needs NumPy 1 (TF 2.15).
    "tfagents": [["tensorflow-cpu==2.15.1", "tensorflow-probability==0.23.0",
                  "tf-agents==0.19.0", "gymnasium[mujoco]", "numpy<2"]],
}
PEER_CHECK = {"sb3": "import stable_baselines3, mujoco, pygame", "sbx": "import sbx, jax, mujoco",
              "tfagents": "import tf_agents, tensorflow, mujoco, gymnasium"}
PEER_SCRIPT = {"sb3": ["peer_speed.py", "sb3"], "sbx": ["peer_speed.py", "sbx"],
               "tfagents": ["tfagents_speed.py"]}
# With --pixels: SB3 with CnnPolicy, with its own encoder and with DrQ's (venv "sb3").
PIXEL_PEERS = {"sb3": ["--encoder", "nature"], "sb3_drq": ["--encoder", "drq"]}


def peer_python(peer: str, venv_dir: str) -> str:
    """The Python of ``peer``'s virtual environment, built first if it is missing."""
    venv = osp.join(venv_dir, peer)
    python = osp.join(venv, "bin", "python")
    env = dict(os.environ, JAX_PLATFORMS="cpu")
    if osp.exists(python) and subprocess.run([python, "-c", PEER_CHECK[peer]], env=env,
                                             capture_output=True).returncode == 0:
        return python
    if peer == "tfagents" and sys.version_info[:2] > (3, 11):
        sys.exit(f"race.py: TF-Agents 0.19 (TensorFlow 2.15) has wheels for Python 3.9-3.11 "
                 f"only, and this is Python {sys.version.split()[0]}: run race.py with a "
                 f"Python 3.11, or leave it out (--peers sb3 sbx).")
    print(f"Building the {peer} environment in {venv} (once; a few minutes) ...", flush=True)
    subprocess.run([sys.executable, "-m", "venv", venv], check=True)
    for packages in PEER_PACKAGES[peer]:
        subprocess.run([python, "-m", "pip", "install", "-q", *packages], check=True)
    listed = subprocess.run([python, "-m", "pip", "list"], capture_output=True, text=True).stdout
    cuda = [ln.split()[0] for ln in listed.splitlines()
            if ln.lower().startswith(("nvidia-", "jax-cuda", "jax_cuda"))]
    if cuda:
        sys.exit(f"race.py: CUDA packages got into {venv}: {', '.join(cuda)}; the race is "
                 f"on the CPU. Remove them (pip uninstall) and run again.")
    return python


def time_one(cmd: list[str], env: dict) -> dict:
    """Run one timing command and return the JSON line it prints last."""
    res = subprocess.run(cmd, capture_output=True, text=True, env=env)
    lines = [ln for ln in res.stdout.splitlines() if ln.startswith("{")]
    if res.returncode != 0 or not lines:
        sys.exit(f"race.py: {' '.join(cmd[:3])} failed (exit {res.returncode}):\n"
                 f"{res.stderr[-3000:]}")
    return json.loads(lines[-1])


def cpu_model_and_flags() -> tuple[str, set]:
    """The CPU's model name and its flags, from /proc/cpuinfo (empty where there is none)."""
    from spinup_tf2.checks import cpu_flags  # what sac(precision='bfloat16') reads too

    model, flags = cpu_flags()
    return (platform.processor() or "unknown CPU") if model == "unknown" else model, flags


def vector_flags() -> list[str]:
    """The CPU's flags that set a race's ratios: its vector and matrix extensions, bfloat16's
    among them (``lscpu``'s names)."""
    wanted = ("avx2", "avx512f", "avx512_bf16", "avx512_fp16", "amx_tile", "amx_bf16")
    return [flag for flag in wanted if flag in cpu_model_and_flags()[1]]


def cpu_summary() -> str:
    """The CPU model and its vector extensions (what makes ratios differ between machines)."""
    model, flags = cpu_model_and_flags()
    ext = [name for name, flag in (("AVX2", "avx2"), ("AVX-512", "avx512f"),
                                   ("AMX", "amx_tile")) if flag in flags]
    return f"{model}, {os.cpu_count()} logical CPUs, {' '.join(ext) or 'no AVX2'}"


def read_race(path: str) -> tuple[dict, dict[str, list[dict]]]:
    """A race file written by ``--out``: its machine record and each side's rows.

    Returns:
        (machine, rows): the first line's machine record (``{}`` where the file has none) and
        the measured rows grouped by who ran them (``ours``, ``sb3``, ...), in file order.
    """
    machine, rows = {}, {}
    with open(path) as f:
        for line in f:
            if line.strip():
                row = json.loads(line)
                if row["who"] == "machine":
                    machine = row
                else:
                    rows.setdefault(row["who"], []).append(row)
    return machine, rows


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--env", help="default HalfCheetah-v5, with --pixels Pendulum-v1")
    p.add_argument("--peers", nargs="+", choices=sorted(PEER_PACKAGES) + ["checkout"],
                   default=["sb3", "sbx", "tfagents"])
    p.add_argument("--checkout", help="the other spinup_tf2 checkout of --peers checkout")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--total", type=int, help="default 8000, with --pixels 350")
    p.add_argument("--measure_from", type=int, help="default 2000, with --pixels 250")
    p.add_argument("--pixels", action="store_true",
                   help="SAC from pixels against SB3's CnnPolicy (peers sb3 and sb3_drq)")
    p.add_argument("--algo", choices=["sac", "tqc", "crossq", "droq", "redq"], default="sac",
                   help="a variant of the SAC family against SBX's (--peers sbx), each with "
                        "its published settings (speed.py's and peer_speed.py's FAMILY)")
    p.add_argument("--critic_width", type=int,
                   help="--algo crossq: both sides' critics this wide (default 512)")
    p.add_argument("--precision", nargs="+", choices=["float32", "bfloat16"],
                   default=["float32"],
                   help="ours with sac(precision=...), each in every round after the peer: "
                        "'ours' (float32) and 'ours_bf16' (bfloat16 products; the peers stay "
                        "float32)")
    p.add_argument("--venv_dir", default=osp.expanduser("~/.cache/spinup_tf2/peers"))
    p.add_argument("--out", help="append every measured JSON line to this file")
    a = p.parse_args(argv)
    if a.algo != "sac" and (a.pixels or a.peers != ["sbx"]):
        sys.exit(f"race.py: --algo {a.algo} races SBX's {a.algo} (--peers sbx) on vector "
                 f"observations; got --peers {' '.join(a.peers)}"
                 f"{' with --pixels' if a.pixels else ''}.")
    if a.critic_width and a.algo != "crossq":
        sys.exit(f"race.py: --critic_width {a.critic_width} sets CrossQ's critics; give it "
                 f"with --algo crossq, not --algo {a.algo}.")

    a.env = a.env or ("Pendulum-v1" if a.pixels else "HalfCheetah-v5")
    a.total = a.total or (350 if a.pixels else 8000)
    a.measure_from = a.measure_from or (250 if a.pixels else 2000)
    steps = ["--env", a.env, "--total", str(a.total), "--measure_from", str(a.measure_from)]
    steps += ["--algo", a.algo] if a.algo != "sac" else []
    steps += ["--critic_width", str(a.critic_width)] if a.critic_width else []
    env = dict(os.environ, JAX_PLATFORMS="cpu", TF_CPP_MIN_LOG_LEVEL="3")
    if a.pixels:  # the peer makes the same task with this repository's pixel wrapper
        a.peers, sb3 = list(PIXEL_PEERS), peer_python("sb3", a.venv_dir)
        pythons = {peer: sb3 for peer in a.peers}
        steps += ["--pixels", "--start", "200"]
        env["PYTHONPATH"] = REPO
    else:
        if "checkout" in a.peers and not (a.checkout and osp.isfile(
                osp.join(a.checkout, "benchmarks", "speed.py"))):
            sys.exit(f"race.py: --peers checkout needs --checkout DIR, a spinup_tf2 checkout "
                     f"with benchmarks/speed.py; got {a.checkout!r}.")
        pythons = {peer: sys.executable if peer == "checkout" else peer_python(peer, a.venv_dir)
                   for peer in a.peers}
    # Our sides, one per precision: 'ours' in float32 (what earlier races called ours).
    ours = {("ours" if prec == "float32" else "ours_bf16"):
            [sys.executable, SPEED, *steps, "--precision", prec, "--json"]
            for prec in dict.fromkeys(a.precision)}
    results: dict[str, list[dict]] = {who: [] for who in [*a.peers, *ours]}
    if a.out:  # the machine first: ratios differ between CPUs, so a result names its own
        with open(a.out, "a") as f:
            f.write(json.dumps({"who": "machine", "cpu": cpu_summary(), "env": a.env,
                                "pixels": a.pixels, "algo": a.algo,
                                "critic_width": a.critic_width, "precision": a.precision,
                                "cpu_flags": vector_flags(),
                                "date": date.today().isoformat()}) + "\n")
    print(f"Racing on {cpu_summary()} ({' '.join(vector_flags())}): {a.algo} on {a.env}"
          f"{' from pixels' if a.pixels else ''}, "
          f"{a.rounds} rounds, steps {a.measure_from}-{a.total} timed.", flush=True)
    for r in range(1, a.rounds + 1):
        for peer in a.peers:
            peer_env = env
            if peer == "checkout":  # the other checkout's own speed.py, on its own code
                peer_cmd = [sys.executable, osp.join(a.checkout, "benchmarks", "speed.py"),
                            *steps, "--json"]
                peer_env = dict(env, PYTHONPATH=osp.abspath(a.checkout))
            else:
                script, *impl = (["peer_speed.py", "sb3", *PIXEL_PEERS[peer]] if a.pixels
                                 else PEER_SCRIPT[peer])
                peer_cmd = [pythons[peer], osp.join(HERE, "peers", script), *impl, *steps]
            sides = [(peer, peer_cmd, peer_env)] + [(who, cmd, env) for who, cmd in ours.items()]
            for who, cmd, cmd_env in sides:
                row = time_one(cmd, cmd_env)
                results[who].append(row)
                print(f"round {r}  {who:9} " + "  ".join(f"{k} {row[k]:7.1f}" for k in FIGURES),
                      flush=True)
                if a.out:
                    with open(a.out, "a") as f:
                        f.write(json.dumps(dict(row, who=who, round=r)) + "\n")

    med = {who: {k: statistics.median(row[k] for row in rows) for k in FIGURES}
           for who, rows in results.items()}
    cols = [*a.peers, *ours]
    pairs = [(o, c) for o in ours for c in a.peers]
    w = max(10, *(len(f"{o}/{c}") + 1 for o, c in pairs))  # one column per figure
    print(f"\n{'median of ' + str(a.rounds):18}" + "".join(f"{c:>{w}}" for c in cols)
          + "".join(f"{o + '/' + c:>{w}}" for o, c in pairs))
    for k in FIGURES:
        print(f"{k:18}" + "".join(f"{med[c][k]:{w}.1f}" for c in cols)
              + "".join(f"{med[o][k] / med[c][k]:{w}.2f}" for o, c in pairs))
    for o, peer in pairs:
        for k in FIGURES:
            print(f"ratio {k} {o}/{peer} = {med[o][k] / med[peer][k]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
