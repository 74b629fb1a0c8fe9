"""ACER for discrete actions (Wang et al., 2017): an actor-critic with a Q head,
Retrace targets, truncated importance weights with bias correction and an efficient
trust region, trained on each fresh batch and a Poisson number of replayed ones.

Actors act with `inference` (sampling from the current policy on the learner, as
V-trace's do); whole traces of T + 1 steps go to seed.inputs.fresh_then_replay,
which hands out each fresh batch and then n ~ Poisson(replay_ratio) batches from a
uniform replay. Every batch gets the same update: its stored behaviour logits are
mu, so a fresh batch has rho close to 1 and a replayed one is corrected off-policy.

Traces are not cut at episode ends: a trace that holds the end of one episode and the
start of the next is used whole. The termination's discount 0 separates the two
(seed.losses.retrace: splitting a trace there changes no target), the LSTM resets at
the first step of the new episode, and a truncated transition (time limit) has no
target and is masked out of every loss.
"""
from typing import Dict, Optional, Tuple

import tensorflow as tf

from seed import types
from seed.agents.acer import common
from seed.agents.acer import config as config_lib
from seed.agents.acer import networks
from seed.agents.common import base
from seed.agents.common import categorical_acting
from seed.agents.common import learning
from seed.agents.common import tf_agent
from seed.envs import spec as spec_lib
from seed.losses import acer as acer_losses
from seed.losses import retrace
from seed.losses import shapes


