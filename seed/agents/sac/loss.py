"""SAC's losses of a minibatch (Haarnoja et al., 2018): the critics' regression onto soft
n-step targets and the policy's loss, over the agent's networks, as its update takes them
on each device's share of the minibatch. The pure parts (the soft state value, the policy
and temperature losses) are seed/losses/sac.py's."""
from typing import Sequence, Tuple

import tensorflow as tf

from seed.agents.common import offpolicy
from seed.losses import distributions
from seed.losses import sac as sac_lib


def critic_loss(actor, critics: Sequence, target_critics: Sequence,
                transitions: offpolicy.Transitions, next_noise, alpha, discount: float,
                valid_counts, replicas: int) -> Tuple[tf.Tensor, tf.Tensor]:
  """(the two critics' squared errors against the soft targets, masked means summed, as a
  share of the whole minibatch's; the first critic's mean Q). The next actions are
  sampled from `actor` with `next_noise`; `alpha` [N, 1] is the temperature."""
  next_sample = distributions.tanh_gaussian_from_noise(*actor(transitions.last_observation),
                                                       next_noise)
  next_values = sac_lib.soft_state_value(
      target_critics[0](transitions.last_observation, next_sample.action),
      target_critics[1](transitions.last_observation, next_sample.action),
      next_sample.log_prob, alpha)
  targets, valid = transitions.targets(next_values, discount)
  q1 = critics[0](transitions.observation, transitions.action)
  q2 = critics[1](transitions.observation, transitions.action)
  loss = (offpolicy.masked_mean_of_shard(tf.square(q1 - targets), valid, valid_counts, replicas)
          + offpolicy.masked_mean_of_shard(tf.square(q2 - targets), valid, valid_counts,
                                           replicas))
  return loss, tf.reduce_mean(q1)


def actor_loss(actor, critics: Sequence, x, noise, alpha) -> Tuple[tf.Tensor, tf.Tensor]:
  """(the policy's loss on observations x, the log-probabilities of its actions, sampled
  with `noise`, which the temperature's loss reads)."""
  sample = distributions.tanh_gaussian_from_noise(*actor(x), noise)
  loss = sac_lib.sac_policy_loss(sample.log_prob, critics[0](x, sample.action),
                                 critics[1](x, sample.action), alpha)
  return loss, sample.log_prob
