"""Retrace Q targets (Munos et al., 2016, "Safe and efficient off-policy RL"), as ACER
(Wang et al., 2017) and Reactor (Gruslys et al., 2018) use them.

All tensors are time-major with any batch shape after time. For T transitions:
  log_rhos[t]      log pi(a_t|x_t) - log mu(a_t|x_t), [T, ...].
  discounts[t]     gamma * (1 - terminated) of the transition t -> t+1, [T, ...].
  rewards[t]       reward of the transition t -> t+1, [T, ...].
  q_values[t]      Q(x_t, a_t) of the taken action, [T, ...].
  state_values[t]  V(x_t) = sum_a pi(a|x_t) Q(x_t, a), [T, ...].
  bootstrap_value  V(x_T), the state after the last transition, [...].
  truncated[t]     the transition t -> t+1 hit a time limit, [T, ...] (optional).

With c_t = lambda * min(1, pi(a_t|x_t) / mu(a_t|x_t)) and V_T := bootstrap_value:
  delta_t = r_t + discounts_t * V_{t+1} - Q_t
  Q^ret_t = Q_t + delta_t + discounts_t * c_{t+1} * (Q^ret_{t+1} - Q_{t+1}),
with the last term 0 at t = T - 1 (no action is taken at x_T). That is ACER's
recursion Q^ret_t = r_t + discounts_t * (c_{t+1} (Q^ret_{t+1} - Q_{t+1}) + V_{t+1}),
and Munos et al.'s sum Q^ret_s = Q_s + sum_{t>=s} (prod_{i=s+1}^t discounts_{i-1} c_i)
delta_t. The trace coefficient of the first step, c_0, is never used: the target of
Q(x_0, a_0) does not depend on how likely a_0 was.

Episode ends: a termination is discount 0, so nothing after it reaches the targets
before it. A truncation (`truncated[t]`) means x_{t+1} was never observed (the actor
reset; values at t+1 belong to the next episode), so that one transition has no
target: Q^ret_t = Q_t and the trace is cut there, which equals computing the steps
before t alone with bootstrap_value = state_values[t] (as in seed.losses.vtrace).
"""
import tensorflow as tf

from seed.losses import shapes


def retrace_targets(log_rhos, discounts, rewards, q_values, state_values, bootstrap_value,
                    truncated=None, lambda_=1.0) -> tf.Tensor:
  """Q^ret, the Retrace targets of Q(x_t, a_t); see the module docstring.

  Args:
    log_rhos: [T, ...] log importance weights log(pi / mu) of the taken actions.
    discounts: [T, ...] gamma * (1 - terminated) of each transition.
    rewards: [T, ...] rewards.
    q_values: [T, ...] Q(x_t, a_t).
    state_values: [T, ...] V(x_t) under the target policy.
    bootstrap_value: [...] V(x_T).
    truncated: optional [T, ...] bool (or 0/1), the transition hit a time limit.
    lambda_: the trace-cutting factor in [0, 1] multiplying every c_t.

  Returns:
    [T, ...] float32 targets, gradient-stopped.

  Raises:
    ValueError: if the shapes do not agree or lambda_ is outside [0, 1].
  """
  if not 0.0 <= float(lambda_) <= 1.0:
    raise ValueError(f'lambda_ = {lambda_!r}; accepted: a number in [0, 1].')
  log_rhos = tf.convert_to_tensor(log_rhos, dtype=tf.float32)
  discounts = tf.convert_to_tensor(discounts, dtype=tf.float32)
  rewards = tf.convert_to_tensor(rewards, dtype=tf.float32)
  q_values = tf.convert_to_tensor(q_values, dtype=tf.float32)
  state_values = tf.convert_to_tensor(state_values, dtype=tf.float32)
  bootstrap_value = tf.convert_to_tensor(bootstrap_value, dtype=tf.float32)
  if log_rhos.shape.rank is not None and log_rhos.shape.rank < 1:
    raise ValueError(f'log_rhos has shape {log_rhos.shape}, expected [T, ...].')
  shapes.check_shape('discounts', discounts, log_rhos.shape)
  shapes.check_shape('rewards', rewards, log_rhos.shape)
  shapes.check_shape('q_values', q_values, log_rhos.shape)
  shapes.check_shape('state_values', state_values, log_rhos.shape)
  if log_rhos.shape.rank is not None:
    shapes.check_shape('bootstrap_value', bootstrap_value, log_rhos.shape[1:])
  if truncated is None:
    is_truncated = tf.zeros_like(log_rhos, dtype=tf.bool)
  else:
    truncated = tf.convert_to_tensor(truncated)
    shapes.check_shape('truncated', truncated, log_rhos.shape)
    # Any dtype works (bool or 0/1 numbers); only "nonzero" matters.
    is_truncated = tf.cast(truncated, tf.bool)

  cs = tf.cast(lambda_, tf.float32) * tf.minimum(1.0, tf.exp(log_rhos))
  # Step t carries c_{t+1}; the last step carries nothing (no action at x_T).
  cs_tp1 = tf.concat([cs[1:], tf.zeros_like(cs[:1])], axis=0)
  state_values_tp1 = tf.concat([state_values[1:], bootstrap_value[tf.newaxis]], axis=0)
  # tf.where, not a product, so a non-finite next-episode value cannot leak in as NaN.
  deltas = tf.where(is_truncated, 0.0, rewards + discounts * state_values_tp1 - q_values)
  carries = tf.where(is_truncated, 0.0, discounts * cs_tp1)

  # acc_t = Q^ret_t - Q_t = delta_t + carry_t * acc_{t+1}, acc_T = 0. tf.scan keeps T
  # dynamic; multiply_no_nan keeps a cut trace (0) at 0 against a non-finite acc.
  def step(acc_tp1, inputs):
    delta_t, carry_t = inputs
    return delta_t + tf.math.multiply_no_nan(acc_tp1, carry_t)

  q_ret_minus_q = tf.scan(step, (deltas, carries), initializer=tf.zeros_like(bootstrap_value),
                          reverse=True)
  # Targets, not functions of the parameters: the losses must not backprop here.
  return tf.stop_gradient(q_values + q_ret_minus_q)
