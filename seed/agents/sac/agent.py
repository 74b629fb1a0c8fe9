"""Soft actor-critic (Haarnoja et al., 2018) on uniform transition replay.

Twin critics with Polyak-averaged targets (tau 0.005), a tanh-squashed Gaussian
policy with log-std clipped to [-10, 2], and a learned temperature with target
entropy -|A|. Replay, n-step targets, the uniform start and `updates_per_step`
(the replay ratio, fused in one compiled call) are shared with DDPG: see
`seed.agents.offpolicy`.
"""
from typing import Dict, Optional, Sequence

import gin
import keras
import tensorflow as tf

from seed.agents import mlp
from seed.agents import offpolicy
from seed.losses import distributions
from seed.losses import sac as sac_lib

_LOG_NAMES = ('critic_loss', 'actor_loss', 'temperature_loss', 'alpha', 'entropy', 'mean_q',
              'valid_fraction')


class TanhGaussianActor(keras.layers.Layer):
  """x [N, D] -> (mean [N, A], log_std [N, A] clipped to [-10, 2]) before the tanh."""

  def __init__(self, observation_size: int, action_size: int, hidden_sizes: Sequence[int], *,
               seeds: mlp.SeedStream, name: str = 'actor'):
    super().__init__(name=name)
    self._action_size = action_size
    self._mlp = mlp.MLP(observation_size, hidden_sizes, 2 * action_size, seeds=seeds,
                        name='policy')
    self.built = True

  def call(self, x):
    mean, log_std = tf.split(self._mlp(x), 2, axis=-1)
    return mean, distributions.clip_log_std(log_std)


class Temperature(keras.layers.Layer):
  """SAC's alpha, held as its log so that it stays positive."""

  def __init__(self, initial_alpha: float, name: str = 'temperature'):
    super().__init__(name=name)
    self.log_alpha = self.add_weight(
        shape=(), initializer=keras.initializers.Constant(float(tf.math.log(initial_alpha))),
        name='log_alpha')
    self.built = True

  def alpha(self):
    return tf.exp(tf.convert_to_tensor(self.log_alpha))


