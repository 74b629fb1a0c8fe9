"""DDPG (Lillicrap et al., 2016) on uniform transition replay.

A deterministic tanh actor and one critic, each with a Polyak-averaged target
(rate tau); actors explore with Gaussian noise (std `exploration_noise`) in unit
action space, clipped to the box. Replay, n-step targets, the uniform start and
`updates_per_step` are shared with SAC: see `seed.agents.common.offpolicy`.
"""
from typing import Dict, Optional, Sequence

import keras
import tensorflow as tf

from seed.agents.common import learning
from seed.agents.common import mlp
from seed.agents.common import offpolicy
from seed.agents.common import seed_axis
from seed.agents.common import tf_agent
from seed.agents.ddpg import config as config_lib
from seed.agents.ddpg import loss as loss_lib
from seed.agents.ddpg import networks
from seed.losses import sac as sac_lib


class DDPGAgent(offpolicy.OffPolicyAgent):
  """DDPG; every hyperparameter is in `config` (a DDPGConfig, which gin binds)."""

  config_class = config_lib.DDPGConfig
  log_names = ('critic_loss', 'actor_loss', 'mean_q', 'valid_fraction')

  def __init__(self, env_spec, config: Optional[config_lib.DDPGConfig] = None):
    """The networks and optimizers (config: None takes DDPGConfig() as gin binds it).
    ValueError for an env spec it cannot act in: a vector observation and a finite action
    box are."""
    super().__init__(env_spec, config)
    config = self.config
    self._install_networks()  # actor, critic and their targets.
    self.actor_optimizer = keras.optimizers.Adam(config.actor_learning_rate)
    self.critic_optimizer = keras.optimizers.Adam(config.critic_learning_rate)

  def _make_networks(self, seeds: Sequence[mlp.SeedStream]) -> Dict[str, keras.layers.Layer]:
    size, actions, hidden = self._observation_size, self._bounds.size, self.config.hidden_sizes
    return {'actor': networks.DeterministicActor(size, actions, hidden, seeds=seeds),
            'critic': seed_axis.StackedCritic(size, actions, hidden, seeds=seeds, name='critic'),
            'target_actor': networks.DeterministicActor(size, actions, hidden, seeds=seeds,
                                               name='target_actor'),
            'target_critic': seed_axis.StackedCritic(size, actions, hidden, seeds=seeds,
                                                     name='target_critic')}

  def _sync_targets(self) -> None:
    sac_lib.polyak_update(self._online_variables(), self._target_variables(), tau=1.0)

  def _online_variables(self):
    return self.actor.trainable_variables + self.critic.trainable_variables

  def _target_variables(self):
    return self.target_actor.trainable_variables + self.target_critic.trainable_variables

  def _optimized(self):
    return (tf_agent.Optimized(self.actor_optimizer, self.actor.trainable_variables,
                               self.config.actor_learning_rate),
            tf_agent.Optimized(self.critic_optimizer, self.critic.trainable_variables,
                               self.config.critic_learning_rate))


  def checkpoint_items(self) -> Dict[str, object]:
    return {'actor': self.actor, 'critic': self.critic, 'target_actor': self.target_actor,
            'target_critic': self.target_critic, 'actor_optimizer': self.actor_optimizer,
            'critic_optimizer': self.critic_optimizer, **self._shared_checkpoint_items()}

  def _act(self, x, evaluation):
    action = self.actor(x)
    noise = self.config.exploration_noise * self._action_noise.normal(tf.shape(action))
    return tf.where(evaluation, action, tf.clip_by_value(action + noise, -1.0, 1.0))

  def _update(self, transitions: offpolicy.Transitions, noise) -> Dict[str, tf.Tensor]:
    del noise  # Deterministic: DDPG's update draws nothing.
    # Losses are means over the seeds; N times that is their sum, which gives each seed
    # its own gradient (seed.agents.common.offpolicy). Critic and actor train
    # data-parallel over the learner's devices (learning.gradients; one unless told).
    num_seeds = float(self._num_seeds)
    replicas = learning.num_replicas(self.strategy)
    x, action, next_x = transitions.observation, transitions.action, transitions.last_observation
    valid, valid_counts = transitions.valid_counts(self.config.discount)

    def critic_loss_fn(steps):
      critic_loss, mean_q = loss_lib.critic_loss(
          self.critic, self.target_actor, self.target_critic,
          offpolicy.Transitions(steps, self._bounds, self._observation_size),
          self.config.discount, valid_counts, replicas)
      return num_seeds * critic_loss, dict(critic_loss=critic_loss, mean_q=mean_q), ()

    critic_variables = self.critic.trainable_variables
    _, gradients, critic_logs, _ = learning.gradients(
        self.strategy, critic_loss_fn, critic_variables, transitions.steps,
        transitions.steps_item_axes, ())
    critic_loss = critic_logs['critic_loss']
    critic_applied, _ = learning.apply_if_finite(
        self.critic_optimizer, gradients, critic_variables, critic_loss,
        inputs=(x, action, next_x))

    def actor_loss_fn(shard_x):
      actor_loss = loss_lib.actor_loss(self.actor, self.critic, shard_x)
      return num_seeds * actor_loss, dict(actor_loss=actor_loss), ()

    actor_variables = self.actor.trainable_variables
    _, gradients, actor_logs, _ = learning.gradients(
        self.strategy, actor_loss_fn, actor_variables, x, 1, ())
    actor_loss = actor_logs['actor_loss']
    actor_applied, _ = learning.apply_if_finite(
        self.actor_optimizer, gradients, actor_variables, actor_loss, inputs=(x,))

    # Each target stays with its network when that one's update was skipped, as if
    # it never came.
    for applied, online, target in (
        (critic_applied, critic_variables, self.target_critic.trainable_variables),
        (actor_applied, actor_variables, self.target_actor.trainable_variables)):
      tf.cond(applied,
              lambda online=online, target=target: sac_lib.polyak_update(
                  online, target, self.config.tau),
              lambda: None)
    applied = tf.stack([critic_applied, actor_applied])
    return dict(critic_loss=critic_loss, actor_loss=actor_loss, mean_q=critic_logs['mean_q'],
                valid_fraction=tf.reduce_mean(valid),
                skipped_updates=tf.reduce_sum(1.0 - tf.cast(applied, tf.float32)))
