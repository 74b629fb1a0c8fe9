"""Tests for seed.losses.vtrace."""
import numpy as np
import pytest
import tensorflow as tf

from seed.losses import vtrace


def _run(**kwargs):
  out = vtrace.vtrace_from_importance_weights(**kwargs)
  return out.vs.numpy(), out.pg_advantages.numpy()


def _reference(log_rhos, discounts, rewards, values, bootstrap_value, truncated,
               clip_rho_threshold, clip_pg_rho_threshold, lambda_):
  """IMPALA's n-step definition, eq. (1), as a double loop (no recursion).

  vs_s = V(x_s) + sum_{t=s}^{T-1} (prod_{i=s}^{t-1} discount_i c_i) delta_t,
  with delta_t = c_t = 0 (and pg_advantages_t = 0) where truncated[t].
  """
  num_steps, batch_size = log_rhos.shape
  rhos = np.exp(log_rhos.astype(np.float64))
  clip = lambda x, c: x if c is None else np.minimum(c, x)
  values_tp1 = np.concatenate([values[1:], bootstrap_value[None]], axis=0)
  deltas = clip(rhos, clip_rho_threshold) * (rewards + discounts * values_tp1 - values)
  cs = lambda_ * np.minimum(1.0, rhos)
  deltas = np.where(truncated, 0.0, deltas)
  cs = np.where(truncated, 0.0, cs)
  vs = np.zeros((num_steps, batch_size))
  for b in range(batch_size):
    for s in range(num_steps):
      total = values[s, b]
      for t in range(s, num_steps):
        trace = np.prod([discounts[i, b] * cs[i, b] for i in range(s, t)])  # 1 if empty
        total += trace * deltas[t, b]
      vs[s, b] = total
  vs_tp1 = np.concatenate([vs[1:], bootstrap_value[None]], axis=0)
  pg = clip(rhos, clip_pg_rho_threshold) * (rewards + discounts * vs_tp1 - values)
  pg = np.where(truncated, 0.0, pg)
  return vs, pg


def _random_inputs(rng, num_steps, batch_size, p_end=0.15, p_trunc=0.1):
  return dict(
      log_rhos=rng.normal(0.0, 1.0, (num_steps, batch_size)).astype(np.float32),
      discounts=np.where(rng.random((num_steps, batch_size)) < p_end, 0.0,
                         0.97).astype(np.float32),
      rewards=rng.normal(0.0, 1.0, (num_steps, batch_size)).astype(np.float32),
      values=rng.normal(0.0, 1.0, (num_steps, batch_size)).astype(np.float32),
      bootstrap_value=rng.normal(0.0, 1.0, (batch_size,)).astype(np.float32),
      truncated=rng.random((num_steps, batch_size)) < p_trunc,
  )


def test_hand_worked_numbers():
  # Column 0: off-policy, no episode boundary. rho = [0.5, 2, 1] -> clipped
  #   rho = c = [0.5, 1, 1]; gamma = 0.9; v = [0.5, 1, 2], bootstrap 4, r = [1, 0, 2].
  #   delta_2 = 1 * (2 + 0.9*4 - 2)   = 3.6    vs_2 = 2 + 3.6             = 5.6
  #   delta_1 = 1 * (0 + 0.9*2 - 1)   = 0.8    vs_1 = 1 + 0.8 + 0.9*1*3.6 = 5.04
  #   delta_0 = 0.5 * (1 + 0.9*1 - 0.5) = 0.7  vs_0 = 0.5 + 0.7 + 0.9*0.5*4.04 = 3.018
  #   pg_2 = 1 * (2 + 0.9*4 - 2)      = 3.6
  #   pg_1 = 1 * (0 + 0.9*5.6 - 1)    = 4.04
  #   pg_0 = 0.5 * (1 + 0.9*5.04 - 0.5) = 2.518
  # Column 1: on-policy, terminated at t=1 (discount 0), truncated at t=2 so
  #   bootstrap 10 (the next episode's value) must be ignored; v = [1, 1, 1], r = [1, 2, 3].
  #   t=2 truncated: vs_2 = v_2 = 1, pg_2 = 0.
  #   delta_1 = 2 + 0 - 1 = 1                vs_1 = 1 + 1 = 2
  #   delta_0 = 1 + 0.9*1 - 1 = 0.9          vs_0 = 1 + 0.9 + 0.9*1*1 = 2.8
  #   pg_1 = 2 + 0 - 1 = 1;  pg_0 = 1 + 0.9*2 - 1 = 1.8
  vs, pg = _run(
      log_rhos=np.log([[0.5, 1.0], [2.0, 1.0], [1.0, 1.0]]),
      discounts=[[0.9, 0.9], [0.9, 0.0], [0.9, 0.9]],
      rewards=[[1.0, 1.0], [0.0, 2.0], [2.0, 3.0]],
      values=[[0.5, 1.0], [1.0, 1.0], [2.0, 1.0]],
      bootstrap_value=[4.0, 10.0],
      truncated=[[False, False], [False, False], [False, True]])
  np.testing.assert_allclose(vs, [[3.018, 2.8], [5.04, 2.0], [5.6, 1.0]], rtol=1e-6)
  np.testing.assert_allclose(pg, [[2.518, 1.8], [4.04, 1.0], [3.6, 0.0]], rtol=1e-6)


