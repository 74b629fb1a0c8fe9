"""Tests of the Reactor agent: acting, a train step with priorities, importance
weights, the return-distribution head, checkpoints and bad input."""
import numpy as np
import pytest

tf = pytest.importorskip('tensorflow')

from seed.agents.reactor import agent as agent_lib  # pylint: disable=g-import-not-at-top
from seed.agents.reactor import config as config_lib  # pylint: disable=g-import-not-at-top
from seed.envs import spec as spec_lib  # pylint: disable=g-import-not-at-top
from tests.agent_inputs import (  # pylint: disable=g-import-not-at-top
    infer, random_logits_sample, random_observations)

CATCH = spec_lib.EnvSpec((10, 5), 'float32', num_actions=3)
ATARI = spec_lib.EnvSpec((4, 84, 84), 'uint8', num_actions=6, frames_per_step=4)
SMALL = dict(unroll_length=5, batch_unrolls=4, mlp_hidden_sizes=(16,), lstm_size=8,
             num_atoms=11)


def _agent(spec=CATCH, **fields):
  return agent_lib.ReactorAgent(spec, config_lib.ReactorConfig(**dict(SMALL, **fields)))


def _values(variables):
  return [np.array(v) for v in variables]


@pytest.mark.parametrize('spec,fields', [(CATCH, {}), (CATCH, dict(use_lstm=False)),
                                         (ATARI, dict(torso='nature', use_lstm=False))])
def test_inference_samples_valid_actions_and_the_head_is_a_distribution_per_action(spec, fields):
  agent = _agent(spec, **fields)
  observation = random_observations(spec, [3], np.random.default_rng(0))
  state = agent.initial_core_state(3)
  action, outputs, new_state = infer(agent, observation, [True] * 3, state)
  assert np.all((action.numpy() >= 0) & (action.numpy() < spec.num_actions))
  assert set(outputs) == {'logits'} and len(new_state) == len(state)
  _, atom_logits, _ = agent.network.step(observation, np.ones(3, bool), state)
  assert atom_logits.shape == (3, spec.num_actions, 11)
  np.testing.assert_allclose(agent.support[[0, -1]], [-10.0, 10.0])


def test_train_step_returns_finite_logs_and_a_priority_per_sequence():
  agent = _agent()
  before = _values(agent.network.trainable_variables)
  result = agent.train_step(random_logits_sample(agent, CATCH, np.random.default_rng(1)))
  assert result.skipped_updates == 0
  for key in ('total_loss', 'policy_loss', 'q_loss', 'entropy', 'mean_rho', 'mean_beta',
              'mean_q', 'mean_return', 'grad_norm'):
    assert np.isfinite(result.logs[key]), key
  assert result.priorities.shape == (4,) and np.all(result.priorities >= 0)
  assert any(not np.allclose(a, b)
             for a, b in zip(before, _values(agent.network.trainable_variables)))


def test_zero_importance_weights_train_nothing():
  agent = _agent()
  sample = random_logits_sample(agent, CATCH, np.random.default_rng(2))
  sample = sample._replace(weights=np.zeros(4, np.float32))
  before = _values(agent.network.trainable_variables)
  result = agent.train_step(sample)
  assert result.logs['grad_norm'] == 0.0
  for a, b in zip(before, _values(agent.network.trainable_variables)):
    np.testing.assert_array_equal(a, b)


def test_beta_follows_the_clip():
  sample = random_logits_sample(_agent(), CATCH, np.random.default_rng(3))
  assert _agent(beta_clip=1.0).train_step(sample).logs['mean_beta'] == pytest.approx(1.0)
  # Behaviour probabilities of 3 random-logit actions: 1 / mu > 1, so a large clip
  # gives a mean beta above 1.
  assert _agent(beta_clip=1e6).train_step(sample).logs['mean_beta'] > 1.5


def test_checkpoint_holds_the_network_optimizer_and_sampler():
  assert {'model', 'optimizer', 'sampler'} <= set(_agent().checkpoint_items())


