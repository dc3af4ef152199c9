"""MuJoCo learning benchmark: SAC with Spinning Up's defaults on the five tasks of
Spinning Up's SAC benchmark (HalfCheetah, Hopper, Walker2d, Ant, Swimmer; their -v5
versions with gymnasium's defaults), 350k steps (88 epochs of 4,000) for each seed:
10 seeds (0, 10, ..., 90) on HalfCheetah and Hopper, 5 (0, ..., 40) on the others.

    python benchmarks/learning/learning.py                       # everything not yet done
    python benchmarks/learning/learning.py --env Hopper-v5 --seed 10
    python benchmarks/learning/learning.py --epochs 75 --dry_run # list what would run
    python benchmarks/learning/learning.py --suite dmc        # from pixels: pip install -e ".[dmc]"
    python benchmarks/learning/learning.py --suite crossq     # CrossQ at 100k (tqc, droq, redq)

``--suite dmc`` is the pixel benchmark of issue 25, DeepMind Control from pixels as DrQ
measured it (84x84, 3 frames, 100k environment frames): cartpole-swingup at action repeat 8
(10 epochs of 1,250 steps), seeds 0, 10, ..., 40; ball_in_cup-catch at action repeat 4 (10
epochs of 2,500 steps), seeds 0, 10, 20; DrQ's settings (alpha learned from 0.1, polyak
0.99, 1,000 random steps, replay 100k) except the batch, 128 for 512 (a quarter of the
arithmetic on a CPU). About 2.7 and 5.3 hours per seed on 2 cores.

``--suite her`` is hindsight replay on gymnasium-robotics' FetchReach-v4 and panda-gym's
PandaReach-v3 (issue 50), with rl-baselines3-zoo's SAC+HER settings (``HER_SETTINGS``), 20k
steps, seeds 0, 10, 20; it needs ``pip install -e ".[robotics,panda]"`` (gymnasium-robotics'
Fetch tasks need MuJoCo before 3.12: an environment of its own), into
``data/benchmarks/her-fetchreach-v4/`` and ``data/benchmarks/her-pandareach-v3/``.

``--suite crossq``, ``tqc``, ``droq`` and ``redq`` are the SAC family's evidence (issue 51),
100k steps (25 epochs of 4,000) run by ``spinup_tf2.crossq``, ``.tqc``, ``.droq`` and
``.redq`` with their defaults. TQC: HalfCheetah and Hopper, seeds 0, 10, 20 (``--tqc_drop N``:
N quantiles dropped per critic instead of 2, into ``tqc-drop<N>-<env>/``, the TQC authors'
per-task setting: ``--env HalfCheetah-v5 --tqc_drop 0``, ``--env Hopper-v5 --tqc_drop 5``;
``--tqc_sac_settings``: our SAC rows' ``lr=1e-3`` and fixed ``alpha=0.2`` instead of TQC's
``3e-4`` and alpha learned, into ``tqc-sacsettings-<env>/``). CrossQ:
HalfCheetah, Hopper, Walker2d and Ant, seeds 0, 10, ..., 40, critics ``--critic_width``
wide: 512 by default, since on 2 cores of an AMD EPYC the update ran at 46 updates/s at 512
and 15.7 at SBX's 1024 (6.0 at the paper's 2048, 2026-11-27). ``--suite droq``: Hopper and
HalfCheetah, seeds 0, 10, 20, at DroQ's 20 updates per step. ``--suite redq``: Hopper, seeds
0, 10, 20 (and ``--suite redq --env HalfCheetah-v5 --seed 0``, one run for REDQ's row of the
time to Spinning Up's HalfCheetah scores). Into ``data/benchmarks/<suite>-<env>/``; with
``--epochs N`` other than 25, into ``<suite>-<4N>k-<env>/`` (``--suite crossq --env
HalfCheetah-v5 --epochs 75``: CrossQ to 300k, for the time to Spinning Up's 300k score).

The comparison is made at 100k, 200k and 300k steps, on curves smoothed over
11 points of 10k steps as Spinning Up's are. Running on to 350k lets the window
at 300k be centred (250k-350k), as it is on Spinning Up's long runs; a run that
stops at 300k can only average 250k-300k, which reads low on a rising curve.

Runs go to ``data/benchmarks/sac-<env>/sac-<env>_s<seed>/`` as standard run
directories. A run whose progress.txt already has all its epochs is skipped, so
the script can be stopped and started again, or run seed by seed; an
unfinished run resumes from its last training checkpoint (``resume=True``), or
starts over if it has none. Each run is a fresh process (``call_experiment``).
Only config.json and progress.txt are tracked in git (see .gitignore);
checkpoints stay local.
"""

