"""The fast path: textbook formulas computed in fewer, larger steps.

Each helper here computes a formula that fits on one line (written at the top
of its docstring) in a form that costs less on a CPU: fused TensorFlow kernels
instead of a dozen small ops (:class:`Adam`, :func:`make_polyak_update`), a
closed-form gradient instead of a second tape (:class:`EntropyTuner`), many
updates in one compiled call (:func:`make_update_block`), and a numpy copy of
the policy for acting (:class:`NumpyActor`). Each was measured to pay
(``benchmarks/results/2026-11-25_notes.md``), and each is held against its plain formula in
``tests/test_fast_path.py``. ``sac.py`` calls them by name.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from spinup_tf2.algos.sac import core
from spinup_tf2.tf_setup import import_tensorflow, tf_variables

tf = import_tensorflow()


class Adam:
    """Adam as TF1's ``AdamOptimizer`` (which Spinning Up's TF1 SAC used) computes it::

        m <- b1 * m + (1 - b1) * g;   v <- b2 * v + (1 - b2) * g^2
        var <- var - lr * sqrt(1 - b2^t) / (1 - b1^t) * m / (sqrt(v) + epsilon)

    as one fused ``ResourceApplyAdam`` kernel per variable instead of a dozen
    small ops: the compiled update stays short, which is most of its cost on a
    CPU. ``variables`` lists the optimizer's state (moments and beta powers)
    for checkpoints.
    """

    def __init__(self, var_list: list, learning_rate: float, beta_1: float = 0.9,
                 beta_2: float = 0.999, epsilon: float = 1e-8, lr_end: float | None = None,
                 decay_steps: int = 1):
        # A Keras variable's constraint (a kernel kept on the unit sphere) is applied after
        # each step, as Keras' own optimizers do.
        self.constraints = [getattr(v, "constraint", None) for v in var_list]
        self.var_list = tf_variables(var_list)  # the fused kernels need tf.Variables
        self.lr, self.beta_1, self.beta_2, self.epsilon = learning_rate, beta_1, beta_2, epsilon
        self.m = [tf.Variable(tf.zeros_like(v), trainable=False) for v in self.var_list]
        self.v = [tf.Variable(tf.zeros_like(v), trainable=False) for v in self.var_list]
        self.beta_1_power = tf.Variable(1.0, trainable=False)
        self.beta_2_power = tf.Variable(1.0, trainable=False)
        # With lr_end, the learning rate goes linearly from learning_rate to lr_end over
        # decay_steps steps, then stays; the steps taken are state (checkpointed).
        self.lr_end, self.decay_steps = lr_end, max(1, int(decay_steps))
        self.steps = tf.Variable(0.0, trainable=False) if lr_end is not None else None

    @property
    def variables(self) -> list:
        """The optimizer's state."""
        return self.m + self.v + [self.beta_1_power, self.beta_2_power] + (
            [self.steps] if self.steps is not None else [])

    def learning_rate(self):
        """This step's learning rate."""
        if self.steps is None:
            return self.lr
        done = tf.minimum(self.steps / self.decay_steps, 1.0)
        return self.lr + (self.lr_end - self.lr) * done

    def named_variables(self, name_of: Callable) -> dict:
        """The optimizer's state by name, for checkpoints: each moment named after the
        variable it follows (``name_of(variable)``), then the beta powers."""
        names = [name_of(var) for var in self.var_list]
        return {**{f"m/{n}": m for n, m in zip(names, self.m, strict=True)},
                **{f"v/{n}": v for n, v in zip(names, self.v, strict=True)},
                "beta_1_power": self.beta_1_power, "beta_2_power": self.beta_2_power,
                **({"steps": self.steps} if self.steps is not None else {})}

    def apply(self, grads: list) -> None:
        """One Adam step of every variable along its gradient (then its constraint)."""
        lr = self.learning_rate()
        b1p = self.beta_1_power.assign(self.beta_1_power * self.beta_1)
        b2p = self.beta_2_power.assign(self.beta_2_power * self.beta_2)
        for var, m, v, g, c in zip(self.var_list, self.m, self.v, grads, self.constraints,
                                   strict=True):
            tf.raw_ops.ResourceApplyAdam(
                var=var.handle, m=m.handle, v=v.handle, beta1_power=b1p, beta2_power=b2p,
                lr=lr, beta1=self.beta_1, beta2=self.beta_2, epsilon=self.epsilon, grad=g)
            if c is not None:
                var.assign(c(var))
        if self.steps is not None:
            self.steps.assign_add(1.0)


