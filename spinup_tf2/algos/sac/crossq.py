"""CrossQ (Bhatt et al., ICLR 2024): SAC without target networks, with Batch
Renormalization in the critics and the actor.

What changes against SAC, all of it here and in CrossQ's entry of the family's table
(:mod:`spinup_tf2.family`):

- every network normalises its input and each hidden layer's output with
  :class:`BatchRenorm` (running statistics at inference, the batch's in training);
- there are no target networks: the critics are run once, in training mode, on (s, a)
  and (s', a') stacked, so that both halves are normalised with one set of statistics
  (separate passes would make (s', a') look out of distribution), and the backup is
  taken from the second half;
- Adam's beta_1 is 0.5 and the policy steps once every 3 critic steps;
- the critics are wider (1024 units per layer by default, as in SBX and sb3-contrib;
  the paper used 2048).

With ``network='simba'`` the networks are SimBa's residual blocks, BatchRenorm taking the
place of their layer norms (:func:`renorm_body`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from spinup_tf2.algos.sac import core
from spinup_tf2.algos.sac.losses import SACLosses, q_loss, td_error
from spinup_tf2.tf_setup import import_tensorflow

tf = import_tensorflow()

import keras  # noqa: E402  (after TensorFlow, so its start-up stays quiet)


class BatchRenorm(keras.layers.Layer):
    """Batch Renormalization (Ioffe 2017), as CrossQ uses it.

    At inference (``training`` false or None) it normalises by its running mean and
    variance. In training it normalises by the batch's, then (once ``warmup_steps``
    training calls have passed; before, it is plain batch normalisation) corrects the
    result towards the running statistics, ``x_hat * r + d`` with
    ``r = clip(std_batch / std_running, 1/r_max, r_max)`` and
    ``d = clip((mean_batch - mean_running) / std_running, -d_max, d_max)`` taken as
    constants, and moves the running statistics towards the batch's by ``1 - momentum``.
    The running statistics and the count of training calls are non-trainable weights:
    they are in the SavedModel and in the training checkpoint.

    With ``fused_gradient`` (the default) the training form's gradient takes fewer passes
    over the batch (:func:`renorm_train`), bit-identical to TensorFlow's own where the
    layer's input feeds nothing else (an MLP's hidden layers). Where it does (SimBa's
    residual blocks, whose input also skips ahead), TensorFlow adds the input's gradients
    in another order, so those layers keep its own gradient (``False``).
    """

    def __init__(self, momentum: float = 0.99, epsilon: float = 1e-3,
                 warmup_steps: int = 100_000, r_max: float = 3.0, d_max: float = 5.0,
                 fused_gradient: bool = True, **kwargs):
        super().__init__(**kwargs)
        self.momentum, self.epsilon = float(momentum), float(epsilon)
        self.warmup_steps, self.r_max, self.d_max = int(warmup_steps), float(r_max), float(d_max)
        self.fused_gradient = bool(fused_gradient)

    def build(self, input_shape):
        dim = (int(input_shape[-1]),)
        self.gamma = self.add_weight(shape=dim, initializer="ones", name="gamma")
        self.beta = self.add_weight(shape=dim, initializer="zeros", name="beta")
        self.moving_mean = self.add_weight(shape=dim, initializer="zeros", trainable=False,
                                           name="moving_mean")
        self.moving_var = self.add_weight(shape=dim, initializer="ones", trainable=False,
                                          name="moving_var")
        self.steps = self.add_weight(shape=(), initializer="zeros", dtype="int64",
                                     trainable=False, name="steps")

    def call(self, x, training=None):
        # Each form is folded into one scale and one shift per feature, so that the
        # batch-sized work is one product and one sum (and their gradients): on a CPU the
        # element-wise passes over the batch, not the arithmetic, are what normalising costs.
        running_std = tf.sqrt(self.moving_var + self.epsilon)
        if not training:  # gamma (x - moving_mean) / running_std + beta
            scale = self.gamma / running_std
            return x * scale + (self.beta - self.moving_mean * scale)
        warm = tf.cast(self.steps >= self.warmup_steps, x.dtype)
        moving_mean = tf.convert_to_tensor(self.moving_mean)
        if self.fused_gradient and x.shape.is_fully_defined():
            y, mean, var = renorm_train(x, tf.convert_to_tensor(self.gamma),
                                        tf.convert_to_tensor(self.beta), moving_mean,
                                        running_std, warm, self.epsilon, self.r_max, self.d_max)
        else:  # the same, differentiated by TensorFlow
            mean, var = tf.nn.moments(x, axes=[0])
            scale, shift = renorm_fold(mean, var, self.gamma, self.beta, moving_mean,
                                       running_std, warm, self.epsilon, self.r_max, self.d_max)
            y = x * scale + shift
        # The statistics move only once this call has read them (a read passed into the fused
        # gradient's function is not ordered before the writes otherwise).
        with tf.control_dependencies([running_std, moving_mean, warm]):
            self.moving_mean.assign(self.momentum * moving_mean + (1 - self.momentum) * mean)
            self.moving_var.assign(self.momentum * self.moving_var + (1 - self.momentum) * var)
            self.steps.assign_add(1)
        return y


def renorm_fold(mean, var, gamma, beta, moving_mean, running_std, warm, epsilon: float,
                r_max: float, d_max: float) -> tuple:
    """Batch Renormalization's training form folded into ``(scale, shift)`` per feature:
    ``gamma ((x - mean) / std * (warm r + 1 - warm) + warm d) + beta = x scale + shift``, with
    ``r`` and ``d`` (see :class:`BatchRenorm`) taken as constants."""
    std = tf.sqrt(var + epsilon)
    r = tf.stop_gradient(tf.clip_by_value(std / running_std, 1 / r_max, r_max))
    d = tf.stop_gradient(tf.clip_by_value((mean - moving_mean) / running_std, -d_max, d_max))
    scale = gamma * (warm * r + (1.0 - warm)) / std
    shift = beta + gamma * warm * d - mean * scale
    return scale, shift


def renorm_train(x, gamma, beta, moving_mean, running_std, warm, epsilon: float, r_max: float,
                 d_max: float) -> tuple:
    """``(y, mean, var)``: :func:`renorm_fold`'s normalisation of a batch ``x`` (static
    shape) by its own moments, with a gradient of fewer passes over the batch.

    TensorFlow's own gradient of the moments broadcasts each per-feature gradient to the
    batch's shape and scales it there (two tiles and three products over the batch), then
    adds three batch-sized terms. This one scales the per-feature gradients first and adds
    the mean's term as a bias: 13 passes over the batch per layer, forward and backward,
    where there were 17, with the same numbers bit for bit (each expression below is the
    one TensorFlow's graph optimiser leaves of its own gradient, in the same order;
    ``tests/test_crossq.py`` holds them equal). The passes left (the moments and the
    reductions) are the costly ones, so the gain is a few percent of CrossQ's update
    (``docs/algorithms/family.md``). The per-feature chain is still TensorFlow's.
    """
    n, width = x.shape[0], x.shape[-1]
    recip = tf.constant(np.float32(1) / np.float32(n))  # what the optimiser folds 1/n into

    @tf.custom_gradient
    def normalise(x, gamma, beta):
        mean_k = tf.reduce_mean(x, 0, keepdims=True)  # as tf.nn.moments computes them
        var_k = tf.reduce_mean(tf.math.squared_difference(x, mean_k), 0, keepdims=True)
        mean, var = tf.squeeze(mean_k, 0), tf.squeeze(var_k, 0)
        with tf.GradientTape() as tape:
            tape.watch([mean, var, gamma, beta])
            scale, shift = renorm_fold(mean, var, gamma, beta, moving_mean, running_std, warm,
                                       epsilon, r_max, d_max)

        def grad(dy, *_):  # the moments' own gradients: none (they only feed the statistics)
            with tf.name_scope("batch_renorm_gradient"):  # named for profiles
                g_mean, g_var, g_gamma, g_beta = tape.gradient(
                    [scale, shift], [mean, var, gamma, beta],
                    output_gradients=[tf.reduce_sum(x * dy, 0), tf.reduce_sum(dy, 0)])
                # The reshapes keep the optimiser from moving 1/n into the chain above.
                d_mean = tf.reshape(recip * tf.reshape(g_mean, [1, width]), [width])
                d_var = 2.0 * (recip * tf.reshape(g_var, [1, width]))
                dx = tf.nn.bias_add(d_var * (x - mean_k), d_mean) + dy * scale
            return dx, g_gamma, g_beta
        return (x * scale + shift, mean, var), grad

    return normalise(x, gamma, beta)


def renorm_mlp(sizes: Sequence[int], activation: Callable, momentum: float,
               warmup_steps: int, output: int | None = None,
               name: str | None = None) -> keras.Sequential:
    """CrossQ's trunk: :class:`BatchRenorm` on the input (width ``sizes[0]``), then each
    hidden layer ``Dense -> activation -> BatchRenorm``; then a linear layer of width
    ``output`` if one is given. ``training`` reaches every BatchRenorm from the caller."""
    def renorm():
        return BatchRenorm(momentum=momentum, warmup_steps=warmup_steps)
    layers = [keras.Input(shape=(sizes[0],)), renorm()]
    for width in sizes[1:]:
        layers += [core.Dense(width, activation=activation), renorm()]
    if output is not None:
        layers.append(keras.layers.Dense(output))
    return keras.Sequential(layers, name=name)


def renorm_body(network: str, sizes: Sequence[int], activation: Callable, momentum: float,
                warmup_steps: int, output: int | None = None,
                name: str | None = None) -> keras.Sequential:
    """A CrossQ network: :func:`renorm_mlp` (``network='mlp'``), or SimBa's residual blocks
    (:func:`~spinup_tf2.algos.sac.core.simba`, ``'simba'``) with :class:`BatchRenorm` on the
    input and wherever SimBa has a layer norm: a layer norm would leave the joint pass's
    batch statistics, which CrossQ rests on, to the input alone."""
    if network == "mlp":
        return renorm_mlp(sizes, activation, momentum, warmup_steps, output, name)
    return core.simba(sizes, activation, output, name=name, input_norm=True,
                      norm=lambda n: BatchRenorm(momentum=momentum, warmup_steps=warmup_steps,
                                                 fused_gradient=False, name=n))


class CrossQActor(core.SquashedGaussianMLPActor):
    """SAC's squashed Gaussian actor on a :func:`renorm_body` trunk; call it with
    ``training=True`` to normalise by the batch (the policy loss), else it uses its running
    statistics (acting, the backup's next actions, the export)."""

    def __init__(self, obs_dim: int, act_dim: int, hidden_sizes: Sequence[int],
                 activation: Callable, act_limit: float, momentum: float = 0.99,
                 warmup_steps: int = 100_000, obs_normalizer=None, network: str = "mlp",
                 **kwargs):
        core.ObsModel.__init__(self, obs_normalizer, **kwargs)  # SAC's trunk is not built
        self.obs_dim, self.act_dim, self.act_limit = int(obs_dim), int(act_dim), float(act_limit)
        self.net = renorm_body(network, [obs_dim] + list(hidden_sizes), activation, momentum,
                               warmup_steps, name="trunk")
        self.mu_layer = keras.layers.Dense(act_dim, name="mu")
        self.log_std_layer = keras.layers.Dense(act_dim, name="log_std")
        self(tf.zeros((1, obs_dim)))


class CrossQFunction(core.ObsModel):
    """Q(s, a) on a :func:`renorm_body`, squeezed to shape (batch,)."""

    def __init__(self, obs_dim: int, act_dim: int, hidden_sizes: Sequence[int],
                 activation: Callable, momentum: float = 0.99, warmup_steps: int = 100_000,
                 obs_normalizer=None, network: str = "mlp", **kwargs):
        super().__init__(obs_normalizer, **kwargs)
        self.q = renorm_body(network, [obs_dim + act_dim] + list(hidden_sizes), activation,
                             momentum, warmup_steps, output=1, name="q_net")
        self(tf.zeros((1, obs_dim)), tf.zeros((1, act_dim)))

    def call(self, obs, act):
        return tf.squeeze(self.q(tf.concat([self.prepare_obs(obs), act], axis=-1)), -1)


class CrossQActorCritic(core.ActorCritic):
    """CrossQ's actor-critic: ``.pi`` (a :class:`CrossQActor`), ``.q1`` and ``.q2``
    (:class:`CrossQFunction`), all with Batch Renormalization.

    Args:
        observation_space: A 1-D ``gymnasium.spaces.Box``.
        action_space: A ``gymnasium.spaces.Box`` whose bounds are ``[-a, a]``.
        hidden_sizes (tuple): Widths of the actor's hidden layers (256, 256).
        critic_hidden_sizes (tuple): Widths of the critics' hidden layers (1024, 1024, as
            SBX and sb3-contrib; the paper used 2048).
        activation: Activation after every hidden layer.
        momentum (float): BatchRenorm's running-statistics momentum (0.99).
        warmup_steps (int): Training calls before BatchRenorm corrects towards its running
            statistics (100,000; plain batch normalisation before).
        obs_normalizer: Shared by all three networks (``normalize_obs=True``).
        network (str): ``'mlp'``, or ``'simba'``: SimBa's residual blocks with
            BatchRenorm in place of their layer norms (:func:`renorm_body`).
    """

    variant = "crossq"
    discrete = False

    def __init__(self, observation_space, action_space, hidden_sizes: Sequence[int] = (256, 256),
                 critic_hidden_sizes: Sequence[int] = (1024, 1024),
                 activation: Callable = tf.nn.relu, momentum: float = 0.99,
                 warmup_steps: int = 100_000, obs_normalizer=None, network: str = "mlp"):
        obs_dim, act_dim = observation_space.shape[0], action_space.shape[0]
        self.obs_normalizer = obs_normalizer
        renorm = dict(momentum=momentum, warmup_steps=warmup_steps,
                      obs_normalizer=obs_normalizer,
                      network=core.check_network(network, "CrossQ"))
        self.pi = CrossQActor(obs_dim, act_dim, hidden_sizes, activation,
                              float(action_space.high[0]), name="pi", **renorm)
        self.q1 = CrossQFunction(obs_dim, act_dim, critic_hidden_sizes, activation, name="q1",
                                 **renorm)
        self.q2 = CrossQFunction(obs_dim, act_dim, critic_hidden_sizes, activation, name="q2",
                                 **renorm)

    def local_statistics(self) -> list:
        """Every BatchRenorm layer's running mean and variance (MPI averages them)."""
        return [v for m in self.models for v in m.non_trainable_variables
                if v.name in ("moving_mean", "moving_var")]


def crossq_losses(ac, ac_targ, o, a, r, o2, discount, noise, alpha,
                  policy: bool = True, weights=None, huber: bool = False) -> SACLosses:
    """CrossQ's losses: SAC's, with the critics run once on (s, a) and (s', a') stacked in
    training mode and no target networks (``ac_targ`` is None). Without ``policy`` (the
    updates on which the policy does not step) the policy's part is left out: ``loss_pi``
    and ``logp_pi`` are None, and the actor's statistics stay where they are. ``weights``
    and ``huber``: prioritized replay's (:func:`~spinup_tf2.algos.sac.losses.q_loss`)."""
    batch = tf.shape(o)[0]
    pi_next, logp_pi_next = ac.pi(o2, noise=noise[batch:2 * batch])  # running statistics

    # One pass over (s, a) and (s', a'): one set of batch statistics for both halves.
    o_joint, a_joint = tf.concat([o, o2], 0), tf.concat([a, pi_next], 0)
    q1, q1_next = tf.split(ac.q1(o_joint, a_joint, training=True), 2)
    q2, q2_next = tf.split(ac.q2(o_joint, a_joint, training=True), 2)
    min_q_next = tf.minimum(q1_next, q2_next)
    backup = tf.stop_gradient(r + discount * (min_q_next - alpha * logp_pi_next))
    loss_q1, loss_q2 = (q_loss(q, backup, weights, huber) for q in (q1, q2))
    td = td_error((q1, q2), backup)
    if not policy:
        return SACLosses(None, (loss_q1, loss_q2), (q1, q2), None, td)

    # The policy in training mode, judged by the critics at their running statistics.
    pi, logp_pi = ac.pi(o, noise=noise[:batch], training=True)
    loss_pi = tf.reduce_mean(alpha * logp_pi - tf.minimum(ac.q1(o, pi), ac.q2(o, pi)))
    return SACLosses(loss_pi, (loss_q1, loss_q2), (q1, q2), logp_pi, td)
