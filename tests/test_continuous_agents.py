"""PPO, SAC and DDPG: inference, targets, fused updates, checkpoints, argument checks."""
import numpy as np
import pytest
import tensorflow as tf

from seed.agents import continuous
from seed.agents import offpolicy
from seed.agents.ddpg.agent import DDPGAgent
from seed.agents.ppo.agent import PPOAgent
from seed.agents.sac.agent import SACAgent
from seed.envs import spec as spec_lib
from seed.losses import gae as gae_lib
from seed.losses import sac as sac_lib

# Pendulum-like: 3 observations, one action in [-2, 2]; and a 2-d box with uneven bounds.
PENDULUM = spec_lib.EnvSpec((3,), 'float32', action_shape=(1,), action_dtype='float32',
                            action_low=(-2.0,), action_high=(2.0,))
UNEVEN = spec_lib.EnvSpec((4,), 'float32', action_shape=(2,), action_dtype='float32',
                          action_low=(-1.0, 0.0), action_high=(1.0, 0.5))
SMALL = dict(hidden_sizes=(16, 16))


def _inputs(spec, size, rng, evaluation=None):
  observation = rng.normal(size=(size,) + spec.observation_shape).astype(np.float32)
  flags = np.zeros(size, np.float32) if evaluation is None else np.asarray(evaluation,
                                                                            np.float32)
  return observation, np.zeros(size, np.float32), np.zeros(size, bool), (flags,)


def _ppo(**overrides):
  kwargs = dict(unroll_length=4, batch_size=3, epochs=2, num_minibatches=2, **SMALL)
  kwargs.update(overrides)
  return PPOAgent(PENDULUM, **kwargs)


def _ppo_batch(agent, rng):
  b, t = agent.batch_size, agent.unroll_length + 1
  observation = rng.normal(size=(b, t, 3)).astype(np.float32)
  return {'observation': observation, 'policy_input': observation.copy(),
          'reward': rng.normal(size=(b, t)).astype(np.float32),
          'terminated': np.zeros((b, t), bool), 'truncated': np.zeros((b, t), bool),
          'action': rng.uniform(-2, 2, size=(b, t, 1)).astype(np.float32),
          'raw_action': rng.normal(size=(b, t, 1)).astype(np.float32),
          'log_prob': rng.normal(size=(b, t)).astype(np.float32) - 1.0,
          'core_state': (np.zeros(b, np.float32),)}


def _replay_batch(agent, spec, rng):
  b, t = agent.batch_size, agent.unroll_length + 1
  low, high = np.array(spec.action_low), np.array(spec.action_high)
  return {'observation': rng.normal(size=(b, t) + spec.observation_shape).astype(np.float32),
          'reward': rng.normal(size=(b, t)).astype(np.float32),
          'terminated': rng.random((b, t)) < 0.1, 'truncated': rng.random((b, t)) < 0.1,
          'action': rng.uniform(low, high, size=(b, t) + spec.action_shape).astype(np.float32),
          'core_state': (np.zeros(b, np.float32),),
          'importance_weights': np.ones(b, np.float32)}


def test_action_bounds_map_the_unit_box_onto_the_envs_box():
  bounds = continuous.ActionBounds(UNEVEN)
  unit = np.array([[-1.0, -1.0], [1.0, 1.0], [0.0, 0.0], [3.0, -7.0]], np.float32)
  np.testing.assert_allclose(bounds.to_env(unit), [[-1, 0], [1, 0.5], [0, 0.25], [1, 0]])
  env = np.array([[0.5, 0.125]], np.float32)
  np.testing.assert_allclose(bounds.to_env(bounds.to_unit(env)), env, rtol=1e-6)


@pytest.mark.parametrize('spec, match', [
    (spec_lib.EnvSpec((3,), 'float32', num_actions=2), 'continuous'),
    (spec_lib.EnvSpec((3,), 'float32', action_shape=(1,), action_dtype='float32',
                      action_low=(-np.inf,), action_high=(np.inf,)), 'finite action bounds'),
    (spec_lib.EnvSpec((4, 84, 84), 'uint8', action_shape=(1,), action_dtype='float32',
                      action_low=(-1.0,), action_high=(1.0,)), r'vector \(or matrix'),
])
@pytest.mark.parametrize('agent_class', [PPOAgent, SACAgent, DDPGAgent])
def test_agents_refuse_specs_they_cannot_act_in(agent_class, spec, match):
  with pytest.raises(ValueError, match=match):
    agent_class(spec)


