"""The IMPALA loss: V-trace policy gradient + baseline regression + entropy bonus.

A pure function of arrays: it reads no flags or configuration, so the agent
decides discounts, reward clipping and coefficients and tests can call it on
hand-made numbers.

Reduction: every term is summed over time and averaged over the batch, i.e. a
per-unroll loss. IMPALA (scalable_agent) summed over both axes, SEED's learner
averages over both; summing over time keeps the loss scale independent of the
batch size while keeping the per-trajectory scale IMPALA's max_grad_norm = 40
was tuned for. With Adam the choice only matters through epsilon and clipping.
"""
from typing import Dict, NamedTuple

import tensorflow as tf

from seed.losses import distributions
from seed.losses import ppo
from seed.losses import vtrace


class ImpalaLoss(NamedTuple):
  """What impala_loss gives the agent."""
  total_loss: tf.Tensor
  """Scalar: policy_loss + baseline_loss + entropy_loss; what the optimizer minimises."""
  components: Dict[str, tf.Tensor]
  """Scalars for logging, see impala_loss."""
  value_targets: tf.Tensor
  """[T, B] the V-trace targets vs (unnormalised, gradient-stopped), for PopArt's
  statistics."""
  unroll_priorities: tf.Tensor
  """[B] each unroll's mean |vs_t - V(x_t)| / sigma over its transitions: how much its
  value is still wrong, the priority a prioritized replay gives it."""


def _sum_time_mean_batch(x: tf.Tensor, unroll_weights=None) -> tf.Tensor:
  """[T, B] -> scalar: sum over time, mean over batch (each unroll weighted, if given)."""
  per_unroll = tf.reduce_sum(x, axis=0)
  if unroll_weights is not None:
    per_unroll = per_unroll * unroll_weights
  return tf.reduce_mean(per_unroll)


def normalized_advantages(advantages, truncated=None, epsilon=1e-8) -> tf.Tensor:
  """[T, B] advantages scaled to mean 0, standard deviation 1 over the transitions
  that are not truncated (those stay 0: they carry no policy gradient)."""
  advantages = tf.convert_to_tensor(advantages, tf.float32)
  valid = (tf.ones_like(advantages) if truncated is None else
           1.0 - tf.cast(truncated, tf.float32))
  count = tf.maximum(tf.reduce_sum(valid), 1.0)
  mean = tf.reduce_sum(advantages * valid) / count
  variance = tf.reduce_sum(tf.square(advantages - mean) * valid) / count
  return valid * (advantages - mean) / (tf.sqrt(variance) + epsilon)


def one_step_advantages(vs, values, bootstrap_value, rewards, discounts,
                        truncated=None) -> tf.Tensor:
  """[T, B] r_t + discounts_t * vs_{t+1} - v_t, vs_T = bootstrap_value, 0 where truncated
  (x_{t+1} was never observed): V-trace's policy-gradient advantage without its
  importance weight, gradient-stopped."""
  vs = tf.convert_to_tensor(vs, tf.float32)
  bootstrap_value = tf.convert_to_tensor(bootstrap_value, tf.float32)
  vs_next = tf.concat([vs[1:], bootstrap_value[tf.newaxis]], axis=0)
  advantages = (tf.convert_to_tensor(rewards, tf.float32)
                + tf.convert_to_tensor(discounts, tf.float32) * vs_next
                - tf.convert_to_tensor(values, tf.float32))
  if truncated is not None:
    advantages = tf.where(tf.cast(truncated, tf.bool), 0.0, advantages)
  return tf.stop_gradient(advantages)


