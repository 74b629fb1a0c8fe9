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

ACER for continuous actions (section 5 of the paper), `ACERContinuousAgent` below: a
Gaussian policy with a fixed diagonal covariance, a stochastic dueling network (SDN) as
the critic, Retrace targets with the importance weights' 1/A-th power, and the trust
region on the mean. Networks (three MLPs on the flattened observation): the policy mean
phi(x) in unit action space [-1, 1]^A, V(x), and A(x, a). The SDN's action value is
  Q~(x, a) = V(x) + A(x, a) - 1/n sum_i A(x, u_i),  u_i ~ N(phi(x), sigma^2 I),
so the mean of Q~ under the policy is V(x) up to sampling noise. Acting: the learner
samples raw = phi(x) + sigma eps (the mean for `--eval` envs), stores `mean` and
`raw_action` (the unclipped sample, whose density the importance weights need) and sends
the env the sample mapped onto its box (clipped). Each batch gets one update: Q^ret from
seed.losses.retrace with c_t = lambda min(1, rho_t^(1/A)), bootstrapping from V; Q^opc
the same with every c_t = 1 (the policy gradient's target); the Q~ loss
1/2 (Q^ret - Q~(x, a))^2 (into V and A) and the V loss 1/2 (V^target - V)^2,
V^target = min(1, rho) (Q^ret - Q~(x, a)) + V; the policy gradient with respect to phi
(seed.losses.acer.acer_gaussian_policy_loss, one fresh a' ~ f per step for the bias
correction), projected onto the trust region around the Polyak-averaged mean network,
back-propagated as -sum stop_gradient(z*) . phi / N. The policy's std is fixed, so there
is no entropy bonus. Feed-forward: core state ().
"""

from typing import Dict, Optional, Tuple

import numpy as np
import tensorflow as tf

from seed import types
from seed.agents.acer import config as config_lib
from seed.agents.acer import loss as loss_lib
from seed.agents.acer import networks
from seed.agents.common import base
from seed.agents.common import categorical_acting
from seed.agents.common import continuous
from seed.agents.common import learning
from seed.agents.common import mlp
from seed.agents.common import tf_agent
from seed.envs import spec as spec_lib
from seed.inputs.fresh_then_replay import ReplaySchedule
from seed.losses import acer as acer_losses
from seed.losses import distributions
from seed.losses import retrace
from seed.losses import sac as sac_losses
from seed.losses import shapes


def copy_into_average(variables, average_variables) -> None:
  """theta_a <- theta: the average starts as the online network."""
  sac_losses.polyak_update(variables, average_variables, tau=1.0)


def update_average_if(applied, variables, average_variables, average_decay: float) -> None:
  """theta_a <- alpha theta_a + (1 - alpha) theta, only after an applied update (a
  skipped non-finite step leaves the average alone). Inside a tf.function."""

  def update():
    sac_losses.polyak_update(variables, average_variables, tau=1.0 - average_decay)
    return tf.constant(True)

  tf.cond(applied, update, lambda: tf.constant(False))


class ACERAgentBase(base.Agent):
  """The schedule and sizes both ACER agents take from their config
  (an ACERSharedConfig)."""

  input_kind = types.InputKind.FRESH_THEN_REPLAY

  @property
  def replay_schedule(self) -> ReplaySchedule:
    """What FreshThenReplay needs: the replay ratio and the replay's size."""
    return ReplaySchedule(replay_ratio=self.config.replay_ratio,
                          capacity_unrolls=self.config.replay_capacity_unrolls,
                          replay_start_unrolls=self.config.replay_start_unrolls)


class ACERAgent(categorical_acting.CategoricalActingAgent, ACERAgentBase):
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
    copy_into_average(self.network.trainable_variables,
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
     truncated) = loss_lib.discrete_trace_inputs(steps, config)
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
      policy_surrogate = loss_lib.policy_surrogate(objective_gradient, kl_gradient, probs,
                                                 config, steps_in_batch)
      q_loss = 0.5 * tf.reduce_sum(mask * tf.square(q_retrace - q_taken)) / steps_in_batch
      total_loss = policy_surrogate + config.q_cost * q_loss
    gradients = tape.gradient(total_loss, variables)
    learning_rate = tf.convert_to_tensor(self.optimizer.learning_rate, tf.float32)
    applied, grad_norm = learning.apply_if_finite(self.optimizer, gradients, variables,
                                                  total_loss, config.max_grad_norm)
    update_average_if(applied, variables, self._average_network.trainable_variables,
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


class ACERContinuousAgent(tf_agent.TFAgent, ACERAgentBase):
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
    copy_into_average(self.network.trainable_variables,
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
      policy_surrogate = loss_lib.policy_surrogate(objective_gradient, kl_gradient, mean,
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
    update_average_if(applied, variables, self._average_network.trainable_variables,
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
