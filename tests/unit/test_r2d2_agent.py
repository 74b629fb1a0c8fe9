"""Tests of the R2D2 agent: exploration, inference, burn-in, loss, target network, checkpoints."""
import math

import numpy as np
import pytest

tf = pytest.importorskip('tensorflow')

import gin  # pylint: disable=g-import-not-at-top,g-bad-import-order

from seed import config as seed_config  # pylint: disable=g-import-not-at-top
from seed import types  # pylint: disable=g-import-not-at-top
from seed.agents.r2d2 import agent as agent_lib  # pylint: disable=g-import-not-at-top
from seed.agents.r2d2 import config as config_lib  # pylint: disable=g-import-not-at-top
from seed.agents.r2d2 import agent as exploration  # pylint: disable=g-import-not-at-top
from seed.envs import spec as spec_lib  # pylint: disable=g-import-not-at-top
from tests.agent_inputs import (  # pylint: disable=g-import-not-at-top
    acting_params, infer, random_observations)
from tests.agent_inputs import random_sequence_sample as _random_sample  # pylint: disable=g-import-not-at-top

VECTOR = spec_lib.EnvSpec((4,), 'float32', num_actions=3)
ATARI = spec_lib.EnvSpec((4, 84, 84), 'uint8', num_actions=6, frames_per_step=4)
# Small widths and lengths keep the tests fast; the logic does not depend on them.
SMALL = dict(torso='mlp', mlp_hidden_sizes=(16,), lstm_size=8, head_hidden_size=16,
             burn_in_steps=2, trained_steps=4, batch_sequences=3)
LSTM_SIZE = 8
# Q values recomputed in a [T * B] batch differ from [B]-row inference only by
# float32 rounding (the kernels block the rows differently).
TOLERANCE = dict(rtol=1e-5, atol=1e-5)


def _agent(spec=VECTOR, **overrides):
  return agent_lib.R2D2Agent(spec, config_lib.R2D2Config(**dict(SMALL, **overrides)))


def _replace_steps(sample, **fields):
  return sample._replace(data=sample.data._replace(
      steps=sample.data.steps._replace(**fields)))


@pytest.mark.parametrize('spec, overrides, torso', [
    (VECTOR, {}, 'mlp'), (VECTOR, dict(use_lstm=False), 'mlp'),
    (ATARI, dict(torso='auto'), 'nature')])
def test_inference_shapes_and_dtypes(spec, overrides, torso):
  agent = _agent(spec, **overrides)
  assert agent.network.torso == torso
  batch = 2
  state = agent.initial_core_state(batch)
  action, outputs, new_state = infer(
      agent, random_observations(spec, [batch], np.random.default_rng(0)), [True, False], state,
      acting_params(batch, epsilon=[0.25, 0.75]))
  assert action.dtype == tf.int32 and action.shape == (batch,)
  assert np.all((action.numpy() >= 0) & (action.numpy() < spec.num_actions))
  assert set(outputs) == {'q'}
  assert outputs['q'].dtype == tf.float32 and outputs['q'].shape == (batch, spec.num_actions)
  # The core state is the LSTM's alone: the epsilon is in the ActingParams.
  assert len(new_state) == len(state) == (0 if overrides.get('use_lstm') is False else 2)
  for array in new_state:
    assert array.dtype == tf.float32 and array.shape == (batch, LSTM_SIZE)


def test_epsilon_greedy_follows_each_rows_epsilon():
  agent = _agent()
  rows = 3000  # Per epsilon group; frequencies then sit within ~0.01 (1 sigma) of theirs.
  rng = np.random.default_rng(1)
  observation = random_observations(VECTOR, [3 * rows], rng)
  epsilon = np.repeat(np.float32([0.0, 1.0, 0.5]), rows)
  action, outputs, _ = infer(agent, observation, np.zeros(3 * rows, bool),
                             agent.initial_core_state(3 * rows),
                             acting_params(3 * rows, epsilon))
  action = action.numpy()
  greedy = np.argmax(outputs['q'].numpy(), axis=-1)
  num_actions = VECTOR.num_actions
  np.testing.assert_array_equal(action[:rows], greedy[:rows])  # epsilon 0: argmax.
  counts = np.bincount(action[rows:2 * rows], minlength=num_actions) / rows
  np.testing.assert_allclose(counts, 1.0 / num_actions, atol=0.05)  # epsilon 1: uniform.
  non_greedy = np.mean(action[2 * rows:] != greedy[2 * rows:])
  assert non_greedy == pytest.approx(0.5 * (num_actions - 1) / num_actions, abs=0.05)


