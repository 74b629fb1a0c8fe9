"""PPO's networks: a Gaussian policy with a state-independent log-std, and a value MLP.

Separate torsos for policy and value (no shared features), tanh activations and
orthogonal init with gains sqrt(2) / 0.01 (policy mean) / 1 (value): the MuJoCo
setting of Schulman et al. (2017) and of the well-tuned open implementations.
"""
from typing import Sequence, Tuple

import keras
import tensorflow as tf

from seed.agents import mlp


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
