"""Tests of the R2D2 agent: exploration, inference, burn-in, loss, target network, checkpoints."""
import numpy as np
import pytest

tf = pytest.importorskip('tensorflow')

import gin  # pylint: disable=g-import-not-at-top,g-bad-import-order

from seed.agents.r2d2 import agent as agent_lib  # pylint: disable=g-import-not-at-top
from seed.envs import spec as spec_lib  # pylint: disable=g-import-not-at-top
from tests.agent_inputs import infer, random_observations  # pylint: disable=g-import-not-at-top

VECTOR = spec_lib.EnvSpec((4,), 'float32', num_actions=3)
ATARI = spec_lib.EnvSpec((4, 84, 84), 'uint8', num_actions=6, frames_per_step=4)
# Small widths and lengths keep the tests fast; the logic does not depend on them.
SMALL = dict(torso='mlp', mlp_hidden_sizes=(16,), lstm_size=8, head_hidden_size=16,
             burn_in=2, unroll_length=4, batch_size=3)
LSTM_SIZE = 8
# Q values recomputed in a [T * B] batch differ from [B]-row inference only by
# float32 rounding (the kernels block the rows differently).
TOLERANCE = dict(rtol=1e-5, atol=1e-5)


def _agent(spec=VECTOR, **overrides):
  return agent_lib.R2D2Agent(spec, **dict(SMALL, **overrides))


def _random_batch(agent, spec, rng, done_probability=0.2):
  """A [batch_size, burn_in + unroll_length + 1] batch, as the replay would hand it."""
  shape = (agent.batch_size, agent.unroll_length + 1)
  lstm_state = tuple(rng.normal(size=x.shape).astype(np.float32)
                     for x in agent.initial_core_state(agent.batch_size)[:-1])
  return {
      'observation': random_observations(spec, shape, rng),
      'reward': rng.normal(0.0, 3.0, shape).astype(np.float32),
      'terminated': rng.random(shape) < done_probability,
      'truncated': rng.random(shape) < done_probability / 2,
      'action': rng.integers(0, spec.num_actions, shape).astype(np.int32),
      'q': rng.normal(size=shape + (spec.num_actions,)).astype(np.float32),
      'core_state': lstm_state + (rng.random(agent.batch_size).astype(np.float32),),
      'importance_weights': rng.uniform(0.2, 1.0, agent.batch_size).astype(np.float32),
  }


def _with_epsilon(agent, batch, epsilon):
  return agent.initial_core_state(batch)[:-1] + (np.asarray(epsilon, np.float32),)


@pytest.mark.parametrize('spec, overrides, torso', [
    (VECTOR, {}, 'mlp'), (VECTOR, dict(use_lstm=False), 'mlp'),
    (ATARI, dict(torso='auto'), 'nature')])
def test_inference_shapes_and_dtypes(spec, overrides, torso):
  agent = _agent(spec, **overrides)
  assert agent.network.torso == torso
  batch = 2
  state = _with_epsilon(agent, batch, [0.25, 0.75])
  action, outputs, new_state = infer(
      agent, random_observations(spec, [batch], np.random.default_rng(0)), [True, False], state)
  assert action.dtype == tf.int32 and action.shape == (batch,)
  assert np.all((action.numpy() >= 0) & (action.numpy() < spec.num_actions))
  assert set(outputs) == {'q'}
  assert outputs['q'].dtype == tf.float32 and outputs['q'].shape == (batch, spec.num_actions)
  assert len(new_state) == len(state) == (1 if overrides.get('use_lstm') is False else 3)
  for array in new_state[:-1]:
    assert array.dtype == tf.float32 and array.shape == (batch, LSTM_SIZE)
  np.testing.assert_array_equal(new_state[-1], [0.25, 0.75])


def test_epsilon_greedy_follows_each_rows_epsilon():
  agent = _agent()
  rows = 3000  # Per epsilon group; frequencies then sit within ~0.01 (1 sigma) of theirs.
  rng = np.random.default_rng(1)
  observation = random_observations(VECTOR, [3 * rows], rng)
  epsilon = np.repeat(np.float32([0.0, 1.0, 0.5]), rows)
  action, outputs, new_state = infer(agent, observation, np.zeros(3 * rows, bool),
                                      _with_epsilon(agent, 3 * rows, epsilon))
  action = action.numpy()
  greedy = np.argmax(outputs['q'].numpy(), axis=-1)
  num_actions = VECTOR.num_actions
  np.testing.assert_array_equal(action[:rows], greedy[:rows])  # epsilon 0: argmax.
  counts = np.bincount(action[rows:2 * rows], minlength=num_actions) / rows
  np.testing.assert_allclose(counts, 1.0 / num_actions, atol=0.05)  # epsilon 1: uniform.
  non_greedy = np.mean(action[2 * rows:] != greedy[2 * rows:])
  assert non_greedy == pytest.approx(0.5 * (num_actions - 1) / num_actions, abs=0.05)
  np.testing.assert_array_equal(new_state[-1], epsilon)


