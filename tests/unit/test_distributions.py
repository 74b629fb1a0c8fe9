"""Tests for seed.losses.distributions."""
import math

import numpy as np
import pytest
import tensorflow as tf

from seed.losses import distributions as dist


def _normal_pdf(x, mean, std):
  return np.exp(-0.5 * ((x - mean) / std) ** 2) / (std * np.sqrt(2.0 * np.pi))


def test_clip_log_std():
  clipped = dist.clip_log_std([-20.0, -10.0, -3.0, 0.0, 2.0, 5.0]).numpy()
  np.testing.assert_array_equal(clipped, [-10.0, -10.0, -3.0, 0.0, 2.0, 2.0])
  np.testing.assert_array_equal(dist.clip_log_std([-3.0, 3.0], -1.0, 1.0).numpy(), [-1, 1])
  with pytest.raises(ValueError, match=r'min_log_std \(1.0\) must not exceed max_log_std'):
    dist.clip_log_std([0.0], 1.0, -1.0)


def test_diag_gaussian_log_prob_matches_formula_with_broadcast_log_std():
  rng = np.random.default_rng(0)
  mean = rng.normal(size=(4, 3)).astype(np.float32)
  log_std = np.array([-0.5, 0.0, 0.7], np.float32)  # State-independent, as in PPO.
  x = rng.normal(size=(4, 3)).astype(np.float32)
  log_prob = dist.diag_gaussian_log_prob(x, mean, log_std).numpy()
  expected = np.log(_normal_pdf(x, mean, np.exp(log_std))).sum(-1)
  assert log_prob.shape == (4,)
  np.testing.assert_allclose(log_prob, expected, rtol=1e-5)


def test_diag_gaussian_entropy_by_hand():
  # One dimension with std 1: 0.5 * log(2 pi e) = 1.4189385.
  # Stds (1, 2): 2 * 1.4189385 + log 2 = 3.5310242, the same for every batch row.
  entropy = dist.diag_gaussian_entropy(np.zeros((3, 1)), [0.0]).numpy()
  np.testing.assert_allclose(entropy, [1.4189385] * 3, rtol=1e-6)
  entropy = dist.diag_gaussian_entropy(np.zeros((2, 2)), [0.0, math.log(2.0)]).numpy()
  np.testing.assert_allclose(entropy, [3.5310242] * 2, rtol=1e-6)


def test_diag_gaussian_entropy_is_minus_expected_log_prob():
  mean = np.zeros((20000, 2), np.float32)
  log_std = np.array([-0.3, 0.4], np.float32)
  x = dist.sample_diag_gaussian(mean, log_std, seed=[1, 2])
  monte_carlo = -np.mean(dist.diag_gaussian_log_prob(x, mean, log_std).numpy())
  entropy = dist.diag_gaussian_entropy(mean, log_std).numpy()[0]
  assert abs(monte_carlo - entropy) < 0.03, (monte_carlo, entropy)


def test_log_abs_det_tanh_jacobian_is_stable():
  u = np.array([-30.0, -20.0, -3.0, -0.5, 0.0, 0.5, 3.0, 20.0, 30.0], np.float32)
  got = dist.log_abs_det_tanh_jacobian(u).numpy()
  # log(sech(u)^2) = 2 (log 2 - |u| - log1p(exp(-2|u|))), exact in float64.
  a = np.abs(u.astype(np.float64))
  expected = 2.0 * (np.log(2.0) - a - np.log1p(np.exp(-2.0 * a)))
  assert np.isfinite(got).all()
  np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-6)
  # Where the naive form is still accurate, they agree.
  small = u[np.abs(u) <= 3]
  np.testing.assert_allclose(dist.log_abs_det_tanh_jacobian(small).numpy(),
                             np.log(1.0 - np.tanh(small.astype(np.float64)) ** 2), rtol=1e-5)


@pytest.mark.parametrize('mean,std', [(0.3, 0.8), (-1.0, 0.5), (0.0, 1.5)])
def test_tanh_gaussian_density_integrates_to_one(mean, std):
  # Midpoint rule over a in (-1, 1); the density vanishes at both ends.
  num = 400000
  edges = np.linspace(-1.0, 1.0, num + 1)
  a = 0.5 * (edges[1:] + edges[:-1])
  u = np.arctanh(a).astype(np.float32)  # Exact pre-images, no precision loss near +-1.
  log_prob = dist.tanh_gaussian_log_prob(u[:, None], np.full((num, 1), mean, np.float32),
                                         np.float32(np.log(std))).numpy()
  integral = np.sum(np.exp(log_prob.astype(np.float64))) * (2.0 / num)
  assert abs(integral - 1.0) < 1e-3, integral


def test_tanh_gaussian_density_is_gaussian_over_jacobian():
  mean, std = 0.3, 0.8
  u = np.array([-2.5, -1.0, -0.1, 0.0, 0.4, 1.3, 2.0], np.float64)
  expected = _normal_pdf(u, mean, std) / (1.0 - np.tanh(u) ** 2)
  mean_in = np.full((u.size, 1), mean, np.float32)
  log_std = np.float32(np.log(std))
  from_pre_tanh = dist.tanh_gaussian_log_prob(u[:, None], mean_in, log_std).numpy()
  from_action = dist.tanh_gaussian_log_prob(np.tanh(u)[:, None], mean_in, log_std,
                                            is_action=True).numpy()
  np.testing.assert_allclose(np.exp(from_pre_tanh), expected, rtol=1e-5)
  np.testing.assert_allclose(np.exp(from_action), expected, rtol=1e-4)


