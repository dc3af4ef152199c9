"""Does a refactor move the numbers? Run a fixed set of short SAC runs through the command
line, then compare two such sets progress.txt by progress.txt (every column but ``Time``).

    python benchmarks/checks/same_numbers.py run OUT_DIR          # about 2 minutes on 2 cores
    python benchmarks/checks/same_numbers.py family OUT_DIR       # the variants' commands, ~4 min
    python benchmarks/checks/same_numbers.py compare DIR_A DIR_B  # exit 0 only if all identical

The runs: HalfCheetah-v5 (Spinning Up's networks), Pendulum-v1 with ``alpha='auto'``,
Pendulum-v1 with ``normalize_obs``, CartPole-v1 (discrete actions), Pendulum-v1 over two MPI
processes (``--cpu 2``), Pendulum-v1 over two vector copies (``--num_envs 2``), the
partially observed Pendulum-P-v1 with ``--recurrent``, Pendulum-v1 from pixels (``--pixels``),
and a Pendulum-v1 run killed with SIGKILL after its second epoch and continued with
``--resume`` (compare it with the uninterrupted ``auto`` run of the other set: the same
flags). ``family`` runs each variant's command (``crossq``, ``tqc``, ``droq``, ``redq``) on
Pendulum-v1 with its own defaults but for a short schedule and small networks (REDQ's updates
from step 200, not 5,000). To check code that is not installed, run this script with ``PYTHONPATH``
pointing at that code's checkout.
"""

from __future__ import annotations

import os
import os.path as osp
import signal
import subprocess
import sys
import time

SHORT = ["--epochs", "3", "--steps_per_epoch", "1000", "--start_steps", "500",
         "--update_after", "200", "--num_test_episodes", "2", "--hid", "[64,64]"]
RUNS = {
    "halfcheetah": ["--env", "HalfCheetah-v5", "--epochs", "2", "--steps_per_epoch", "2000",
                    "--start_steps", "1000", "--update_after", "500", "--num_test_episodes",
                    "2", "--max_ep_len", "500"],
    "pendulum_auto": ["--env", "Pendulum-v1", *SHORT, "--alpha", "auto"],
    "pendulum_normalize_obs": ["--env", "Pendulum-v1", *SHORT, "--normalize_obs"],
    "cartpole": ["--env", "CartPole-v1", *SHORT, "--alpha", "auto"],
    "pendulum_cpu2": ["--env", "Pendulum-v1", *SHORT, "--cpu", "2"],
    "pendulum_num_envs2": ["--env", "Pendulum-v1", *SHORT, "--alpha", "auto", "--num_envs",
                           "2"],
    "pendulum_p_recurrent": ["--env", "Pendulum-P-v1", "--recurrent", *SHORT],
    "pendulum_pixels": ["--env", "Pendulum-v1", "--pixels", "--image_size", "32",
                        "--frame_stack", "2", "--action_repeat", "2", "--epochs", "2",
                        "--steps_per_epoch", "200", "--start_steps", "100", "--update_after",
                        "100", "--batch_size", "16", "--num_test_episodes", "1",
                        "--replay_size", "1000", "--hid", "[16,16]"],
}
KILLED = "pendulum_auto_killed_resumed"
# family: each variant's command with its defaults, on a short schedule and small networks.
FAMILY_SHORT = ["--env", "Pendulum-v1", "--epochs", "2", "--steps_per_epoch", "500",
                "--start_steps", "200", "--update_after", "200", "--num_test_episodes", "2",
                "--hid", "[64,64]"]
FAMILY_RUNS = {
    "crossq": ["crossq", *FAMILY_SHORT, "--ac_kwargs:critic_hidden_sizes", "[128,128]"],
    "tqc": ["tqc", *FAMILY_SHORT],
    "droq": ["droq", *FAMILY_SHORT],
    "redq": ["redq", *FAMILY_SHORT],
}