def test_env_core_state_gives_the_epsilon_ladder():
  agent = _agent(num_epsilon_envs=4, epsilon_base=0.4, epsilon_alpha=7.0, eval_epsilon=0.01)
  states = [agent.env_core_state(i, evaluation=False) for i in range(6)]
  for state in states:
    assert len(state) == 3
    for part in state[:2]:
      assert part.dtype == np.float32 and part.shape == (LSTM_SIZE,) and not part.any()
    assert state[2].dtype == np.float32 and state[2].shape == ()
  epsilons = [float(state[2]) for state in states]
  assert epsilons[0] == pytest.approx(0.4, rel=1e-6)  # i = 0: 0.4 ** 1.
  assert epsilons[3] == pytest.approx(0.4 ** 8, rel=1e-6)  # i = N - 1: 0.4 ** (1 + 7).
  assert epsilons[5] == pytest.approx(0.4 ** (1 + 7 / 3), rel=1e-6)  # 5 mod 4 = 1.
  assert epsilons[4] == epsilons[0]
  assert float(agent.env_core_state(3, evaluation=True)[2]) == pytest.approx(0.01)
  np.testing.assert_array_equal(agent.initial_core_state(2)[-1], np.float32([0.4, 0.4]))
  assert float(_agent(num_epsilon_envs=1).env_core_state(7, False)[-1]) == pytest.approx(0.4)
  with pytest.raises(ValueError, match='env_ordinal must be an int >= 0, got -1'):
    agent.env_core_state(-1, evaluation=False)
  # The server stacks per-env states into a batch; inference takes and keeps them.
  batched = tuple(np.stack(parts) for parts in zip(*states))
  _, _, new_state = infer(agent, np.zeros((6, 4), np.float32), np.zeros(6, bool), batched)
  np.testing.assert_array_equal(new_state[-1], batched[-1])


def test_done_resets_the_lstm_state_but_keeps_the_epsilon():
  agent = _agent()
  rng = np.random.default_rng(2)
  observation = random_observations(VECTOR, [2], rng)
  epsilon = np.float32([0.3, 0.7])
  used = tuple(rng.normal(size=(2, LSTM_SIZE)).astype(np.float32) for _ in range(2))
  _, reset, reset_state = infer(agent, observation, [True, False], used + (epsilon,))
  _, fresh, fresh_state = infer(agent, observation, [False, False],
                                 _with_epsilon(agent, 2, epsilon))
  _, kept, kept_state = infer(agent, observation, [False, False], used + (epsilon,))
  np.testing.assert_array_equal(reset['q'][0], fresh['q'][0])
  np.testing.assert_array_equal(reset['q'][1], kept['q'][1])
  for got, want_reset, want_kept in zip(reset_state[:2], fresh_state, kept_state):
    np.testing.assert_array_equal(got[0], want_reset[0])
    np.testing.assert_array_equal(got[1], want_kept[1])
  assert not np.allclose(fresh['q'][1], kept['q'][1])
  np.testing.assert_array_equal(reset_state[-1], epsilon)


def test_warm_up_traces_each_size_once():
  agent = _agent()
  agent.warm_up([1, 4, 8])
  count = agent.inference.experimental_get_tracing_count()
  assert count == 3
  rng = np.random.default_rng(3)
  for batch in (1, 4, 8, 4, 1):
    infer(agent, random_observations(VECTOR, [batch], rng), rng.random(batch) < 0.5,
           _with_epsilon(agent, batch, rng.random(batch)))
  assert agent.inference.experimental_get_tracing_count() == count
  assert agent.optimizer.built
  action, _, _ = agent.batched_policy(4)(
      random_observations(VECTOR, [4], rng), np.zeros(4, np.float32), np.zeros(4, bool),
      agent.initial_core_state(4))
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
  state, step_q = initial + (np.zeros(batch, np.float32),), []
  for t in range(steps):
    _, outputs, state = infer(agent, observations[t], done[t], state)
    step_q.append(outputs['q'].numpy())
  q, final_state = tf.function(agent.network.unroll)(observations, done, initial)
  np.testing.assert_allclose(q, np.stack(step_q), **TOLERANCE)
  for got, want in zip(final_state, state[:2]):
    np.testing.assert_allclose(got, want, **TOLERANCE)


