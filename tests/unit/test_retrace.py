"""Tests for seed.losses.retrace."""
import numpy as np
import pytest
import tensorflow as tf

from seed.losses import retrace


def _run(**kwargs):
  return retrace.retrace_targets(**kwargs).numpy()


def _reference(log_rhos, discounts, rewards, q_values, state_values, bootstrap_value,
               truncated, lambda_):
  """Munos et al.'s sum as a double loop over flattened batch entries (no recursion):

  Q^ret_s = Q_s + sum_{t=s}^{T-1} (prod_{i=s+1}^{t} discounts_{i-1} c_i) delta_t,
  with delta_t = 0 and the trace cut after t where truncated[t].
  """
  num_steps = log_rhos.shape[0]
  flat = lambda x: np.asarray(x, np.float64).reshape(num_steps, -1)
  rhos, gammas, rs, qs, vs = map(flat, (np.exp(log_rhos), discounts, rewards, q_values,
                                        state_values))
  cut = np.asarray(truncated, bool).reshape(num_steps, -1)
  boot = np.asarray(bootstrap_value, np.float64).reshape(-1)
  cs = lambda_ * np.minimum(1.0, rhos)
  targets = np.zeros_like(qs)
  for b in range(qs.shape[1]):
    for s in range(num_steps):
      total = qs[s, b]
      trace = 1.0
      for t in range(s, num_steps):
        if t > s:
          if cut[t - 1, b]:
            break
          trace *= gammas[t - 1, b] * cs[t, b]
        v_next = vs[t + 1, b] if t + 1 < num_steps else boot[b]
        delta = 0.0 if cut[t, b] else rs[t, b] + gammas[t, b] * v_next - qs[t, b]
        total += trace * delta
      targets[s, b] = total
  return targets.reshape(np.shape(log_rhos))


def _random_inputs(rng, shape, p_end=0.15, p_trunc=0.1):
  normal = lambda s: rng.normal(0.0, 1.0, s).astype(np.float32)
  return dict(
      log_rhos=normal(shape),
      discounts=np.where(rng.random(shape) < p_end, 0.0, 0.97).astype(np.float32),
      rewards=normal(shape), q_values=normal(shape), state_values=normal(shape),
      bootstrap_value=normal(shape[1:]),
      truncated=rng.random(shape) < p_trunc)


def test_hand_worked_numbers():
  # Column 0: rho = [2, 0.5, 1] -> c = [1, 0.5, 1] (c_0 unused); gamma = 0.9;
  #   Q = [1, 2, 1], V = [1.5, 1, 2], r = [1, 0, 2], bootstrap 3.
  #   Q^ret_2 = 2 + 0.9*3                        = 4.7
  #   Q^ret_1 = 0 + 0.9*(1*(4.7 - 1) + 2)         = 5.13
  #   Q^ret_0 = 1 + 0.9*(0.5*(5.13 - 2) + 1)      = 3.3085
  # Column 1: on-policy, terminated at t=1 (discount 0), truncated at t=2 so the
  #   bootstrap 10 (the next episode's value) must be ignored; Q = V = 1, r = [1, 2, 3].
  #   Q^ret_2 = Q_2 = 1 (no target);  Q^ret_1 = 2 + 0 = 2;
  #   Q^ret_0 = 1 + 0.9*(1*(2 - 1) + 1) = 2.8
  targets = _run(
      log_rhos=np.log([[2.0, 1.0], [0.5, 1.0], [1.0, 1.0]]),
      discounts=[[0.9, 0.9], [0.9, 0.0], [0.9, 0.9]],
      rewards=[[1.0, 1.0], [0.0, 2.0], [2.0, 3.0]],
      q_values=[[1.0, 1.0], [2.0, 1.0], [1.0, 1.0]],
      state_values=[[1.5, 1.0], [1.0, 1.0], [2.0, 1.0]],
      bootstrap_value=[3.0, 10.0],
      truncated=[[False, False], [False, False], [False, True]])
  np.testing.assert_allclose(targets, [[3.3085, 2.8], [5.13, 2.0], [4.7, 1.0]], rtol=1e-6)


@pytest.mark.parametrize('shape', [(7, 5), (6, 3, 4), (1, 2)])
@pytest.mark.parametrize('lambda_', [1.0, 0.9])
def test_matches_the_slow_loop_for_any_batch_shape(shape, lambda_):
  inputs = _random_inputs(np.random.default_rng(sum(shape)), shape)
  np.testing.assert_allclose(_run(lambda_=lambda_, **inputs),
                             _reference(lambda_=lambda_, **inputs), rtol=1e-5, atol=1e-5)