@pytest.mark.parametrize('seed,num_steps,batch_size', [
    (0, 1, 1), (1, 5, 3), (2, 20, 4), (3, 33, 2), (4, 8, 16)])
@pytest.mark.parametrize('clip_rho,clip_pg_rho,lambda_', [
    (1.0, 1.0, 1.0), (None, None, 1.0), (2.0, 0.5, 0.9), (1.0, None, 0.5)])
def test_matches_nstep_reference(seed, num_steps, batch_size, clip_rho, clip_pg_rho,
                                 lambda_):
  inputs = _random_inputs(np.random.default_rng(seed), num_steps, batch_size)
  rhos = np.exp(inputs['log_rhos'])
  if num_steps * batch_size > 10:  # The case is meaningful: both sides of the clip.
    assert (rhos > 1).any() and (rhos < 1).any()
  kwargs = dict(clip_rho_threshold=clip_rho, clip_pg_rho_threshold=clip_pg_rho,
                lambda_=lambda_)
  vs, pg = _run(**inputs, **kwargs)
  ref_vs, ref_pg = _reference(**inputs, **kwargs)
  np.testing.assert_allclose(vs, ref_vs, rtol=1e-4, atol=1e-4)
  np.testing.assert_allclose(pg, ref_pg, rtol=1e-4, atol=1e-4)


def test_no_truncation_equals_all_false():
  inputs = _random_inputs(np.random.default_rng(5), 10, 3)
  inputs['truncated'] = np.zeros_like(inputs['truncated'])
  vs_false, pg_false = _run(**inputs)
  inputs['truncated'] = None
  vs_none, pg_none = _run(**inputs)
  np.testing.assert_array_equal(vs_false, vs_none)
  np.testing.assert_array_equal(pg_false, pg_none)


