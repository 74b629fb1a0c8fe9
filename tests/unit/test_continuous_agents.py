"""PPO, SAC and DDPG: configs, inference, targets, fused updates, checkpoints."""
import re

import gin
import numpy as np
import pytest
import tensorflow as tf

from seed import types
from seed.agents.common import continuous
from seed.agents.common import offpolicy
from seed.agents.ddpg.agent import DDPGAgent
from seed.agents.ddpg.config import DDPGConfig
from seed.agents.ppo.agent import PPOAgent
from seed.agents.ppo.config import PPOConfig
from seed.agents.sac.agent import SACAgent
from seed.agents.sac.config import SACConfig
from seed.envs import spec as spec_lib
from seed.losses import gae as gae_lib
from seed.losses import sac as sac_lib
from tests import agent_inputs

# Pendulum-like: 3 observations, one action in [-2, 2]; and a 2-d box with uneven bounds.
PENDULUM = spec_lib.EnvSpec((3,), 'float32', action_shape=(1,), action_dtype='float32',
                            action_low=(-2.0,), action_high=(2.0,))
UNEVEN = spec_lib.EnvSpec((4,), 'float32', action_shape=(2,), action_dtype='float32',
                          action_low=(-1.0, 0.0), action_high=(1.0, 0.5))
SMALL = dict(hidden_sizes=(16, 16))


def _acting(evaluation):
  """ActingParams for a batch: no epsilon, `evaluation` per row."""
  evaluation = np.asarray(evaluation, bool)
  return types.ActingParams(epsilon=np.zeros(evaluation.shape, np.float32),
                            evaluation=evaluation)


def _inputs(spec, size, rng, evaluation=None):
  """(observation, reward, done, core_state, acting) for `inference`."""
  observation = rng.normal(size=(size,) + spec.observation_shape).astype(np.float32)
  evaluation = np.zeros(size, bool) if evaluation is None else evaluation
  return observation, np.zeros(size, np.float32), np.zeros(size, bool), (), _acting(evaluation)


def _make(agent_class, spec=PENDULUM, **fields):
  """The agent with `fields`; a replay agent's train step in graph mode unless a test
  asks for XLA: test_an_xla_train_step_computes_what_graph_mode_does shows both compute
  the same, and compiling each of these tests' agents with XLA costs seconds apiece
  (resets are outside the compiled updates)."""
  if issubclass(agent_class, offpolicy.OffPolicyAgent):
    fields.setdefault('xla_train_step', False)
  return agent_class(spec, agent_class.config_class(**fields))


def _ppo(**overrides):
  fields = dict(unroll_length=4, batch_unrolls=3, epochs=2, num_minibatches=2, **SMALL)
  fields.update(overrides)
  return _make(PPOAgent, **fields)


def _sample(rows, steps):
  """A Sample of `steps` (Steps [rows, T + 1, ...]) from a feed-forward agent's unrolls."""
  return types.Sample(
      ids=np.arange(rows, dtype=np.int64),
      data=types.Unroll(steps=steps, core_state=(), env_id=np.arange(rows, dtype=np.int64)),
      weights=np.ones(rows, np.float32))


def _ppo_sample(agent, rng):
  b, t = agent.batch_unrolls, agent.unroll_length + 1
  observation = rng.normal(size=(b, t, 3)).astype(np.float32)
  steps = types.Steps(
      observation=observation, reward=rng.normal(size=(b, t)).astype(np.float32),
      terminated=np.zeros((b, t), bool), truncated=np.zeros((b, t), bool),
      action=rng.uniform(-2, 2, size=(b, t, 1)).astype(np.float32),
      policy_outputs={'raw_action': rng.normal(size=(b, t, 1)).astype(np.float32),
                      'log_prob': rng.normal(size=(b, t)).astype(np.float32) - 1.0,
                      'policy_input': observation.copy()})
  return _sample(b, steps)


def _replay_sample(agent, spec, rng):
  b, t = agent.batch_unrolls, agent.unroll_length + 1
  low, high = np.array(spec.action_low), np.array(spec.action_high)
  steps = types.Steps(
      observation=rng.normal(size=(b, t) + spec.observation_shape).astype(np.float32),
      reward=rng.normal(size=(b, t)).astype(np.float32),
      terminated=rng.random((b, t)) < 0.1, truncated=rng.random((b, t)) < 0.1,
      action=rng.uniform(low, high, size=(b, t) + spec.action_shape).astype(np.float32),
      policy_outputs={})
  return _sample(b, steps)


