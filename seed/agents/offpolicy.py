"""The replay side SAC and DDPG share: transitions from unrolls, n-step targets, fused updates.

Data: an unroll of n + 1 steps is one n-step transition from its step 0 (unrolls
overlap by n - 1 steps, so each env step starts one). The replay samples
`updates_per_step * minibatch_size` of them per train step, uniformly, and the
train step runs `updates_per_step` gradient updates in one compiled call, a
minibatch each. The learner's sample-to-insert limiter holds
`samples_per_insert = updates_per_step * minibatch_size`, so there are
`updates_per_step` updates per env step (the replay ratio) whatever the number of
actors.

Exploration before learning: until the first update the policy is uniform over
the action box (the random steps SAC and DDPG start with); the replay's minimum
fill (`ReplayInput.min_fill_unrolls`) is how many such steps there are.

Targets: with rewards, discounts gamma * (1 - terminated) and the bootstrap value of
every next state, `seed.losses.nstep.nstep_double_q_targets` (no value rescaling)
sums up to n rewards, stops at a termination and marks a window that reaches a
time limit invalid (the actor sends the reset observation, not the final one, so
the next state's value is unknown); invalid transitions are left out of the
critic loss. For n = 1 this is the one-step target of `seed.losses.sac`.
"""
import abc
from typing import Dict, Mapping, Sequence, Tuple

import numpy as np
import tensorflow as tf

from seed.agents import base
from seed.agents import continuous
from seed.agents import mlp
from seed.agents import tf_agent
from seed.losses import nstep

TRAIN_FIELDS = ('observation', 'reward', 'terminated', 'truncated', 'action')


def check(condition: bool, message: str) -> None:
  if not condition:
    raise ValueError(message)


class Transitions:
  """A minibatch of n-step transitions, unit-space actions, flattened observations.

  Attributes:
    observation: [B, D] x_0.
    action: [B, A] a_0 in [-1, 1].
    last_observation: [B, D] x_n, the only state the n-step target of x_0 bootstraps
      from (earlier next states would only matter for the targets of later steps).
    rewards, terminated, truncated: [n, B] of the transitions t -> t+1.
  """

  def __init__(self, fields, bounds: continuous.ActionBounds, observation_size: int):
    observations = tf.cast(fields['observation'], tf.float32)
    batch_size, steps = observations.shape[0], observations.shape[1]
    observations = tf.reshape(observations, [batch_size, steps, observation_size])

    def time_major(t):
      return tf.transpose(t, [1, 0] + list(range(2, t.shape.rank)))

    self.observation = observations[:, 0]
    self.action = bounds.to_unit(fields['action'][:, 0])
    self.last_observation = observations[:, -1]
    self.rewards = time_major(tf.cast(fields['reward'][:, 1:], tf.float32))
    self.terminated = time_major(tf.cast(fields['terminated'][:, 1:], tf.bool))
    self.truncated = time_major(tf.cast(fields['truncated'][:, 1:], tf.bool))
    self.num_steps = steps - 1
    self.batch_size = batch_size

  def targets(self, last_values, discount: float) -> Tuple[tf.Tensor, tf.Tensor]:
    """n-step targets of x_0 [B] and their validity [B] float, from the values of x_n [B]."""
    # The window of x_0 bootstraps from row n - 1 only; the rows before are never
    # read for it, so they are zeros rather than values nobody uses.
    bootstrap = tf.concat([tf.zeros([self.num_steps - 1, self.batch_size]),
                           tf.reshape(last_values, [1, self.batch_size])], axis=0)
    discounts = discount * (1.0 - tf.cast(self.terminated, tf.float32))
    result = nstep.nstep_double_q_targets(self.rewards, discounts, bootstrap,
                                          self.truncated, n_steps=self.num_steps,
                                          rescaling_eps=None)
    return result.targets[0], tf.cast(result.valid_mask[0], tf.float32)


def masked_mean(values, mask):
  """mean of `values` where `mask` is 1 (0 if none is)."""
  return tf.reduce_sum(values * mask) / tf.maximum(tf.reduce_sum(mask), 1.0)