def impala_loss(target_logits, behaviour_logits, actions, values, bootstrap_value,
                rewards, discounts, truncated, baseline_cost, entropy_cost,
                clip_rho_threshold=1.0, clip_pg_rho_threshold=1.0,
                lambda_=1.0, normalize_advantages=False, value_scale=1.0,
                unroll_weights=None, policy_clip=None) -> ImpalaLoss:
  """IMPALA loss over T transitions of B unrolls, all time-major.

  Args:
    target_logits: [T, B, A] logits of the policy being trained (differentiable).
    behaviour_logits: [T, B, A] logits the actors sampled from.
    actions: [T, B] integer actions taken.
    values: [T, B] V(x_t) of the network being trained (differentiable).
    bootstrap_value: [B] V(x_T); only enters the (gradient-stopped) targets.
    rewards: [T, B] rewards of the transitions t -> t+1, already clipped if wanted.
    discounts: [T, B] gamma * (1 - terminated) of the transitions t -> t+1.
    truncated: [T, B] bool or None; a truncated transition contributes nothing
      (vs_t = v_t, zero advantage), see `seed.losses.vtrace`.
    baseline_cost: weight of the baseline loss.
    entropy_cost: weight of the entropy bonus.
    clip_rho_threshold: V-trace rho-bar; None disables clipping.
    clip_pg_rho_threshold: clip of the policy-gradient importance weights.
    lambda_: V-trace lambda in [0, 1].
    normalize_advantages: scale the policy-gradient advantages of the batch to
      mean 0 and standard deviation 1 (over its transitions that are not
      truncated), as PPO does; their scale is then that of the entropy bonus
      whatever the rewards' scale.
    value_scale: sigma > 0, a scalar the value errors and the policy-gradient
      advantages are divided by (PopArt's scale, see `seed.losses.popart`; 1 leaves
      them as they are). With values = sigma * n(x) + mu, the baseline loss is then
      0.5 * ((vs - mu) / sigma - n(x))^2, the loss on the normalised value.
    unroll_weights: [B] float or None: each unroll's terms are multiplied by its
      weight before the batch mean (a prioritized replay's importance weights).
    policy_clip: None, or epsilon in (0, 1): the policy term is then PPO's clipped
      surrogate on r_t = pi(a_t|x_t) / mu(a_t|x_t) (the ratio to the actors' policy)
      with the one-step V-trace advantage A_t = r_t + discounts_t * vs_{t+1} - v_t (0
      where truncated), which carries no importance weight of its own: the ratio is
      the correction. policy_loss = -sum_t mean_b min(r A, clip(r, 1 - eps, 1 + eps) A)
      / sigma. The value targets are V-trace's either way.

  Returns:
    ImpalaLoss(total_loss, components, value_targets), with scalar components
      policy_loss + baseline_loss + entropy_loss == total_loss, where
      policy_loss   = sum_t mean_b -log pi(a_t|x_t) * pg_advantage_t / sigma,
      baseline_loss = baseline_cost * sum_t mean_b 0.5 * ((vs_t - v_t) / sigma)^2,
      entropy_loss  = -entropy_cost * sum_t mean_b H(pi(.|x_t)),
    and, for logging only, entropy (mean per-step policy entropy), mean_rho
    (mean importance weight pi/mu of the taken actions) and mean_value.
  """
  target_logits = tf.convert_to_tensor(target_logits, tf.float32)
  behaviour_logits = tf.convert_to_tensor(behaviour_logits, tf.float32)
  values = tf.convert_to_tensor(values, tf.float32)
  if target_logits.shape.rank is not None and target_logits.shape.rank != 3:
    raise ValueError(
        f'target_logits has shape {target_logits.shape}, expected rank 3 [T, B, A].')
  if not behaviour_logits.shape.is_compatible_with(target_logits.shape):
    raise ValueError(f'behaviour_logits has shape {behaviour_logits.shape}, expected '
                     f'the shape of target_logits {target_logits.shape}.')

  target_log_probs = vtrace.log_probs_from_logits_and_actions(target_logits, actions)
  behaviour_log_probs = vtrace.log_probs_from_logits_and_actions(
      behaviour_logits, actions)
  # The importance weights are weights, not something to optimise through.
  log_rhos = tf.stop_gradient(target_log_probs - behaviour_log_probs)
  returns = vtrace.vtrace_from_importance_weights(
      log_rhos=log_rhos, discounts=discounts, rewards=rewards,
      values=tf.stop_gradient(values),
      bootstrap_value=tf.stop_gradient(bootstrap_value), truncated=truncated,
      clip_rho_threshold=clip_rho_threshold,
      clip_pg_rho_threshold=clip_pg_rho_threshold, lambda_=lambda_)
  # V-trace already stops gradients; repeated here because this loss is only
  # correct if the targets are constants, whatever the returns module does.
  vs = tf.stop_gradient(returns.vs)
  value_scale = tf.stop_gradient(tf.convert_to_tensor(value_scale, tf.float32))
  if policy_clip is None:
    pg_advantages = tf.stop_gradient(returns.pg_advantages) / value_scale
  else:
    pg_advantages = one_step_advantages(vs, tf.stop_gradient(values), bootstrap_value,
                                        rewards, discounts, truncated) / value_scale
  if normalize_advantages:
    pg_advantages = normalized_advantages(pg_advantages, truncated)

  if unroll_weights is not None:
    unroll_weights = tf.stop_gradient(tf.convert_to_tensor(unroll_weights, tf.float32))
  if policy_clip is None:
    policy_terms = -target_log_probs * pg_advantages
  else:
    policy_terms = -ppo.clipped_surrogate(target_log_probs, behaviour_log_probs,
                                          pg_advantages, policy_clip)
  policy_loss = _sum_time_mean_batch(policy_terms, unroll_weights)
  value_errors = (vs - values) / value_scale
  baseline_loss = baseline_cost * _sum_time_mean_batch(0.5 * tf.square(value_errors),
                                                       unroll_weights)
  entropy = distributions.categorical_entropy(target_logits)
  entropy_loss = -entropy_cost * _sum_time_mean_batch(entropy, unroll_weights)
  total_loss = policy_loss + baseline_loss + entropy_loss
  return ImpalaLoss(total_loss=total_loss, components={
      'policy_loss': policy_loss,
      'baseline_loss': baseline_loss,
      'entropy_loss': entropy_loss,
      'entropy': tf.reduce_mean(entropy),
      'mean_rho': tf.reduce_mean(tf.exp(log_rhos)),
      'mean_value': tf.reduce_mean(values),
  }, value_targets=vs,
      unroll_priorities=tf.reduce_mean(tf.abs(tf.stop_gradient(value_errors)), axis=0))