def _one_seed(steps):
  """Steps [B, ...] as the seed axis has them: [1, B, ...]."""
  return tf.nest.map_structure(lambda x: x[tf.newaxis], steps)


def _steps(observation, reward, terminated, truncated, action):
  """Steps of tensors, as a compiled train step sees them."""
  return types.Steps(observation, reward, terminated, truncated, action, policy_outputs={})


def test_action_bounds_map_the_unit_box_onto_the_envs_box():
  bounds = continuous.ActionBounds(UNEVEN)
  unit = np.array([[-1.0, -1.0], [1.0, 1.0], [0.0, 0.0], [3.0, -7.0]], np.float32)
  np.testing.assert_allclose(bounds.to_env(unit), [[-1, 0], [1, 0.5], [0, 0.25], [1, 0]])
  env = np.array([[0.5, 0.125]], np.float32)
  np.testing.assert_allclose(bounds.to_env(bounds.to_unit(env)), env, rtol=1e-6)


_DISCRETE = spec_lib.EnvSpec((3,), 'float32', num_actions=2)
_UNBOUNDED = spec_lib.EnvSpec((3,), 'float32', action_shape=(1,), action_dtype='float32',
                              action_low=(-np.inf,), action_high=(np.inf,))
_FRAMES = spec_lib.EnvSpec((4, 84, 84), 'uint8', action_shape=(1,), action_dtype='float32',
                           action_low=(-1.0,), action_high=(1.0,))


# PPO acts in discrete envs too (tests/unit/test_ppo_discrete.py); SAC and DDPG do not.
@pytest.mark.parametrize('agent_class, spec, match', [
    (SACAgent, _DISCRETE, 'continuous'), (DDPGAgent, _DISCRETE, 'continuous')] + [
        (agent_class, spec, match) for agent_class in (PPOAgent, SACAgent, DDPGAgent)
        for spec, match in ((_UNBOUNDED, 'finite action bounds'),
                            (_FRAMES, r'vector \(or matrix'))])
def test_agents_refuse_specs_they_cannot_act_in(agent_class, spec, match):
  with pytest.raises(ValueError, match=match):
    agent_class(spec)


@pytest.mark.parametrize('config_class, overrides, accepted', [
    (PPOConfig, dict(num_minibatches=5), 'a divisor of batch_unrolls * unroll_length = 2048'),
    (PPOConfig, dict(clip=1.5), 'a number in (0, 1)'),
    (PPOConfig, dict(discount=0.0), 'a number in (0, 1]'),
    (PPOConfig, dict(batch_unrolls=0), 'an int >= 1'),
    (PPOConfig, dict(learning_rate=-1e-3), 'a number > 0'),
    (SACConfig, dict(n_steps=0), 'an int >= 1'),
    (SACConfig, dict(n_steps=1.5), 'an int >= 1'),
    (SACConfig, dict(minibatch_transitions=0), 'an int >= 1'),
    (SACConfig, dict(tau=0.0), 'a number in (0, 1]'),
    (SACConfig, dict(discount=1.5), 'a number in [0, 1]'),
    (SACConfig, dict(initial_alpha=0.0), 'a number > 0'),
    (DDPGConfig, dict(exploration_noise=-0.1), 'a number >= 0'),
    (DDPGConfig, dict(hidden_sizes=()), 'a sequence of layer widths >= 1'),
    (DDPGConfig, dict(seed=-1), 'an int >= 0'),
    (DDPGConfig, dict(xla_train_step='yes'), 'True or False'),
])
def test_a_bad_config_value_fails_naming_class_field_value_and_range(config_class, overrides,
                                                                     accepted):
  (field, value), = overrides.items()
  want = f'{config_class.__name__}.{field} = {value!r}; accepted: {accepted}'
  with pytest.raises(ValueError, match=re.escape(want)):
    config_class(**overrides)


@pytest.mark.parametrize('agent_class', [PPOAgent, SACAgent, DDPGAgent])
def test_gin_binds_the_config_and_a_bad_bound_value_fails_at_construction(agent_class):
  name = agent_class.config_class.__name__
  try:
    gin.parse_config(f'{name}.seed = 3\n{name}.hidden_sizes = [8]')
    agent = agent_class(PENDULUM)
    assert agent.config == agent_class.config_class(seed=3, hidden_sizes=(8,))
    assert agent.config.hidden_sizes == (8,)  # Stored as a tuple whatever gin gave.
    gin.parse_config(f'{name}.discount = 2.0')
    with pytest.raises(ValueError, match=re.escape(f'{name}.discount = 2.0; accepted')):
      agent_class(PENDULUM)
  finally:
    gin.clear_config()
  assert agent_class(PENDULUM).config == agent_class.config_class()


