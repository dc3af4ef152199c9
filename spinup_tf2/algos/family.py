"""The SAC family's functions (``crossq()``, ...): one per entry of the family's table
(:mod:`spinup_tf2.family`), each ``sac()`` with that variant's defaults.

No TensorFlow until a function runs: the launcher reads their signatures and docstrings
here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from spinup_tf2.family import FAMILY, Member, docstring, signature


def command(member: Member) -> Callable[..., Any]:
    """``member``'s function: ``sac()`` with its defaults, as Spinning Up's functions take
    their arguments (positional or by name), its own signature and docstring."""
    sig = signature(member)

    def run(*args, **kwargs):
        bound = sig.bind(*args, **kwargs)
        bound.apply_defaults()
        from spinup_tf2.algos.sac.sac import sac

        return sac(**bound.arguments)

    run.__name__ = run.__qualname__ = member.name
    run.__module__ = __name__
    run.__doc__ = docstring(member)
    run.__signature__ = sig
    return run


# The functions themselves, by name (cloudpickle sends them to launched processes by
# reference: spinup_tf2.algos.family.crossq).
for _m in FAMILY:
    globals()[_m.name] = command(_m)
del _m
