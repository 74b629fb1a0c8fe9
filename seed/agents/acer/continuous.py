"""ACER for continuous actions (Wang et al., 2017, section 5): a Gaussian policy with a
fixed diagonal covariance, a stochastic dueling network (SDN) as the critic, Retrace
targets with the importance weights' 1/A-th power, and the trust region on the mean.

Networks (three MLPs on the flattened observation): the policy mean phi(x) in unit
action space [-1, 1]^A, V(x), and A(x, a). The SDN's action value is
  Q~(x, a) = V(x) + A(x, a) - 1/n sum_i A(x, u_i),  u_i ~ N(phi(x), sigma^2 I),
so the mean of Q~ under the policy is V(x) up to sampling noise.

Acting: the learner samples raw = phi(x) + sigma eps (the mean for `--eval` envs),
stores `mean` and `raw_action` (the unclipped sample, whose density the importance
weights need) and sends the env the sample mapped onto its box (clipped).

Each batch, fresh or replayed (seed.inputs.fresh_then_replay), gets one update:
  - Q^ret from seed.losses.retrace with c_t = lambda min(1, rho_t^(1/A)), bootstrapping
    from V; Q^opc the same with every c_t = 1 (the policy gradient's target);
  - the Q~ loss 1/2 (Q^ret - Q~(x, a))^2 (into V and A) and the V loss
    1/2 (V^target - V)^2, V^target = min(1, rho) (Q^ret - Q~(x, a)) + V;
  - the policy gradient with respect to phi (seed.losses.acer.acer_gaussian_policy_loss,
    one fresh a' ~ f per step for the bias correction), projected onto the trust
    region around the Polyak-averaged mean network, back-propagated as
    -sum stop_gradient(z*) . phi / N.
The policy's std is fixed, so there is no entropy bonus. Feed-forward: core state ().
A truncated transition (time limit) has no target and is masked out of every loss.
"""
from typing import Dict, Optional, Tuple

import numpy as np
import tensorflow as tf

from seed import types
from seed.agents.acer import common
from seed.agents.acer import config as config_lib
from seed.agents.acer import networks
from seed.agents.common import continuous
from seed.agents.common import mlp
from seed.agents.common import learning
from seed.agents.common import tf_agent
from seed.envs import spec as spec_lib
from seed.losses import acer as acer_losses
from seed.losses import distributions
from seed.losses import retrace
from seed.losses import shapes


