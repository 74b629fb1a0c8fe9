"""Tests of the V-trace agent: inference, unroll/step agreement, training, checkpoints."""
import numpy as np
import pytest

tf = pytest.importorskip('tensorflow')

import gin  # pylint: disable=g-import-not-at-top,g-bad-import-order

from seed import config as seed_config  # pylint: disable=g-import-not-at-top
from seed import types  # pylint: disable=g-import-not-at-top
from seed.agents.vtrace import agent as agent_lib  # pylint: disable=g-import-not-at-top
from seed.agents.vtrace import config as config_lib  # pylint: disable=g-import-not-at-top
from seed.envs import spec as spec_lib  # pylint: disable=g-import-not-at-top
from tests.agent_inputs import (  # pylint: disable=g-import-not-at-top
    acting_params, infer, random_observations)
from tests.agent_inputs import random_logits_sample as _random_sample  # pylint: disable=g-import-not-at-top
from tests.agent_inputs import logits_sample as _sample  # pylint: disable=g-import-not-at-top

CATCH = spec_lib.EnvSpec((10, 5), 'float32', num_actions=3)
CARTPOLE = spec_lib.EnvSpec((4,), 'float32', num_actions=2)
ATARI = spec_lib.EnvSpec((4, 84, 84), 'uint8', num_actions=6, frames_per_step=4)
# MinAtar's observations: a 10 x 10 grid of bool channels, channels last.
GRID = spec_lib.EnvSpec((10, 10, 4), 'bool', num_actions=3)
SPECS = {'catch': CATCH, 'cartpole': CARTPOLE, 'atari': ATARI, 'grid': GRID}
# Small LSTMs keep the tests fast; the logic does not depend on the width.
LSTM = dict(use_lstm=True, lstm_size=8)
# Logits recomputed in a [T * B] batch differ from [B]-row inference only by
# float32 rounding (the kernels block the rows differently).
TOLERANCE = dict(rtol=1e-5, atol=1e-5)


def _agent(spec, **fields):
  return agent_lib.VTraceAgent(spec, config_lib.VTraceConfig(**fields))


def _with_reward(sample, reward):
  return sample._replace(data=sample.data._replace(
      steps=sample.data.steps._replace(reward=np.asarray(reward, np.float32))))


@pytest.mark.parametrize('name, kwargs, torso', [
    ('catch', {}, 'mlp'), ('cartpole', {}, 'mlp'), ('atari', {}, 'nature'),
    ('grid', {}, 'small_conv'),
    ('catch', LSTM, 'mlp'), ('atari', dict(torso='impala_shallow', **LSTM), 'impala_shallow')])
def test_inference_shapes_and_dtypes(name, kwargs, torso):
  spec = SPECS[name]
  agent = _agent(spec, **kwargs)
  assert agent.network.torso == torso
  batch = 2
  state = agent.initial_core_state(batch)
  action, outputs, new_state = infer(
      agent, random_observations(spec, [batch], np.random.default_rng(0)), [True, False], state)
  assert action.dtype == tf.int32 and action.shape == (batch,)
  assert np.all((action.numpy() >= 0) & (action.numpy() < spec.num_actions))
  assert set(outputs) == {'logits'}
  assert outputs['logits'].dtype == tf.float32
  assert outputs['logits'].shape == (batch, spec.num_actions)
  if kwargs.get('use_lstm'):
    assert len(state) == 2 and len(new_state) == 2
    for array in new_state:
      assert array.dtype == tf.float32 and array.shape == (batch, 8)
  else:
    assert state == () and new_state == ()


def test_warm_up_traces_each_size_once():
  agent = _agent(CATCH, **LSTM)
  agent.warm_up([1, 4, 8])
  count = agent.inference.experimental_get_tracing_count()
  assert count == 3
  rng = np.random.default_rng(1)
  for batch in (1, 4, 8, 4, 1):
    infer(agent, random_observations(CATCH, [batch], rng), rng.random(batch) < 0.5,
           agent.initial_core_state(batch))
  assert agent.inference.experimental_get_tracing_count() == count
  assert agent.optimizer.built


