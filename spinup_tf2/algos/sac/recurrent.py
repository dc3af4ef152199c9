"""SAC with memory: recurrent actor-critics for partially observed tasks.

``sac(env_fn, actor_critic=RecurrentActorCritic)`` (``--recurrent`` on the command line)
gives the actor and each critic a GRU that reads the observations of the episode so far.
Training follows R2D2 (Kapturowski et al. 2019) as recurrent SAC in the POMDP literature
does (pomdp-baselines, Ni et al. 2022): the replay buffer keeps each step's recurrent
state as it was when acting, minibatches are windows of ``burn_in + sequence_length``
consecutive steps that start from that stored state, the first ``burn_in`` steps only
refresh the state (no gradient flows through them), a new episode inside a window starts
from a zero state again, and a mask drops the steps of a window that the buffer does not
hold contiguously (the write pointer, the oldest data), so no loss reaches across an
episode boundary or into unrelated data. After the GRUs, the losses are
:func:`spinup_tf2.algos.sac.losses.continuous_losses` or ``discrete_losses`` unchanged, on
the steps the mask keeps.

Why a GRU, not an LSTM: one state vector per network (the LSTM has two), so the state
stored per step, the exported policy's ``state`` input and its checkpoint are one array;
pomdp-baselines found the two equally good on these tasks, and the GRU costs 3/4 of the
LSTM's arithmetic.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from spinup_tf2.algos.sac import core
from spinup_tf2.algos.sac.agent import Agent
from spinup_tf2.algos.sac.buffers import check_pointers, check_shape
from spinup_tf2.algos.sac.fast_path import action_noise
from spinup_tf2.errors import SpinupError
from spinup_tf2.tf_setup import graph_function, import_tensorflow

tf = import_tensorflow()
import keras  # noqa: E402

SEQUENCE_KEYS = ("start", "state", "mask")


class RecurrentNet(core.ObsModel):
    """A GRU over observations, then a head (the actor's or a critic's) on its state.

    :meth:`step` advances the memory by one observation. Calling the model applies the
    head to its own slice ``[lo, hi)`` of the actor-critic's whole state (the GRU states
    of pi, q1 and q2 side by side), so the SAC losses written for observations run
    unchanged on memory features.
    """

    def __init__(self, obs_dim: int, memory_size: int, head, lo: int,
                 obs_normalizer: core.ObsNormalizer | None = None, **kwargs):
        super().__init__(obs_normalizer, **kwargs)
        self.cell = keras.layers.GRUCell(memory_size, name="gru")
        self.head, self.lo, self.hi = head, int(lo), int(lo) + int(memory_size)
        self.cell.build((None, obs_dim))  # its weights; the math is gru_gates

    def step(self, obs, h):
        """The GRU state after reading ``obs`` from state ``h`` (Keras' GRU with
        ``reset_after``, the cell's own weights)."""
        cell = self.cell
        x = tf.matmul(self.prepare_obs(obs), cell.kernel) + cell.bias[0]
        return gru_gates(x, tf.matmul(h, cell.recurrent_kernel) + cell.bias[1], h)

    def __call__(self, state, *args, **kwargs):
        # Straight to the head, whose own call names its arguments (Keras refuses
        # tensors and plain values mixed in one **kwargs).
        return self.head(state[:, self.lo:self.hi], *args, **kwargs)

    def dist(self, state):
        """The categorical head's ``(probs, log_probs)`` (discrete actions)."""
        return self.head.dist(state[:, self.lo:self.hi])


class RecurrentActorCritic(core.ActorCritic):
    """Recurrent SAC's actor-critic: ``.pi``, ``.q1``, ``.q2``, each a GRU of
    ``memory_size`` units over the observations followed by the MLP head of
    :class:`core.MLPActorCritic` (or of the discrete one, for a Discrete action space).

    The whole memory is one vector of ``state_size = 3 * memory_size`` (pi's, q1's and
    q2's GRU states); :meth:`step` advances it by one observation, and ``pi(state)``,
    ``q1(state, a)``, ``q2(state, a)`` read their parts. Acting carries the state
    through the episode (zeros at its start); training reads windows of
    ``burn_in + sequence_length`` steps from the replay buffer.

    Args:
        observation_space: A 1-D ``gymnasium.spaces.Box``.
        action_space: A Box bounded by ``[-a, a]`` in every dimension, or Discrete.
        hidden_sizes (tuple): Widths of the hidden layers of the three heads.
        activation: Activation after every hidden layer of the heads.
        memory_size (int): Units of each GRU (ML-Agents' ``memory_size``).
        sequence_length (int): Steps of each training window that carry a loss
            (ML-Agents' ``sequence_length``).
        burn_in (int): Steps before those, read from the stored state without
            gradients, to refresh it (R2D2's burn-in); 0 for none.
        obs_normalizer (ObsNormalizer): Shared by the three GRUs' inputs
            (``normalize_obs=True``).
    """

    variant = "recurrent"  # its record in spinup_tf2.algos.sac.variants

    def __init__(self, observation_space, action_space, hidden_sizes: Sequence[int] = (256, 256),
                 activation: Callable = tf.nn.relu, memory_size: int = 64,
                 sequence_length: int = 10, burn_in: int = 10,
                 obs_normalizer: core.ObsNormalizer | None = None):
        for name, value, low, high in (("memory_size", memory_size, 1, 4096),
                                       ("sequence_length", sequence_length, 1, 1000),
                                       ("burn_in", burn_in, 0, 1000)):
            if (isinstance(value, bool) or not isinstance(value, (int, np.integer))
                    or not low <= value <= high):
                raise SpinupError(f"RecurrentActorCritic got {name}={value!r} (ac_kwargs); it "
                                  f"must be a whole number from {low} to {high}. Nothing was "
                                  f"written.")
        obs_dim = observation_space.shape[0]
        self.discrete = hasattr(action_space, "n")
        self.memory_size, self.sequence_length = int(memory_size), int(sequence_length)
        self.burn_in, self.state_size = int(burn_in), 3 * int(memory_size)
        self.obs_normalizer = obs_normalizer
        h = self.memory_size
        if self.discrete:
            n = int(action_space.n)
            heads = (core.CategoricalMLPActor(h, n, hidden_sizes, activation, name="head"),
                     *(core.DiscreteMLPQFunction(h, n, hidden_sizes, activation, name="head")
                       for _ in range(2)))
        else:
            act_dim, act_limit = action_space.shape[0], float(action_space.high[0])
            heads = (core.SquashedGaussianMLPActor(h, act_dim, hidden_sizes, activation,
                                                   act_limit, name="head"),
                     *(core.MLPQFunction(h, act_dim, hidden_sizes, activation, name="head")
                       for _ in range(2)))
        self.pi, self.q1, self.q2 = (RecurrentNet(obs_dim, h, head, j * h, obs_normalizer,
                                                  name=name)
                                     for j, (name, head) in enumerate(zip(("pi", "q1", "q2"),
                                                                          heads, strict=False)))

    @property
    def window(self) -> int:
        """Steps in one training window: ``burn_in + sequence_length``."""
        return self.burn_in + self.sequence_length

    def step(self, obs, state):
        """The whole memory after reading ``obs`` (batch, obs_dim) from ``state``
        (batch, state_size)."""
        return tf.concat([net.step(obs, state[:, net.lo:net.hi])
                          for net in (self.pi, self.q1, self.q2)], axis=-1)

    def act(self, obs, deterministic: bool = False) -> np.ndarray:
        raise SpinupError("A recurrent policy acts on its memory as well as the observation: "
                          "use make_recurrent_agent(ac, ...) (or the SavedModel's step), which "
                          "carries the state through the episode.")


def gru_gates(x, rec, h):
    """A GRU step from the input and recurrent projections ``x = obs @ W + b`` and
    ``rec = h @ U + b_rec`` (gates z, r, candidate, in Keras' order and form)::

        z = sigmoid(x_z + rec_z);  r = sigmoid(x_r + rec_r)
        h' = z * h + (1 - z) * tanh(x_c + r * rec_c)
    """
    x_z, x_r, x_c = tf.split(x, 3, axis=-1)
    rec_z, rec_r, rec_c = tf.split(rec, 3, axis=-1)
    z = tf.sigmoid(x_z + rec_z)
    r = tf.sigmoid(x_r + rec_r)
    return z * h + (1.0 - z) * tf.tanh(x_c + r * rec_c)


def unroll(nets: Sequence[RecurrentNet], o, o2, start, state, burn_in: int, window: int):
    """The GRUs of ``nets`` (which read the same observations) run side by side over
    windows ``o`` (batch, window, obs_dim), from their parts of the stored ``state``
    (batch, state_size), with a zero state at each ``start``; the burn-in steps carry no
    gradient. Returns ``(y, y2)``: the GRU states after reading ``o[:, k]`` and, from
    there, ``o2[:, k]``, for the steps after the burn-in, flattened to
    (batch * sequence_length, len(nets) * memory_size), the nets side by side.

    The input projections of all the nets over the whole window are one matmul; then
    each net's recurrent step is its own matmul (here faster than one batched matmul of
    the stacked kernels).
    """
    cells = [net.cell for net in nets]
    m = nets[0].hi - nets[0].lo
    w = tf.concat([tf.convert_to_tensor(c.kernel) for c in cells], axis=1)  # (obs, j*3m)
    b = tf.concat([c.bias[0] for c in cells], axis=0)

    def project(obs):  # (n, t, obs_dim) -> for each net (n, t, 3m)
        x = nets[0].prepare_obs(tf.reshape(obs, [-1, tf.shape(obs)[-1]])) @ w + b
        return tf.split(tf.reshape(x, [tf.shape(obs)[0], -1, len(nets) * 3 * m]), len(nets), -1)

    def step(x, h, cell):
        return gru_gates(x, tf.matmul(h, cell.recurrent_kernel) + cell.bias[1], h)

    # Each step's slice, cut once: a slice per step would cost a window-sized gradient each.
    xs = [tf.unstack(x, num=window, axis=1) for x in project(o)]
    hs = [state[:, net.lo:net.hi] for net in nets]
    after = [[] for _ in nets]
    for k in range(window):
        if k == burn_in:
            hs = [tf.stop_gradient(h) for h in hs]
        kept = 1.0 - start[:, k:k + 1]
        hs = [step(x[k], h * kept, cell) for x, h, cell in zip(xs, hs, cells, strict=True)]
        if k >= burn_in:
            for states, h in zip(after, hs, strict=True):
                states.append(h)
    ys = [tf.reshape(tf.stack(states, axis=1), [-1, m]) for states in after]
    y2s = [step(tf.reshape(x, [-1, 3 * m]), y, cell)
           for x, y, cell in zip(project(o2[:, burn_in:]), ys, cells, strict=False)]
    return tf.concat(ys, axis=-1), tf.concat(y2s, axis=-1)


def sequence_losses(losses: Callable, ac, ac_targ, o, a, r, o2, discount, noise, alpha,
                    start, state, mask):
    """``losses`` (SAC's per-transition losses) on the steps of a batch of windows that
    carry a loss: after the burn-in and kept by ``mask``. The features at ``o`` come from
    the main networks; at ``o2``, the policy's from the main actor and the critics' from
    the target critics, as ``losses`` reads them."""
    b, w, m = ac.burn_in, ac.window, ac.memory_size
    x, x2_main = unroll((ac.pi, ac.q1, ac.q2), o, o2, start, state, b, w)
    _, x2_targ = unroll((ac_targ.q1, ac_targ.q2), o, o2, start, state, b, w)
    x2 = tf.concat([x2_main[:, :m], x2_targ], axis=-1)
    keep = tf.reshape(mask[:, b:] > 0, [-1])

    def steps(v):  # the kept steps of a (batch, window, ...) array, flattened
        v = v[:, b:]
        return tf.boolean_mask(tf.reshape(v, tf.concat([[-1], tf.shape(v)[2:]], 0)), keep)

    return losses(ac, ac_targ, tf.boolean_mask(x, keep), steps(a), steps(r),
                  tf.boolean_mask(x2, keep), steps(discount), noise, alpha)


class SequenceReplayBuffer:
    """The replay buffer of recurrent SAC: transitions (o, a, r, o2, d) in order, each
    with the memory the agent had before reading ``o`` and whether ``o`` began an
    episode. Minibatches are windows of ``window`` consecutive steps, starting anywhere
    a window has at least ``burn_in + 1`` steps of contiguous data; ``mask`` marks the
    steps the buffer holds contiguously from the window's start.
    """

    def __init__(self, obs_dim: int, act_dim: int, size: int, state_size: int, window: int,
                 burn_in: int):
        """``window``: steps per window, the first ``burn_in`` of them without a loss."""
        if size <= window:
            raise SpinupError(f"replay_size={size} must be larger than a recurrent training "
                              f"window (burn_in + sequence_length = {window} steps).")
        self.obs_buf, self.obs2_buf = (np.zeros((size, obs_dim), np.float32) for _ in range(2))
        self.act_buf = np.zeros((size, act_dim), np.float32)
        self.rew_buf, self.done_buf, self.start_buf = (np.zeros(size, np.float32)
                                                       for _ in range(3))
        self.state_buf = np.zeros((size, state_size), np.float32)  # the memory before o
        self.ptr, self.size, self.max_size = 0, 0, size
        self.window, self.burn_in = int(window), int(burn_in)

    @classmethod
    def for_actor_critic(cls, ac: RecurrentActorCritic, obs_dim: int, act_dim: int,
                         size: int) -> SequenceReplayBuffer:
        """The buffer whose windows and stored memory fit ``ac``."""
        return cls(obs_dim, act_dim, size, ac.state_size, ac.window, ac.burn_in)

    NAMES = ("obs", "obs2", "act", "rew", "done", "state", "start")

    def store(self, obs, act, rew, next_obs, done, state, start) -> None:
        """Add one transition with the agent's memory before ``obs`` (``state``) and
        whether ``obs`` began an episode (``start``), overwriting the oldest when full."""
        values = (obs, next_obs, act, rew, done, state, start)
        for name, value in zip(self.NAMES, values, strict=True):
            getattr(self, name + "_buf")[self.ptr] = value
        self.ptr = (self.ptr + 1) % self.max_size
        self.size = min(self.size + 1, self.max_size)

    def state_arrays(self) -> dict:
        """The filled part of the buffer and its pointers, for a checkpoint."""
        arrays = {"buf_" + name: getattr(self, name + "_buf")[:self.size] for name in self.NAMES}
        return dict(arrays, buf_ptr=np.array(self.ptr), buf_size=np.array(self.size))

    def load_state_arrays(self, arrays: dict) -> None:
        """Refill the buffer from :meth:`state_arrays`, checked as the plain buffer's."""
        n, ptr = check_pointers(arrays, self.max_size)
        if n > self.max_size:
            raise SpinupError(f"The checkpoint's replay buffer holds {n} transitions, more than "
                              f"replay_size={self.max_size}.")
        for name in self.NAMES:
            buf = getattr(self, name + "_buf")
            buf[:n] = check_shape(arrays["buf_" + name], (n, *buf.shape[1:]), "buf_" + name)
        self.ptr, self.size = ptr, n

    def sample_batch(self, batch_size: int = 32, rng: np.random.Generator | None = None,
                     n_batches: int | None = None) -> dict:
        """Windows holding ``batch_size`` steps with a loss (``batch_size /
        sequence_length`` windows, rounded up; or ``n_batches`` stacks of them, leading
        dimension ``n_batches``), drawn uniformly with replacement in one gather.

        Returns a dict with keys ``obs, act, rew, obs2, done`` (each with a window
        dimension after the batch one), ``start`` (1 where a step began an episode),
        ``state`` (the stored memory at each window's first step) and ``mask``.
        """
        rng = np.random.default_rng() if rng is None else rng
        windows = -(-batch_size // (self.window - self.burn_in))
        shape = (windows,) if n_batches is None else (n_batches, windows)
        oldest = self.ptr if self.size == self.max_size else 0
        # Starts with at least burn_in + 1 steps of data after them, oldest first.
        first = (oldest + rng.integers(0, max(1, self.size - self.burn_in), size=shape)
                 ) % self.max_size
        ks = np.arange(self.window)
        idxs = (first[..., None] + ks) % self.max_size
        # The data from a start runs on contiguously up to the write pointer.
        contiguous = (self.ptr - first - 1) % self.max_size + 1
        batch = {k: np.take(getattr(self, k + "_buf"), idxs, axis=0)
                 for k in ("obs", "obs2", "act", "rew", "done", "start")}
        batch["state"] = np.take(self.state_buf, first, axis=0)
        batch["mask"] = (ks < contiguous[..., None]).astype(np.float32)
        return batch


class RecurrentAgent(Agent):
    """Acting with memory: ``agent(o, deterministic=False)`` reads one observation into
    the memory and returns an action; :meth:`reset` at each episode start. It keeps what
    the replay buffer stores with each transition (:meth:`memory`). The noise is
    :func:`spinup_tf2.algos.sac.fast_path.action_noise`, as for the MLP agent
    (:class:`spinup_tf2.algos.sac.agent.MLPAgent`, its sibling)."""

    def __init__(self, ac, rng: np.random.Generator, n_noise: int, step_fns=None):
        self.ac, self.rng, self.n_noise = ac, rng, n_noise
        self._step, self._read = step_fns or _compile_steps(ac, n_noise)
        self.reset()

    def fork(self) -> RecurrentAgent:
        """An agent with the same policy and its own memory (for test episodes and
        videos, which must not disturb the training episode's)."""
        return RecurrentAgent(self.ac, self.rng, self.n_noise, (self._step, self._read))

    def reset(self) -> None:
        """A new episode: zero memory."""
        self.h = np.zeros((1, self.ac.state_size), dtype=np.float32)
        self.fresh = True  # no observation of this episode read yet
        self.before, self.was_first = self.h, True

    def act(self, o, deterministic: bool = False) -> np.ndarray:
        """Read ``o`` into the memory and return an action (sampled, or the mode)."""
        noise = action_noise(self.rng, self.n_noise, self.ac.discrete, deterministic)
        a, h = self._step(np.asarray(o, np.float32)[None], self.h, noise[None])
        self._advance(h.numpy())
        return a.numpy()[0]

    def explore(self, o, a):
        """Take the (random) action ``a`` at ``o``, reading ``o`` into the memory."""
        self._advance(self._read(np.asarray(o, np.float32)[None], self.h).numpy())
        return a

    def _advance(self, h: np.ndarray) -> None:
        self.before, self.was_first = self.h, self.fresh
        self.h, self.fresh = h, False

    def memory(self) -> tuple:
        """``(state, start)`` for the transition just acted on: the memory before its
        observation, and whether that observation began the episode."""
        return self.before[0], float(self.was_first)

    def refresh(self) -> None:
        """Nothing to copy: acting reads the networks' variables."""

    def state_arrays(self) -> dict:
        """The episode in progress's memory, for a checkpoint."""
        return dict(agent_h=self.h, agent_fresh=np.array(self.fresh))

    def load_state_arrays(self, arrays: dict) -> None:
        """Restore :meth:`state_arrays`."""
        self.h = np.asarray(arrays["agent_h"], np.float32).reshape(1, self.ac.state_size)
        self.fresh = bool(arrays["agent_fresh"])
        self.before, self.was_first = self.h, self.fresh


def _compile_steps(ac, n_noise: int) -> tuple:
    """``step(o, h, noise) -> (action, h2)`` and ``read(o, h) -> h2`` as tf.functions
    with fixed signatures (one observation), so acting never retraces."""
    o_spec = tf.TensorSpec([1, None], tf.float32)
    h_spec = tf.TensorSpec([1, ac.state_size], tf.float32)

    def step(o, h, noise):
        h2 = ac.step(o, h)
        return ac.pi(h2, noise=noise, with_logprob=False)[0], h2

    step = graph_function(step, [o_spec, h_spec, tf.TensorSpec([1, n_noise], tf.float32)])
    read = graph_function(lambda o, h: ac.step(o, h), [o_spec, h_spec])
    return step, read


class RecurrentExport(tf.Module):
    """What ``tf2_save/`` holds for a recurrent actor-critic: functions of an observation
    and the memory, needing nothing from spinup_tf2 to run.

    ``mu(x, state)`` and ``pi(x, state)`` return ``(action, new_state)``: the
    deterministic and a sampled action after reading the batch of observations ``x``
    (float32, ``[batch, obs_dim]``) into ``state`` (float32, ``[batch, state_size]``; zeros
    at an episode's start); ``q1(x, state, a)`` and ``q2(x, state, a)`` the Q values there.
    ``initial_state(x)`` gives the zero state for a batch like ``x``. Serving signatures:
    ``serving_default`` and ``mu`` give ``{'action', 'next_state'}``, ``pi`` likewise.
    """

    def __init__(self, ac: RecurrentActorCritic, obs_dim: int, act_dim: int):
        super().__init__(name="recurrent_actor_critic")
        self.variables_to_save = core.saved_variables(ac)
        x = tf.TensorSpec([None, obs_dim], tf.float32, name="x")
        s = tf.TensorSpec([None, ac.state_size], tf.float32, name="state")
        a = (tf.TensorSpec([None], tf.int64, name="a") if ac.discrete
             else tf.TensorSpec([None, act_dim], tf.float32, name="a"))

        def act(x, state, deterministic):
            state = ac.step(x, state)
            return ac.pi(state, deterministic=deterministic, with_logprob=False)[0], state

        self.mu = graph_function(lambda x, state: act(x, state, True), [x, s])
        self.pi = graph_function(lambda x, state: act(x, state, False), [x, s])
        self.q1 = graph_function(lambda x, state, a: ac.q1(ac.step(x, state), a), [x, s, a])
        self.q2 = graph_function(lambda x, state, a: ac.q2(ac.step(x, state), a), [x, s, a])
        self.initial_state = graph_function(
            lambda x: tf.zeros([tf.shape(x)[0], ac.state_size]), [x])
        self.serve = graph_function(
            lambda x, state: dict(zip(("action", "next_state"), self.mu(x, state),
                                      strict=False)), [x, s])

    def export_signatures(self) -> dict:
        """The functions ``tf.saved_model.save`` exports as named signatures."""
        x, s = self.serve.input_signature
        return {"serving_default": self.serve, "mu": self.serve,
                "pi": graph_function(
                    lambda x, state: dict(zip(("action", "next_state"), self.pi(x, state),
                                              strict=False)),
                    [x, s])}
