"""Prioritized replay: transitions drawn in proportion to their last TD error.

Proportional prioritisation (Schaul et al. 2016): transition i is drawn with probability
``P(i) = p_i ** alpha / sum_k p_k ** alpha``, its priority ``p_i = |delta_i| + eps`` set from
the TD error of the update that last drew it (new transitions get the largest priority so
far, so each is drawn soon), and its loss weighted by ``w_i = (N P(i)) ** -beta`` scaled so
the largest possible weight is 1; beta goes linearly from ``priority_beta`` to 1 over the
run's updates. LAP (Fujimoto et al. 2020, the replay of TD7 and MR.Q) sets ``p_i =
max(|delta_i|, 1)`` instead, weights nothing, and trains the critics on the Huber loss
(kappa 1), which in expectation is uniform replay's squared loss.

Updates run in compiled blocks of ``update_every x updates_per_step``; a block's
minibatches are all drawn before its first update, from the priorities as the previous
block left them, and each drawn transition's priority is written back after the block from
the update that drew it (the last, if several did). That is a block's staleness: within a
block, priorities are up to one block old (docs/user/algorithms.md measures it).

:class:`SumTree` holds the ``p ** alpha`` values in a binary tree of sums (and one of
minima): sampling and updating a batch are vectorised numpy, O(log N) per transition.
"""

from __future__ import annotations

import numpy as np

from spinup_tf2.algos.sac.buffers import ReplayBuffer, check_shape
from spinup_tf2.errors import SpinupError

DEFAULT_ALPHA = {"per": 0.6, "lap": 0.4}  # Schaul et al.'s proportional; TD7's LAP


class SumTree:
    """``capacity`` non-negative values in the leaves of a complete binary tree whose inner
    nodes hold their children's sum (and, in a second tree, their minimum).

    Every inner node is recomputed from its two children (never adjusted by a difference),
    so the tree is a function of its leaves: rebuilt from them it is the same, bit for bit.
    """

    def __init__(self, capacity: int):
        self.capacity = int(capacity)
        self.depth = max(1, int(np.ceil(np.log2(max(self.capacity, 2)))))
        self.base = 1 << self.depth  # leaf i sits at base + i; the root at 1
        self.sums = np.zeros(2 * self.base, dtype=np.float64)
        self.mins = np.full(2 * self.base, np.inf, dtype=np.float64)

    @property
    def total(self) -> float:
        """The sum of all leaves."""
        return float(self.sums[1])

    @property
    def min(self) -> float:
        """The smallest leaf written (inf when none is)."""
        return float(self.mins[1])

    def leaves(self, n: int) -> np.ndarray:
        """The first ``n`` leaves (a copy)."""
        return self.sums[self.base:self.base + n].copy()

    def set(self, idx: np.ndarray, values: np.ndarray) -> None:
        """Leaves ``idx`` (distinct) take ``values``; their ancestors are recomputed."""
        idx = np.asarray(idx, dtype=np.int64)
        if idx.size == 0:
            return
        pos = idx + self.base
        self.sums[pos] = values
        self.mins[pos] = values
        for _ in range(self.depth):  # every leaf is at the same depth: one level per pass
            pos = np.unique(pos >> 1)
            self.sums[pos] = self.sums[2 * pos] + self.sums[2 * pos + 1]
            self.mins[pos] = np.minimum(self.mins[2 * pos], self.mins[2 * pos + 1])

    def find(self, mass: np.ndarray) -> np.ndarray:
        """The leaf each ``mass`` (in [0, total)) falls in: the i with ``cumsum[i-1] <= mass
        < cumsum[i]`` (so a leaf of 0 is never found), descending the tree for all at once."""
        mass = np.asarray(mass, dtype=np.float64).copy()
        pos = np.ones(mass.shape, dtype=np.int64)
        for _ in range(self.depth):
            left = self.sums[2 * pos]
            right = mass >= left
            mass -= np.where(right, left, 0.0)
            pos = 2 * pos + right
        return pos - self.base


