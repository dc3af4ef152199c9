"""Time TF-Agents' SAC with Spinning Up's settings; run by ``benchmarks/timing/race.py`` inside its
own virtual environment (tf-agents 0.19.0, the last release, on TensorFlow 2.15 with Keras 2).

    python tfagents_speed.py --env HalfCheetah-v5 --total 8000 --measure_from 2000

Prints one JSON line with the figures of ``benchmarks/speed.py`` and ``peer_speed.py``:

- updates_per_s: gradient updates per second of time spent in the blocks of 50 training
  steps after ``--measure_from`` env steps (``agent.train`` returns its losses as tensors,
  which are read, so the clock stops when the block's work is done);
- env_steps_per_s: env steps per second of wall time over the whole loop (collecting,
  storing, training) from ``--measure_from`` to ``--total``.

The agent is set up as TF-Agents' own SAC example (``agents/sac/examples/v2/train_eval.py``)
sets it up, with its replay buffer and driver: ``ActorDistributionNetwork`` with
``TanhNormalProjectionNetwork``, ``CriticNetwork`` on the joined observation and action,
``SacAgent`` with TF1 Adam optimizers, ``TFUniformReplayBuffer`` read through its
``as_dataset(num_steps=2)`` pipeline (boundary pairs filtered, prefetch 5), a
``DynamicStepDriver``, and ``agent.train`` and the driver wrapped in ``common.function``.
Spinning Up's settings: 256x256 ReLU actor and critic (``SacAgent`` copies the critic
into a second critic and both into targets, as Spinning Up has two critics), batch 100,
lr 1e-3 for actor, critics and alpha, gamma 0.99, polyak 0.995 (``target_update_tau=0.005``,
period 1), reward scale 1, replay size 1e6, uniform random actions and no updates before
step 1,000 (as for the other peers), then 50 env steps and 50 updates in turn.

What TF-Agents forces, against Spinning Up's settings:

- alpha cannot be fixed: ``SacAgent`` always learns it. Here it starts at 0.2
  (``initial_log_alpha=log 0.2``) with an alpha optimizer of learning rate 0, so it stays
  0.2; its loss and its (zero) Adam step are still computed each update, a few scalar ops.
- the environment: TF-Agents 0.19's gym suites take the old ``gym`` API, so the gymnasium
  task is wrapped in a ``PyEnvironment`` written here (``terminated`` ends an episode with
  discount 0, ``truncated`` with discount 1, as Spinning Up and the other peers treat them).
- initialisation and details of its networks are TF-Agents' (glorot uniform; the actor's
  standard deviation is the exponential of its output, unclipped), and its critic loss is
  the squared
  TD error without Spinning Up's factor 1/2 (the loss TF-Agents' example uses). None of
  these changes the amount of matrix work per update by more than a few per cent.
- no test episodes, as for the other peers.
"""

import argparse
import json
import os
import statistics
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")  # the race is on the CPU

p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
p.add_argument("--env", default="HalfCheetah-v5")
p.add_argument("--total", type=int, default=8000)
p.add_argument("--measure_from", type=int, default=2000)
args = p.parse_args()

import gymnasium as gym  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
import tf_agents  # noqa: E402
from tf_agents.agents.ddpg import critic_network  # noqa: E402
from tf_agents.agents.sac import sac_agent, tanh_normal_projection_network  # noqa: E402
from tf_agents.drivers import dynamic_step_driver  # noqa: E402
from tf_agents.environments import py_environment, tf_py_environment  # noqa: E402
from tf_agents.networks import actor_distribution_network  # noqa: E402
from tf_agents.policies import random_tf_policy  # noqa: E402
from tf_agents.replay_buffers import tf_uniform_replay_buffer  # noqa: E402
from tf_agents.specs import array_spec  # noqa: E402
from tf_agents.trajectories import time_step as ts  # noqa: E402
from tf_agents.utils import common  # noqa: E402

BLOCK = 50  # env steps, then as many updates
START = 1000  # random actions and no updates before this step