class ACERAgent(categorical_acting.CategoricalActingAgent, common.ACERAgentBase):
  """Policy + Q network on one torso, its Polyak average, ACER's loss; see the module
  docstring. Every hyperparameter is in `config` (an ACERConfig, which gin binds)."""

  trained_outputs = ('logits',)
  config_class = config_lib.ACERConfig

  def __init__(self, env_spec: spec_lib.EnvSpec,
               config: Optional[config_lib.ACERConfig] = None):
    """Builds both networks (the average a copy of the online one) and the optimizer.

    Raises:
      ValueError: for continuous actions (this is the discrete variant); the config
        checks itself.
    """
    if isinstance(env_spec, spec_lib.EnvSpec) and not env_spec.is_discrete:
      raise ValueError(f'ACERAgent (--agent=acer) needs discrete actions, got '
                       f'{env_spec.describe()}; for continuous actions use '
                       '--agent=acer_continuous.')
    base.check_discrete_spec(env_spec, 'ACERAgent')
    super().__init__(env_spec, config,
                     lambda spec, config: networks.policy_q_network(spec, config, 'policy_q'))
    config = self.config
    self._average_network = networks.policy_q_network(env_spec, config, 'average_policy_q')
    common.copy_into_average(self.network.trainable_variables,
                             self._average_network.trainable_variables)
    self.optimizer = tf_agent.adam_or_rmsprop(config)
    self._train_function = tf.function(self._train)

  def _optimized(self) -> Tuple[tf_agent.Optimized, ...]:
    return (tf_agent.Optimized(self.optimizer, self.network.trainable_variables,
                               float(self.config.learning_rate)),)

  def checkpoint_items(self) -> Dict[str, object]:
    return {'model': self.network, 'average_model': self._average_network,
            'optimizer': self.optimizer, 'sampler': self._sampler}

  def train_step(self, sample: types.Sample) -> types.TrainResult:
    """One optimizer step on `batch_unrolls` traces of `unroll_length + 1` steps.

    Returns:
      TrainResult whose logs are Python floats total_loss, policy_loss, q_loss,
      entropy, mean_rho (taken actions), kl_from_average, trust_region_active (the
      fraction of steps whose gradient the trust region projected), mean_q,
      grad_norm (before clipping), learning_rate and skipped_updates.
    """
    shapes.check_sample(sample, self.batch_unrolls, self.unroll_length + 1,
                        '[batch_unrolls, unroll_length + 1]', self.trained_outputs,
                        core_state_parts=len(self.initial_core_state(1)))
    self._build_optimizer()
    steps = sample.data.steps
    steps = steps._replace(policy_outputs={'logits': steps.policy_outputs['logits']})
    logs = self._train_function(tf.nest.map_structure(tf.convert_to_tensor, steps),
                                tuple(tf.convert_to_tensor(x) for x in sample.data.core_state))
    logs = {key: float(value) for key, value in logs.items()}
    return types.TrainResult(logs=logs, skipped_updates=int(logs['skipped_updates']))

  def _train(self, steps, core_state):
    """The traced part of train_step: batch-major Steps in, scalar logs out."""
    config = self.config
    (observation, done, actions, behaviour_logits, rewards, discounts,
     truncated) = common.discrete_trace_inputs(steps, config)
    # A truncated transition's next state was never seen: no target, no loss.
    mask = 1.0 - tf.cast(truncated, tf.float32)
    num_actions = self.env_spec.num_actions
    taken = tf.one_hot(actions, num_actions, dtype=tf.float32)
    average_logits, _, _ = self._average_network.unroll(observation, done, core_state)
    average_probs = tf.nn.softmax(average_logits[:-1])
    behaviour_probs = tf.nn.softmax(behaviour_logits)
    steps_in_batch = tf.cast(tf.size(mask), tf.float32)

    variables = self.network.trainable_variables
    with tf.GradientTape() as tape:
      logits, q_values, _ = self.network.unroll(observation, done, core_state)
      all_probs = tf.nn.softmax(logits)
      state_values = tf.stop_gradient(tf.reduce_sum(all_probs * q_values, axis=-1))
      probs = all_probs[:-1]
      q_values = q_values[:-1]
      q_taken = tf.reduce_sum(q_values * taken, axis=-1)
      log_rhos = tf.reduce_sum(
          (tf.nn.log_softmax(logits[:-1]) - tf.nn.log_softmax(behaviour_logits)) * taken, -1)
      q_retrace = retrace.retrace_targets(
          tf.stop_gradient(log_rhos), discounts, rewards, tf.stop_gradient(q_taken),
          state_values[:-1], state_values[-1], truncated=truncated,
          lambda_=config.retrace_lambda)
      # g: the gradient of each step's objective with respect to its probabilities.
      with tf.GradientTape() as probs_tape:
        probs_tape.watch(probs)
        policy = acer_losses.acer_policy_loss(probs, behaviour_probs, actions, q_values,
                                              q_retrace, config.importance_clip)
        entropy = -tf.reduce_sum(
            probs * tf.math.log(probs + acer_losses.PROBABILITY_EPSILON), axis=-1)
        objective = tf.reduce_sum(mask * (config.entropy_cost * entropy - policy.loss))
      objective_gradient = tf.stop_gradient(probs_tape.gradient(objective, probs))
      kl_gradient = acer_losses.average_kl_gradient(average_probs, probs)
      # d(surrogate)/d(theta) = -sum z* d(probs)/d(theta): z* back-propagated.
      policy_surrogate = common.policy_surrogate(objective_gradient, kl_gradient, probs,
                                                 config, steps_in_batch)
      q_loss = 0.5 * tf.reduce_sum(mask * tf.square(q_retrace - q_taken)) / steps_in_batch
      total_loss = policy_surrogate + config.q_cost * q_loss
    gradients = tape.gradient(total_loss, variables)
    learning_rate = tf.convert_to_tensor(self.optimizer.learning_rate, tf.float32)
    applied, grad_norm = learning.apply_if_finite(self.optimizer, gradients, variables,
                                                  total_loss, config.max_grad_norm)
    common.update_average_if(applied, variables, self._average_network.trainable_variables,
                             config.average_decay)
    k_dot_g = tf.reduce_sum(kl_gradient * objective_gradient, axis=-1)
    kl_from_average = tf.reduce_sum(
        average_probs * (tf.math.log(average_probs + acer_losses.PROBABILITY_EPSILON)
                         - tf.math.log(probs + acer_losses.PROBABILITY_EPSILON)), axis=-1)
    mean = lambda x: tf.reduce_sum(mask * x) / tf.maximum(tf.reduce_sum(mask), 1.0)
    return dict(
        total_loss=total_loss, policy_loss=mean(policy.loss), q_loss=q_loss,
        entropy=mean(entropy),
        mean_rho=mean(tf.reduce_sum(policy.importance_weights * taken, axis=-1)),
        kl_from_average=mean(kl_from_average),
        trust_region_active=mean(tf.cast(k_dot_g > config.max_kl, tf.float32)),
        mean_q=mean(q_taken), grad_norm=grad_norm, learning_rate=learning_rate,
        skipped_updates=1.0 - tf.cast(applied, tf.float32))
