"""Policy distributions: diagonal Gaussians for continuous control, plain (PPO) and
tanh-squashed (SAC), and the categorical over discrete actions (V-trace, PPO).

Shapes: `mean` is [..., A] (A action dimensions); `log_std` broadcasts against it
(e.g. a state-independent [A] variable for PPO). Log-probabilities and entropies
sum over the last axis and so have shape [...].

Tanh-squashed Gaussian (Haarnoja et al., 2018, appendix C): u ~ N(mean, std^2),
action a = tanh(u) in (-1, 1)^A. By the change of variables
  log pi(a) = log N(u; mean, std) - sum_i log(1 - tanh(u_i)^2),
and log(1 - tanh(u)^2) = 2 * (log 2 - u - softplus(-2u)) exactly, which stays finite
for any finite u; the naive log(1 - a^2 + eps) saturates at |u| ~ 9 in float32 and
biases the entropy term SAC maximises. Rescaling to an env's bounds [low, high] is
an affine map with a constant Jacobian, left to the agent.
"""
import collections
import math

import tensorflow as tf

# SAC's usual bounds: below -10 the std underflows to a point mass (log-probs blow
# up), above 2 the samples saturate tanh and carry no gradient.
LOG_STD_MIN = -10.0
LOG_STD_MAX = 2.0
_HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)

TanhGaussianSample = collections.namedtuple('TanhGaussianSample',
                                            ['action', 'pre_tanh', 'log_prob'])


def _mean_and_log_std(mean, log_std):
  """Converts to float32 and checks that `log_std` broadcasts against `mean` [..., A]."""
  mean = tf.convert_to_tensor(mean, dtype=tf.float32)
  log_std = tf.convert_to_tensor(log_std, dtype=tf.float32)
  if mean.shape.rank is not None and mean.shape.rank < 1:
    raise ValueError(f'mean has shape {mean.shape}, expected rank >= 1 [..., A].')
  try:
    tf.broadcast_static_shape(mean.shape, log_std.shape)
  except ValueError:
    raise ValueError(f'log_std has shape {log_std.shape}, which does not broadcast '
                     f'against mean {mean.shape}.') from None
  return mean, log_std


def _check_same_shape(name, tensor, mean):
  if not tensor.shape.is_compatible_with(mean.shape):
    raise ValueError(f'{name} has shape {tensor.shape}, expected the shape of mean '
                     f'{mean.shape}.')


def clip_log_std(log_std, min_log_std=LOG_STD_MIN, max_log_std=LOG_STD_MAX):
  """Clips `log_std` to [min_log_std, max_log_std] (SAC default [-10, 2]).

  Raises:
    ValueError: if min_log_std > max_log_std.
  """
  if min_log_std > max_log_std:
    raise ValueError(f'min_log_std ({min_log_std}) must not exceed max_log_std '
                     f'({max_log_std}).')
  return tf.clip_by_value(tf.convert_to_tensor(log_std, dtype=tf.float32),
                          min_log_std, max_log_std)


def diag_gaussian_log_prob(x, mean, log_std):
  """log N(x; mean, diag(exp(log_std))^2), summed over the last axis: [...]."""
  mean, log_std = _mean_and_log_std(mean, log_std)
  x = tf.convert_to_tensor(x, dtype=tf.float32)
  _check_same_shape('x', x, mean)
  z = (x - mean) * tf.exp(-log_std)
  return tf.reduce_sum(-0.5 * tf.square(z) - log_std - _HALF_LOG_2PI, axis=-1)


def diag_gaussian_entropy(mean, log_std):
  """Differential entropy sum_i (log_std_i + 0.5 * log(2 pi e)): [...] (mean sets the shape)."""
  mean, log_std = _mean_and_log_std(mean, log_std)
  per_dim = tf.broadcast_to(log_std, tf.shape(mean)) + (_HALF_LOG_2PI + 0.5)
  return tf.reduce_sum(per_dim, axis=-1)


def sample_diag_gaussian(mean, log_std, seed=None, generator=None):
  """A reparameterised sample mean + std * eps, [..., A]; see `_standard_normal`."""
  mean, log_std = _mean_and_log_std(mean, log_std)
  return mean + tf.exp(log_std) * _standard_normal(tf.shape(mean), seed, generator)


def _standard_normal(shape, seed, generator):
  """eps ~ N(0, 1) from exactly one of a stateless `seed` or a `tf.random.Generator`.

  Exactly one is required so that a caller never silently draws from TF's global
  stateful RNG, which is not reproducible across retraces or checkpoints.
  """
  if (seed is None) == (generator is None):
    raise ValueError('Pass exactly one of seed (a stateless [2] int seed) or generator '
                     f'(a tf.random.Generator); got seed={seed!r}, generator={generator!r}.')
  if generator is not None:
    return generator.normal(shape, dtype=tf.float32)
  return tf.random.stateless_normal(shape, seed=seed, dtype=tf.float32)