class GymnasiumEnv(py_environment.PyEnvironment):
    """A gymnasium environment as a TF-Agents ``PyEnvironment`` (float32 observations)."""

    def __init__(self, env: gym.Env, seed: int = 0):
        super().__init__()
        self._env, self._seed, self._done = env, seed, True
        obs, act = env.observation_space, env.action_space
        self._observation_spec = array_spec.ArraySpec(obs.shape, np.float32, "observation")
        self._action_spec = array_spec.BoundedArraySpec(
            act.shape, np.float32, minimum=act.low.astype(np.float32),
            maximum=act.high.astype(np.float32), name="action")

    def observation_spec(self):
        return self._observation_spec

    def action_spec(self):
        return self._action_spec

    def _reset(self):
        obs, _ = self._env.reset(seed=self._seed)
        self._seed = None  # seeded once, as the other peers' environments
        self._done = False
        return ts.restart(obs.astype(np.float32))

    def _step(self, action):
        if self._done:
            return self.reset()
        obs, reward, terminated, truncated, _ = self._env.step(action)
        self._done = terminated or truncated
        obs, reward = obs.astype(np.float32), np.float32(reward)
        if terminated:
            return ts.termination(obs, reward)
        if truncated:
            return ts.truncation(obs, reward)
        return ts.transition(obs, reward)


tf.random.set_seed(0)
env = tf_py_environment.TFPyEnvironment(GymnasiumEnv(gym.make(args.env)))
time_step_spec, action_spec = env.time_step_spec(), env.action_spec()
actor_net = actor_distribution_network.ActorDistributionNetwork(
    time_step_spec.observation, action_spec, fc_layer_params=(256, 256),
    continuous_projection_net=tanh_normal_projection_network.TanhNormalProjectionNetwork)
critic_net = critic_network.CriticNetwork(
    (time_step_spec.observation, action_spec), joint_fc_layer_params=(256, 256),
    kernel_initializer="glorot_uniform", last_kernel_initializer="glorot_uniform")
agent = sac_agent.SacAgent(
    time_step_spec, action_spec, actor_network=actor_net, critic_network=critic_net,
    actor_optimizer=tf.compat.v1.train.AdamOptimizer(learning_rate=1e-3),
    critic_optimizer=tf.compat.v1.train.AdamOptimizer(learning_rate=1e-3),
    alpha_optimizer=tf.compat.v1.train.AdamOptimizer(learning_rate=0.0),
    initial_log_alpha=float(np.log(0.2)), target_update_tau=0.005, target_update_period=1,
    td_errors_loss_fn=tf.math.squared_difference, gamma=0.99, reward_scale_factor=1.0,
    train_step_counter=tf.Variable(0, dtype=tf.int64))
agent.initialize()

replay_buffer = tf_uniform_replay_buffer.TFUniformReplayBuffer(
    data_spec=agent.collect_data_spec, batch_size=env.batch_size, max_length=1_000_000)
random_driver = dynamic_step_driver.DynamicStepDriver(
    env, random_tf_policy.RandomTFPolicy(time_step_spec, action_spec),
    observers=[replay_buffer.add_batch], num_steps=START)
collect_driver = dynamic_step_driver.DynamicStepDriver(
    env, agent.collect_policy, observers=[replay_buffer.add_batch], num_steps=BLOCK)
random_driver.run = common.function(random_driver.run)
collect_driver.run = common.function(collect_driver.run)
agent.train = common.function(agent.train)

dataset = (replay_buffer.as_dataset(sample_batch_size=100, num_steps=2)
           .unbatch().filter(lambda traj, _: ~traj.is_boundary()[0]).batch(100).prefetch(5))
iterator = iter(dataset)


@common.function
def train_step():
    experience, _ = next(iterator)
    return agent.train(experience).loss


marks, blocks = {}, []
time_step, _ = random_driver.run()
steps = START
while steps < args.total:
    time_step, _ = collect_driver.run(time_step=time_step)
    steps += BLOCK
    if steps in (args.measure_from, args.total):
        marks[steps] = time.perf_counter()
    start = time.perf_counter()
    for _ in range(BLOCK):
        loss = train_step()
    float(loss)  # the block's work is done when its last loss is read
    blocks.append((steps, time.perf_counter() - start))

measured = [dt for step, dt in blocks if step >= args.measure_from]
print(json.dumps(dict(
    impl="tfagents", env=args.env, tf_agents=tf_agents.__version__, tensorflow=tf.__version__,
    updates_per_s=BLOCK * len(measured) / sum(measured),
    env_steps_per_s=(args.total - args.measure_from)
    / (marks[args.total] - marks[args.measure_from]),
    first_train_s=blocks[0][1], median_train_s=statistics.median(measured))))
