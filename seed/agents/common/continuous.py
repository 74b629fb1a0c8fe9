"""What PPO, SAC and DDPG share: spec checks, action bounds, observation stats.

Policies work in unit space [-1, 1]^A and `ActionBounds` maps to the env's box (an
identity for the MuJoCo and DM Control families, which are rescaled to [-1, 1]
already; [-2, 2] for Pendulum-v1). The stored `action` is what the env received.

These agents are feed-forward: their core state is (). Envs of evaluation actors
(ActingParams.evaluation) act with the deterministic action and are never trained on.
"""
from typing import Dict

import numpy as np
import tensorflow as tf

from seed.envs import running_stats
from seed.envs import spec as spec_lib


def check_continuous_spec(env_spec: spec_lib.EnvSpec, agent_name: str) -> None:
  """Raises ValueError unless the env has vector observations and a finite action box."""
  if not isinstance(env_spec, spec_lib.EnvSpec):
    raise ValueError(f'env_spec must be a seed.envs.spec.EnvSpec, got {type(env_spec).__name__}.')
  if env_spec.is_discrete:
    raise ValueError(f'{agent_name} needs continuous (Box) actions, got {env_spec.describe()}; '
                     'for discrete actions use --agent=vtrace or --agent=r2d2.')
  if len(env_spec.action_shape) != 1:
    raise ValueError(f'{agent_name} needs a vector action space [A], got action shape '
                     f'{list(env_spec.action_shape)}.')
  low = np.asarray(env_spec.action_low, np.float64)
  high = np.asarray(env_spec.action_high, np.float64)
  if not (np.all(np.isfinite(low)) and np.all(np.isfinite(high)) and np.all(high > low)):
    raise ValueError(f'{agent_name} needs finite action bounds with high > low, got low '
                     f'{low.tolist()} and high {high.tolist()}.')
  if len(env_spec.observation_shape) > 2:
    raise ValueError(f'{agent_name} takes vector (or matrix, flattened) observations into '
                     f'an MLP, got shape {list(env_spec.observation_shape)}.')


class ActionBounds:
  """Affine maps between unit actions [-1, 1]^A and the env's [low, high]^A."""

  def __init__(self, env_spec: spec_lib.EnvSpec):
    self.low = tf.constant(np.asarray(env_spec.action_low, np.float32))
    self.high = tf.constant(np.asarray(env_spec.action_high, np.float32))
    self.size = int(env_spec.action_shape[0])

  def to_env(self, unit_action):
    """[..., A] in [-1, 1] -> [..., A] in [low, high]; clipped, so rounding stays inside."""
    unit_action = tf.clip_by_value(tf.convert_to_tensor(unit_action, tf.float32), -1.0, 1.0)
    action = self.low + (unit_action + 1.0) * 0.5 * (self.high - self.low)
    return tf.clip_by_value(action, self.low, self.high)

  def to_unit(self, action):
    """The inverse of `to_env`, clipped to [-1, 1]."""
    action = tf.convert_to_tensor(action, tf.float32)
    unit = 2.0 * (action - self.low) / (self.high - self.low) - 1.0
    return tf.clip_by_value(unit, -1.0, 1.0)


class ObservationNormalizer(tf.Module):
  """Running observation mean/variance (clip 10) kept in variables, so checkpoints hold it.

  The statistics are computed by `seed.envs.running_stats.RunningMeanStd` (float64,
  Chan's parallel update) on the learner from training batches; `moments` is their
  float64 copy [mean; var] for inference to read. One variable, so one assign
  replaces both and inference never pairs a new mean with an old variance.
  """

  def __init__(self, observation_size: int, clip: float = running_stats.DEFAULT_CLIP,
               name: str = 'observation_normalizer'):
    super().__init__(name=name)
    self._stats = running_stats.RunningMeanStd((observation_size,), clip=clip)
    self.count = tf.Variable(0.0, dtype=tf.float64, trainable=False, name='count')
    self.moments = tf.Variable(np.stack([np.zeros(observation_size), np.ones(observation_size)]),
                               dtype=tf.float64, trainable=False, name='moments')

  @property
  def mean(self):
    return self.moments[0]

  @property
  def var(self):
    return self.moments[1]

  def normalize(self, observation):
    """clip((x - mean) / sqrt(var + eps), -clip, clip), x [N, observation_size]."""
    moments = tf.convert_to_tensor(self.moments)  # One read: a consistent pair.
    mean = tf.cast(moments[0], tf.float32)
    std = tf.cast(tf.sqrt(moments[1] + self._stats.epsilon), tf.float32)
    x = (tf.convert_to_tensor(observation, tf.float32) - mean) / std
    return tf.clip_by_value(x, -self._stats.clip, self._stats.clip)

  def update(self, observations: np.ndarray) -> None:
    """Adds observations [N, observation_size] to the statistics."""
    self._stats.update(np.reshape(observations, (-1,) + self._stats.shape))
    state = self._stats.state_dict()
    self.moments.assign(np.stack([state['mean'], state['var']]))
    self.count.assign(state['count'])

  def on_restored(self) -> None:
    """Reloads the float64 statistics from the restored variables."""
    moments = self.moments.numpy()
    self._stats.load_state_dict({'count': self.count.numpy(), 'mean': moments[0],
                                 'var': moments[1]})

  def logs(self) -> Dict[str, float]:
    return {'observation_count': float(self._stats.count)}
