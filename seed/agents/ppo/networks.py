"""PPO's networks: a Gaussian policy with a state-independent log-std and a value
MLP for continuous actions; a categorical policy and value for discrete ones.

Continuous: separate torsos for policy and value (no shared features), tanh
activations and orthogonal init with gains sqrt(2) / 0.01 (policy mean) / 1
(value): the MuJoCo setting of Schulman et al. (2017) and of the well-tuned open
implementations.
"""
from typing import List, Sequence, Tuple

import keras
import numpy as np
import tensorflow as tf

from seed.agents.common import mlp
from seed.agents.common import networks as shared


class GaussianPolicyValue(keras.layers.Layer):
  """x [N, D] (normalised observations) -> policy mean [N, A], log-std [A], value [N]."""

  def __init__(self, observation_size: int, action_size: int, hidden_sizes: Sequence[int], *,
               initial_log_std: float = 0.0, seed: int = 0, name: str = 'policy_value'):
    super().__init__(name=name)
    seeds = mlp.SeedStream(seed)
    self._policy = mlp.MLP(observation_size, hidden_sizes, action_size, seeds=seeds,
                           activation='tanh', initializer='orthogonal', output_gain=0.01,
                           name='policy')
    self._value = mlp.MLP(observation_size, hidden_sizes, 1, seeds=seeds, activation='tanh',
                          initializer='orthogonal', output_gain=1.0, name='value')
    self.log_std = self.add_weight(
        shape=(action_size,), initializer=keras.initializers.Constant(initial_log_std),
        name='log_std')
    self.built = True

  def policy(self, x) -> Tuple[tf.Tensor, tf.Tensor]:
    """(mean [N, A], log_std [A]) of the Gaussian over unit-space actions."""
    return self._policy(x), tf.convert_to_tensor(self.log_std)

  def value(self, x) -> tf.Tensor:
    """V(x) [N]."""
    return tf.squeeze(self._value(x), -1)

  @property
  def value_head(self) -> keras.layers.Dense:
    """The value's last layer (one unit)."""
    return self._value.output_layer


class CategoricalPolicyValue(keras.layers.Layer):
  """Discrete actions: observations -> policy logits [N, A] and value [N].

  Image observations ([C, H, W], torso 'nature' or 'impala_shallow') go through one
  convolutional torso shared by two linear heads, as cleanrl's ppo_atari does;
  vector observations (torso 'mlp') through separate policy and value tanh MLPs,
  as its classic-control ppo does. Orthogonal init throughout, gains sqrt(2)
  (hidden), 0.01 (logits: a near-uniform first policy) and 1 (value).
  """

  def __init__(self, observation_shape: Sequence[int], observation_dtype: str,
               num_actions: int, hidden_sizes: Sequence[int], *, torso: str, seed: int = 0,
               name: str = 'policy_value'):
    """torso: a resolved torso (shared.resolve_torso); the MLPs take flat float inputs."""
    super().__init__(name=name)
    seeds = mlp.SeedStream(seed)
    self._torso_name = torso
    self._observation_shape = tuple(int(d) for d in observation_shape)
    if torso == 'mlp':
      size = mlp.flat_size(observation_shape)
      self._policy = mlp.MLP(size, hidden_sizes, num_actions, seeds=seeds, activation='tanh',
                             initializer='orthogonal', output_gain=0.01, name='policy')
      self._value = mlp.MLP(size, hidden_sizes, 1, seeds=seeds, activation='tanh',
                            initializer='orthogonal', output_gain=1.0, name='value')
    else:
      layers = shared.build_torso_layers(
          torso, (), lambda: seeds.initializer('orthogonal', gain=float(np.sqrt(2.0))))
      self._num_torso_layers = len(layers)
      for i, layer in enumerate(layers):  # Attributes: tf.train.Checkpoint needs them.
        setattr(self, f'_torso_layer_{i}', layer)
      self._policy_head = keras.layers.Dense(
          num_actions, name='policy_logits',
          kernel_initializer=seeds.initializer('orthogonal', gain=0.01))
      self._value_head = keras.layers.Dense(
          1, name='value', kernel_initializer=seeds.initializer('orthogonal', gain=1.0))
      self.policy_and_value(tf.zeros((1,) + self._observation_shape,
                                     tf.as_dtype(np.dtype(observation_dtype))))
    self.built = True

  def _torso_layers(self) -> List[keras.layers.Layer]:
    return [getattr(self, f'_torso_layer_{i}') for i in range(self._num_torso_layers)]

  def _features(self, x):
    return shared.apply_torso(self._torso_layers(), self._torso_name, self._observation_shape,
                              tf.convert_to_tensor(x))

  def layer_outputs(self, observations) -> List[Tuple[str, tf.Tensor]]:
    """Each torso layer's output for observations [N, C, H, W] (Flatten's left out), for
    diagnostics (seed diagnose); [] for vector observations, which have no torso."""
    if self._torso_name == 'mlp':
      return []
    return shared.torso_layer_outputs(self._torso_layers(), self._torso_name, observations)

  def policy_and_value(self, x) -> Tuple[tf.Tensor, tf.Tensor]:
    """(logits [N, A], value [N]) for inputs [N, D] (mlp) or [N, C, H, W] (images)."""
    if self._torso_name == 'mlp':
      return self._policy(x), tf.squeeze(self._value(x), -1)
    features = self._features(x)
    return self._policy_head(features), tf.squeeze(self._value_head(features), -1)

  def logits(self, x) -> tf.Tensor:
    """Policy logits [N, A] alone: acting needs no value (the MLP case skips its MLP)."""
    if self._torso_name == 'mlp':
      return self._policy(x)
    return self._policy_head(self._features(x))

  def value(self, x) -> tf.Tensor:
    """V(x) [N]."""
    if self._torso_name == 'mlp':
      return tf.squeeze(self._value(x), -1)
    return tf.squeeze(self._value_head(self._features(x)), -1)

  @property
  def value_head(self) -> keras.layers.Dense:
    """The value's last layer (one unit)."""
    return self._value.output_layer if self._torso_name == 'mlp' else self._value_head
