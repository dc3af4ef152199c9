"""A progress bar per epoch for interactive runs."""

from __future__ import annotations

import sys
import time


class EpochProgress:
    """A progress bar per epoch on stderr (tqdm) with env steps/s and the time
    left for the whole run, redrawn every ``every`` steps; nothing at all when
    disabled (output redirected, or not the first MPI process)."""

    def __init__(self, steps_per_epoch: int, epochs: int, enabled: bool, every: int = 50):
        self.steps_per_epoch, self.epochs, self.enabled = steps_per_epoch, epochs, enabled
        self.every = every
        self.bar = None

    def update(self, t: int) -> None:
        """Show progress at env step ``t`` (counted from the run's start)."""
        if not self.enabled or t % self.every:
            return
        from tqdm import tqdm

        epoch = (t - 1) // self.steps_per_epoch + 1
        if self.bar is None:
            self.bar = tqdm(total=self.steps_per_epoch, desc=f"Epoch {epoch}/{self.epochs}",
                            unit="step", leave=False, file=sys.stderr, dynamic_ncols=True)
        elapsed = time.time() - self.bar.start_t
        rate = self.bar.n / elapsed if elapsed > 0 else 0.0
        if rate > 0:  # set before the update below redraws the bar
            left = (self.steps_per_epoch * self.epochs - t) / rate
            self.bar.set_postfix_str(f"run ETA {time.strftime('%H:%M:%S', time.gmtime(left))}",
                                     refresh=False)
        self.bar.update(t - (epoch - 1) * self.steps_per_epoch - self.bar.n)

    def close(self) -> None:
        """End the current epoch's bar."""
        if self.bar is not None:
            self.bar.close()
            self.bar = None
