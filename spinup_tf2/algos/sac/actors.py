"""Actors on Ray feeding one learner (``sac(actors=N)``, ``--actors N``): collection past
one process, after Ape-X (Horgan et al. 2018).

Each of N Ray actors (one CPU each by default) steps its own copy of the environment with
its own copy of the policy (the same actor-critic class, built in its process) and its own
seed, ``actor_steps`` steps per round, and sends the round's transitions to the learner in
one batch; with each round's request it gets the learner's latest policy weights. The
learner (the ``sac()`` process) keeps the replay buffer, the updates, the tests, the logs
and the checkpoints.

Rounds are pipelined and in order: when round r's transitions arrive, round r + 1 is sent
off at once (with the weights after the updates on rounds up to r - 1), and the learner
stores round r and runs its ``actors x actor_steps x updates_per_step`` updates while the
actors collect. So the updates keep ``updates_per_step`` to the steps collected exactly
(they never starve or run ahead: a round's updates run only once it has arrived), the
actors run at most one round ahead of the learner, and their policy is at most two rounds
old. Everything happens in round order, not in order of arrival, so a run with actors
repeats exactly from its seed, as every run here does.

Exploration is SAC's own: each actor samples from the stochastic policy with its own
random generator (Ape-X's per-actor epsilon schedule belongs to a deterministic policy, not
to SAC's), after the run's first ``start_steps`` steps of uniformly random actions.

An actor whose process dies (kill -9, a lost node) is restarted by Ray; its round is asked
for again, with a new seed, and the steps it had not sent are lost and counted in the log.
A checkpoint keeps the learner's state; a resumed run starts fresh actors (new episodes),
so its rows neither repeat nor skip.
"""

from __future__ import annotations

import contextlib
import os

import numpy as np

from spinup_tf2.errors import SpinupError

SEED_STRIDE = 1000  # actor i's seed: the run's + SEED_STRIDE * (i + 1) (+ its restarts)


class Collector:
    """One actor: an environment copy and a policy copy, stepped ``k`` steps per
    :meth:`collect`. Made in its own (Ray) process: it imports TensorFlow there."""

    def __init__(self, env_fn, actor_critic, ac_kwargs: dict, normalize_obs: bool, seed: int,
                 max_ep_len: int):
        from spinup_tf2 import envs
        from spinup_tf2.algos.sac import core
        from spinup_tf2.envs import ReplayableEpisodes
        from spinup_tf2.envs.spaces import check_spaces

        env = envs.make_env(env_fn)
        layout, scale, obs_space, act_space = envs.network_spaces(env)
        discrete, _, _, n_noise = check_spaces(obs_space, act_space, normalize_obs)
        normalizer = (core.ObsNormalizer(obs_space.shape[0], name="obs_normalizer")
                      if normalize_obs else None)
        kwargs = dict(ac_kwargs, obs_normalizer=normalizer) if normalizer else ac_kwargs
        self.ac = core.adapt_instance(actor_critic(obs_space, act_space, **kwargs))
        self.make = lambda s: ReplayableEpisodes(env, s, layout, scale)
        self.max_ep_len, self.n_noise, self.discrete = max_ep_len, n_noise, discrete
        self.reseed(seed)

    def ready(self) -> bool:
        """True once made (the learner waits for it before anything is written)."""
        return True

    def reseed(self, seed: int) -> None:
        """New episodes from ``seed`` (the environment's resets, the actions' noise)."""
        self.env = self.make(seed)
        self.rng = np.random.default_rng(seed)
        self.agent = self._agent()
        self.o, self.ep_ret, self.ep_len = self.env.reset()[0], 0.0, 0
        self.success = None

    def _agent(self):
        from spinup_tf2.algos.sac.agent import MLPAgent

        return MLPAgent(self.ac, self.rng, self.n_noise, self.discrete)

    def collect(self, k: int, weights: list, policy: bool, seed: int | None = None) -> dict:
        """``k`` steps with the policy of ``weights`` (``pi.get_weights()``; uniformly random
        actions unless ``policy``), after new episodes from ``seed`` if given. Returns the
        transitions (``obs, act, rew, obs2, done, ended``: ``done`` a termination,
        ``ended`` an episode's end after that step) and the episodes that ended
        (``episodes``: return, length, success or None)."""
        from spinup_tf2 import envs

        if seed is not None:
            self.reseed(seed)
        self.ac.pi.set_weights(weights)
        self.agent.refresh()
        out = {key: [] for key in ("obs", "act", "rew", "obs2", "done", "ended")}
        episodes = []
        for _ in range(k):
            a = (self.agent(self.o) if policy
                 else self.agent.explore(self.o, self.env.action_space.sample()))
            o2, r, terminated, truncated, info = self.env.step(a)
            self.ep_ret += r
            self.ep_len += 1
            ended = terminated or truncated or self.ep_len == self.max_ep_len
            for key, v in zip(out, (self.o, a, r, o2, float(terminated), ended), strict=True):
                out[key].append(v)
            self.o = o2
            if ended:
                key = self.success or envs.success_key(info)
                self.success = key
                episodes.append((float(self.ep_ret), int(self.ep_len),
                                 float(info.get(key, 0.0)) if key else None))
                self.o, self.ep_ret, self.ep_len = self.env.reset()[0], 0.0, 0
        batch = {key: np.asarray(v, dtype=np.float32 if key != "ended" else bool)
                 for key, v in out.items()}
        batch["episodes"] = episodes
        return batch