def cli(args: list[str], algo: str = "sac", **popen) -> subprocess.Popen:
    env = dict(os.environ, SPINUP_TF2_WAIT_BEFORE_LAUNCH="0", TF_CPP_MIN_LOG_LEVEL="3")
    return subprocess.Popen([sys.executable, "-m", "spinup_tf2.run", algo, *args],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True, **popen)


def run_dir(out: str, name: str) -> str:
    return osp.join(out, name, name + "_s0")


def rows(out: str, name: str) -> int:
    try:
        with open(osp.join(run_dir(out, name), "progress.txt")) as f:
            return max(0, len(f.read().splitlines()) - 1)
    except OSError:
        return 0


def run_family(out: str) -> None:
    for name, (algo, *args) in FAMILY_RUNS.items():
        t0 = time.time()
        proc = cli([*args, "--exp_name", name, "--data_dir", out], algo)
        _, err = proc.communicate()
        print(f"{name}: exit {proc.returncode} in {time.time() - t0:.0f} s", flush=True)
        if proc.returncode:
            sys.exit(err[-3000:])


def run_all(out: str) -> None:
    for name, args in RUNS.items():
        t0 = time.time()
        proc = cli([*args, "--exp_name", name, "--data_dir", out])
        _, err = proc.communicate()
        print(f"{name}: exit {proc.returncode} in {time.time() - t0:.0f} s", flush=True)
        if proc.returncode:
            sys.exit(err[-3000:])
    # Killed after its second epoch's checkpoint, then resumed by the same command.
    args = [*RUNS["pendulum_auto"], "--exp_name", KILLED, "--data_dir", out]
    proc = cli(args, start_new_session=True)
    state = osp.join(run_dir(out, KILLED), "train_state", "state.json")
    while proc.poll() is None and not (rows(out, KILLED) >= 2 and osp.exists(state)
                                       and '"epoch": 2' in open(state).read()):
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    print(f"{KILLED}: killed with {rows(out, KILLED)} rows written", flush=True)
    proc = cli([*args, "--resume"])
    _, err = proc.communicate()
    print(f"{KILLED}: resumed, exit {proc.returncode}, {rows(out, KILLED)} rows", flush=True)
    if proc.returncode:
        sys.exit(err[-3000:])


def table(path: str) -> list[list[str]]:
    """progress.txt's rows without the Time column."""
    with open(path) as f:
        lines = [ln.split("\t") for ln in f.read().splitlines()]
    keep = [i for i, h in enumerate(lines[0]) if h != "Time"]
    return [[ln[i] for i in keep] for ln in lines]


def compare(a: str, b: str) -> bool:
    pairs = [(n, n) for n in (*RUNS, *FAMILY_RUNS)] + [("pendulum_auto", KILLED)]
    same, compared = True, 0
    for name_a, name_b in pairs:
        pa = osp.join(run_dir(a, name_a), "progress.txt")
        if not osp.exists(pa):
            continue  # a set of the other kind (run or family)
        ta = table(pa)
        pb = osp.join(run_dir(b, name_b), "progress.txt")
        if not osp.exists(pb):
            continue  # the other set has no such run (e.g. KILLED only in the new set)
        tb = table(pb)
        ok = ta == tb and len(ta) > 1
        same &= ok
        compared += 1
        print(f"{'identical' if ok else 'DIFFERENT'}: {name_a} ({len(ta) - 1} rows, "
              f"{len(ta[0])} columns) vs {name_b} ({len(tb) - 1} rows)")
    return same and compared > 0


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "run":
        run_all(osp.abspath(sys.argv[2]))
    elif len(sys.argv) == 3 and sys.argv[1] == "family":
        run_family(osp.abspath(sys.argv[2]))
    elif len(sys.argv) == 4 and sys.argv[1] == "compare":
        sys.exit(0 if compare(sys.argv[2], sys.argv[3]) else 1)
    else:
        sys.exit(__doc__)
