"""What ACER's losses share between its two agents (and Reactor reads): the batch as the
train steps read it, and the trust region's projected policy gradient as a surrogate the
tape can differentiate. The ACER maths proper (Retrace, the truncated importance weights
and their bias correction, the trust region's projection) is seed/losses/acer.py's and
seed/losses/retrace.py's."""
import tensorflow as tf

from seed import types
from seed.losses import acer as acer_losses
from seed.losses import shapes


def discrete_trace_inputs(steps, config, reward_scale=1.0):
  """What ACER's and Reactor's train steps read from batch-major Steps, time-major:
  (observation [T + 1, B, ...], done [T + 1, B] (the step starts an episode),
  actions int32 [T, B], behaviour_logits [T, B, A], rewards [T, B] (clipped by
  config.reward_clipping, then scaled), discounts [T, B] (0 at terminations),
  truncated bool [T, B] (the transition hit a time limit))."""
  observation, reward, terminated, truncated, action = (
      shapes.time_major(getattr(steps, field)) for field in types.STEP_FIELDS)
  behaviour_logits = shapes.time_major(steps.policy_outputs['logits'])[:-1]
  terminated = tf.cast(terminated, tf.bool)
  truncated = tf.cast(truncated, tf.bool)
  # Step t's flags belong to the transition into observation[t] (seed.types.Steps).
  done = tf.logical_or(terminated, truncated)
  rewards = tf.cast(reward[1:], tf.float32)
  if config.reward_clipping == 'abs_one':
    rewards = tf.clip_by_value(rewards, -1.0, 1.0)
  rewards = reward_scale * rewards
  discounts = config.discount * (1.0 - tf.cast(terminated[1:], tf.float32))
  return (observation, done, tf.cast(action[:-1], tf.int32), behaviour_logits, rewards,
          discounts, truncated[1:])


def policy_surrogate(objective_gradient, kl_gradient, statistics, config, steps_in_batch):
  """-sum stop_gradient(z) . phi / N: its gradient back-propagates z, the objective's
  gradient with respect to the policy's statistics phi (probabilities or the mean),
  projected onto the trust region when config.trust_region."""
  step_gradient = objective_gradient
  if config.trust_region:
    step_gradient = acer_losses.trust_region_projection(objective_gradient, kl_gradient,
                                                        config.max_kl)
  return -tf.reduce_sum(tf.stop_gradient(step_gradient) * statistics) / steps_in_batch
