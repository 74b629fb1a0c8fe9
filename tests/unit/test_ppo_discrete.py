"""Tests of PPO with discrete actions: the categorical policy, the shared Nature-CNN
torso on frames, and what it stores and trains on."""
import numpy as np
import pytest

tf = pytest.importorskip('tensorflow')

from seed import types  # pylint: disable=g-import-not-at-top
from seed.agents.ppo import agent as agent_lib  # pylint: disable=g-import-not-at-top
from seed.agents.ppo import config as config_lib  # pylint: disable=g-import-not-at-top
from seed.envs import spec as spec_lib  # pylint: disable=g-import-not-at-top
from tests.unit import test_vtrace_agent as vtrace_tests  # pylint: disable=g-import-not-at-top
from tests.agent_inputs import random_observations  # pylint: disable=g-import-not-at-top

CARTPOLE = spec_lib.EnvSpec((4,), 'float32', num_actions=2)
ATARI = spec_lib.EnvSpec((4, 84, 84), 'uint8', num_actions=6, frames_per_step=4)
GRID = spec_lib.EnvSpec((10, 10, 4), 'bool', num_actions=3)  # MinAtar's, channels last
SMALL = dict(unroll_length=4, batch_unrolls=2, epochs=2, num_minibatches=2)


def _agent(spec, **fields):
  if len(spec.observation_shape) == 3:
    fields.setdefault('normalize_observations', False)
  return agent_lib.PPOAgent(spec, config_lib.PPOConfig(**fields))


def _acting(evaluation):
  evaluation = np.asarray(evaluation, bool)
  return types.ActingParams(epsilon=np.zeros(evaluation.shape, np.float32),
                            evaluation=evaluation)


def _fifo_sample(agent, spec, rng):
  """A random [B, T + 1] sample with the outputs the agent stores: a uniform
  policy's log-probabilities and, when it normalises, the (raw) inputs."""
  sample = vtrace_tests._random_sample(agent, spec, rng)  # pylint: disable=protected-access
  observation = sample.data.steps.observation
  stored = {'log_prob': np.full(observation.shape[:2], -np.log(spec.num_actions), np.float32)}
  if 'policy_input' in agent.trained_outputs:
    stored['policy_input'] = observation.reshape(observation.shape[:2] + (-1,))
  return sample._replace(data=sample.data._replace(
      steps=sample.data.steps._replace(policy_outputs=stored)))


def _infer(agent, spec, evaluation, rng):
  observation = random_observations(spec, (len(evaluation),), rng)
  return observation, agent.inference(observation, np.zeros(len(evaluation), np.float32),
                                      np.zeros(len(evaluation), bool), (),
                                      _acting(evaluation))


@pytest.mark.parametrize('spec, normalize, outputs', [
    (CARTPOLE, False, ('log_prob',)), (CARTPOLE, True, ('log_prob', 'policy_input')),
    (ATARI, False, ('log_prob',))])
def test_inference_samples_the_categorical_and_evaluation_takes_the_argmax(
    spec, normalize, outputs):
  agent = _agent(spec, normalize_observations=normalize)
  assert agent.trained_outputs == outputs
  rng = np.random.default_rng(0)
  evaluation = [True] * 4 + [False] * 60
  observation, (action, stored, core_state) = _infer(agent, spec, evaluation, rng)
  # Stored are the trained outputs; the logits come along for seed diagnose.
  assert core_state == () and set(stored) == set(outputs) | {'logits'}
  action = action.numpy()
  assert action.dtype == np.int32 and action.shape == (64,)
  assert np.all((action >= 0) & (action < spec.num_actions))
  logits, _ = agent.network.policy_and_value(  # pylint: disable=protected-access
      agent.network.torso_inputs(agent._inputs(observation)))
  log_probs = tf.nn.log_softmax(logits).numpy()
  np.testing.assert_allclose(stored['logits'], logits.numpy(), rtol=1e-5, atol=1e-6)
  np.testing.assert_allclose(stored['log_prob'], log_probs[np.arange(64), action],
                             rtol=1e-5, atol=1e-6)
  np.testing.assert_array_equal(action[:4], log_probs[:4].argmax(-1))
  # A near-uniform first policy (logit gain 0.01) samples every action.
  assert len(np.unique(action[4:])) == spec.num_actions


@pytest.mark.parametrize('spec', [CARTPOLE, ATARI, GRID], ids=['mlp', 'nature', 'small_conv'])
def test_train_step_changes_the_weights_and_traces_once(spec):
  agent = _agent(spec, **SMALL)
  rng = np.random.default_rng(1)
  before = [v.numpy().copy() for v in agent.network.trainable_variables]
  for _ in range(2):
    result = agent.train_step(_fifo_sample(agent, spec, rng))
  logs = result.logs
  for key in ('policy_loss', 'value_loss', 'entropy', 'approx_kl', 'grad_norm'):
    assert np.isfinite(logs[key]), (key, logs)
  assert logs['entropy'] == pytest.approx(np.log(spec.num_actions), rel=0.05)
  assert result.skipped_updates == 0
  after = [v.numpy() for v in agent.network.trainable_variables]
  assert all(not np.array_equal(b, a) for b, a in zip(before, after))
  assert agent._train_function.experimental_get_tracing_count() == 1  # pylint: disable=protected-access


