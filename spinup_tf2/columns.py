"""progress.txt's columns: which a SAC run (or a variant's) writes, in Spinning Up's order.

Kept apart from the training code (no TensorFlow here), so that a launcher can check a
column a user names (``tune --objective``) before anything starts."""

from __future__ import annotations

import re

# The update's diagnostics for two critics, as losses.logged_keys(2) gives them.
SAC_KEYS = ("LossPi", "LossQ1", "LossQ2", "Q1Vals", "Q2Vals", "LogPi")
# A variant's further critics: Q3Vals, LossQ3, ... (REDQ's ensemble).
_MORE_CRITICS = re.compile(r"^((Average|Std|Max|Min)Q\d+Vals|LossQ\d+)$")


def epoch_columns(keys: tuple = SAC_KEYS, success: bool = False) -> list[tuple]:
    """progress.txt's columns as ``(key, kind)`` pairs in Spinning Up's order, for the
    update's diagnostics ``keys`` (``update.logged_keys``): ``Q3Vals``, ``LossQ3``... after
    their like for a variant with more critics; ``Alpha`` and ``LossAlpha`` after ``Time``
    when alpha is learned; last, with ``success``, ``SuccessRate`` and ``TestSuccessRate``.
    ``kind`` is 'value' (one number), 'mean' (the epoch's average) or 'stats' (its
    Average, Std, Max and Min)."""
    critics = [k[len("LossQ"):] for k in keys if k.startswith("LossQ")]
    columns = [("Epoch", "value"), ("EpRet", "stats"), ("TestEpRet", "stats"),
               ("EpLen", "mean"), ("TestEpLen", "mean"), ("TotalEnvInteracts", "value")]
    columns += [(f"Q{i}Vals", "stats") for i in critics]
    columns += [("LogPi", "stats"), ("LossPi", "mean")]
    columns += [(f"LossQ{i}", "mean") for i in critics] + [("Time", "value")]
    if "Alpha" in keys:
        columns += [("Alpha", "mean"), ("LossAlpha", "mean")]
    if success:
        columns += [("SuccessRate", "mean"), ("TestSuccessRate", "mean")]
    return columns


def column_names(columns: list[tuple]) -> list[str]:
    """The header names of :func:`epoch_columns`' columns (``AverageEpRet``, ``StdEpRet``...)."""
    return [name for key, kind in columns for name in (
        [f"{s}{key}" for s in ("Average", "Std", "Max", "Min")] if kind == "stats" else [key])]


def could_be_column(name: str) -> str | None:
    """None if ``name`` is a column some run's progress.txt can hold; else a sentence
    listing the columns."""
    every = column_names(epoch_columns(SAC_KEYS + ("Alpha",), success=True))
    if name in every or _MORE_CRITICS.match(name):
        return None
    return (f"progress.txt's columns are {', '.join(every)} (Alpha and LossAlpha with alpha "
            f"learned, the success rates on goal tasks, Q3Vals and LossQ3 with more critics)")