def test_off_policy_sizes_are_named_for_what_they_count():
  agent = _make(SACAgent, n_steps=3, minibatch_transitions=4, updates_per_step=5, **SMALL)
  assert agent.batch_transitions == agent.batch_unrolls == 20
  assert agent.samples_per_insert == 20.0
  assert agent.unroll_length == 3 and agent.unroll_overlap == 2
  assert agent.input_kind == 'replay' and agent.trained_outputs == ()
  ppo = _ppo()
  assert ppo.batch_unrolls == 3 and ppo.samples_per_insert is None
  assert ppo.config.batch_transitions == 12 and ppo.config.minibatch_transitions == 6
  assert ppo.trained_outputs == ('raw_action', 'log_prob', 'policy_input')


@pytest.mark.parametrize('agent_class, fields', [
    (PPOAgent, dict(initial_log_std=-1.0)), (SACAgent, {}), (DDPGAgent, {})])
def test_evaluation_comes_from_acting_params_and_the_core_state_is_empty(agent_class, fields):
  agent = _make(agent_class, **SMALL, **fields)
  assert agent.initial_core_state(4) == ()
  params = agent.acting_params(7, evaluation=True)
  assert params.evaluation and params.epsilon == 0.0
  assert not agent.acting_params(7, evaluation=False).evaluation
  observation = np.random.default_rng(10).normal(size=(1, 3)).astype(np.float32).repeat(8, 0)
  args = (observation, np.zeros(8, np.float32), np.zeros(8, bool), ())
  evaluation = [True] * 4 + [False] * 4
  action, _, core_state = agent.inference(*args, _acting(evaluation))
  action = action.numpy()
  assert core_state == ()
  # On one observation the evaluation rows act alike (deterministically); the others sample.
  np.testing.assert_allclose(action[:4], action[:1].repeat(4, 0), rtol=1e-6)
  assert len(np.unique(action[4:])) == 4
  flipped = agent.inference(*args, _acting(evaluation[::-1]))[0].numpy()
  np.testing.assert_allclose(flipped[4:], action[:4], rtol=1e-6)
  assert len(np.unique(flipped[:4])) == 4


def test_ppo_inference_samples_inside_the_box_and_evaluation_acts_with_the_mean():
  agent = _ppo(initial_log_std=1.0)
  rng = np.random.default_rng(0)
  observation, reward, done, core_state, acting = _inputs(PENDULUM, 64, rng)
  action, outputs, new_state = agent.inference(observation, reward, done, core_state, acting)
  action = action.numpy()
  assert core_state == () and new_state == ()  # Feed-forward.
  assert action.dtype == np.float32 and action.shape == (64, 1)
  assert np.all(np.abs(action) <= 2.0) and np.any(np.abs(action) == 2.0)  # Clipped to the box.
  raw = outputs['raw_action'].numpy()
  np.testing.assert_allclose(action, 2.0 * np.clip(raw, -1, 1), rtol=1e-6)
  mean, log_std = agent.network.policy(agent._inputs(observation))
  want = -0.5 * ((raw - mean) / np.exp(log_std)) ** 2 - log_std - 0.5 * np.log(2 * np.pi)
  np.testing.assert_allclose(outputs['log_prob'], want.numpy().sum(-1), rtol=1e-5)

  # What the policy saw is stored, for training to reuse whatever the stats do next.
  np.testing.assert_allclose(outputs['policy_input'], agent._inputs(observation), rtol=1e-6)

  action, outputs, _ = agent.inference(observation, reward, done, (), _acting([True] * 64))
  np.testing.assert_allclose(outputs["raw_action"], mean, rtol=1e-6, atol=1e-9)


