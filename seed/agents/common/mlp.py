"""Multilayer perceptrons for vector observations: the continuous-control agents' networks.

Each layer is held in an attribute of its own (tf.train.Checkpoint does not follow
the lists Keras 3 wraps), and every variable is created in the constructor, so a
checkpoint finds them all before the first call.
"""
from typing import Callable, Optional, Sequence, Tuple, Union

import keras
import numpy as np
import tensorflow as tf

from seed.agents.common.choices import ACTIVATIONS, INITIALIZERS


class SeedStream:
  """Hands out a fresh integer seed per initializer.

  A fixed integer seed makes a Keras 3 initializer return the same values on every
  call, so each layer draws its own seed from one stream seeded by the agent.
  """

  def __init__(self, seed: Union[int, Tuple[int, ...]]):
    """`seed`: an int, or a tuple of them (e.g. (the config's seed, a reset's number))."""
    self._rng = np.random.default_rng(seed)

  def next(self) -> int:
    return int(self._rng.integers(2**31 - 1))

  def initializer(self, kind: str, gain: float = 1.0) -> keras.initializers.Initializer:
    """'glorot' (uniform) or 'orthogonal' with `gain` (PPO's usual init)."""
    if kind == 'glorot':
      return keras.initializers.GlorotUniform(seed=self.next())
    if kind == 'orthogonal':
      return keras.initializers.Orthogonal(gain=gain, seed=self.next())
    raise ValueError(f'Unknown initializer {kind!r}; accepted: {", ".join(INITIALIZERS)}.')


class MLP(keras.layers.Layer):
  """x [N, in] -> hidden layers -> [N, output_size] (no output activation).

  `initializer` is 'glorot' or 'orthogonal'; with 'orthogonal' the hidden layers use
  gain sqrt(2) and the output layer `output_gain` (PPO: 0.01 for the policy mean, so
  the first actions stay near 0; 1.0 for the value), with zero biases throughout.
  `hidden_sizes` are checked by the agent's config (config_checks.widths).
  """

  def __init__(self, input_size: int, hidden_sizes: Sequence[int], output_size: int, *,
               seeds: SeedStream, activation: str = 'relu', initializer: str = 'glorot',
               output_gain: float = 1.0, name: str = 'mlp'):
    super().__init__(name=name)
    if activation not in ACTIVATIONS:
      raise ValueError(f'Unknown activation {activation!r}; accepted: {", ".join(ACTIVATIONS)}.')
    self._num_hidden = len(hidden_sizes)
    for i, size in enumerate(hidden_sizes):
      setattr(self, f'_hidden_{i}', keras.layers.Dense(
          int(size), activation=activation, name=f'hidden_{i}',
          kernel_initializer=seeds.initializer(initializer, gain=float(np.sqrt(2.0)))))
    self._output = keras.layers.Dense(
        int(output_size), name='output',
        kernel_initializer=seeds.initializer(initializer, gain=output_gain))
    self(tf.zeros([1, int(input_size)]))
    self.built = True

  @property
  def output_layer(self) -> keras.layers.Dense:
    """The last (linear) layer: PopArt rescales it."""
    return self._output

  def call(self, x):
    x = tf.convert_to_tensor(x, tf.float32)
    for i in range(self._num_hidden):
      x = getattr(self, f'_hidden_{i}')(x)
    return self._output(x)


class Critic(keras.layers.Layer):
  """Q(x, a): an MLP on the concatenated observation and action, [N, obs] x [N, A] -> [N]."""

  def __init__(self, observation_size: int, action_size: int, hidden_sizes: Sequence[int], *,
               seeds: SeedStream, name: str = 'critic'):
    super().__init__(name=name)
    self._mlp = MLP(observation_size + action_size, hidden_sizes, 1, seeds=seeds, name='q')
    self.built = True

  def call(self, observation, action):
    x = tf.concat([tf.convert_to_tensor(observation, tf.float32),
                   tf.convert_to_tensor(action, tf.float32)], axis=-1)
    return tf.squeeze(self._mlp(x), -1)


def flat_size(shape: Sequence[int]) -> int:
  return int(np.prod(shape, dtype=np.int64))


def flatten_observation(observation, observation_size: int,
                        normalize: Optional[Callable] = None) -> tf.Tensor:
  """[N, *obs_shape] -> [N, observation_size] float32, normalised if `normalize` is given."""
  x = tf.reshape(tf.cast(observation, tf.float32), [-1, observation_size])
  return normalize(x) if normalize is not None else x
