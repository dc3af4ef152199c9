"""The base of the logger's outputs (:class:`Output`), in a module of its own so that an
output living elsewhere (the experiment trackers, :mod:`spinup_tf2.utils.trackers`) and the
logger that makes it (:mod:`spinup_tf2.utils.logx`, which shows it as ``logx.Output``) do not
import each other."""

from __future__ import annotations


class Output:
    """Where the logger's rows go: one subclass per backend (after Stable-Baselines3's
    ``KVWriter``). :meth:`write` gets each row as ``{column: value}`` in the columns'
    order (the same columns every row) and the number of rows written before it."""

    def write(self, row: dict, index: int) -> None:
        """Write one row."""
        raise NotImplementedError

    def start(self, config: dict) -> None:
        """The run's configuration, as config.json holds it (before the first row)."""

    def finish(self, ok: bool) -> None:
        """The run ended (``ok``: as it should, not by an error)."""

    def close(self) -> None:
        """Release what the output holds open."""
