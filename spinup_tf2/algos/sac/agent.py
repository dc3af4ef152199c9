"""Acting: one interface for every kind of agent the training loop steps.

``sac()`` acts through an :class:`Agent`: ``get_action(o)`` (or ``get_action.act(o,
deterministic)``) gives one action for one observation, and the loop tells the agent what
happens around it (a random exploring action, an episode's start, new weights). The MLP
agent (:class:`MLPAgent`) has no memory, so most of these do nothing for it; the recurrent
one (:class:`spinup_tf2.algos.sac.recurrent.RecurrentAgent`) carries a memory through
the episode. A variant chooses its agent (:mod:`spinup_tf2.algos.sac.variants`).
"""

from __future__ import annotations

import numpy as np

from spinup_tf2.algos.sac.fast_path import NumpyActor, action_noise
from spinup_tf2.tf_setup import import_tensorflow

tf = import_tensorflow()


class Agent:
    """What the training loop asks of an agent; the defaults are those of an agent
    without memory.

    - :meth:`act` (also ``agent(o, deterministic=False)``): an action for observation ``o``;
    - :meth:`explore`: take the given random action ``a`` at ``o`` (the first
      ``start_steps``), so an agent with memory still reads ``o``;
    - :meth:`reset`: an episode begins;
    - :meth:`memory`: what the replay buffer stores with the transition just acted on;
    - :meth:`fork`: an agent with the same policy for test episodes and videos, which must
      not disturb the training episode's memory;
    - :meth:`refresh`: the networks' weights changed (after each block of updates);
    - :meth:`state_arrays` / :meth:`load_state_arrays`: what a checkpoint keeps.
    """

    def act(self, o, deterministic: bool = False) -> np.ndarray:
        """An action for one observation, as numpy."""
        raise NotImplementedError

    def __call__(self, o, deterministic: bool = False) -> np.ndarray:
        return self.act(o, deterministic)

    def explore(self, o, a):
        """Take the random action ``a`` at ``o``; returns ``a``."""
        return a

    def reset(self) -> None:
        """A new episode begins."""

    def memory(self) -> tuple:
        """Extra values the replay buffer stores with the last transition (none here)."""
        return ()

    def fork(self) -> Agent:
        """An agent with the same policy and its own memory (this one: no memory)."""
        return self

    def refresh(self) -> None:
        """Take the networks' new weights."""

    def state_arrays(self) -> dict:
        """The episode in progress's memory, for a checkpoint (none here)."""
        return {}

    def load_state_arrays(self, arrays) -> None:
        """Restore :meth:`state_arrays`."""


class MLPAgent(Agent):
    """Acting with a policy without memory: a numpy copy of the policy
    (:class:`spinup_tf2.algos.sac.fast_path.NumpyActor`) when the actor allows it, else a
    ``tf.function`` with a fixed input signature, so acting never retraces. The noise is
    :func:`spinup_tf2.algos.sac.fast_path.action_noise` from ``rng``; call :meth:`refresh`
    after the weights change."""

    def __init__(self, ac, rng: np.random.Generator, n_noise: int, discrete: bool = False):
        self.rng, self.n_noise, self.discrete = rng, n_noise, discrete
        self.np_actor = NumpyActor.maybe(ac.pi)
        if self.np_actor is None:
            obs_dtype, obs_shape = ac.obs_dtype, ac.obs_shape  # an image's shape, for pixels

            @tf.function(input_signature=[tf.TensorSpec([1, *obs_shape], obs_dtype),
                                          tf.TensorSpec([1, n_noise], tf.float32)])
            def tf_action(o, noise):
                return ac.policy(o, noise=noise, with_logprob=False)[0]

            def policy(o, noise):
                o = np.asarray(o, obs_dtype.as_numpy_dtype)[None]
                return tf_action(o, noise[None])[0].numpy()
            self.policy = policy
        else:
            self.policy = self.np_actor

    def act(self, o, deterministic: bool = False) -> np.ndarray:
        """An action for one observation: sampled, or the policy's mode."""
        return self.policy(o, action_noise(self.rng, self.n_noise, self.discrete,
                                           deterministic))

    __call__ = act  # one call less per environment step

    def refresh(self) -> None:
        """Copy the new weights into the numpy policy (the tf.function reads them)."""
        if self.np_actor is not None:
            self.np_actor.refresh()