def check_actors(args: dict, variant, n_procs: int) -> None:
    """Refuse, before anything is written, actors (``args``: sac()'s) where they cannot
    work: beside several environment copies per process or MPI processes (actors are
    the copies), with a recurrent or pixel agent or hindsight relabelling (what they keep
    of an episode stays in the learner), and rounds that do not divide an epoch."""
    n, k = args["actors"], args["actor_steps"]
    if n == 0:
        return
    why = None
    if args["num_envs"] > 1:
        why = f"num_envs={args['num_envs']} (each actor is an environment copy: give more actors)"
    elif n_procs > 1:
        why = f"{n_procs} MPI processes (the learner is one process; give --cpu 1)"
    elif variant.keeps != "transitions":
        why = f"the {variant.name} variant (its buffer keeps {variant.keeps} in order)"
    elif args["her"]:
        why = "her=True (relabelling needs whole episodes in the learner's replay)"
    elif args["steps_per_epoch"] % (n * k):
        why = (f"steps_per_epoch={args['steps_per_epoch']}, which a round of {n} x {k} steps "
               f"(actors x actor_steps) does not divide; give a multiple of {n * k}")
    if why:
        raise SpinupError(f"sac() got actors={n} with {why}. Nothing was written. Give "
                          f"actors=0 (collect in this process, the default), or drop what "
                          f"it cannot combine with.")


