"""Aggregate statistics over runs, as Agarwal et al. (2021, "Deep RL at the Edge
of the Statistical Precipice") recommend reporting them: the interquartile
mean (IQM) and stratified-bootstrap confidence intervals. Plain numpy, seeded.

``scores`` arrays are ``(runs, tasks)``: one column per task (stratum), one
row per run (seed). A single task is a ``(runs,)`` array.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np


def iqm(scores, axis=None) -> float | np.ndarray:
    """Interquartile mean: the mean of the middle half of the scores, after
    dropping the lowest and the highest ``floor(n / 4)`` of them (the 25 %
    trimmed mean, as ``scipy.stats.trim_mean(x, 0.25)``). With ``axis=None``
    all scores are pooled; 1 to 3 scores keep all of them."""
    x = np.asarray(scores, dtype=float)
    if axis is None:
        x, axis = x.reshape(-1), 0
    x = np.sort(np.moveaxis(x, axis, -1), axis=-1)
    n = x.shape[-1]
    k = int(0.25 * n)
    return np.mean(x[..., k:n - k], axis=-1)


def stratified_bootstrap_ci(scores, statistic: Callable = iqm, ci: float = 95.0,
                            n_boot: int = 2000, seed: int = 0) -> tuple[float, float]:
    """Percentile confidence interval of ``statistic`` (over all scores) by a
    stratified bootstrap: each of ``n_boot`` replicates draws, within every
    task (column), as many runs as it has, with replacement.

    Args:
        scores: ``(runs, tasks)`` array (or ``(runs,)`` for one task).
        statistic: Maps an array of scores to a number (``iqm``, ``np.mean``,
            ``np.median``); called on each replicate's ``(runs, tasks)`` array.
        ci (float): Confidence level in percent.
        n_boot (int): Bootstrap replicates.
        seed (int): Seed of the resampling (the same seed, the same interval).

    Returns:
        ``(low, high)``.
    """
    x = np.asarray(scores, dtype=float)
    if x.ndim == 1:
        x = x[:, None]
    runs, tasks = x.shape
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, runs, size=(n_boot, runs, tasks))  # rows drawn per task
    reps = np.take_along_axis(np.broadcast_to(x, (n_boot, runs, tasks)), idx, axis=1)
    stats = np.array([statistic(r) for r in reps])
    tail = (100.0 - ci) / 2
    low, high = np.percentile(stats, [tail, 100.0 - tail])
    return float(low), float(high)
