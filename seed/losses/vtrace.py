"""V-trace off-policy returns (Espeholt et al., 2018, "IMPALA").

All tensors are time-major. For an unroll of T transitions over B envs:
  log_rhos[t]      log pi(a_t|x_t) - log mu(a_t|x_t), [T, B].
  discounts[t]     gamma * (1 - terminated) of the transition t -> t+1, [T, B].
  rewards[t]       reward of the transition t -> t+1, [T, B].
  values[t]        V(x_t) under the learner's value function, [T, B].
  bootstrap_value  V(x_T), the state after the last transition, [B].
  truncated[t]     the transition t -> t+1 hit a time limit, [T, B] (optional).

With rho_t = min(clip_rho, exp(log_rho_t)) and c_t = lambda * min(1, exp(log_rho_t))
(c-bar = 1, as in IMPALA and SEED), v_T := vs_T := bootstrap_value:
  delta_t = rho_t * (r_t + discounts_t * v_{t+1} - v_t)
  vs_t    = v_t + delta_t + discounts_t * c_t * (vs_{t+1} - v_{t+1})
  pg_advantages_t = min(clip_pg_rho, exp(log_rho_t)) * (r_t + discounts_t * vs_{t+1} - v_t)

Termination vs truncation:
  * Termination is an ordinary step with discount 0: delta_t = rho_t * (r_t - v_t)
    and nothing after t leaks into vs_t.
  * Truncation (`truncated[t]` True) means x_{t+1} was never observed: the actor
    reset, so values[t+1] (or bootstrap_value when t = T - 1) is the value of the
    *next* episode's first state and the true target for step t is unknown. Rather
    than guess, that one transition is dropped: delta_t = 0, c_t = 0 (the trace is
    cut) and pg_advantages_t = 0, hence vs_t = v_t. Every earlier step of the same
    episode still bootstraps from values inside its own episode (step t - 1 uses
    v_t, whose target vs_t - v_t = 0 adds nothing), so it equals computing the
    steps before t alone with bootstrap_value = values[t]. The discount given at a
    truncated step is ignored.
"""
import collections

import tensorflow as tf

from seed.losses import shapes

VTraceReturns = collections.namedtuple('VTraceReturns', ['vs', 'pg_advantages'])



def log_probs_from_logits_and_actions(logits, actions):
  """log pi(a_t|x_t) of the taken actions.

  Args:
    logits: [T, B, num_actions] unnormalised log-probabilities.
    actions: [T, B] integer actions.

  Returns:
    [T, B] float32 log-probabilities.
  """
  logits = tf.convert_to_tensor(logits, dtype=tf.float32)
  actions = tf.convert_to_tensor(actions)
  if logits.shape.rank is not None and logits.shape.rank != 3:
    raise ValueError(f'logits has shape {logits.shape}, expected rank 3 [T, B, A].')
  shapes.check_shape('actions', actions, logits.shape[:2])
  if not actions.dtype.is_integer:
    raise ValueError(f'actions must be integers, got dtype {actions.dtype.name}.')
  return -tf.nn.sparse_softmax_cross_entropy_with_logits(
      labels=tf.cast(actions, tf.int32), logits=logits)


