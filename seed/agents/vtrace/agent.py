"""The IMPALA / V-trace agent: an actor-critic trained on-policy-ish from a FIFO.

Actors act with `inference` (sampling from the current policy on the learner),
unrolls of T + 1 steps come back in arrival order, and `train_step` corrects
for the few updates of policy lag with V-trace (Espeholt et al., 2018).
"""
from typing import Dict, NamedTuple, Optional, Tuple

import numpy as np
import tensorflow as tf

from seed import types
from seed.agents.common import base
from seed.agents.common import categorical_acting
from seed.agents.common import learning
from seed.agents.common import tf_agent
from seed.agents.vtrace import config as config_lib
from seed.agents.vtrace import loss as loss_lib
from seed.agents.vtrace import networks
from seed.envs import spec as spec_lib
from seed.losses import shapes


class VTraceAgent(categorical_acting.CategoricalActingAgent):
  """Policy + value network, V-trace loss, Adam or RMSProp with global-norm clipping.

  Every hyperparameter is in `config` (a VTraceConfig, which gin binds). Training
  envs sample from the policy (V-trace explores by its policy's entropy);
  evaluation envs (ActingParams.evaluation) take its most probable action, as PPO's
  do, so an evaluation reports the greedy policy (categorical_acting).
  """

  input_kind = types.InputKind.FIFO
  trained_outputs = ('logits',)
  # Elite and attentive replay compare policies: the logits are the feature vectors.
  feature_output = 'logits'
  mixture_kinds = ('queue', 'uniform', 'prioritized', 'elite', 'attentive')
  config_class = config_lib.VTraceConfig
  several_devices_refusal = ''  # learning.gradients: each device trains on its share of unrolls

  def __init__(self, env_spec: spec_lib.EnvSpec,
               config: Optional[config_lib.VTraceConfig] = None):
    """The network and optimizer, every variable made (config: None takes VTraceConfig()
    as gin binds it). ValueError for an env spec it cannot act in, or statistics across
    the batch on several devices."""
    base.check_discrete_spec(env_spec, 'VTraceAgent')
    super().__init__(env_spec, config, networks.policy_baseline_network)
    config = self.config
    if learning.num_replicas(self.strategy) > 1:
      across = [name for name, on in (
          ("value_normalization='popart'", config.value_normalization == 'popart'),
          ('normalize_advantages=True', config.normalize_advantages)) if on]
      if across:
        raise ValueError(
            f'V-trace with {" and ".join(across)} cannot train on '
            f'{learning.num_replicas(self.strategy)} devices: its statistics span '
            'the whole batch, not a mean of per-device shards. Use one learner device.')
    self.optimizer = tf_agent.adam_or_rmsprop(config)
    self._popart = (learning.PopArtStatistics(config.popart_step_size)
                    if config.value_normalization == 'popart' else None)
    self._train_function = tf.function(self._train)
    # One trace per candidate-set size (the few an elite replay uses).
    self._features_function = tf.function(self._features, reduce_retracing=True)

  def replay_features(self, unrolls: types.Unroll) -> np.ndarray:
    """The current policy's logits [B, T + 1, A] for stored unrolls, as the train step
    computes them (the LSTM starts from each unroll's stored state)."""
    steps = unrolls.steps
    logits = self._features_function(
        tf.convert_to_tensor(steps.observation), tf.convert_to_tensor(steps.terminated),
        tf.convert_to_tensor(steps.truncated),
        tuple(tf.convert_to_tensor(x) for x in unrolls.core_state))
    return logits.numpy()

  def _features(self, observation, terminated, truncated, core_state):
    done = tf.logical_or(tf.cast(shapes.time_major(terminated), tf.bool),
                         tf.cast(shapes.time_major(truncated), tf.bool))
    logits, _, _ = self.network.unroll(shapes.time_major(observation), done, core_state)
    return shapes.batch_major(logits)

  def _optimized(self) -> Tuple[tf_agent.Optimized, ...]:
    return (tf_agent.Optimized(self.optimizer, self.network.trainable_variables,
                               float(self.config.learning_rate)),)

  def checkpoint_items(self) -> Dict[str, object]:
    items = {'model': self.network, 'optimizer': self.optimizer}
    if self._popart is not None:
      items['popart'] = self._popart
    return items

  def train_step(self, sample: types.Sample) -> types.TrainResult:
    """One optimizer step on `batch_unrolls` unrolls of `unroll_length + 1` steps.

    Returns:
      TrainResult whose logs are Python floats total_loss, policy_loss,
      baseline_loss, entropy_loss, entropy, mean_rho, mean_value, grad_norm
      (before clipping), learning_rate and skipped_updates (1.0 when a NaN or Inf
      loss or gradient left the update out, see learning.apply_if_finite), and
      with PopArt popart_mean and popart_scale (after the step); and as
      priorities each unroll's mean |V-trace target - value| (normalised by
      PopArt's scale), which a prioritized replay of the mixture uses. The
      sample's weights (a prioritized replay's importance weights; 1 otherwise)
      weight each unroll's loss.
    """
    shapes.check_sample(sample, self.batch_unrolls, self.unroll_length + 1,
                        '[batch_unrolls, unroll_length + 1]', self.trained_outputs,
                        core_state_parts=len(self.initial_core_state(1)))
    self._build_optimizer()
    steps = sample.data.steps
    steps = steps._replace(policy_outputs={'logits': steps.policy_outputs['logits']})
    logs, priorities = self._train_function(
        tf.nest.map_structure(tf.convert_to_tensor, steps),
        tuple(tf.convert_to_tensor(x) for x in sample.data.core_state),
        tf.convert_to_tensor(sample.weights, tf.float32))
    logs = {key: float(value) for key, value in logs.items()}
    return types.TrainResult(logs=logs, priorities=priorities.numpy().astype(np.float64),
                             skipped_updates=int(logs['skipped_updates']))

  def _train(self, steps, core_state, unroll_weights):
    """The traced part of train_step: batch-major Steps and the sample's importance
    weights [B] in; scalar logs (averaged over the updates, skipped_updates summed) and
    the unrolls' priorities [B] (from each unroll's last update) out."""
    observation, reward, terminated, truncated, action = (
        shapes.time_major(getattr(steps, field)) for field in types.STEP_FIELDS)
    terminated = tf.cast(terminated, tf.bool)
    truncated = tf.cast(truncated, tf.bool)
    config = self.config
    rewards = tf.cast(reward[1:], tf.float32) * config.reward_scale
    if config.reward_clipping == 'abs_one':
      rewards = tf.clip_by_value(rewards, -1.0, 1.0)
    # Step t's flags belong to the transition into observation[t]: they say
    # whether observation[t] starts an episode (reset the LSTM) and, shifted by
    # one, whether transition t -> t+1 ended (discount) or was cut (truncated).
    # The frames as the torso takes them, made once for all the updates' minibatches.
    batch = _UnrollBatch(
        torso_input=self.network.unroll_torso_inputs(observation),
        done=tf.logical_or(terminated, truncated), action=action,
        behaviour_logits=shapes.time_major(steps.policy_outputs['logits']),
        rewards=rewards,
        discounts=config.discount * (1.0 - tf.cast(terminated[1:], tf.float32)),
        truncated=truncated[1:], core_state=core_state, unroll_weights=unroll_weights)
    # The rate these updates use (read before apply: a schedule advances with it).
    learning_rate = tf.convert_to_tensor(self.optimizer.learning_rate, tf.float32)
    num_unrolls = self.batch_unrolls
    if config.epochs * config.num_minibatches == 1:
      logs, priorities = self._update(batch)
      logs['skipped_updates'] = 1.0 - logs.pop('applied')
    else:
      size = num_unrolls // config.num_minibatches
      num_updates = config.epochs * config.num_minibatches
      first_update = tf.cast(self.optimizer.iterations, tf.int32)

      def minibatch(update):
        """The unrolls of update `update`: minibatch update % M of epoch update // M."""
        epoch, index = update // config.num_minibatches, update % config.num_minibatches
        # Stateless, keyed by the seed and the optimizer's step count (checkpointed), so
        # a resumed run shuffles as an uninterrupted one would.
        order = tf.argsort(tf.random.stateless_uniform(
            [num_unrolls], seed=tf.stack([config.seed, first_update + epoch])))
        # A static size: learning.gradients splits it into per-device shards when tracing.
        return tf.ensure_shape(order[index * size:(index + 1) * size], [size])

      # The first update outside the loop gives the loop its totals' structure (a
      # tf.while_loop under a tf.distribute strategy takes no None before it).
      indices = minibatch(0)
      totals, step_priorities = self._update(_take_unrolls(batch, indices))
      priorities = tf.tensor_scatter_nd_update(tf.zeros([num_unrolls]),
                                               indices[:, tf.newaxis], step_priorities)
      for update in tf.range(1, num_updates):
        indices = minibatch(update)
        step_logs, step_priorities = self._update(_take_unrolls(batch, indices))
        priorities = tf.tensor_scatter_nd_update(priorities, indices[:, tf.newaxis],
                                                 step_priorities)
        totals = {key: totals[key] + step_logs[key] for key in totals}
      logs = {key: value / float(num_updates) for key, value in totals.items()}
      logs['skipped_updates'] = num_updates - totals.pop('applied')
      del logs['applied']
    logs['learning_rate'] = learning_rate
    if self._popart is not None:
      logs.update(popart_mean=tf.convert_to_tensor(self._popart.mean),
                  popart_scale=self._popart.scale())
    return logs, priorities

  def _update(self, batch: '_UnrollBatch'):
    """One optimizer step on the unrolls of `batch` (time-major); returns (scalar logs
    with 'applied' 1.0 or 0.0, priorities [b]). On several devices (`learning.gradients`)
    each computes the loss of its share of the unrolls."""
    config = self.config
    variables = self.network.trainable_variables

    def loss_fn(shard: '_UnrollBatch'):
      logits, values, _ = self.network.unroll_from_torso_inputs(
          shard.torso_input, shard.done, shard.core_state)
      value_scale = 1.0
      if self._popart is not None:
        # The head gives n(x); the loss wants V(x) = sigma * n(x) + mu and sigma.
        value_scale = self._popart.scale()
        values = self._popart.denormalize(values)
      loss = loss_lib.impala_loss(
          target_logits=logits[:-1], behaviour_logits=shard.behaviour_logits[:-1],
          actions=shard.action[:-1], values=values[:-1], bootstrap_value=values[-1],
          rewards=shard.rewards, discounts=shard.discounts, truncated=shard.truncated,
          baseline_cost=config.baseline_cost, entropy_cost=config.entropy_cost,
          clip_rho_threshold=config.clip_rho_threshold,
          clip_pg_rho_threshold=config.clip_pg_rho_threshold, lambda_=config.lambda_,
          normalize_advantages=config.normalize_advantages, value_scale=value_scale,
          unroll_weights=shard.unroll_weights, policy_clip=config.policy_clip)
      return (loss.total_loss, dict(loss.components),
              (loss.unroll_priorities, loss.value_targets))

    # Priorities are per unroll [b]; value targets time-major [T, b].
    total_loss, gradients, logs, (priorities, value_targets) = learning.gradients(
        self.strategy, loss_fn, variables, batch, _batch_axes(batch), (0, 1))
    applied, grad_norm = learning.apply_if_finite(self.optimizer, gradients, variables,
                                                  total_loss, config.max_grad_norm)
    logs.update(total_loss=total_loss, grad_norm=grad_norm,
                applied=tf.cast(applied, tf.float32))
    if self._popart is not None:
      # After the step, so the step's targets were normalised by the statistics
      # its values were computed with; skipped with the step (its targets may be
      # NaN). Truncated transitions' targets are the network's own guess.
      weights = 1.0 - tf.cast(batch.truncated, tf.float32)

      def update_statistics():
        self._popart.update(value_targets, weights, self.network.baseline_head)
        return tf.constant(True)

      tf.cond(applied, update_statistics, lambda: tf.constant(False))
    return logs, priorities