class ACERContinuousAgent(tf_agent.TFAgent, common.ACERAgentBase):
  """SDN + Gaussian policy, its Polyak average, ACER's continuous loss; see the module
  docstring. Every hyperparameter is in `config` (an ACERContinuousConfig)."""

  trained_outputs = ('mean', 'raw_action')
  config_class = config_lib.ACERContinuousConfig

  def __init__(self, env_spec: spec_lib.EnvSpec,
               config: Optional[config_lib.ACERContinuousConfig] = None):
    """Raises ValueError for discrete actions or image observations; the config checks
    itself."""
    if isinstance(env_spec, spec_lib.EnvSpec) and env_spec.is_discrete:
      raise ValueError(f'ACERContinuousAgent (--agent=acer_continuous) needs continuous '
                       f'actions, got {env_spec.describe()}; for discrete actions use '
                       '--agent=acer.')
    continuous.check_continuous_spec(env_spec, 'ACERContinuousAgent')
    super().__init__(env_spec, config)
    config = self.config
    self._bounds = continuous.ActionBounds(env_spec)
    self._observation_size = mlp.flat_size(env_spec.observation_shape)
    sizes = (self._observation_size, self._bounds.size, config.hidden_sizes)
    self.network = networks.StochasticDuelingNetwork(*sizes, seed=config.seed, name='sdn')
    self._average_network = networks.StochasticDuelingNetwork(*sizes, seed=config.seed,
                                                     name='average_sdn')
    common.copy_into_average(self.network.trainable_variables,
                             self._average_network.trainable_variables)
    self.optimizer = tf_agent.adam_or_rmsprop(config)
    self._action_noise = tf.random.Generator.from_seed(config.seed)
    self._train_noise = tf.random.Generator.from_seed(config.seed + 1)
    self._log_std = float(np.log(config.policy_std))
    self._train_function = tf.function(self._train)

  def initial_core_state(self, num_envs: int) -> Tuple[np.ndarray, ...]:
    """Feed-forward: ()."""
    del num_envs
    return ()

  def _optimized(self) -> Tuple[tf_agent.Optimized, ...]:
    return (tf_agent.Optimized(self.optimizer, self.network.trainable_variables,
                               float(self.config.learning_rate)),)

  def checkpoint_items(self) -> Dict[str, object]:
    return {'model': self.network, 'average_model': self._average_network,
            'optimizer': self.optimizer, 'action_noise': self._action_noise,
            'train_noise': self._train_noise}

  @tf.function
  def inference(self, observation, reward, done, core_state, acting: types.ActingParams):
    """Env actions [B, A] (the mean for evaluation envs), {'mean', 'raw_action'} [B, A]
    in unit space, core_state unchanged; see base.Agent.inference."""
    del reward, done  # Feed-forward: nothing to reset.
    x = mlp.flatten_observation(observation, self._observation_size)
    mean = self.network.policy_mean(x)
    sample = mean + self.config.policy_std * self._action_noise.normal(tf.shape(mean))
    evaluation = tf.expand_dims(tf.cast(acting.evaluation, tf.bool), -1)
    raw_action = tf.where(evaluation, mean, sample)
    return self._bounds.to_env(raw_action), {'mean': mean, 'raw_action': raw_action}, core_state

  def train_step(self, sample: types.Sample) -> types.TrainResult:
    """One optimizer step on `batch_unrolls` traces of `unroll_length + 1` steps.

    Returns:
      TrainResult whose logs are Python floats total_loss, policy_loss, q_loss,
      value_loss, mean_rho (taken actions), kl_from_average, trust_region_active,
      mean_q, grad_norm (before clipping), learning_rate and skipped_updates.
    """
    shapes.check_sample(sample, self.batch_unrolls, self.unroll_length + 1,
                        '[batch_unrolls, unroll_length + 1]', self.trained_outputs,
                        core_state_parts=0)
    self._build_optimizer()
    steps = sample.data.steps
    steps = steps._replace(policy_outputs={name: steps.policy_outputs[name]
                                           for name in self.trained_outputs})
    logs = self._train_function(tf.nest.map_structure(tf.convert_to_tensor, steps))
    logs = {key: float(value) for key, value in logs.items()}
    return types.TrainResult(logs=logs, skipped_updates=int(logs['skipped_updates']))

  def _q_tilde(self, network, x, actions, values):
    """Q~(x, a) [T, B] for x [T, B, D], actions [T, B, A], values V(x) [T, B]; the
    n sampled u_i come from the network's own mean (held fixed)."""
    time, batch = tf.shape(x)[0], tf.shape(x)[1]
    size, samples = self._bounds.size, self.config.sdn_samples
    flat_x = tf.reshape(x, [-1, self._observation_size])
    taken = tf.reshape(network.advantage(flat_x, tf.reshape(actions, [-1, size])),
                       [time, batch])
    mean = tf.stop_gradient(network.policy_mean(flat_x))
    u = mean + self.config.policy_std * self._train_noise.normal(
        tf.concat([[samples], tf.shape(mean)], 0))
    repeated_x = tf.tile(flat_x[tf.newaxis], [samples, 1, 1])
    sampled = network.advantage(tf.reshape(repeated_x, [-1, self._observation_size]),
                                tf.reshape(u, [-1, size]))
    baseline = tf.reshape(tf.reduce_mean(tf.reshape(sampled, [samples, -1]), 0),
                          [time, batch])
    return values + taken - baseline

  def _train(self, steps):
    """The traced part of train_step: batch-major Steps in, scalar logs out."""
    observation, reward, terminated, truncated, _ = (
        shapes.time_major(getattr(steps, field)) for field in types.STEP_FIELDS)
    config = self.config
    size = self._bounds.size
    time_plus_one, batch = tf.shape(observation)[0], tf.shape(observation)[1]
    x = tf.reshape(tf.cast(observation, tf.float32),
                   [time_plus_one, batch, self._observation_size])
    behaviour_mean = tf.cast(shapes.time_major(steps.policy_outputs['mean'])[:-1], tf.float32)
    actions = tf.cast(shapes.time_major(steps.policy_outputs['raw_action'])[:-1], tf.float32)
    rewards = config.reward_scale * tf.cast(reward[1:], tf.float32)
    discounts = config.discount * (1.0 - tf.cast(terminated[1:], tf.float32))
    truncated = tf.cast(truncated[1:], tf.bool)
    # A truncated transition's next state was never seen: no target, no loss.
    mask = 1.0 - tf.cast(truncated, tf.float32)
    steps_in_batch = tf.cast(tf.size(mask), tf.float32)
    log_std = tf.fill(tf.shape(actions), tf.cast(self._log_std, tf.float32))
    flat_x = tf.reshape(x, [-1, self._observation_size])
    average_mean = tf.reshape(self._average_network.policy_mean(flat_x[:tf.size(mask)]),
                              tf.shape(actions))
    trained_x = x[:-1]

    variables = self.network.trainable_variables
    with tf.GradientTape() as tape:
      all_mean = tf.reshape(self.network.policy_mean(flat_x),
                            [time_plus_one, batch, size])
      all_values = tf.reshape(self.network.value(flat_x), [time_plus_one, batch])
      mean, values = all_mean[:-1], all_values[:-1]
      q_taken = self._q_tilde(self.network, trained_x, actions, values)
      log_rhos = tf.stop_gradient(
          distributions.diag_gaussian_log_prob(actions, mean, log_std)
          - distributions.diag_gaussian_log_prob(actions, behaviour_mean, log_std))
      fixed_values = tf.stop_gradient(values)
      bootstrap = tf.stop_gradient(all_values[-1])
      q_retrace = retrace.retrace_targets(
          log_rhos / float(size), discounts, rewards, tf.stop_gradient(q_taken),
          fixed_values, bootstrap, truncated=truncated, lambda_=config.retrace_lambda)
      q_opc = retrace.retrace_targets(
          tf.zeros_like(log_rhos), discounts, rewards, tf.stop_gradient(q_taken),
          fixed_values, bootstrap, truncated=truncated, lambda_=1.0)
      sampled_actions = tf.stop_gradient(
          mean + config.policy_std * self._train_noise.normal(tf.shape(mean)))
      q_sampled = tf.stop_gradient(self._q_tilde(self.network, trained_x, sampled_actions,
                                                 values))
      # g: the gradient of each step's objective with respect to the mean phi.
      with tf.GradientTape() as mean_tape:
        mean_tape.watch(mean)
        policy = acer_losses.acer_gaussian_policy_loss(
            mean, behaviour_mean, actions, sampled_actions, config.policy_std, q_opc,
            q_sampled, fixed_values, config.importance_clip)
        objective = tf.reduce_sum(mask * -policy.loss)
      objective_gradient = tf.stop_gradient(mean_tape.gradient(objective, mean))
      kl_gradient = acer_losses.gaussian_average_kl_gradient(average_mean, mean,
                                                             config.policy_std)
      policy_surrogate = common.policy_surrogate(objective_gradient, kl_gradient, mean,
                                                 config, steps_in_batch)
      q_loss = 0.5 * tf.reduce_sum(mask * tf.square(q_retrace - q_taken)) / steps_in_batch
      value_target = acer_losses.sdn_value_target(log_rhos, q_retrace,
                                                  tf.stop_gradient(q_taken), fixed_values)
      value_loss = 0.5 * tf.reduce_sum(mask * tf.square(value_target - values)) / steps_in_batch
      total_loss = (policy_surrogate + config.q_cost * q_loss
                    + config.value_cost * value_loss)
    gradients = tape.gradient(total_loss, variables)
    learning_rate = tf.convert_to_tensor(self.optimizer.learning_rate, tf.float32)
    applied, grad_norm = learning.apply_if_finite(self.optimizer, gradients, variables,
                                                  total_loss, config.max_grad_norm)
    common.update_average_if(applied, variables, self._average_network.trainable_variables,
                             config.average_decay)
    k_dot_g = tf.reduce_sum(kl_gradient * objective_gradient, axis=-1)
    kl_from_average = tf.reduce_sum(tf.square(mean - average_mean), axis=-1) / (
        2.0 * config.policy_std ** 2)
    masked_mean = lambda v: tf.reduce_sum(mask * v) / tf.maximum(tf.reduce_sum(mask), 1.0)
    return dict(
        total_loss=total_loss, policy_loss=masked_mean(policy.loss), q_loss=q_loss,
        value_loss=value_loss, mean_rho=masked_mean(tf.exp(log_rhos)),
        kl_from_average=masked_mean(kl_from_average),
        trust_region_active=masked_mean(tf.cast(k_dot_g > config.max_kl, tf.float32)),
        mean_q=masked_mean(q_taken), grad_norm=grad_norm, learning_rate=learning_rate,
        skipped_updates=1.0 - tf.cast(applied, tf.float32))