def test_lstm_state_is_reset_where_done():
  agent = _agent(CARTPOLE, **LSTM)
  rng = np.random.default_rng(2)
  observation = random_observations(CARTPOLE, [2], rng)
  used = tuple(rng.normal(size=(2, 8)).astype(np.float32) for _ in range(2))
  _, reset, reset_state = infer(agent, observation, [True, False], used)
  _, fresh, fresh_state = infer(agent, observation, [False, False],
                                 agent.initial_core_state(2))
  _, kept, kept_state = infer(agent, observation, [False, False], used)
  np.testing.assert_array_equal(reset['logits'][0], fresh['logits'][0])
  np.testing.assert_array_equal(reset['logits'][1], kept['logits'][1])
  for got, want_reset, want_kept in zip(reset_state, fresh_state, kept_state):
    np.testing.assert_array_equal(got[0], want_reset[0])
    np.testing.assert_array_equal(got[1], want_kept[1])
  assert not np.allclose(fresh['logits'][1], kept['logits'][1])


@pytest.mark.parametrize('name, kwargs', [
    ('cartpole', {}), ('catch', LSTM), ('atari', {}),
    ('atari', dict(torso='impala_shallow', **LSTM))])
def test_unroll_reproduces_step_by_step_inference(name, kwargs):
  spec = SPECS[name]
  agent = _agent(spec, **kwargs)
  rng = np.random.default_rng(3)
  steps, batch = (2, 2) if name == 'atari' else (6, 3)
  observations = random_observations(spec, [steps, batch], rng)
  done = np.zeros([steps, batch], bool)
  done[steps // 2, 0] = True  # An episode starts mid-unroll for env 0.
  initial = tuple(rng.normal(size=x.shape).astype(np.float32)
                  for x in agent.initial_core_state(batch))
  state, step_logits = initial, []
  for t in range(steps):
    _, outputs, state = infer(agent, observations[t], done[t], state)
    step_logits.append(outputs['logits'].numpy())
  logits, baseline, final_state = tf.function(agent.network.unroll)(
      observations, done, initial)
  assert baseline.shape == (steps, batch)
  np.testing.assert_allclose(logits, np.stack(step_logits), **TOLERANCE)
  for got, want in zip(final_state, state):
    np.testing.assert_allclose(got, want, **TOLERANCE)


@pytest.mark.parametrize('name', ['cartpole', 'atari'])
def test_bfloat16_unroll_torso_stays_within_its_rounding_of_float32_inference(name):
  spec = SPECS[name]
  agent = _agent(spec, unroll_torso_dtype='bfloat16', initializer='orthogonal')
  rng = np.random.default_rng(3)
  observations = random_observations(spec, [2, 3], rng)
  step_logits = [infer(agent, observations[t], [False] * 3, ())[1]['logits'].numpy()
                 for t in range(2)]
  logits, _, _ = tf.function(agent.network.unroll)(observations, np.zeros([2, 3], bool), ())
  # bfloat16 keeps 8 significant bits: about 0.4% a product, a few % through the torso.
  scale = np.abs(np.stack(step_logits)).max()
  np.testing.assert_allclose(logits, np.stack(step_logits), rtol=0, atol=0.05 * scale)
  assert not np.array_equal(logits, np.stack(step_logits))  # It did run in bfloat16.


@pytest.mark.parametrize('name, kwargs', [
    ('cartpole', {}), ('catch', dict(optimizer='rmsprop', **LSTM)), ('atari', LSTM),
    ('atari', dict(unroll_torso_dtype='bfloat16')), ('grid', {})])
def test_train_step_returns_finite_logs_and_changes_weights(name, kwargs):
  spec = SPECS[name]
  agent = _agent(spec, unroll_length=2, batch_unrolls=2, **kwargs)
  before = [v.numpy().copy() for v in agent.network.trainable_variables]
  result = agent.train_step(_random_sample(agent, spec, np.random.default_rng(4)))
  assert isinstance(result, types.TrainResult)
  assert result.priorities.shape == (2,) and np.all(result.priorities >= 0)
  logs = result.logs
  for key in ('total_loss', 'policy_loss', 'baseline_loss', 'entropy', 'grad_norm',
              'learning_rate'):
    assert isinstance(logs[key], float) and np.isfinite(logs[key]), (key, logs)
  np.testing.assert_allclose(logs['learning_rate'], 6e-4, rtol=1e-6)
  after = [v.numpy() for v in agent.network.trainable_variables]
  assert all(not np.array_equal(b, a) for b, a in zip(before, after))
  assert int(agent.optimizer.iterations) == 1
  agent.train_step(_random_sample(agent, spec, np.random.default_rng(5)))
  train_function = agent._train_function  # pylint: disable=protected-access
  assert train_function.experimental_get_tracing_count() == 1


def _rows(sample, rows):
  """The unrolls `rows` of a sample, as a sample of their own."""
  return _sample(*(getattr(sample.data.steps, field)[rows] for field in types.STEP_FIELDS),
                 sample.data.steps.policy_outputs['logits'][rows],
                 tuple(x[rows] for x in sample.data.core_state))


@pytest.mark.parametrize('kwargs', [{}, LSTM])
def test_minibatches_are_updates_on_disjoint_sets_of_whole_unrolls(kwargs):
  # epochs x num_minibatches updates a train step; with one epoch of two minibatches
  # the step equals two one-update steps on the two halves of the shuffled batch.
  split = _agent(CATCH, unroll_length=3, batch_unrolls=4, num_minibatches=2, seed=2, **kwargs)
  sample = _random_sample(split, CATCH, np.random.default_rng(7))
  result = split.train_step(sample)
  assert int(split.optimizer.iterations) == 2 and result.logs['skipped_updates'] == 0.0
  assert result.priorities.shape == (4,) and np.all(result.priorities > 0)
  # The shuffle is keyed by the seed and the optimizer's step count (as a resumed
  # run's would be): the order the train step drew.
  order = tf.argsort(tf.random.stateless_uniform([4], seed=[2, 0])).numpy()
  whole = _agent(CATCH, unroll_length=3, batch_unrolls=2, seed=2, **kwargs)
  for half in (order[:2], order[2:]):
    whole.train_step(_rows(sample, half))
  for a, b in zip(split.network.trainable_variables, whole.network.trainable_variables):
    np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-6)


