"""SAC from pixels: the convolutional actor-critic of SAC-AE and DrQ, and its augmentation.

``sac(env_fn, ...)`` on an environment whose observations are images (``Box(0, 255,
(H, W, C), uint8)``, e.g. ``--pixels``) picks :class:`PixelActorCritic`, as a Discrete
action space picks the discrete one. Its design is DrQ's (Kostrikov, Yarats and Fergus
2021), after SAC-AE (Yarats et al. 2019):

- one convolutional encoder, shared by the critics and the actor, trained by the critic
  loss only: the actor reads its features through a stop-gradient, then a linear layer of
  its own (the critics share another), each followed by LayerNorm and tanh;
- the target critics keep their own copy of the encoder, polyak-averaged with them;
- every minibatch is augmented by a random shift (the image padded by repeating its edge
  ``random_shift`` pixels, then cropped back at a random offset), on both ``obs`` and
  ``obs2`` (DrQ's K = M = 1);
- observations stay uint8 up to the model, which scales them: the replay buffer
  (:class:`~spinup_tf2.algos.sac.frame_buffer.FrameReplayBuffer`) and the exported
  policies take the environment's raw frames.

The SAC losses are :func:`spinup_tf2.algos.sac.losses.continuous_losses` (or
``discrete_losses``) unchanged, on features: :func:`pixel_losses` encodes the images and
hands the losses one feature vector per observation, ``[critic features | actor
features]``, of which the critics read the first half and the actor the second (for
``obs2``, the first half comes from the target encoder).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
from gymnasium import spaces

from spinup_tf2.algos.sac import core
from spinup_tf2.algos.sac.frame_buffer import FrameReplayBuffer  # noqa: F401 (re-exported)
from spinup_tf2.errors import SpinupError
from spinup_tf2.tf_setup import import_tensorflow

tf = import_tensorflow()
import keras  # noqa: E402


class PixelEncoder(keras.Model):
    """DrQ's convolutional encoder: uint8 images scaled to [0, 1], then ``conv_layers``
    3x3 convolutions of ``conv_filters`` channels with ReLU (the first of stride 2, the
    others of stride 1, no padding), flattened."""

    def __init__(self, obs_shape: tuple, conv_filters: int = 32, conv_layers: int = 4,
                 **kwargs):
        super().__init__(**kwargs)
        smallest = 2 * (2 * (conv_layers - 1)) + 3  # what leaves one pixel after the convs
        if min(obs_shape[:2]) < smallest:
            raise SpinupError(
                f"The observations are images of {obs_shape[0]}x{obs_shape[1]} pixels, "
                f"smaller than the pixel encoder takes: its {conv_layers} 3x3 convolutions "
                f"(the first of stride 2) need at least {smallest}x{smallest}. Render larger "
                f"frames (--image_size {max(smallest, 16)} or more), or give fewer "
                f"conv_layers in ac_kwargs. Nothing was written.")
        self.convs = [keras.layers.Conv2D(conv_filters, 3, strides=2 if i == 0 else 1,
                                          activation="relu", name=f"conv{i}")
                      for i in range(conv_layers)]
        self.flatten = keras.layers.Flatten()
        self.out_dim = int(self(tf.zeros((1, *obs_shape), tf.uint8)).shape[-1])

    def call(self, obs):
        x = tf.cast(obs, tf.float32) / 255.0
        for conv in self.convs:
            x = conv(x)
        return self.flatten(x)


def feature_layer(in_dim: int, feature_dim: int, name: str) -> keras.Sequential:
    """Linear to ``feature_dim``, LayerNorm, tanh: what turns conv features into the
    input of the actor's (or the critics') MLP."""
    return keras.Sequential([keras.Input(shape=(in_dim,)), keras.layers.Dense(feature_dim),
                             keras.layers.LayerNormalization(epsilon=1e-5),
                             keras.layers.Activation("tanh")], name=name)


class FeatureSlice(keras.Model):
    """A head (actor or critic) applied to its part ``[lo, hi)`` of a feature vector, so
    that the SAC losses written for observations run unchanged on features."""

    def __init__(self, head, lo: int, hi: int, **kwargs):
        super().__init__(**kwargs)
        self.head, self.lo, self.hi = head, int(lo), int(hi)

    def __call__(self, x, *args, **kwargs):
        return self.head(x[:, self.lo:self.hi], *args, **kwargs)

    def dist(self, x):
        """The categorical head's ``(probs, log_probs)`` (discrete actions)."""
        return self.head.dist(x[:, self.lo:self.hi])


