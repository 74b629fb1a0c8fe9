"""Reactor (Gruslys et al., 2018) for discrete actions: a policy and a categorical
return distribution per action on one torso and LSTM, trained from prioritized
replay of sequences with distributional Retrace and the beta-LOO policy gradient.

Actors act with `inference` (sampling from the current policy on the learner, as
V-trace's and ACER's do); sequences of T + 1 steps go to the prioritized replay
(seed.inputs.replay_input, input_kind 'replay'), which hands them back weighted by
their importance weights. Each train step, for every sequence:
  - Z(x_t, .) are the softmax of the network's [A, N] logits over the atoms z_j;
    Q(x_t, a) = sum_j z_j Z(x_t, a)_j;
  - the targets of Z(x_t, a_t) are distributional Retrace's (seed.losses.
    distributional_retrace) under the current policy pi, with the stored behaviour
    logits as mu; the critic minimises their cross-entropy with Z(x_t, a_t);
  - R_t, the mean of that target, is the scalar Retrace return; the policy follows
    beta-LOO (seed.losses.beta_loo) with the critic's Q and R, plus an entropy bonus;
  - the sequence's new priority is eta max_t |R_t - Q_t| + (1 - eta) mean_t, plus
    PRIORITY_FLOOR.
Every loss is weighted per sequence by its importance weight. A truncated transition
(time limit) has no target and is masked out of every loss.
"""
from typing import Dict, Optional, Tuple

import numpy as np
import tensorflow as tf

from seed import types
from seed.agents.acer import loss as acer_loss
from seed.agents.common import base
from seed.agents.common import categorical_acting
from seed.agents.common import learning
from seed.agents.common import tf_agent
from seed.agents.reactor import config as config_lib
from seed.agents.reactor import loss as loss_lib
from seed.agents.reactor import networks
from seed.envs import spec as spec_lib
from seed.losses import shapes
from seed.replay import prioritized


# Added to every sequence priority (see train_step).
PRIORITY_FLOOR = 1e-6