def test_ppo_truncated_transition_has_zero_advantage_and_leaves_the_losses():
  agent = _ppo(normalize_observations=False)
  rng = np.random.default_rng(1)
  steps = _ppo_sample(agent, rng).data.steps
  steps.truncated[1, 2] = True  # Transition 1 -> 2 of unroll 1 hit the time limit.
  x, advantages, returns, valid, values = agent._advantages(
      tf.nest.map_structure(tf.constant, steps))
  t = agent.unroll_length
  index = 1 * t + 1  # Batch-major: unroll 1, transition 1.
  assert valid.numpy()[index] == 0.0 and valid.numpy().sum() == agent.batch_unrolls * t - 1
  assert advantages.numpy()[index] == pytest.approx(0.0, abs=1e-6)
  assert returns.numpy()[index] == pytest.approx(values.numpy()[1, 1], abs=1e-6)
  # Transition 0 of that unroll bootstraps from V(x_1), its trace cut at the truncation.
  r = steps.reward[1, 1]
  want = r + 0.99 * values.numpy()[1, 1] - values.numpy()[1, 0]
  assert advantages.numpy()[1 * t] == pytest.approx(want, rel=1e-5)
  # The other unrolls get plain GAE.
  plain = gae_lib.generalized_advantage_estimation(
      steps.reward[0, 1:, None], values.numpy()[0, :-1, None], values.numpy()[0, -1:],
      0.99 * np.ones((t, 1), np.float32), None, None, lambda_=0.95)
  np.testing.assert_allclose(advantages.numpy()[:t], plain.advantages.numpy()[:, 0], rtol=1e-5)


def test_ppo_train_step_updates_and_normalises_with_running_stats():
  agent = _ppo()
  rng = np.random.default_rng(2)
  sample = _ppo_sample(agent, rng)
  steps = sample.data.steps
  steps.observation[:] = steps.observation * 5.0 + 3.0  # Raw; the stats learn from these.
  before = [w.numpy().copy() for w in agent.network.weights]
  result = agent.train_step(sample)
  logs = result.logs
  assert result.priorities is None
  assert all(np.isfinite(v) for v in logs.values())
  assert int(agent.optimizer.iterations) == 2 * 2  # epochs x minibatches
  assert any(not np.array_equal(b, w.numpy()) for b, w in zip(before, agent.network.weights))
  observed = steps.observation[:, :-1].reshape(-1, 3)
  assert logs['observation_count'] == len(observed)
  np.testing.assert_allclose(agent.normalizer.mean.numpy(), observed.mean(0), rtol=1e-6)
  np.testing.assert_allclose(agent.normalizer.var.numpy(), observed.var(0), rtol=1e-6)
  normalised = agent._inputs(observed).numpy()
  np.testing.assert_allclose(normalised.mean(0), 0.0, atol=1e-5)


def test_ppo_checkpoint_restores_the_observation_statistics(tmp_path):
  trained = _ppo(seed=1)
  trained.train_step(_ppo_sample(trained, np.random.default_rng(3)))
  path = tf.train.Checkpoint(**trained.checkpoint_items()).write(str(tmp_path / 'ckpt'))
  restored = _ppo(seed=2)
  restored.warm_up([1])
  tf.train.Checkpoint(**restored.checkpoint_items()).read(path).assert_consumed()
  restored.on_restored()
  np.testing.assert_array_equal(restored.normalizer.mean.numpy(), trained.normalizer.mean.numpy())
  sample = _ppo_sample(trained, np.random.default_rng(4))
  # Same weights, moments, statistics and shuffling stream: the same update.
  assert restored.train_step(sample).logs == pytest.approx(trained.train_step(sample).logs,
                                                           rel=1e-5)
  # The float64 statistics carried on from the restored values, not from zero.
  np.testing.assert_allclose(restored.normalizer.mean.numpy(), trained.normalizer.mean.numpy())
  assert restored.normalizer.count.numpy() == trained.normalizer.count.numpy()


@pytest.mark.parametrize('agent_class', [SACAgent, DDPGAgent])
def test_replay_agents_act_uniformly_until_their_first_update(agent_class):
  agent = _make(agent_class, UNEVEN, minibatch_transitions=4, updates_per_step=3, **SMALL)
  rng = np.random.default_rng(5)
  evaluation = [False] * 255 + [True]
  observation, reward, done, state, acting = _inputs(UNEVEN, 256, rng, evaluation)
  action = agent.inference(observation, reward, done, state, acting)[0].numpy()
  assert action.shape == (256, 2) and action.dtype == np.float32
  assert np.all(action >= [-1.0, 0.0]) and np.all(action <= [1.0, 0.5])
  explored = action[:255]
  # Uniform over the box: the spread covers it, the mean sits in its middle.
  assert explored.min(0) == pytest.approx([-1.0, 0.0], abs=0.05)
  assert explored.max(0) == pytest.approx([1.0, 0.5], abs=0.05)
  np.testing.assert_allclose(explored.mean(0), [0.0, 0.25], atol=0.1)

  assert agent.samples_per_insert == 12 and agent.batch_unrolls == 12
  result = agent.train_step(_replay_sample(agent, UNEVEN, rng))
  logs = result.logs
  assert result.priorities is None
  assert agent.updates == 3 and logs['updates'] == 3.0  # All three in one call.
  assert all(np.isfinite(v) for v in logs.values())
  after = agent.inference(observation, reward, done, state, acting)[0].numpy()
  deterministic = agent.inference(observation[-1:].repeat(2, 0), reward[:2], done[:2], (),
                                  _acting([True, True]))[0].numpy()
  np.testing.assert_array_equal(deterministic[0], deterministic[1])
  np.testing.assert_allclose(after[-1], deterministic[0], rtol=1e-6)


