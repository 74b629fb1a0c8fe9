"""SAC's networks: the tanh-Gaussian actor and the temperature alpha (the critics are
seed_axis.StackedCritic, as DDPG's is)."""
from typing import Sequence

import keras
import tensorflow as tf

from seed.agents.common import mlp
from seed.agents.common import seed_axis
from seed.losses import distributions


class TanhGaussianActor(keras.layers.Layer):
  """x [N, B, D] -> (mean, log_std [N, B, A] clipped to [-10, 2]) before the tanh, seed n
  with its own weights."""

  def __init__(self, observation_size: int, action_size: int, hidden_sizes: Sequence[int], *,
               seeds: Sequence[mlp.SeedStream], name: str = 'actor'):
    super().__init__(name=name)
    self._action_size = action_size
    self._mlp = seed_axis.StackedMLP(observation_size, hidden_sizes, 2 * action_size,
                                     seeds=seeds, name='policy')
    self.built = True

  def call(self, x):
    mean, log_std = tf.split(self._mlp(x), 2, axis=-1)
    return mean, distributions.clip_log_std(log_std)


class Temperature(keras.layers.Layer):
  """SAC's alpha, one per seed [N], held as its log so that it stays positive."""

  def __init__(self, initial_alpha: float, num_seeds: int, name: str = 'temperature'):
    super().__init__(name=name)
    self.log_alpha = self.add_weight(
        shape=(num_seeds,),
        initializer=keras.initializers.Constant(float(tf.math.log(initial_alpha))),
        name='log_alpha')
    self.built = True

  def alpha(self):
    return tf.exp(tf.convert_to_tensor(self.log_alpha))
