"""PopArt: value targets normalised by running statistics, outputs preserved.

van Hasselt et al. 2016 ("Learning values across many orders of magnitude") and
Hessel et al. 2019 ("Multi-task deep RL with PopArt", applied to IMPALA). The
value head learns a normalised value n(x); the value is V(x) = sigma * n(x) + mu,
with mu and sigma the running mean and standard deviation of the value targets:

  mu' = (1 - beta_k) mu + beta_k mean(targets)
  nu' = (1 - beta_k) nu + beta_k mean(targets^2)          (second moment)
  sigma = clip(sqrt(nu - mu^2), min_scale, max_scale)

ART is that update; POP rescales the head's last layer so that V(x) is the same
function before and after it:

  kernel' = kernel * sigma / sigma'
  bias'   = (sigma * bias + mu - mu') / sigma'

beta_k = max(beta, 1 / k) on the k-th update (k = 1, 2, ...): the first 1 / beta
updates average every batch so far, so the statistics are the targets' from the
first update on, with no prior to wash out (beta = 3e-4 would take thousands of
updates to forget mu = 0, sigma = 1).

Pure functions of tensors; the agent keeps mu, nu and k in variables.
"""
from typing import NamedTuple, Tuple

import tensorflow as tf

# Hessel et al. 2019 clip sigma to [1e-4, 1e6].
MIN_SCALE = 1e-4
MAX_SCALE = 1e6


class Moments(NamedTuple):
  """Running statistics of the value targets (float32 scalars)."""
  mean: tf.Tensor
  """mu, the first moment."""
  second_moment: tf.Tensor
  """nu, the second moment (not the variance)."""


def scale(moments: Moments, min_scale: float = MIN_SCALE,
          max_scale: float = MAX_SCALE) -> tf.Tensor:
  """sigma = sqrt(nu - mu^2), clipped to [min_scale, max_scale]."""
  variance = tf.maximum(moments.second_moment - tf.square(moments.mean), 0.0)
  return tf.clip_by_value(tf.sqrt(variance), min_scale, max_scale)


def updated_moments(moments: Moments, targets, weights, step_size,
                    update_number) -> Moments:
  """The moments after one batch of targets (ART).

  Args:
    moments: the moments before.
    targets: value targets, any shape.
    weights: 0/1 (or any >= 0) weights of `targets`' shape; a target of weight 0
      (a truncated transition, whose target is the network's own guess) is left out.
    step_size: beta in (0, 1].
    update_number: k >= 1, this update's number; beta_k = max(beta, 1 / k).

  Returns:
    The new moments; the old ones when every weight is 0.
  """
  targets = tf.convert_to_tensor(targets, tf.float32)
  weights = tf.convert_to_tensor(weights, tf.float32)
  total_weight = tf.reduce_sum(weights)
  safe_weight = tf.maximum(total_weight, 1e-12)
  batch_mean = tf.reduce_sum(weights * targets) / safe_weight
  batch_second_moment = tf.reduce_sum(weights * tf.square(targets)) / safe_weight
  beta = tf.maximum(tf.cast(step_size, tf.float32),
                    1.0 / tf.cast(update_number, tf.float32))
  beta = tf.where(total_weight > 0.0, beta, 0.0)
  return Moments(mean=(1.0 - beta) * moments.mean + beta * batch_mean,
                 second_moment=((1.0 - beta) * moments.second_moment +
                                beta * batch_second_moment))


def preserved_head(kernel, bias, old_mean, old_scale, new_mean, new_scale
                   ) -> Tuple[tf.Tensor, tf.Tensor]:
  """The value head's (kernel, bias) after the statistics change (POP).

  sigma' * (features @ kernel' + bias') + mu' equals
  sigma * (features @ kernel + bias) + mu for every input.
  """
  kernel = tf.convert_to_tensor(kernel, tf.float32)
  bias = tf.convert_to_tensor(bias, tf.float32)
  new_kernel = kernel * old_scale / new_scale
  new_bias = (old_scale * bias + old_mean - new_mean) / new_scale
  return new_kernel, new_bias
