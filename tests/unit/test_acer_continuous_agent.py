"""Tests of the continuous ACER agent: acting, a train step, the average network, the
trust region switch, the SDN's baseline, checkpoints and bad input."""
import numpy as np
import pytest

tf = pytest.importorskip('tensorflow')

from seed import types  # pylint: disable=g-import-not-at-top
from seed.agents.acer import config as config_lib  # pylint: disable=g-import-not-at-top
from seed.agents.acer import agent as continuous  # pylint: disable=g-import-not-at-top
from seed.envs import spec as spec_lib  # pylint: disable=g-import-not-at-top
from tests.agent_inputs import acting_params, infer  # pylint: disable=g-import-not-at-top

PENDULUM = spec_lib.EnvSpec((3,), 'float32', action_shape=(1,), action_low=(-2.0,),
                            action_high=(2.0,))
BOX2 = spec_lib.EnvSpec((5,), 'float32', action_shape=(2,), action_low=(-1.0, -1.0),
                        action_high=(1.0, 1.0))
SMALL = dict(unroll_length=5, batch_unrolls=4, hidden_sizes=(16,))


def _agent(spec=BOX2, **fields):
  return continuous.ACERContinuousAgent(spec, config_lib.ACERContinuousConfig(
      **dict(SMALL, **fields)))


def _values(variables):
  return [np.array(v) for v in variables]


def _sample(agent, spec, rng, behaviour_mean=None, done_probability=0.2):
  """A [B, T + 1] sample: random observations and steps, actions sampled around
  `behaviour_mean` (default: random means) with the policy's std."""
  batch, steps = agent.batch_unrolls, agent.unroll_length + 1
  size = spec.action_shape[0]
  observation = rng.normal(size=(batch, steps) + spec.observation_shape).astype(np.float32)
  if behaviour_mean is None:
    behaviour_mean = rng.normal(0, 0.3, (batch, steps, size)).astype(np.float32)
  raw_action = (behaviour_mean + agent.config.policy_std
                * rng.normal(size=behaviour_mean.shape)).astype(np.float32)
  terminated = rng.random((batch, steps)) < done_probability / 2
  truncated = ~terminated & (rng.random((batch, steps)) < done_probability / 2)
  data = types.Unroll(types.Steps(
      observation, rng.normal(size=(batch, steps)).astype(np.float32), terminated, truncated,
      np.clip(raw_action, -1, 1), policy_outputs={'mean': behaviour_mean,
                                                  'raw_action': raw_action}), (),
      env_id=np.arange(batch, dtype=np.int64))
  return types.Sample(ids=np.arange(batch, dtype=np.int64), data=data,
                      weights=np.ones(batch, np.float32))


def test_inference_samples_around_the_mean_and_evaluation_takes_it():
  agent = _agent(PENDULUM, policy_std=0.5)
  observation = np.random.default_rng(0).normal(size=(256, 3)).astype(np.float32)
  action, outputs, state = infer(agent, observation, [False] * 256, ())
  assert state == () and set(outputs) == {'mean', 'raw_action'}
  assert action.shape == (256, 1)
  assert np.all(np.abs(action.numpy()) <= 2.0)
  noise = outputs['raw_action'].numpy() - outputs['mean'].numpy()
  assert np.std(noise) == pytest.approx(0.5, rel=0.15)
  # The env gets the unit-space sample mapped onto [-2, 2] (clipped).
  np.testing.assert_allclose(action.numpy(), 2 * np.clip(outputs['raw_action'].numpy(), -1, 1),
                             atol=1e-6)
  greedy, outputs, _ = agent.inference(observation, np.zeros(256, np.float32),
                                       np.zeros(256, bool), (), acting_params(256, evaluation=True))
  np.testing.assert_allclose(outputs['raw_action'].numpy(), outputs['mean'].numpy())
  # Orthogonal init with output gain 0.01: the first means sit near the box's middle.
  assert np.max(np.abs(outputs['mean'].numpy())) < 0.2


