"""What watches a run while it trains: the stop on non-finite updates (progress and the
last checkpoint kept) and the warning when the critics run away while finite."""

from __future__ import annotations

import numpy as np


def check_finite(info: dict, t: int, steps_per_epoch: int, last_saved_epoch: int,
                 output_dir: str | None) -> None:
    """Stop the run with a clear message when an update produced NaN or inf."""
    bad = [k for k in ("LossPi", "LossQ1", "LossQ2") if not np.all(np.isfinite(info[k]))]
    if not bad:
        return
    where = output_dir or "(no output directory)"
    saved = (f"the checkpoint of epoch {last_saved_epoch} in {where} (tf2_save/, vars.pkl) and "
             f"progress.txt up to that epoch are intact" if last_saved_epoch
             else "no checkpoint had been saved yet")
    raise FloatingPointError(
        f"SAC stopped at env step {t} (epoch {t // steps_per_epoch + 1}): the update produced "
        f"non-finite values in {', '.join(bad)}. Nothing more was written: {saved}. Usual causes "
        f"are a learning rate too large for the reward scale, rewards of huge magnitude, or NaN "
        f"in the observations; try a smaller lr or rescaled rewards.")


def q_runaway(epoch_dict: dict, rewards: np.ndarray | None, gamma: float,
              alpha: float | None = None) -> str | None:
    """A warning (one paragraph) when the critics' mean Q of an epoch lies far outside
    what the stored rewards can give, else None: the sign of critics that feed on their
    own overestimates (many updates per step on little data, a learning rate too large).

    The soft Q of any policy lies in ``[L, U]``::

        U = (max r + alpha * max(0, -min log pi)) / (1 - gamma)
        L = (min r - alpha * max(0, max log pi)) / (1 - gamma)

    with the epoch's extremes of ``LogPi`` and ``Alpha`` (or the fixed ``alpha``) standing in
    for the policy's. A critic's mean beyond that range by its whole width (at least the
    larger bound's size, and at least ``1 / (1 - gamma)``) is reported: the slack keeps a run
    that is merely noisy, or whose n-step rewards (sums of several steps, bootstrapped at
    ``gamma ** n``, which this bound overstates) sit near the bounds, from being called
    diverging.

    Args:
        epoch_dict: The logger's stored values of the epoch (``Q1Vals`` ... ``QNVals``,
            ``LogPi``, ``Alpha``).
        rewards: Every reward stored so far, or None (a buffer that does not show them).
        gamma: The discount; at 1 no bound holds and nothing is reported.
        alpha: The entropy weight when fixed; None when learned (then ``Alpha`` is read).
    """
    def parts(key):  # array by array: an epoch of REDQ holds ~20 million values a critic
        return [np.asarray(v) for v in epoch_dict.get(key, []) if np.size(v)]

    means = {k: sum(float(np.sum(v)) for v in p) / sum(v.size for v in p)
             for k in sorted(epoch_dict)
             if k[0] == "Q" and k.endswith("Vals") and k[1:-4].isdigit() and (p := parts(k))}
    logp, alphas = parts("LogPi"), parts("Alpha") if alpha is None else [np.array(alpha)]
    if (not means or rewards is None or np.size(rewards) == 0 or not logp or not alphas
            or gamma >= 1 or not all(np.isfinite(m) for m in means.values())):
        return None
    lo, hi = min(float(np.min(v)) for v in logp), max(float(np.max(v)) for v in logp)
    a, horizon = max(float(np.max(v)) for v in alphas), 1.0 / (1.0 - gamma)
    r_min, r_max = float(np.min(rewards)), float(np.max(rewards))
    upper = (r_max + a * max(0.0, -lo)) * horizon
    lower = (r_min - a * max(0.0, hi)) * horizon
    # At least one reward unit a step: rewards all alike (none yet of a sparse task) give
    # L = U, and a fresh critic's small values must not read as divergence.
    slack = max(upper - lower, abs(upper), abs(lower), horizon)
    key, q = max(means.items(), key=lambda kv: abs(kv[1]))
    if lower - slack <= q <= upper + slack:
        return None
    return (f"Warning: the critics are diverging: this epoch's mean {key} is {q:.4g}, but "
            f"rewards in [{r_min:.4g}, {r_max:.4g}] with gamma {gamma:g}, alpha up to {a:.4g} "
            f"and log pi in [{lo:.4g}, {hi:.4g}] allow "
            f"[{lower:.4g}, {upper:.4g}]. The run goes on, but its policy chases these "
            f"values. Usual causes: many updates per step on little data (a high "
            f"updates_per_step from an early update_after; the family's variants made for it "
            f"start later or regularize their critics), a learning rate too large for the "
            f"reward scale, or rewards of huge magnitude. This warning is not repeated in this "
            f"run.")


def stored_rewards(replay_buffer) -> np.ndarray | None:
    """The rewards ``replay_buffer`` holds (its ``rew_buf`` up to its ``size``), or None for
    one that does not show them (a user's own class)."""
    buf, size = getattr(replay_buffer, "rew_buf", None), getattr(replay_buffer, "size", None)
    if buf is None or not isinstance(size, (int, np.integer)):
        return None
    return np.asarray(buf[:int(size)])


class RunawayWatch:
    """:func:`q_runaway` over a run: called with each epoch's stored values, it returns
    the warning the first time the critics run away, and None ever after (one warning per
    run, however long the run stays diverged).

    Args:
        replay_buffer: The run's buffer, whose rewards (:func:`stored_rewards`) give the bound.
        gamma: The discount.
        alpha: The entropy weight when fixed; None when learned (the logged ``Alpha``).
    """

    def __init__(self, replay_buffer, gamma: float, alpha: float | None):
        self.replay_buffer, self.gamma, self.alpha = replay_buffer, gamma, alpha
        self.warned = False

    def __call__(self, epoch_dict: dict) -> str | None:
        if self.warned:
            return None
        warning = q_runaway(epoch_dict, stored_rewards(self.replay_buffer), self.gamma,
                            self.alpha)
        self.warned = warning is not None
        return warning