import argparse
import os
import os.path as osp
import shutil
import sys

os.environ.setdefault("SPINUP_TF2_WAIT_BEFORE_LAUNCH", "0")

from spinup_tf2.family import MEMBERS  # noqa: E402  (a leaf: no TensorFlow)

REPO = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))
BENCH_DIR = osp.join(REPO, "data", "benchmarks")
ENVS = ["HalfCheetah-v5", "Hopper-v5", "Walker2d-v5", "Ant-v5", "Swimmer-v5"]
SEEDS = [0, 10, 20, 30, 40]
EXTRA_SEEDS = {"HalfCheetah-v5": [50, 60, 70, 80, 90], "Hopper-v5": [50, 60, 70, 80, 90]}
# --suite dmc: each task's seeds and settings, then what every pixel run shares.
DMC = {"dm_control/cartpole-swingup-v0": ([0, 10, 20, 30, 40],
                                          dict(action_repeat=8, steps_per_epoch=1250)),
       "dm_control/ball_in_cup-catch-v0": ([0, 10, 20], dict(action_repeat=4,
                                                            steps_per_epoch=2500))}
# --suite crossq / tqc / ...: the SAC family's evidence at 100k steps (each run by its own
# function, with its defaults): the tasks and seeds of each, from its family entry.
FAMILY = {m.name: (list(m.evidence.tasks), list(m.evidence.seeds)) for m in MEMBERS.values()}
DMC_SETTINGS = dict(pixels=True, batch_size=128, alpha="auto_0.1", polyak=0.99,
                    replay_size=100_000, start_steps=1000, update_after=1000)
# --suite her: goal tasks with hindsight replay, rl-baselines3-zoo's HER settings for FetchReach
# and PandaReach (hyperparams/tqc.yml: 20k steps, batch 256, gamma 0.95, lr 1e-3, 1,000 random
# steps, normalized observations, [64, 64]) with SAC's two critics; 10 epochs of 2,000 steps,
# 25 test episodes.
HER = {"gymnasium_robotics:FetchReach-v4": [0, 10, 20], "panda_gym:PandaReach-v3": [0, 10, 20]}
HER_SETTINGS = dict(her=True, batch_size=256, gamma=0.95, lr=1e-3, alpha="auto",
                    start_steps=1000, update_after=1000, normalize_obs=True,
                    ac_kwargs=dict(hidden_sizes=(64, 64)), steps_per_epoch=2000,
                    num_test_episodes=25, max_ep_len=50)


def epochs_done(run_dir: str) -> int:
    """Rows in a run's progress.txt (0 if none)."""
    path = osp.join(run_dir, "progress.txt")
    if not osp.exists(path):
        return 0
    with open(path) as f:
        return max(0, sum(1 for _ in f) - 1)


