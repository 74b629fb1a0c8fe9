"""Tests for seed.losses.nstep."""
import numpy as np
import pytest
import tensorflow as tf

from seed.losses import nstep


def _h(x, eps):
  return np.sign(x) * (np.sqrt(np.abs(x) + 1.0) - 1.0) + eps * x


def _h_inv(x, eps):
  root = (np.sqrt(1.0 + 4.0 * eps * (np.abs(x) + 1.0 + eps)) - 1.0) / (2.0 * eps)
  return np.sign(x) * (root ** 2 - 1.0)


def _run(**kwargs):
  out = nstep.nstep_double_q_targets(**kwargs)
  return out.targets.numpy(), out.valid_mask.numpy()


def _reference(rewards, discounts, bootstrap_q, truncated, n_steps, rescaling_eps):
  """The module docstring's rule, one window at a time, stopping with `break`."""
  # float64: the textbook h^-1 cancels badly in float32 near 0.
  rewards, discounts, bootstrap_q = (np.asarray(x, np.float64)
                                     for x in (rewards, discounts, bootstrap_q))
  num_steps, batch_size = rewards.shape
  rescale = rescaling_eps is not None
  targets = np.zeros((num_steps, batch_size))
  valid = np.ones((num_steps, batch_size), bool)
  for b in range(batch_size):
    for t in range(num_steps):
      end = min(t + n_steps, num_steps)  # One past the window's last transition.
      total, discount, bootstrap = 0.0, 1.0, True
      for j in range(t, end):
        total += discount * rewards[j, b]
        if discounts[j, b] == 0:  # Terminated (wins over a truncation).
          bootstrap = False
          break
        if truncated[j, b]:  # x_{j+1} unknown.
          valid[t, b] = bootstrap = False
          break
        discount *= discounts[j, b]
      if bootstrap:
        q = bootstrap_q[end - 1, b]
        total += discount * (_h_inv(q, rescaling_eps) if rescale else q)
      if valid[t, b]:
        targets[t, b] = _h(total, rescaling_eps) if rescale else total
  return targets, valid


def _random_inputs(rng, num_steps, batch_size, p_end=0.1, p_trunc=0.08):
  return dict(
      rewards=rng.normal(0.0, 5.0, (num_steps, batch_size)).astype(np.float32),
      discounts=np.where(rng.random((num_steps, batch_size)) < p_end, 0.0,
                         0.997).astype(np.float32),
      bootstrap_q=rng.normal(0.0, 3.0, (num_steps, batch_size)).astype(np.float32),
      truncated=rng.random((num_steps, batch_size)) < p_trunc,
  )


def test_hand_worked_numbers():
  # n = 2, gamma = 0.5, no rescaling.
  # Column 0: terminated on transition 1 (discount 0); q = [10, 20, 30, 40].
  #   t=0: 1 + 0.5*2, stops at the termination       = 2
  #   t=1: 2, terminated                              = 2
  #   t=2: 3 + 0.5*4 + 0.25*q[3]                      = 15
  #   t=3: cut at T: 4 + 0.5*q[3]                     = 24
  # Column 1: truncated on transition 2; q = [8, 8, 100, 16]; 100 is x_3, a reset state.
  #   t=0: 1 + 0.5*1 + 0.25*q[1]                      = 3.5
  #   t=1, t=2: the window reaches transition 2       -> invalid, 0
  #   t=3: cut at T: 1 + 0.5*q[3]                     = 9
  targets, valid = _run(
      rewards=[[1.0, 1.0], [2.0, 1.0], [3.0, 1.0], [4.0, 1.0]],
      discounts=[[0.5, 0.5], [0.0, 0.5], [0.5, 0.5], [0.5, 0.5]],
      bootstrap_q=[[10.0, 8.0], [20.0, 8.0], [30.0, 100.0], [40.0, 16.0]],
      truncated=[[False, False], [False, False], [False, True], [False, False]],
      n_steps=2, rescaling_eps=None)
  np.testing.assert_allclose(targets, [[2.0, 3.5], [2.0, 0.0], [15.0, 0.0], [24.0, 9.0]])
  np.testing.assert_array_equal(valid, [[True, True], [True, False], [True, False],
                                        [True, True]])