def test_epochs_reuse_the_batch_and_average_the_logs():
  agent = _agent(CARTPOLE, unroll_length=3, batch_unrolls=4, epochs=3, num_minibatches=2)
  result = agent.train_step(_random_sample(agent, CARTPOLE, np.random.default_rng(8)))
  assert int(agent.optimizer.iterations) == 6
  for key in ('total_loss', 'entropy', 'grad_norm'):
    assert np.isfinite(result.logs[key])
  agent.train_step(_random_sample(agent, CARTPOLE, np.random.default_rng(9)))
  assert agent._train_function.experimental_get_tracing_count() == 1  # pylint: disable=protected-access


def _first_step_loss(sample, **kwargs):
  """total_loss of the first train_step of a fresh, identically seeded agent."""
  agent = _agent(CARTPOLE, unroll_length=3, batch_unrolls=2, **kwargs)
  return agent.train_step(sample).logs['total_loss']


def test_loss_uses_rewards_of_steps_one_to_t_clipped_when_asked():
  agent = _agent(CARTPOLE, unroll_length=3, batch_unrolls=2)
  sample = _random_sample(agent, CARTPOLE, np.random.default_rng(6), done_probability=0.0)
  reward = sample.data.steps.reward
  base = _first_step_loss(sample)
  # Step 0's reward belongs to the previous unroll's last transition.
  shifted = _with_reward(sample, reward + np.array([[5.0, 0, 0, 0]], np.float32))
  assert _first_step_loss(shifted) == pytest.approx(base, rel=1e-6)
  last = _with_reward(sample, reward + np.array([[0, 0, 0, 5.0]], np.float32))
  assert _first_step_loss(last) != pytest.approx(base, rel=1e-3)
  signs = _with_reward(sample, np.sign(reward))
  scaled = _with_reward(sample, 100.0 * np.sign(reward))
  assert _first_step_loss(scaled, reward_clipping='abs_one') == pytest.approx(
      _first_step_loss(signs), rel=1e-6)


