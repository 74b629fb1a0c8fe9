"""DDPG's networks: the deterministic tanh actor (its critic is seed_axis.StackedCritic,
as SAC's are)."""
from typing import Sequence

import keras
import tensorflow as tf

from seed.agents.common import mlp
from seed.agents.common import seed_axis


class DeterministicActor(keras.layers.Layer):
  """x [N, B, D] -> tanh(MLP(x)) [N, B, A], a unit-space action, seed n with its own
  weights."""

  def __init__(self, observation_size: int, action_size: int, hidden_sizes: Sequence[int], *,
               seeds: Sequence[mlp.SeedStream], name: str = 'actor'):
    super().__init__(name=name)
    self._mlp = seed_axis.StackedMLP(observation_size, hidden_sizes, action_size, seeds=seeds,
                                     name='policy')
    self.built = True

  def call(self, x):
    return tf.tanh(self._mlp(x))
