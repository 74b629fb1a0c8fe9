"""PPO's clipped surrogate objective (Schulman et al., 2017) and advantage normalisation.

With ratio r = exp(log_prob - old_log_prob) and advantage A, per sample:
  surrogate = min(r * A, clip(r, 1 - clip, 1 + clip) * A)
and the loss is -mean(surrogate). The min makes the objective pessimistic: for
A > 0 it stops rewarding r above 1 + clip, for A < 0 it stops rewarding r below
1 - clip, and in both cases the gradient there is zero; moves that make the
surrogate worse are never clipped.
"""
import collections

import tensorflow as tf

from seed.losses import shapes

PpoDiagnostics = collections.namedtuple('PpoDiagnostics', ['clip_fraction', 'approx_kl'])


def _check_clip(clip):
  if not 0.0 < float(clip) < 1.0:
    raise ValueError(f'clip must be in (0, 1), got {clip}.')


def clipped_surrogate(log_prob, old_log_prob, advantages, clip=0.2):
  """[...] min(r * A, clip(r, 1 - clip, 1 + clip) * A) element by element, r =
  exp(log_prob - old_log_prob); the arguments as ppo_clipped_loss's."""
  _check_clip(clip)
  log_prob = tf.convert_to_tensor(log_prob, dtype=tf.float32)
  old_log_prob = tf.stop_gradient(tf.convert_to_tensor(old_log_prob, dtype=tf.float32))
  advantages = tf.stop_gradient(tf.convert_to_tensor(advantages, dtype=tf.float32))
  shapes.check_same_shapes(log_prob=log_prob, old_log_prob=old_log_prob, advantages=advantages)
  ratio = tf.exp(log_prob - old_log_prob)
  clipped_ratio = tf.clip_by_value(ratio, 1.0 - clip, 1.0 + clip)
  return tf.minimum(ratio * advantages, clipped_ratio * advantages)


def ppo_clipped_loss(log_prob, old_log_prob, advantages, clip=0.2):
  """-mean(min(r * A, clip(r, 1 - clip, 1 + clip) * A)), r = exp(log_prob - old_log_prob).

  Args:
    log_prob: [...] log pi(a|x) under the policy being optimised (differentiable).
    old_log_prob: [...] log pi_old(a|x) of the policy that acted; gradient-stopped.
    advantages: [...] advantage estimates (e.g. GAE, usually normalised);
      gradient-stopped.
    clip: epsilon in (0, 1).

  Returns:
    Scalar loss.

  Raises:
    ValueError: if the shapes differ or clip is outside (0, 1).
  """
  return -tf.reduce_mean(clipped_surrogate(log_prob, old_log_prob, advantages, clip))


def ppo_diagnostics(log_prob, old_log_prob, clip=0.2):
  """Scalars to log next to the loss: how far the update moved the policy.

  Returns:
    PpoDiagnostics(clip_fraction: fraction of samples with |r - 1| > clip,
    approx_kl: mean((r - 1) - log r), an unbiased, non-negative estimate of
    KL(pi_old || pi) from samples of pi_old), gradient-stopped.
  """
  _check_clip(clip)
  log_prob = tf.convert_to_tensor(log_prob, dtype=tf.float32)
  old_log_prob = tf.convert_to_tensor(old_log_prob, dtype=tf.float32)
  shapes.check_same_shapes(log_prob=log_prob, old_log_prob=old_log_prob)
  log_ratio = tf.stop_gradient(log_prob - old_log_prob)
  ratio = tf.exp(log_ratio)
  clip_fraction = tf.reduce_mean(tf.cast(tf.abs(ratio - 1.0) > clip, tf.float32))
  approx_kl = tf.reduce_mean((ratio - 1.0) - log_ratio)
  return PpoDiagnostics(clip_fraction=clip_fraction, approx_kl=approx_kl)


def normalize_advantages(advantages, epsilon=1e-8):
  """(A - mean(A)) / (std(A) + epsilon) over all elements, gradient-stopped.

  Normalising per batch makes the policy step size independent of the reward scale.
  epsilon keeps a constant batch (std 0) finite: it maps to zeros.

  Args:
    advantages: [...] advantages, at least one element.
    epsilon: small positive float.

  Returns:
    [...] float32, same shape.
  """
  if not float(epsilon) > 0.0:
    raise ValueError(f'epsilon must be positive, got {epsilon}.')
  advantages = tf.stop_gradient(tf.convert_to_tensor(advantages, dtype=tf.float32))
  if advantages.shape.num_elements() == 0:
    raise ValueError(f'advantages has shape {advantages.shape}: cannot normalise an '
                     'empty batch.')
  # Reductions over all axes (axis=None), so an unknown rank inside tf.function works.
  centred = advantages - tf.reduce_mean(advantages)
  std = tf.sqrt(tf.reduce_mean(tf.square(centred)))
  return centred / (std + epsilon)
