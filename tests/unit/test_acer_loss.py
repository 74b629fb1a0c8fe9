"""Tests for seed.losses.acer: the policy loss and the trust region projection."""
import numpy as np
import pytest
import tensorflow as tf

from seed.losses import acer


def _objective_gradient(probs, **kwargs):
  """d(objective)/d(probs) = -d(loss)/d(probs), by autodiff."""
  probs = tf.constant(probs, tf.float32)
  with tf.GradientTape() as tape:
    tape.watch(probs)
    loss = tf.reduce_sum(acer.acer_policy_loss(probs, **kwargs).loss)
  return -tape.gradient(loss, probs).numpy()


def _reference_gradient(probs, behaviour_probs, actions, q_values, q_retrace,
                        importance_clip):
  """The paper's eq. 9 gradient with respect to f, entry by entry:
  d/df(a) = 1[a = a_t] min(c, rho(a_t)) (Q^ret - V) / f(a_t)
            + [1 - c / rho(a)]_+ (Q(a) - V)."""
  probs, behaviour_probs, q_values = (np.asarray(x, np.float64) for x in
                                      (probs, behaviour_probs, q_values))
  grad = np.zeros_like(probs)
  for index in np.ndindex(probs.shape[:-1]):
    f, mu, q = probs[index], behaviour_probs[index], q_values[index]
    value = float(np.dot(f, q))
    for a in range(f.shape[0]):
      rho = f[a] / mu[a]
      grad[index + (a,)] += max(0.0, 1.0 - importance_clip / rho) * (q[a] - value)
      if a == actions[index]:
        grad[index + (a,)] += min(importance_clip, rho) * (q_retrace[index] - value) / f[a]
  return grad


def _random_inputs(rng, shape, num_actions):
  softmax = lambda x: np.exp(x) / np.exp(x).sum(-1, keepdims=True)
  full = shape + (num_actions,)
  return dict(
      probs=softmax(rng.normal(0, 1, full)).astype(np.float32),
      behaviour_probs=softmax(rng.normal(0, 1.5, full)).astype(np.float32),
      actions=rng.integers(0, num_actions, shape),
      q_values=rng.normal(0, 1, full).astype(np.float32),
      q_retrace=rng.normal(0, 1, shape).astype(np.float32))


def test_hand_worked_numbers():
  # f = [0.5, 0.5], mu = [0.25, 0.75], a_t = 0, Q = [2, 0], Q^ret = 3, c = 1.
  #   rho = [2, 2/3], V = 0.5*2 + 0.5*0 = 1.
  #   truncated term: min(1, 2) * (3 - 1) * log 0.5 = 1 * 2 * -0.693147 = -1.386294
  #   bias correction: a=0: [1 - 1/2]_+ = 0.5; f * 0.5 * (2 - 1) = 0.25 -> 0.25 log 0.5
  #                    a=1: [1 - 1.5]_+ = 0                   = -0.173287
  #   loss = 1.559581; d(objective)/df = [(1 * 2 + 0.25) / 0.5, 0] = [4.5, 0].
  inputs = dict(behaviour_probs=[[[0.25, 0.75]]], actions=[[0]], q_values=[[[2.0, 0.0]]],
                q_retrace=[[3.0]], importance_clip=1.0)
  out = acer.acer_policy_loss(probs=[[[0.5, 0.5]]], **inputs)
  np.testing.assert_allclose(out.truncated_term.numpy(), [[-1.386294]], rtol=1e-5)
  np.testing.assert_allclose(out.bias_correction.numpy(), [[-0.173287]], rtol=1e-5)
  np.testing.assert_allclose(out.loss.numpy(), [[1.559581]], rtol=1e-5)
  np.testing.assert_allclose(out.importance_weights.numpy(), [[[2.0, 2 / 3]]], rtol=1e-5)
  np.testing.assert_allclose(_objective_gradient([[[0.5, 0.5]]], **inputs), [[[4.5, 0.0]]],
                             rtol=1e-5)
  # With the paper's c = 10 nothing is truncated and the correction vanishes:
  #   loss = -min(10, 2) * (3 - 1) * log 0.5 = 2.772589.
  out = acer.acer_policy_loss(probs=[[[0.5, 0.5]]], **dict(inputs, importance_clip=10.0))
  np.testing.assert_allclose(out.bias_correction.numpy(), [[0.0]])
  np.testing.assert_allclose(out.loss.numpy(), [[2.772589]], rtol=1e-5)


@pytest.mark.parametrize('shape,importance_clip', [((5, 3), 10.0), ((4, 2, 3), 1.0),
                                                   ((6, 2), 0.5)])
def test_gradient_matches_the_papers_formula(shape, importance_clip):
  inputs = _random_inputs(np.random.default_rng(len(shape)), shape, num_actions=4)
  np.testing.assert_allclose(
      _objective_gradient(importance_clip=importance_clip, **inputs),
      _reference_gradient(importance_clip=importance_clip, **inputs), rtol=1e-4, atol=1e-4)


