"""Soft actor-critic (Haarnoja et al., 2018) on uniform transition replay.

Twin critics with Polyak-averaged targets (rate tau), a tanh-squashed Gaussian
policy with log-std clipped to [-10, 2], and a learned temperature with target
entropy -|A| by default (-|A|/2 for SR-SAC, `target_entropy_scale`). Replay, n-step
targets, the uniform start, `updates_per_step` (the replay ratio, fused in one
compiled call), resets (SR-SAC) and several seeds in one agent are shared with DDPG:
see `seed.agents.common.offpolicy`.
"""
from typing import Dict, Optional, Sequence

import keras
import tensorflow as tf

from seed.agents.common import learning
from seed.agents.common import mlp
from seed.agents.common import offpolicy
from seed.agents.common import seed_axis
from seed.agents.common import tf_agent
from seed.agents.sac import config as config_lib
from seed.agents.sac import loss as loss_lib
from seed.agents.sac import networks
from seed.losses import distributions
from seed.losses import sac as sac_lib


class SACAgent(offpolicy.OffPolicyAgent):
  """SAC; every hyperparameter is in `config` (a SACConfig, which gin binds)."""

  config_class = config_lib.SACConfig
  log_names = ('critic_loss', 'actor_loss', 'temperature_loss', 'alpha', 'entropy', 'mean_q',
               'valid_fraction')

  def __init__(self, env_spec, config: Optional[config_lib.SACConfig] = None):
    """The networks and optimizers (config: None takes SACConfig() as gin binds it).
    ValueError for an env spec it cannot act in: a vector observation and a finite action
    box are."""
    super().__init__(env_spec, config)
    config = self.config
    self._target_entropy = (-config.target_entropy_scale * float(self._bounds.size)
                            if config.target_entropy is None else float(config.target_entropy))
    self._install_networks()  # actor, critic1, critic2, their targets, temperature.
    self.actor_optimizer = keras.optimizers.Adam(config.actor_learning_rate)
    self.critic_optimizer = keras.optimizers.Adam(config.critic_learning_rate)
    self.temperature_optimizer = keras.optimizers.Adam(config.temperature_learning_rate)

  def _make_networks(self, seeds: Sequence[mlp.SeedStream]) -> Dict[str, keras.layers.Layer]:
    size, actions, hidden = self._observation_size, self._bounds.size, self.config.hidden_sizes
    made = {'actor': networks.TanhGaussianActor(size, actions, hidden, seeds=seeds)}
    for name in ('critic1', 'critic2', 'target_critic1', 'target_critic2'):
      made[name] = seed_axis.StackedCritic(size, actions, hidden, seeds=seeds, name=name)
    made['temperature'] = networks.Temperature(self.config.initial_alpha, len(seeds))
    return made

  def _sync_targets(self) -> None:
    sac_lib.polyak_update(self._critic_variables(), self._target_variables(), tau=1.0)

  def _critic_variables(self):
    return self.critic1.trainable_variables + self.critic2.trainable_variables

  def _target_variables(self):
    return self.target_critic1.trainable_variables + self.target_critic2.trainable_variables

  def _optimized(self):
    config = self.config
    return (tf_agent.Optimized(self.actor_optimizer, self.actor.trainable_variables,
                               config.actor_learning_rate),
            tf_agent.Optimized(self.critic_optimizer, self._critic_variables(),
                               config.critic_learning_rate),
            tf_agent.Optimized(self.temperature_optimizer, self.temperature.trainable_variables,
                               config.temperature_learning_rate))


  def checkpoint_items(self) -> Dict[str, object]:
    return {'actor': self.actor, 'critic1': self.critic1, 'critic2': self.critic2,
            'target_critic1': self.target_critic1, 'target_critic2': self.target_critic2,
            'temperature': self.temperature, 'actor_optimizer': self.actor_optimizer,
            'critic_optimizer': self.critic_optimizer,
            'temperature_optimizer': self.temperature_optimizer,
            **self._shared_checkpoint_items()}

  def _act(self, x, evaluation):
    mean, log_std = self.actor(x)
    sample = distributions.sample_tanh_gaussian(mean, log_std, generator=self._action_noise)
    return tf.where(evaluation, distributions.tanh_gaussian_mode(mean), sample.action)

  def _update_noise(self):
    # next_noise, then noise, for the whole minibatch: each device's rows get the
    # numbers one device would give them.
    shape = [self._num_seeds, self.config.minibatch_transitions, self._bounds.size]
    return self._train_noise.normal(shape), self._train_noise.normal(shape)

  def _update(self, transitions: offpolicy.Transitions, noise) -> Dict[str, tf.Tensor]:
    # Losses are means over the seeds; N times that is their sum, which gives each seed
    # its own gradient (seed.agents.common.offpolicy). The critic and the actor train
    # data-parallel over the learner's devices (learning.gradients: one device unless
    # --learner_devices names more); the temperature, a number per seed, where it lives.
    num_seeds = float(self._num_seeds)
    replicas = learning.num_replicas(self.strategy)
    alpha = self.temperature.alpha()[:, tf.newaxis]  # [N, 1] against [N, B].
    x, action, next_x = transitions.observation, transitions.action, transitions.last_observation
    next_noise, noise = noise
    # Counted over the whole minibatch, each shard's loss weighs its items as the whole
    # batch's masked mean does.
    valid, valid_counts = transitions.valid_counts(self.config.discount)

    def critic_loss_fn(shard):
      steps, shard_next_noise = shard
      critic_loss, mean_q = loss_lib.critic_loss(
          self.actor, (self.critic1, self.critic2), (self.target_critic1, self.target_critic2),
          offpolicy.Transitions(steps, self._bounds, self._observation_size),
          shard_next_noise, alpha, self.config.discount, valid_counts, replicas)
      return num_seeds * critic_loss, dict(critic_loss=critic_loss, mean_q=mean_q), ()

    critic_variables = self._critic_variables()
    _, gradients, critic_logs, _ = learning.gradients(
        self.strategy, critic_loss_fn, critic_variables, (transitions.steps, next_noise),
        (transitions.steps_item_axes, 1), ())
    critic_applied, _ = learning.apply_if_finite(
        self.critic_optimizer, gradients, critic_variables, critic_logs['critic_loss'],
        inputs=(x, action, next_x))

    def actor_loss_fn(shard):
      shard_x, shard_noise = shard
      actor_loss, log_prob = loss_lib.actor_loss(self.actor, (self.critic1, self.critic2),
                                                 shard_x, shard_noise, alpha)
      return num_seeds * actor_loss, dict(actor_loss=actor_loss), log_prob

    actor_variables = self.actor.trainable_variables
    _, gradients, actor_logs, log_prob = learning.gradients(
        self.strategy, actor_loss_fn, actor_variables, (x, noise), (1, 1), 1)
    actor_applied, _ = learning.apply_if_finite(
        self.actor_optimizer, gradients, actor_variables, actor_logs['actor_loss'],
        inputs=(x,))

    temperature_variables = self.temperature.trainable_variables
    with tf.GradientTape() as tape:
      temperature_loss = sac_lib.temperature_loss(
          self.temperature.log_alpha[:, tf.newaxis], log_prob, self._target_entropy)
      summed_loss = num_seeds * temperature_loss
    temperature_applied, _ = learning.apply_if_finite(
        self.temperature_optimizer, tape.gradient(summed_loss, temperature_variables),
        temperature_variables, temperature_loss, inputs=(x,))

    # The targets stay with critics whose update was skipped, as if it never came.
    tf.cond(critic_applied,
            lambda: sac_lib.polyak_update(critic_variables, self._target_variables(),
                                          self.config.tau),
            lambda: None)
    applied = tf.stack([critic_applied, actor_applied, temperature_applied])
    return dict(critic_loss=critic_logs['critic_loss'], actor_loss=actor_logs['actor_loss'],
                temperature_loss=temperature_loss, alpha=tf.reduce_mean(alpha),
                entropy=-tf.reduce_mean(log_prob), mean_q=critic_logs['mean_q'],
                valid_fraction=tf.reduce_mean(valid),
                skipped_updates=tf.reduce_sum(1.0 - tf.cast(applied, tf.float32)))