def vtrace_from_importance_weights(log_rhos, discounts, rewards, values, bootstrap_value,
                                   truncated=None, clip_rho_threshold=1.0,
                                   clip_pg_rho_threshold=1.0, lambda_=1.0):
  """V-trace targets and policy-gradient advantages; see the module docstring.

  Args:
    log_rhos: [T, B] log importance weights log(pi / mu) of the taken actions.
    discounts: [T, B] gamma * (1 - terminated) of each transition.
    rewards: [T, B] rewards.
    values: [T, B] V(x_t).
    bootstrap_value: [B] V(x_T).
    truncated: optional [T, B] bool, the transition hit a time limit.
    clip_rho_threshold: rho-bar for the value targets; None disables clipping.
    clip_pg_rho_threshold: clip for the policy-gradient weights; None disables.
    lambda_: trace-cutting factor lambda in [0, 1] multiplying c_t.

  Returns:
    VTraceReturns(vs [T, B], pg_advantages [T, B]), float32, gradient-stopped.

  Raises:
    ValueError: if the shapes do not agree.
  """
  log_rhos = tf.convert_to_tensor(log_rhos, dtype=tf.float32)
  discounts = tf.convert_to_tensor(discounts, dtype=tf.float32)
  rewards = tf.convert_to_tensor(rewards, dtype=tf.float32)
  values = tf.convert_to_tensor(values, dtype=tf.float32)
  bootstrap_value = tf.convert_to_tensor(bootstrap_value, dtype=tf.float32)

  if log_rhos.shape.rank is not None and log_rhos.shape.rank != 2:
    raise ValueError(f'log_rhos has shape {log_rhos.shape}, expected rank 2 [T, B].')
  time_batch = log_rhos.shape if log_rhos.shape.rank is not None else [None, None]
  shapes.check_shape('discounts', discounts, time_batch)
  shapes.check_shape('rewards', rewards, time_batch)
  shapes.check_shape('values', values, time_batch)
  shapes.check_shape('bootstrap_value', bootstrap_value, time_batch[1:])
  if truncated is not None:
    truncated = tf.convert_to_tensor(truncated)
    shapes.check_shape('truncated', truncated, time_batch)
    # Any dtype works (bool or 0/1 numbers); only "nonzero" matters.
    not_truncated = tf.cast(tf.logical_not(tf.cast(truncated, tf.bool)), tf.float32)
  else:
    not_truncated = tf.ones_like(log_rhos)

  rhos = tf.exp(log_rhos)
  clipped_rhos = rhos if clip_rho_threshold is None else tf.minimum(
      tf.cast(clip_rho_threshold, tf.float32), rhos)
  clipped_pg_rhos = rhos if clip_pg_rho_threshold is None else tf.minimum(
      tf.cast(clip_pg_rho_threshold, tf.float32), rhos)
  # Zeroing c_t at a truncation cuts the trace, so nothing from the next
  # episode (values[t+1:]) reaches vs of this episode's steps.
  cs = tf.cast(lambda_, tf.float32) * tf.minimum(1.0, rhos) * not_truncated

  values_tp1 = tf.concat([values[1:], bootstrap_value[tf.newaxis]], axis=0)
  # tf.where, not a product, so a non-finite next-episode value cannot leak in as NaN.
  is_truncated = tf.equal(not_truncated, 0.0)
  deltas = tf.where(is_truncated, 0.0,
                    clipped_rhos * (rewards + discounts * values_tp1 - values))

  # acc_t = vs_t - v_t = delta_t + discounts_t * c_t * acc_{t+1}, acc_T = 0.
  # tf.scan keeps T dynamic, so a tf.function around this traces once per rank.
  # multiply_no_nan: a cut trace (0) must stay 0 even against a non-finite acc.
  def step(acc_tp1, inputs):
    delta_t, discount_t, c_t = inputs
    return delta_t + tf.math.multiply_no_nan(acc_tp1, discount_t * c_t)

  vs_minus_v = tf.scan(step, (deltas, discounts, cs),
                       initializer=tf.zeros_like(bootstrap_value),
                       reverse=True)
  vs = values + vs_minus_v

  vs_tp1 = tf.concat([vs[1:], bootstrap_value[tf.newaxis]], axis=0)
  pg_advantages = tf.where(
      is_truncated, 0.0,
      clipped_pg_rhos * (rewards + discounts * vs_tp1 - values))

  # Targets, not functions of the parameters: the losses must not backprop here.
  return VTraceReturns(vs=tf.stop_gradient(vs),
                       pg_advantages=tf.stop_gradient(pg_advantages))
