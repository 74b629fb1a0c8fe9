"""Tests for seed.losses.value_rescaling."""
import numpy as np
import pytest
import tensorflow as tf

from seed.losses import value_rescaling as vr


def _grid(dtype):
  """0 and +-10^-8 .. 10^6, 2001 log-spaced magnitudes each side."""
  magnitudes = np.logspace(-8, 6, 2001)
  return np.concatenate([-magnitudes[::-1], [0.0], magnitudes]).astype(dtype)


def _textbook_inverse(x, eps):
  """The paper's closed form, in float64 (loses ~1e-6 relative at small |x|)."""
  x = np.asarray(x, np.float64)
  root = (np.sqrt(1.0 + 4.0 * eps * (np.abs(x) + 1.0 + eps)) - 1.0) / (2.0 * eps)
  return np.sign(x) * (root ** 2 - 1.0)


def test_hand_values():
  # h(3) = sqrt(4) - 1 + 0.003, h(8) = 3 - 1 + 0.008, h(99) = 10 - 1 + 0.099.
  x = np.array([0.0, 3.0, -3.0, 8.0, 99.0, -99.0])
  expected = np.array([0.0, 1.003, -1.003, 2.008, 9.099, -9.099])
  np.testing.assert_allclose(vr.signed_hyperbolic(x).numpy(), expected, rtol=1e-14)
  np.testing.assert_allclose(vr.signed_parabolic(expected).numpy(), x, rtol=1e-12, atol=1e-15)
  # eps = 0: h = sign(x)(sqrt(|x|+1) - 1), h^-1 = sign(x)((|x|+1)^2 - 1).
  np.testing.assert_allclose(vr.signed_hyperbolic([3.0, -8.0], eps=0.0).numpy(), [1.0, -2.0])
  np.testing.assert_allclose(vr.signed_parabolic([1.0, -2.0], eps=0.0).numpy(), [3.0, -8.0])


@pytest.mark.parametrize('eps', [1e-3, 1e-2, 0.0])
def test_round_trips_float64(eps):
  x = _grid(np.float64)
  forward_back = vr.signed_parabolic(vr.signed_hyperbolic(x, eps), eps).numpy()
  back_forward = vr.signed_hyperbolic(vr.signed_parabolic(x, eps), eps).numpy()
  np.testing.assert_allclose(forward_back, x, rtol=1e-13, atol=0)
  np.testing.assert_allclose(back_forward, x, rtol=1e-13, atol=0)


def test_round_trips_float32():
  x = _grid(np.float32)
  forward_back = vr.signed_parabolic(vr.signed_hyperbolic(x)).numpy()
  back_forward = vr.signed_hyperbolic(vr.signed_parabolic(x)).numpy()
  assert forward_back.dtype == np.float32 and back_forward.dtype == np.float32
  np.testing.assert_allclose(forward_back, x, rtol=3e-6, atol=0)
  np.testing.assert_allclose(back_forward, x, rtol=3e-6, atol=0)


def test_inverse_matches_textbook_form():
  x = _grid(np.float64)
  x = x[np.abs(x) >= 1e-2]  # Below, the textbook form itself cancels catastrophically.
  np.testing.assert_allclose(vr.signed_parabolic(x).numpy(), _textbook_inverse(x, 1e-3),
                             rtol=1e-8)


def test_odd_and_strictly_increasing():
  x = _grid(np.float64)
  for fn in (vr.signed_hyperbolic, vr.signed_parabolic):
    y = fn(x).numpy()
    np.testing.assert_array_equal(fn(-x).numpy(), -y)
    assert (np.diff(y) > 0).all()


def test_gradient_at_zero_is_finite():
  x = tf.constant([0.0, 1.0])
  with tf.GradientTape() as tape:
    tape.watch(x)
    y = vr.signed_hyperbolic(x)
  grad = tape.gradient(y, x).numpy()
  # h'(0) = 1/2 + eps; h'(1) = 1 / (2 sqrt(2)) + eps.
  np.testing.assert_allclose(grad, [0.5 + 1e-3, 1 / (2 * np.sqrt(2)) + 1e-3], rtol=1e-6)


def test_dtypes_and_shapes():
  ints = vr.signed_hyperbolic(np.arange(6).reshape(2, 3))
  assert ints.dtype == tf.float32 and ints.shape == (2, 3)
  assert vr.signed_parabolic(tf.zeros([4, 1, 2], tf.float64)).dtype == tf.float64


@pytest.mark.parametrize('fn', [vr.signed_hyperbolic, vr.signed_parabolic])
def test_negative_eps_raises(fn):
  with pytest.raises(ValueError, match=r'eps must be >= 0, got -0.1'):
    fn([1.0], eps=-0.1)