def test_terminated_and_truncated_together_is_valid():
  # The terminal value is 0: nothing unknown. Target = 1 + 0.5 * 2 = 2.
  targets, valid = _run(rewards=[[1.0], [2.0]], discounts=[[0.5], [0.0]],
                        bootstrap_q=[[7.0], [9.0]], truncated=[[False], [True]],
                        n_steps=3, rescaling_eps=None)
  np.testing.assert_allclose(targets[:, 0], [2.0, 2.0])
  assert valid.all()


@pytest.mark.parametrize('seed,num_steps,batch_size', [
    (0, 1, 1), (1, 4, 3), (2, 20, 4), (3, 40, 2), (4, 8, 16)])
@pytest.mark.parametrize('n_steps', [1, 2, 5, 50])
@pytest.mark.parametrize('rescaling_eps', [1e-3, None])
def test_matches_reference(seed, num_steps, batch_size, n_steps, rescaling_eps):
  inputs = _random_inputs(np.random.default_rng(seed), num_steps, batch_size)
  targets, valid = _run(**inputs, n_steps=n_steps, rescaling_eps=rescaling_eps)
  ref_targets, ref_valid = _reference(**inputs, n_steps=n_steps,
                                      rescaling_eps=rescaling_eps)
  np.testing.assert_array_equal(valid, ref_valid)
  np.testing.assert_allclose(targets, ref_targets, rtol=1e-5, atol=1e-4)


def test_reference_cases_are_meaningful():
  # The random inputs above do exercise every branch.
  inputs = _random_inputs(np.random.default_rng(2), 20, 4)
  _, valid = _reference(**inputs, n_steps=5, rescaling_eps=1e-3)
  assert (inputs['discounts'] == 0).any() and inputs['truncated'].any()
  assert (~valid).any() and valid.any()


def test_one_step_is_td_target():
  inputs = _random_inputs(np.random.default_rng(10), 12, 5)
  targets, valid = _run(**inputs, n_steps=1)
  r, d, q = (inputs[k].astype(np.float64) for k in ('rewards', 'discounts', 'bootstrap_q'))
  trunc = inputs['truncated']
  expected_valid = ~(trunc & (d != 0))
  expected = np.where(expected_valid, _h(r + d * _h_inv(q, 1e-3), 1e-3), 0.0)
  np.testing.assert_array_equal(valid, expected_valid)
  np.testing.assert_allclose(targets, expected, rtol=1e-5, atol=1e-5)


def test_no_episode_end_is_discounted_sum():
  # Without ends: G_t = sum_k gamma^k r_{t+k} + gamma^m h^-1(q_{t+m-1}), m = min(n, T-t).
  rng = np.random.default_rng(11)
  inputs = _random_inputs(rng, 9, 2, p_end=0.0, p_trunc=0.0)
  gamma, n = 0.997, 5
  targets, valid = _run(**inputs, n_steps=n)
  assert valid.all()
  r, q = inputs['rewards'].astype(np.float64), inputs['bootstrap_q'].astype(np.float64)
  for t in range(9):
    m = min(n, 9 - t)
    g = sum(gamma ** k * r[t + k] for k in range(m)) + gamma ** m * _h_inv(q[t + m - 1], 1e-3)
    np.testing.assert_allclose(targets[t], _h(g, 1e-3), rtol=1e-5)


def test_truncated_none_equals_all_false():
  inputs = _random_inputs(np.random.default_rng(12), 10, 3)
  inputs['truncated'] = np.zeros_like(inputs['truncated'])
  with_false = _run(**inputs)
  inputs['truncated'] = None
  with_none = _run(**inputs)
  np.testing.assert_array_equal(with_false[0], with_none[0])
  np.testing.assert_array_equal(with_false[1], with_none[1])


