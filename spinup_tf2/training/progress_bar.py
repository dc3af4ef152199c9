"""A progress bar per epoch for interactive runs."""

from __future__ import annotations

import sys
import time

from spinup_tf2.utils.mpi_tools import proc_id


class EpochProgress:
    """A progress bar per epoch on stderr (tqdm) with env steps/s and the time
    left for the whole run, redrawn every ``every`` steps; nothing at all when
    disabled (by default, when output is redirected or this is not the first MPI
    process)."""

    def __init__(self, steps_per_epoch: int, epochs: int, enabled: bool | None = None,
                 every: int = 50):
        if enabled is None:
            enabled = sys.stdout.isatty() and proc_id() == 0
        self.steps_per_epoch, self.epochs, self.enabled = steps_per_epoch, epochs, enabled
        self.every = every
        self.bar = None
        self.epoch_start = None  # when the current epoch's bar began
        self.last_epoch = None  # seconds the previous epoch took, its end-of-epoch work included

    def update(self, t: int) -> None:
        """Show progress at env step ``t`` (counted from the run's start)."""
        if not self.enabled or t % self.every:
            return
        from tqdm import tqdm

        epoch = (t - 1) // self.steps_per_epoch + 1
        if self.bar is None:
            now = time.time()
            if self.epoch_start is not None:
                self.last_epoch = now - self.epoch_start
            self.epoch_start = now
            self.bar = tqdm(total=self.steps_per_epoch, desc=f"Epoch {epoch}/{self.epochs}",
                            unit="step", leave=False, file=sys.stderr, dynamic_ncols=True)
        elapsed = time.time() - self.bar.start_t
        rate = self.bar.n / elapsed if elapsed > 0 else 0.0
        if rate > 0:  # set before the update below redraws the bar
            left = run_eta(t, self.steps_per_epoch, self.epochs, rate, self.last_epoch)
            self.bar.set_postfix_str(f"run ETA {time.strftime('%H:%M:%S', time.gmtime(left))}",
                                     refresh=False)
        self.bar.update(t - (epoch - 1) * self.steps_per_epoch - self.bar.n)

    def close(self) -> None:
        """End the current epoch's bar."""
        if self.bar is not None:
            self.bar.close()
            self.bar = None


def run_eta(t: int, steps_per_epoch: int, epochs: int, rate: float,
            last_epoch: float | None) -> float:
    """Seconds left in the run at env step ``t``, stepping at ``rate`` steps/s now. Once
    an epoch has ended, each epoch also costs what the last one spent beyond its steps
    (test episodes, saving, the checkpoint): ``last_epoch`` seconds in all."""
    epoch = (t - 1) // steps_per_epoch + 1
    in_epoch = (epoch * steps_per_epoch - t) / rate
    if last_epoch is None:
        return (steps_per_epoch * epochs - t) / rate
    end_work = max(0.0, last_epoch - steps_per_epoch / rate)
    return in_epoch + end_work + (epochs - epoch) * last_epoch