class RayActors:
    """The learner's side: N :class:`Collector` actors on the Ray cluster (``RAY_ADDRESS``,
    or a local one started for the run), stepped in pipelined rounds of ``k`` steps each.

    It is the training loop's collector (as :class:`~spinup_tf2.envs.vector.VectorEpisodes`
    is): :meth:`step` stores a whole round (``n * k`` transitions) and logs its episodes.
    """

    def __init__(self, n: int, k: int, make_args: dict, ac, seed: int, start_steps: int,
                 cpus: float = 1.0):
        import math

        from spinup_tf2.errors import is_installed
        from spinup_tf2.launch.ray_backend import check_cpus_per_task, connect

        if not is_installed("ray"):
            raise SpinupError(f"sac() got actors={n}, which runs on Ray, but Ray is not "
                              f"installed. Install the optional extra: pip install -e "
                              f"'.[ray]' in a clone of spinup_tf2 (or pip install 'ray>=2.9'). "
                              f"Nothing was written.")
        self.stack = contextlib.ExitStack()
        # A local cluster has a CPU for each actor (and the learner's): actors that wait on
        # a slow simulator need no core of their own.
        local = max(os.cpu_count() or 1, math.ceil(n * cpus) + 1)
        try:
            self.ray, node_cpus, self.cluster = self.stack.enter_context(
                connect(local_cpus=local))
            check_cpus_per_task(node_cpus, cpus, f"actor_cpus={cpus}")
        except SpinupError as err:
            self.stack.close()
            raise SpinupError(f"sac() got actors={n}, but: {err} Nothing was written.") from None
        from ray.exceptions import ActorUnavailableError, RayActorError

        self.dead = (RayActorError, ActorUnavailableError)
        self.n, self.k, self.ac, self.seed = n, k, ac, int(seed)
        self.start_steps, self.t, self.lost, self.restarts = start_steps, 0, 0, [0] * n
        remote = self.ray.remote(num_cpus=cpus, max_restarts=-1, max_task_retries=0)(Collector)
        self.actors = [remote.remote(**make_args, seed=self.actor_seed(i)) for i in range(n)]
        try:  # made before anything is written: what they cannot rebuild is said now
            self.ray.get([a.ready.remote() for a in self.actors])
        except Exception as err:  # Ray wraps whatever the actor's process raised
            self.close()
            cause = str(err).strip().splitlines()[-1]
            raise SpinupError(f"sac() got actors={n}, but the actors could not be made on "
                              f"the Ray cluster: {cause}. Each actor rebuilds env_fn and the "
                              f"actor-critic in its own process, so they must be defined in "
                              f"your script or in a module installed on every node (a "
                              f"module only on this machine's path is not). Nothing was "
                              f"written.") from None
        self.inflight, self.fresh = None, False

    def actor_seed(self, i: int) -> int:
        """Actor ``i``'s seed: its own, new at each restart and each resumed run."""
        return self.seed + SEED_STRIDE * (i + 1) + 7919 * self.restarts[i] + self.t

    def reset(self, seed: int | None = None) -> tuple:
        """Nothing to reset here: the actors began their episodes when made."""
        return None, {}

    def _launch(self) -> list:
        """Round ``self.t // (n k)``'s requests, with the current weights."""
        weights = self.ray.put(self.ac.pi.get_weights())
        policy = self.t > self.start_steps
        seeds = [self.actor_seed(i) if self.fresh else None for i in range(self.n)]
        self.fresh = False
        return [a.collect.remote(self.k, weights, policy, s)
                for a, s in zip(self.actors, seeds, strict=True)]

    def _gather(self, refs: list, logger) -> list:
        """The round's batches in actor order; an actor that died is asked again."""
        batches = []
        for i, ref in enumerate(refs):
            try:
                batches.append(self.ray.get(ref))
            except self.dead as err:
                self.restarts[i] += 1
                self.lost += self.k
                logger.log(f"Actor {i} stopped ({type(err).__name__}); Ray restarted it, and "
                           f"its {self.k} unsent steps are lost ({self.lost} in all).",
                           color="yellow")
                batches.append(self._ask_again(i))
        return batches

    def _ask_again(self, i: int, patience: float = 600.0) -> dict:
        """Actor ``i``'s round from its restarted process (with new episodes), waiting while
        Ray brings it back."""
        import time

        deadline = time.time() + patience
        while True:
            try:
                return self.ray.get(self.actors[i].collect.remote(
                    self.k, self.ac.pi.get_weights(), self.t > self.start_steps,
                    self.actor_seed(i)))
            except self.dead:
                if time.time() > deadline:
                    raise SpinupError(f"Actor {i} did not come back within {patience:.0f} s "
                                      f"of its process ending; the run stops here, its last "
                                      f"checkpoint whole (resume it with --resume).") from None
                time.sleep(0.5)

    def step(self, o, act, replay_buffer, logger, normalizer=None):
        """Take the next round (sending the one after it off first), store its ``n * k``
        transitions (actor i's as environment copy i of ``replay_buffer``, an
        :class:`~spinup_tf2.algos.sac.nstep.NStepReturns`) and log its episodes."""
        from spinup_tf2.envs import store_episode

        del o, act  # the actors act; the loop's random phase is self.start_steps
        if self.inflight is None:
            self.inflight = self._launch()
        batches = self._gather(self.inflight, logger)
        self.t += self.n * self.k
        self.inflight = self._launch()  # the actors collect while the learner updates
        for i, b in enumerate(batches):
            for j in range(self.k):
                replay_buffer.store(b["obs"][j], b["act"][j], b["rew"][j], b["obs2"][j],
                                    b["done"][j], copy=i)
                if b["ended"][j]:
                    replay_buffer.end_episode(i)
                if normalizer is not None:
                    normalizer.observe(b["obs2"][j])
            for ret, length, success in b["episodes"]:
                store_episode(logger, ret, length, success)
        return None

    def state(self, episode: bool = True) -> dict:
        """What a checkpoint keeps: the steps taken and the steps lost, in the form of an
        environment's state (the actors' episodes are not kept)."""
        from spinup_tf2.envs.episodes import rng_state

        bits = rng_state(np.random.default_rng(self.seed + self.t))  # (none steps here)
        return dict(first_seed=None, episode_start={}, actions=np.zeros(0), np_random=bits,
                    action_space_rng=bits, actor_steps_taken=self.t, lost=self.lost)

    def restore(self, state: dict):
        """After :meth:`state`: the next rounds begin new episodes in every actor."""
        t, lost = state.get("actor_steps_taken"), state.get("lost", 0)
        if not (isinstance(t, int) and isinstance(lost, int) and t >= 0 and lost >= 0):
            raise ValueError(f"its actors' steps ({t!r}, lost {lost!r}) are not whole numbers")
        self.t, self.lost, self.fresh = t, lost, True
        return None

    def close(self) -> None:
        """Stop the actors and leave the cluster."""
        for a in getattr(self, "actors", []):
            with contextlib.suppress(Exception):
                self.ray.kill(a)
        self.stack.close()
