"""PPO (Schulman et al., 2017), continuous or discrete actions, fed by the unroll FIFO.

Actors act through central inference with the current policy: a Gaussian over a
box of actions (MuJoCo, DM Control) or a categorical over discrete ones (Atari,
classic control, cleanrl's ppo_atari); see seed/agents/ppo/networks.py. Each
inference stores the log-probability of the action it sampled (and, for the
Gaussian, the unclipped unit-space sample). A train step takes `batch_unrolls`
unrolls of T + 1 steps, computes GAE once with the value network as it is, then
runs `epochs` passes of `num_minibatches` shuffled minibatches of the clipped
objective, all in one compiled call. The behaviour log-probabilities are the
stored ones, so the few updates of policy lag the FIFO adds are covered by the
ratio and its clip.

Vector observations may be normalised by running statistics on the learner
(mean/var, clip `observation_clip`), updated from each training batch and saved
with the model. Inference then stores the normalised input it acted on
(`policy_input`) and training reuses it, so the ratio compares the policies on the
very inputs the behaviour policy saw, however far the statistics have moved since.
Image observations are never normalised (frames are scaled by 1/255) and training
reads them from the unroll itself.

Time limits: the actor sends the reset observation, never the final one, so a
transition that was truncated has no next state to bootstrap from. Its TD error is
set to 0 and its trace cut, and it is left out of the losses: the same rule as
V-trace here (seed/losses/vtrace.py). Earlier steps bootstrap normally.
"""
from typing import Dict, Optional, Tuple

import keras
import numpy as np
import tensorflow as tf

from seed import types
from seed.agents.common import base
from seed.agents.common import continuous
from seed.agents.common import mlp
from seed.agents.common import learning
from seed.agents.common import tf_agent
from seed.agents.common import networks as shared
from seed.agents.ppo import config as config_lib
from seed.agents.ppo import loss as loss_lib
from seed.agents.ppo import networks
from seed.losses import gae as gae_lib
from seed.losses import ppo as ppo_lib
from seed.losses import shapes