class PixelActorCritic(core.ActorCritic):
    """SAC's actor-critic for image observations (see the module's docstring).

    ``.pi``, ``.q1``, ``.q2`` take feature vectors (:meth:`features`), as the losses use
    them; :meth:`policy` and :meth:`critic` take uint8 images, as acting and the exported
    SavedModel do.

    Args:
        observation_space: ``Box(0, 255, (H, W, C), uint8)``, frames stacked on C.
        action_space: A Box bounded by ``[-a, a]`` in every dimension, or Discrete.
        hidden_sizes (tuple): Widths of the hidden layers of the actor's and the
            critics' MLPs (DrQ's 1024, 1024 by default).
        activation: Activation after every hidden layer.
        feature_dim (int): Width of the features after the encoder (DrQ's 50).
        conv_filters (int): Channels of each convolution (32).
        conv_layers (int): Convolutions (4).
        random_shift (int): Pixels of the random-shift augmentation (DrQ's 4); 0 turns
            it off.
    """

    variant = "pixels"  # its record in spinup_tf2.algos.sac.variants
    obs_dtype, obs_rank = tf.uint8, 3

    def __init__(self, observation_space, action_space, hidden_sizes: Sequence[int] = (1024, 1024),
                 activation: Callable = tf.nn.relu, feature_dim: int = 50,
                 conv_filters: int = 32, conv_layers: int = 4, random_shift: int = 4):
        self.obs_shape = tuple(int(n) for n in observation_space.shape)
        self.discrete = isinstance(action_space, spaces.Discrete)
        self.random_shift = int(random_shift)
        self.encoder = PixelEncoder(self.obs_shape, conv_filters, conv_layers, name="encoder")
        n_conv, f = self.encoder.out_dim, int(feature_dim)
        self.critic_features = feature_layer(n_conv, f, "critic_features")
        self.actor_features = feature_layer(n_conv, f, "actor_features")
        if self.discrete:
            n = int(action_space.n)
            pi = core.CategoricalMLPActor(f, n, hidden_sizes, activation, name="pi_head")
            q1, q2 = (core.DiscreteMLPQFunction(f, n, hidden_sizes, activation,
                                                name=f"q{i}_head") for i in (1, 2))
        else:
            act_dim, act_limit = action_space.shape[0], float(action_space.high[0])
            pi = core.SquashedGaussianMLPActor(f, act_dim, hidden_sizes, activation, act_limit,
                                               name="pi_head")
            q1, q2 = (core.MLPQFunction(f, act_dim, hidden_sizes, activation, name=f"q{i}_head")
                      for i in (1, 2))
        self.pi = FeatureSlice(pi, f, 2 * f, name="pi")
        self.q1 = FeatureSlice(q1, 0, f, name="q1")
        self.q2 = FeatureSlice(q2, 0, f, name="q2")

    @property
    def actor_variables(self) -> list:
        """The actor's own linear layer and its MLP (the encoder is the critics')."""
        return self.actor_features.trainable_variables + self.pi.trainable_variables

    @property
    def critic_variables(self) -> list:
        """The encoder, the critics' linear layer and their MLPs."""
        return (self.encoder.trainable_variables + self.critic_features.trainable_variables
                + self.q1.trainable_variables + self.q2.trainable_variables)

    @property
    def models(self) -> tuple:
        """Every Keras model of the actor-critic."""
        return (self.encoder, self.critic_features, self.actor_features, self.pi, self.q1,
                self.q2)

    def features(self, obs, target=None):
        """``[critic features | actor features]`` of uint8 images ``obs``; with ``target``
        (the target actor-critic), the critic features are the target's (for obs2)."""
        h = self.encoder(obs)
        if target is None:
            critic = self.critic_features(h)
        else:
            critic = target.critic_features(target.encoder(obs))
        return tf.concat([critic, self.actor_features(tf.stop_gradient(h))], axis=-1)

    def policy(self, obs, **kwargs):
        """The actor on uint8 images: ``pi``'s outputs (same keyword arguments)."""
        return self.pi.head(self.actor_features(self.encoder(obs)), **kwargs)

    def critic(self, i: int, obs, act=None):
        """Q values of critic ``i`` (0 or 1) on uint8 images."""
        return (self.q1, self.q2)[i].head(self.critic_features(self.encoder(obs)), act)


def random_shift(images, shifts, pad: int):
    """DrQ's augmentation: each image padded by repeating its edge ``pad`` pixels, then
    cropped back to its size at offset ``shifts[i]`` (rows, columns; each in
    ``[0, 2 * pad]``), written as one gather of clipped indices per axis."""
    h, w = images.shape[1], images.shape[2]
    rows = tf.clip_by_value(tf.range(h)[None, :] + shifts[:, :1] - pad, 0, h - 1)
    cols = tf.clip_by_value(tf.range(w)[None, :] + shifts[:, 1:] - pad, 0, w - 1)
    return tf.gather(tf.gather(images, rows, axis=1, batch_dims=1), cols, axis=2,
                     batch_dims=1)


def pixel_losses(losses: Callable, ac, ac_targ, o, a, r, o2, discount, noise, alpha, shifts):
    """``losses`` (SAC's continuous or discrete losses) on images: ``o`` and ``o2``
    shifted by ``shifts`` (``[2 * batch, 2]``: obs first), then encoded (see
    :meth:`PixelActorCritic.features`)."""
    if ac.random_shift:
        batch = tf.shape(o)[0]
        o = random_shift(o, shifts[:batch], ac.random_shift)
        o2 = random_shift(o2, shifts[batch:], ac.random_shift)
    return losses(ac, ac_targ, ac.features(o), a, r, ac.features(o2, target=ac_targ),
                  discount, noise, alpha)


def shift_draws(rng: np.random.Generator, ac, n_updates: int, batch_size: int) -> np.ndarray:
    """The random shifts of ``n_updates`` minibatches' obs and obs2, int32."""
    return rng.integers(0, 2 * ac.random_shift + 1, size=(n_updates, 2 * batch_size, 2),
                        dtype=np.int32)