@pytest.mark.parametrize('agent_class, overrides, match', [
    (PPOAgent, dict(num_minibatches=5), 'num_minibatches must divide'),
    (PPOAgent, dict(clip=1.5), r'clip must be in \(0, 1\)'),
    (PPOAgent, dict(discount=0.0), r'discount must be in \(0, 1\]'),
    (SACAgent, dict(n_steps=0), 'n_steps must be an int >= 1'),
    (SACAgent, dict(tau=0.0), r'tau must be in \(0, 1\]'),
    (SACAgent, dict(initial_alpha=0.0), 'initial_alpha must be > 0'),
    (DDPGAgent, dict(exploration_noise=-0.1), 'exploration_noise must be >= 0'),
    (DDPGAgent, dict(hidden_sizes=()), 'hidden_sizes must be one or more positive widths'),
])
def test_constructors_name_the_bad_argument(agent_class, overrides, match):
  with pytest.raises(ValueError, match=match):
    agent_class(PENDULUM, **overrides)


def test_ppo_inference_samples_inside_the_box_and_evaluation_acts_with_the_mean():
  agent = _ppo(initial_log_std=1.0)
  rng = np.random.default_rng(0)
  observation, reward, done, _ = _inputs(PENDULUM, 64, rng)
  action, outputs, _ = agent.inference(observation, reward, done, (np.zeros(64, np.float32),))
  action = action.numpy()
  assert action.dtype == np.float32 and action.shape == (64, 1)
  assert np.all(np.abs(action) <= 2.0) and np.any(np.abs(action) == 2.0)  # Clipped to the box.
  raw = outputs['raw_action'].numpy()
  np.testing.assert_allclose(action, 2.0 * np.clip(raw, -1, 1), rtol=1e-6)
  mean, log_std = agent.network.policy(agent._inputs(observation))
  want = -0.5 * ((raw - mean) / np.exp(log_std)) ** 2 - log_std - 0.5 * np.log(2 * np.pi)
  np.testing.assert_allclose(outputs['log_prob'], want.numpy().sum(-1), rtol=1e-5)

  # What the policy saw is stored, for training to reuse whatever the stats do next.
  np.testing.assert_allclose(outputs['policy_input'], agent._inputs(observation), rtol=1e-6)

  action, outputs, _ = agent.inference(observation, reward, done, (np.ones(64, np.float32),))
  np.testing.assert_allclose(outputs['raw_action'], mean, rtol=1e-6)


def test_ppo_truncated_transition_has_zero_advantage_and_leaves_the_losses():
  agent = _ppo(normalize_observations=False)
  rng = np.random.default_rng(1)
  batch = _ppo_batch(agent, rng)
  batch['truncated'][1, 2] = True  # Transition 1 -> 2 of unroll 1 hit the time limit.
  fields = {k: tf.constant(batch[k]) for k in ('policy_input', 'reward', 'terminated',
                                                'truncated', 'raw_action', 'log_prob')}
  x, advantages, returns, valid, values = agent._advantages(fields)
  t = agent.unroll_length
  index = 1 * t + 1  # Batch-major: unroll 1, transition 1.
  assert valid.numpy()[index] == 0.0 and valid.numpy().sum() == agent.batch_size * t - 1
  assert advantages.numpy()[index] == pytest.approx(0.0, abs=1e-6)
  assert returns.numpy()[index] == pytest.approx(values.numpy()[1, 1], abs=1e-6)
  # Transition 0 of that unroll bootstraps from V(x_1), its trace cut at the truncation.
  r = batch['reward'][1, 1]
  want = r + 0.99 * values.numpy()[1, 1] - values.numpy()[1, 0]
  assert advantages.numpy()[1 * t] == pytest.approx(want, rel=1e-5)
  # The other unrolls get plain GAE.
  plain = gae_lib.generalized_advantage_estimation(
      batch['reward'][0, 1:, None], values.numpy()[0, :-1, None], values.numpy()[0, -1:],
      0.99 * np.ones((t, 1), np.float32), None, None, lambda_=0.95)
  np.testing.assert_allclose(advantages.numpy()[:t], plain.advantages.numpy()[:, 0], rtol=1e-5)


