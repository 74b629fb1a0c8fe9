"""Networks of N independent agents (seeds) trained together: a leading seed axis.

One variable per layer holds every seed's weights ([N, in, out] kernels, [N, out]
biases), and one einsum computes all seeds at once, so N seeds cost one batched
matmul per layer rather than N small ones. Inputs and outputs carry the seed axis
first: [N, B, ...].

Seed k's weights are drawn from its own seed stream exactly as an mlp.MLP (or
mlp.Critic) of one seed would draw them, layer by layer in the same order, so seed k
of an N-seed agent starts where a one-seed agent of seed k does, and with N = 1 the
numbers are a one-seed network's.
"""
from typing import Sequence

import keras
import numpy as np
import tensorflow as tf

from seed.agents.common import mlp


class StackedMLP(keras.layers.Layer):
  """x [N, B, in] -> hidden layers -> [N, B, out], seed k with its own weights.

  Glorot-uniform kernels (the initializer SAC's and DDPG's MLPs use), zero biases.
  """

  def __init__(self, input_size: int, hidden_sizes: Sequence[int], output_size: int, *,
               seeds: Sequence[mlp.SeedStream], activation: str = 'relu', name: str = 'mlp'):
    super().__init__(name=name)
    if activation not in mlp.ACTIVATIONS:
      raise ValueError(f'Unknown activation {activation!r}; accepted: '
                       f'{", ".join(mlp.ACTIVATIONS)}.')
    self._activation = keras.activations.get(activation)
    sizes = [int(input_size), *(int(s) for s in hidden_sizes), int(output_size)]
    self._num_layers = len(sizes) - 1
    for i, shape in enumerate(zip(sizes[:-1], sizes[1:])):
      # One draw per seed stream per layer, in mlp.MLP's order (hidden layers, output).
      kernel = np.stack([np.asarray(stream.initializer('glorot')(shape, dtype='float32'))
                         for stream in seeds])
      # Attributes, not a list: tf.train.Checkpoint does not follow Keras 3's lists.
      setattr(self, f'_kernel_{i}', self.add_weight(
          shape=kernel.shape, initializer=keras.initializers.Constant(kernel),
          name=f'kernel_{i}'))
      setattr(self, f'_bias_{i}', self.add_weight(
          shape=(len(seeds), shape[1]), initializer='zeros', name=f'bias_{i}'))
    self.built = True

  def call(self, x):
    x = tf.convert_to_tensor(x, tf.float32)
    for i in range(self._num_layers):
      kernel, bias = getattr(self, f'_kernel_{i}'), getattr(self, f'_bias_{i}')
      x = tf.einsum('nbi,nio->nbo', x, kernel) + bias[:, tf.newaxis, :]
      if i < self._num_layers - 1:
        x = self._activation(x)
    return x


class StackedCritic(keras.layers.Layer):
  """Q(x, a) of every seed: [N, B, obs] x [N, B, A] -> [N, B] (mlp.Critic's, stacked)."""

  def __init__(self, observation_size: int, action_size: int, hidden_sizes: Sequence[int], *,
               seeds: Sequence[mlp.SeedStream], name: str = 'critic'):
    super().__init__(name=name)
    self._mlp = StackedMLP(observation_size + action_size, hidden_sizes, 1, seeds=seeds,
                           name='q')
    self.built = True

  def call(self, observation, action):
    x = tf.concat([tf.convert_to_tensor(observation, tf.float32),
                   tf.convert_to_tensor(action, tf.float32)], axis=-1)
    return tf.squeeze(self._mlp(x), -1)


def for_every_seed(x, num_seeds: int):
  """[B, ...] -> [N, B, ...]: the same inputs for every seed (acting picks one after)."""
  x = tf.convert_to_tensor(x)
  return tf.broadcast_to(x[tf.newaxis], tf.concat([[num_seeds], tf.shape(x)], 0))


def pick_seed(values, seed_index):
  """values [N, B, ...] and seed_index [B] (or one for all) -> [B, ...]: row b from seed
  seed_index[b]."""
  rows = tf.range(tf.shape(values)[1], dtype=tf.int32)
  seed_index = tf.broadcast_to(tf.cast(seed_index, tf.int32), tf.shape(rows))
  return tf.gather_nd(values, tf.stack([seed_index, rows], axis=1))


class SeedGenerators:
  """One tf.random.Generator per seed, drawing like one Generator with a seed axis.

  `normal(shape)` and `uniform(shape, ...)` with shape [N, ...] stack N draws of
  [...], one from each seed's generator: seed k gets the numbers its generator alone
  would give (so they can stand in for a Generator wherever the shape leads with N).
  """

  def __init__(self, seeds: Sequence[int]):
    self._generators = [tf.random.Generator.from_seed(int(seed)) for seed in seeds]

  def normal(self, shape, dtype=tf.float32):
    return tf.stack([g.normal(shape[1:], dtype=dtype) for g in self._generators])

  def uniform(self, shape, minval=0.0, maxval=None, dtype=tf.float32):
    return tf.stack([g.uniform(shape[1:], minval, maxval, dtype=dtype)
                     for g in self._generators])

  def checkpoint_items(self, name: str):
    """{name: seed 0's generator, name_k: seed k's}: one seed keeps the names it had."""
    return {name if k == 0 else f'{name}_{k}': g for k, g in enumerate(self._generators)}
