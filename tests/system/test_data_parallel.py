"""A train step on 2 and 4 devices equals the one-device step on the same global batch.

The devices are logical CPU devices (tf.config.set_logical_device_configuration), set
before TensorFlow starts; a test process has started it already, so the cases run in
child processes, one per device count (two MirroredStrategies of different sizes in one
process collide in TensorFlow's collective groups), started together.
"""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from tests.processes import Run

# One worker runs the module, so its children (the fixture's) start once. They take
# 200 s of the first test's setup beside the other workers on an AVX-512 host, 379 s on
# an AVX2-only one (CI, 2026-12-07; XLA compiling SAC's and DDPG's updates in the
# one-device child): more than the default timeout leaves, with room for a slow day.
pytestmark = [pytest.mark.xdist_group('data_parallel'), pytest.mark.timeout(900)]

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# (agent, config fields): small networks, batches of 8 (4 envs' shares of 2 on 4 devices).
CONFIGS = {
    'vtrace, feed-forward': ('vtrace', dict(batch_unrolls=8, unroll_length=5,
                                            mlp_hidden_sizes=(16,))),
    'vtrace, lstm, 2 epochs of 2 minibatches': ('vtrace', dict(
        batch_unrolls=8, unroll_length=5, mlp_hidden_sizes=(16,), use_lstm=True,
        lstm_size=8, num_minibatches=2, epochs=2)),
    # A target copy every 2 updates: the third step trains against a copied target.
    'r2d2, lstm, burn-in': ('r2d2', dict(
        torso='mlp', mlp_hidden_sizes=(16,), lstm_size=8, head_hidden_size=16,
        burn_in_steps=2, trained_steps=4, batch_sequences=8, target_update_period=2)),
    # Two seeds in one agent, 2 updates of 8 transitions a step, 3-step targets (some cut
    # by a time limit: the critic's masked mean), noise drawn for the whole minibatch.
    'sac, 2 seeds, 2 updates a step': ('sac', dict(
        hidden_sizes=(16, 16), n_steps=3, minibatch_transitions=8, updates_per_step=2,
        num_seeds=2)),
    'ddpg, 2 updates a step': ('ddpg', dict(
        hidden_sizes=(16, 16), n_steps=2, minibatch_transitions=8, updates_per_step=2)),
}

_CHILD = r'''
import json, sys
import numpy as np
import tensorflow as tf
cpu = tf.config.list_physical_devices('CPU')[0]
tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 4)
names = [d.name for d in tf.config.list_logical_devices('CPU')]
from seed.agents.r2d2 import agent as r2d2, config as r2d2_config
from seed.agents.ddpg import agent as ddpg, config as ddpg_config
from seed.agents.sac import agent as sac, config as sac_config
from seed.agents.vtrace import agent as agent_lib, config as config_lib
from seed.envs import spec as spec_lib
from tests.agent_inputs import (random_logits_sample, random_sequence_sample,
                                random_transition_sample)
SPECS = {'discrete': spec_lib.EnvSpec((10, 5), 'float32', num_actions=3),
         'box': spec_lib.EnvSpec((3,), 'float32', action_shape=(1,), action_dtype='float32',
                                 action_low=(-2.0,), action_high=(2.0,))}
AGENTS = {'vtrace': (agent_lib.VTraceAgent, config_lib.VTraceConfig, random_logits_sample,
                     'discrete', lambda agent: agent.network.trainable_variables),
          'r2d2': (r2d2.R2D2Agent, r2d2_config.R2D2Config, random_sequence_sample,
                   'discrete', lambda agent: agent.network.trainable_variables),
          'sac': (sac.SACAgent, sac_config.SACConfig, random_transition_sample, 'box',
                  lambda agent: [v for network in (agent.actor, agent.critic1, agent.critic2,
                                                   agent.target_critic1, agent.temperature)
                                 for v in network.trainable_variables]),
          'ddpg': (ddpg.DDPGAgent, ddpg_config.DDPGConfig, random_transition_sample, 'box',
                   lambda agent: [v for network in (agent.actor, agent.critic,
                                                    agent.target_actor, agent.target_critic)
                                  for v in network.trainable_variables])}
results = {}
devices = int(sys.argv[2])
strategy = (tf.distribute.MirroredStrategy(names[:devices]) if devices > 1
            else tf.distribute.get_strategy())
for config, (name, fields) in json.loads(sys.argv[1]).items():
  agent_class, config_class, sample, spec_name, trained_variables = AGENTS[name]
  spec = SPECS[spec_name]
  with strategy.scope():
    agent = agent_class(spec, config_class(**fields))
    agent.warm_up([1])
  rng = np.random.default_rng(0)
  # Evaluation acting (greedy, SAC's mode): the same inputs give the same outputs.
  observation = rng.normal(size=(4,) + spec.observation_shape).astype(np.float32)
  _, reward, done, core_state, acting = agent._example_inputs(4)
  inputs = (observation, reward, done, core_state, acting._replace(evaluation=np.ones(4, bool)))

  def inferred(device=None):  # the action and the policy outputs, as tensors
    action, outputs, _ = agent.batched_policy(4, device)(*inputs)
    return [action] + [outputs[name] for name in sorted(outputs)]

  def largest_difference(a, b):
    return max(float(np.max(np.abs(np.asarray(x, np.float64) - np.asarray(y, np.float64))))
               for x, y in zip(a, b))

  before = inferred()
  logs = [agent.train_step(sample(agent, spec, rng)).logs for _ in range(3)]
  weights = [v.numpy().tolist() for v in trained_variables(agent)]
  results[f'{config}/{devices}'] = {'logs': logs, 'weights': weights}
  # Inference on each device (--inference_devices): there, and with the trained weights.
  default = inferred()
  lanes = {}
  for device in names[:devices]:
    outputs = inferred(device)
    lanes[device] = {'placed': [value.device for value in outputs],
                     'diff_to_default': largest_difference(outputs, default),
                     'diff_to_untrained': largest_difference(outputs, before)}
  results[f'{config}/{devices}/inference'] = lanes
try:  # Statistics across the batch are not a mean of per-device shards.
  with strategy.scope():
    agent_lib.VTraceAgent(SPECS['discrete'],
                          config_lib.VTraceConfig(value_normalization='popart'))
  results[f'popart/{devices}'] = 'built'
except ValueError as e:
  results[f'popart/{devices}'] = str(e)
print(json.dumps(results))
'''