def make_polyak_update(ac, ac_targ, polyak: float) -> Callable:
    """Return ``update_targets()``, polyak averaging of the target critics::

        targ <- polyak * targ + (1 - polyak) * main

    written as ``targ <- targ - (1 - polyak) * (targ - main)``, which is one
    ``ResourceApplyGradientDescent`` kernel per variable. The target policy
    is left alone: SAC never uses it (the backup's action comes from the
    current policy), so averaging it would only cost time.
    """
    var_pairs = list(zip(tf_variables(ac.critic_variables), tf_variables(ac_targ.critic_variables),
                         strict=True))

    def update_targets():
        for v_main, v_targ in var_pairs:
            tf.raw_ops.ResourceApplyGradientDescent(var=v_targ.handle, alpha=1.0 - polyak,
                                                    delta=v_targ - v_main)
    return update_targets


class EntropyTuner:
    """Learns ``alpha = exp(log_alpha)`` so that the policy's entropy tracks
    ``target_entropy`` (SAC v2: Haarnoja et al. 2018, "Soft Actor-Critic
    Algorithms and Applications"), by Adam on::

        loss_alpha = -mean(log_alpha * (logp_pi + target_entropy))

    whose gradient with respect to log_alpha, ``-mean(logp_pi + target_entropy)``,
    :meth:`gradient` writes down directly rather than taping the loss.
    """

    def __init__(self, initial_alpha: float, target_entropy: float, lr: float,
                 lr_end: float | None = None, decay_steps: int = 1):
        self.target_entropy = float(target_entropy)
        self.log_alpha = tf.Variable(np.log(initial_alpha), dtype=tf.float32, trainable=False)
        self.optimizer = Adam([self.log_alpha], lr, lr_end=lr_end, decay_steps=decay_steps)

    @property
    def variables(self) -> list:
        """log_alpha and its optimizer's state."""
        return [self.log_alpha] + self.optimizer.variables

    def named_variables(self, name_of: Callable) -> dict:
        """log_alpha and its optimizer's state by name, for checkpoints."""
        opt = self.optimizer.named_variables(lambda v: "log_alpha")
        return {"log_alpha": self.log_alpha, **{f"optimizer/{k}": v for k, v in opt.items()}}

    def alpha(self):
        """The current alpha, ``exp(log_alpha)``."""
        return tf.exp(self.log_alpha)

    def loss(self, logp_pi):
        """``loss_alpha`` for the policy's log-probabilities ``logp_pi``."""
        return -tf.reduce_mean(self.log_alpha * (tf.stop_gradient(logp_pi) + self.target_entropy))

    def gradient(self, logp_pi) -> list:
        """``[d loss_alpha / d log_alpha]``, in closed form."""
        return [-tf.reduce_mean(tf.stop_gradient(logp_pi) + self.target_entropy)]


def make_update_block(update: Callable, jit_compile: bool = False,
                      ragged: bool = False) -> Callable:
    """Compile ``update`` looped over a block::

        block(obs, act, rew, obs2, done, noise) == [update(obs[j], ..., noise[j]) for j]

    (a recurrent update takes its windows' ``start, state, mask`` after ``noise``).
    Each argument is stacked with a leading dimension of n updates; the n
    updates run in order inside one call, so Python is off the hot path, and
    the diagnostics come back stacked the same way (keys ``update.logged_keys``, then its
    ``replay_keys``: prioritized replay's TD errors), or
    with ``ragged`` (updates whose diagnostics differ in length, as recurrent ones on
    masked windows do) concatenated into one flat array per key.
    """
    keys = update.logged_keys + getattr(update, "replay_keys", ())
    # AutoGraph turns the loop below into a graph loop. The update itself branches on tensors
    # only through tf.cond (its policy delay), so it runs as written: converting it, and each
    # function and layer it calls, took about 1 s of a run's start on 2 cores.
    step = tf.autograph.experimental.do_not_convert(update)

    @tf.function(jit_compile=jit_compile, reduce_retracing=True)
    def update_block(o, a, r, o2, discount, noise, *windows):
        n = tf.shape(o)[0]
        out = {k: tf.TensorArray(tf.float32, size=n, infer_shape=not ragged) for k in keys}
        for j in tf.range(n):
            info = step(o[j], a[j], r[j], o2[j], discount[j], noise[j],
                        *(w[j] for w in windows))
            out = {k: out[k].write(j, tf.reshape(info[k], [-1]) if ragged else info[k])
                   for k in keys}
        return {k: out[k].concat() if ragged else out[k].stack() for k in keys}

    return update_block


