"""Resets of the replay agents (SAC, DDPG): seed.agents.common.offpolicy, OffPolicyConfig."""
import re

import numpy as np
import pytest
import tensorflow as tf

from seed.agents.common import mlp
from seed.agents.ddpg.agent import DDPGAgent
from seed.agents.ddpg.config import DDPGConfig
from seed.agents.sac.agent import SACAgent
from seed.agents.sac.config import SACConfig
from tests.unit.test_continuous_agents import PENDULUM, SMALL, _make, _replay_sample

SIZES = dict(minibatch_transitions=8, updates_per_step=2, n_steps=1, **SMALL)


def _weights(agent, name):
  return [w.numpy().copy() for w in getattr(agent, name).weights]


def _train(agent, steps, seed=0):
  rng = np.random.default_rng(seed)
  return [agent.train_step(_replay_sample(agent, PENDULUM, rng)) for _ in range(steps)]


@pytest.mark.parametrize('agent_class', [SACAgent, DDPGAgent])
def test_a_reset_reinitialises_networks_and_optimizers_and_keeps_the_counts(agent_class):
  agent = _make(agent_class, reset_interval_updates=4, seed=3, **SIZES)
  initial = {name: _weights(agent, name) for name in agent._make_networks([mlp.SeedStream(0)])}
  first = _train(agent, 1)[0]  # 2 updates: no reset yet.
  assert (agent.updates, agent.resets, first.logs['resets']) == (2, 0, 0.0)
  assert not np.array_equal(_weights(agent, 'actor')[0], initial['actor'][0])
  second = _train(agent, 1, seed=1)[0]  # 4 updates: the reset.
  assert (agent.updates, agent.resets, second.logs['resets']) == (4, 1, 1.0)
  # Every network now holds what a fresh draw from (seed, reset 1) gives: new weights,
  # not the first ones, the targets equal to their online networks.
  fresh = agent._make_networks([mlp.SeedStream((3, 1))])
  for name, network in fresh.items():
    for got, want in zip(_weights(agent, name), [w.numpy() for w in network.weights]):
      if name.startswith('target_'):
        continue
      np.testing.assert_array_equal(got, want)
  assert not np.array_equal(_weights(agent, 'actor')[0], initial['actor'][0])
  targets = [name for name in fresh if name.startswith('target_')]
  for target in targets:
    online = {'target_critic1': 'critic1', 'target_critic2': 'critic2'}.get(
        target, target[len('target_'):])
    for got, want in zip(_weights(agent, target), _weights(agent, online)):
      np.testing.assert_array_equal(got, want)
  for optimizer, _, learning_rate in agent._optimized():
    assert int(optimizer.iterations.numpy()) == 0
    assert float(optimizer.learning_rate.numpy()) == pytest.approx(learning_rate)
    for variable in optimizer.variables:
      if variable is not optimizer.learning_rate:
        assert not np.any(variable.numpy()), variable.path
  if agent_class is SACAgent:
    np.testing.assert_allclose(agent.temperature.alpha(), [agent.config.initial_alpha], rtol=1e-6)
  # Training goes on from the fresh networks.
  _train(agent, 1, seed=2)
  assert (agent.updates, agent.resets) == (6, 1)


def test_the_interval_in_env_steps_counts_updates_per_step_each():
  config = SACConfig(reset_interval_env_steps=3, **SIZES)
  assert config.reset_interval == 6
  agent = _make(SACAgent, reset_interval_env_steps=3, **SIZES)
  _train(agent, 2)
  assert agent.resets == 0
  _train(agent, 1)
  assert (agent.updates, agent.resets) == (6, 1)
  assert SACConfig(**SIZES).reset_interval is None


@pytest.mark.parametrize('stop_after', [1, 2, 3])
def test_resume_anywhere_in_the_cycle_resets_where_an_unbroken_run_does(stop_after, tmp_path):
  # Interval 4 updates, 2 a train step: resets after steps 2 and 4. A run checkpointed
  # after `stop_after` steps and resumed in a new agent ends like the unbroken one.
  def make():
    return _make(SACAgent, reset_interval_updates=4, seed=5, **SIZES)

  rng = np.random.default_rng(11)
  unbroken = make()
  samples = [_replay_sample(unbroken, PENDULUM, rng) for _ in range(5)]
  unbroken_logs = [unbroken.train_step(s).logs for s in samples]

  first = make()
  for sample in samples[:stop_after]:
    first.train_step(sample)
  path = tf.train.Checkpoint(**first.checkpoint_items()).write(str(tmp_path / 'ckpt'))
  resumed = make()
  resumed.warm_up([1])
  tf.train.Checkpoint(**resumed.checkpoint_items()).read(path).assert_consumed()
  resumed.on_restored()
  resumed_logs = [resumed.train_step(s).logs for s in samples[stop_after:]]
  for got, want in zip(resumed_logs, unbroken_logs[stop_after:], strict=True):
    assert got == pytest.approx(want, rel=1e-5)
  assert (resumed.updates, resumed.resets) == (unbroken.updates, unbroken.resets) == (10, 2)
  for got, want in zip(_weights(resumed, 'actor'), _weights(unbroken, 'actor')):
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize('config_class, overrides, accepted', [
    (SACConfig, dict(reset_interval_updates=0), 'an int >= 1'),
    (DDPGConfig, dict(reset_interval_env_steps=2.5), 'an int >= 1'),
    (SACConfig, dict(reset_interval_updates=100, reset_interval_env_steps=10),
     'None while reset_interval_updates is set (100): one unit, not both'),
])
def test_bad_reset_intervals_are_named(config_class, overrides, accepted):
  field = list(overrides)[-1]
  want = f'{config_class.__name__}.{field} = {overrides[field]!r}; accepted: {accepted}'
  with pytest.raises(ValueError, match=re.escape(want)):
    config_class(**overrides)
