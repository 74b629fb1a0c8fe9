"""Tests for seed.losses.sac (SAC and DDPG pieces)."""
import math

import keras
import numpy as np
import pytest
import tensorflow as tf

from seed.losses import sac


def test_soft_q_target_by_hand():
  # min(Q1', Q2') = [2, 5, -2]; minus alpha * log pi = 0.2 * [-1, 0.5, 2]
  #   -> soft values [2.2, 4.9, -2.4].
  # targets: 1 + 0.99 * 2.2 = 3.178; 2 + 0 * 4.9 = 2 (terminal); 0.5 + 0.9 * -2.4 = -1.66.
  target = sac.soft_q_target(rewards=[1.0, 2.0, 0.5], discounts=[0.99, 0.0, 0.9],
                             next_q1=[3.0, 5.0, -1.0], next_q2=[2.0, 6.0, -2.0],
                             next_log_prob=[-1.0, 0.5, 2.0], alpha=0.2).numpy()
  np.testing.assert_allclose(target, [3.178, 2.0, -1.66], rtol=1e-6)


def test_soft_q_target_terminal_ignores_non_finite_next_state():
  target = sac.soft_q_target([1.0, 1.0], [0.0, 0.5], [np.nan, 2.0], [np.inf, 4.0],
                             [np.nan, 0.0], 0.1).numpy()
  np.testing.assert_allclose(target, [1.0, 2.0], rtol=1e-6)


def test_soft_q_target_is_gradient_stopped():
  next_q1 = tf.Variable([1.0, 2.0])
  alpha = tf.Variable(0.3)
  with tf.GradientTape() as tape:
    target = sac.soft_q_target([0.0, 0.0], [0.9, 0.9], next_q1, [3.0, 3.0], [1.0, 1.0],
                               alpha)
    loss = tf.reduce_sum(target)
  assert tape.gradient(loss, [next_q1, alpha]) == [None, None]


def test_sac_policy_loss_by_hand():
  # mean(0.5 * [-1, 0] - min([2, 1], [3, 0])) = mean([-2.5, 0]) = -1.25.
  loss = sac.sac_policy_loss(log_prob=[-1.0, 0.0], q1=[2.0, 1.0], q2=[3.0, 0.0], alpha=0.5)
  np.testing.assert_allclose(loss.numpy(), -1.25, rtol=1e-6)
  alpha = tf.Variable(0.5)
  log_prob = tf.Variable([-1.0, 0.0])
  with tf.GradientTape() as tape:
    loss = sac.sac_policy_loss(log_prob, [2.0, 1.0], [3.0, 0.0], alpha)
  grad_alpha, grad_log_prob = tape.gradient(loss, [alpha, log_prob])
  assert grad_alpha is None  # The temperature has its own loss.
  np.testing.assert_allclose(grad_log_prob.numpy(), [0.25, 0.25], rtol=1e-6)


@pytest.mark.parametrize('log_probs,target_entropy,expected_grad', [
    # Entropy estimate -mean(log_prob) = 2 above target -1: grad = -(-2 - 1) = 3 > 0,
    # so gradient descent lowers alpha.
    ([-1.0, -3.0], -1.0, 3.0),
    # Entropy estimate -1 below target 0: grad = -(1 + 0) = -1 < 0, alpha rises.
    ([0.5, 1.5], 0.0, -1.0),
])
def test_temperature_loss_gradient_sign(log_probs, target_entropy, expected_grad):
  log_alpha = tf.Variable(math.log(0.1))
  log_prob = tf.Variable(log_probs)
  with tf.GradientTape() as tape:
    loss = sac.temperature_loss(log_alpha, log_prob, target_entropy)
  grad_log_alpha, grad_log_prob = tape.gradient(loss, [log_alpha, log_prob])
  np.testing.assert_allclose(loss.numpy(), expected_grad * math.log(0.1), rtol=1e-6)
  np.testing.assert_allclose(grad_log_alpha.numpy(), expected_grad, rtol=1e-6)
  assert grad_log_prob is None  # Only the temperature moves.
  before = log_alpha.numpy()
  keras.optimizers.SGD(0.1).apply_gradients([(grad_log_alpha, log_alpha)])
  assert (log_alpha.numpy() < before) == (expected_grad > 0)


def test_ddpg_target_by_hand():
  # 1 + 0.9 * 10 = 10; the terminal row ignores its (non-finite) next value: -1.
  target = sac.ddpg_target([1.0, -1.0], [0.9, 0.0], [10.0, np.nan]).numpy()
  np.testing.assert_allclose(target, [10.0, -1.0], rtol=1e-6)


