"""Tests of the ACER agent: acting, a train step, the average network, the trust region
switch, checkpoints and bad config."""
import numpy as np
import pytest

tf = pytest.importorskip('tensorflow')

from seed.agents.acer import agent as agent_lib  # pylint: disable=g-import-not-at-top
from seed.agents.acer import config as config_lib  # pylint: disable=g-import-not-at-top
from seed.envs import spec as spec_lib  # pylint: disable=g-import-not-at-top
from tests.agent_inputs import (  # pylint: disable=g-import-not-at-top
    infer, random_logits_sample, random_observations)

CATCH = spec_lib.EnvSpec((10, 5), 'float32', num_actions=3)
ATARI = spec_lib.EnvSpec((4, 84, 84), 'uint8', num_actions=6, frames_per_step=4)
SMALL = dict(unroll_length=5, batch_unrolls=4, mlp_hidden_sizes=(16,))


def _agent(spec=CATCH, **fields):
  return agent_lib.ACERAgent(spec, config_lib.ACERConfig(**dict(SMALL, **fields)))


def _values(variables):
  return [np.array(v) for v in variables]


@pytest.mark.parametrize('spec,fields', [(CATCH, {}), (CATCH, dict(use_lstm=True, lstm_size=8)),
                                         (ATARI, dict(torso='nature'))])
def test_inference_samples_valid_actions_and_returns_logits(spec, fields):
  agent = _agent(spec, **fields)
  state = agent.initial_core_state(3)
  action, outputs, new_state = infer(
      agent, random_observations(spec, [3], np.random.default_rng(0)), [True] * 3, state)
  assert action.shape == (3,) and action.dtype == tf.int32
  assert np.all((action.numpy() >= 0) & (action.numpy() < spec.num_actions))
  assert set(outputs) == {'logits'} and outputs['logits'].shape == (3, spec.num_actions)
  assert len(new_state) == len(state)


@pytest.mark.parametrize('fields', [{}, dict(use_lstm=True, lstm_size=8),
                                    dict(trust_region=False)])
def test_train_step_moves_the_network_and_the_average_by_alpha(fields):
  agent = _agent(**fields)
  sample = random_logits_sample(agent, CATCH, np.random.default_rng(1))
  online = agent.network.trainable_variables
  average = agent._average_network.trainable_variables
  before = _values(online)
  np.testing.assert_array_equal(np.concatenate([x.ravel() for x in before]),
                                np.concatenate([x.ravel() for x in _values(average)]))
  result = agent.train_step(sample)
  assert result.skipped_updates == 0
  for key in ('total_loss', 'policy_loss', 'q_loss', 'entropy', 'mean_rho', 'kl_from_average',
              'trust_region_active', 'mean_q', 'grad_norm'):
    assert np.isfinite(result.logs[key]), key
  after = _values(online)
  assert any(not np.allclose(a, b) for a, b in zip(before, after))
  # theta_a <- alpha theta_a + (1 - alpha) theta, with theta_a = the old theta.
  alpha = agent.config.average_decay
  for old, new, avg in zip(before, after, _values(average)):
    np.testing.assert_allclose(avg, alpha * old + (1 - alpha) * new, rtol=1e-5, atol=1e-6)


def test_on_policy_batch_has_importance_weights_one():
  agent = _agent()
  sample = random_logits_sample(agent, CATCH, np.random.default_rng(2))
  steps = sample.data.steps
  logits, _, _ = agent.network.unroll(
      tf.constant(np.swapaxes(steps.observation, 0, 1)),
      tf.constant(np.swapaxes(steps.terminated | steps.truncated, 0, 1)), ())
  steps = steps._replace(policy_outputs={'logits': np.swapaxes(logits.numpy(), 0, 1)})
  sample = sample._replace(data=sample.data._replace(steps=steps))
  result = agent.train_step(sample)
  assert result.logs['mean_rho'] == pytest.approx(1.0, abs=1e-4)
  # The average equals the online network before the step: KL 0.
  assert result.logs['kl_from_average'] == pytest.approx(0.0, abs=1e-5)


def test_trust_region_changes_the_step_only_when_it_binds():
  sample = random_logits_sample(_agent(), CATCH, np.random.default_rng(3))
  # The average must differ from the online policy: while they are equal, k = -1 for
  # every action and the projection adds a constant to the gradient with respect to
  # the probabilities, which the softmax does not pass on to the parameters.
  other = _values(_agent(seed=7).network.trainable_variables)

  def step(**fields):
    agent = _agent(**fields)
    for variable, value in zip(agent._average_network.trainable_variables, other):
      variable.assign(value)
    logs = agent.train_step(sample).logs
    return logs, _values(agent.network.trainable_variables)

  free_logs, free = step(trust_region=False)
  loose_logs, loose = step(trust_region=True, max_kl=1e9)
  tight_logs, _ = step(trust_region=True, max_kl=1e-6)
  assert loose_logs['trust_region_active'] == 0.0
  assert tight_logs['trust_region_active'] > 0.0
  for a, b in zip(free, loose):
    np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)
  # The gradient (the optimizer's first step is about its sign alone, so compare the
  # gradient's norm before clipping): the projection removed part of it.
  assert loose_logs['grad_norm'] == pytest.approx(free_logs['grad_norm'], rel=1e-5)
  assert tight_logs['grad_norm'] != pytest.approx(free_logs['grad_norm'], rel=1e-3)


def test_checkpoint_holds_both_networks_and_the_optimizer():
  agent = _agent()
  items = agent.checkpoint_items()
  assert {'model', 'average_model', 'optimizer'} <= set(items)
  assert items['average_model'] is not items['model']


def test_replay_schedule_comes_from_the_config():
  schedule = _agent(replay_ratio=2.5, replay_capacity_unrolls=300,
                    replay_start_unrolls=50).replay_schedule
  assert schedule == (2.5, 300, 50)


def test_continuous_actions_are_refused():
  box = spec_lib.EnvSpec((3,), 'float32', action_shape=(1,), action_low=(-2.0,),
                         action_high=(2.0,))
  with pytest.raises(ValueError, match=r'ACERAgent \(--agent=acer\) needs discrete actions, '
                     r'got .*; for continuous actions use --agent=acer_continuous'):
    agent_lib.ACERAgent(box, config_lib.ACERConfig())


@pytest.mark.parametrize('field,value,accepted', [
    ('importance_clip', 0.0, 'a number > 0'),
    ('max_kl', -1.0, 'a number > 0'),
    ('average_decay', 1.0, r'a number in \(0, 1\)'),
    ('average_decay', 0.0, r'a number in \(0, 1\)'),
    ('replay_ratio', -0.5, 'a number >= 0'),
    ('retrace_lambda', 1.5, r'a number in \[0, 1\]'),
    ('replay_capacity_unrolls', 10, 'an int >= batch_unrolls'),
])
def test_bad_config_names_the_field_and_the_range(field, value, accepted):
  with pytest.raises(ValueError, match=rf'ACERConfig\.{field} = {value!r}; accepted: {accepted}'):
    config_lib.ACERConfig(**{field: value})
