"""The replay side SAC and DDPG share: transitions from unrolls, n-step targets, fused updates.

Data: an unroll of n + 1 steps is one n-step transition from its step 0 (unrolls
overlap by n - 1 steps, so each env step starts one). The replay samples
`batch_transitions = updates_per_step * minibatch_transitions` of them per train
step, uniformly, and the train step runs `updates_per_step` gradient updates in one
compiled call, a minibatch each. The learner's sample-to-insert limiter holds
`samples_per_insert = batch_transitions`, so there are `updates_per_step` updates
per env step (the replay ratio) whatever the number of actors.

Exploration before learning: until the first update the policy is uniform over
the action box (the random steps SAC and DDPG start with); the replay's minimum
fill (`ReplayInput.min_fill_unrolls`) is how many such steps there are. Evaluation
envs (ActingParams.evaluation) act with the deterministic action from the start.

Targets: with rewards, discounts gamma * (1 - terminated) and the bootstrap value of
every next state, `seed.losses.nstep.nstep_double_q_targets` (no value rescaling)
sums up to n rewards, stops at a termination and marks a window that reaches a
time limit invalid (the actor sends the reset observation, not the final one, so
the next state's value is unknown); invalid transitions are left out of the
critic loss. For n = 1 this is the one-step target of `seed.losses.sac`.

Resets (`reset_interval_updates` or `reset_interval_env_steps`): at the end of the
train step that reaches each multiple of the interval in gradient updates, every
network is re-initialised from a fresh seed (the config's seed and the reset's
number, so a resumed run draws the same weights), the targets copied from it, and
every optimizer's slots and step count zeroed (its learning rate kept); the replay
and the update count stay. The reset count is checkpointed and logged (`resets`),
so a run resumed anywhere in the cycle resets where an unbroken one would.
"""
import abc
from typing import Dict, Optional, Sequence, Tuple

import keras
import numpy as np
import tensorflow as tf

from seed import types
from seed.agents.common import base
from seed.agents.common import continuous
from seed.agents.common import mlp
from seed.agents.common import seed_axis
from seed.agents.common import learning
from seed.agents.common import tf_agent
from seed.agents.common.offpolicy_config import OffPolicyConfig
from seed.losses import nstep
from seed.losses import shapes


class Transitions:
  """A minibatch of n-step transitions of every seed, unit-space actions, flat observations.

  Attributes:
    observation: [N, B, D] x_0.
    action: [N, B, A] a_0 in [-1, 1].
    last_observation: [N, B, D] x_n, the only state the n-step target of x_0
      bootstraps from (earlier next states would only matter for the targets of later
      steps).
    rewards, terminated, truncated: [n, N * B] of the transitions t -> t+1 (the
      targets are per transition, so the seeds are flattened for them).
    n_steps: n; num_seeds: N; size: B.
  """

  def __init__(self, steps: types.Steps, bounds: continuous.ActionBounds,
               observation_size: int):
    """From steps [N, B, n + 1, ...] (tensors); policy outputs are not read."""
    self.steps = steps  # What a device's shard is cut from (seed.agents.common.learning).
    observations = tf.cast(steps.observation, tf.float32)
    num_seeds, size, num_steps = observations.shape[:3]
    observations = tf.reshape(observations, [num_seeds, size, num_steps, observation_size])
    self.observation = observations[:, :, 0]
    self.action = bounds.to_unit(steps.action[:, :, 0])
    self.last_observation = observations[:, :, -1]

    def time_major(x, dtype):
      return shapes.time_major(tf.reshape(tf.cast(x[:, :, 1:], dtype),
                                          [num_seeds * size, num_steps - 1]))

    self.rewards = time_major(steps.reward, tf.float32)
    self.terminated = time_major(steps.terminated, tf.bool)
    self.truncated = time_major(steps.truncated, tf.bool)
    self.n_steps = num_steps - 1
    self.num_seeds = num_seeds
    self.size = size

  @property
  def steps_item_axes(self):
    """The item axis (1, B) of every tensor of `steps`: how learning.gradients shards them."""
    return tf.nest.map_structure(lambda _: 1, self.steps)

  def valid_counts(self, discount: float) -> Tuple[tf.Tensor, tf.Tensor]:
    """Which targets are valid [N, B] float, and how many each seed has [N]: whether a
    window ends before a time limit does not depend on the values, so the whole
    minibatch's counts are known before its shards compute theirs
    (`masked_mean_of_shard`)."""
    _, valid = self.targets(tf.zeros([self.num_seeds, self.size]), discount)
    return valid, tf.reduce_sum(valid, -1)

  def targets(self, last_values, discount: float) -> Tuple[tf.Tensor, tf.Tensor]:
    """n-step targets of x_0 [N, B] and their validity [N, B] float, from the values of
    x_n [N, B]."""
    flat_size = self.num_seeds * self.size
    # The window of x_0 bootstraps from row n - 1 only; the rows before are never
    # read for it, so they are zeros rather than values nobody uses.
    bootstrap = tf.concat([tf.zeros([self.n_steps - 1, flat_size]),
                           tf.reshape(last_values, [1, flat_size])], axis=0)
    discounts = discount * (1.0 - tf.cast(self.terminated, tf.float32))
    result = nstep.nstep_double_q_targets(self.rewards, discounts, bootstrap,
                                          self.truncated, n_steps=self.n_steps,
                                          rescaling_eps=None)
    shape = [self.num_seeds, self.size]
    return (tf.reshape(result.targets[0], shape),
            tf.reshape(tf.cast(result.valid_mask[0], tf.float32), shape))


