"""The SAC family's table (spinup_tf2.family) is the one home of a variant: its
function, its command, the launcher's list, the package's exports, the backend defaults and
its variant record all come from its entry; and the policy of DroQ and REDQ steps once per
environment step, whatever updates_per_step is."""

import inspect
import os
import subprocess
import sys

import numpy as np
import pytest
from helpers import TINY, read_progress, run_tiny

import spinup_tf2
from spinup_tf2 import family
from spinup_tf2.arguments import SAC_ARGS
from spinup_tf2.family import EACH_STEP, FAMILY, MEMBERS

NAMES = list(MEMBERS)


@pytest.mark.parametrize("name", NAMES)
def test_a_member_s_function_takes_sac_s_arguments_with_its_own_defaults(name):
    """Spinning Up's form: every argument of sac()'s declared table in its order, less those
    the member refuses, with sac()'s defaults but the member's own."""
    from spinup_tf2.algos.sac.sac import sac

    member, fn = MEMBERS[name], getattr(spinup_tf2, name)
    params = inspect.signature(fn).parameters
    declared = [a for a in SAC_ARGS if a.name not in member.refuses]
    assert list(params) == [a.name for a in declared]
    assert [p for p in inspect.signature(sac).parameters if p not in member.refuses] == list(
        params)
    for a in declared[1:]:
        expected = member.defaults.get(a.name, name if a.name == "actor_critic" else a.default)
        assert params[a.name].default == expected, a.name
    assert set(member.defaults) <= {a.name for a in SAC_ARGS} - set(member.refuses)
    # Its docstring documents what it changes, in sac()'s layout (the launcher's --help reads it).
    from spinup_tf2.arguments import _one_liners

    documented = _one_liners(fn.__doc__)
    assert set(member.defaults) | {"env_fn", "actor_critic", "ac_kwargs"} <= set(documented)
    refused = member.refuses[0] if member.refuses else "bogus"
    with pytest.raises(TypeError, match=refused):
        fn(lambda: None, **{refused: 1})


def test_every_door_lists_the_family_from_its_table():
    from spinup_tf2.algos.sac.variants import FAMILY as RECORDS
    from spinup_tf2.algos.sac.variants import VARIANTS
    from spinup_tf2.launch.flags import ALGOS, NOT_A_VALUE
    from spinup_tf2.user_config import DEFAULT_BACKEND

    assert set(ALGOS) == {f"{n}_tf2" for n in family.ALGORITHMS}
    assert set(DEFAULT_BACKEND) == set(family.ALGORITHMS)
    assert set(NAMES) <= set(spinup_tf2.__all__)
    assert [r.name for r in RECORDS] == NAMES
    for m in FAMILY:
        record = VARIANTS[m.name]
        assert record.actor_critic.__name__ == m.actor_critic
        assert record.actor_critic.variant == m.name  # the class names its record
        assert (record.targets, record.policy_delay, record.adam_betas) == (
            m.targets, m.policy_delay, m.adam_betas)
        assert (record.critic_losses is not None) == m.skip_policy
        launched = ALGOS[f"{m.name}_tf2"][0].defaults()
        assert launched.pop("env_fn") is NOT_A_VALUE
        assert launched == family.member_defaults(m)
        assert ALGOS[f"{m.name}_tf2"][0].doc() == getattr(spinup_tf2, m.name).__doc__


def test_the_family_table_and_the_launcher_import_no_tensorflow():
    code = ("import sys, spinup_tf2.family, spinup_tf2.algos.family, spinup_tf2.launch.flags, "
            "spinup_tf2.run; import spinup_tf2; spinup_tf2.crossq; "
            "sys.exit('tensorflow' in sys.modules)")
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0


EACH = [m.name for m in FAMILY if m.policy_delay == EACH_STEP]
SMALL = {"redq": dict(n_critics=3)}


def optimizer_steps(run):
    """``(critic steps, policy steps)`` from the checkpoint's Adam beta_2 powers."""
    with np.load(os.path.join(run, "train_state", "arrays.npz")) as arrays:
        return tuple(round(float(np.log(arrays[f"var:{k}_optimizer/beta_2_power"])
                                 / np.log(0.999))) for k in ("q", "pi"))


@pytest.mark.parametrize("name", EACH)
def test_the_policy_steps_once_per_environment_step_at_any_update_ratio(name, tmp_path):
    """sac(actor_critic=NAME, updates_per_step=3) and NAME(updates_per_step=3): 400 steps,
    update blocks of 50 steps at t = 100, ..., 350 (300 steps), so 900 critic updates and 300
    policy updates; the two calls are one algorithm (their other defaults given alike)."""
    kw = dict(TINY, ac_kwargs=dict(hidden_sizes=(32, 32), **SMALL.get(name, {})),
              updates_per_step=3, alpha="auto", lr=3e-4, start_steps=200, update_after=100)
    by_name = run_tiny(tmp_path / "sac", actor_critic=name, **kw)
    getattr(spinup_tf2, name)(lambda: __import__("gymnasium").make("Pendulum-v1"), epochs=1,
                              **{k: v for k, v in kw.items()},
                              logger_kwargs=dict(output_dir=str(tmp_path / "own")))
    assert optimizer_steps(by_name) == (900, 300)
    assert optimizer_steps(str(tmp_path / "own")) == (900, 300)
    (_, a), (_, b) = read_progress(by_name), read_progress(str(tmp_path / "own"))
    assert [{k: v for k, v in row.items() if k != "Time"} for row in a] == [
        {k: v for k, v in row.items() if k != "Time"} for row in b]