@pytest.mark.parametrize('fields', [{}, dict(trust_region=False), dict(sdn_samples=1)])
def test_train_step_moves_the_network_and_the_average_by_alpha(fields):
  agent = _agent(**fields)
  before = _values(agent.network.trainable_variables)
  result = agent.train_step(_sample(agent, BOX2, np.random.default_rng(1)))
  assert result.skipped_updates == 0
  for key in ('total_loss', 'policy_loss', 'q_loss', 'value_loss', 'mean_rho',
              'kl_from_average', 'trust_region_active', 'mean_q', 'grad_norm'):
    assert np.isfinite(result.logs[key]), key
  after = _values(agent.network.trainable_variables)
  assert any(not np.allclose(a, b) for a, b in zip(before, after))
  alpha = agent.config.average_decay
  for old, new, avg in zip(before, after, _values(agent._average_network.trainable_variables)):
    np.testing.assert_allclose(avg, alpha * old + (1 - alpha) * new, rtol=1e-5, atol=1e-6)


def test_on_policy_batch_has_importance_weights_one_and_no_kl():
  agent = _agent()
  rng = np.random.default_rng(2)
  sample = _sample(agent, BOX2, rng)
  observation = sample.data.steps.observation
  mean = agent.network.policy_mean(observation.reshape(-1, 5)).numpy().reshape(
      observation.shape[:2] + (2,))
  sample = _sample(agent, BOX2, np.random.default_rng(2), behaviour_mean=mean)
  result = agent.train_step(sample)
  assert result.logs['mean_rho'] == pytest.approx(1.0, abs=1e-4)
  assert result.logs['kl_from_average'] == pytest.approx(0.0, abs=1e-8)


def test_the_sdn_baseline_averages_the_advantage_over_sampled_actions():
  # Q~(x, a) - V(x) = A(x, a) - mean_i A(x, u_i): with many samples, the mean of
  # Q~ - V over actions drawn from the policy is near 0.
  agent = _agent(sdn_samples=200)
  rng = np.random.default_rng(4)
  x = tf.constant(rng.normal(size=(3, 2, 5)).astype(np.float32))
  mean = tf.reshape(agent.network.policy_mean(tf.reshape(x, [-1, 5])), [3, 2, 2])
  values = tf.zeros([3, 2])
  draws = [agent._q_tilde(agent.network, x, mean + 0.3 * tf.random.normal([3, 2, 2], seed=i),
                          values).numpy() for i in range(200)]
  spread = np.std(draws)
  assert spread > 0
  assert abs(np.mean(draws)) < 0.2 * spread


def test_trust_region_changes_the_step_only_when_it_binds():
  sample = _sample(_agent(), BOX2, np.random.default_rng(3))
  other = _values(_agent(seed=7).network.trainable_variables)

  def step(**fields):
    agent = _agent(**fields)
    for variable, value in zip(agent._average_network.trainable_variables, other):
      variable.assign(value)
    return agent.train_step(sample).logs

  free, loose, tight = (step(trust_region=False), step(max_kl=1e9), step(max_kl=1e-6))
  assert loose['trust_region_active'] == 0.0 and tight['trust_region_active'] > 0.0
  assert loose['grad_norm'] == pytest.approx(free['grad_norm'], rel=1e-5)
  assert tight['grad_norm'] != pytest.approx(free['grad_norm'], rel=1e-3)


def test_checkpoint_holds_both_networks_the_optimizer_and_the_noise():
  items = _agent().checkpoint_items()
  assert {'model', 'average_model', 'optimizer', 'action_noise', 'train_noise'} <= set(items)


def test_discrete_actions_are_refused_naming_the_discrete_agent():
  with pytest.raises(ValueError, match=r'needs continuous actions, got .*; for discrete '
                     r'actions use --agent=acer'):
    _agent(spec_lib.EnvSpec((3,), 'float32', num_actions=2))


@pytest.mark.parametrize('field,value,accepted', [
    ('policy_std', 0.0, 'a number > 0'),
    ('sdn_samples', 0, 'an int >= 1'),
    ('value_cost', -1.0, 'a number >= 0'),
    ('max_kl', 0.0, 'a number > 0'),
    ('average_decay', 1.5, r'a number in \(0, 1\)'),
    ('replay_ratio', -1.0, 'a number >= 0'),
])
def test_bad_config_names_the_field_and_the_range(field, value, accepted):
  with pytest.raises(ValueError,
                     match=rf'ACERContinuousConfig\.{field} = {value!r}; accepted: {accepted}'):
    config_lib.ACERContinuousConfig(**{field: value})