def test_ppo_train_step_updates_and_normalises_with_running_stats():
  agent = _ppo()
  rng = np.random.default_rng(2)
  batch = _ppo_batch(agent, rng)
  batch['observation'] = batch['observation'] * 5.0 + 3.0  # Raw; the stats learn from these.
  before = [w.numpy().copy() for w in agent.network.weights]
  logs = agent.train_step(batch)
  assert all(np.isfinite(v) for v in logs.values())
  assert int(agent.optimizer.iterations) == 2 * 2  # epochs x minibatches
  assert any(not np.array_equal(b, w.numpy()) for b, w in zip(before, agent.network.weights))
  observed = batch['observation'][:, :-1].reshape(-1, 3)
  assert logs['observation_count'] == len(observed)
  np.testing.assert_allclose(agent.normalizer.mean.numpy(), observed.mean(0), rtol=1e-6)
  np.testing.assert_allclose(agent.normalizer.var.numpy(), observed.var(0), rtol=1e-6)
  normalised = agent._inputs(observed).numpy()
  np.testing.assert_allclose(normalised.mean(0), 0.0, atol=1e-5)


def test_ppo_checkpoint_restores_the_observation_statistics(tmp_path):
  trained = _ppo(seed=1)
  trained.train_step(_ppo_batch(trained, np.random.default_rng(3)))
  path = tf.train.Checkpoint(**trained.checkpoint_items()).write(str(tmp_path / 'ckpt'))
  restored = _ppo(seed=2)
  restored.warm_up([1])
  tf.train.Checkpoint(**restored.checkpoint_items()).read(path).assert_consumed()
  restored.on_restored()
  np.testing.assert_array_equal(restored.normalizer.mean.numpy(), trained.normalizer.mean.numpy())
  batch = _ppo_batch(trained, np.random.default_rng(4))
  # Same weights, moments, statistics and shuffling stream: the same update.
  assert restored.train_step(batch) == pytest.approx(trained.train_step(batch), rel=1e-5)
  # The float64 statistics carried on from the restored values, not from zero.
  np.testing.assert_allclose(restored.normalizer.mean.numpy(), trained.normalizer.mean.numpy())
  assert restored.normalizer.count.numpy() == trained.normalizer.count.numpy()


@pytest.mark.parametrize('agent_class', [SACAgent, DDPGAgent])
def test_replay_agents_act_uniformly_until_their_first_update(agent_class):
  agent = agent_class(UNEVEN, minibatch_size=4, updates_per_step=3, **SMALL)
  rng = np.random.default_rng(5)
  evaluation = [0.0] * 255 + [1.0]
  observation, reward, done, state = _inputs(UNEVEN, 256, rng, evaluation)
  action = agent.inference(observation, reward, done, state)[0].numpy()
  assert action.shape == (256, 2) and action.dtype == np.float32
  assert np.all(action >= [-1.0, 0.0]) and np.all(action <= [1.0, 0.5])
  explored = action[:255]
  # Uniform over the box: the spread covers it, the mean sits in its middle.
  assert explored.min(0) == pytest.approx([-1.0, 0.0], abs=0.05)
  assert explored.max(0) == pytest.approx([1.0, 0.5], abs=0.05)
  np.testing.assert_allclose(explored.mean(0), [0.0, 0.25], atol=0.1)

  assert agent.samples_per_insert == 12 and agent.batch_size == 12
  logs = agent.train_step(_replay_batch(agent, UNEVEN, rng))
  assert agent.updates == 3 and logs['updates'] == 3.0  # All three in one call.
  assert all(np.isfinite(v) for v in logs.values())
  after = agent.inference(observation, reward, done, state)[0].numpy()
  deterministic = agent.inference(observation[-1:].repeat(2, 0), reward[:2], done[:2],
                                  (np.ones(2, np.float32),))[0].numpy()
  np.testing.assert_array_equal(deterministic[0], deterministic[1])
  np.testing.assert_allclose(after[-1], deterministic[0], rtol=1e-6)


