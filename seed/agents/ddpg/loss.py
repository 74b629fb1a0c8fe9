"""DDPG's losses of a minibatch (Lillicrap et al., 2016): the critic's regression onto
n-step targets from the target networks, and the actor's, which climbs the critic; over
the agent's networks, as its update takes them on each device's share of the minibatch."""
from typing import Tuple

import tensorflow as tf

from seed.agents.common import offpolicy


def critic_loss(critic, target_actor, target_critic, transitions: offpolicy.Transitions,
                discount: float, valid_counts, replicas: int) -> Tuple[tf.Tensor, tf.Tensor]:
  """(the critic's squared error against the targets, a masked mean as a share of the
  whole minibatch's; its mean Q)."""
  next_values = target_critic(transitions.last_observation,
                              target_actor(transitions.last_observation))
  targets, valid = transitions.targets(next_values, discount)
  q = critic(transitions.observation, transitions.action)
  return (offpolicy.masked_mean_of_shard(tf.square(q - targets), valid, valid_counts, replicas),
          tf.reduce_mean(q))


def actor_loss(actor, critic, x) -> tf.Tensor:
  """-Q(x, actor(x)), the mean over observations x."""
  return -tf.reduce_mean(critic(x, actor(x)))
