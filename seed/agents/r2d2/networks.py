"""The R2D2 Q network: torso, optional LSTM core and a dueling head, in Keras 3 layers.

Architecture (Kapturowski et al., 2019, as in SEED's Atari R2D2): the Nature
torso (convolutions 32/64/64, then a 512-unit dense layer) for [C, H, W] frames or
an MLP for vector observations, an LSTM (512 units by default), then a dueling
head (Wang et al., 2016): value and advantage streams, each with one hidden ReLU
layer, combined as Q = V + A - mean_a A. Its outputs are in the value-rescaled
space: the network learns h(Q) (see seed/losses/value_rescaling.py).

Like the V-trace network it has two calls computing the same function, `step`
(one time step, for inference) and `unroll` (T steps, for the learner); both
reset the LSTM state to zeros for rows whose `done` is True before processing
that step. Image observations come channels first and are moved channels last
inside (TensorFlow's CPU convolutions only run NHWC); uint8 ones are scaled to
[0, 1]. Every variable is created in the constructor, so a tf.train.Checkpoint
finds them all before the first call.
"""
from typing import Sequence

import keras
import tensorflow as tf

from seed.agents.common import networks as shared


class DuelingQNetwork(shared.TorsoNetwork):
  """Torso (+ optional LSTM) + dueling Q head.

  The recurrent state, when `use_lstm`, is the tuple (c, h) of [B, lstm_size]
  float32 arrays; without an LSTM it is the empty tuple.
  """

  def __init__(self, observation_shape: Sequence[int], observation_dtype: str,
               num_actions: int, *, torso: str, mlp_hidden_sizes: Sequence[int],
               use_lstm: bool, lstm_size: int, head_hidden_size: int, seed: int,
               unroll_torso_dtype: str = 'float32', name: str = 'dueling_q'):
    """torso ... unroll_torso_dtype: the R2D2Config fields of those names."""
    super().__init__(observation_shape, observation_dtype, num_actions, torso=torso,
                     mlp_hidden_sizes=mlp_hidden_sizes, use_lstm=use_lstm,
                     lstm_size=lstm_size, seed=seed, initializer='glorot',
                     torso_attribute='_layer_{name}', unroll_torso_dtype=unroll_torso_dtype,
                     name=name)
    self._value_stream = self._stream(int(head_hidden_size), 1, 'value')
    self._advantage_stream = self._stream(int(head_hidden_size), self._num_actions,
                                          'advantage')
    self._build_variables()

  def _own(self, layer):
    """Also holds `layer` in an attribute of its own, and returns it.

    tf.train.Checkpoint only sees layers held directly by an attribute: Keras 3
    wraps lists in its own TrackedList, which the checkpoint skips, so the
    variables of layers kept only in a list would be left out (those of the
    target network entirely, since no optimizer references them).
    """
    setattr(self, f'_layer_{layer.name}', layer)
    return layer

  def _stream(self, hidden_size: int, outputs: int, name: str):
    """One dueling stream: a hidden ReLU layer (none if hidden_size is 0), then linear."""
    layers = []
    if hidden_size:
      layers.append(self._own(keras.layers.Dense(
          hidden_size, activation='relu', name=f'{name}_hidden',
          kernel_initializer=self._glorot())))
    layers.append(self._own(keras.layers.Dense(
        outputs, name=f'{name}_out', kernel_initializer=self._glorot())))
    return layers

  @property
  def num_actions(self) -> int:
    return self._num_actions

  def _head(self, features: tf.Tensor) -> tf.Tensor:
    """[N, F] -> Q [N, A] = V + A - mean_a A."""
    value, advantage = features, features
    for layer in self._value_stream:
      value = layer(value)
    for layer in self._advantage_stream:
      advantage = layer(advantage)
    # Subtracting the mean advantage makes V and A identifiable (Wang et al., 2016).
    return value + advantage - tf.reduce_mean(advantage, axis=-1, keepdims=True)

  def step(self, observation, done, core_state):
    """One time step.

    Args:
      observation: [B, *observation_shape].
      done: [B] bool, the step starts an episode (the LSTM state is reset first).
      core_state: () or (c, h), each [B, lstm_size].

    Returns:
      (q [B, A] float32, new core_state).
    """
    features, new_state = self._core_step(observation, done, core_state)
    return self._head(features), new_state

  def unroll(self, observations, done, core_state):
    """T time steps, the same function as T calls of `step`.

    Args:
      observations: [T, B, *observation_shape], time-major.
      done: [T, B] bool.
      core_state: () or (c, h), each [B, lstm_size]: the state before step 0.

    Returns:
      (q [T, B, A], core_state after step T - 1).
    """
    features, time_batch, final_state = self._core_unroll(observations, done, core_state)
    q = self._head(features)
    return tf.reshape(q, tf.concat([time_batch, [self._num_actions]], 0)), final_state


def burn_in_and_unroll(online: DuelingQNetwork, target: DuelingQNetwork, observations,
                       done, core_state, burn_in_steps: int):
  """Q values of the trained part of sequences, after an R2D2 burn-in.

  The online network runs the first `burn_in_steps` steps from `core_state` and
  only its final state is kept, under tf.stop_gradient: those steps just prime the
  LSTM, and no gradient reaches them (or the stored state). The trained part
  starts from that state. The target network runs every step from `core_state`
  (its own burn-in) and its values are gradient-stopped.

  Args:
    online: the network being trained.
    target: the target network.
    observations: [L + 1, B, ...] time-major, L + 1 > burn_in_steps.
    done: [L + 1, B] bool.
    core_state: () or (c, h), each [B, lstm_size]: the state before step 0.
    burn_in_steps: leading steps to burn in, >= 0.

  Returns:
    (online_q, target_q), each [L + 1 - burn_in_steps, B, A]; online_q differentiable.
  """
  burn = burn_in_steps
  online_state = tuple(core_state)
  if not online.use_lstm:  # Nothing to prime: the burn-in steps are just skipped.
    observations, done, burn = observations[burn:], done[burn:], 0
  if burn:
    _, online_state = online.unroll(observations[:burn], done[:burn], online_state)
    online_state = tuple(tf.stop_gradient(x) for x in online_state)
  online_q, _ = online.unroll(observations[burn:], done[burn:], online_state)
  # One pass over all steps: the target's burn-in is the start of its unroll.
  target_q, _ = target.unroll(observations, done, tuple(core_state))
  return online_q, tf.stop_gradient(target_q[burn:])