def log_abs_det_tanh_jacobian(pre_tanh):
  """log |d tanh(u)/du| = log(1 - tanh(u)^2) = 2 (log 2 - u - softplus(-2u)), elementwise."""
  u = tf.convert_to_tensor(pre_tanh, dtype=tf.float32)
  return 2.0 * (math.log(2.0) - u - tf.nn.softplus(-2.0 * u))


def sample_tanh_gaussian(mean, log_std, seed=None, generator=None):
  """Samples a = tanh(mean + std * eps) with its log-probability, reparameterised.

  Gradients flow from `action` and `log_prob` to `mean` and `log_std` (SAC's actor
  loss needs both). Clip `log_std` with `clip_log_std` first if it comes from a net.

  Args:
    mean: [..., A] pre-squash mean.
    log_std: log standard deviation, broadcastable to `mean`.
    seed: stateless [2] int seed (tf.random.stateless_normal); or
    generator: a tf.random.Generator. Exactly one of the two.

  Returns:
    TanhGaussianSample(action [..., A] in (-1, 1), pre_tanh [..., A], log_prob [...]).
    Keep `pre_tanh` to recompute the log-prob later: atanh(action) loses precision
    once |action| rounds to 1.

  Raises:
    ValueError: on bad shapes, or unless exactly one of seed and generator is given.
  """
  mean, log_std = _mean_and_log_std(mean, log_std)
  return tanh_gaussian_from_noise(mean, log_std,
                                  _standard_normal(tf.shape(mean), seed, generator))


def tanh_gaussian_from_noise(mean, log_std, noise):
  """`sample_tanh_gaussian`'s sample for standard-normal `noise` [..., A] drawn beforehand
  (for a whole batch that is then split across devices, each taking its rows)."""
  mean, log_std = _mean_and_log_std(mean, log_std)
  pre_tanh = mean + tf.exp(log_std) * noise
  log_prob = _tanh_gaussian_log_prob_of_pre_tanh(pre_tanh, mean, log_std)
  return TanhGaussianSample(action=tf.tanh(pre_tanh), pre_tanh=pre_tanh, log_prob=log_prob)


def _tanh_gaussian_log_prob_of_pre_tanh(pre_tanh, mean, log_std):
  return (diag_gaussian_log_prob(pre_tanh, mean, log_std) -
          tf.reduce_sum(log_abs_det_tanh_jacobian(pre_tanh), axis=-1))


def tanh_gaussian_log_prob(pre_tanh_or_action, mean, log_std, is_action=False,
                           action_epsilon=1e-6):
  """log pi(a) of a tanh-squashed diagonal Gaussian, summed over the last axis: [...].

  Args:
    pre_tanh_or_action: [..., A]; the pre-squash sample u (default, exact), or the
      squashed action a = tanh(u) when `is_action` is True.
    mean: [..., A] pre-squash mean.
    log_std: log standard deviation, broadcastable to `mean`.
    is_action: the first argument is an action in [-1, 1]; it is clipped to
      [-1 + action_epsilon, 1 - action_epsilon] before atanh, since an action stored
      as exactly +-1 (float rounding, or clipping in the env) has no finite pre-image.
    action_epsilon: see `is_action`.

  Returns:
    [...] float32 log-densities of the action a (not of u).
  """
  mean, log_std = _mean_and_log_std(mean, log_std)
  x = tf.convert_to_tensor(pre_tanh_or_action, dtype=tf.float32)
  _check_same_shape('pre_tanh_or_action', x, mean)
  if is_action:
    if not 0.0 < action_epsilon < 1.0:
      raise ValueError(f'action_epsilon must be in (0, 1), got {action_epsilon}.')
    x = tf.atanh(tf.clip_by_value(x, -1.0 + action_epsilon, 1.0 - action_epsilon))
  return _tanh_gaussian_log_prob_of_pre_tanh(x, mean, log_std)


def tanh_gaussian_mode(mean):
  """The deterministic (evaluation) action tanh(mean): [..., A].

  This is tanh of the Gaussian's mode, the usual greedy action for SAC; it is not
  exactly the mode of the squashed density, which shifts towards 0 for wide stds.
  """
  return tf.tanh(tf.convert_to_tensor(mean, dtype=tf.float32))


def categorical_log_prob(logits, actions) -> tf.Tensor:
  """log pi(a|x) of integer `actions` [...] under `logits` [..., A], any rank."""
  logits = tf.convert_to_tensor(logits, tf.float32)
  return -tf.nn.sparse_softmax_cross_entropy_with_logits(
      labels=tf.cast(actions, tf.int32), logits=logits)


def categorical_entropy(logits) -> tf.Tensor:
  """Entropy (nats) of the categorical with `logits` [..., A] -> [...]."""
  log_probs = tf.nn.log_softmax(tf.convert_to_tensor(logits, tf.float32))
  return -tf.reduce_sum(tf.exp(log_probs) * log_probs, axis=-1)
