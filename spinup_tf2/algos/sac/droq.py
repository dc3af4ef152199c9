"""DroQ (Hiraoka et al., ICLR 2022): SAC with dropout and layer normalization in the
critics, run at a high update-to-data ratio.

What changes against SAC, all of it here and in DroQ's entry of the family's table
(:mod:`spinup_tf2.family`):

- each critic's hidden layer is Dense, then Dropout (rate 0.01), then LayerNorm, then the
  activation (the order of the paper's code and SBX); dropout is on whenever the losses
  call a critic, the target critics' included, and off in the exported ``q1``/``q2``;
- ``droq()`` runs 20 updates per environment step (``updates_per_step=20``) and steps the
  policy once per environment step, whatever ``updates_per_step`` is (the entry's
  ``policy_delay``), as the paper and SBX's DroQ configuration do.

With ``network='simba'`` the actor is SAC's SimBa actor and each critic SimBa's residual
blocks with the dropout after each block's inner layer.

The losses are SAC's (:func:`~spinup_tf2.algos.sac.losses.continuous_losses`). Dropout
(:class:`SparseDropout`) draws from Keras' seeded generators, whose states are variables of
the critics: the same seed gives the same run, and a checkpoint resumes it exactly.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from spinup_tf2.algos.sac import core
from spinup_tf2.errors import SpinupError
from spinup_tf2.tf_setup import import_tensorflow

tf = import_tensorflow()
import keras  # noqa: E402
import numpy as np  # noqa: E402


class SparseDropout(keras.layers.Layer):
    """Dropout that draws where the dropped units are, not one number per unit.

    At DroQ's rate (0.01) Keras' ``Dropout`` spends a random draw and several passes on
    every unit to drop one in a hundred; on a CPU that was a third of DroQ's update. Here
    the gaps between dropped units are drawn instead, as the geometric variables they are
    in a row of independent Bernoulli(``rate``) trials (``floor(log(1 - u) / log(1 -
    rate))`` for uniform ``u``), about ``rate`` draws per unit, and the kept units are
    scaled by ``1 / (1 - rate)`` as Keras' are. The draws cover the layer's units with
    ten standard deviations to spare (a shortfall has probability below 1e-20).
    ``training`` off (or a rate of 0) returns the input unchanged.
    """

    def __init__(self, rate: float, **kwargs):
        super().__init__(**kwargs)
        self.rate = float(rate)
        self.seed_generator = keras.random.SeedGenerator()

    def call(self, x, training=False):
        if not training or self.rate == 0:
            return x
        n = tf.size(x)
        n_float = tf.cast(n, tf.float32)
        mean = n_float * self.rate
        k = tf.cast(mean + 10 * tf.sqrt(mean) + 20, tf.int32)  # gaps drawn: enough to pass n
        seed = tf.cast(tf.math.floormod(self.seed_generator.next(), tf.int32.max - 1), tf.int32)
        u = tf.random.stateless_uniform([k], seed)
        skipped = tf.minimum(tf.floor(tf.math.log1p(-u) / np.log1p(-self.rate)),
                             n_float)  # kept units before each dropped one
        at = tf.minimum(tf.cumsum(tf.cast(skipped, tf.int32) + 1) - 1, n)  # n: past the end
        mask = tf.tensor_scatter_nd_update(tf.fill([n + 1], 1 / (1 - self.rate)), at[:, None],
                                           tf.zeros([k]))
        return x * tf.reshape(mask[:n], tf.shape(x))


class DropoutQFunction(core.ObsModel):
    """Q(s, a) with ``Dense -> Dropout -> LayerNorm -> activation`` hidden layers, squeezed
    to shape (batch,); with ``network='simba'``, SimBa's residual blocks (their layer norm
    first) with the dropout after each block's inner layer. ``training`` (True unless
    given) turns dropout on."""

    def __init__(self, obs_dim: int, act_dim: int, hidden_sizes: Sequence[int],
                 activation: Callable, dropout_rate: float, obs_normalizer=None,
                 network: str = "mlp", **kwargs):
        super().__init__(obs_normalizer, **kwargs)
        self.hidden, self.q = [], None
        if network == "simba":
            self.q = core.simba([obs_dim + act_dim] + list(hidden_sizes), activation, 1,
                                name="q_net",
                                dropout=lambda n: SparseDropout(dropout_rate, name=n))
        else:
            for j, width in enumerate(hidden_sizes):
                self.hidden += [core.Dense(width, name=f"dense{j}"),
                                SparseDropout(dropout_rate, name=f"dropout{j}"),
                                keras.layers.LayerNormalization(name=f"norm{j}")]
            self.activation, self.out = activation, keras.layers.Dense(1, name="out")
        self(tf.zeros((1, obs_dim)), tf.zeros((1, act_dim)))

    def call(self, obs, act, training=True):
        x = tf.concat([self.prepare_obs(obs), act], axis=-1)
        if self.q is not None:
            return tf.squeeze(self.q(x, training=training), -1)
        for dense, dropout, norm in zip(*[iter(self.hidden)] * 3, strict=True):
            x = self.activation(norm(dropout(dense(x), training=training)))
        return tf.squeeze(self.out(x), -1)


class DroQActorCritic(core.ActorCritic):
    """DroQ's actor-critic: SAC's actor ``.pi`` and two critics ``.q1``, ``.q2``
    (:class:`DropoutQFunction`).

    Args:
        observation_space, action_space, hidden_sizes, activation: As
            :class:`~spinup_tf2.algos.sac.core.MLPActorCritic`'s (the critics' layers too).
        dropout_rate (float): The critics' dropout, in [0, 1) (0.01, the paper's).
        obs_normalizer: Shared by all networks (``normalize_obs=True``).
        network (str): ``'mlp'``, or ``'simba'``: SimBa's residual blocks in the actor
            and the critics, the critics' dropout inside each block.
    """

    variant = "droq"
    discrete = False

    def __init__(self, observation_space, action_space, hidden_sizes: Sequence[int] = (256, 256),
                 activation: Callable = tf.nn.relu, dropout_rate: float = 0.01,
                 obs_normalizer=None, network: str = "mlp"):
        if (isinstance(dropout_rate, bool) or not isinstance(dropout_rate, (int, float))
                or not 0 <= dropout_rate < 1):
            raise SpinupError(f"DroQ got dropout_rate={dropout_rate!r}; it must be a number in "
                              f"[0, 1) (the paper: 0.01). Nothing was written.")
        obs_dim, act_dim, network = self.make_actor(observation_space, action_space,
                                                    hidden_sizes, activation, obs_normalizer,
                                                    network, "DroQ")
        self.q1, self.q2 = (DropoutQFunction(obs_dim, act_dim, hidden_sizes, activation,
                                             float(dropout_rate), obs_normalizer, network,
                                             name=name)
                            for name in ("q1", "q2"))

    def critic(self, i: int, obs, act=None):
        """Critic ``i``'s Q values without dropout (what ``tf2_save/`` exports)."""
        return self.critics[i](obs, act, training=False)