def test_a_target_network_starts_as_the_online_one_and_is_copied_every_period():
  agent = _agent(target_update_period=2)
  assert 'target_model' in agent.checkpoint_items()
  online, target = agent.network, agent._target_network  # pylint: disable=protected-access
  for a, b in zip(_values(online.weights), _values(target.weights)):
    np.testing.assert_array_equal(a, b)
  rng = np.random.default_rng(4)
  first = agent.train_step(random_logits_sample(agent, CATCH, rng))
  assert first.logs['target_updated'] == 0.0
  assert any(not np.allclose(a, b) for a, b in zip(_values(online.weights),
                                                   _values(target.weights)))
  second = agent.train_step(random_logits_sample(agent, CATCH, rng))
  assert second.logs['target_updated'] == 1.0  # the optimizer's 2nd applied step
  for a, b in zip(_values(online.weights), _values(target.weights)):
    np.testing.assert_array_equal(a, b)
  assert 'target_updated' not in _agent().train_step(
      random_logits_sample(_agent(), CATCH, rng)).logs


def test_the_retrace_targets_bootstrap_from_the_target_network():
  sample = random_logits_sample(_agent(), CATCH, np.random.default_rng(5))
  without, with_target = _agent(), _agent(target_update_period=1000)
  # Equal networks: the same numbers either way.
  a, b = without.train_step(sample).logs, with_target.train_step(sample).logs
  for key in ('q_loss', 'mean_q', 'mean_return', 'policy_loss'):
    assert a[key] == pytest.approx(b[key], rel=1e-5), key
  # A target network whose return distributions are uniform over the atoms (mean 0):
  # the online Q values are the same, the Retrace returns move.
  agent = _agent(target_update_period=1000)
  target = agent._target_network  # pylint: disable=protected-access
  for variable in target.weights:
    if 'q_values' in variable.path:
      variable.assign(tf.zeros_like(variable))
  moved = agent.train_step(sample).logs
  assert moved['mean_q'] == pytest.approx(a['mean_q'], rel=1e-5)
  assert abs(moved['mean_return'] - a['mean_return']) > 1e-3


def test_continuous_actions_are_refused():
  box = spec_lib.EnvSpec((3,), 'float32', action_shape=(1,), action_low=(-2.0,),
                         action_high=(2.0,))
  with pytest.raises(ValueError, match=r'ReactorAgent \(--agent=reactor\) needs discrete'):
    agent_lib.ReactorAgent(box, config_lib.ReactorConfig())


@pytest.mark.parametrize('field,value,accepted', [
    ('num_atoms', 1, 'an int >= 2'),
    ('beta_clip', 0.0, 'a number > 0'),
    ('v_max', -20.0, r'a number > v_min \(-10.0\)'),
    ('retrace_lambda', 2.0, r'a number in \[0, 1\]'),
    ('priority_eta', -0.1, r'a number in \[0, 1\]'),
    ('target_update_period', -1, 'an int >= 0'),
])
def test_bad_config_names_the_field_and_the_range(field, value, accepted):
  with pytest.raises(ValueError, match=rf'ReactorConfig\.{field} = {value!r}; accepted: {accepted}'):
    config_lib.ReactorConfig(**{field: value})


def test_lstm_input_layer_norm_normalises_what_the_lstm_reads_and_keeps_step_equal_to_unroll():
  agent = _agent(lstm_input_layer_norm=True)
  network = agent.network
  assert network._lstm_input_norm is not None
  rng = np.random.default_rng(4)
  observations = random_observations(CATCH, [3, 2], rng)
  done = np.array([[True, True], [False, False], [False, True]])
  state = agent.initial_core_state(2)
  logits, atoms, _ = network.unroll(observations, done, state)
  for t in range(3):
    step_logits, step_atoms, state = network.step(observations[t], done[t], state)
    np.testing.assert_allclose(step_logits, logits[t], atol=1e-5)
    np.testing.assert_allclose(step_atoms, atoms[t], atol=1e-5)
  features = network._torso(tf.convert_to_tensor(observations[0]))
  normalised = network._lstm_input_norm(features * 100.0).numpy()
  np.testing.assert_allclose(normalised.mean(-1), 0.0, atol=1e-4)
  np.testing.assert_allclose(normalised.std(-1), 1.0, atol=1e-2)
  # The other layers start from the same weights with it and without.
  plain = {v.path: np.array(v) for v in _agent().network.trainable_variables}
  normed = {v.path: np.array(v) for v in network.trainable_variables
            if 'lstm_input_norm' not in v.path}
  assert plain.keys() == normed.keys()
  for path, value in plain.items():
    np.testing.assert_array_equal(value, normed[path], err_msg=path)


def test_lstm_input_layer_norm_without_an_lstm_is_refused():
  with pytest.raises(ValueError, match='lstm_input_layer_norm'):
    config_lib.ReactorConfig(use_lstm=False, lstm_input_layer_norm=True)