class _UnrollBatch(NamedTuple):
  """What one V-trace update reads, time-major ([T + 1, b, ...] per step, [T, b] per
  transition), with the unrolls' core states and weights [b, ...]. `torso_input`: the
  observations as the torso's first layer takes them (network.unroll_torso_inputs)."""
  torso_input: tf.Tensor
  done: tf.Tensor
  action: tf.Tensor
  behaviour_logits: tf.Tensor
  rewards: tf.Tensor
  discounts: tf.Tensor
  truncated: tf.Tensor
  core_state: Tuple[tf.Tensor, ...]
  unroll_weights: tf.Tensor


def _batch_axes(batch: _UnrollBatch) -> _UnrollBatch:
  """Each tensor's unroll axis: 1 in the time-major steps [T (+ 1), b, ...], 0 in the
  per-unroll core state and weights [b, ...]."""
  return _UnrollBatch(
      torso_input=1, done=1, action=1, behaviour_logits=1, rewards=1, discounts=1,
      truncated=1, core_state=tuple(0 for _ in batch.core_state), unroll_weights=0)


def _take_unrolls(batch: _UnrollBatch, indices) -> _UnrollBatch:
  """The unrolls `indices` of a time-major batch."""
  def take(x, axis):
    return tf.gather(x, indices, axis=axis)
  fields = {name: take(getattr(batch, name), 1) for name in
            ('torso_input', 'done', 'action', 'behaviour_logits', 'rewards', 'discounts',
             'truncated')}
  return _UnrollBatch(core_state=tuple(take(x, 0) for x in batch.core_state),
                      unroll_weights=take(batch.unroll_weights, 0), **fields)