def test_on_policy_is_discounted_nstep_return():
  inputs = _random_inputs(np.random.default_rng(6), 12, 3)
  inputs['log_rhos'] = np.zeros_like(inputs['log_rhos'])
  inputs['truncated'] = None
  vs, _ = _run(**inputs)
  d, r, boot = inputs['discounts'], inputs['rewards'], inputs['bootstrap_value']
  num_steps = d.shape[0]
  expected = np.zeros_like(vs)
  for s in range(num_steps):
    # sum_t (prod_{i<t} d_i) r_t + (prod_i d_i) bootstrap: the values cancel.
    discount = np.ones_like(boot)
    for t in range(s, num_steps):
      expected[s] += discount * r[t]
      discount = discount * d[t]
    expected[s] += discount * boot
  np.testing.assert_allclose(vs, expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize('k', [0, 3, 6])
def test_split_at_episode_end(k):
  inputs = _random_inputs(np.random.default_rng(7 + k), 8, 2, p_end=0.0, p_trunc=0.0)
  inputs['discounts'][k] = 0.0
  vs, pg = _run(**inputs)
  first = {name: x[:k + 1] for name, x in inputs.items() if name != 'bootstrap_value'}
  for bootstrap in (np.zeros(2, np.float32), np.full(2, 123.0, np.float32)):
    vs_first, pg_first = _run(**first, bootstrap_value=bootstrap)
    np.testing.assert_allclose(vs[:k + 1], vs_first, rtol=1e-6)
    np.testing.assert_allclose(pg[:k + 1], pg_first, rtol=1e-6)


@pytest.mark.parametrize('k', [0, 3, 7])
def test_truncation_cuts_the_unroll(k):
  num_steps = 8
  inputs = _random_inputs(np.random.default_rng(11 + k), num_steps, 2, p_end=0.0,
                          p_trunc=0.0)
  inputs['truncated'][k] = True
  vs, pg = _run(**inputs)
  # The truncated transition itself carries no signal.
  np.testing.assert_allclose(vs[k], inputs['values'][k], rtol=1e-6)
  np.testing.assert_array_equal(pg[k], 0.0)
  # Steps before k bootstrap from values[k], the last state of their own episode.
  if k > 0:
    first = {name: x[:k] for name, x in inputs.items() if name != 'bootstrap_value'}
    vs_first, pg_first = _run(**first, bootstrap_value=inputs['values'][k])
    np.testing.assert_allclose(vs[:k], vs_first, rtol=1e-5)
    np.testing.assert_allclose(pg[:k], pg_first, rtol=1e-5)
  # Steps after k form an independent new episode.
  if k < num_steps - 1:
    rest = {name: x[k + 1:] for name, x in inputs.items() if name != 'bootstrap_value'}
    vs_rest, pg_rest = _run(**rest, bootstrap_value=inputs['bootstrap_value'])
    np.testing.assert_allclose(vs[k + 1:], vs_rest, rtol=1e-5)
    np.testing.assert_allclose(pg[k + 1:], pg_rest, rtol=1e-5)


def test_truncation_ignores_next_episode_values():
  # Whatever the reset state's value is, even non-finite, it must not leak back.
  inputs = _random_inputs(np.random.default_rng(20), 6, 2, p_end=0.0, p_trunc=0.0)
  inputs['truncated'][2] = True
  vs, pg = _run(**inputs)
  inputs['values'][3] = np.inf
  vs_inf, pg_inf = _run(**inputs)
  np.testing.assert_allclose(vs_inf[:3], vs[:3], rtol=1e-6)
  np.testing.assert_allclose(pg_inf[:3], pg[:3], rtol=1e-6)


def test_no_gradients_through_outputs():
  inputs = _random_inputs(np.random.default_rng(21), 5, 3)
  variables = {name: tf.constant(inputs[name])
               for name in ('log_rhos', 'discounts', 'rewards', 'values', 'bootstrap_value')}
  with tf.GradientTape() as tape:
    tape.watch(list(variables.values()))
    out = vtrace.vtrace_from_importance_weights(truncated=inputs['truncated'], **variables)
    loss = tf.reduce_sum(out.vs) + tf.reduce_sum(out.pg_advantages)
  grads = tape.gradient(loss, variables)
  assert all(g is None for g in grads.values()), grads


def test_tf_function_does_not_retrace_per_length():
  traces = []

  @tf.function(input_signature=[tf.TensorSpec([None, None], tf.float32)] * 4 +
               [tf.TensorSpec([None], tf.float32), tf.TensorSpec([None, None], tf.bool)])
  def fn(log_rhos, discounts, rewards, values, bootstrap_value, truncated):
    traces.append(1)
    return vtrace.vtrace_from_importance_weights(
        log_rhos, discounts, rewards, values, bootstrap_value, truncated)

  for seed, num_steps in enumerate((3, 9, 17)):
    inputs = _random_inputs(np.random.default_rng(30 + seed), num_steps, 2)
    out = fn(**inputs)
    vs, pg = _run(**inputs)
    np.testing.assert_allclose(out.vs.numpy(), vs, rtol=1e-6)
    np.testing.assert_allclose(out.pg_advantages.numpy(), pg, rtol=1e-6)
  assert len(traces) == 1


def test_log_probs_from_logits_and_actions():
  rng = np.random.default_rng(40)
  logits = rng.normal(size=(4, 3, 5)).astype(np.float32)
  actions = rng.integers(0, 5, size=(4, 3))
  log_probs = vtrace.log_probs_from_logits_and_actions(logits, actions).numpy()
  log_softmax = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
  expected = np.take_along_axis(log_softmax, actions[..., None], axis=-1)[..., 0]
  assert log_probs.shape == (4, 3)
  np.testing.assert_allclose(log_probs, expected, rtol=1e-5, atol=1e-6)
  with pytest.raises(ValueError, match='actions'):
    vtrace.log_probs_from_logits_and_actions(logits, actions[:, :2])


@pytest.mark.parametrize('name,bad_shape,pattern', [
    ('discounts', (4, 2), r'discounts has shape \(4, 2\), expected \(5, 2\)'),
    ('rewards', (5,), r'rewards has shape \(5,\), expected \(5, 2\)'),
    ('values', (5, 3), r'values has shape \(5, 3\), expected \(5, 2\)'),
    ('bootstrap_value', (5, 2), r'bootstrap_value has shape \(5, 2\), expected \(2,\)'),
    ('truncated', (2, 5), r'truncated has shape \(2, 5\), expected \(5, 2\)'),
    ('log_rhos', (5, 2, 1), r'log_rhos has shape \(5, 2, 1\), expected rank 2'),
])
def test_mismatched_shapes_raise(name, bad_shape, pattern):
  inputs = _random_inputs(np.random.default_rng(50), 5, 2)
  inputs[name] = np.zeros(bad_shape, inputs[name].dtype)
  with pytest.raises(ValueError, match=pattern):
    vtrace.vtrace_from_importance_weights(**inputs)