class OffPolicyAgent(continuous.EvaluationFlagState, tf_agent.KerasAgentMixin, base.Agent,
                     abc.ABC):
  """Replay agents for continuous control; subclasses define the networks and one update.

  Subclasses set, before calling `_init_off_policy`: nothing; after it they build
  their networks and optimizers, then set `self._log_names` (the keys `_update`
  returns) and call `_finish_init()`.
  """

  input_kind = 'replay'

  def _init_off_policy(self, env_spec, *, agent_name: str, n_steps: int,
                       minibatch_size: int, updates_per_step: int, discount: float,
                       tau: float, hidden_sizes: Sequence[int], seed: int) -> None:
    continuous.check_continuous_spec(env_spec, agent_name)
    check(isinstance(n_steps, int) and n_steps >= 1, f'n_steps must be an int >= 1, got '
          f'{n_steps!r}.')
    check(int(minibatch_size) >= 1, f'minibatch_size must be >= 1, got {minibatch_size}.')
    check(int(updates_per_step) >= 1, f'updates_per_step must be >= 1, got '
          f'{updates_per_step}.')
    check(0.0 <= discount <= 1.0, f'discount must be in [0, 1], got {discount}.')
    check(0.0 < tau <= 1.0, f'tau must be in (0, 1], got {tau}.')
    self._env_spec = env_spec
    self._n_steps = n_steps
    self._minibatch_size = int(minibatch_size)
    self._updates_per_step = int(updates_per_step)
    self._discount = float(discount)
    self._tau = float(tau)
    self._hidden_sizes = mlp.check_hidden_sizes(hidden_sizes)
    self._bounds = continuous.ActionBounds(env_spec)
    self._observation_size = mlp.flat_size(env_spec.observation_shape)
    self._seeds = mlp.SeedStream(seed)
    # Separate streams: inference and training run on different threads.
    self._action_noise = tf.random.Generator.from_seed(seed)
    self._train_noise = tf.random.Generator.from_seed(seed + 1)
    # Gradient updates so far; 0 means the policy has not learned yet (act uniformly).
    self._updates = tf.Variable(0, dtype=tf.int64, trainable=False, name='updates')

  def _finish_init(self) -> None:
    self._train_function = tf.function(self._train)

  def _noise_streams(self) -> Dict[str, tf.random.Generator]:
    """The random streams, for checkpoint_items: a resumed run continues them."""
    return {'action_noise': self._action_noise, 'train_noise': self._train_noise}

  @property
  def unroll_length(self) -> int:
    return self._n_steps

  @property
  def unroll_overlap(self) -> int:
    return self._n_steps - 1

  @property
  def batch_size(self) -> int:
    """Transitions sampled per train step: one minibatch per update."""
    return self._updates_per_step * self._minibatch_size

  @property
  def samples_per_insert(self) -> float:
    """The replay ratio in samples: `updates_per_step` minibatches per inserted transition."""
    return float(self._updates_per_step * self._minibatch_size)

  @property
  def updates(self) -> int:
    return int(self._updates.numpy())

  @abc.abstractmethod
  def _act(self, x, evaluation) -> tf.Tensor:
    """Unit-space actions [B, A] for flattened observations x [B, D] once trained."""

  @abc.abstractmethod
  def _update(self, transitions: Transitions) -> Dict[str, tf.Tensor]:
    """One gradient update of every network; returns scalars named `self._log_names`."""

  @abc.abstractmethod
  def _optimizers(self) -> Sequence[Tuple[object, Sequence[tf.Variable], float]]:
    """(optimizer, the variables it trains, its configured learning rate) for each."""

  @tf.function
  def inference(self, observation, reward, done, core_state):
    """Actions in env units; uniform until the first update. See base.Agent.inference."""
    del reward, done  # Feed-forward: nothing to reset.
    x = mlp.flatten_observation(observation, self._observation_size)
    evaluation = tf.expand_dims(core_state[0] > 0.5, -1)
    policy_action = self._act(x, evaluation)
    uniform = self._action_noise.uniform(tf.shape(policy_action), -1.0, 1.0)
    exploring = tf.logical_and(tf.equal(self._updates, 0), tf.logical_not(evaluation))
    unit_action = tf.where(exploring, uniform, policy_action)
    return self._bounds.to_env(unit_action), {}, core_state

  def train_step(self, batch: Mapping[str, np.ndarray]) -> Dict[str, float]:
    """`updates_per_step` updates, one per minibatch of the sampled transitions.

    Returns:
      Python floats: the means over the updates of what `_update` logs, plus
      `updates` (the total so far).
    """
    base.check_batch(batch, TRAIN_FIELDS, (self.batch_size, self._n_steps + 1),
                     '[updates_per_step * minibatch_size, n_steps + 1]')
    self._build_optimizer()
    fields = {key: tf.convert_to_tensor(np.asarray(batch[key])) for key in TRAIN_FIELDS}
    logs = {key: float(value) for key, value in self._train_function(fields).items()}
    logs['updates'] = float(self.updates)
    return logs

  def _train(self, fields):
    """All the updates of one train step in one compiled loop."""
    size = self._minibatch_size
    minibatches = {key: tf.reshape(value, [self._updates_per_step, size] + value.shape[1:])
                   for key, value in fields.items()}
    totals = {name: tf.constant(0.0) for name in self._log_names}
    for u in tf.range(self._updates_per_step):
      transitions = Transitions({key: value[u] for key, value in minibatches.items()},
                                self._bounds, self._observation_size)
      logs = self._update(transitions)
      self._updates.assign_add(1)
      totals = {name: totals[name] + tf.cast(logs[name], tf.float32) for name in totals}
    return {name: total / float(self._updates_per_step) for name, total in totals.items()}
