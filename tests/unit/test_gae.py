"""Tests for seed.losses.gae."""
import numpy as np
import pytest
import tensorflow as tf

from seed.losses import gae


def _run(**kwargs):
  out = gae.generalized_advantage_estimation(**kwargs)
  return out.advantages.numpy(), out.returns.numpy()


def _reference(rewards, values, bootstrap_value, discounts, truncated, truncation_values,
               lambda_):
  """GAE's sum definition as a double loop (no recursion), float64.

  A_s = sum_{t=s}^{T-1} (prod_{i=s}^{t-1} discount_i * lambda * (1 - truncated_i)) delta_t,
  delta_t = r_t + discount_t * next_t - v_t, next_t the truncation value where
  truncated[t], else V of the following step (bootstrap_value after the last).
  """
  num_steps, batch_size = rewards.shape
  advantages = np.zeros((num_steps, batch_size))
  deltas = np.zeros((num_steps, batch_size))
  for b in range(batch_size):
    for t in range(num_steps):
      if discounts[t, b] == 0.0:
        next_value = 0.0  # Terminated: nothing after t counts, whatever it is.
      elif truncated[t, b]:
        next_value = truncation_values[t, b]
      elif t + 1 < num_steps:
        next_value = values[t + 1, b]
      else:
        next_value = bootstrap_value[b]
      deltas[t, b] = rewards[t, b] + discounts[t, b] * next_value - values[t, b]
  for b in range(batch_size):
    for s in range(num_steps):
      for t in range(s, num_steps):
        trace = np.prod([discounts[i, b] * lambda_ * (not truncated[i, b])
                         for i in range(s, t)])  # 1 if empty.
        advantages[s, b] += trace * deltas[t, b]
  return advantages, advantages + values


def _random_inputs(rng, num_steps, batch_size, p_end=0.15, p_trunc=0.15):
  truncated = rng.random((num_steps, batch_size)) < p_trunc
  # NaN where not truncated: those entries must never be read.
  truncation_values = np.where(truncated, rng.normal(0.0, 1.0, truncated.shape), np.nan)
  return dict(
      rewards=rng.normal(0.0, 1.0, (num_steps, batch_size)).astype(np.float32),
      values=rng.normal(0.0, 1.0, (num_steps, batch_size)).astype(np.float32),
      bootstrap_value=rng.normal(0.0, 1.0, (batch_size,)).astype(np.float32),
      discounts=np.where(rng.random((num_steps, batch_size)) < p_end, 0.0,
                         0.97).astype(np.float32),
      truncated=truncated,
      truncation_values=truncation_values.astype(np.float32),
  )


def test_hand_worked_numbers():
  # lambda = 0.5, gamma = 0.9.
  # Column 0: no episode boundary. v = [0.5, 1, 2], bootstrap 4, r = [1, 0, 2].
  #   delta_2 = 2 + 0.9*4 - 2 = 3.6      A_2 = 3.6
  #   delta_1 = 0 + 0.9*2 - 1 = 0.8      A_1 = 0.8 + 0.45*3.6  = 2.42
  #   delta_0 = 1 + 0.9*1 - 0.5 = 1.4    A_0 = 1.4 + 0.45*2.42 = 2.489
  #   returns = A + v = [2.989, 3.42, 5.6]
  # Column 1: truncated at t=0 (true final state's value 5; values[1] = 1 belongs to
  #   the next episode), terminated at t=2 (bootstrap 10 must be ignored).
  #   delta_0 = 1 + 0.9*5 - 1 = 4.5      A_0 = 4.5 (trace cut)
  #   delta_2 = 3 + 0 - 1 = 2            A_2 = 2
  #   delta_1 = 2 + 0.9*1 - 1 = 1.9      A_1 = 1.9 + 0.45*2 = 2.8
  #   returns = [5.5, 3.8, 3.0]
  advantages, returns = _run(
      rewards=[[1.0, 1.0], [0.0, 2.0], [2.0, 3.0]],
      values=[[0.5, 1.0], [1.0, 1.0], [2.0, 1.0]],
      bootstrap_value=[4.0, 10.0],
      discounts=[[0.9, 0.9], [0.9, 0.9], [0.9, 0.0]],
      truncated=[[False, True], [False, False], [False, False]],
      truncation_values=[[np.nan, 5.0], [np.nan, np.nan], [np.nan, np.nan]],
      lambda_=0.5)
  np.testing.assert_allclose(advantages, [[2.489, 4.5], [2.42, 2.8], [3.6, 2.0]], rtol=1e-6)
  np.testing.assert_allclose(returns, [[2.989, 5.5], [3.42, 3.8], [5.6, 3.0]], rtol=1e-6)