def _split(batch):
  fields = {key: batch[key] for key in ('observation', 'reward', 'terminated', 'truncated',
                                        'action')}
  return fields, batch['core_state'], batch['importance_weights']


def test_burn_in_steps_get_no_gradient():
  agent = _agent()
  burn = agent.burn_in
  # No episode starts: otherwise a reset would cut the burn-in off by itself.
  batch = _random_batch(agent, VECTOR, np.random.default_rng(5), done_probability=0.0)
  fields, core_state, weights = _split(batch)
  observations = tf.constant(fields['observation'])
  core_state = tuple(tf.constant(x) for x in core_state)
  with tf.GradientTape(persistent=True) as tape:
    tape.watch(observations)
    tape.watch(core_state)
    loss = agent.sequence_loss(dict(fields, observation=observations), core_state,
                               weights).loss
  gradient = tape.gradient(loss, observations).numpy()
  assert not gradient[:, :burn].any()
  assert np.abs(gradient[:, burn:-1]).sum() > 0  # The trained transitions do get one.
  for part in tape.gradient(loss, core_state):
    assert part is None or not np.asarray(part).any()

  def loss_of(**changes):
    return float(agent.sequence_loss(dict(fields, **changes), core_state, weights).loss)

  base = loss_of()
  # The burn-in observations do shape the state the trained part starts from ...
  moved = fields['observation'].copy()
  moved[:, :burn] += 1.0
  assert loss_of(observation=moved) != pytest.approx(base, rel=1e-4)
  # ... but their rewards (and reward[burn], the transition into the first trained
  # step) and actions are not trained on.
  rewards = fields['reward'].copy()
  rewards[:, :burn + 1] += 10.0
  actions = (fields['action'] + 1) % VECTOR.num_actions
  actions[:, burn:] = fields['action'][:, burn:]
  assert loss_of(reward=rewards, action=actions) == pytest.approx(base, rel=1e-6)


def _h(x, eps):
  return np.sign(x) * (np.sqrt(np.abs(x) + 1.0) - 1.0) + eps * x


def _h_inv(x, eps):
  root = (np.sqrt(1.0 + 4.0 * eps * (np.abs(x) + 1.0 + eps)) - 1.0) / (2.0 * eps)
  return np.sign(x) * (root ** 2 - 1.0)


def _reference(agent, batch, discount, n_steps, eps=1e-3, eta=0.9):
  """Loss and priorities by hand (NumPy, float64) from the networks' Q values."""
  burn = agent.burn_in
  time_major = {key: np.swapaxes(np.asarray(value), 0, 1) for key, value in batch.items()
                if key not in ('core_state', 'importance_weights')}
  done = time_major['terminated'] | time_major['truncated']
  observations, lstm_state = time_major['observation'], batch['core_state'][:-1]
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
  loss = np.mean(batch['importance_weights'] * (0.5 * td ** 2).sum(0) / np.maximum(count, 1))
  abs_td = np.abs(td)
  priorities = eta * abs_td.max(0) + (1 - eta) * abs_td.sum(0) / np.maximum(count, 1)
  return loss, priorities, valid


@pytest.mark.parametrize('use_lstm', [True, False])
def test_train_step_loss_and_priorities_match_a_numpy_reference(use_lstm):
  agent = _agent(n_steps=3, discount=0.9, use_lstm=use_lstm)
  # A target network unlike the online one, so double Q matters.
  for variable in agent.target_network.weights:
    variable.assign(1.5 * variable + 0.01)
  burn = agent.burn_in
  batch = _random_batch(agent, VECTOR, np.random.default_rng(6), done_probability=0.0)
  batch['terminated'][0, burn + 2] = True  # Trained transition 1 -> 2 of env 0 ends.
  batch['truncated'][1, burn + 3] = True  # Trained transition 2 -> 3 of env 1 is cut.
  batch['terminated'][2, 1] = True  # An episode starts inside env 2's burn-in.
  loss, priorities, valid = _reference(agent, batch, discount=0.9, n_steps=3)
  assert not valid.all() and valid.any(axis=0).all()

  logs = agent.train_step(batch)
  got = logs.pop('priorities')
  assert isinstance(got, np.ndarray) and got.shape == (agent.batch_size,)
  np.testing.assert_allclose(got, priorities, rtol=1e-4, atol=1e-6)
  assert logs['loss'] == pytest.approx(loss, rel=1e-4)
  for key in ('loss', 'mean_q', 'mean_target', 'mean_abs_td', 'max_abs_td', 'valid_fraction',
              'grad_norm', 'learning_rate', 'target_updated'):
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
  logs = agent.train_step(_random_batch(agent, VECTOR, rng))
  assert logs['target_updated'] == 0.0 and not equal_to_online()
  for want, got in zip(initial, agent.target_network.weights):
    np.testing.assert_array_equal(got.numpy(), want)
  logs = agent.train_step(_random_batch(agent, VECTOR, rng))
  assert logs['target_updated'] == 1.0 and equal_to_online()
  assert int(agent.optimizer.iterations) == 2
  train_function = agent._train_function  # pylint: disable=protected-access
  assert train_function.experimental_get_tracing_count() == 1