@pytest.fixture(scope='module')
def trained():
  children = [subprocess.Popen([sys.executable, '-c', _CHILD, json.dumps(CONFIGS), str(n)],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               cwd=REPO,
                               env=dict(os.environ, PYTHONPATH=REPO, TF_CPP_MIN_LOG_LEVEL='2'))
              for n in (1, 2, 4)]
  results = {}
  try:
    for child in children:
      out, err = child.communicate(timeout=840)
      assert child.returncode == 0, err[-3000:]
      results.update(json.loads(out.strip().splitlines()[-1]))
  finally:
    for child in children:
      if child.poll() is None:
        child.kill()
        child.wait()
  return results


@pytest.mark.parametrize('config', sorted(CONFIGS))
@pytest.mark.parametrize('devices', [2, 4])
def test_a_train_step_on_several_devices_equals_one_device(trained, config, devices):
  one, many = trained[f'{config}/1'], trained[f'{config}/{devices}']
  for step, (a, b) in enumerate(zip(one['logs'], many['logs'])):
    assert a.keys() == b.keys()
    for key in a:  # losses, gradient norm (of the all-reduced gradients), the rest
      assert b[key] == pytest.approx(a[key], rel=1e-5, abs=1e-6), (step, key)
  for a, b in zip(one['weights'], many['weights']):  # after 3 train steps
    np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize('config', sorted(CONFIGS))
def test_inference_runs_on_each_device_with_the_latest_weights(trained, config):
  for devices in (2, 4):
    lanes = trained[f'{config}/{devices}/inference']
    assert len(lanes) == devices
    for device, lane in lanes.items():
      assert lane['placed'] and all(placed.endswith(device) for placed in lane['placed']), (
          device, lane['placed'])
      assert lane['diff_to_default'] == 0.0, (device, lane)   # the same weights ...
      assert lane['diff_to_untrained'] > 1e-6, (device, lane)  # ... the trained ones


def test_vtrace_refuses_batch_statistics_on_several_devices_only(trained):
  assert trained['popart/1'] == 'built'
  for devices in (2, 4):
    assert "value_normalization='popart'" in trained[f'popart/{devices}']
    assert f'on {devices} devices' in trained[f'popart/{devices}']


def test_an_agent_without_a_data_parallel_step_refuses_two_learner_devices(tmp_path):
  with Run(tmp_path / 'run', 'gin/toy/ppo.gin', agent='ppo',
           learner_flags=['--learner_devices=CPU:0,CPU:1']) as run:
    with pytest.raises(RuntimeError, match='learner exited with 2') as refused:
      run.start_learner()
  assert ("--learner_devices=CPU:0,CPU:1: agent 'ppo' cannot train on several devices: "
          'its train step is not yet split into per-device shards of the batch'
          ) in str(refused.value), refused.value