def test_one_step_targets_are_sacs_soft_targets_and_truncation_is_invalid():
  spec = UNEVEN
  steps = _steps(observation=tf.zeros([3, 2, 4]),
                 reward=tf.constant([[0, 1.0], [0, 2.0], [0, 3.0]]),
                 terminated=tf.constant([[False, False], [False, True], [False, False]]),
                 truncated=tf.constant([[False, False], [False, False], [False, True]]),
                 action=tf.zeros([3, 2, 2]))
  transitions = offpolicy.Transitions(_one_seed(steps), continuous.ActionBounds(spec), 4)
  next_q1, next_q2 = tf.constant([5.0, 6.0, 7.0]), tf.constant([4.0, 8.0, 9.0])
  next_log_prob = tf.constant([-1.0, 0.5, 0.0])
  values = sac_lib.soft_state_value(next_q1, next_q2, next_log_prob, 0.2)
  targets, valid = (x[0] for x in transitions.targets(values[tf.newaxis], 0.9))
  discounts = 0.9 * np.array([1.0, 0.0, 1.0])
  want = sac_lib.soft_q_target([1.0, 2.0, 3.0], discounts, next_q1, next_q2, next_log_prob, 0.2)
  np.testing.assert_allclose(targets.numpy()[:2], want.numpy()[:2], rtol=1e-6)
  np.testing.assert_array_equal(valid.numpy(), [1.0, 1.0, 0.0])  # Unknown final state.


def test_n_step_targets_sum_discounted_rewards_then_bootstrap():
  steps = _steps(observation=tf.zeros([1, 4, 4]), reward=tf.constant([[0, 1.0, 2.0, 3.0]]),
                 terminated=tf.zeros([1, 4], tf.bool), truncated=tf.zeros([1, 4], tf.bool),
                 action=tf.zeros([1, 4, 2]))
  transitions = offpolicy.Transitions(_one_seed(steps), continuous.ActionBounds(UNEVEN), 4)
  targets, valid = (x[0] for x in transitions.targets(tf.constant([[30.0]]), 0.5))  # V(x_3).
  assert targets.numpy()[0] == pytest.approx(1 + 0.5 * 2 + 0.25 * 3 + 0.125 * 30)
  assert valid.numpy()[0] == 1.0


def test_sac_targets_start_equal_and_follow_by_polyak():
  agent = _make(SACAgent, minibatch_transitions=8, updates_per_step=1, tau=0.5, **SMALL)
  for online, target in zip(agent._critic_variables(), agent._target_variables()):
    np.testing.assert_array_equal(online.numpy(), target.numpy())
  before = [v.numpy().copy() for v in agent._target_variables()]
  agent.train_step(_replay_sample(agent, PENDULUM, np.random.default_rng(6)))
  for old, online, target in zip(before, agent._critic_variables(), agent._target_variables()):
    np.testing.assert_allclose(target.numpy(), 0.5 * old + 0.5 * online.numpy(), rtol=1e-5,
                               atol=1e-7)


