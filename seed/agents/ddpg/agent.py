"""DDPG (Lillicrap et al., 2016) on uniform transition replay.

A deterministic tanh actor and one critic, each with a Polyak-averaged target
(tau 0.005); actors explore with Gaussian noise of std 0.2 in unit action space,
clipped to the box. Replay, n-step targets, the uniform start and
`updates_per_step` are shared with SAC: see `seed.agents.offpolicy`.
"""
from typing import Dict, Sequence

import gin
import keras
import tensorflow as tf

from seed.agents import mlp
from seed.agents import offpolicy
from seed.losses import sac as sac_lib

_LOG_NAMES = ('critic_loss', 'actor_loss', 'mean_q', 'valid_fraction')


class DeterministicActor(keras.layers.Layer):
  """x [N, D] -> tanh(MLP(x)) [N, A], a unit-space action."""

  def __init__(self, observation_size: int, action_size: int, hidden_sizes: Sequence[int], *,
               seeds: mlp.SeedStream, name: str = 'actor'):
    super().__init__(name=name)
    self._mlp = mlp.MLP(observation_size, hidden_sizes, action_size, seeds=seeds,
                        name='policy')
    self.built = True

  def call(self, x):
    return tf.tanh(self._mlp(x))


@gin.configurable
class DDPGAgent(offpolicy.OffPolicyAgent):
  """DDPG with Adam 3e-4 for both networks, minibatch 256, gamma 0.99, 256x256 MLPs."""

  def __init__(self, env_spec, *, n_steps: int = 1, minibatch_size: int = 256,
               updates_per_step: int = 1, discount: float = 0.99, tau: float = 0.005,
               actor_learning_rate: float = 3e-4, critic_learning_rate: float = 3e-4,
               exploration_noise: float = 0.2, hidden_sizes: Sequence[int] = (256, 256),
               seed: int = 0):
    """Builds the networks and optimizers.

    Args:
      env_spec: the env's EnvSpec; a vector observation and a finite action box.
      n_steps: n of the n-step targets (unrolls hold n + 1 steps).
      minibatch_size: transitions per gradient update.
      updates_per_step: gradient updates per env step (the replay ratio).
      discount: gamma in [0, 1].
      tau: Polyak rate of the target networks.
      actor_learning_rate, critic_learning_rate: Adam's step sizes.
      exploration_noise: std of the Gaussian noise added to actions in [-1, 1] units.
      hidden_sizes: widths of the actor's and the critic's MLP.
      seed: seeds the weights and all sampling.
    """
    self._init_off_policy(env_spec, agent_name='DDPGAgent', n_steps=n_steps,
                          minibatch_size=minibatch_size, updates_per_step=updates_per_step,
                          discount=discount, tau=tau, hidden_sizes=hidden_sizes, seed=seed)
    for name, value in (('actor_learning_rate', actor_learning_rate),
                        ('critic_learning_rate', critic_learning_rate)):
      offpolicy.check(value > 0, f'{name} must be > 0, got {value}.')
    offpolicy.check(exploration_noise >= 0,
                    f'exploration_noise must be >= 0, got {exploration_noise}.')
    self._exploration_noise = float(exploration_noise)
    size, actions, hidden = self._observation_size, self._bounds.size, self._hidden_sizes
    self.actor = DeterministicActor(size, actions, hidden, seeds=self._seeds)
    self.critic = mlp.Critic(size, actions, hidden, seeds=self._seeds, name='critic')
    self.target_actor = DeterministicActor(size, actions, hidden, seeds=self._seeds,
                                           name='target_actor')
    self.target_critic = mlp.Critic(size, actions, hidden, seeds=self._seeds,
                                    name='target_critic')
    sac_lib.polyak_update(self._online_variables(), self._target_variables(), tau=1.0)
    self._learning_rates = (float(actor_learning_rate), float(critic_learning_rate))
    self.actor_optimizer = keras.optimizers.Adam(actor_learning_rate)
    self.critic_optimizer = keras.optimizers.Adam(critic_learning_rate)
    self._log_names = _LOG_NAMES
    self._finish_init()

  def _online_variables(self):
    return self.actor.trainable_variables + self.critic.trainable_variables

  def _target_variables(self):
    return self.target_actor.trainable_variables + self.target_critic.trainable_variables

  def _optimizers(self):
    return ((self.actor_optimizer, self.actor.trainable_variables, self._learning_rates[0]),
            (self.critic_optimizer, self.critic.trainable_variables, self._learning_rates[1]))

  def checkpoint_items(self) -> Dict[str, object]:
    return {'actor': self.actor, 'critic': self.critic, 'target_actor': self.target_actor,
            'target_critic': self.target_critic, 'actor_optimizer': self.actor_optimizer,
            'critic_optimizer': self.critic_optimizer, 'updates': self._updates,
            **self._noise_streams()}

  def _act(self, x, evaluation):
    action = self.actor(x)
    noise = self._exploration_noise * self._action_noise.normal(tf.shape(action))
    return tf.where(evaluation, action, tf.clip_by_value(action + noise, -1.0, 1.0))

  def _update(self, transitions: offpolicy.Transitions) -> Dict[str, tf.Tensor]:
    next_x = transitions.last_observation
    next_values = self.target_critic(next_x, self.target_actor(next_x))
    targets, valid = transitions.targets(next_values, self._discount)

    x, action = transitions.observation, transitions.action
    critic_variables = self.critic.trainable_variables
    with tf.GradientTape() as tape:
      q = self.critic(x, action)
      critic_loss = offpolicy.masked_mean(tf.square(q - targets), valid)
    self.critic_optimizer.apply_gradients(
        zip(tape.gradient(critic_loss, critic_variables), critic_variables))

    actor_variables = self.actor.trainable_variables
    with tf.GradientTape() as tape:
      actor_loss = -tf.reduce_mean(self.critic(x, self.actor(x)))
    self.actor_optimizer.apply_gradients(
        zip(tape.gradient(actor_loss, actor_variables), actor_variables))

    sac_lib.polyak_update(self._online_variables(), self._target_variables(), self._tau)
    return dict(critic_loss=critic_loss, actor_loss=actor_loss, mean_q=tf.reduce_mean(q),
                valid_fraction=tf.reduce_mean(valid))