def test_checkpoint_round_trip_restores_weights_and_optimizer(tmp_path):
  spec = CATCH
  trained = _agent(spec, unroll_length=2, batch_unrolls=2, seed=1, **LSTM)
  rng = np.random.default_rng(7)
  for _ in range(2):
    trained.train_step(_random_sample(trained, spec, rng))
  path = tf.train.Checkpoint(**trained.checkpoint_items()).write(str(tmp_path / 'ckpt'))

  restored = _agent(spec, unroll_length=2, batch_unrolls=2, seed=2, **LSTM)
  restored.warm_up([2])
  status = tf.train.Checkpoint(**restored.checkpoint_items()).read(path)
  status.assert_consumed()
  assert int(restored.optimizer.iterations) == 2
  for want, got in zip(trained.network.weights, restored.network.weights):
    np.testing.assert_array_equal(got.numpy(), want.numpy())
  assert len(restored.optimizer.variables) == len(trained.optimizer.variables)
  for want, got in zip(trained.optimizer.variables, restored.optimizer.variables):
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
  # And training goes on from there identically.
  sample = _random_sample(trained, spec, rng)
  assert restored.train_step(sample).logs == pytest.approx(trained.train_step(sample).logs,
                                                           rel=1e-6)


@pytest.mark.parametrize('spec, kwargs, match', [
    (spec_lib.EnvSpec((3,), 'float32', action_shape=(2,), action_dtype='float32'), {},
     'discrete'),
    (CARTPOLE, dict(torso='resnet'),
     "VTraceConfig.torso = 'resnet'; accepted: one of 'auto', 'mlp', 'nature', 'impala_shallow'"),
    (CARTPOLE, dict(torso='nature'), r'\[C, H, W\]'),
    (spec_lib.EnvSpec((2, 3, 4, 5), 'float32', 2), {}, 'rank-4'),
    (CARTPOLE, dict(optimizer='sgd'),
     "VTraceConfig.optimizer = 'sgd'; accepted: one of 'adam', 'rmsprop'"),
    (CARTPOLE, dict(reward_clipping='abs_ten'),
     "VTraceConfig.reward_clipping = 'abs_ten'; accepted: one of None, 'abs_one'"),
    (CARTPOLE, dict(discount=1.5),
     r'VTraceConfig.discount = 1.5; accepted: a number in \[0, 1\]'),
    (CARTPOLE, dict(unroll_length=0), 'VTraceConfig.unroll_length = 0; accepted: an int >= 1'),
    (CARTPOLE, dict(batch_unrolls=2.5), 'VTraceConfig.batch_unrolls = 2.5; accepted: an int'),
    (CARTPOLE, dict(max_grad_norm=0.0),
     'VTraceConfig.max_grad_norm = 0.0; accepted: a number > 0, or None'),
    (CARTPOLE, dict(mlp_hidden_sizes=(64, 0)), 'VTraceConfig.mlp_hidden_sizes'),
    (CARTPOLE, dict(entropy_cost=-0.01),
     'VTraceConfig.entropy_cost = -0.01; accepted: a number >= 0'),
    (CARTPOLE, dict(entropy_cost=2.0),
     r'VTraceConfig.entropy_cost = 2.0; accepted: a number in \[0, 1\]'),
    (CARTPOLE, dict(learning_rate=0.0), 'VTraceConfig.learning_rate = 0.0; accepted: a number > 0'),
    (CARTPOLE, dict(learning_rate=6.0),
     r'VTraceConfig.learning_rate = 6.0; accepted: a number in \[0, 1\]'),
    (CARTPOLE, dict(epochs=0), 'VTraceConfig.epochs = 0; accepted: an int >= 1'),
    (CARTPOLE, dict(batch_unrolls=32, num_minibatches=5),
     'VTraceConfig.num_minibatches = 5; accepted: a divisor of batch_unrolls = 32'),
    (CARTPOLE, dict(initializer='he'),
     "VTraceConfig.initializer = 'he'; accepted: one of 'glorot', 'orthogonal'"),
    (CARTPOLE, dict(policy_clip=1.5),
     r'VTraceConfig.policy_clip = 1.5; accepted: None or a number in \(0, 1\)'),
    (CARTPOLE, dict(unroll_torso_dtype='half'),
     "VTraceConfig.unroll_torso_dtype = 'half'; accepted: one of 'float32', 'bfloat16', 'auto'"),
])
def test_constructor_rejects_bad_arguments(spec, kwargs, match):
  with pytest.raises(ValueError, match=match):
    _agent(spec, **kwargs)


