"""Generalized advantage estimation (Schulman et al., 2016, "GAE").

All tensors are time-major, in the same convention as `seed.losses.vtrace`. For
an unroll of T transitions over B envs (the agent slices its T + 1 steps as
rewards = reward[1:], discounts = gamma * (1 - terminated[1:]),
truncated = truncated[1:], values = V(observation[:-1]),
bootstrap_value = V(observation[T])):
  rewards[t]            reward of the transition t -> t+1, [T, B].
  values[t]             V(x_t), [T, B].
  bootstrap_value       V(x_T), the state after the last transition, [B].
  discounts[t]          gamma * (1 - terminated) of the transition t -> t+1, [T, B].
  truncated[t]          the transition t -> t+1 hit a time limit, [T, B].
  truncation_values[t]  V(x'_{t+1}), the value of the true final state of the
                        episode that was truncated at t, [T, B]; read only where
                        truncated[t] is set.

With next_value_t = truncation_values[t] where truncated[t], else values[t+1]
(bootstrap_value for t = T - 1), and A_T := 0:
  delta_t = r_t + discounts_t * next_value_t - v_t
  A_t     = delta_t + discounts_t * lambda * (1 - truncated_t) * A_{t+1}
  returns_t = A_t + v_t   (the TD(lambda) return, the value target)

Termination vs truncation:
  * Termination is discount 0: delta_t = r_t - v_t and the trace is cut, so
    nothing after t (the next episode) reaches A_t. Where both flags are set
    (gymnasium allows it) termination wins: the truncation value is multiplied
    by the zero discount and never read, even if it is non-finite.
  * Truncation keeps the discount (the episode did not end, we only stopped
    watching), so step t bootstraps from the true final state's value
    truncation_values[t]. values[t+1] is the reset state of the *next* episode
    and must not be used; the lambda-trace is cut at t for the same reason.
    Steps before t then see exactly what a separate unroll ending at t with
    bootstrap_value = truncation_values[t] would give them.
  * With truncated all False (or None) this is textbook GAE over episodes cut by
    discount 0.
"""
import collections

import tensorflow as tf

from seed.losses import shapes

GaeReturns = collections.namedtuple('GaeReturns', ['advantages', 'returns'])



def generalized_advantage_estimation(rewards, values, bootstrap_value, discounts, truncated,
                                     truncation_values, lambda_=0.95):
  """GAE advantages and lambda-returns; see the module docstring for the exact semantics.

  Args:
    rewards: [T, B] rewards of the transitions t -> t+1.
    values: [T, B] V(x_t).
    bootstrap_value: [B] V(x_T).
    discounts: [T, B] gamma * (1 - terminated) of each transition.
    truncated: [T, B] bool (or 0/1 numbers), the transition hit a time limit; None
      means no transition did.
    truncation_values: [T, B] value of the true final state where `truncated[t]` is
      set (anything finite or not elsewhere: it is not read there). May be None only
      when `truncated` is None.
    lambda_: GAE lambda in [0, 1]; 0 gives one-step TD errors, 1 Monte Carlo
      returns (bootstrapped at the unroll end) minus values.

  Returns:
    GaeReturns(advantages [T, B], returns [T, B]), float32, gradient-stopped.

  Raises:
    ValueError: if the shapes do not agree, `lambda_` is outside [0, 1], or
      `truncated` is given without `truncation_values`.
  """
  if not 0.0 <= float(lambda_) <= 1.0:
    raise ValueError(f'lambda_ must be in [0, 1], got {lambda_}.')
  rewards = tf.convert_to_tensor(rewards, dtype=tf.float32)
  values = tf.convert_to_tensor(values, dtype=tf.float32)
  bootstrap_value = tf.convert_to_tensor(bootstrap_value, dtype=tf.float32)
  discounts = tf.convert_to_tensor(discounts, dtype=tf.float32)

  if rewards.shape.rank is not None and rewards.shape.rank != 2:
    raise ValueError(f'rewards has shape {rewards.shape}, expected rank 2 [T, B].')
  time_batch = rewards.shape if rewards.shape.rank is not None else [None, None]
  shapes.check_shape('values', values, time_batch)
  shapes.check_shape('bootstrap_value', bootstrap_value, time_batch[1:])
  shapes.check_shape('discounts', discounts, time_batch)
  if truncated is None:
    # Without truncations the truncation values are never read; accept and ignore them.
    is_truncated = tf.zeros_like(rewards, dtype=tf.bool)
    truncation_values = tf.zeros_like(rewards)
  else:
    if truncation_values is None:
      raise ValueError('truncation_values is None but truncated is given: a truncated '
                       'step needs the value of its true final state; pass both or neither.')
    truncated = tf.convert_to_tensor(truncated)
    shapes.check_shape('truncated', truncated, time_batch)
    # Any dtype works (bool or 0/1 numbers); only "nonzero" matters.
    is_truncated = tf.cast(truncated, tf.bool)
    truncation_values = tf.convert_to_tensor(truncation_values, dtype=tf.float32)
    shapes.check_shape('truncation_values', truncation_values, time_batch)

  values_tp1 = tf.concat([values[1:], bootstrap_value[tf.newaxis]], axis=0)
  # tf.where, not a blend by product, so a non-finite value on the unused side
  # (the next episode's reset state, or an unfilled truncation value) cannot leak as NaN.
  next_values = tf.where(is_truncated, truncation_values, values_tp1)
  # multiply_no_nan: a terminated step (discount 0) ignores its next value even if
  # it is non-finite, e.g. a placeholder truncation value where both flags are set.
  deltas = rewards + tf.math.multiply_no_nan(next_values, discounts) - values
  not_truncated = tf.cast(tf.logical_not(is_truncated), tf.float32)
  trace_decays = discounts * tf.cast(lambda_, tf.float32) * not_truncated

  # A_t = delta_t + discounts_t * lambda * (1 - truncated_t) * A_{t+1}, A_T = 0.
  # tf.scan keeps T dynamic, so a tf.function around this traces once per rank.
  def step(adv_tp1, inputs):
    delta_t, decay_t = inputs
    # A cut trace (0) must stay 0 even against a non-finite A_{t+1}.
    return delta_t + tf.math.multiply_no_nan(adv_tp1, decay_t)

  advantages = tf.scan(step, (deltas, trace_decays),
                       initializer=tf.zeros_like(bootstrap_value), reverse=True)
  returns = advantages + values
  # Targets, not functions of the parameters: the losses must not backprop here.
  return GaeReturns(advantages=tf.stop_gradient(advantages),
                    returns=tf.stop_gradient(returns))
