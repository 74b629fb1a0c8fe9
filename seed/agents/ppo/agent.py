"""PPO (Schulman et al., 2017) for continuous control, fed by the unroll FIFO.

Actors act through central inference with the current Gaussian policy; each
inference stores the sampled (unclipped) unit-space action and its log-probability.
A train step takes `batch_size` unrolls of T + 1 steps, computes GAE (lambda 0.95,
gamma 0.99) once with the value network as it is, then runs `epochs` passes of
`num_minibatches` shuffled minibatches of the clipped objective, all in one
compiled call. The behaviour log-probabilities are the stored ones, so the few
updates of policy lag the FIFO adds are covered by the ratio and its clip.

Observations are normalised by running statistics on the learner (mean/var, clip
10), updated from each training batch and saved with the model. Inference stores
the normalised input it acted on (`policy_input`) and training reuses it, so the
ratio compares the policies on the very inputs the behaviour policy saw, however
far the statistics have moved since.

Time limits: the actor sends the reset observation, never the final one, so a
transition that was truncated has no next state to bootstrap from. Its TD error is
set to 0 and its trace cut, and it is left out of the losses: the same rule as
V-trace here (seed/losses/vtrace.py). Earlier steps bootstrap normally.
"""
from typing import Dict, Mapping, Sequence

import gin
import keras
import numpy as np
import tensorflow as tf

from seed.agents import base
from seed.agents import continuous
from seed.agents import mlp
from seed.agents import tf_agent
from seed.agents.ppo import networks
from seed.losses import distributions
from seed.losses import gae as gae_lib
from seed.losses import ppo as ppo_lib

_TRAIN_FIELDS = ('observation', 'policy_input', 'reward', 'terminated', 'truncated',
                 'raw_action', 'log_prob')


def _check(condition: bool, message: str) -> None:
  if not condition:
    raise ValueError(message)


