"""Tests for seed.losses.ppo."""
import numpy as np
import pytest
import tensorflow as tf

from seed.losses import ppo

# Five samples, clip 0.2, covering both signs of A on both sides of the clip range:
#   A      ratio  r*A    clip(r)*A  min    clipped?
#   2      1.5    3.0    2.4        2.4    yes (A > 0, r > 1.2: no reward for more)
#   2      0.5    1.0    1.6        1.0    no  (A > 0, r < 0.8: a loss, never clipped)
#   -1     0.5    -0.5   -0.8       -0.8   yes (A < 0, r < 0.8: no reward for less)
#   -1     1.5    -1.5   -1.2       -1.5   no  (A < 0, r > 1.2: a loss, never clipped)
#   3      1.0    3.0    3.0        3.0    no
# loss = -mean(min) = -(2.4 + 1.0 - 0.8 - 1.5 + 3.0) / 5 = -0.82.
# d loss / d log_prob_i = -(1/5) * r_i * A_i where unclipped, else 0:
#   [0, -0.2, 0, 0.3, -0.6].
_ADVANTAGES = np.array([2.0, 2.0, -1.0, -1.0, 3.0], np.float32)
_RATIOS = np.array([1.5, 0.5, 0.5, 1.5, 1.0], np.float32)
_OLD_LOG_PROB = np.array([-1.0, -0.5, -2.0, 0.3, -1.2], np.float32)


def test_clipped_loss_and_gradient_by_hand():
  log_prob = tf.Variable(_OLD_LOG_PROB + np.log(_RATIOS))
  old_log_prob = tf.Variable(_OLD_LOG_PROB)
  advantages = tf.Variable(_ADVANTAGES)
  with tf.GradientTape() as tape:
    loss = ppo.ppo_clipped_loss(log_prob, old_log_prob, advantages, clip=0.2)
  grads = tape.gradient(loss, [log_prob, old_log_prob, advantages])
  np.testing.assert_allclose(loss.numpy(), -0.82, rtol=1e-5)
  np.testing.assert_allclose(grads[0].numpy(), [0.0, -0.2, 0.0, 0.3, -0.6], atol=1e-6)
  assert grads[1] is None and grads[2] is None  # Behaviour policy and targets are fixed.


def test_wider_clip_unclips_everything():
  # With clip 0.6 every ratio is inside [0.4, 1.6]: the plain surrogate -mean(r * A).
  loss = ppo.ppo_clipped_loss(_OLD_LOG_PROB + np.log(_RATIOS), _OLD_LOG_PROB, _ADVANTAGES,
                              clip=0.6)
  np.testing.assert_allclose(loss.numpy(), -np.mean(_RATIOS * _ADVANTAGES), rtol=1e-5)


def test_on_policy_loss_is_minus_mean_advantage():
  log_prob = np.array([[-0.3, -2.0], [-1.0, -0.1]], np.float32)
  advantages = np.array([[1.0, -2.0], [0.5, 4.0]], np.float32)
  loss = ppo.ppo_clipped_loss(log_prob, log_prob, advantages)
  np.testing.assert_allclose(loss.numpy(), -advantages.mean(), rtol=1e-6)


def test_diagnostics_by_hand():
  # |r - 1| > 0.2 for 4 of 5 samples. (r - 1) - log r: 0.0945349 for r = 1.5,
  # 0.1931472 for r = 0.5, 0 for r = 1; mean = 0.5753642 / 5 = 0.1150728.
  diag = ppo.ppo_diagnostics(_OLD_LOG_PROB + np.log(_RATIOS), _OLD_LOG_PROB, clip=0.2)
  np.testing.assert_allclose(diag.clip_fraction.numpy(), 0.8, rtol=1e-6)
  np.testing.assert_allclose(diag.approx_kl.numpy(), 0.1150728, rtol=1e-5)


def test_normalize_advantages_by_hand():
  # mean 2.5, population std sqrt(1.25) = 1.1180340.
  normalized = ppo.normalize_advantages([1.0, 2.0, 3.0, 4.0]).numpy()
  np.testing.assert_allclose(normalized, [-1.3416408, -0.4472136, 0.4472136, 1.3416408],
                             rtol=1e-5)
  np.testing.assert_array_equal(ppo.normalize_advantages([3.0, 3.0, 3.0]).numpy(), 0.0)


def test_normalize_advantages_over_all_elements():
  advantages = np.random.default_rng(0).normal(5.0, 3.0, (7, 4)).astype(np.float32)
  normalized = ppo.normalize_advantages(advantages).numpy()
  assert normalized.shape == (7, 4)
  np.testing.assert_allclose(normalized, (advantages - advantages.mean()) / advantages.std(),
                             rtol=1e-4, atol=1e-5)
  normalized = tf.function(ppo.normalize_advantages, input_signature=[tf.TensorSpec(None)])(
      advantages).numpy()
  np.testing.assert_allclose(normalized.mean(), 0.0, atol=1e-5)
  np.testing.assert_allclose(normalized.std(), 1.0, rtol=1e-5)


def test_bad_arguments_raise():
  with pytest.raises(ValueError, match=r'clip must be in \(0, 1\), got 1.5'):
    ppo.ppo_clipped_loss(_OLD_LOG_PROB, _OLD_LOG_PROB, _ADVANTAGES, clip=1.5)
  with pytest.raises(ValueError, match=r'advantages has shape \(4,\), expected the shape of '
                     r'log_prob \(5,\)'):
    ppo.ppo_clipped_loss(_OLD_LOG_PROB, _OLD_LOG_PROB, _ADVANTAGES[:4])
  with pytest.raises(ValueError, match=r'epsilon must be positive, got 0'):
    ppo.normalize_advantages([1.0, 2.0], epsilon=0)
  with pytest.raises(ValueError, match='cannot normalise an empty batch'):
    ppo.normalize_advantages(np.zeros((0, 3)))