def test_on_policy_it_is_the_plain_policy_gradient():
  # mu = f: rho = 1 everywhere, nothing truncated (c >= 1), no correction.
  inputs = _random_inputs(np.random.default_rng(2), (3, 2), num_actions=3)
  inputs['behaviour_probs'] = inputs['probs']
  out = acer.acer_policy_loss(**inputs)
  np.testing.assert_allclose(out.bias_correction.numpy(), 0.0, atol=1e-6)
  value = (inputs['probs'] * inputs['q_values']).sum(-1)
  log_prob = np.log(np.take_along_axis(inputs['probs'], inputs['actions'][..., None], -1)[..., 0])
  np.testing.assert_allclose(out.loss.numpy(), -(inputs['q_retrace'] - value) * log_prob,
                             rtol=1e-5)


def test_trust_region_hand_worked():
  # f = [0.5, 0.5], f_average = [0.6, 0.4] -> k = [-1.2, -0.8], ||k||^2 = 2.08.
  k = acer.average_kl_gradient([[0.6, 0.4]], [[0.5, 0.5]]).numpy()
  np.testing.assert_allclose(k, [[-1.2, -0.8]], rtol=1e-6)
  # g = [4.5, 0]: k.g = -5.4 <= delta = 1, the step stays as it is.
  np.testing.assert_allclose(acer.trust_region_projection([[4.5, 0.0]], k, 1.0).numpy(),
                             [[4.5, 0.0]], rtol=1e-6)
  # g = [-4.5, 0]: k.g = 5.4; scale = (5.4 - 1) / 2.08 = 2.1153846;
  #   z = [-4.5 + 2.1153846 * 1.2, 2.1153846 * 0.8] = [-1.9615385, 1.6923077], k.z = 1.
  z = acer.trust_region_projection([[-4.5, 0.0]], k, 1.0).numpy()
  np.testing.assert_allclose(z, [[-1.9615385, 1.6923077]], rtol=1e-6)
  np.testing.assert_allclose((k * z).sum(), 1.0, rtol=1e-6)


def test_projection_keeps_the_linearised_divergence_within_delta():
  rng = np.random.default_rng(3)
  g = rng.normal(0, 3, (50, 4)).astype(np.float32)
  k = rng.normal(0, 1, (50, 4)).astype(np.float32)
  z = acer.trust_region_projection(g, k, 0.5).numpy()
  k_dot_z = (k * z).sum(-1)
  inside = (k * g).sum(-1) <= 0.5
  assert inside.any() and (~inside).any()
  np.testing.assert_allclose(z[inside], g[inside])
  np.testing.assert_allclose(k_dot_z[~inside], 0.5, rtol=1e-4)
  # z* is the closest point to g in the half-space: g - z* is parallel to k.
  residual = g[~inside] - z[~inside]
  cosine = (residual * k[~inside]).sum(-1) / (
      np.linalg.norm(residual, axis=-1) * np.linalg.norm(k[~inside], axis=-1))
  np.testing.assert_allclose(cosine, 1.0, rtol=1e-4)


def test_a_zero_kl_gradient_leaves_the_step_alone():
  np.testing.assert_array_equal(
      acer.trust_region_projection([[1.0, -2.0]], [[0.0, 0.0]], 1.0).numpy(), [[1.0, -2.0]])


@pytest.mark.parametrize('call,message', [
    (lambda i: acer.acer_policy_loss(importance_clip=0.0, **i),
     r'importance_clip = 0.0; accepted: a number > 0'),
    (lambda i: acer.trust_region_projection([[1.0]], [[1.0]], max_kl=-1.0),
     r'max_kl = -1.0; accepted: a number > 0'),
    (lambda i: acer.acer_policy_loss(**dict(i, q_retrace=np.zeros((3, 3)))),
     r'q_retrace has shape \(3, 3\), expected \(3, 2\)'),
    (lambda i: acer.acer_policy_loss(**dict(i, actions=np.zeros((3, 2), np.float32))),
     r'actions must be integers'),
    (lambda i: acer.trust_region_projection(np.zeros((2, 3)), np.zeros((2, 4))),
     r'kl_gradient has shape \(2, 4\), expected \(2, 3\)'),
])
def test_bad_input_is_named(call, message):
  with pytest.raises(ValueError, match=message):
    call(_random_inputs(np.random.default_rng(4), (3, 2), num_actions=3))


# Continuous actions: a Gaussian with fixed std.