@pytest.mark.parametrize('agent_class', [SACAgent, DDPGAgent])
def test_replay_agent_checkpoint_round_trip_continues_identically(agent_class, tmp_path):
  def make(seed):
    return _make(agent_class, minibatch_transitions=8, updates_per_step=2, n_steps=2, seed=seed,
                 **SMALL)

  trained = make(1)
  rng = np.random.default_rng(7)
  trained.train_step(_replay_sample(trained, PENDULUM, rng))
  path = tf.train.Checkpoint(**trained.checkpoint_items()).write(str(tmp_path / 'ckpt'))
  restored = make(2)
  restored.warm_up([1])
  tf.train.Checkpoint(**restored.checkpoint_items()).read(path).assert_consumed()
  restored.on_restored()
  assert restored.updates == 2
  for name, item in trained.checkpoint_items().items():
    if hasattr(item, 'weights'):
      for want, got in zip(item.weights, restored.checkpoint_items()[name].weights):
        np.testing.assert_array_equal(got.numpy(), want.numpy())
  # Weights, optimizer moments, counters and the random streams all came back, so
  # both act and train identically from here.
  observation = np.ones((2, 3), np.float32)
  args = (observation, np.zeros(2, np.float32), np.zeros(2, bool), (), _acting([False, False]))
  np.testing.assert_allclose(restored.inference(*args)[0], trained.inference(*args)[0],
                             rtol=1e-6)
  sample = _replay_sample(trained, PENDULUM, rng)
  assert restored.train_step(sample).logs == pytest.approx(trained.train_step(sample).logs,
                                                           rel=1e-5)


@pytest.mark.parametrize('agent_class', [SACAgent, DDPGAgent])
def test_an_xla_train_step_computes_what_graph_mode_does(agent_class):
  # XLA draws other random numbers than graph mode from one generator state; SAC's
  # are drawn outside the compiled updates, so both modes train on the same ones.
  def make(xla):
    return _make(agent_class, minibatch_transitions=8, updates_per_step=3, n_steps=2,
                 num_seeds=2, xla_train_step=xla, **SMALL)

  compiled, graph = make(True), make(False)
  for step in range(3):
    sample = agent_inputs.random_transition_sample(compiled, PENDULUM,
                                                   np.random.default_rng(step))
    assert compiled.train_step(sample).logs == pytest.approx(graph.train_step(sample).logs,
                                                             rel=1e-5, abs=1e-6), step
  for want, got in zip(graph.actor.weights, compiled.actor.weights):
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-6)


def test_replay_train_step_rejects_a_malformed_sample():
  agent = _make(SACAgent, minibatch_transitions=4, **SMALL)
  sample = _replay_sample(agent, PENDULUM, np.random.default_rng(8))
  steps = sample.data.steps
  short = sample._replace(data=sample.data._replace(
      steps=steps._replace(observation=steps.observation[:, :1])))
  with pytest.raises(ValueError, match=re.escape(
      'sample observation has shape (4, 1, 3), expected leading dims '
      '[num_seeds * batch_transitions (seed by seed), n_steps + 1] = [4, 2]')):
    agent.train_step(short)
  with pytest.raises(ValueError, match='train_step takes a seed.types.Sample, got dict'):
    agent.train_step({'reward': steps.reward})


def test_ppo_train_step_rejects_a_sample_without_its_policy_outputs():
  agent = _ppo()
  sample = _ppo_sample(agent, np.random.default_rng(9))
  outputs = dict(sample.data.steps.policy_outputs)
  del outputs['log_prob']
  sample = sample._replace(data=sample.data._replace(
      steps=sample.data.steps._replace(policy_outputs=outputs)))
  with pytest.raises(ValueError, match=re.escape("sample lacks the policy outputs ['log_prob']")):
    agent.train_step(sample)


def test_the_shards_masked_means_average_to_the_batchs():
  # Two seeds, a batch of 4 split into 2 shards whose valid counts differ (3 and 1 for
  # seed 0): each shard divides by the whole batch's count, so their mean is the
  # batch's masked mean; by hand, seed 0: (1 + 2 + 4) / 3, seed 1: (6 + 8) / 2.
  values = np.array([[1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0]], np.float32)
  mask = np.array([[1, 1, 0, 1], [0, 1, 0, 1]], np.float32)
  whole = offpolicy.masked_mean(values, mask)
  assert float(whole) == pytest.approx(((1 + 2 + 4) / 3 + (6 + 8) / 2) / 2)
  counts = mask.sum(-1)
  shards = [offpolicy.masked_mean_of_shard(values[:, k:k + 2], mask[:, k:k + 2], counts, 2)
            for k in (0, 2)]
  assert float(sum(shards)) / 2 == pytest.approx(float(whole))
  # A shard's own count would weigh its items apart: not the batch's mean.
  own = [offpolicy.masked_mean(values[:, k:k + 2], mask[:, k:k + 2]) for k in (0, 2)]
  assert float(sum(own)) / 2 != pytest.approx(float(whole))