def test_atari_train_step_is_finite():
  agent = _agent(ATARI, torso='nature', batch_size=2, burn_in=1, unroll_length=2)
  logs = agent.train_step(_random_batch(agent, ATARI, np.random.default_rng(8)))
  assert logs.pop('priorities').shape == (2,)
  assert all(np.isfinite(value) for value in logs.values()), logs


def test_checkpoint_round_trip_restores_networks_and_optimizer(tmp_path):
  trained = _agent(seed=1, target_update_period=3)
  rng = np.random.default_rng(9)
  for _ in range(2):
    trained.train_step(_random_batch(trained, VECTOR, rng))
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
  batch = _random_batch(trained, VECTOR, rng)
  want, got = trained.train_step(batch), restored.train_step(batch)
  np.testing.assert_allclose(got.pop('priorities'), want.pop('priorities'), rtol=1e-6)
  assert got == pytest.approx(want, rel=1e-6) and got['target_updated'] == 1.0

  other_rate = _agent(learning_rate=3e-4)
  other_rate.warm_up([1])
  tf.train.Checkpoint(**other_rate.checkpoint_items()).read(path).assert_consumed()
  other_rate.on_restored()
  assert float(other_rate.optimizer.learning_rate.numpy()) == pytest.approx(3e-4)


@pytest.mark.parametrize('spec, overrides, match', [
    (spec_lib.EnvSpec((3,), 'float32', action_shape=(2,), action_dtype='float32'), {},
     'discrete'),
    (VECTOR, dict(torso='resnet'), "Unknown torso 'resnet'; accepted: auto, mlp, nature"),
    (VECTOR, dict(torso='nature'), r'\[C, H, W\]'),
    (VECTOR, dict(burn_in=-1), 'burn_in must be an int >= 0, got -1'),
    (VECTOR, dict(n_steps=0), 'n_steps must be an int >= 1, got 0'),
    (VECTOR, dict(discount=1.5), r'discount must be in \[0, 1\], got 1.5'),
    (VECTOR, dict(epsilon_base=2.0), r'epsilon_base must be in \[0, 1\], got 2.0'),
    (VECTOR, dict(max_grad_norm=0.0), 'max_grad_norm must be > 0 or None'),
    (VECTOR, dict(rescaling_eps=-1.0), 'rescaling_eps must be >= 0 or None'),
])
def test_constructor_rejects_bad_arguments(spec, overrides, match):
  with pytest.raises(ValueError, match=match):
    _agent(spec, **overrides)


def test_train_step_rejects_a_malformed_batch():
  agent = _agent()
  batch = _random_batch(agent, VECTOR, np.random.default_rng(10))
  with pytest.raises(ValueError, match=r"batch\['reward'\] has shape \(3, 6\).*\[3, 7\]"):
    agent.train_step(dict(batch, reward=batch['reward'][:, 1:]))
  with pytest.raises(ValueError, match=r"importance_weights'\] has shape \(2,\)"):
    agent.train_step(dict(batch, importance_weights=batch['importance_weights'][:2]))
  with pytest.raises(ValueError, match='has 2 arrays, expected 3'):
    agent.train_step(dict(batch, core_state=batch['core_state'][:2]))
  with pytest.raises(ValueError, match="lacks \\['importance_weights'\\]"):
    agent.train_step({k: v for k, v in batch.items() if k != 'importance_weights'})


def test_gin_configures_the_agent_and_the_unroll_holds_the_burn_in():
  try:
    gin.parse_config('R2D2Agent.burn_in = 3\nR2D2Agent.unroll_length = 5')
    agent = agent_lib.R2D2Agent(VECTOR, lstm_size=8, head_hidden_size=8)
  finally:
    gin.clear_config()
  assert agent.unroll_length == 8 and agent.trained_length == 5 and agent.burn_in == 3
  assert agent.batch_size == 64 and agent.input_kind == 'replay'
