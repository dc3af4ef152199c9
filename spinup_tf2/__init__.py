"""spinup_tf2: OpenAI Spinning Up's Soft Actor-Critic in TensorFlow 2 / Keras 3.

``from spinup_tf2 import sac`` (also ``sac_tf2``), each variant of the SAC family by its name
(its table: :mod:`spinup_tf2.family`), ``EpochLogger``, ``Logger``,
``ExperimentGrid``, ``tune`` (a hyperparameter study). The names load on first use, so that
the command line can check its arguments before paying for TensorFlow's import.
"""

import importlib

from spinup_tf2 import family as _family  # a leaf: no TensorFlow

__version__ = "0.2.0"  # the one place: pyproject.toml reads it, CHANGELOG.md names it

_EXPORTS = {
    "sac": ("spinup_tf2.algos.sac.sac", "sac"),
    "sac_tf2": ("spinup_tf2.algos.sac.sac", "sac"),
    "EpochLogger": ("spinup_tf2.utils.logx", "EpochLogger"),
    "Logger": ("spinup_tf2.utils.logx", "Logger"),
    "ExperimentGrid": ("spinup_tf2.utils.run_utils", "ExperimentGrid"),
    "tune": ("spinup_tf2.launch.tune", "tune"),
}
# The SAC family, one function per entry of its table (spinup_tf2.family).
_EXPORTS.update({name: ("spinup_tf2.algos.family", name) for name in _family.MEMBERS})

__all__ = list(_EXPORTS) + ["tf_version", "__version__"]


def __getattr__(name):
    if name in _EXPORTS:
        module, attr = _EXPORTS[name]
        value = getattr(importlib.import_module(module), attr)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'spinup_tf2' has no attribute {name!r}")


def _register_envs() -> None:
    try:
        from spinup_tf2.envs import register_envs
    except ImportError:  # gymnasium not installed (a bare plotting set-up): nothing to do
        return
    register_envs()


_register_envs()  # the partially observed tasks, Pendulum-P-v1 and CartPole-P-v1


def tf_version() -> str:
    """The TensorFlow version in use."""
    from spinup_tf2.tf_setup import import_tensorflow

    return import_tensorflow().__version__