@gin.configurable
class SACAgent(offpolicy.OffPolicyAgent):
  """SAC with the paper's defaults: Adam 3e-4, minibatch 256, gamma 0.99, 256x256 MLPs."""

  def __init__(self, env_spec, *, n_steps: int = 1, minibatch_size: int = 256,
               updates_per_step: int = 1, discount: float = 0.99, tau: float = 0.005,
               actor_learning_rate: float = 3e-4, critic_learning_rate: float = 3e-4,
               temperature_learning_rate: float = 3e-4, initial_alpha: float = 1.0,
               target_entropy: Optional[float] = None,
               hidden_sizes: Sequence[int] = (256, 256), seed: int = 0):
    """Builds the networks and optimizers.

    Args:
      env_spec: the env's EnvSpec; a vector observation and a finite action box.
      n_steps: n of the n-step targets (unrolls hold n + 1 steps).
      minibatch_size: transitions per gradient update.
      updates_per_step: gradient updates per env step (the replay ratio).
      discount: gamma in [0, 1].
      tau: Polyak rate of the target critics.
      actor_learning_rate, critic_learning_rate, temperature_learning_rate: Adam's
        step sizes.
      initial_alpha: the temperature before learning.
      target_entropy: the entropy the temperature aims at; None for -|A|.
      hidden_sizes: widths of the actor's and each critic's MLP.
      seed: seeds the weights and all sampling.
    """
    self._init_off_policy(env_spec, agent_name='SACAgent', n_steps=n_steps,
                          minibatch_size=minibatch_size, updates_per_step=updates_per_step,
                          discount=discount, tau=tau, hidden_sizes=hidden_sizes, seed=seed)
    for name, value in (('actor_learning_rate', actor_learning_rate),
                        ('critic_learning_rate', critic_learning_rate),
                        ('temperature_learning_rate', temperature_learning_rate),
                        ('initial_alpha', initial_alpha)):
      offpolicy.check(value > 0, f'{name} must be > 0, got {value}.')
    self._target_entropy = (-float(self._bounds.size) if target_entropy is None
                            else float(target_entropy))
    size, actions, hidden = self._observation_size, self._bounds.size, self._hidden_sizes
    self.actor = TanhGaussianActor(size, actions, hidden, seeds=self._seeds)
    self.critic1 = mlp.Critic(size, actions, hidden, seeds=self._seeds, name='critic1')
    self.critic2 = mlp.Critic(size, actions, hidden, seeds=self._seeds, name='critic2')
    self.target_critic1 = mlp.Critic(size, actions, hidden, seeds=self._seeds,
                                     name='target_critic1')
    self.target_critic2 = mlp.Critic(size, actions, hidden, seeds=self._seeds,
                                     name='target_critic2')
    sac_lib.polyak_update(self._critic_variables(), self._target_variables(), tau=1.0)
    self.temperature = Temperature(initial_alpha)
    self._learning_rates = (float(actor_learning_rate), float(critic_learning_rate),
                            float(temperature_learning_rate))
    self.actor_optimizer = keras.optimizers.Adam(actor_learning_rate)
    self.critic_optimizer = keras.optimizers.Adam(critic_learning_rate)
    self.temperature_optimizer = keras.optimizers.Adam(temperature_learning_rate)
    self._log_names = _LOG_NAMES
    self._finish_init()

  def _critic_variables(self):
    return self.critic1.trainable_variables + self.critic2.trainable_variables

  def _target_variables(self):
    return self.target_critic1.trainable_variables + self.target_critic2.trainable_variables

  def _optimizers(self):
    return ((self.actor_optimizer, self.actor.trainable_variables, self._learning_rates[0]),
            (self.critic_optimizer, self._critic_variables(), self._learning_rates[1]),
            (self.temperature_optimizer, self.temperature.trainable_variables,
             self._learning_rates[2]))

  def checkpoint_items(self) -> Dict[str, object]:
    return {'actor': self.actor, 'critic1': self.critic1, 'critic2': self.critic2,
            'target_critic1': self.target_critic1, 'target_critic2': self.target_critic2,
            'temperature': self.temperature, 'actor_optimizer': self.actor_optimizer,
            'critic_optimizer': self.critic_optimizer,
            'temperature_optimizer': self.temperature_optimizer, 'updates': self._updates,
            **self._noise_streams()}

  def _act(self, x, evaluation):
    mean, log_std = self.actor(x)
    sample = distributions.sample_tanh_gaussian(mean, log_std, generator=self._action_noise)
    return tf.where(evaluation, distributions.tanh_gaussian_mode(mean), sample.action)

  def _update(self, transitions: offpolicy.Transitions) -> Dict[str, tf.Tensor]:
    alpha = self.temperature.alpha()
    next_x = transitions.last_observation
    next_sample = distributions.sample_tanh_gaussian(*self.actor(next_x),
                                                     generator=self._train_noise)
    next_values = sac_lib.soft_state_value(self.target_critic1(next_x, next_sample.action),
                                           self.target_critic2(next_x, next_sample.action),
                                           next_sample.log_prob, alpha)
    targets, valid = transitions.targets(next_values, self._discount)

    x, action = transitions.observation, transitions.action
    critic_variables = self._critic_variables()
    with tf.GradientTape() as tape:
      q1 = self.critic1(x, action)
      q2 = self.critic2(x, action)
      critic_loss = (offpolicy.masked_mean(tf.square(q1 - targets), valid) +
                     offpolicy.masked_mean(tf.square(q2 - targets), valid))
    self.critic_optimizer.apply_gradients(
        zip(tape.gradient(critic_loss, critic_variables), critic_variables))

    actor_variables = self.actor.trainable_variables
    with tf.GradientTape() as tape:
      sample = distributions.sample_tanh_gaussian(*self.actor(x), generator=self._train_noise)
      actor_loss = sac_lib.sac_policy_loss(sample.log_prob, self.critic1(x, sample.action),
                                           self.critic2(x, sample.action), alpha)
    self.actor_optimizer.apply_gradients(
        zip(tape.gradient(actor_loss, actor_variables), actor_variables))

    temperature_variables = self.temperature.trainable_variables
    with tf.GradientTape() as tape:
      temperature_loss = sac_lib.temperature_loss(self.temperature.log_alpha, sample.log_prob,
                                                  self._target_entropy)
    self.temperature_optimizer.apply_gradients(
        zip(tape.gradient(temperature_loss, temperature_variables), temperature_variables))

    sac_lib.polyak_update(critic_variables, self._target_variables(), self._tau)
    return dict(critic_loss=critic_loss, actor_loss=actor_loss,
                temperature_loss=temperature_loss, alpha=alpha,
                entropy=-tf.reduce_mean(sample.log_prob), mean_q=tf.reduce_mean(q1),
                valid_fraction=tf.reduce_mean(valid))