_NUMPY_ACTIVATIONS = {
    "relu": lambda x: np.maximum(x, 0.0),
    "tanh": np.tanh,
    "sigmoid": lambda x: 1.0 / (1.0 + np.exp(-x)),
    "elu": lambda x: np.where(x > 0, x, np.expm1(np.minimum(x, 0.0))),
    "softplus": lambda x: np.logaddexp(x, 0.0),
    "linear": lambda x: x,
}


def _numpy_activation(fn):
    name = "linear" if fn is None else getattr(fn, "__name__", "")
    return _NUMPY_ACTIVATIONS.get(name)


class NumpyActor:
    """The forward pass of an MLP actor in numpy, for acting::

        NumpyActor(actor)(obs, noise) == actor(obs, noise=noise)[0]

    Acting needs one small forward pass per environment step. A ``tf.function``
    call costs hundreds of microseconds of dispatch for microseconds of
    arithmetic, so the training loop acts with a numpy copy of the weights,
    refreshed (``refresh()``) after every block of updates. Zero noise gives
    the deterministic action.

    Use :meth:`maybe` to get one: it returns None for actors it cannot mirror
    (another architecture, or an activation it has no numpy form for).
    """

    def __init__(self, actor, heads: tuple):
        self.actor = actor
        self.layers = list(actor.net.layers)
        self.acts = [_numpy_activation(layer.activation) for layer in self.layers]
        self.head_layers = heads
        self.refresh()

    @classmethod
    def maybe(cls, actor) -> NumpyActor | None:
        """A NumpyActor for ``actor`` when it can mirror it exactly, else None. Only the
        exact classes it mirrors: a subclass may change the math (its call), which the
        copy would silently ignore."""
        if type(actor) not in (core.SquashedGaussianMLPActor, core.CategoricalMLPActor):
            return None
        if any(type(layer).__name__ != "Dense" or _numpy_activation(layer.activation) is None
               for layer in actor.net.layers):  # a SimBa trunk (blocks, norms): TensorFlow acts
            return None
        if isinstance(actor, core.CategoricalMLPActor):
            return NumpyCategoricalActor(actor, (actor.logits_layer,))
        return NumpyGaussianActor(actor, (actor.mu_layer, actor.log_std_layer))

    def refresh(self) -> None:
        """Copy the actor's current weights (and observation statistics)."""
        self.hidden = [(layer.kernel.numpy(), layer.bias.numpy()) for layer in self.layers]
        self.heads = [(layer.kernel.numpy(), layer.bias.numpy()) for layer in self.head_layers]
        normalizer = self.actor.obs_normalizer
        self.norm = None if normalizer is None else (normalizer.np_mean_f32,
                                                     normalizer.np_scale_f32)

    def features(self, obs: np.ndarray) -> list:
        """The heads' outputs for observation(s) ``obs``."""
        x = np.asarray(obs, dtype=np.float32)
        if self.norm is not None:
            clip = core.ObsNormalizer.CLIP
            x = np.clip((x - self.norm[0]) / self.norm[1], -clip, clip)
        for (w, b), act in zip(self.hidden, self.acts, strict=False):
            x = act(x @ w + b)
        return [x @ w + b for w, b in self.heads]


class NumpyGaussianActor(NumpyActor):
    """For a :class:`core.SquashedGaussianMLPActor`: ``act_limit * tanh(mu + std * noise)``
    with standard normal noise."""

    def __call__(self, obs: np.ndarray, noise: np.ndarray) -> np.ndarray:
        mu, log_std = self.features(obs)
        log_std = np.clip(log_std, core.LOG_STD_MIN, core.LOG_STD_MAX)
        return self.actor.act_limit * np.tanh(mu + np.exp(log_std) * noise)


class NumpyCategoricalActor(NumpyActor):
    """For a :class:`core.CategoricalMLPActor`: ``argmax(logits + noise)``; Gumbel
    noise makes it a sample."""

    def __call__(self, obs: np.ndarray, noise: np.ndarray) -> np.ndarray:
        (logits,) = self.features(obs)
        return np.argmax(logits + noise, axis=-1)


def action_noise(rng: np.random.Generator, n_noise: int, discrete: bool,
                 deterministic: bool = False) -> np.ndarray:
    """The noise of one action: standard normal (continuous actions, one per dimension),
    Gumbel (discrete, one per action), or zeros for the deterministic action."""
    if deterministic:
        return np.zeros(n_noise, dtype=np.float32)
    if discrete:
        return rng.gumbel(size=n_noise).astype(np.float32)
    return rng.standard_normal(n_noise, dtype=np.float32)
