"""PPO's loss of a minibatch: the clipped surrogate, the value regression and the entropy
bonus. A pure function of arrays: the agent gives it the minibatch's log-probabilities,
entropy and values under the current parameters; the clipped surrogate itself is
seed/losses/ppo.py's."""
from typing import NamedTuple

import tensorflow as tf

from seed.losses import ppo as ppo_lib


class PPOLoss(NamedTuple):
  """What ppo_loss gives the agent: the scalar it minimises and its two losses."""
  total_loss: tf.Tensor
  policy_loss: tf.Tensor
  value_loss: tf.Tensor


def ppo_loss(log_prob, old_log_prob, advantages, entropy, value, value_targets, valid, *,
             clip: float, value_cost: float, entropy_cost: float) -> PPOLoss:
  """policy_loss + value_cost * value_loss - entropy_cost * entropy.

  Args:
    log_prob, old_log_prob: [N] log pi(a|x) now and when the actors acted.
    advantages: [N], normalised, 0 where not valid.
    entropy: the policy's mean entropy on the minibatch (scalar).
    value, value_targets: [N] V(x) now and what it learns (the returns, or PopArt's
      normalised returns).
    valid: [N] 1.0 for samples that count, 0.0 for truncated ones.
    clip: the surrogate's epsilon; value_cost, entropy_cost: the terms' weights.
  """
  policy_loss = ppo_lib.ppo_clipped_loss(log_prob, old_log_prob, advantages, clip)
  value_errors = value - value_targets
  value_loss = 0.5 * tf.reduce_sum(valid * tf.square(value_errors)) / tf.maximum(
      tf.reduce_sum(valid), 1.0)
  total_loss = policy_loss + value_cost * value_loss - entropy_cost * entropy
  return PPOLoss(total_loss, policy_loss, value_loss)