def test_orthogonal_init_gives_near_uniform_policy_and_larger_features():
  # The policy head's gain 0.01 starts every state near the uniform policy; the
  # torso's gain sqrt(2) keeps the features' scale through the ReLU layers, where
  # Glorot's shrinks it (the Pong diagnosis in docs/learning.md).
  observation = random_observations(ATARI, (8,), np.random.default_rng(0))
  scales = {}
  for initializer in ('glorot', 'orthogonal'):
    network = _agent(ATARI, initializer=initializer).network
    features, _ = network._core_step(observation, np.zeros(8, bool), ())  # pylint: disable=protected-access
    logits, _ = network._heads(features)  # pylint: disable=protected-access
    scales[initializer] = (float(np.abs(features).mean()),
                           float(np.ptp(logits.numpy(), axis=-1).max()))
  assert scales['orthogonal'][0] > 2 * scales['glorot'][0]
  assert scales['orthogonal'][1] < 0.05 < scales['glorot'][1]
  policy_kernel = _agent(ATARI, initializer='orthogonal').network._policy_head.kernel  # pylint: disable=protected-access
  # An orthogonal [512, 6] kernel of gain g has orthonormal columns times g.
  np.testing.assert_allclose(tf.linalg.norm(policy_kernel, axis=0).numpy(),
                             np.full(6, 0.01), rtol=1e-4)


def test_train_step_rejects_a_sample_of_the_wrong_shape():
  agent = _agent(CARTPOLE, unroll_length=3, batch_unrolls=2)
  sample = _random_sample(agent, CARTPOLE, np.random.default_rng(8))
  short = _with_reward(sample, sample.data.steps.reward[:, :3])
  with pytest.raises(ValueError, match=r'sample reward has shape \(2, 3\).*\[2, 4\]'):
    agent.train_step(short)
  no_logits = sample._replace(data=sample.data._replace(
      steps=sample.data.steps._replace(policy_outputs={})))
  with pytest.raises(ValueError, match=r"lacks the policy outputs \['logits'\]"):
    agent.train_step(no_logits)


def test_gin_binds_the_config_and_old_names_point_to_the_new_ones():
  try:
    gin.parse_config('VTraceConfig.unroll_length = 7\nVTraceConfig.entropy_cost = 0.02')
    agent = agent_lib.VTraceAgent(CARTPOLE)
  finally:
    gin.clear_config()
  assert agent.unroll_length == 7 and agent.batch_unrolls == 32
  assert agent.config == config_lib.VTraceConfig(unroll_length=7, entropy_cost=0.02)
  assert agent.config_class is config_lib.VTraceConfig
  assert agent.input_kind == 'fifo' and agent.trained_outputs == ('logits',)
  with pytest.raises(ValueError, match='bind VTraceConfig.batch_unrolls instead'):
    seed_config.parse_gin([], ['VTraceAgent.batch_size = 8'])
  with pytest.raises(ValueError, match='bind VTraceConfig.entropy_cost instead'):
    seed_config.parse_gin([], ['VTraceAgent.entropy_cost = 0.1'])


def test_acting_params_leave_the_core_state_alone():
  agent = _agent(CATCH, **LSTM)
  params = agent.acting_params(5, evaluation=True)
  assert float(params.epsilon) == 0.0 and bool(params.evaluation)
  assert len(agent.initial_core_state(3)) == 2  # Only the LSTM's (c, h).
  assert _agent(CATCH).initial_core_state(3) == ()