def test_gaussian_hand_worked_numbers():
  # A = 1, sigma = 1, phi = 0, behaviour mean 1, a_t = 0, a' = -1, Q^opc = 3,
  # Q~(a') = 2, V = 1, c = 1. With L = 1/2 log(2 pi) = 0.918939:
  #   log f(0) = -L, log mu(0) = -0.5 - L: rho(a_t) = e^0.5 = 1.648721 -> min(1, .) = 1
  #   truncated term = 1 * (3 - 1) * -L = -1.837877
  #   log f(-1) = -0.5 - L, log mu(-1) = -2 - L: rho(a') = e^1.5 = 4.481689
  #   bias correction = (1 - 1/4.481689) * (2 - 1) * (-0.5 - L) = 0.776870 * -1.418939
  #                   = -1.102331; loss = 2.940208.
  #   d(objective)/d(phi) = 1 * 2 * (0 - 0) + 0.776870 * 1 * (-1 - 0) = -0.776870.
  mean = tf.constant([[[0.0]]])
  with tf.GradientTape() as tape:
    tape.watch(mean)
    out = acer.acer_gaussian_policy_loss(
        mean, behaviour_mean=[[[1.0]]], actions=[[[0.0]]], sampled_actions=[[[-1.0]]],
        policy_std=1.0, q_opc=[[3.0]], q_sampled=[[2.0]], state_values=[[1.0]],
        importance_clip=1.0)
    loss = tf.reduce_sum(out.loss)
  np.testing.assert_allclose(out.truncated_term.numpy(), [[-1.837877]], rtol=1e-5)
  np.testing.assert_allclose(out.bias_correction.numpy(), [[-1.102331]], rtol=1e-5)
  np.testing.assert_allclose(out.loss.numpy(), [[2.940208]], rtol=1e-5)
  np.testing.assert_allclose(out.importance_weights.numpy(), [[[1.648721, 4.481689]]],
                             rtol=1e-5)
  np.testing.assert_allclose(-tape.gradient(loss, mean).numpy(), [[[-0.776870]]], rtol=1e-5)


def test_gaussian_gradient_matches_the_papers_formula_entry_by_entry():
  # d(objective)/d(phi) = min(c, rho(a)) (Q^opc - V) (a - phi) / s^2
  #                     + [1 - c / rho(a')]_+ (Q~(a') - V) (a' - phi) / s^2.
  rng = np.random.default_rng(3)
  shape, dims, std, clip = (4, 3), 2, 0.5, 1.5
  x = dict(behaviour_mean=rng.normal(0, 0.5, shape + (dims,)),
           actions=rng.normal(0, 0.7, shape + (dims,)),
           sampled_actions=rng.normal(0, 0.7, shape + (dims,)),
           q_opc=rng.normal(0, 1, shape), q_sampled=rng.normal(0, 1, shape),
           state_values=rng.normal(0, 1, shape))
  phi = rng.normal(0, 0.5, shape + (dims,))
  mean = tf.constant(phi, tf.float32)
  with tf.GradientTape() as tape:
    tape.watch(mean)
    loss = tf.reduce_sum(acer.acer_gaussian_policy_loss(
        mean, policy_std=std, importance_clip=clip,
        **{k: v.astype(np.float32) for k, v in x.items()}).loss)
  got = -tape.gradient(loss, mean).numpy()

  def log_density(a, m):
    return float(np.sum(-0.5 * ((a - m) / std) ** 2 - np.log(std) - 0.5 * np.log(2 * np.pi)))

  want = np.zeros_like(phi)
  for index in np.ndindex(shape):
    m, mu = phi[index], x['behaviour_mean'][index]
    a, a2 = x['actions'][index], x['sampled_actions'][index]
    v = x['state_values'][index]
    rho = np.exp(log_density(a, m) - log_density(a, mu))
    rho2 = np.exp(log_density(a2, m) - log_density(a2, mu))
    want[index] = (min(clip, rho) * (x['q_opc'][index] - v) * (a - m) / std**2
                   + max(0.0, 1 - clip / rho2) * (x['q_sampled'][index] - v) * (a2 - m) / std**2)
  np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def test_gaussian_kl_gradient_and_value_target_by_hand():
  # k = (phi - phi_average) / s^2 = (0 - 0.5) / 0.25 = -2.
  np.testing.assert_allclose(
      acer.gaussian_average_kl_gradient([[0.5]], [[0.0]], policy_std=0.5).numpy(), [[-2.0]])
  # V^target = min(1, rho) (Q^ret - Q~) + V: rho = e^0.5 -> 1 * (3 - 2.5) + 1 = 1.5;
  # rho = 1/2 -> 0.5 * 0.5 + 1 = 1.25.
  np.testing.assert_allclose(
      acer.sdn_value_target([0.5, -np.log(2.0)], [3.0, 3.0], [2.5, 2.5], [1.0, 1.0]).numpy(),
      [1.5, 1.25], rtol=1e-6)


@pytest.mark.parametrize('kwargs, message', [
    (dict(policy_std=0.0), r'policy_std = 0.0; accepted: a number > 0'),
    (dict(importance_clip=-1.0), r'importance_clip = -1.0; accepted: a number > 0'),
    (dict(q_opc=[[1.0, 2.0]]), r'q_opc'),
])
def test_gaussian_bad_input_is_named(kwargs, message):
  inputs = dict(mean=[[[0.0]]], behaviour_mean=[[[0.0]]], actions=[[[0.0]]],
                sampled_actions=[[[0.0]]], policy_std=1.0, q_opc=[[1.0]], q_sampled=[[1.0]],
                state_values=[[1.0]])
  inputs.update(kwargs)
  with pytest.raises(ValueError, match=message):
    acer.acer_gaussian_policy_loss(**inputs)