class PrioritizedReplayBuffer(ReplayBuffer):
    """:class:`~spinup_tf2.algos.sac.buffers.ReplayBuffer` with proportional prioritisation
    (``kind='per'``) or LAP (``kind='lap'``): see the module's docstring.

    ``sample_batch`` adds each minibatch's importance ``weights`` (float32; all ones for
    LAP) and remembers what it drew; :meth:`update_priorities` then takes the drawn
    transitions' TD errors. Its state (every priority, the largest so far, the minibatches
    drawn, which anneal beta) is in :meth:`state_arrays`, so a resumed run draws as the
    uninterrupted one would.

    Args:
        obs_dim, act_dim, size: As ReplayBuffer's.
        kind (str): ``'per'`` or ``'lap'``.
        alpha (float): The priorities' exponent (0: uniform).
        beta (float): The importance weights' exponent at the first update; it grows
            linearly to 1 over ``anneal_updates`` minibatches (PER only).
        anneal_updates (int): The run's updates.
        eps (float): Added to each ``|delta|`` (PER), so no transition gets priority 0.
    """

    def __init__(self, obs_dim: int, act_dim: int, size: int, kind: str = "per",
                 alpha: float | None = None, beta: float = 0.4, anneal_updates: int = 1,
                 eps: float = 1e-6):
        super().__init__(obs_dim, act_dim, size)
        self.kind = kind
        self.alpha = DEFAULT_ALPHA[kind] if alpha is None else float(alpha)
        self.beta0, self.anneal_updates = float(beta), max(1, int(anneal_updates))
        self.eps = float(eps)
        self.tree = SumTree(size)
        self.max_leaf = 1.0  # the largest p ** alpha so far: what a new transition gets
        self.draws = 0  # minibatches drawn: beta's progress
        self.pending: list[int] = []  # stored, not yet in the tree (written at the next draw)
        self.drawn: np.ndarray | None = None

    def store(self, *args, **kwargs) -> None:
        """Add one transition, with the largest priority so far."""
        self.pending.append(self.ptr)
        super().store(*args, **kwargs)

    def _flush(self) -> None:
        if self.pending:  # one vectorised write per block instead of one per step
            idx = np.unique(np.asarray(self.pending, dtype=np.int64))
            self.tree.set(idx, np.full(idx.size, self.max_leaf))
            self.pending = []

    def beta(self) -> float:
        """The importance weights' exponent for the next minibatch."""
        return self.beta0 + (1.0 - self.beta0) * min(1.0, self.draws / self.anneal_updates)

    def sample_batch(self, batch_size: int = 32, rng: np.random.Generator | None = None,
                     n_batches: int | None = None) -> dict:
        """As ReplayBuffer's, each transition drawn with probability ``P(i)`` and with its
        importance weight under ``'weights'``."""
        rng = np.random.default_rng() if rng is None else rng
        self._flush()
        shape = (batch_size,) if n_batches is None else (n_batches, batch_size)
        total = self.tree.total
        idxs = self.tree.find(rng.random(shape) * total)
        leaf = self.tree.sums[idxs + self.tree.base]
        lost = (leaf <= 0) | (idxs >= self.size)  # float rounding at an edge: rare
        if lost.any():
            cums = np.cumsum(self.tree.leaves(self.size))
            idxs[lost] = np.minimum(np.searchsorted(cums, rng.random(lost.sum()) * cums[-1],
                                                    side="right"), self.size - 1)
            leaf = self.tree.sums[idxs + self.tree.base]
        if self.kind == "lap":
            weights = np.ones(shape, dtype=np.float32)
        else:  # (N P(i)) ** -beta over its largest, (N P_min) ** -beta: (p_i / p_min) ** -beta
            weights = (leaf / self.tree.min) ** -self.beta()
        self.draws += 1 if n_batches is None else n_batches
        self.drawn = idxs
        return dict(self.gather(idxs), weights=weights.astype(np.float32))

    def priorities_of(self, td: np.ndarray) -> np.ndarray:
        """``p ** alpha`` for TD errors ``td``: ``(|td| + eps) ** alpha`` (PER) or
        ``max(|td|, 1) ** alpha`` (LAP)."""
        td = np.abs(np.asarray(td, dtype=np.float64))
        p = np.maximum(td, 1.0) if self.kind == "lap" else td + self.eps
        return p ** self.alpha

    def update_priorities(self, td: np.ndarray) -> None:
        """The TD errors of the last :meth:`sample_batch`'s transitions, in its shape, as
        their priorities; a transition drawn more than once takes its last draw's."""
        idxs = self.drawn.reshape(-1)
        td = check_shape(np.asarray(td), self.drawn.shape, "td").reshape(-1)
        keep = np.isfinite(td)  # a non-finite error leaves the old priority (the run stops)
        idxs, td = idxs[keep], td[keep]
        last = idxs.size - 1 - np.unique(idxs[::-1], return_index=True)[1]
        values = self.priorities_of(td[last])
        self.tree.set(idxs[last], values)
        self.max_leaf = max(self.max_leaf, float(values.max(initial=0.0)))
        self.drawn = None

    def state_arrays(self) -> dict:
        """ReplayBuffer's arrays, each transition's ``p ** alpha``, the largest so far and
        the minibatches drawn."""
        self._flush()
        return dict(super().state_arrays(), per_leaves=self.tree.leaves(self.size),
                    per_max_leaf=np.array(self.max_leaf), per_draws=np.array(self.draws))

    def load_state_arrays(self, arrays: dict) -> None:
        """Restore :meth:`state_arrays` (the trees rebuilt from the priorities), after
        checking them against the transitions."""
        super().load_state_arrays(arrays)
        if "per_leaves" not in arrays:
            raise ValueError("it holds no priorities (per_leaves): it was written by a run "
                             "with uniform replay")
        leaves = check_shape(np.asarray(arrays["per_leaves"]), (self.size,), "per_leaves")
        if self.size and not (np.all(np.isfinite(leaves)) and leaves.min() > 0):
            raise ValueError("per_leaves holds priorities that are not finite and > 0")
        max_leaf = float(check_shape(np.asarray(arrays["per_max_leaf"]), (), "per_max_leaf"))
        draws = check_shape(np.asarray(arrays["per_draws"]), (), "per_draws")
        if not (np.isfinite(max_leaf) and max_leaf > 0 and np.issubdtype(draws.dtype, np.integer)
                and draws >= 0):
            raise ValueError(f"per_max_leaf {max_leaf} or per_draws {draws} is not one a run "
                             f"writes")
        self.tree = SumTree(self.max_size)
        self.tree.set(np.arange(self.size), leaves)
        self.max_leaf, self.draws, self.pending, self.drawn = max_leaf, int(draws), [], None