def family_widths(name: str) -> tuple | None:
    """The default ``critic_hidden_sizes`` of member ``name``'s actor-critic (None where it
    has no such setting)."""
    import importlib
    import inspect

    member = MEMBERS[name]
    ac = getattr(importlib.import_module(member.math), member.actor_critic)
    param = inspect.signature(ac).parameters.get("critic_hidden_sizes")
    return tuple(param.default) if param is not None else None


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--suite", choices=["mujoco", "dmc", "her", *FAMILY], default="mujoco")
    p.add_argument("--critic_width", type=int,
                   help="a member whose critics are critic_hidden_sizes: this wide (crossq: "
                        "512 by default, into crossq-<env>/; another member's width other than "
                        "its own default goes into <suite>-w<W>-<env>/)")
    p.add_argument("--updates_per_step", type=int,
                   help="a family suite: this update ratio instead of the member's own, into "
                        "<suite>-utd<N>-<env>/ (--suite simbav2 --updates_per_step 1: SimbaV2's "
                        "published 1-update-per-step setting, at half the cost)")
    p.add_argument("--tqc_drop", type=int,
                   help="--suite tqc: quantiles dropped per critic instead of TQC's 2 (the TQC "
                        "authors': HalfCheetah 0, Hopper 5), into tqc-drop<N>-<env>/")
    p.add_argument("--tqc_sac_settings", action="store_true",
                   help="--suite tqc: our SAC rows' lr 1e-3 and fixed alpha 0.2 instead of "
                        "TQC's 3e-4 and alpha learned, into tqc-sacsettings-<env>/")
    p.add_argument("--replay", choices=["per", "lap"],
                   help="--suite mujoco: prioritized replay (sac(replay=...)) instead of "
                        "uniform, into sac-<replay>[-<4N>k]-<env>/ (issue 79's evidence: "
                        "--replay per --epochs 75 --seed 0 10 20 30 40)")
    p.add_argument("--actors", type=int,
                   help="--suite mujoco: collect with this many Ray actors (sac(actors=N)), "
                        "into sac-actors<N>[-<4N>k]-<env>/ (issue 79's evidence: --actors 4 "
                        "--epochs 25 --env HalfCheetah-v5 --seed 0 10 20 30 40)")
    p.add_argument("--precision", choices=["float32", "bfloat16"], default="float32",
                   help="a family suite or mujoco: sac(precision=...); bfloat16 runs go into "
                        "<suite>-bf16-<env>/ (issue 80's evidence: --suite crossq --env "
                        "Hopper-v5, --suite tqc --env HalfCheetah-v5, seeds 0 10 20)")
    p.add_argument("--env", nargs="*", help="default: the suite's tasks")
    p.add_argument("--seed", nargs="*", type=int, default=None,
                   help="default: 0 10 20 30 40, and 50 ... 90 on HalfCheetah-v5 and Hopper-v5 "
                        "(dmc: the suite's seeds)")
    p.add_argument("--epochs", type=int, help="default 88 (dmc: 10)")
    p.add_argument("--data_dir", default=BENCH_DIR)
    p.add_argument("--dry_run", action="store_true")
    a = p.parse_args()
    if a.tqc_drop is not None and a.suite != "tqc":
        p.error(f"--tqc_drop {a.tqc_drop} sets TQC's dropped quantiles: give it with --suite tqc")
    if a.tqc_sac_settings and (a.suite != "tqc" or a.tqc_drop is not None):
        p.error("--tqc_sac_settings runs TQC with SAC's lr and alpha: give it with --suite tqc "
                "and without --tqc_drop (one change at a time)")
    dmc, family, her = a.suite == "dmc", a.suite in FAMILY, a.suite == "her"
    a.env = a.env or (list(DMC) if dmc else list(HER) if her else FAMILY[a.suite][0] if family
                      else ENVS)
    a.epochs = a.epochs or (10 if dmc or her else 25 if family else 88)
    prefix = a.suite if family or her else "sac"
    family_settings = {}
    if a.suite == "crossq" and a.critic_width is None:
        a.critic_width = 512  # the bundled runs' width (the function's is SBX's 1024)
    if a.critic_width is not None:
        widths = family_widths(a.suite) if family else None
        if widths is None:
            p.error(f"--critic_width {a.critic_width} sets the width of a family member's "
                    f"critic_hidden_sizes; --suite {a.suite} has none (give it with "
                    f"{', '.join(f'--suite {n}' for n in FAMILY if family_widths(n))})")
        family_settings = dict(ac_kwargs=dict(critic_hidden_sizes=(a.critic_width,)
                                              * len(widths)))
        if a.suite != "crossq" and a.critic_width != widths[0]:
            prefix = f"{prefix}-w{a.critic_width}"
    if a.updates_per_step is not None:
        if not family:
            p.error(f"--updates_per_step {a.updates_per_step} sets a family member's update "
                    f"ratio: give it with --suite {' or '.join(FAMILY)}")
        family_settings["updates_per_step"] = a.updates_per_step
        if a.updates_per_step != MEMBERS[a.suite].defaults.get("updates_per_step", 1):
            prefix = f"{prefix}-utd{a.updates_per_step}"
    if a.tqc_drop is not None:
        prefix = f"tqc-drop{a.tqc_drop}"
        family_settings = dict(ac_kwargs=dict(top_quantiles_to_drop_per_net=a.tqc_drop))
    if a.tqc_sac_settings:
        prefix, family_settings = "tqc-sacsettings", dict(lr=1e-3, alpha=0.2)
    if a.precision != "float32":
        if not (family or a.suite == "mujoco") or a.replay or a.actors:
            p.error(f"--precision {a.precision} runs a family suite or SAC's MuJoCo suite in "
                    f"bfloat16, one change at a time: not --suite {a.suite}, --replay or "
                    f"--actors")
        prefix = f"{prefix}-bf16"
        family_settings = dict(family_settings, precision=a.precision)
    if family and a.epochs != 25:  # not the 100k evidence, which stays as bundled
        prefix = f"{prefix}-{a.epochs * 4}k"
    if a.replay is not None or a.actors:
        if a.suite != "mujoco" or (a.replay and a.actors):
            p.error("--replay and --actors run SAC's MuJoCo suite with prioritized replay or "
                    "with actors: give one of them, with --suite mujoco")
        kind = a.replay or f"actors{a.actors}"
        prefix = f"sac-{kind}" + (f"-{a.epochs * 4}k" if a.epochs != 88 else "")
        family_settings = dict(family_settings, **(dict(replay=a.replay) if a.replay
                                                   else dict(actors=a.actors)))

    from spinup_tf2.utils.run_utils import call_experiment, setup_logger_kwargs

    # Seeds first, then environments: after each full seed both curves have a point more.
    def seeds_for(env):
        if a.seed is not None:
            return a.seed
        return (DMC[env][0] if dmc else HER[env] if her else FAMILY[a.suite][1] if family
                else SEEDS + EXTRA_SEEDS.get(env, []))

    todo = 0
    for seed in sorted(set().union(*(seeds_for(env) for env in a.env))):
        for env in a.env:
            if seed not in seeds_for(env):
                continue
            exp_name = f"{prefix}-" + env.split(":")[-1].lower().replace(
                "dm_control/", "dmc-").removesuffix("-v0")
            out = setup_logger_kwargs(exp_name, seed, a.data_dir)["output_dir"]
            done = epochs_done(out)
            if done >= a.epochs:
                print(f"done     {out} ({done} epochs)")
                continue
            todo += 1
            print(f"{'would run' if a.dry_run else 'running'}  {out} (has {done} epochs)",
                  flush=True)
            if a.dry_run:
                continue
            resume = osp.isdir(osp.join(out, "train_state"))
            if osp.exists(out) and not resume:
                shutil.rmtree(out)
            import spinup_tf2

            settings = (dict(DMC_SETTINGS, **DMC[env][1]) if dmc else HER_SETTINGS if her
                        else family_settings if family or a.replay or a.actors
                        or a.precision != "float32" else {})
            algo = getattr(spinup_tf2, a.suite) if family else spinup_tf2.sac
            call_experiment(exp_name, algo, seed=seed, data_dir=a.data_dir,
                            env_name=env, epochs=a.epochs, resume=resume, **settings)
    if not todo:
        print(f"Nothing to run: every run listed already has its {a.epochs} epochs in "
              f"{a.data_dir} (the bundled results, on a fresh clone). Give --data_dir DIR to "
              f"run them anew there (hours per run on 2 cores), or --env/--seed for fewer.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