def test_splitting_at_an_episode_end_equals_the_whole_trace():
  rng = np.random.default_rng(3)
  inputs = _random_inputs(rng, (9, 4), p_end=0.0, p_trunc=0.0)
  end = 4  # every column terminates at t = 4
  inputs['discounts'][end] = 0.0
  whole = _run(**inputs)
  first = {k: v[:end + 1] for k, v in inputs.items() if k != 'bootstrap_value'}
  # Whatever follows a termination is multiplied by discount 0: any bootstrap works.
  first_part = _run(bootstrap_value=rng.normal(size=4).astype(np.float32), **first)
  second = {k: v[end + 1:] for k, v in inputs.items() if k != 'bootstrap_value'}
  second_part = _run(bootstrap_value=inputs['bootstrap_value'], **second)
  np.testing.assert_allclose(whole, np.concatenate([first_part, second_part]), rtol=1e-6)


def test_truncation_equals_bootstrapping_from_the_last_observed_state():
  inputs = _random_inputs(np.random.default_rng(4), (8, 3), p_end=0.0, p_trunc=0.0)
  inputs['truncated'][5] = True
  inputs['state_values'][6:] = np.nan  # the next episode's values must not leak in
  inputs['bootstrap_value'][:] = np.nan
  whole = _run(**inputs)
  before = {k: v[:5] for k, v in inputs.items() if k != 'bootstrap_value'}
  expected = _run(bootstrap_value=inputs['state_values'][5], **before)
  np.testing.assert_allclose(whole[:5], expected, rtol=1e-6)
  np.testing.assert_array_equal(whole[5], inputs['q_values'][5])


def test_one_action_on_policy_gives_the_bootstrapped_discounted_return():
  # Q = V (a single action) and rho = 1: every correction cancels and Q^ret_t is the
  # n-step return to the end of the unroll.
  rng = np.random.default_rng(5)
  values = rng.normal(size=(6, 2)).astype(np.float32)
  rewards = rng.normal(size=(6, 2)).astype(np.float32)
  bootstrap = rng.normal(size=2).astype(np.float32)
  targets = _run(log_rhos=np.zeros((6, 2)), discounts=np.full((6, 2), 0.9), rewards=rewards,
                 q_values=values, state_values=values, bootstrap_value=bootstrap)
  expected = np.zeros((6, 2))
  following = bootstrap.astype(np.float64)
  for t in reversed(range(6)):
    following = rewards[t] + 0.9 * following
    expected[t] = following
  np.testing.assert_allclose(targets, expected, rtol=1e-5)


def test_lambda_zero_is_the_one_step_expected_sarsa_target():
  inputs = _random_inputs(np.random.default_rng(6), (5, 3), p_trunc=0.0)
  next_values = np.concatenate([inputs['state_values'][1:], inputs['bootstrap_value'][None]])
  np.testing.assert_allclose(
      _run(lambda_=0.0, **inputs),
      inputs['rewards'] + inputs['discounts'] * next_values, rtol=1e-6)


def test_first_trace_coefficient_is_unused():
  inputs = _random_inputs(np.random.default_rng(7), (5, 3))
  changed = dict(inputs, log_rhos=inputs['log_rhos'].copy())
  changed['log_rhos'][0] = -30.0
  np.testing.assert_array_equal(_run(**inputs), _run(**changed))


def test_targets_are_gradient_stopped():
  inputs = _random_inputs(np.random.default_rng(8), (4, 2))
  q_values = tf.Variable(inputs.pop('q_values'))
  with tf.GradientTape() as tape:
    total = tf.reduce_sum(retrace.retrace_targets(q_values=q_values, **inputs))
  assert tape.gradient(total, q_values) is None


@pytest.mark.parametrize('name,value,message', [
    ('rewards', np.zeros((4, 3)), 'rewards has shape (4, 3), expected (4, 2)'),
    ('bootstrap_value', np.zeros(3), 'bootstrap_value has shape (3,), expected (2,)'),
    ('truncated', np.zeros((3, 2), bool), 'truncated has shape (3, 2), expected (4, 2)'),
])
def test_mismatched_shapes_are_named(name, value, message):
  inputs = _random_inputs(np.random.default_rng(9), (4, 2))
  inputs[name] = value
  with pytest.raises(ValueError, match=message.replace('(', r'\(').replace(')', r'\)')):
    _run(**inputs)


@pytest.mark.parametrize('lambda_', [-0.1, 1.5])
def test_lambda_outside_the_unit_interval_is_refused(lambda_):
  with pytest.raises(ValueError, match=r'lambda_ = .*accepted: a number in \[0, 1\]'):
    _run(lambda_=lambda_, **_random_inputs(np.random.default_rng(10), (3, 2)))