@pytest.mark.parametrize('end', ['terminated', 'truncated'])
def test_next_episode_never_leaks(end):
  # Whatever follows an episode end (even inf / NaN) leaves the earlier targets alone.
  num_steps, k = 10, 4
  inputs = _random_inputs(np.random.default_rng(13), num_steps, 2, p_end=0.0, p_trunc=0.0)
  if end == 'terminated':
    inputs['discounts'][k] = 0.0
  else:
    inputs['truncated'][k] = True
  targets, valid = _run(**inputs)
  inputs['rewards'][k + 1:] = np.inf
  inputs['bootstrap_q'][k:] = np.nan  # x_{k+1} onwards: the next episode.
  targets_bad, valid_bad = _run(**inputs)
  np.testing.assert_array_equal(valid_bad[:k + 1], valid[:k + 1])
  np.testing.assert_array_equal(targets_bad[:k + 1], targets[:k + 1])
  assert np.isfinite(targets_bad[:k + 1]).all()
  if end == 'truncated':
    # Exactly the n = 5 windows that reach transition k are invalid.
    assert valid[:k - 4].all() and not valid[k - 4:k + 1].any()


def test_no_gradients_through_outputs():
  inputs = _random_inputs(np.random.default_rng(14), 6, 3)
  variables = {name: tf.constant(inputs[name])
               for name in ('rewards', 'discounts', 'bootstrap_q')}
  with tf.GradientTape() as tape:
    tape.watch(list(variables.values()))
    out = nstep.nstep_double_q_targets(truncated=inputs['truncated'], **variables)
    loss = tf.reduce_sum(out.targets)
  grads = tape.gradient(loss, variables)
  assert all(g is None for g in grads.values()), grads


def test_tf_function_does_not_retrace_per_length():
  traces = []

  @tf.function(input_signature=[tf.TensorSpec([None, None], tf.float32)] * 3 +
               [tf.TensorSpec([None, None], tf.bool)])
  def fn(rewards, discounts, bootstrap_q, truncated):
    traces.append(1)
    return nstep.nstep_double_q_targets(rewards, discounts, bootstrap_q, truncated)

  for seed, num_steps in enumerate((2, 7, 30)):
    inputs = _random_inputs(np.random.default_rng(20 + seed), num_steps, 3)
    out = fn(**inputs)
    targets, valid = _run(**inputs)
    np.testing.assert_allclose(out.targets.numpy(), targets, rtol=1e-6)
    np.testing.assert_array_equal(out.valid_mask.numpy(), valid)
  assert len(traces) == 1


def test_double_q_bootstrap():
  # Online argmax picks the action; the target network gives its value.
  online = np.array([[[1.0, 3.0, 2.0], [5.0, 0.0, 0.0]]])  # [T=1, B=2, A=3]
  target = np.array([[[10.0, 20.0, 30.0], [40.0, 50.0, 60.0]]])
  np.testing.assert_allclose(nstep.double_q_bootstrap(online, target).numpy(), [[20.0, 40.0]])
  with pytest.raises(ValueError, match=r'target_q has shape \(1, 2, 2\)'):
    nstep.double_q_bootstrap(online, target[..., :2])


@pytest.mark.parametrize('name,bad_shape,pattern', [
    ('discounts', (4, 2), r'discounts has shape \(4, 2\), expected \(5, 2\)'),
    ('bootstrap_q', (5,), r'bootstrap_q has shape \(5,\), expected \(5, 2\)'),
    ('truncated', (5, 3), r'truncated has shape \(5, 3\), expected \(5, 2\)'),
    ('rewards', (5, 2, 1), r'rewards has shape \(5, 2, 1\), expected rank 2'),
])
def test_mismatched_shapes_raise(name, bad_shape, pattern):
  inputs = _random_inputs(np.random.default_rng(30), 5, 2)
  inputs[name] = np.zeros(bad_shape, inputs[name].dtype)
  with pytest.raises(ValueError, match=pattern):
    nstep.nstep_double_q_targets(**inputs)


@pytest.mark.parametrize('n_steps', [0, -1, 2.0])
def test_bad_n_steps_raises(n_steps):
  inputs = _random_inputs(np.random.default_rng(31), 5, 2)
  with pytest.raises(ValueError, match='n_steps must be an int >= 1'):
    nstep.nstep_double_q_targets(**inputs, n_steps=n_steps)
