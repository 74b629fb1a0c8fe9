"""Tests for seed.losses.beta_loo: numbers by hand, the gradient, unbiasedness with
beta = 1 / mu, and bad input."""
import itertools

import numpy as np
import pytest
import tensorflow as tf

from seed.losses import beta_loo


def _gradient(probs, **kwargs):
  probs = tf.constant(probs, tf.float32)
  with tf.GradientTape() as tape:
    tape.watch(probs)
    loss = tf.reduce_sum(beta_loo.beta_loo_policy_loss(probs, **kwargs).loss)
  return -tape.gradient(loss, probs).numpy()


def test_hand_worked_numbers():
  # pi = [0.5, 0.5], mu = [0.25, 0.75], a^ = 0, Q = [2, 0], R = 3, c = 2:
  #   beta = min(2, 1 / 0.25) = 2; LOO term = 2 * (3 - 2) * 0.5 = 1;
  #   expected Q = 0.5 * 2 + 0.5 * 0 = 1; loss = -2.
  #   d(objective)/d(pi) = [2 * (3 - 2) + 2, 0] = [4, 0].
  inputs = dict(behaviour_probs=[[[0.25, 0.75]]], actions=[[0]], q_values=[[[2.0, 0.0]]],
                returns=[[3.0]], beta_clip=2.0)
  out = beta_loo.beta_loo_policy_loss([[[0.5, 0.5]]], **inputs)
  np.testing.assert_allclose(out.betas.numpy(), [[2.0]])
  np.testing.assert_allclose(out.leave_one_out_term.numpy(), [[1.0]])
  np.testing.assert_allclose(out.expected_q_term.numpy(), [[1.0]])
  np.testing.assert_allclose(out.loss.numpy(), [[-2.0]])
  np.testing.assert_allclose(_gradient([[[0.5, 0.5]]], **inputs), [[[4.0, 0.0]]])
  # c = 1 caps beta at 1: [1 * 1 + 2, 0].
  inputs['beta_clip'] = 1.0
  np.testing.assert_allclose(_gradient([[[0.5, 0.5]]], **inputs), [[[3.0, 0.0]]])


def test_unbiased_with_beta_one_over_mu():
  # Averaged over a^ ~ mu, the gradient with respect to pi is R(a) for every a: the
  # critic's values cancel, whatever they are.
  rng = np.random.default_rng(0)
  actions = 3
  mu = np.array([0.2, 0.5, 0.3], np.float32)
  pi = np.array([0.6, 0.1, 0.3], np.float32)
  q = rng.normal(size=actions).astype(np.float32)
  true_returns = rng.normal(size=actions).astype(np.float32)
  expected = np.zeros(actions)
  for a in range(actions):
    expected += mu[a] * _gradient([[pi]], behaviour_probs=[[mu]], actions=[[a]],
                                  q_values=[[q]], returns=[[true_returns[a]]],
                                  beta_clip=1e6)[0, 0]
  np.testing.assert_allclose(expected, true_returns, rtol=1e-5, atol=1e-6)


def test_gradient_matches_the_formula_entry_by_entry():
  rng = np.random.default_rng(1)
  shape, actions, clip = (3, 2), 4, 2.5
  softmax = lambda x: np.exp(x) / np.exp(x).sum(-1, keepdims=True)
  pi = softmax(rng.normal(size=shape + (actions,))).astype(np.float32)
  mu = softmax(rng.normal(size=shape + (actions,))).astype(np.float32)
  a = rng.integers(0, actions, shape)
  q = rng.normal(size=shape + (actions,)).astype(np.float32)
  r = rng.normal(size=shape).astype(np.float32)
  got = _gradient(pi, behaviour_probs=mu, actions=a, q_values=q, returns=r, beta_clip=clip)
  want = q.astype(np.float64).copy()
  for i, j in itertools.product(range(shape[0]), range(shape[1])):
    beta = min(clip, 1.0 / mu[i, j, a[i, j]])
    want[i, j, a[i, j]] += beta * (r[i, j] - q[i, j, a[i, j]])
  np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize('kwargs, message', [
    (dict(beta_clip=0.0), r'beta_clip = 0.0; accepted: a number > 0'),
    (dict(returns=[[1.0, 2.0]]), 'returns'),
    (dict(actions=[[0.5]]), 'actions must be integers'),
])
def test_bad_input_is_named(kwargs, message):
  inputs = dict(probs=[[[0.5, 0.5]]], behaviour_probs=[[[0.5, 0.5]]], actions=[[0]],
                q_values=[[[1.0, 0.0]]], returns=[[1.0]], beta_clip=1.0)
  inputs.update(kwargs)
  with pytest.raises(ValueError, match=message):
    beta_loo.beta_loo_policy_loss(**inputs)
