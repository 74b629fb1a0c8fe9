"""Pure pieces of SAC (Haarnoja et al., 2018) and DDPG (Lillicrap et al., 2016).

Conventions, per transition x -> x' (any batch shape [...], all inputs alike):
  rewards      reward of the transition.
  discounts    gamma * (1 - terminated). A truncated transition keeps gamma: the
               episode did not end, and the next-state quantities must then come
               from the true final observation, not the actor's reset one.
  next_*       quantities at x' under the *target* critics and the current policy.
Targets are gradient-stopped: the critic regresses onto them, it does not move them.
"""
import tensorflow as tf

from seed.losses import shapes

DEFAULT_TAU = 0.005


def _as_float(x):
  return tf.convert_to_tensor(x, dtype=tf.float32)


def _check_scalar(name, x):
  if x.shape.rank is not None and x.shape.rank != 0:
    raise ValueError(f'{name} has shape {x.shape}, expected a scalar.')


def _check_temperature(name, x, like):
  """A scalar, or one value per seed of a seed-axis batch ([N, 1] for [N, B]): any shape
  that broadcasts to `like`'s without changing it."""
  if x.shape.rank == 0:
    return
  try:
    fits = tf.broadcast_static_shape(x.shape, like.shape) == like.shape
  except ValueError:
    fits = False
  if not fits or x.shape.rank > like.shape.rank:
    raise ValueError(f'{name} has shape {x.shape}, expected a scalar or a shape that '
                     f'broadcasts to the batch shape {like.shape} (one per seed).')


def soft_q_target(rewards, discounts, next_q1, next_q2, next_log_prob, alpha):
  """SAC's soft Bellman target r + discount * (min(Q1', Q2') - alpha * log pi(a'|x')).

  Args:
    rewards: [...] rewards.
    discounts: [...] gamma * (1 - terminated).
    next_q1: [...] first target critic at (x', a'), a' ~ pi(.|x').
    next_q2: [...] second target critic at (x', a') (clipped double-Q: the min
      counters the critics' overestimation).
    next_log_prob: [...] log pi(a'|x') of that same a'.
    alpha: the entropy temperature (not its log): a scalar, or one per seed that
      broadcasts to [...] ([N, 1] for [N, B]).

  Returns:
    [...] float32 targets, gradient-stopped.

  Raises:
    ValueError: if the shapes differ or alpha does not broadcast to them.
  """
  rewards = _as_float(rewards)
  discounts = _as_float(discounts)
  next_q1 = _as_float(next_q1)
  next_q2 = _as_float(next_q2)
  next_log_prob = _as_float(next_log_prob)
  alpha = _as_float(alpha)
  shapes.check_same_shapes(rewards=rewards, discounts=discounts, next_q1=next_q1,
                     next_q2=next_q2, next_log_prob=next_log_prob)
  _check_temperature('alpha', alpha, rewards)
  soft_next_value = soft_state_value(next_q1, next_q2, next_log_prob, alpha)
  # multiply_no_nan: a terminal transition ignores x' even if its value is non-finite.
  return tf.stop_gradient(rewards + tf.math.multiply_no_nan(soft_next_value, discounts))


def soft_state_value(q1, q2, log_prob, alpha):
  """SAC's soft state value min(Q1, Q2)(x, a) - alpha * log pi(a|x) for a ~ pi(.|x): [...].

  The bootstrap of `soft_q_target`, also what an n-step target bootstraps from.
  """
  q1 = _as_float(q1)
  q2 = _as_float(q2)
  log_prob = _as_float(log_prob)
  alpha = _as_float(alpha)
  shapes.check_same_shapes(q1=q1, q2=q2, log_prob=log_prob)
  _check_temperature('alpha', alpha, log_prob)
  return tf.minimum(q1, q2) - alpha * log_prob


def sac_policy_loss(log_prob, q1, q2, alpha):
  """SAC actor loss mean(alpha * log pi(a|x) - min(Q1, Q2)(x, a)), a ~ pi reparameterised.

  Gradients flow through `log_prob` and the critics' inputs to the policy; alpha is
  treated as a constant (it has its own loss, `temperature_loss`).
  """
  log_prob = _as_float(log_prob)
  q1 = _as_float(q1)
  q2 = _as_float(q2)
  alpha = _as_float(alpha)
  shapes.check_same_shapes(log_prob=log_prob, q1=q1, q2=q2)
  _check_temperature('alpha', alpha, log_prob)
  return tf.reduce_mean(tf.stop_gradient(alpha) * log_prob - tf.minimum(q1, q2))


