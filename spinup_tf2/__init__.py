"""spinup_tf2: OpenAI Spinning Up's Soft Actor-Critic in TensorFlow 2 / Keras 3."""

from spinup_tf2.utils.tf_setup import import_tensorflow

import_tensorflow()  # once, quietly, before anything else imports it

from spinup_tf2.algos.sac.sac import sac  # noqa: E402
from spinup_tf2.utils.logx import EpochLogger, Logger  # noqa: E402

sac_tf2 = sac

__all__ = ["sac", "sac_tf2", "EpochLogger", "Logger"]


def tf_version() -> str:
    """The TensorFlow version in use."""
    import tensorflow as tf

    return tf.__version__