def masked_mean(values, mask):
  """The mean over seeds of each seed's mean of `values` where `mask` is 1 (0 for a
  seed where none is); values and mask [N, B]."""
  per_seed = tf.reduce_sum(values * mask, -1) / tf.maximum(tf.reduce_sum(mask, -1), 1.0)
  return tf.reduce_mean(per_seed)


def masked_mean_of_shard(values, mask, batch_mask_counts, num_shards: int):
  """A device's share of `masked_mean` over the whole batch, as a mean over its shard:
  values and mask [N, b] are one of `num_shards` equal shards of a batch whose seeds have
  `batch_mask_counts` [N] ones in the mask, so the mean of the shards' results is the
  batch's `masked_mean` (a shard's own count would weigh its items apart)."""
  per_seed = tf.reduce_sum(values * mask, -1) / tf.maximum(batch_mask_counts, 1.0)
  return float(num_shards) * tf.reduce_mean(per_seed)


class OffPolicyAgent(tf_agent.TFAgent, abc.ABC):
  """Replay agents for continuous control; subclasses define the networks and one update.

  A subclass's constructor calls this one with its config (an OffPolicyConfig), then
  `_install_networks()` (its `_make_networks`, targets synced) and builds its
  optimizers; it names the scalars its `_update` returns in the class attribute
  `log_names`, beside `skipped_updates` (its optimizer updates left out for a NaN/Inf
  loss or gradient, see learning.apply_if_finite). Feed-forward: the core state is ().

  Seeds (`num_seeds` N): N independent agents, seeds config.seed + k, train together.
  Every network has a leading seed axis (seed.agents.common.seed_axis) and every input of an
  update is [N, B, ...]; each seed has its own random streams, and env k acts with
  seed k mod N. Losses are means over the seeds, as logged; the optimizers minimise N
  times that, the sum, so each seed's gradient is the one it would have alone (Adam
  then moves each seed's weights as it would alone: its moments are elementwise).
  A non-finite loss or gradient skips the update of every seed.
  """

  input_kind = types.InputKind.REPLAY
  log_names: Tuple[str, ...] = ()
  several_devices_refusal = ''  # learning.gradients: each device trains on its share of transitions

  def __init__(self, env_spec, config: Optional[OffPolicyConfig]):
    """The replay side; raises ValueError for an env spec it cannot act in."""
    continuous.check_continuous_spec(env_spec, type(self).__name__)
    super().__init__(env_spec, config)
    config = self.config
    self._bounds = continuous.ActionBounds(env_spec)
    self._observation_size = mlp.flat_size(env_spec.observation_shape)
    self._num_seeds = config.num_seeds
    self._member_seeds = [config.seed + k for k in range(self._num_seeds)]
    self._seeds = [mlp.SeedStream(seed) for seed in self._member_seeds]
    # Separate streams: inference and training run on different threads.
    self._action_noise = seed_axis.SeedGenerators(self._member_seeds)
    self._train_noise = seed_axis.SeedGenerators([seed + 1 for seed in self._member_seeds])
    # Gradient updates so far; 0 means the policy has not learned yet (act uniformly).
    self._updates = tf.Variable(0, dtype=tf.int64, trainable=False, name='updates')
    self._resets = tf.Variable(0, dtype=tf.int64, trainable=False, name='resets')
    self._train_function = tf.function(self._train)
    # XLA fuses the many small ops of an update of these MLPs (docs/performance.md).
    # Several devices stay in graph mode: their all-reduce (strategy.run) does not
    # compile.
    xla = config.xla_train_step and self.strategy.num_replicas_in_sync == 1
    self._updates_function = (tf.function(self._run_updates, jit_compile=True) if xla
                              else self._run_updates)

  def _shared_checkpoint_items(self) -> Dict[str, object]:
    """The counters and random streams, for checkpoint_items: a resumed run continues
    them."""
    return {'updates': self._updates, 'resets': self._resets,
            **self._action_noise.checkpoint_items('action_noise'),
            **self._train_noise.checkpoint_items('train_noise')}

  @property
  def num_seeds(self) -> int:
    """Independent agents trained together (seeds config.seed + k); see the class doc."""
    return self._num_seeds

  @abc.abstractmethod
  def _make_networks(self, seeds: Sequence[mlp.SeedStream]) -> Dict[str, keras.layers.Layer]:
    """Every network, targets and temperature included, by the attribute name it
    has on the agent, freshly initialised: seed k's part from `seeds[k]`."""

  @abc.abstractmethod
  def _sync_targets(self) -> None:
    """Copies the online networks into their targets."""

  def _install_networks(self) -> None:
    """Sets the networks of `_make_networks(self._seeds)` as attributes, targets synced."""
    for name, network in self._make_networks(self._seeds).items():
      setattr(self, name, network)
    self._sync_targets()

  def _reset(self) -> None:
    """Re-initialises every network and optimizer state; see the module docstring."""
    number = int(self._resets.numpy()) + 1
    fresh = self._make_networks([mlp.SeedStream((seed, number))
                                 for seed in self._member_seeds])
    for name, network in fresh.items():
      for current, new in zip(getattr(self, name).weights, network.weights, strict=True):
        current.assign(new)
    self._sync_targets()
    for optimized in self._optimized():
      learning.reset_optimizer_state(optimized.optimizer)
    self._resets.assign(number)

  @property
  def resets(self) -> int:
    """Resets so far."""
    return int(self._resets.numpy())

  @property
  def unroll_length(self) -> int:
    return self.config.n_steps

  @property
  def unroll_overlap(self) -> int:
    return self.config.n_steps - 1

  @property
  def batch_transitions(self) -> int:
    """n-step transitions sampled per train step: one minibatch per update."""
    return self.config.batch_transitions

  @property
  def batch_unrolls(self) -> int:
    """batch_transitions: each unroll is one n-step transition. Per seed: a train step
    takes num_seeds times as many, seed by seed."""
    return self.config.batch_transitions

  @property
  def samples_per_insert(self) -> float:
    """The replay ratio in samples: `updates_per_step` minibatches per inserted transition."""
    return float(self.config.batch_transitions)

  @property
  def reset_interval_env_steps(self) -> Optional[float]:
    interval = self.config.reset_interval
    return None if interval is None else interval / self.config.updates_per_step

  @property
  def updates(self) -> int:
    return int(self._updates.numpy())

  def initial_core_state(self, num_envs: int) -> Tuple[np.ndarray, ...]:
    """(): feed-forward."""
    del num_envs
    return ()

  def acting_params(self, env_ordinal: int, evaluation: bool) -> types.ActingParams:
    """Env k acts for (and feeds) seed k mod num_seeds."""
    return types.ActingParams(epsilon=np.float32(0.0), evaluation=np.bool_(evaluation),
                              seed_index=np.int32(env_ordinal % self._num_seeds))

  @abc.abstractmethod
  def _act(self, x, evaluation) -> tf.Tensor:
    """Unit-space actions [N, B, A] of every seed for flattened observations x [N, B, D]
    once trained; `evaluation` [1, B, 1] bool."""

  def _update_noise(self) -> Tuple[tf.Tensor, ...]:
    """The random numbers one update uses (drawn from `self._train_noise`), in the order
    it uses them; `_update` gets them back. () unless the agent draws some."""
    return ()

  @abc.abstractmethod
  def _update(self, transitions: Transitions, noise: Tuple[tf.Tensor, ...]
              ) -> Dict[str, tf.Tensor]:
    """One gradient update of every network, with its `_update_noise`; returns scalars
    named `self.log_names` and `skipped_updates`."""

  @tf.function
  def inference(self, observation, reward, done, core_state, acting: types.ActingParams):
    """Actions in env units; uniform until the first update. See base.Agent.inference."""
    del reward, done  # Feed-forward: nothing to reset.
    x = mlp.flatten_observation(observation, self._observation_size)
    # Every seed acts on every env (a few small matmuls); each env keeps its seed's.
    x = seed_axis.for_every_seed(x, self._num_seeds)
    evaluation = tf.cast(acting.evaluation, tf.bool)[tf.newaxis, :, tf.newaxis]
    policy_action = self._act(x, evaluation)
    uniform = self._action_noise.uniform(tf.shape(policy_action), -1.0, 1.0)
    exploring = tf.logical_and(tf.equal(self._updates, 0), tf.logical_not(evaluation))
    unit_action = seed_axis.pick_seed(tf.where(exploring, uniform, policy_action),
                                      acting.seed_index)
    return self._bounds.to_env(unit_action), {}, core_state

  def train_step(self, sample: types.Sample) -> types.TrainResult:
    """`updates_per_step` updates, one per minibatch of the sampled transitions.

    The sample's importance weights are not applied: the replay is uniform.

    Returns:
      logs, Python floats: the means over the updates of what `_update` logs, plus
      `updates` and `resets` (the totals so far) and `skipped_updates` (the sum of
      this step's).
      No priorities.
    """
    shapes.check_sample(sample, self._num_seeds * self.batch_transitions,
                        self.config.n_steps + 1,
                        '[num_seeds * batch_transitions (seed by seed), n_steps + 1]',
                        core_state_parts=0)
    self._build_optimizer()
    steps = sample.data.steps._replace(policy_outputs={})
    steps = tf.nest.map_structure(lambda x: tf.convert_to_tensor(np.asarray(x)), steps)
    logs = {key: float(value) for key, value in self._train_function(steps).items()}
    interval = self.config.reset_interval
    if interval is not None and self.updates // interval > self.resets:
      self._reset()
    logs['updates'] = float(self.updates)
    logs['resets'] = float(self.resets)
    return types.TrainResult(logs=logs, skipped_updates=round(logs['skipped_updates']))

  def _train(self, steps: types.Steps):
    """All the updates of one train step: their random numbers first, then the updates
    in one compiled loop."""
    updates_per_step = self.config.updates_per_step

    def by_update(x):  # [N * U * B, ...], seed by seed -> [U, N, B, ...]
      x = tf.reshape(x, [self._num_seeds, updates_per_step, self.config.minibatch_transitions]
                     + x.shape[1:])
      return tf.transpose(x, [1, 0, 2] + list(range(3, x.shape.rank)))

    minibatches = tf.nest.map_structure(by_update, steps)
    # Drawn here, outside XLA, update by update in the order the updates use them: XLA
    # draws other numbers than graph mode from the same generator state, so with the
    # draws here a compiled step computes what a graph-mode one does.
    draws = [self._update_noise() for _ in range(updates_per_step)]
    noise = tuple(tf.stack(parts) for parts in zip(*draws))  # each [U, ...]
    return self._updates_function(minibatches, noise)

  def _run_updates(self, minibatches: types.Steps, noise: Tuple[tf.Tensor, ...]):
    """The updates of `_train`, one per minibatch [U, N, B, ...] with its noise [U, ...];
    the means of their logs."""
    updates_per_step = self.config.updates_per_step
    totals = {name: tf.constant(0.0) for name in self.log_names}
    skipped = tf.constant(0.0)
    for u in tf.range(updates_per_step):
      minibatch = tf.nest.map_structure(lambda x, u=u: x[u], minibatches)
      transitions = Transitions(minibatch, self._bounds, self._observation_size)
      logs = self._update(transitions, tuple(x[u] for x in noise))
      # Counts whole updates only: one with a skipped part did not happen as such
      # (and the first complete one ends the uniform exploration).
      self._updates.assign_add(tf.cast(tf.equal(logs['skipped_updates'], 0.0), tf.int64))
      skipped += logs['skipped_updates']
      totals = {name: totals[name] + tf.cast(logs[name], tf.float32) for name in totals}
    means = {name: total / float(updates_per_step) for name, total in totals.items()}
    return dict(means, skipped_updates=skipped)
