"""Keras models for SAC: the squashed Gaussian actor, the Q functions, and the
actor-critic that owns them. Shapes and names follow Spinning Up's
``spinup/algos/pytorch/sac/core.py``.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
from collections.abc import Callable, Iterator, Sequence

import numpy as np

from spinup_tf2.errors import SpinupError
from spinup_tf2.tf_setup import graph_function, import_tensorflow, tf_variables

tf = import_tensorflow()
import keras  # noqa: E402  (after TensorFlow, so its start-up stays quiet)

LOG_STD_MAX = 2.0
LOG_STD_MIN = -20.0
LOG_2PI = float(np.log(2.0 * np.pi))
# Whether the hidden layers' products run in bfloat16: set while a training step is traced.
_BF16_PRODUCTS = contextvars.ContextVar("bf16_products", default=False)


@contextlib.contextmanager
def products(precision: str = "float32") -> Iterator[None]:
    """Within this block, every :class:`Dense` (the networks' hidden layers) computes its
    matrix product in ``precision``: ``'float32'``, or ``'bfloat16'`` (its input and kernel
    rounded to bfloat16, the product cast back to float32).

    ``sac(precision='bfloat16')`` traces its training step inside ``products('bfloat16')``,
    so only the update's products, forward and backward, run in bfloat16; the weights,
    Adam's moments, biases, activations, normalisation statistics, outputs, losses,
    log-probabilities and targets stay float32, and acting, the SavedModel and the exports,
    traced outside the block, are float32 throughout.
    """
    token = _BF16_PRODUCTS.set(precision == "bfloat16")
    try:
        yield
    finally:
        _BF16_PRODUCTS.reset(token)


class Dense(keras.layers.Dense):
    """Keras' Dense for a hidden layer: its matrix product runs in bfloat16 inside
    :func:`products` ``('bfloat16')``, in float32 elsewhere. Output layers (Q values,
    the policy's mean and log std) stay Keras' own Dense: their products are a sliver of
    the cost, and a Q value rounded to bfloat16 would lose its third digit."""

    def call(self, inputs, training=None):
        if not _BF16_PRODUCTS.get():
            return super().call(inputs, training=training)
        y = tf.matmul(tf.cast(inputs, tf.bfloat16), tf.cast(self.kernel, tf.bfloat16))
        y = tf.cast(y, inputs.dtype)
        if self.use_bias:
            y = tf.nn.bias_add(y, self.bias)
        return self.activation(y) if self.activation is not None else y


def mlp(sizes: Sequence[int], activation: Callable = tf.nn.relu,
        output_activation: Callable | None = None, name: str | None = None) -> keras.Sequential:
    """Dense layers of widths ``sizes[1:]``; ``sizes[0]`` is the input width.

    ``activation`` follows every hidden layer, ``output_activation`` the last. The
    last layer is an output layer (Keras' Dense, always float32) unless it has an
    ``output_activation`` (then it is the features of a model's heads, a hidden
    :class:`Dense`).
    """
    layers = [keras.Input(shape=(sizes[0],))]
    for j, width in enumerate(sizes[1:]):
        last = j == len(sizes) - 2
        act = activation if not last else output_activation
        kind = keras.layers.Dense if last and output_activation is None else Dense
        layers.append(kind(width, activation=act))
    return keras.Sequential(layers, name=name)


NETWORKS = ("mlp", "simba")  # what ``network=`` takes: Spinning Up's MLP, or SimBa's


class ResidualBlock(keras.layers.Layer):
    """SimBa's residual block (Lee et al. 2024): ``x + Dense(w)(act(Dense(4w)(norm(x))))``,
    the normalisation before the block's layers and the identity path untouched.

    ``norm`` is the block's normalisation layer (a LayerNormalization, SimBa's, unless
    given: CrossQ gives its Batch Renormalization) and ``dropout`` a layer after the inner
    layer (None, or a variant's dropout); both are called with ``training``."""

    def __init__(self, width: int, activation: Callable, norm: keras.layers.Layer | None = None,
                 dropout: keras.layers.Layer | None = None, **kwargs):
        super().__init__(**kwargs)
        self.norm = norm if norm is not None else keras.layers.LayerNormalization(name="norm")
        self.inner = Dense(4 * width, activation=activation, name="inner")
        self.dropout = dropout
        self.outer = Dense(width, name="outer")

    def call(self, x, training=None):
        h = self.inner(self.norm(x, training=training))
        if self.dropout is not None:
            h = self.dropout(h, training=training)
        return x + self.outer(h)


def simba(sizes: Sequence[int], activation: Callable, out_dim: int | None = None,
          name: str | None = None, norm: Callable[[str], keras.layers.Layer] | None = None,
          dropout: Callable[[str], keras.layers.Layer] | None = None,
          input_norm: bool = False) -> keras.Sequential:
    """SimBa's network: a Dense embedding to ``sizes[1]``, one :class:`ResidualBlock` per
    width of ``sizes[1:]`` (a Dense projection first where the width changes), a final
    normalisation, then a Dense output of ``out_dim`` if given. ``sizes[0]`` is the input width.
    (SimBa's running observation statistics are ``normalize_obs=True``.)

    ``norm(name)`` makes each normalisation layer (LayerNormalization, SimBa's, by default),
    ``dropout(name)``, if given, a dropout layer inside each block; ``input_norm`` puts a
    ``norm`` on the input too (CrossQ normalises its inputs)."""
    make_norm = norm or (lambda n: keras.layers.LayerNormalization(name=n))
    layers = [keras.Input(shape=(sizes[0],))]
    if input_norm:
        layers.append(make_norm("input_norm"))
    layers.append(Dense(sizes[1]))
    for j, width in enumerate(sizes[1:]):
        if j and width != sizes[j]:
            layers.append(Dense(width))
        block_dropout = dropout("dropout") if dropout is not None else None
        layers.append(ResidualBlock(width, activation, make_norm("norm"), block_dropout,
                                    name=f"block{j}"))
    layers.append(make_norm("final_norm"))
    if out_dim is not None:
        layers.append(keras.layers.Dense(out_dim))
    return keras.Sequential(layers, name=name)


def body(network: str, in_dim: int, hidden_sizes: Sequence[int], activation: Callable,
         out_dim: int | None = None, name: str | None = None) -> keras.Sequential:
    """A model's network from ``in_dim`` inputs through ``hidden_sizes``: an
    :func:`mlp` (``network='mlp'``), or :func:`simba` (``'simba'``, each width a residual
    block); with ``out_dim``, a linear output layer of that width, else the features of
    the last hidden layer (activated, for the MLP)."""
    if network == "simba":
        return simba([in_dim] + list(hidden_sizes), activation, out_dim, name=name)
    if out_dim is None:
        return mlp([in_dim] + list(hidden_sizes), activation, activation, name=name)
    return mlp([in_dim] + list(hidden_sizes) + [out_dim], activation, name=name)


def check_whole_numbers(owner: str, values: tuple, hint: str = "") -> None:
    """Refuse in one paragraph the first of ``values``, ``(name, value, least)`` triples of
    ``owner``'s settings (``'TQC'``), that is not a whole number >= its least."""
    for name, value, low in values:
        if not isinstance(value, int) or isinstance(value, bool) or value < low:
            raise SpinupError(f"{owner} got {name}={value!r}; it must be a whole number >= "
                              f"{low}{hint}. Nothing was written.")


def check_network(network, owner: str) -> str:
    """``network`` if it names one of :data:`NETWORKS`; else a SpinupError naming it."""
    if network not in NETWORKS:
        raise SpinupError(f"{owner} got network={network!r}; give 'mlp' (Spinning Up's "
                          f"networks) or 'simba' (SimBa's residual blocks, each normalised "
                          f"first; add normalize_obs=True for its running observation "
                          f"statistics). Nothing was written.")
    return network


def count_vars(model) -> int:
    """Number of trainable scalars in a Keras model (or any object with
    ``trainable_variables``)."""
    return int(sum(np.prod(v.shape) for v in model.trainable_variables))


def gaussian_logp_from_noise(noise, log_std):
    """Sum over action dimensions of log N(u; mu, std), where u = mu + std * noise.

    Writing the density in terms of the noise avoids dividing by std.
    """
    return tf.reduce_sum(-0.5 * tf.square(noise) - log_std - 0.5 * LOG_2PI, axis=-1)


def tanh_logp_correction(u):
    """Sum over action dimensions of log(1 - tanh(u)^2), in a form that stays
    finite for large |u| (see appendix C of the SAC paper)."""
    return tf.reduce_sum(2.0 * (np.log(2.0) - u - tf.nn.softplus(-2.0 * u)), axis=-1)


class ObsNormalizer(keras.layers.Layer):
    """``clip((obs - mean) / sqrt(var + 1e-8), -10, 10)`` with a running mean and
    variance of the observations seen so far (``normalize_obs=True``).

    The statistics are non-trainable weights, so they travel with the models
    into checkpoints and the SavedModel. They are accumulated in numpy
    (:meth:`update`, float64, Chan et al.'s parallel algorithm) and copied
    into the weights after each call.
    """

    CLIP = 10.0

    def __init__(self, obs_dim: int, **kwargs):
        super().__init__(**kwargs)
        self.obs_dim = int(obs_dim)
        self.mean = self.add_weight(shape=(obs_dim,), initializer="zeros", trainable=False,
                                    name="mean")
        self.var = self.add_weight(shape=(obs_dim,), initializer="ones", trainable=False,
                                   name="var")
        self.count = 0.0
        self.np_mean = np.zeros(obs_dim)
        self.np_m2 = np.zeros(obs_dim)
        self.pending: list = []

    def call(self, obs):
        return tf.clip_by_value((obs - self.mean) / tf.sqrt(self.var + 1e-8), -self.CLIP,
                                self.CLIP)

    def observe(self, obs: np.ndarray) -> None:
        """Keep one observation for the next :meth:`update`."""
        self.pending.append(obs)

    def update(self, batch: np.ndarray | None = None) -> None:
        """Fold a batch of observations (n, obs_dim), by default those kept by
        :meth:`observe` since the last update, into the statistics."""
        if batch is None:
            batch, self.pending = np.array(self.pending), []
        batch = np.asarray(batch, dtype=np.float64).reshape(-1, self.obs_dim)
        n = len(batch)
        if n == 0:
            return
        b_mean = batch.mean(axis=0)
        b_m2 = ((batch - b_mean) ** 2).sum(axis=0)
        total = self.count + n
        delta = b_mean - self.np_mean
        self.np_mean = self.np_mean + delta * n / total
        self.np_m2 = self.np_m2 + b_m2 + delta ** 2 * self.count * n / total
        self.count = total
        self.mean.assign(self.np_mean.astype(np.float32))
        self.var.assign((self.np_m2 / self.count).astype(np.float32))

    def state(self) -> dict:
        """The numpy accumulators and the observations kept for the next update,
        for a checkpoint."""
        return dict(count=self.count, mean=self.np_mean.copy(), m2=self.np_m2.copy(),
                    pending=np.array(self.pending))

    def load_state(self, state: dict) -> None:
        """Restore :meth:`state` (the weights are restored with the other variables)."""
        self.count, self.np_mean, self.np_m2 = state["count"], state["mean"], state["m2"]
        self.pending = list(state["pending"])

    @property
    def np_mean_f32(self) -> np.ndarray:
        """The mean the layer applies, as numpy."""
        return self.mean.numpy()

    @property
    def np_scale_f32(self) -> np.ndarray:
        """The scale the layer divides by, as numpy."""
        return np.sqrt(self.var.numpy() + 1e-8)


class ObsModel(keras.Model):
    """A Keras model of observations, optionally normalized by a shared
    :class:`ObsNormalizer`: the prologue all four models share."""

    def __init__(self, obs_normalizer: ObsNormalizer | None = None, **kwargs):
        super().__init__(**kwargs)
        self.obs_normalizer = obs_normalizer

    def prepare_obs(self, obs):
        """``obs`` as the networks see it: normalized when there is a normalizer."""
        return obs if self.obs_normalizer is None else self.obs_normalizer(obs)


class SquashedGaussianMLPActor(ObsModel):
    """pi(a|s): a Gaussian in pre-squash space, squashed by tanh and scaled to the
    action limit.

    Calling it returns ``(pi_action, logp_pi)``; ``logp_pi`` is None when
    ``with_logprob=False``. ``noise`` (same shape as the action batch) replaces
    the standard normal draw, so callers that need exact reproducibility can
    supply their own.
    """

    def __init__(self, obs_dim: int, act_dim: int, hidden_sizes: Sequence[int],
                 activation: Callable, act_limit: float,
                 obs_normalizer: ObsNormalizer | None = None, network: str = "mlp", **kwargs):
        super().__init__(obs_normalizer, **kwargs)
        self.obs_dim, self.act_dim = int(obs_dim), int(act_dim)
        self.act_limit = float(act_limit)
        self.net = body(network, obs_dim, hidden_sizes, activation, name="trunk")
        self.mu_layer = keras.layers.Dense(act_dim, name="mu")
        self.log_std_layer = keras.layers.Dense(act_dim, name="log_std")
        self(tf.zeros((1, obs_dim)))  # build now, so count_vars works at once

    def call(self, obs, deterministic=False, with_logprob=True, noise=None):
        net_out = self.net(self.prepare_obs(obs))
        mu = self.mu_layer(net_out)
        log_std = tf.clip_by_value(self.log_std_layer(net_out), LOG_STD_MIN, LOG_STD_MAX)
        if deterministic:
            noise = tf.zeros_like(mu)  # only used for logp at the mean
        elif noise is None:
            noise = tf.random.normal(tf.shape(mu))
        u = mu + tf.exp(log_std) * noise if not deterministic else mu

        if with_logprob:
            logp_pi = gaussian_logp_from_noise(noise, log_std) - tanh_logp_correction(u)
        else:
            logp_pi = None
        pi_action = self.act_limit * tf.tanh(u)
        return pi_action, logp_pi


class MLPQFunction(ObsModel):
    """Q(s, a): ``concat(obs, act) -> hidden -> 1``, squeezed to shape (batch,)."""

    def __init__(self, obs_dim: int, act_dim: int, hidden_sizes: Sequence[int],
                 activation: Callable, obs_normalizer: ObsNormalizer | None = None,
                 network: str = "mlp", **kwargs):
        super().__init__(obs_normalizer, **kwargs)
        self.q = body(network, obs_dim + act_dim, hidden_sizes, activation, 1, name="q_net")
        self(tf.zeros((1, obs_dim)), tf.zeros((1, act_dim)))

    def call(self, obs, act):
        q = self.q(tf.concat([self.prepare_obs(obs), act], axis=-1))
        return tf.squeeze(q, -1)


class ActorCritic:
    """What the actor-critics share: their variables, acting, and the calls on
    observations the export uses (:meth:`policy`, :meth:`critic`)."""

    obs_dtype, obs_rank = tf.float32, 1  # what an observation is fed as: vectors
    obs_shape = (None,)  # an observation's shape for acting (an image's, for pixels)
    variant = None  # the record it names (spinup_tf2.algos.sac.variants), if any
    discrete = False  # a Discrete action space

    @property
    def actor_variables(self) -> list:
        """What the policy loss trains: pi's variables."""
        return self.pi.trainable_variables

    @property
    def critics(self) -> tuple:
        """The critics, in order: ``(q1, q2)``, or ``(q1, ..., qN)`` for an actor-critic
        with ``n_critics`` N (an ensemble)."""
        return tuple(getattr(self, f"q{i}") for i in range(1, getattr(self, "n_critics", 2) + 1))

    @property
    def critic_variables(self) -> list:
        """What the Q loss trains and the targets average: the critics' variables."""
        return [v for q in self.critics for v in q.trainable_variables]

    @property
    def trainable_variables(self) -> list:
        """The Keras variables of the actor, then of the critics (pi, q1, q2)."""
        return self.actor_variables + self.critic_variables

    @property
    def models(self) -> tuple:
        """Every Keras model of the actor-critic."""
        return (self.pi,) + self.critics

    def make_actor(self, observation_space, action_space, hidden_sizes: Sequence[int],
                   activation: Callable, obs_normalizer, network: str, owner: str) -> tuple:
        """Set ``pi``, SAC's squashed Gaussian actor (``network`` checked for ``owner``), and
        the shared ``obs_normalizer``; return ``(obs_dim, act_dim, network)`` for the
        critics."""
        obs_dim, act_dim = observation_space.shape[0], action_space.shape[0]
        self.obs_normalizer = obs_normalizer
        network = check_network(network, owner)
        self.pi = SquashedGaussianMLPActor(obs_dim, act_dim, hidden_sizes, activation,
                                           float(action_space.high[0]), obs_normalizer,
                                           network, name="pi")
        return obs_dim, act_dim, network

    def local_statistics(self) -> list:
        """Variables each process moves from its own minibatches, averaged across MPI
        processes after every update block so that all keep one model: none here (CrossQ's
        Batch Renormalization statistics)."""
        return []

    def policy(self, obs, **kwargs):
        """``pi`` on observations (same keyword arguments and outputs)."""
        return self.pi(obs, **kwargs)

    def critic(self, i: int, obs, act=None):
        """Q values of critic ``i`` (0 for q1, 1 for q2, ...) on observations."""
        q = self.critics[i]
        return q(obs) if act is None else q(obs, act)

    def act(self, obs, deterministic: bool = False) -> np.ndarray:
        """Action(s) for a numpy observation (batch or single), as numpy."""
        obs = np.asarray(obs, dtype=self.obs_dtype.as_numpy_dtype)
        single = obs.ndim == self.obs_rank
        a, _ = self.policy(obs[None] if single else obs, deterministic=deterministic,
                           with_logprob=False)
        a = a.numpy()
        return a[0] if single else a


class MLPActorCritic(ActorCritic):
    """Owns ``.pi`` (actor), ``.q1`` and ``.q2`` (critics), all built on construction.

    Args:
        observation_space: A 1-D ``gymnasium.spaces.Box``.
        action_space: A ``gymnasium.spaces.Box`` whose bounds are ``[-a, a]`` in
            every dimension.
        hidden_sizes (tuple): Widths of the hidden layers of all three networks.
        activation: Activation after every hidden layer (e.g. ``tf.nn.relu``).
        obs_normalizer (ObsNormalizer): Shared by pi, q1 and q2, which see
            normalized observations (``sac(normalize_obs=True)`` passes one).
        network (str): ``'mlp'`` (Spinning Up's), or ``'simba'``: each width of
            ``hidden_sizes`` a residual block with a layer norm before it (and a
            4x wider inner layer), a layer norm before the output (:func:`simba`;
            with ``normalize_obs=True``, SimBa's networks of Lee et al. 2024).
    """

    discrete = False

    def __init__(self, observation_space, action_space, hidden_sizes: Sequence[int] = (256, 256),
                 activation: Callable = tf.nn.relu, obs_normalizer: ObsNormalizer | None = None,
                 network: str = "mlp"):
        obs_dim, act_dim, network = self.make_actor(observation_space, action_space,
                                                    hidden_sizes, activation, obs_normalizer,
                                                    network, "MLPActorCritic")
        self.q1 = MLPQFunction(obs_dim, act_dim, hidden_sizes, activation, obs_normalizer,
                               network, name="q1")
        self.q2 = MLPQFunction(obs_dim, act_dim, hidden_sizes, activation, obs_normalizer,
                               network, name="q2")


class CategoricalMLPActor(ObsModel):
    """pi(a|s) over n discrete actions: ``obs -> hidden -> n logits``.

    Calling it returns ``(action, logp)`` like the Gaussian actor (the action
    an int64 index); ``noise`` is Gumbel noise of shape (batch, n), so that
    ``argmax(logits + noise)`` is a sample and zero noise the most likely
    action. :meth:`dist` gives the probabilities and log-probabilities of all
    actions, which discrete SAC uses instead of samples.
    """

    def __init__(self, obs_dim: int, n_actions: int, hidden_sizes: Sequence[int],
                 activation: Callable, obs_normalizer: ObsNormalizer | None = None,
                 network: str = "mlp", **kwargs):
        super().__init__(obs_normalizer, **kwargs)
        self.obs_dim, self.n_actions = int(obs_dim), int(n_actions)
        self.net = body(network, obs_dim, hidden_sizes, activation, name="trunk")
        self.logits_layer = keras.layers.Dense(n_actions, name="logits")
        self(tf.zeros((1, obs_dim)))

    def dist(self, obs):
        """``(probs, log_probs)``, each (batch, n)."""
        logits = self.logits_layer(self.net(self.prepare_obs(obs)))
        return tf.nn.softmax(logits), tf.nn.log_softmax(logits)

    def call(self, obs, deterministic=False, with_logprob=True, noise=None):
        probs, log_probs = self.dist(obs)
        if deterministic:
            noise = tf.zeros_like(log_probs)
        elif noise is None:
            u = tf.random.uniform(tf.shape(log_probs), 1e-20, 1.0)
            noise = -tf.math.log(-tf.math.log(u))
        action = tf.argmax(log_probs + noise, axis=-1)
        logp = tf.gather(log_probs, action, batch_dims=1) if with_logprob else None
        return action, logp


class DiscreteMLPQFunction(ObsModel):
    """Q(s, .) for n discrete actions: ``obs -> hidden -> n``. ``q(obs)`` gives
    all n values, ``q(obs, act)`` the value of each row's action index."""

    def __init__(self, obs_dim: int, n_actions: int, hidden_sizes: Sequence[int],
                 activation: Callable, obs_normalizer: ObsNormalizer | None = None,
                 network: str = "mlp", **kwargs):
        super().__init__(obs_normalizer, **kwargs)
        self.q = body(network, obs_dim, hidden_sizes, activation, n_actions, name="q_net")
        self(tf.zeros((1, obs_dim)))

    def call(self, obs, act=None):
        q = self.q(self.prepare_obs(obs))
        if act is None:
            return q
        act = tf.cast(tf.reshape(act, [-1]), tf.int32)
        return tf.gather(q, act, batch_dims=1)


class DiscreteMLPActorCritic(ActorCritic):
    """The actor-critic for a ``gymnasium.spaces.Discrete`` action space:
    ``.pi`` (categorical), ``.q1``, ``.q2`` (one output per action). Same
    arguments as :class:`MLPActorCritic`."""

    discrete = True

    def __init__(self, observation_space, action_space, hidden_sizes: Sequence[int] = (256, 256),
                 activation: Callable = tf.nn.relu, obs_normalizer: ObsNormalizer | None = None,
                 network: str = "mlp"):
        obs_dim, n = observation_space.shape[0], int(action_space.n)
        self.obs_normalizer = obs_normalizer
        network = check_network(network, "DiscreteMLPActorCritic")
        self.pi = CategoricalMLPActor(obs_dim, n, hidden_sizes, activation, obs_normalizer,
                                      network, name="pi")
        self.q1 = DiscreteMLPQFunction(obs_dim, n, hidden_sizes, activation, obs_normalizer,
                                       network, name="q1")
        self.q2 = DiscreteMLPQFunction(obs_dim, n, hidden_sizes, activation, obs_normalizer,
                                       network, name="q2")


def adapt(actor_critic):
    """The actor-critic class ``sac()`` builds: ``actor_critic`` itself when it is an
    :class:`ActorCritic` (or not a class: see :func:`adapt_instance`), else a subclass of it
    that takes :class:`ActorCritic`'s defaults for what it lacks (``critics`` as ``(q1,
    q2)``, ``policy`` as ``pi``, ``models``, the variable lists, ``local_statistics``, the
    observation's dtype, ``variant`` and ``discrete``), its own methods first. The one place
    a user's class is adapted: everything after reads the protocol's names directly."""
    if not isinstance(actor_critic, type) or issubclass(actor_critic, ActorCritic):
        return actor_critic
    return type(actor_critic.__name__, (actor_critic, ActorCritic),
                {"__module__": actor_critic.__module__, "__doc__": actor_critic.__doc__,
                 "__qualname__": actor_critic.__qualname__})


def adapt_instance(ac):
    """``ac`` as an :class:`ActorCritic`: for one a function made (not a class's
    instance), its class adapted as :func:`adapt` adapts a class; else a SpinupError."""
    if isinstance(ac, ActorCritic):
        return ac
    try:
        ac.__class__ = adapt(type(ac))
    except TypeError as err:
        raise SpinupError(f"The actor-critic {ac!r} could not take ActorCritic's defaults "
                          f"({err}). Nothing was written. Make its class a subclass of "
                          f"spinup_tf2.algos.sac.core.ActorCritic.") from None
    return ac


def saved_variables(ac) -> list:
    """The tf.Variables under the Keras ones of pi and the critics (Keras 3 wraps them; a
    SavedModel tracks the underlying ones), non-trainable ones (observation statistics)
    included, each once."""
    weights = {id(v): v for m in ac.models for v in m.weights}
    return tf_variables(weights.values())


class ActorCriticExport(tf.Module):
    """What ``tf2_save/`` holds: the actor-critic's variables and its functions,
    which need nothing from spinup_tf2 to run.

    ``mu(x)``: deterministic action; ``pi(x)``: sampled action; ``q1(x, a)``,
    ``q2(x, a)`` (and ``q3`` ... for a variant with more critics): Q values. ``x`` is a
    float32 batch of observations and ``a`` a float32 batch of actions. As serving
    signatures (TF Serving) they return dicts: ``serving_default`` and ``mu`` give
    ``{'action': ...}`` (the deterministic action), ``pi`` ``{'action': ...}``, ``q1``,
    ``q2``, ... ``{'q': ...}``; ``serve(x)``, the endpoint Keras 3's ``TFSMLayer`` calls by
    default, is ``serving_default``.
    """

    def __init__(self, ac, obs_dim: int | tuple, act_dim: int):
        """``obs_dim``: the observation width, or an image's shape (then ``x`` is a
        batch of uint8 images, ``ac.obs_dtype``); ``act_dim``: the action dimension,
        or for a discrete actor-critic (``ac.discrete``) the number of actions; then
        actions are int64 indices and ``a`` is a batch of them."""
        super().__init__(name="actor_critic")
        self.variables_to_save = saved_variables(ac)
        obs_shape = tuple(obs_dim) if isinstance(obs_dim, (tuple, list)) else (obs_dim,)
        x = tf.TensorSpec([None, *obs_shape], ac.obs_dtype, name="x")
        a = (tf.TensorSpec([None], tf.int64, name="a") if ac.discrete
             else tf.TensorSpec([None, act_dim], tf.float32, name="a"))
        policy = ac.policy
        self.mu = graph_function(lambda x: policy(x, deterministic=True, with_logprob=False)[0],
                                 [x])
        self.pi = graph_function(lambda x: policy(x, with_logprob=False)[0], [x])
        self.n_critics = len(ac.critics)
        for i in range(self.n_critics):  # q1, q2, ...
            setattr(self, f"q{i + 1}",
                    graph_function(_q_values(functools.partial(ac.critic, i)), [x, a]))
        self.serve = graph_function(lambda x: {"action": self.mu(x)}, [x])

    def export_signatures(self) -> dict:
        """The functions ``tf.saved_model.save`` exports as named signatures, each
        returning a dict that names its output."""
        x, a = self.q1.input_signature
        critics = {f"q{i}": getattr(self, f"q{i}") for i in range(1, self.n_critics + 1)}
        return {"serving_default": self.serve, "mu": self.serve,
                "pi": graph_function(lambda x: {"action": self.pi(x)}, [x]),
                **{name: graph_function(_q_values(q, named=True), [x, a])
                   for name, q in critics.items()}}


def _q_values(q: Callable, named: bool = False) -> Callable:
    """``(x, a) -> q(x, a)``, or with ``named`` ``{'q': q(x, a)}`` (a serving signature)."""
    if named:
        return lambda x, a: {"q": q(x, a)}
    return lambda x, a: q(x, a)


def environment_export(inner, spaces):
    """``inner`` (the variant's export) in the environment's terms: an
    :class:`EnvironmentExport` when its observations or actions are not the networks' own
    (``spaces``, :class:`~spinup_tf2.envs.recording.NetworkSpaces`, has a layout or an
    action scale), else ``inner`` itself."""
    if spaces.layout is None and spaces.scale is None:
        return inner
    return EnvironmentExport(inner, spaces.layout, spaces.scale)


class EnvironmentExport(tf.Module):
    """What ``tf2_save/`` holds when the environment's observations or actions are not the
    networks' own: the functions of ``inner`` (an :class:`ActorCriticExport`, or a
    variant's export) in the environment's terms.

    - With the ``layout`` of a Dict observation space, the observation ``x`` is a dict of
      float32 batches, one per key (each ``[batch, *entry_shape]``), flattened inside in
      the training run's key order (:class:`~spinup_tf2.envs.dict_obs.DictLayout`); the
      serving signatures take one named input per key in place of ``x``. With an
      :class:`~spinup_tf2.envs.dict_obs.ImageLayout`, ``x`` is a batch of images as the
      environment gives them (channels-first, or without a channel axis).
    - With an action ``scale`` (:class:`~spinup_tf2.envs.action_scale.ActionScale`, bounds
      of their own per dimension), ``mu`` and ``pi`` give actions in the environment's
      units, and the critics take them so.
    """

    def __init__(self, inner, layout=None, scale=None):
        super().__init__(name=inner.name)
        self.variables_to_save = inner.variables_to_save
        self.inner, self.layout = inner, layout
        self.n_critics = getattr(inner, "n_critics", 2)
        self.x = layout.tf_specs() if layout is not None else None
        self.keys = tuple(self.x) if isinstance(self.x, dict) else ()

        def obs_in(x):  # the observation in the networks' layout
            return x if layout is None else layout.tf_flatten(x)

        # numpy, so that each function holds them as its own constants (an export too)
        center, half = ((scale.center.astype(np.float32), scale.half.astype(np.float32))
                        if scale is not None else (None, None))

        def act_out(out):  # the policy's [-1, 1] in the environment's units
            if scale is None:
                return out
            if isinstance(out, dict):
                return dict(out, action=center + half * out["action"])
            if isinstance(out, (tuple, list)):
                return (center + half * out[0], *out[1:])
            return center + half * out

        def act_in(a):  # the environment's units in the critics' [-1, 1]
            return a if scale is None else (a - center) / half

        self.obs_in, self.act_out, self.act_in = obs_in, act_out, act_in
        for name in ("mu", "pi", "initial_state"):
            if hasattr(inner, name):
                fn = getattr(inner, name)
                post = act_out if name != "initial_state" else (lambda out: out)
                setattr(self, name, graph_function(
                    _wrapped(fn, obs_in, post, len(fn.input_signature) - 1),
                    self._specs(fn.input_signature)))
        for i in range(1, self.n_critics + 1):
            fn = getattr(inner, f"q{i}", None)
            if fn is not None:  # (x, a) or, with memory, (x, state, a)
                setattr(self, f"q{i}", graph_function(
                    _wrapped(fn, obs_in, lambda q: q, len(fn.input_signature) - 1, act_in),
                    self._specs(fn.input_signature)))

    def _specs(self, signature) -> list:
        """``signature`` with the environment's observation in place of ``x``."""
        return [self.x if self.x is not None else signature[0], *signature[1:]]

    def export_signatures(self) -> dict:
        """``inner``'s signatures in the environment's terms: one named input per key of a
        Dict observation instead of ``x``; actions in the environment's units."""
        keyed = isinstance(self.x, dict)
        n = len(self.keys) if keyed else 1
        signatures = {}
        for name, fn in self.inner.export_signatures().items():
            first = ([self.x[k] for k in self.keys] if keyed else
                     [self.x if self.x is not None else fn.input_signature[0]])
            critic = name.startswith("q")

            def call(*args, fn=fn, critic=critic):
                x = dict(zip(self.keys, args[:n], strict=True)) if keyed else args[0]
                rest = list(args[n:])
                if critic:
                    rest[-1] = self.act_in(rest[-1])
                out = fn(self.obs_in(x), *rest)
                return out if critic else self.act_out(out)

            signatures[name] = graph_function(call, first + list(fn.input_signature[1:]))
        return signatures


def _wrapped(fn: Callable, obs_in: Callable, post: Callable, n_rest: int,
             act_in: Callable | None = None) -> Callable:
    """``(x, *rest) -> post(fn(obs_in(x), *rest))`` with exactly ``n_rest`` more arguments,
    the last one passed through ``act_in`` when given (a critic's action); a SavedModel
    cannot write a function of ``*args`` into its object graph."""
    def last(a):
        return a if act_in is None else act_in(a)

    if n_rest == 0:
        return lambda x: post(fn(obs_in(x)))
    if n_rest == 1:
        return lambda x, b: post(fn(obs_in(x), last(b)))
    return lambda x, b, c: post(fn(obs_in(x), b, last(c)))