def test_acting_params_give_the_epsilon_ladder():
  agent = _agent(num_epsilon_envs=4, epsilon_base=0.4, epsilon_alpha=7.0, eval_epsilon=0.01)
  params = [agent.acting_params(i, evaluation=False) for i in range(6)]
  for p in params:
    assert isinstance(p, types.ActingParams)
    assert p.epsilon.dtype == np.float32 and p.epsilon.shape == () and not p.evaluation
  epsilons = [float(p.epsilon) for p in params]
  assert epsilons[0] == pytest.approx(0.4, rel=1e-6)  # i = 0: 0.4 ** 1.
  assert epsilons[3] == pytest.approx(0.4 ** 8, rel=1e-6)  # i = N - 1: 0.4 ** (1 + 7).
  assert epsilons[5] == pytest.approx(0.4 ** (1 + 7 / 3), rel=1e-6)  # 5 mod 4 = 1.
  assert epsilons[4] == epsilons[0]
  evaluation = agent.acting_params(3, evaluation=True)
  assert float(evaluation.epsilon) == pytest.approx(0.01) and evaluation.evaluation
  assert float(_agent(num_epsilon_envs=1).acting_params(7, False).epsilon) == pytest.approx(0.4)
  with pytest.raises(ValueError, match='env_ordinal must be an int >= 0, got -1'):
    agent.acting_params(-1, evaluation=False)
  # The server stacks per-env parameters into a batch; inference reads them.
  acting = types.stack_acting_params(params)
  np.testing.assert_array_equal(acting.epsilon, np.float32(epsilons))
  action, _, _ = agent.inference(np.zeros((6, 4), np.float32), np.zeros(6, np.float32),
                                 np.zeros(6, bool), agent.initial_core_state(6), acting)
  assert action.shape == (6,)


def test_done_resets_the_lstm_state():
  agent = _agent()
  rng = np.random.default_rng(2)
  observation = random_observations(VECTOR, [2], rng)
  used = tuple(rng.normal(size=(2, LSTM_SIZE)).astype(np.float32) for _ in range(2))
  _, reset, reset_state = infer(agent, observation, [True, False], used)
  _, fresh, fresh_state = infer(agent, observation, [False, False],
                                agent.initial_core_state(2))
  _, kept, kept_state = infer(agent, observation, [False, False], used)
  np.testing.assert_array_equal(reset['q'][0], fresh['q'][0])
  np.testing.assert_array_equal(reset['q'][1], kept['q'][1])
  for got, want_reset, want_kept in zip(reset_state, fresh_state, kept_state):
    np.testing.assert_array_equal(got[0], want_reset[0])
    np.testing.assert_array_equal(got[1], want_kept[1])
  assert not np.allclose(fresh['q'][1], kept['q'][1])


def test_warm_up_traces_each_size_once():
  agent = _agent()
  agent.warm_up([1, 4, 8])
  count = agent.inference.experimental_get_tracing_count()
  assert count == 3
  rng = np.random.default_rng(3)
  for batch in (1, 4, 8, 4, 1):
    infer(agent, random_observations(VECTOR, [batch], rng), rng.random(batch) < 0.5,
          agent.initial_core_state(batch), acting_params(batch, rng.random(batch)))
  assert agent.inference.experimental_get_tracing_count() == count
  assert agent.optimizer.built
  action, _, _ = agent.batched_policy(4)(
      random_observations(VECTOR, [4], rng), np.zeros(4, np.float32), np.zeros(4, bool),
      agent.initial_core_state(4), acting_params(4))
  assert action.shape == (4,)
  assert agent.inference.experimental_get_tracing_count() == count


