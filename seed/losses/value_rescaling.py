"""Invertible value rescaling (Pohlen et al., 2018; used by R2D2, Kapturowski et al., 2019).

  h(x)    = sign(x) (sqrt(|x| + 1) - 1) + eps x
  h^-1(x) = sign(x) (((sqrt(1 + 4 eps (|x| + 1 + eps)) - 1) / (2 eps))^2 - 1)

Q networks learn h(Q) so that returns spanning several orders of magnitude
(Atari scores) share one loss scale without clipping rewards.

Both are evaluated in algebraically equal forms that avoid cancellation, so
float32 keeps its precision near 0 (where the textbook forms subtract two
numbers close to 1) as well as far out:
  sign(x) (sqrt(|x| + 1) - 1) = x / (sqrt(|x| + 1) + 1)
  h^-1(x) = x k (k |x| + 2),  k = 2 / (1 + 2 eps + sqrt((1 + 2 eps)^2 + 4 eps |x|))
The second follows from u := (sqrt(1 + 4 eps (|x| + 1 + eps)) - 1) / (2 eps) with
u - 1 = k |x| and h^-1 = sign(x) (u - 1) (u + 1). It is also the exact inverse
for eps = 0 (k = 1: (|x| + 1)^2 - 1), so eps = 0 is accepted.
"""
import tensorflow as tf


def _prepare(x, eps):
  """Float tensor of `x` (ints become float32) and a validated `eps`."""
  if not eps >= 0.0:  # Also rejects NaN.
    raise ValueError(f'eps must be >= 0, got {eps}.')
  x = tf.convert_to_tensor(x)
  if not x.dtype.is_floating:
    x = tf.cast(x, tf.float32)
  # convert_to_tensor, not cast: a cast goes through float32 and would round eps.
  return x, tf.convert_to_tensor(eps, dtype=x.dtype)


def signed_hyperbolic(x, eps=1e-3):
  """h(x) = sign(x) (sqrt(|x| + 1) - 1) + eps x, elementwise.

  Args:
    x: tensor of any shape; float dtypes are kept, others become float32.
    eps: the linear term, >= 0; keeps h invertible with a Lipschitz inverse.

  Returns:
    h(x), same shape and (float) dtype as `x`.

  Raises:
    ValueError: if eps < 0.
  """
  x, eps = _prepare(x, eps)
  # x / (sqrt(|x|+1) + 1) rather than sign(x)(sqrt(|x|+1) - 1): no cancellation at
  # small |x| and a well-defined gradient (1/2 + eps) at 0.
  return x / (tf.sqrt(tf.abs(x) + 1.0) + 1.0) + eps * x


def signed_parabolic(x, eps=1e-3):
  """h^-1(x), the exact closed-form inverse of `signed_hyperbolic`, elementwise.

  Args:
    x: tensor of any shape; float dtypes are kept, others become float32.
    eps: the same eps as used for `signed_hyperbolic`, >= 0.

  Returns:
    h^-1(x), same shape and (float) dtype as `x`.

  Raises:
    ValueError: if eps < 0.
  """
  x, eps = _prepare(x, eps)
  abs_x = tf.abs(x)
  one_plus_2eps = 1.0 + 2.0 * eps
  k = 2.0 / (one_plus_2eps + tf.sqrt(tf.square(one_plus_2eps) + 4.0 * eps * abs_x))
  return x * k * (k * abs_x + 2.0)