def test_training_envs_sample_and_evaluation_envs_take_the_most_probable_action():
  # V-trace explores by its policy's entropy: epsilon changes nothing (identically
  # seeded agents draw the same actions); an evaluation env acts greedily.
  rng = np.random.default_rng(11)
  observation = random_observations(CATCH, [64], rng)
  state = _agent(CATCH, **LSTM).initial_core_state(64)
  done = np.zeros(64, bool)
  plain, plain_outputs, plain_state = infer(_agent(CATCH, **LSTM), observation, done, state)
  other, other_outputs, other_state = infer(_agent(CATCH, **LSTM), observation, done, state,
                                            acting_params(64, epsilon=1.0))
  np.testing.assert_array_equal(other, plain)
  np.testing.assert_array_equal(other_outputs['logits'], plain_outputs['logits'])
  for got, want in zip(other_state, plain_state):
    np.testing.assert_array_equal(got, want)
  greedy, greedy_outputs, _ = infer(_agent(CATCH, **LSTM), observation, done, state,
                                    acting_params(64, evaluation=True))
  np.testing.assert_array_equal(greedy, np.argmax(greedy_outputs['logits'], -1))
  assert (np.asarray(greedy) != np.asarray(plain)).any()  # Near-uniform policies: sampling differs.


def test_learns_a_contextual_bandit():
  """Two contexts, two arms, reward 1 for the arm matching the context."""
  agent = _agent(spec_lib.EnvSpec((2,), 'float32', num_actions=2),
                 unroll_length=4, batch_unrolls=16, seed=0)
  rng = np.random.default_rng(0)
  envs, steps = agent.batch_unrolls, agent.unroll_length + 1
  one_hot = np.eye(2, dtype=np.float32)
  for _ in range(200):
    contexts = rng.integers(0, 2, (envs, steps))
    # Each pull is a one-step episode, so every step can be inferred at once
    # with the current weights: the unrolls are exactly on-policy.
    action, outputs, _ = infer(agent, one_hot[contexts].reshape(-1, 2),
                                np.ones(envs * steps, bool), ())
    actions = action.numpy().reshape(envs, steps)
    reward = np.zeros((envs, steps), np.float32)
    reward[:, 1:] = actions[:, :-1] == contexts[:, :-1]
    agent.train_step(_sample(
        observation=one_hot[contexts], reward=reward,
        terminated=np.ones((envs, steps), bool), truncated=np.zeros((envs, steps), bool),
        action=actions, logits=outputs['logits'].numpy().reshape(envs, steps, 2),
        core_state=()))
  _, outputs, _ = infer(agent, one_hot, [True, True], ())
  probabilities = tf.nn.softmax(outputs['logits']).numpy()
  assert probabilities[0, 0] > 0.9 and probabilities[1, 1] > 0.9, probabilities


def test_configured_learning_rate_wins_over_the_restored_one(tmp_path):
  spec = spec_lib.EnvSpec((4,), 'float32', num_actions=2)
  old = _agent(spec, learning_rate=1e-2, unroll_length=2, batch_unrolls=2)
  old.warm_up([1])
  path = tf.train.Checkpoint(**old.checkpoint_items()).write(str(tmp_path / 'ckpt'))
  new = _agent(spec, learning_rate=3e-4, unroll_length=2, batch_unrolls=2)
  new.warm_up([1])
  tf.train.Checkpoint(**new.checkpoint_items()).read(path).assert_existing_objects_matched()
  new.on_restored()
  assert float(new.optimizer.learning_rate.numpy()) == pytest.approx(3e-4)


@pytest.mark.parametrize('kwargs,spec', [
    (dict(torso='mlp'), spec_lib.EnvSpec((4,), 'float32', num_actions=2)),
    (dict(torso='nature', use_lstm=True, lstm_size=8), ATARI),
])
def test_every_network_variable_is_saved_under_the_model(tmp_path, kwargs, spec):
  agent = _agent(spec, unroll_length=2, batch_unrolls=2, **kwargs)
  agent.warm_up([1])
  path = tf.train.Checkpoint(model=agent.network).write(str(tmp_path / 'model'))
  saved = [name for name, _ in tf.train.list_variables(path) if name.startswith('model/')]
  assert len(saved) == len(agent.network.trainable_variables)
  # The model alone restores every weight, without the optimizer's help.
  fresh = _agent(spec, unroll_length=2, batch_unrolls=2, seed=7, **kwargs)
  fresh.warm_up([1])
  tf.train.Checkpoint(model=fresh.network).read(path).assert_consumed()
  for restored, original in zip(fresh.network.trainable_variables,
                                agent.network.trainable_variables):
    np.testing.assert_array_equal(restored.numpy(), original.numpy())