def test_unroll_reproduces_step_by_step_inference():
  agent = _agent()
  rng = np.random.default_rng(4)
  steps, batch = 6, 3
  observations = random_observations(VECTOR, [steps, batch], rng)
  done = np.zeros([steps, batch], bool)
  done[steps // 2, 0] = True  # An episode starts mid-unroll for env 0.
  initial = tuple(rng.normal(size=(batch, LSTM_SIZE)).astype(np.float32) for _ in range(2))
  state, step_q = initial, []
  for t in range(steps):
    _, outputs, state = infer(agent, observations[t], done[t], state)
    step_q.append(outputs['q'].numpy())
  q, final_state = tf.function(agent.network.unroll)(observations, done, initial)
  np.testing.assert_allclose(q, np.stack(step_q), **TOLERANCE)
  for got, want in zip(final_state, state):
    np.testing.assert_allclose(got, want, **TOLERANCE)


def test_burn_in_steps_get_no_gradient():
  agent = _agent()
  burn = agent.config.burn_in_steps
  # No episode starts: otherwise a reset would cut the burn-in off by itself.
  sample = _random_sample(agent, VECTOR, np.random.default_rng(5), done_probability=0.0)
  steps, weights = sample.data.steps, sample.weights
  observations = tf.constant(steps.observation)
  core_state = tuple(tf.constant(x) for x in sample.data.core_state)
  with tf.GradientTape(persistent=True) as tape:
    tape.watch(observations)
    tape.watch(core_state)
    loss = agent.sequence_loss(steps._replace(observation=observations), core_state,
                               weights).loss
  gradient = tape.gradient(loss, observations).numpy()
  assert not gradient[:, :burn].any()
  assert np.abs(gradient[:, burn:-1]).sum() > 0  # The trained transitions do get one.
  for part in tape.gradient(loss, core_state):
    assert part is None or not np.asarray(part).any()

  def loss_of(**changes):
    return float(agent.sequence_loss(steps._replace(**changes), core_state, weights).loss)

  base = loss_of()
  # The burn-in observations do shape the state the trained part starts from ...
  moved = steps.observation.copy()
  moved[:, :burn] += 1.0
  assert loss_of(observation=moved) != pytest.approx(base, rel=1e-4)
  # ... but their rewards (and reward[burn], the transition into the first trained
  # step) and actions are not trained on.
  rewards = steps.reward.copy()
  rewards[:, :burn + 1] += 10.0
  actions = (steps.action + 1) % VECTOR.num_actions
  actions[:, burn:] = steps.action[:, burn:]
  assert loss_of(reward=rewards, action=actions) == pytest.approx(base, rel=1e-6)


def _h(x, eps):
  return np.sign(x) * (np.sqrt(np.abs(x) + 1.0) - 1.0) + eps * x


def _h_inv(x, eps):
  root = (np.sqrt(1.0 + 4.0 * eps * (np.abs(x) + 1.0 + eps)) - 1.0) / (2.0 * eps)
  return np.sign(x) * (root ** 2 - 1.0)


def _reference(agent, sample, discount, n_steps, eps=1e-3, eta=0.9):
  """Loss and priorities by hand (NumPy, float64) from the networks' Q values."""
  burn = agent.config.burn_in_steps
  time_major = {field: np.swapaxes(getattr(sample.data.steps, field), 0, 1)
                for field in types.STEP_FIELDS}
  done = time_major['terminated'] | time_major['truncated']
  observations, lstm_state = time_major['observation'], sample.data.core_state
  online_state = lstm_state
  if burn and agent.network.use_lstm:
    _, online_state = agent.network.unroll(observations[:burn], done[:burn], lstm_state)
  online_q = agent.network.unroll(observations[burn:], done[burn:], online_state)[0]
  target_q = agent.target_network.unroll(observations, done, lstm_state)[0][burn:]
  online_q, target_q = np.asarray(online_q, np.float64), np.asarray(target_q, np.float64)
  rewards = np.asarray(time_major['reward'][burn + 1:], np.float64)
  terminated, truncated = time_major['terminated'][burn + 1:], time_major['truncated'][burn + 1:]
  actions = time_major['action'][burn:-1]
  num_steps, batch_size = rewards.shape
  best = np.argmax(online_q[1:], axis=-1)
  bootstrap = np.take_along_axis(target_q[1:], best[..., None], -1)[..., 0]
  targets, valid = np.zeros((num_steps, batch_size)), np.ones((num_steps, batch_size), bool)
  for b in range(batch_size):
    for t in range(num_steps):
      end = min(t + n_steps, num_steps)
      total, weight, bootstraps = 0.0, 1.0, True
      for j in range(t, end):
        total += weight * rewards[j, b]
        if terminated[j, b]:
          bootstraps = False
          break
        if truncated[j, b]:
          valid[t, b] = bootstraps = False
          break
        weight *= discount
      if bootstraps:
        total += weight * _h_inv(bootstrap[end - 1, b], eps)
      targets[t, b] = _h(total, eps)
  q_taken = np.take_along_axis(online_q[:-1], actions[..., None], -1)[..., 0]
  td = np.where(valid, q_taken - targets, 0.0)
  count = valid.sum(0)
  loss = np.mean(sample.weights * (0.5 * td ** 2).sum(0) / np.maximum(count, 1))
  abs_td = np.abs(td)
  priorities = eta * abs_td.max(0) + (1 - eta) * abs_td.sum(0) / np.maximum(count, 1)
  return loss, priorities, valid


@pytest.mark.parametrize('use_lstm', [True, False])
def test_train_step_loss_and_priorities_match_a_numpy_reference(use_lstm):
  agent = _agent(n_steps=3, discount=0.9, use_lstm=use_lstm)
  # A target network unlike the online one, so double Q matters.
  for variable in agent.target_network.weights:
    variable.assign(1.5 * variable + 0.01)
  burn = agent.config.burn_in_steps
  sample = _random_sample(agent, VECTOR, np.random.default_rng(6), done_probability=0.0)
  steps = sample.data.steps
  steps.terminated[0, burn + 2] = True  # Trained transition 1 -> 2 of env 0 ends.
  steps.truncated[1, burn + 3] = True  # Trained transition 2 -> 3 of env 1 is cut.
  steps.terminated[2, 1] = True  # An episode starts inside env 2's burn-in.
  loss, priorities, valid = _reference(agent, sample, discount=0.9, n_steps=3)
  assert not valid.all() and valid.any(axis=0).all()

  result = agent.train_step(sample)
  logs, got = result.logs, result.priorities
  assert 'priorities' not in logs
  assert isinstance(got, np.ndarray) and got.shape == (agent.batch_unrolls,)
  np.testing.assert_allclose(got, priorities, rtol=1e-4, atol=1e-6)
  assert logs['loss'] == pytest.approx(loss, rel=1e-4)
  for key in ('loss', 'mean_q', 'mean_target', 'mean_abs_td', 'max_abs_td', 'valid_fraction',
              'grad_norm', 'learning_rate', 'target_updated', 'top_rung_epsilon'):
    assert isinstance(logs[key], float) and np.isfinite(logs[key]), (key, logs)
  assert logs['valid_fraction'] == pytest.approx(valid.mean())
  assert logs['learning_rate'] == pytest.approx(1e-4)
  assert logs['target_updated'] == 0.0


def test_target_network_is_copied_every_period():
  agent = _agent(target_update_period=2)

  def equal_to_online():
    return all(np.array_equal(t.numpy(), o.numpy())
               for t, o in zip(agent.target_network.weights, agent.network.weights))

  assert equal_to_online()  # Copied at construction.
  assert not agent.target_network.trainable_variables
  initial = [v.numpy().copy() for v in agent.network.weights]
  rng = np.random.default_rng(7)
  logs = agent.train_step(_random_sample(agent, VECTOR, rng)).logs
  assert logs['target_updated'] == 0.0 and not equal_to_online()
  for want, got in zip(initial, agent.target_network.weights):
    np.testing.assert_array_equal(got.numpy(), want)
  logs = agent.train_step(_random_sample(agent, VECTOR, rng)).logs
  assert logs['target_updated'] == 1.0 and equal_to_online()
  assert int(agent.optimizer.iterations) == 2
  train_function = agent._train_function  # pylint: disable=protected-access
  assert train_function.experimental_get_tracing_count() == 1


@pytest.mark.parametrize('unroll_torso_dtype', ['float32', 'bfloat16'])
def test_atari_train_step_is_finite(unroll_torso_dtype):
  agent = _agent(ATARI, torso='nature', batch_sequences=2, burn_in_steps=1, trained_steps=2,
                 unroll_torso_dtype=unroll_torso_dtype)
  before = [v.numpy() for v in agent.network.trainable_variables]
  result = agent.train_step(_random_sample(agent, ATARI, np.random.default_rng(8)))
  assert result.priorities.shape == (2,) and np.isfinite(result.priorities).all()
  assert all(np.isfinite(value) for value in result.logs.values()), result.logs
  # The torso's variables stay float32 and its gradients reach them.
  for variable, old in zip(agent.network.trainable_variables, before):
    assert variable.dtype == tf.float32
    assert not np.array_equal(variable.numpy(), old), variable.name


def test_bfloat16_unroll_torso_stays_within_its_rounding_of_float32_inference():
  agent = _agent(ATARI, torso='nature', unroll_torso_dtype='bfloat16')
  rng = np.random.default_rng(9)
  observations = random_observations(ATARI, [3, 2], rng)
  done = np.zeros([3, 2], bool)
  initial = agent.initial_core_state(2)
  state, step_q = initial, []
  for t in range(3):
    _, outputs, state = infer(agent, observations[t], done[t], state)
    step_q.append(outputs['q'].numpy())
  q, _ = tf.function(agent.network.unroll)(observations, done, initial)
  # bfloat16 keeps 8 significant bits: about 0.4% a product, a few % through the torso.
  scale = np.abs(np.stack(step_q)).max()
  np.testing.assert_allclose(q, np.stack(step_q), rtol=0, atol=0.05 * scale)
  assert not np.array_equal(q, np.stack(step_q))  # The unroll did run in bfloat16.


def test_checkpoint_round_trip_restores_networks_and_optimizer(tmp_path):
  trained = _agent(seed=1, target_update_period=3)
  rng = np.random.default_rng(9)
  for _ in range(2):
    trained.train_step(_random_sample(trained, VECTOR, rng))
  path = tf.train.Checkpoint(**trained.checkpoint_items()).write(str(tmp_path / 'ckpt'))

  restored = _agent(seed=2, target_update_period=3)
  restored.warm_up([2])
  tf.train.Checkpoint(**restored.checkpoint_items()).read(path).assert_consumed()
  assert int(restored.optimizer.iterations) == 2
  for network in ('network', 'target_network'):
    for want, got in zip(getattr(trained, network).weights, getattr(restored, network).weights):
      np.testing.assert_array_equal(got.numpy(), want.numpy())
  assert len(restored.optimizer.variables) == len(trained.optimizer.variables)
  for want, got in zip(trained.optimizer.variables, restored.optimizer.variables):
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
  # Each network is whole in the checkpoint by itself, not only through the
  # optimizer's references (Keras 3 layers kept only in lists would be missing).
  alone = _agent(seed=3)
  tf.train.Checkpoint(model=alone.network, target_model=alone.target_network).read(
      path).expect_partial()
  for network in ('network', 'target_network'):
    for want, got in zip(getattr(trained, network).weights, getattr(alone, network).weights):
      np.testing.assert_array_equal(got.numpy(), want.numpy())
  # And training goes on identically, the target copy at step 3 included.
  sample = _random_sample(trained, VECTOR, rng)
  want, got = trained.train_step(sample), restored.train_step(sample)
  np.testing.assert_allclose(got.priorities, want.priorities, rtol=1e-6)
  assert got.logs == pytest.approx(want.logs, rel=1e-6) and got.logs['target_updated'] == 1.0

  other_rate = _agent(learning_rate=3e-4)
  other_rate.warm_up([1])
  tf.train.Checkpoint(**other_rate.checkpoint_items()).read(path).assert_consumed()
  other_rate.on_restored()
  assert float(other_rate.optimizer.learning_rate.numpy()) == pytest.approx(3e-4)


def test_a_decaying_ladder_moves_every_rung_with_one_exponent():
  # b(t) = 0.4 + (0.1 - 0.4) min(1, t / 1000); rung i: b(t) ** (1 + 7 i / 3), by hand.
  exponent = lambda frames: exploration.ladder_exponent(frames, 0.4, 0.1, 1000)
  assert exponent(0) == 1.0
  assert exponent(500) == pytest.approx(math.log(0.25) / math.log(0.4))  # b = 0.25: 1.51294
  assert exponent(500) == pytest.approx(1.512942, abs=1e-6)
  assert exponent(1000) == exponent(5000) == pytest.approx(math.log(0.1) / math.log(0.4))
  for frames, base in ((0, 0.4), (500, 0.25), (1000, 0.1), (5000, 0.1)):
    for i in range(4):
      rung = exploration.env_epsilon(i, 4, 0.4, 7.0)
      assert rung ** exponent(frames) == pytest.approx(base ** (1 + 7 * i / 3), rel=1e-9)
  for bad in (dict(epsilon_base_final=0.5), dict(epsilon_base_final=0.0),
              dict(epsilon_base=1.0)):
    args = dict(dict(env_frames=0, epsilon_base=0.4, epsilon_base_final=0.1,
                     decay_frames=1000), **bad)
    with pytest.raises(ValueError, match='0 < epsilon_base_final <= epsilon_base < 1'):
      exploration.ladder_exponent(**args)


def test_training_envs_act_on_the_decayed_ladder_and_evaluation_envs_do_not():
  agent = _agent(epsilon_base=0.4, epsilon_base_final=0.1, epsilon_decay_frames=1000)
  assert agent.epsilon_exponent == 1.0
  rows = 3000  # Per group; frequencies then sit within ~0.01 (1 sigma) of theirs.
  rng = np.random.default_rng(2)
  observation = random_observations(VECTOR, [2 * rows], rng)
  acting = acting_params(2 * rows, epsilon=0.4, evaluation=np.repeat([False, True], rows))
  num_actions = VECTOR.num_actions

  def non_greedy_shares():
    action, outputs, _ = infer(agent, observation, np.zeros(2 * rows, bool),
                               agent.initial_core_state(2 * rows), acting)
    differs = action.numpy() != np.argmax(outputs['q'].numpy(), axis=-1)
    return np.mean(differs[:rows]), np.mean(differs[rows:])

  random_share = (num_actions - 1) / num_actions  # a random action that is not the argmax
  training, evaluation = non_greedy_shares()
  assert training == pytest.approx(0.4 * random_share, abs=0.03)
  assert evaluation == pytest.approx(0.4 * random_share, abs=0.03)
  agent.observe_env_frames(2000)  # Past the decay: the training rows' epsilon is 0.1.
  assert agent.epsilon_exponent == pytest.approx(math.log(0.1) / math.log(0.4), rel=1e-6)
  training, evaluation = non_greedy_shares()
  assert training == pytest.approx(0.1 * random_share, abs=0.03)
  assert evaluation == pytest.approx(0.4 * random_share, abs=0.03)
  config_lib.R2D2Config(epsilon_base_final=np.float32(0.1), epsilon_decay_frames=10)  # accepted
  fixed = _agent()
  fixed.observe_env_frames(10**9)  # A fixed ladder (the default) never moves.
  assert fixed.epsilon_exponent == 1.0


@pytest.mark.parametrize('spec, overrides, match', [
    (spec_lib.EnvSpec((3,), 'float32', action_shape=(2,), action_dtype='float32'), {},
     'discrete'),
    (VECTOR, dict(torso='resnet'),
     "R2D2Config.torso = 'resnet'; accepted: one of 'auto', 'mlp', 'nature'"),
    (VECTOR, dict(torso='nature'), r'\[C, H, W\]'),
    (VECTOR, dict(burn_in_steps=-1), 'R2D2Config.burn_in_steps = -1; accepted: an int >= 0'),
    (VECTOR, dict(n_steps=0), 'R2D2Config.n_steps = 0; accepted: an int >= 1'),
    (VECTOR, dict(batch_sequences=True), 'R2D2Config.batch_sequences = True'),
    (VECTOR, dict(discount=1.5), r'R2D2Config.discount = 1.5; accepted: a number in \[0, 1\]'),
    (VECTOR, dict(epsilon_base=2.0), r'R2D2Config.epsilon_base = 2.0; accepted: .*\[0, 1\]'),
    (VECTOR, dict(epsilon_decay_frames=1000),
     r'R2D2Config.epsilon_decay_frames = 1000; accepted: 0 while epsilon_base_final is None'),
    (VECTOR, dict(epsilon_base_final=0.5),
     r'R2D2Config.epsilon_base_final = 0.5; accepted: None, or a number in \(0, '
     r'epsilon_base = 0.4\]'),
    (VECTOR, dict(epsilon_base_final=0.1),
     'R2D2Config.epsilon_decay_frames = 0; accepted: an int >= 1'),
    (VECTOR, dict(epsilon_base_final=0.1, epsilon_decay_frames=-5),
     'R2D2Config.epsilon_decay_frames = -5; accepted: an int >= 1'),
    (VECTOR, dict(epsilon_base_final=True, epsilon_decay_frames=10),
     'R2D2Config.epsilon_base_final = True; accepted: None, or a number'),
    (VECTOR, dict(epsilon_base=1.0, epsilon_base_final=0.1, epsilon_decay_frames=10),
     r'R2D2Config.epsilon_base = 1.0; accepted: a number in \(0, 1\) with a decaying ladder'),
    (VECTOR, dict(max_grad_norm=0.0),
     'R2D2Config.max_grad_norm = 0.0; accepted: a number > 0, or None'),
    (VECTOR, dict(rescaling_eps=-1.0),
     'R2D2Config.rescaling_eps = -1.0; accepted: a number >= 0, or None'),
    (VECTOR, dict(mlp_hidden_sizes=()), 'R2D2Config.mlp_hidden_sizes = \\(\\)'),
    (VECTOR, dict(unroll_torso_dtype='float16'),
     "R2D2Config.unroll_torso_dtype = 'float16'; accepted: one of 'float32', 'bfloat16', 'auto'"),
])
def test_constructor_rejects_bad_arguments(spec, overrides, match):
  with pytest.raises(ValueError, match=match):
    _agent(spec, **overrides)


def test_train_step_rejects_a_malformed_sample():
  agent = _agent()
  sample = _random_sample(agent, VECTOR, np.random.default_rng(10))
  short = _replace_steps(sample, reward=sample.data.steps.reward[:, 1:])
  with pytest.raises(ValueError, match=r'sample reward has shape \(3, 6\).*\[3, 7\]'):
    agent.train_step(short)
  with pytest.raises(ValueError, match=r'sample weights has shape \(2,\), expected \[3\]'):
    agent.train_step(sample._replace(weights=sample.weights[:2]))
  one_part = sample._replace(data=sample.data._replace(core_state=sample.data.core_state[:1]))
  with pytest.raises(ValueError, match='core_state has 1 arrays, expected 2'):
    agent.train_step(one_part)
  with pytest.raises(ValueError, match='takes a seed.types.Sample, got dict'):
    agent.train_step({'reward': sample.data.steps.reward})


def test_gin_binds_the_config_and_the_unroll_holds_the_burn_in():
  try:
    gin.parse_config('R2D2Config.burn_in_steps = 3\nR2D2Config.trained_steps = 5\n'
                     'R2D2Config.lstm_size = 8\nR2D2Config.head_hidden_size = 8')
    agent = agent_lib.R2D2Agent(VECTOR)
  finally:
    gin.clear_config()
  assert agent.unroll_length == 8 and agent.unroll_overlap == 3
  assert agent.config.trained_steps == 5 and agent.config.burn_in_steps == 3
  assert agent.batch_unrolls == 64 and agent.input_kind == 'replay'
  assert agent.config_class is config_lib.R2D2Config and agent.trained_outputs == ()


@pytest.mark.parametrize('old, new', [
    ('R2D2Agent.burn_in', 'R2D2Config.burn_in_steps'),
    ('R2D2Agent.unroll_length', 'R2D2Config.trained_steps'),
    ('R2D2Agent.batch_size', 'R2D2Config.batch_sequences'),
    ('R2D2Config.batch_size', 'R2D2Config.batch_sequences'),
    ('R2D2Agent.n_steps', 'R2D2Config.n_steps'),
])
def test_old_bindings_name_the_new_ones(old, new):
  with pytest.raises(ValueError, match=f'{old} was renamed; bind {new} instead'):
    seed_config.parse_gin([], [f'{old} = 4'])