def check_priority(args: dict, variant) -> None:
    """Refuse, before anything is written, prioritized replay (``args``: sac()'s, whose
    ``replay`` is 'per' or 'lap')
    where it cannot work: beside a buffer of one's own, with hindsight relabelling, on a
    buffer that keeps steps in order (image frames, recurrent windows), with losses that
    take no importance ``weights``, and LAP with losses that take no ``huber`` (critics
    that learn a distribution rather than a squared TD error)."""
    replay = args["replay"]
    if replay == "uniform":
        return
    import inspect

    takes = inspect.signature(variant.losses).parameters
    why = None
    if args["replay_buffer_class"] is not None:
        why = "a replay_buffer_class of one's own (prioritized replay is a buffer itself)"
    elif args["her"]:
        why = ("her=True (hindsight relabelling draws goals after the draw, so a priority "
               "would belong to a transition never stored)")
    elif variant.keeps != "transitions":
        why = (f"the {variant.name} variant, whose buffer keeps its steps in order "
               f"({variant.keeps}): a priority per transition would split what it draws "
               f"together")
    elif "weights" not in takes:
        why = (f"the {variant.name} variant's losses, which take no importance weights "
               f"(a losses function takes weights=None and huber=False, and returns td)")
    elif replay == "lap" and "huber" not in takes:
        why = (f"the {variant.name} variant, whose critics learn a distribution, not a "
               f"squared TD error (which LAP's Huber loss replaces); replay='per' works "
               f"with it")
    if why:
        raise SpinupError(f"sac() got replay={replay!r} with {why}. Nothing was written. "
                          f"Give replay='uniform' (the default), or drop what it cannot "
                          f"combine with.")