@pytest.mark.parametrize('seed,num_steps,batch_size', [(0, 1, 1), (1, 5, 3), (2, 20, 4),
                                                       (3, 33, 2)])
@pytest.mark.parametrize('lambda_', [0.0, 0.5, 0.95, 1.0])
def test_matches_sum_reference(seed, num_steps, batch_size, lambda_):
  rng = np.random.default_rng(seed)
  inputs = _random_inputs(rng, num_steps, batch_size)
  if num_steps * batch_size > 40:  # Both kinds of episode end occur inside the unroll.
    assert inputs['truncated'][:-1].any() and (inputs['discounts'][:-1] == 0).any()
  advantages, returns = _run(**inputs, lambda_=lambda_)
  ref_adv, ref_ret = _reference(**inputs, lambda_=lambda_)
  np.testing.assert_allclose(advantages, ref_adv, rtol=1e-4, atol=1e-4)
  np.testing.assert_allclose(returns, ref_ret, rtol=1e-4, atol=1e-4)


def test_lambda_one_is_discounted_return_minus_value():
  inputs = _random_inputs(np.random.default_rng(10), 12, 3)
  advantages, returns = _run(**inputs, lambda_=1.0)
  r, d, v = inputs['rewards'], inputs['discounts'], inputs['values']
  num_steps, batch_size = r.shape
  expected = np.zeros((num_steps, batch_size))
  for b in range(batch_size):
    for s in range(num_steps):
      # Monte Carlo return until the episode ends or the unroll runs out.
      total, discount, t = 0.0, 1.0, s
      while True:
        total += discount * r[t, b]
        discount *= d[t, b]
        if d[t, b] == 0.0:
          break
        if inputs['truncated'][t, b]:
          total += discount * inputs['truncation_values'][t, b]
          break
        if t == num_steps - 1:
          total += discount * inputs['bootstrap_value'][b]
          break
        t += 1
      expected[s, b] = total
  np.testing.assert_allclose(returns, expected, rtol=1e-5, atol=1e-5)
  np.testing.assert_allclose(advantages, expected - v, rtol=1e-5, atol=1e-5)