def temperature_loss(log_alpha, log_prob, target_entropy):
  """SAC's automatic temperature loss -mean(log_alpha * (log pi(a|x) + target_entropy)).

  d loss / d log_alpha = -mean(log_prob + target_entropy) = mean(H_estimate) - target
  where H_estimate = -log_prob, so gradient descent raises alpha while the policy's
  entropy is below target and lowers it while above. Optimising log_alpha rather
  than alpha keeps alpha positive without a constraint. `log_prob` is
  gradient-stopped: this loss moves only the temperature.

  Args:
    log_alpha: scalar (typically a tf.Variable), or one per seed that broadcasts to
      `log_prob` ([N, 1] for [N, B]).
    log_prob: [...] log pi(a|x) of fresh samples a ~ pi(.|x).
    target_entropy: scalar, commonly -action_dim.

  Returns:
    Scalar loss.
  """
  log_alpha = _as_float(log_alpha)
  log_prob = _as_float(log_prob)
  target_entropy = _as_float(target_entropy)
  _check_temperature('log_alpha', log_alpha, log_prob)
  _check_scalar('target_entropy', target_entropy)
  return -tf.reduce_mean(log_alpha * tf.stop_gradient(log_prob + target_entropy))


def ddpg_target(rewards, discounts, next_q):
  """DDPG's target r + discount * Q'(x', mu'(x')), gradient-stopped.

  Args:
    rewards: [...] rewards.
    discounts: [...] gamma * (1 - terminated).
    next_q: [...] target critic at x' and the target actor's action.

  Returns:
    [...] float32 targets.
  """
  rewards = _as_float(rewards)
  discounts = _as_float(discounts)
  next_q = _as_float(next_q)
  shapes.check_same_shapes(rewards=rewards, discounts=discounts, next_q=next_q)
  return tf.stop_gradient(rewards + tf.math.multiply_no_nan(next_q, discounts))


def polyak_update(online_vars, target_vars, tau=DEFAULT_TAU):
  """Assigns target <- tau * online + (1 - tau) * target for each pair of variables.

  tau = 1 copies the online variables (use it once at start-up so both nets begin
  equal); the default 0.005 is the SAC/TD3 rate. Works eagerly and in tf.function.

  Args:
    online_vars: sequence of tf.Variable (or tensors), e.g. `critic.variables`.
    target_vars: sequence of tf.Variable, same length, shapes and order.
    tau: float in [0, 1].

  Raises:
    ValueError: if tau is outside [0, 1] or the variable lists do not pair up.
  """
  tau = float(tau)
  if not 0.0 <= tau <= 1.0:
    raise ValueError(f'tau must be in [0, 1], got {tau}.')
  online_vars = list(online_vars)
  target_vars = list(target_vars)
  if len(online_vars) != len(target_vars):
    raise ValueError(f'online_vars has {len(online_vars)} variables but target_vars has '
                     f'{len(target_vars)}; they must pair up one to one.')
  for i, (online, target) in enumerate(zip(online_vars, target_vars)):
    # tf.TensorShape: Keras 3 variables may report their shape as a plain tuple.
    if not tf.TensorShape(online.shape).is_compatible_with(tf.TensorShape(target.shape)):
      name = getattr(target, 'path', None) or getattr(target, 'name', '?')
      raise ValueError(f'Variable pair {i} ({name}): online shape '
                       f'{tuple(online.shape)} differs from target shape {tuple(target.shape)}.')
  for online, target in zip(online_vars, target_vars):
    # Works for tf.Variable and Keras 3 variables alike (both convert and assign);
    # computed in the target's dtype so a float64 or mixed-precision target is fine.
    online_value = tf.cast(tf.convert_to_tensor(online), target.dtype)
    target_value = tf.convert_to_tensor(target)
    target.assign(tau * online_value + (1.0 - tau) * target_value)