def test_one_step_targets_are_sacs_soft_targets_and_truncation_is_invalid():
  spec = UNEVEN
  fields = {
      'observation': tf.zeros([3, 2, 4]), 'reward': tf.constant([[0, 1.0], [0, 2.0], [0, 3.0]]),
      'terminated': tf.constant([[False, False], [False, True], [False, False]]),
      'truncated': tf.constant([[False, False], [False, False], [False, True]]),
      'action': tf.zeros([3, 2, 2])}
  transitions = offpolicy.Transitions(fields, continuous.ActionBounds(spec), 4)
  next_q1, next_q2 = tf.constant([5.0, 6.0, 7.0]), tf.constant([4.0, 8.0, 9.0])
  next_log_prob = tf.constant([-1.0, 0.5, 0.0])
  values = sac_lib.soft_state_value(next_q1, next_q2, next_log_prob, 0.2)
  targets, valid = transitions.targets(values, 0.9)
  discounts = 0.9 * np.array([1.0, 0.0, 1.0])
  want = sac_lib.soft_q_target([1.0, 2.0, 3.0], discounts, next_q1, next_q2, next_log_prob, 0.2)
  np.testing.assert_allclose(targets.numpy()[:2], want.numpy()[:2], rtol=1e-6)
  np.testing.assert_array_equal(valid.numpy(), [1.0, 1.0, 0.0])  # Unknown final state.


def test_n_step_targets_sum_discounted_rewards_then_bootstrap():
  fields = {
      'observation': tf.zeros([1, 4, 4]), 'reward': tf.constant([[0, 1.0, 2.0, 3.0]]),
      'terminated': tf.zeros([1, 4], tf.bool), 'truncated': tf.zeros([1, 4], tf.bool),
      'action': tf.zeros([1, 4, 2])}
  transitions = offpolicy.Transitions(fields, continuous.ActionBounds(UNEVEN), 4)
  targets, valid = transitions.targets(tf.constant([30.0]), 0.5)  # V(x_3).
  assert targets.numpy()[0] == pytest.approx(1 + 0.5 * 2 + 0.25 * 3 + 0.125 * 30)
  assert valid.numpy()[0] == 1.0


def test_sac_targets_start_equal_and_follow_by_polyak():
  agent = SACAgent(PENDULUM, minibatch_size=8, updates_per_step=1, tau=0.5, **SMALL)
  for online, target in zip(agent._critic_variables(), agent._target_variables()):
    np.testing.assert_array_equal(online.numpy(), target.numpy())
  before = [v.numpy().copy() for v in agent._target_variables()]
  agent.train_step(_replay_batch(agent, PENDULUM, np.random.default_rng(6)))
  for old, online, target in zip(before, agent._critic_variables(), agent._target_variables()):
    np.testing.assert_allclose(target.numpy(), 0.5 * old + 0.5 * online.numpy(), rtol=1e-5,
                               atol=1e-7)


@pytest.mark.parametrize('agent_class', [SACAgent, DDPGAgent])
def test_replay_agent_checkpoint_round_trip_continues_identically(agent_class, tmp_path):
  def make(seed):
    return agent_class(PENDULUM, minibatch_size=8, updates_per_step=2, n_steps=2, seed=seed,
                       **SMALL)

  trained = make(1)
  rng = np.random.default_rng(7)
  trained.train_step(_replay_batch(trained, PENDULUM, rng))
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
  args = (observation, np.zeros(2, np.float32), np.zeros(2, bool), (np.zeros(2, np.float32),))
  np.testing.assert_allclose(restored.inference(*args)[0], trained.inference(*args)[0],
                             rtol=1e-6)
  batch = _replay_batch(trained, PENDULUM, rng)
  assert restored.train_step(batch) == pytest.approx(trained.train_step(batch), rel=1e-5)


def test_replay_train_step_rejects_a_malformed_batch():
  agent = SACAgent(PENDULUM, minibatch_size=4, **SMALL)
  batch = _replay_batch(agent, PENDULUM, np.random.default_rng(8))
  batch['observation'] = batch['observation'][:, :1]
  with pytest.raises(ValueError, match=r"batch\['observation'\] has shape"):
    agent.train_step(batch)
  del batch['reward']
  with pytest.raises(ValueError, match=r"batch lacks \['reward'\]"):
    agent.train_step(batch)