class PPOAgent(tf_agent.TFAgent):
  """Clipped PPO with GAE and Adam; a Gaussian or a categorical policy by the env's
  actions.

  Every hyperparameter is in `config` (a PPOConfig, which gin binds). Feed-forward:
  the core state is (); evaluation envs (ActingParams.evaluation) act with the mean
  (Gaussian) or the most probable action (categorical). `trained_outputs` depends
  on the policy, so it is an attribute of each agent.
  """

  input_kind = types.InputKind.FIFO
  config_class = config_lib.PPOConfig

  def __init__(self, env_spec, config: Optional[config_lib.PPOConfig] = None):
    """Builds the network and optimizer.

    Args:
      env_spec: the env's EnvSpec: discrete actions with vector or [C, H, W] image
        observations, or a finite action box with vector observations.
      config: the hyperparameters; None takes PPOConfig() as gin binds it.

    Raises:
      ValueError: for an env spec the agent cannot act in, or a torso or
        normalisation the observations do not allow (the config checks itself).
    """
    super().__init__(env_spec, config)
    config = self.config
    self._observation_shape = tuple(env_spec.observation_shape)
    self._observation_size = mlp.flat_size(env_spec.observation_shape)
    if not env_spec.is_discrete:
      continuous.check_continuous_spec(env_spec, 'PPOAgent')  # Vector observations.
    self._torso = shared.resolve_torso(config.torso, env_spec.observation_shape)
    if self._torso != 'mlp' and config.normalize_observations:
      raise ValueError('PPOConfig.normalize_observations = True; accepted: False for '
                       f'image observations (torso {self._torso!r} scales frames by 1/255).')
    self._normalizer = (continuous.ObservationNormalizer(self._observation_size,
                                                         config.observation_clip)
                        if config.normalize_observations else None)
    if env_spec.is_discrete:
      self._policy = networks.CategoricalPolicy(env_spec, config, self._torso,
                                                stores_inputs=self._normalizer is not None)
    else:
      self._policy = networks.GaussianPolicy(env_spec, config, self._observation_size)
    self.trained_outputs = self._policy.trained_outputs
    self.network = self._policy.network
    self.optimizer = keras.optimizers.Adam(config.learning_rate, epsilon=config.adam_epsilon)
    self._popart = (learning.PopArtStatistics(config.popart_step_size)
                    if config.value_normalization == 'popart' else None)
    # Separate streams: inference and training run on different threads.
    self._action_noise = self._policy.noise
    self._shuffle = tf.random.Generator.from_seed(config.seed + 1)
    self._train_function = tf.function(self._train)

  @property
  def normalizer(self):
    return self._normalizer

  def initial_core_state(self, num_envs: int) -> Tuple[np.ndarray, ...]:
    """(): feed-forward."""
    del num_envs
    return ()

  def _inputs(self, observation):
    """The policy's inputs: flat float32 [N, D] (normalised if configured) for the
    MLPs, the observations as they are for the image torsos."""
    if self._torso != 'mlp':
      return tf.convert_to_tensor(observation)
    normalize = self._normalizer.normalize if self._normalizer is not None else None
    return mlp.flatten_observation(observation, self._observation_size, normalize)

  @tf.function
  def inference(self, observation, reward, done, core_state, acting: types.ActingParams):
    """Samples actions (the mean or most probable for evaluation envs); see
    base.Agent.inference."""
    del reward, done  # Feed-forward: nothing to reset.
    policy_input = self._inputs(observation)
    action, outputs = self._policy.act(policy_input, tf.cast(acting.evaluation, tf.bool))
    if 'policy_input' in self.trained_outputs:
      outputs['policy_input'] = policy_input
    return action, outputs, core_state

  def _optimized(self) -> Tuple[tf_agent.Optimized, ...]:
    return (tf_agent.Optimized(self.optimizer, self.network.trainable_variables,
                               float(self.config.learning_rate)),)

  def checkpoint_items(self) -> Dict[str, object]:
    # The random streams too, so a resumed run continues them.
    items = {'model': self.network, 'optimizer': self.optimizer,
             'action_noise': self._action_noise, 'shuffle': self._shuffle}
    if self._normalizer is not None:
      items['observation_normalizer'] = self._normalizer
    if self._popart is not None:
      items['popart'] = self._popart
    return items

  def on_restored(self) -> None:
    super().on_restored()
    if self._normalizer is not None:
      self._normalizer.on_restored()

  def train_step(self, sample: types.Sample) -> types.TrainResult:
    """`epochs` x `num_minibatches` updates on one batch of unrolls.

    Returns:
      logs, Python floats averaged over the minibatches: policy_loss, value_loss,
      entropy, approx_kl, clip_fraction, grad_norm (before clipping); plus mean_value,
      mean_advantage (before normalisation), log_std (Gaussian), learning_rate, and
      observation_count with normalisation; popart_mean and popart_scale with PopArt
      (whose value_loss is then in normalised units); skipped_updates, how many of the updates
      a NaN or Inf loss or gradient left out (see learning.apply_if_finite; the
      observations of such a batch do not update the normalisation). No priorities.
    """
    shapes.check_sample(sample, self.batch_unrolls, self.unroll_length + 1,
                        '[batch_unrolls, unroll_length + 1]', self.trained_outputs,
                        core_state_parts=0)
    self._build_optimizer()
    steps = sample.data.steps
    trained = steps._replace(policy_outputs={name: steps.policy_outputs[name]
                                             for name in self.trained_outputs})
    trained = tf.nest.map_structure(lambda x: tf.convert_to_tensor(np.asarray(x)), trained)
    logs = {key: float(value) for key, value in self._train_function(trained).items()}
    skipped = int(logs['skipped_updates'])
    if self._normalizer is not None:
      # A batch that made an update non-finite may hold NaNs, which would stay in
      # the statistics for good: its observations are left out.
      if not skipped:
        observations = np.asarray(steps.observation)[:, :-1]
        self._normalizer.update(observations.reshape(-1, self._observation_size))
      logs.update(self._normalizer.logs())
    return types.TrainResult(logs=logs, skipped_updates=skipped)

  def _train_inputs(self, steps: types.Steps) -> tf.Tensor:
    """[B * (T + 1), ...] the inputs the policy acted on, batch-major: the stored
    normalised ones, else the observations (flattened to float32 for the MLPs)."""
    if 'policy_input' in self.trained_outputs:
      return tf.reshape(tf.cast(steps.policy_outputs['policy_input'], tf.float32),
                        [-1, self._observation_size])
    if self._torso == 'mlp':
      return tf.reshape(tf.cast(steps.observation, tf.float32), [-1, self._observation_size])
    return tf.reshape(steps.observation, (-1,) + self._observation_shape)

  def _advantages(self, steps: types.Steps):
    """GAE over the batch, N = B * T rows batch-major.

    Returns (x [N, ...], advantages [N], returns [N], valid [N], values [B, T + 1]).
    """
    config = self.config
    batch_unrolls, num_steps = self.batch_unrolls, self.unroll_length + 1
    # Made once for the epochs' minibatches (the frames cast, scaled and moved to NHWC).
    x = self.network.torso_inputs(self._train_inputs(steps))
    values = tf.reshape(self._value(x), [batch_unrolls, num_steps])
    input_shape = tuple(x.shape[1:])
    x = tf.reshape(x, (batch_unrolls, num_steps) + input_shape)

    rewards = config.reward_scale * shapes.time_major(tf.cast(steps.reward[:, 1:], tf.float32))
    if config.reward_clipping == 'abs_one':
      rewards = tf.clip_by_value(rewards, -1.0, 1.0)
    terminated = shapes.time_major(tf.cast(steps.terminated[:, 1:], tf.bool))
    truncated = shapes.time_major(tf.cast(steps.truncated[:, 1:], tf.bool))
    truncated = tf.logical_and(truncated, tf.logical_not(terminated))  # Termination wins.
    discounts = config.discount * (1.0 - tf.cast(terminated, tf.float32))
    step_values = shapes.time_major(values[:, :-1])
    # The unseen final state's value chosen so that delta_t = 0: the truncated
    # transition adds nothing and cuts the trace (see the module docstring).
    truncation_values = (step_values - rewards) / config.discount
    advantages, returns = gae_lib.generalized_advantage_estimation(
        rewards, step_values, values[:, -1], discounts, truncated, truncation_values,
        lambda_=config.gae_lambda)

    def flat(t):  # [T, B] -> [B * T], batch-major like x.
      return tf.reshape(shapes.batch_major(t), [-1])

    valid = tf.cast(tf.logical_not(flat(truncated)), tf.float32)
    x = tf.reshape(x[:, :-1], (-1,) + input_shape)
    return x, flat(advantages), flat(returns), valid, values

  def _value(self, x) -> tf.Tensor:
    """V(x) [N] for `network.torso_inputs(inputs)`: the head's output, or with PopArt
    sigma * n(x) + mu."""
    value = self.network.value(x)
    return value if self._popart is None else self._popart.denormalize(value)

  def _value_targets(self, returns, valid) -> tf.Tensor:
    """What the value head learns: the returns, or with PopArt the returns normalised
    by statistics that first take in this batch's returns (which rescales the head so
    that V(x) is unchanged). A batch whose returns are not all finite leaves the
    statistics alone (its updates are skipped anyway)."""
    if self._popart is None:
      return returns

    def update():
      self._popart.update(returns, valid, self.network.value_head)
      return tf.constant(True)

    tf.cond(tf.reduce_all(tf.math.is_finite(returns)), update, lambda: tf.constant(False))
    return self._popart.normalize(returns)

  def _train(self, steps: types.Steps):
    """The compiled part: GAE, then epochs x minibatches of updates.

    Reads the stored policy_input where there is one, never the raw observation
    (see the module docstring).
    """
    config = self.config
    x, advantages, returns, valid, values = self._advantages(steps)
    value_targets = self._value_targets(returns, valid)
    actions = self._policy.taken_actions(steps)
    old_log_probs = tf.reshape(tf.cast(steps.policy_outputs['log_prob'][:, :-1], tf.float32),
                               [-1])
    size = config.minibatch_transitions
    variables = self.network.trainable_variables
    totals = {name: tf.constant(0.0) for name in
              ('policy_loss', 'value_loss', 'entropy', 'approx_kl', 'clip_fraction',
               'grad_norm')}
    skipped = tf.constant(0.0)  # Summed, not averaged: the trainer counts updates.
    for _ in tf.range(config.epochs):
      order = tf.argsort(self._shuffle.uniform([config.batch_transitions]))
      for m in tf.range(config.num_minibatches):
        indices = order[m * size:(m + 1) * size]
        x_mb = tf.gather(x, indices)
        valid_mb = tf.gather(valid, indices)
        # Normalised per minibatch; truncated samples keep advantage 0 (no gradient).
        advantages_mb = ppo_lib.normalize_advantages(tf.gather(advantages, indices)) * valid_mb
        old_log_prob_mb = tf.gather(old_log_probs, indices)
        with tf.GradientTape() as tape:
          log_prob, entropy, value = self._policy.log_prob_entropy_and_value(
              x_mb, tf.gather(actions, indices))
          loss = loss_lib.ppo_loss(
              log_prob, old_log_prob_mb, advantages_mb, entropy, value,
              tf.gather(value_targets, indices), valid_mb, clip=config.clip,
              value_cost=config.value_cost, entropy_cost=config.entropy_cost)
        gradients = tape.gradient(loss.total_loss, variables)
        applied, grad_norm = learning.apply_if_finite(self.optimizer, gradients, variables,
                                                      loss.total_loss, config.max_grad_norm)
        skipped += 1.0 - tf.cast(applied, tf.float32)
        diagnostics = ppo_lib.ppo_diagnostics(log_prob, old_log_prob_mb, config.clip)
        step_logs = dict(policy_loss=loss.policy_loss, value_loss=loss.value_loss,
                         entropy=entropy,
                         approx_kl=diagnostics.approx_kl,
                         clip_fraction=diagnostics.clip_fraction, grad_norm=grad_norm)
        totals = {name: totals[name] + step_logs[name] for name in totals}
    num_updates = float(config.epochs * config.num_minibatches)
    logs = {name: total / num_updates for name, total in totals.items()}
    logs['skipped_updates'] = skipped
    logs.update(mean_value=tf.reduce_mean(values), mean_advantage=tf.reduce_mean(advantages),
                learning_rate=tf.convert_to_tensor(self.optimizer.learning_rate, tf.float32),
                **self._policy.logs())
    if self._popart is not None:
      logs.update(popart_mean=tf.convert_to_tensor(self._popart.mean),
                  popart_scale=self._popart.scale())
    return logs