def test_the_nature_torso_is_shared_and_the_mlps_are_not():
  shared = _agent(ATARI)
  names = [v.path for v in shared.network.trainable_variables]
  # One torso (3 convolutions and fc), then a kernel and bias per head.
  assert names == ['conv_0/kernel', 'conv_0/bias', 'conv_1/kernel', 'conv_1/bias',
                   'conv_2/kernel', 'conv_2/bias', 'fc/kernel', 'fc/bias',
                   'policy_logits/kernel', 'policy_logits/bias', 'value/kernel', 'value/bias']
  separate = _agent(CARTPOLE)
  names = [v.path for v in separate.network.trainable_variables]
  assert sum(n.startswith('policy/') for n in names) == 6
  assert sum(n.startswith('value/') for n in names) == 6


@pytest.mark.parametrize('spec, fields, match', [
    (ATARI, dict(normalize_observations=True),
     r"PPOConfig.normalize_observations = True; accepted: False for image observations"),
    (CARTPOLE, dict(torso='nature'), r'\[C, H, W\]'),
    (CARTPOLE, dict(torso='resnet'), "PPOConfig.torso = 'resnet'; accepted: one of"),
    (CARTPOLE, dict(reward_clipping='sign'),
     "PPOConfig.reward_clipping = 'sign'; accepted: one of None, 'abs_one'"),
    (CARTPOLE, dict(value_normalization='popart_v2'),
     "PPOConfig.value_normalization = 'popart_v2'; accepted: one of None, 'popart'"),
    (CARTPOLE, dict(value_normalization='popart', popart_step_size=0.0),
     'PPOConfig.popart_step_size = 0.0; accepted:'),
])
def test_bad_torso_or_normalisation_is_refused_by_name(spec, fields, match):
  with pytest.raises(ValueError, match=match):
    agent_lib.PPOAgent(spec, config_lib.PPOConfig(**fields))


@pytest.mark.parametrize('spec', [CARTPOLE, ATARI], ids=['mlp', 'nature'])
def test_popart_normalises_the_targets_and_leaves_the_value_unchanged(spec):
  agent = _agent(spec, value_normalization='popart', popart_step_size=0.5, **SMALL)
  rng = np.random.default_rng(3)
  x = agent.network.torso_inputs(agent._train_inputs(  # pylint: disable=protected-access
      _fifo_sample(agent, spec, rng).data.steps))
  returns = tf.constant(rng.normal(200.0, 50.0, [int(x.shape[0])]), tf.float32)
  valid = tf.ones_like(returns)
  before = agent._value(x).numpy()  # pylint: disable=protected-access
  targets = agent._value_targets(returns, valid).numpy()  # pylint: disable=protected-access
  # First update: step max(beta, 1/1) = 1, so the statistics are this batch's.
  np.testing.assert_allclose(targets.mean(), 0.0, atol=1e-3)
  np.testing.assert_allclose(targets.std(), 1.0, rtol=1e-3)
  np.testing.assert_allclose(agent._value(x).numpy(), before, rtol=1e-4, atol=1e-3)  # pylint: disable=protected-access
  logs = agent.train_step(_fifo_sample(agent, spec, rng)).logs
  assert logs['popart_scale'] > 1.0 and np.isfinite(logs['value_loss'])


def test_scaled_learning_rates_reach_the_train_step_and_zero_freezes_the_weights(
    spec=CARTPOLE):
  # The learner's --anneal_learning_rate calls scale_learning_rates before each step.
  agent = _agent(spec, learning_rate=1e-3, **SMALL)
  rng = np.random.default_rng(4)
  rates = []
  for fraction in (1.0, 0.5, 0.25):
    agent.scale_learning_rates(fraction)
    rates.append(agent.train_step(_fifo_sample(agent, spec, rng)).logs['learning_rate'])
  np.testing.assert_allclose(rates, [1e-3, 5e-4, 2.5e-4], rtol=1e-6)
  agent.scale_learning_rates(0.0)
  before = [v.numpy().copy() for v in agent.network.trainable_variables]
  agent.train_step(_fifo_sample(agent, spec, rng))
  for b, a in zip(before, agent.network.trainable_variables):
    np.testing.assert_array_equal(b, a.numpy())
  agent.on_restored()  # A restore puts the configured rate back.
  assert float(agent.optimizer.learning_rate.numpy()) == pytest.approx(1e-3)


@pytest.mark.parametrize('fields', [{}, dict(value_normalization='popart')],
                         ids=['plain', 'popart'])
def test_checkpoint_round_trip_trains_on_identically(tmp_path, fields):
  agent = _agent(CARTPOLE, **SMALL, **fields)
  sample = _fifo_sample(agent, CARTPOLE, np.random.default_rng(2))
  agent.train_step(sample)
  path = tf.train.Checkpoint(**agent.checkpoint_items()).write(str(tmp_path / 'ckpt'))
  restored = _agent(CARTPOLE, seed=5, **SMALL, **fields)
  restored.warm_up([2])
  tf.train.Checkpoint(**restored.checkpoint_items()).read(path).assert_consumed()
  restored.on_restored()  # As the Checkpointer does: the normaliser reloads its stats.
  assert restored.train_step(sample).logs == pytest.approx(agent.train_step(sample).logs,
                                                           rel=1e-5)