def test_lambda_zero_is_one_step_td_error():
  inputs = _random_inputs(np.random.default_rng(11), 9, 4)
  advantages, _ = _run(**inputs, lambda_=0.0)
  values_tp1 = np.concatenate([inputs['values'][1:], inputs['bootstrap_value'][None]])
  next_values = np.where(inputs['truncated'], inputs['truncation_values'], values_tp1)
  next_values = np.where(inputs['discounts'] == 0.0, 0.0, next_values)
  td = inputs['rewards'] + inputs['discounts'] * next_values - inputs['values']
  np.testing.assert_allclose(advantages, td, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize('k', [0, 3, 7])
def test_truncation_cuts_the_unroll(k):
  num_steps = 8
  inputs = _random_inputs(np.random.default_rng(20 + k), num_steps, 2, p_end=0.0,
                          p_trunc=0.0)
  inputs['truncated'][k] = True
  inputs['truncation_values'][k] = [3.0, -2.0]
  advantages, returns = _run(**inputs)
  # Steps 0..k are one episode that ends at k with the true final value as bootstrap.
  first = {name: x[:k + 1] for name, x in inputs.items() if name != 'bootstrap_value'}
  first['truncated'] = np.zeros_like(first['truncated'])
  adv_first, ret_first = _run(**first, bootstrap_value=inputs['truncation_values'][k])
  np.testing.assert_allclose(advantages[:k + 1], adv_first, rtol=1e-5, atol=1e-6)
  np.testing.assert_allclose(returns[:k + 1], ret_first, rtol=1e-5, atol=1e-6)
  # Steps after k form an independent new episode.
  if k < num_steps - 1:
    rest = {name: x[k + 1:] for name, x in inputs.items() if name != 'bootstrap_value'}
    adv_rest, _ = _run(**rest, bootstrap_value=inputs['bootstrap_value'])
    np.testing.assert_allclose(advantages[k + 1:], adv_rest, rtol=1e-5, atol=1e-6)


def test_next_episode_and_unused_values_never_leak():
  inputs = _random_inputs(np.random.default_rng(30), 6, 2, p_end=0.0, p_trunc=0.0)
  inputs['truncated'][2] = True
  inputs['truncation_values'][2] = 1.5
  advantages, returns = _run(**inputs)
  inputs['values'][3] = np.inf  # The reset state right after the truncation.
  adv_inf, ret_inf = _run(**inputs)
  np.testing.assert_allclose(adv_inf[:3], advantages[:3], rtol=1e-6)
  np.testing.assert_allclose(ret_inf[:3], returns[:3], rtol=1e-6)
  # Terminated and truncated at once: termination wins, the truncation value is unread.
  inputs['discounts'][2] = 0.0
  inputs['truncation_values'][2] = np.nan
  adv_term, _ = _run(**inputs)
  assert np.isfinite(adv_term[:3]).all()
  np.testing.assert_allclose(adv_term[2], inputs['rewards'][2] - inputs['values'][2],
                             rtol=1e-6)


def test_no_truncation_equals_all_false():
  inputs = _random_inputs(np.random.default_rng(40), 10, 3, p_trunc=0.0)
  adv_false, ret_false = _run(**inputs)
  inputs['truncated'] = None
  inputs['truncation_values'] = None
  adv_none, ret_none = _run(**inputs)
  np.testing.assert_array_equal(adv_false, adv_none)
  np.testing.assert_array_equal(ret_false, ret_none)


def test_no_gradients_through_outputs():
  inputs = _random_inputs(np.random.default_rng(41), 5, 3)
  tensors = {name: tf.constant(inputs[name])
             for name in ('rewards', 'values', 'bootstrap_value', 'discounts')}
  with tf.GradientTape() as tape:
    tape.watch(list(tensors.values()))
    out = gae.generalized_advantage_estimation(
        **tensors, truncated=inputs['truncated'],
        truncation_values=inputs['truncation_values'])
    loss = tf.reduce_sum(out.advantages) + tf.reduce_sum(out.returns)
  grads = tape.gradient(loss, tensors)
  assert all(g is None for g in grads.values()), grads


def test_tf_function_does_not_retrace_per_length():
  traces = []

  @tf.function(input_signature=[tf.TensorSpec([None, None], tf.float32)] * 2 +
               [tf.TensorSpec([None], tf.float32), tf.TensorSpec([None, None], tf.float32),
                tf.TensorSpec([None, None], tf.bool), tf.TensorSpec([None, None], tf.float32)])
  def fn(rewards, values, bootstrap_value, discounts, truncated, truncation_values):
    traces.append(1)
    return gae.generalized_advantage_estimation(
        rewards, values, bootstrap_value, discounts, truncated, truncation_values)

  for seed, num_steps in enumerate((3, 9, 17)):
    inputs = _random_inputs(np.random.default_rng(50 + seed), num_steps, 2)
    out = fn(**inputs)
    advantages, _ = _run(**inputs)
    np.testing.assert_allclose(out.advantages.numpy(), advantages, rtol=1e-6)
  assert len(traces) == 1


@pytest.mark.parametrize('name,bad_shape,pattern', [
    ('values', (4, 2), r'values has shape \(4, 2\), expected \(5, 2\)'),
    ('bootstrap_value', (5, 2), r'bootstrap_value has shape \(5, 2\), expected \(2,\)'),
    ('discounts', (5,), r'discounts has shape \(5,\), expected \(5, 2\)'),
    ('truncated', (2, 5), r'truncated has shape \(2, 5\), expected \(5, 2\)'),
    ('truncation_values', (5, 3), r'truncation_values has shape \(5, 3\), expected'),
    ('rewards', (5, 2, 1), r'rewards has shape \(5, 2, 1\), expected rank 2'),
])
def test_mismatched_shapes_raise(name, bad_shape, pattern):
  inputs = _random_inputs(np.random.default_rng(60), 5, 2)
  inputs[name] = np.zeros(bad_shape, inputs[name].dtype)
  with pytest.raises(ValueError, match=pattern):
    gae.generalized_advantage_estimation(**inputs)


def test_bad_arguments_raise():
  inputs = _random_inputs(np.random.default_rng(61), 4, 2)
  with pytest.raises(ValueError, match=r'lambda_ must be in \[0, 1\], got 1.5'):
    gae.generalized_advantage_estimation(**inputs, lambda_=1.5)
  inputs['truncation_values'] = None
  with pytest.raises(ValueError, match='truncation_values is None but truncated is given'):
    gae.generalized_advantage_estimation(**inputs)