@gin.configurable
class PPOAgent(continuous.EvaluationFlagState, tf_agent.KerasAgentMixin, base.Agent):
  """Clipped PPO with GAE, a Gaussian policy with state-independent log-std, Adam.

  Defaults are the usual MuJoCo ones: 2048 transitions per update (32 unrolls x 64),
  10 epochs x 32 minibatches, lr 3e-4, clip 0.2, GAE lambda 0.95, gamma 0.99, value
  cost 0.5, no entropy bonus, global-norm clip 0.5, 64x64 tanh MLPs.
  """

  input_kind = 'fifo'

  def __init__(self, env_spec, *, unroll_length: int = 64, batch_size: int = 32,
               epochs: int = 10, num_minibatches: int = 32, discount: float = 0.99,
               gae_lambda: float = 0.95, clip: float = 0.2, value_cost: float = 0.5,
               entropy_cost: float = 0.0, learning_rate: float = 3e-4,
               adam_epsilon: float = 1e-5, max_grad_norm: float = 0.5,
               hidden_sizes: Sequence[int] = (64, 64), normalize_observations: bool = True,
               observation_clip: float = 10.0, initial_log_std: float = 0.0,
               reward_scale: float = 1.0, seed: int = 0):
    """Builds the network and optimizer.

    Args:
      env_spec: the env's EnvSpec; a vector observation and a finite action box.
      unroll_length: T, transitions per unroll.
      batch_size: unrolls per train step (batch_size * T transitions).
      epochs: passes over each batch.
      num_minibatches: minibatches per pass; must divide batch_size * T.
      discount: gamma in (0, 1].
      gae_lambda: GAE lambda in [0, 1].
      clip: the ratio clip epsilon in (0, 1).
      value_cost: weight of the value loss 0.5 * (V - return)^2.
      entropy_cost: weight of the entropy bonus.
      learning_rate: Adam's step size.
      adam_epsilon: Adam's epsilon.
      max_grad_norm: global-norm clip of each minibatch's gradient.
      hidden_sizes: widths of the policy and the value MLPs.
      normalize_observations: normalise observations by running statistics.
      observation_clip: bound on normalised observations.
      initial_log_std: the policy's starting log standard deviation (unit space).
      reward_scale: rewards are multiplied by this in the loss only (returns logged
        from the env are unaffected); 0.1 keeps MuJoCo value targets near unit scale.
      seed: seeds the weights, the action noise and the minibatch shuffles.
    """
    continuous.check_continuous_spec(env_spec, 'PPOAgent')
    _check(int(unroll_length) >= 1, f'unroll_length must be >= 1, got {unroll_length}.')
    _check(int(batch_size) >= 1, f'batch_size must be >= 1, got {batch_size}.')
    _check(int(epochs) >= 1, f'epochs must be >= 1, got {epochs}.')
    num_samples = int(batch_size) * int(unroll_length)
    _check(int(num_minibatches) >= 1 and num_samples % int(num_minibatches) == 0,
           f'num_minibatches must divide batch_size * unroll_length = {num_samples}, got '
           f'{num_minibatches}.')
    _check(0.0 < discount <= 1.0, f'discount must be in (0, 1], got {discount}.')
    _check(0.0 <= gae_lambda <= 1.0, f'gae_lambda must be in [0, 1], got {gae_lambda}.')
    _check(0.0 < clip < 1.0, f'clip must be in (0, 1), got {clip}.')
    _check(value_cost >= 0, f'value_cost must be >= 0, got {value_cost}.')
    _check(entropy_cost >= 0, f'entropy_cost must be >= 0, got {entropy_cost}.')
    _check(learning_rate > 0, f'learning_rate must be > 0, got {learning_rate}.')
    _check(max_grad_norm > 0, f'max_grad_norm must be > 0, got {max_grad_norm}.')
    _check(observation_clip > 0, f'observation_clip must be > 0, got {observation_clip}.')
    _check(reward_scale > 0, f'reward_scale must be > 0, got {reward_scale}.')

    self._env_spec = env_spec
    self._unroll_length = int(unroll_length)
    self._batch_size = int(batch_size)
    self._epochs = int(epochs)
    self._num_minibatches = int(num_minibatches)
    self._minibatch_size = num_samples // self._num_minibatches
    self._discount = float(discount)
    self._gae_lambda = float(gae_lambda)
    self._clip = float(clip)
    self._value_cost = float(value_cost)
    self._entropy_cost = float(entropy_cost)
    self._max_grad_norm = float(max_grad_norm)
    self._reward_scale = float(reward_scale)
    self._bounds = continuous.ActionBounds(env_spec)
    self._observation_size = mlp.flat_size(env_spec.observation_shape)
    self._normalizer = (continuous.ObservationNormalizer(self._observation_size,
                                                         observation_clip)
                        if normalize_observations else None)
    self._network = networks.GaussianPolicyValue(
        self._observation_size, self._bounds.size, mlp.check_hidden_sizes(hidden_sizes),
        initial_log_std=float(initial_log_std), seed=seed)
    self._configured_learning_rate = float(learning_rate)
    self._optimizer = keras.optimizers.Adam(learning_rate, epsilon=adam_epsilon)
    # Separate streams: inference and training run on different threads.
    self._action_noise = tf.random.Generator.from_seed(seed)
    self._shuffle = tf.random.Generator.from_seed(seed + 1)
    self._train_function = tf.function(self._train)

  @property
  def unroll_length(self) -> int:
    return self._unroll_length

  @property
  def batch_size(self) -> int:
    return self._batch_size

  @property
  def normalizer(self):
    return self._normalizer

  def _inputs(self, observation):
    normalize = self._normalizer.normalize if self._normalizer is not None else None
    return mlp.flatten_observation(observation, self._observation_size, normalize)

  @tf.function
  def inference(self, observation, reward, done, core_state):
    """Samples unit-space actions (the mean for evaluation envs); see base.Agent.inference."""
    del reward, done  # Feed-forward: nothing to reset.
    policy_input = self._inputs(observation)
    mean, log_std = self._network.policy(policy_input)
    sample = distributions.sample_diag_gaussian(mean, log_std, generator=self._action_noise)
    evaluation = tf.expand_dims(core_state[0] > 0.5, -1)
    raw_action = tf.where(evaluation, mean, sample)
    log_prob = distributions.diag_gaussian_log_prob(raw_action, mean, log_std)
    outputs = {'raw_action': raw_action, 'log_prob': log_prob, 'policy_input': policy_input}
    return self._bounds.to_env(raw_action), outputs, core_state

  def checkpoint_items(self) -> Dict[str, object]:
    # The random streams too, so a resumed run continues them.
    items = {'model': self._network, 'optimizer': self._optimizer,
             'action_noise': self._action_noise, 'shuffle': self._shuffle}
    if self._normalizer is not None:
      items['observation_normalizer'] = self._normalizer
    return items

  def on_restored(self) -> None:
    super().on_restored()
    if self._normalizer is not None:
      self._normalizer.on_restored()

  def train_step(self, batch: Mapping[str, np.ndarray]) -> Dict[str, float]:
    """`epochs` x `num_minibatches` updates on one batch of unrolls.

    Returns:
      Python floats averaged over the minibatches: policy_loss, value_loss, entropy,
      approx_kl, clip_fraction, grad_norm (before clipping); plus mean_value,
      mean_advantage (before normalisation), log_std, learning_rate.
    """
    base.check_batch(batch, _TRAIN_FIELDS, (self._batch_size, self._unroll_length + 1),
                     '[batch_size, unroll_length + 1]')
    self._build_optimizer()
    fields = {key: tf.convert_to_tensor(np.asarray(batch[key])) for key in _TRAIN_FIELDS
              if key != 'observation'}
    logs = {key: float(value) for key, value in self._train_function(fields).items()}
    if self._normalizer is not None:
      observations = np.asarray(batch['observation'])[:, :-1]
      self._normalizer.update(observations.reshape(-1, self._observation_size))
      logs.update(self._normalizer.logs())
    return logs

  def _advantages(self, fields):
    """GAE over the batch: (x [N, D], advantages [N], returns [N], valid [N]), N = B * T."""
    batch_size, steps = self._batch_size, self._unroll_length + 1
    x = tf.reshape(tf.cast(fields['policy_input'], tf.float32), [-1, self._observation_size])
    values = tf.reshape(self._network.value(x), [batch_size, steps])
    x = tf.reshape(x, [batch_size, steps, self._observation_size])

    def time_major(t):
      return tf.transpose(t, [1, 0])

    rewards = self._reward_scale * time_major(tf.cast(fields['reward'][:, 1:], tf.float32))
    terminated = time_major(tf.cast(fields['terminated'][:, 1:], tf.bool))
    truncated = time_major(tf.cast(fields['truncated'][:, 1:], tf.bool))
    truncated = tf.logical_and(truncated, tf.logical_not(terminated))  # Termination wins.
    discounts = self._discount * (1.0 - tf.cast(terminated, tf.float32))
    step_values = time_major(values[:, :-1])
    # The unseen final state's value chosen so that delta_t = 0: the truncated
    # transition adds nothing and cuts the trace (see the module docstring).
    truncation_values = (step_values - rewards) / self._discount
    advantages, returns = gae_lib.generalized_advantage_estimation(
        rewards, step_values, values[:, -1], discounts, truncated, truncation_values,
        lambda_=self._gae_lambda)

    def flat(t):  # [T, B] -> [B * T], batch-major like x.
      return tf.reshape(tf.transpose(t, [1, 0]), [-1])

    valid = tf.cast(tf.logical_not(flat(truncated)), tf.float32)
    x = tf.reshape(x[:, :-1], [-1, self._observation_size])
    return x, flat(advantages), flat(returns), valid, values

  def _train(self, fields):
    """The compiled part: GAE, then epochs x minibatches of updates."""
    x, advantages, returns, valid, values = self._advantages(fields)
    raw_actions = tf.reshape(tf.cast(fields['raw_action'][:, :-1], tf.float32),
                             [-1, self._bounds.size])
    old_log_probs = tf.reshape(tf.cast(fields['log_prob'][:, :-1], tf.float32), [-1])
    num_samples = self._batch_size * self._unroll_length
    size = self._minibatch_size
    variables = self._network.trainable_variables
    totals = {name: tf.constant(0.0) for name in
              ('policy_loss', 'value_loss', 'entropy', 'approx_kl', 'clip_fraction',
               'grad_norm')}
    for _ in tf.range(self._epochs):
      order = tf.argsort(self._shuffle.uniform([num_samples]))
      for m in tf.range(self._num_minibatches):
        indices = order[m * size:(m + 1) * size]
        x_mb = tf.gather(x, indices)
        valid_mb = tf.gather(valid, indices)
        # Normalised per minibatch; truncated samples keep advantage 0 (no gradient).
        advantages_mb = ppo_lib.normalize_advantages(tf.gather(advantages, indices)) * valid_mb
        old_log_prob_mb = tf.gather(old_log_probs, indices)
        with tf.GradientTape() as tape:
          mean, log_std = self._network.policy(x_mb)
          log_prob = distributions.diag_gaussian_log_prob(
              tf.gather(raw_actions, indices), mean, log_std)
          policy_loss = ppo_lib.ppo_clipped_loss(log_prob, old_log_prob_mb, advantages_mb,
                                                 self._clip)
          value_errors = self._network.value(x_mb) - tf.gather(returns, indices)
          value_loss = 0.5 * tf.reduce_sum(valid_mb * tf.square(value_errors)) / tf.maximum(
              tf.reduce_sum(valid_mb), 1.0)
          entropy = tf.reduce_mean(distributions.diag_gaussian_entropy(mean, log_std))
          loss = policy_loss + self._value_cost * value_loss - self._entropy_cost * entropy
        gradients = tape.gradient(loss, variables)
        gradients, grad_norm = tf.clip_by_global_norm(gradients, self._max_grad_norm)
        self._optimizer.apply_gradients(zip(gradients, variables))
        diagnostics = ppo_lib.ppo_diagnostics(log_prob, old_log_prob_mb, self._clip)
        step_logs = dict(policy_loss=policy_loss, value_loss=value_loss, entropy=entropy,
                         approx_kl=diagnostics.approx_kl,
                         clip_fraction=diagnostics.clip_fraction, grad_norm=grad_norm)
        totals = {name: totals[name] + step_logs[name] for name in totals}
    num_updates = float(self._epochs * self._num_minibatches)
    logs = {name: total / num_updates for name, total in totals.items()}
    logs.update(mean_value=tf.reduce_mean(values), mean_advantage=tf.reduce_mean(advantages),
                log_std=tf.reduce_mean(self._network.log_std),
                learning_rate=tf.convert_to_tensor(self._optimizer.learning_rate, tf.float32))
    return logs
