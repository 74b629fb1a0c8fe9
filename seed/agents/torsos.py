"""Observation torsos shared by the agents' networks: MLP, Nature CNN, IMPALA-shallow."""
from typing import Callable, List, Sequence, Tuple

import keras
import numpy as np
import tensorflow as tf

TORSOS = ('mlp', 'nature', 'impala_shallow')
# 'auto' picks a torso from the observation rank.
TORSO_CHOICES = ('auto',) + TORSOS

# (filters, kernel size, stride) of each convolution, then the dense layer's width.
CONV_SPECS = {
    # Mnih et al. 2015, "Human-level control through deep RL".
    'nature': (((32, 8, 4), (64, 4, 2), (64, 3, 1)), 512),
    # Espeholt et al. 2018, "IMPALA", the shallow model (figure 3, left).
    'impala_shallow': (((16, 8, 4), (32, 4, 2)), 256),
}


def resolve_torso(torso: str, observation_shape: Sequence[int]) -> str:
  """Maps 'auto' to a concrete torso and checks that it fits the observations.

  Args:
    torso: one of TORSO_CHOICES.
    observation_shape: per-env observation shape (without the batch dim).

  Returns:
    One of TORSOS.

  Raises:
    ValueError: for an unknown torso, or an observation rank it cannot take.
  """
  rank = len(observation_shape)
  if torso not in TORSO_CHOICES:
    raise ValueError(f'Unknown torso {torso!r}; accepted: {", ".join(TORSO_CHOICES)}.')
  if torso == 'auto':
    if rank <= 2:
      return 'mlp'
    if rank == 3:
      return 'nature'
    raise ValueError(
        f"torso='auto' has no torso for rank-{rank} observations of shape "
        f'{tuple(observation_shape)}; it takes rank 0-2 (mlp) or rank 3 [C, H, W] '
        "(nature). Pass torso='mlp' to flatten them.")
  if torso in CONV_SPECS and rank != 3:
    raise ValueError(
        f'torso={torso!r} needs channels-first image observations [C, H, W], got '
        f'shape {tuple(observation_shape)}; use torso=\'mlp\' for vector observations.')
  return torso


def build_torso_layers(torso: str, mlp_hidden_sizes: Sequence[int],
                       initializer: Callable[[], keras.initializers.Initializer]
                       ) -> List[keras.layers.Layer]:
  """The layers of a resolved torso; `initializer()` gives each its own initializer.

  The caller must hold each layer in an attribute of its own: tf.train.Checkpoint
  does not follow the lists Keras 3 wraps, so a layer kept only in a list is not
  saved with the model.
  """
  if torso == 'mlp':
    return [keras.layers.Dense(int(size), activation='relu', name=f'mlp_{i}',
                               kernel_initializer=initializer())
            for i, size in enumerate(mlp_hidden_sizes)]
  convs, dense_size = CONV_SPECS[torso]
  layers = [keras.layers.Conv2D(filters, kernel, strides=stride, activation='relu',
                                padding='valid', name=f'conv_{i}',
                                kernel_initializer=initializer())
            for i, (filters, kernel, stride) in enumerate(convs)]
  return layers + [keras.layers.Flatten(name='flatten'),
                   keras.layers.Dense(dense_size, activation='relu', name='fc',
                                      kernel_initializer=initializer())]


def apply_torso(layers: Sequence[keras.layers.Layer], torso: str,
                observation_shape: Sequence[int], observation: tf.Tensor) -> tf.Tensor:
  """[N, *observation_shape] -> [N, features] float32.

  uint8 observations (frames) are scaled by 1/255; image torsos take channels-first
  observations and transpose them to NHWC; the MLP flattens.
  """
  x = tf.cast(observation, tf.float32)
  if observation.dtype == tf.uint8:
    x = x * (1.0 / 255.0)
  if torso == 'mlp':
    x = tf.reshape(x, [tf.shape(x)[0], int(np.prod(observation_shape))])
  else:
    x = tf.transpose(x, [0, 2, 3, 1])  # [N, C, H, W] -> [N, H, W, C].
  for layer in layers:
    x = layer(x)
  return x


class TorsoNetworkMixin:
  """Methods the agents' networks share; they set `_seed_stream` (a NumPy
  Generator), `_torso_name`, `_torso_layers`, `_observation_shape`, `_use_lstm`
  and `_lstm_size`. Methods only: the layers stay attributes of each network,
  so checkpoints keep their layout."""

  def _next_seed(self) -> int:
    return int(self._seed_stream.integers(2**31 - 1))

  def _glorot(self):
    return keras.initializers.GlorotUniform(seed=self._next_seed())

  @property
  def torso(self) -> str:
    """The concrete torso in use (never 'auto')."""
    return self._torso_name

  @property
  def use_lstm(self) -> bool:
    return self._use_lstm

  def initial_state(self, batch_size: int) -> Tuple[tf.Tensor, ...]:
    """Zero recurrent state (c, h) for `batch_size` rows; () without an LSTM."""
    if not self._use_lstm:
      return ()
    zeros = tf.zeros([batch_size, self._lstm_size], tf.float32)
    return (zeros, zeros)

  def _torso(self, observation: tf.Tensor) -> tf.Tensor:
    """[N, *observation_shape] -> [N, features] float32."""
    return apply_torso(self._torso_layers, self._torso_name, self._observation_shape,
                       observation)