def test_polyak_update_by_hand():
  online = [tf.Variable([1.0, 2.0]), tf.Variable([[10.0]])]
  target = [tf.Variable([0.0, 4.0]), tf.Variable([[0.0]])]
  sac.polyak_update(online, target, tau=0.1)
  # 0.1 * 1 + 0.9 * 0 = 0.1; 0.1 * 2 + 0.9 * 4 = 3.8; 0.1 * 10 = 1.
  np.testing.assert_allclose(target[0].numpy(), [0.1, 3.8], rtol=1e-6)
  np.testing.assert_allclose(target[1].numpy(), [[1.0]], rtol=1e-6)
  sac.polyak_update(online, target, tau=0.1)
  # 0.1 * 1 + 0.9 * 0.1 = 0.19; 0.2 + 0.9 * 3.8 = 3.62.
  np.testing.assert_allclose(target[0].numpy(), [0.19, 3.62], rtol=1e-6)
  np.testing.assert_array_equal(online[0].numpy(), [1.0, 2.0])  # Online untouched.
  sac.polyak_update(online, target, tau=0.0)
  np.testing.assert_allclose(target[0].numpy(), [0.19, 3.62], rtol=1e-6)
  sac.polyak_update(online, target, tau=1.0)
  np.testing.assert_array_equal(target[0].numpy(), [1.0, 2.0])


def test_polyak_update_default_tau_and_tf_function():
  online, target = [tf.Variable([1.0])], [tf.Variable([0.0])]
  tf.function(lambda: sac.polyak_update(online, target))()
  np.testing.assert_allclose(target[0].numpy(), [0.005], rtol=1e-6)


def test_polyak_update_on_keras_layers():
  online, target = keras.layers.Dense(3), keras.layers.Dense(3)
  online.build((None, 2))
  target.build((None, 2))
  expected = [0.5 * o.numpy() + 0.5 * t.numpy()
              for o, t in zip(online.variables, target.variables)]
  sac.polyak_update(online.variables, target.variables, tau=0.5)
  for got, want in zip(target.variables, expected):
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-6)


def test_polyak_update_bad_arguments():
  with pytest.raises(ValueError, match=r'tau must be in \[0, 1\], got 1.5'):
    sac.polyak_update([tf.Variable(1.0)], [tf.Variable(1.0)], tau=1.5)
  with pytest.raises(ValueError, match='online_vars has 2 variables but target_vars has 1'):
    sac.polyak_update([tf.Variable(1.0), tf.Variable(2.0)], [tf.Variable(1.0)])
  with pytest.raises(ValueError, match=r'online shape \(2,\) differs from target shape \(3,\)'):
    sac.polyak_update([tf.Variable([1.0, 2.0])], [tf.Variable([1.0, 2.0, 3.0])])


def test_one_temperature_per_seed_equals_each_seed_alone():
  # [N, 1] temperatures against [N, B] batches: row n is what seed n's scalar gives.
  rng = np.random.default_rng(3)
  q1, q2, log_prob = (rng.normal(size=(2, 5)).astype(np.float32) for _ in range(3))
  alphas = np.array([[0.1], [0.7]], np.float32)
  both = sac.soft_state_value(q1, q2, log_prob, alphas)
  for n in range(2):
    np.testing.assert_allclose(both[n], sac.soft_state_value(q1[n], q2[n], log_prob[n],
                                                             alphas[n, 0]), rtol=1e-6)
  # The losses are means over every element: equal-sized seeds give the mean of theirs.
  np.testing.assert_allclose(
      sac.sac_policy_loss(log_prob, q1, q2, alphas),
      np.mean([sac.sac_policy_loss(log_prob[n], q1[n], q2[n], alphas[n, 0]) for n in range(2)]),
      rtol=1e-6)
  np.testing.assert_allclose(
      sac.temperature_loss(np.log(alphas), log_prob, -1.0),
      np.mean([sac.temperature_loss(np.log(alphas[n, 0]), log_prob[n], -1.0)
               for n in range(2)]), rtol=1e-6)


def test_bad_shapes_raise():
  with pytest.raises(ValueError, match=r'next_q2 has shape \(3,\), expected the shape of '
                     r'rewards \(2,\)'):
    sac.soft_q_target([0.0, 0.0], [1.0, 1.0], [0.0, 0.0], [0.0, 0.0, 0.0], [0.0, 0.0], 0.1)
  with pytest.raises(ValueError, match=r'alpha has shape \(2,\), expected a scalar or a shape '
                     r'that broadcasts to the batch shape \(1,\)'):
    sac.soft_q_target([0.0], [1.0], [0.0], [0.0], [0.0], [0.1, 0.2])
  with pytest.raises(ValueError, match=r'log_alpha has shape \(2, 1\), expected a scalar or'):
    sac.temperature_loss(tf.zeros([2, 1]), tf.zeros([3, 4]), -1.0)
  with pytest.raises(ValueError, match=r'target_entropy has shape \(1,\), expected a scalar'):
    sac.temperature_loss(0.0, [0.0], [1.0])
  with pytest.raises(ValueError, match=r'next_q has shape \(1,\), expected the shape'):
    sac.ddpg_target([0.0, 0.0], [1.0, 1.0], [0.0])