class ReactorAgent(categorical_acting.CategoricalActingAgent):
  """Policy + return-distribution network and Reactor's losses; see the module
  docstring. Every hyperparameter is in `config` (a ReactorConfig, which gin binds)."""

  input_kind = types.InputKind.REPLAY
  trained_outputs = ('logits',)
  config_class = config_lib.ReactorConfig

  def __init__(self, env_spec: spec_lib.EnvSpec,
               config: Optional[config_lib.ReactorConfig] = None):
    """Raises ValueError for continuous actions; the config checks itself."""
    if isinstance(env_spec, spec_lib.EnvSpec) and not env_spec.is_discrete:
      raise ValueError(f'ReactorAgent (--agent=reactor) needs discrete actions, got '
                       f'{env_spec.describe()}.')
    base.check_discrete_spec(env_spec, 'ReactorAgent')
    super().__init__(env_spec, config, networks.policy_distribution_network)
    config = self.config
    self._target_network = None
    if config.target_update_period:
      # The same config and seed: the same variables in the same order, then a copy.
      self._target_network = networks.policy_distribution_network(
          env_spec, config, name='target_policy_distribution')
      self._target_network.trainable = False
      learning.copy_weights(self.network, self._target_network)
    self._support = tf.constant(
        np.linspace(config.v_min, config.v_max, config.num_atoms), tf.float32)
    self.optimizer = tf_agent.adam_or_rmsprop(config)
    self._train_function = tf.function(self._train)

  @property
  def support(self) -> np.ndarray:
    """The atoms z_j, [num_atoms]."""
    return self._support.numpy()

  def _optimized(self) -> Tuple[tf_agent.Optimized, ...]:
    return (tf_agent.Optimized(self.optimizer, self.network.trainable_variables,
                               float(self.config.learning_rate)),)

  def checkpoint_items(self) -> Dict[str, object]:
    items = {'model': self.network, 'optimizer': self.optimizer, 'sampler': self._sampler}
    if self._target_network is not None:
      items['target_model'] = self._target_network
    return items

  def train_step(self, sample: types.Sample) -> types.TrainResult:
    """One optimizer step on `batch_unrolls` sequences of `unroll_length + 1` steps,
    weighted by sample.weights.

    Returns:
      TrainResult with logs (Python floats) total_loss, policy_loss, q_loss, entropy,
      mean_rho, mean_beta, mean_q, mean_return, grad_norm, learning_rate,
      skipped_updates; and the sequences' new priorities (float64 [B]) unless the
      update was skipped.
    """
    shapes.check_sample(sample, self.batch_unrolls, self.unroll_length + 1,
                        '[batch_unrolls, unroll_length + 1]', self.trained_outputs,
                        core_state_parts=len(self.initial_core_state(1)))
    self._build_optimizer()
    steps = sample.data.steps
    steps = steps._replace(policy_outputs={'logits': steps.policy_outputs['logits']})
    core_state = tuple(tf.convert_to_tensor(np.asarray(x, np.float32))
                       for x in sample.data.core_state)
    weights = tf.convert_to_tensor(np.asarray(sample.weights, np.float32))
    logs, abs_errors, valid = self._train_function(
        tf.nest.map_structure(tf.convert_to_tensor, steps), core_state, weights)
    logs = {key: float(value) for key, value in logs.items()}
    skipped = int(logs['skipped_updates'])
    if skipped:
      return types.TrainResult(logs=logs, skipped_updates=skipped)
    priorities = prioritized.sequence_priority(abs_errors.numpy(), eta=self.config.priority_eta,
                                               mask=valid.numpy(), axis=0)
    # PER's epsilon: a sequence the critic already fits can still be drawn, and a
    # replay whose priorities were all 0 could not sample at all.
    return types.TrainResult(logs=logs, priorities=priorities + PRIORITY_FLOOR)

  def _train(self, steps, core_state, importance_weights):
    """The traced part of train_step: batch-major Steps in; scalar logs, |R - Q| [T, B]
    and the valid-step mask [T, B] out."""
    config = self.config
    (observation, done, actions, behaviour_logits, rewards, discounts,
     truncated) = acer_loss.discrete_trace_inputs(steps, config, config.reward_scale)
    mask = 1.0 - tf.cast(truncated, tf.float32)
    weights = importance_weights[tf.newaxis, :] * mask
    taken = tf.one_hot(actions, self.env_spec.num_actions, dtype=tf.float32)

    variables = self.network.trainable_variables
    with tf.GradientTape() as tape:
      logits, atom_logits, _ = self.network.unroll(observation, done, core_state)
      # The targets bootstrap from the target network's distributions, or the online
      # network's with the gradient stopped.
      bootstrap_atom_logits = None
      if self._target_network is not None:
        _, bootstrap_atom_logits, _ = self._target_network.unroll(observation, done, core_state)
      loss = loss_lib.reactor_loss(
          logits, atom_logits, bootstrap_atom_logits, behaviour_logits, actions, taken,
          rewards, discounts, truncated, weights, self._support,
          retrace_lambda=config.retrace_lambda, beta_clip=config.beta_clip,
          entropy_cost=config.entropy_cost, q_cost=config.q_cost)
      total_loss = loss.total_loss
    policy, q_values, returns, log_rhos = loss.policy, loss.q_values, loss.returns, loss.log_rhos
    gradients = tape.gradient(total_loss, variables)
    learning_rate = tf.convert_to_tensor(self.optimizer.learning_rate, tf.float32)
    applied, grad_norm = learning.apply_if_finite(self.optimizer, gradients, variables,
                                                  total_loss, config.max_grad_norm)
    target_updated = tf.constant(False)
    if self._target_network is not None:
      target_updated = learning.copy_to_target_when_due(
          self.optimizer, applied, config.target_update_period, self.network,
          self._target_network)
    q_taken = tf.reduce_sum(q_values * taken, axis=-1)
    mean = lambda x: tf.reduce_sum(mask * x) / tf.maximum(tf.reduce_sum(mask), 1.0)
    logs = dict(
        total_loss=total_loss, policy_loss=mean(policy.loss), q_loss=loss.q_loss,
        entropy=mean(loss.entropy), mean_rho=mean(tf.exp(log_rhos)),
        mean_beta=mean(policy.betas),
        mean_q=mean(q_taken), mean_return=mean(returns), grad_norm=grad_norm,
        learning_rate=learning_rate, skipped_updates=1.0 - tf.cast(applied, tf.float32),
        **({'target_updated': tf.cast(target_updated, tf.float32)}
           if self._target_network is not None else {}))
    return logs, tf.abs(returns - q_taken), mask > 0