def test_tanh_gaussian_log_prob_sums_over_dimensions():
  rng = np.random.default_rng(3)
  mean = rng.normal(size=(5, 3)).astype(np.float32)
  log_std = rng.normal(-0.5, 0.3, size=(5, 3)).astype(np.float32)
  u = rng.normal(size=(5, 3)).astype(np.float32)
  joint = dist.tanh_gaussian_log_prob(u, mean, log_std).numpy()
  per_dim = sum(dist.tanh_gaussian_log_prob(u[:, i:i + 1], mean[:, i:i + 1],
                                            log_std[:, i:i + 1]).numpy() for i in range(3))
  assert joint.shape == (5,)
  np.testing.assert_allclose(joint, per_dim, rtol=1e-5)


def test_action_at_the_bound_has_finite_log_prob():
  log_prob = dist.tanh_gaussian_log_prob([[1.0, -1.0]], [[0.0, 0.0]], [0.0, 0.0],
                                         is_action=True).numpy()
  assert np.isfinite(log_prob).all(), log_prob
  with pytest.raises(ValueError, match=r'action_epsilon must be in \(0, 1\), got 0.0'):
    dist.tanh_gaussian_log_prob([[0.5]], [[0.0]], [0.0], is_action=True, action_epsilon=0.0)


def test_sample_tanh_gaussian():
  mean = np.tile(np.array([[0.5, -1.0]], np.float32), (20000, 1))
  log_std = np.array([-1.0, 0.2], np.float32)
  sample = dist.sample_tanh_gaussian(mean, log_std, seed=[3, 4])
  assert sample.action.shape == (20000, 2) and sample.log_prob.shape == (20000,)
  np.testing.assert_allclose(sample.action.numpy(), np.tanh(sample.pre_tanh.numpy()),
                             rtol=1e-6)
  assert np.all(np.abs(sample.action.numpy()) <= 1.0)
  np.testing.assert_allclose(
      sample.log_prob.numpy(),
      dist.tanh_gaussian_log_prob(sample.pre_tanh, mean, log_std).numpy(), rtol=1e-6)
  # The pre-squash samples follow N(mean, std).
  np.testing.assert_allclose(sample.pre_tanh.numpy().mean(0), [0.5, -1.0], atol=0.03)
  np.testing.assert_allclose(sample.pre_tanh.numpy().std(0), np.exp(log_std), rtol=0.03)
  # A stateless seed is reproducible; a generator advances.
  again = dist.sample_tanh_gaussian(mean[:3], log_std, seed=[3, 4]).action.numpy()
  np.testing.assert_array_equal(
      again, dist.sample_tanh_gaussian(mean[:3], log_std, seed=[3, 4]).action.numpy())
  generator = tf.random.Generator.from_seed(7)
  first = dist.sample_tanh_gaussian(mean[:3], log_std, generator=generator).action.numpy()
  second = dist.sample_tanh_gaussian(mean[:3], log_std, generator=generator).action.numpy()
  assert not np.array_equal(first, second)


def test_a_sample_from_given_noise_is_the_generators_sample():
  # What SAC's data-parallel update relies on: noise drawn first, then used, gives the
  # sample the generator would have given.
  mean = tf.constant([[0.3, -1.2], [2.0, 0.1]])
  log_std = tf.constant([[-0.5, 0.2], [0.0, -2.0]])
  drawn = dist.sample_tanh_gaussian(mean, log_std, generator=tf.random.Generator.from_seed(5))
  noise = tf.random.Generator.from_seed(5).normal(tf.shape(mean))
  given = dist.tanh_gaussian_from_noise(mean, log_std, noise)
  for a, b in zip(drawn, given):
    np.testing.assert_array_equal(a.numpy(), b.numpy())
  # By hand: a = tanh(mean + std * eps).
  np.testing.assert_allclose(given.action.numpy(),
                             np.tanh(mean.numpy() + np.exp(log_std.numpy()) * noise.numpy()),
                             rtol=1e-6)


def test_sample_is_reparameterised():
  mean = tf.Variable([[0.2, -0.3]])
  log_std = tf.Variable([-0.5, 0.1])
  with tf.GradientTape() as tape:
    sample = dist.sample_tanh_gaussian(mean, log_std, seed=[5, 6])
    loss = tf.reduce_sum(sample.action) + tf.reduce_sum(sample.log_prob)
  grad_mean, grad_log_std = tape.gradient(loss, [mean, log_std])
  assert grad_mean is not None and grad_log_std is not None
  assert np.all(grad_mean.numpy() != 0) and np.all(grad_log_std.numpy() != 0)


def test_exactly_one_randomness_source():
  with pytest.raises(ValueError, match='exactly one of seed'):
    dist.sample_tanh_gaussian([[0.0]], [0.0])
  with pytest.raises(ValueError, match='exactly one of seed'):
    dist.sample_tanh_gaussian([[0.0]], [0.0], seed=[1, 2],
                              generator=tf.random.Generator.from_seed(1))


def test_tanh_gaussian_mode():
  np.testing.assert_allclose(dist.tanh_gaussian_mode([[0.0, 1.0, -2.0]]).numpy(),
                             np.tanh([[0.0, 1.0, -2.0]]), rtol=1e-6)


def test_bad_shapes_raise():
  with pytest.raises(ValueError, match=r'log_std has shape \(3,\), which does not broadcast'):
    dist.diag_gaussian_log_prob(np.zeros((4, 2)), np.zeros((4, 2)), np.zeros(3))
  with pytest.raises(ValueError, match=r'x has shape \(4, 3\), expected the shape of mean'):
    dist.diag_gaussian_log_prob(np.zeros((4, 3)), np.zeros((4, 2)), np.zeros(2))
  with pytest.raises(ValueError, match=r'mean has shape \(\), expected rank >= 1'):
    dist.tanh_gaussian_log_prob(0.0, 0.0, 0.0)
