"""What V-trace trains on is what the actor saw and was sent: through the real server,
batcher, step processor and unroll builder, and the real actor loop, step t of an
unroll holds the observation the actor sent at t, the action the learner sent back
for it, the logits that action was sampled from, and at t + 1 the reward that action
earned. A one-step shift anywhere between the env and the train step fails it."""
import asyncio
import threading

import numpy as np
import pytest

tf = pytest.importorskip('tensorflow')

from seed.actors.client import Actor, split_envs  # pylint: disable=g-import-not-at-top
from seed.agents.vtrace import agent as agent_lib  # pylint: disable=g-import-not-at-top
from seed.agents.vtrace import config as config_lib  # pylint: disable=g-import-not-at-top
from seed.envs.spec import EnvSpec  # pylint: disable=g-import-not-at-top
from tests.server_harness import ServerHarness  # pylint: disable=g-import-not-at-top

pytestmark = pytest.mark.timeout(120)

NUM_ACTIONS = 4
EPISODE_STEPS = 7
# [env, episode, step in the episode, noise, noise]: every step's observation is unique,
# and the noise makes the logits differ from step to step.
SPEC = EnvSpec((5,), 'float32', num_actions=NUM_ACTIONS)


class ScriptedEnv:
  """Logs every action it is given against the observation it answers; the reward of
  a transition encodes the step it left and the action taken there."""

  def __init__(self, index: int):
    self.index = index
    self.rng = np.random.default_rng(index)
    self.episode = -1
    self.actions = {}  # (episode, step) -> the action taken at that observation

  def _observe(self):
    noise = self.rng.normal(size=2)
    return np.array([self.index, self.episode, self.step_in_episode, *noise], np.float32)

  def reset(self, seed=None):
    del seed
    self.episode += 1
    self.step_in_episode = 0
    return self._observe(), {}

  def step(self, action):
    self.actions[(self.episode, self.step_in_episode)] = int(action)
    reward = 100.0 * self.step_in_episode + int(action)
    self.step_in_episode += 1
    terminated = self.step_in_episode == EPISODE_STEPS
    return self._observe(), reward, terminated, False, {}


def _run_actor(envs, address, steps):
  actor = Actor(split_envs(envs, SPEC), 'Scripted', actor_id=0, server_address=address,
                max_steps=steps)
  thread = threading.Thread(target=lambda: asyncio.run(actor.run()))
  thread.start()
  thread.join(timeout=60)
  assert not thread.is_alive(), 'the actor did not finish its steps'


def test_step_t_of_a_trained_unroll_is_what_the_actor_saw_sent_and_earned():
  agent = agent_lib.VTraceAgent(SPEC, config_lib.VTraceConfig(
      torso='mlp', mlp_hidden_sizes=(16,), unroll_length=5, batch_unrolls=2, seed=3))
  envs = [ScriptedEnv(i) for i in range(3)]
  with ServerHarness(spec=SPEC, env_name='Scripted', agent=agent,
                     fifo_capacity=100) as harness:
    _run_actor(envs, harness.address, steps=40)
    unrolls = harness.fifo.sample(len(harness.fifo), timeout_s=5.0).data
  steps = unrolls.steps
  assert len(steps.reward) >= 12  # 3 envs x 7 unrolls of 5 transitions, less the last

  observation = steps.observation
  env_index, episode, step_in_episode = (observation[..., i].astype(int) for i in range(3))
  # Each unroll is one env's, its steps consecutive (the boundary step repeats).
  assert (env_index == env_index[:, :1]).all()
  starts = step_in_episode[:, 1:] == 0
  assert (np.where(starts, episode[:, 1:] - episode[:, :-1], step_in_episode[:, 1:] -
                   step_in_episode[:, :-1]) == 1).all()
  np.testing.assert_array_equal(steps.terminated[:, 1:], starts)

  # action[t]: what the env was sent for observation[t].
  sent = np.array([[envs[e].actions[(k, s)] for e, k, s in zip(*row)]
                   for row in zip(env_index, episode, step_in_episode)])
  np.testing.assert_array_equal(steps.action, sent)
  # reward[t + 1]: what action[t] earned at observation[t].
  np.testing.assert_array_equal(steps.reward[:, 1:],
                                100.0 * step_in_episode[:, :-1] + steps.action[:, :-1])
  # logits[t]: the policy at observation[t] (nothing trained: the weights that acted),
  # and not the policy at a neighbouring step.
  flat = observation.reshape(-1, SPEC.observation_shape[0])
  logits, _, _ = agent.network.step(flat, tf.zeros([len(flat)], tf.bool), ())
  logits = logits.numpy().reshape(steps.policy_outputs['logits'].shape)
  np.testing.assert_allclose(steps.policy_outputs['logits'], logits, rtol=1e-5, atol=1e-5)
  assert np.abs(steps.policy_outputs['logits'][:, 1:] - logits[:, :-1]).max() > 1e-3
