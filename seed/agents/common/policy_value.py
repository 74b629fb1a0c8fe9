"""Policy + value networks for the V-trace agent (and ACER's policy + Q network),
built from Keras 3 layers.

One network gives the policy logits [B, A] and the baseline V(x) [B] for a batch
of observations, optionally through an LSTM core; with `q_head` the second head
gives Q(x, .) [B, A] instead (ACER), and with `q_atoms` = N > 0 the logits of a
categorical return distribution over N atoms per action [B, A, N] (Reactor). It
exposes two calls that
compute the same function:
  * `step`: one time step for a batch, used by inference on the actors' behalf;
  * `unroll`: T time steps at once, used by the learner, which must recompute
    exactly the logits the actors acted on (that is what makes rho = 1 on-policy),
    unless `unroll_torso_dtype` runs its torso in bfloat16 (then up to its rounding).
Both reset the LSTM state to zeros for rows whose `done` is True *before* they
process that step, since such a step holds the first observation of an episode.

Image torsos take observations channels first, [C, H, W] per env (the Atari
wrapper stacks 4 frames first: uint8 [4, 84, 84]), or channels last [H, W, C]
(MinAtar, gymnasium's images); see seed.agents.common.torsos. uint8 observations are
scaled to [0, 1]; other dtypes (bool, float) are only cast to float32.

Every variable is created eagerly in the constructor (on a dummy batch of one),
so `tf.train.Checkpoint` finds them all without a first call.
"""
from typing import Sequence, Tuple

import keras
import numpy as np
import tensorflow as tf

from seed.agents.common import torsos


def from_config(env_spec, config, **heads) -> 'PolicyValueNetwork':
  """The network an agent config describes for `env_spec`: the config's torso,
  mlp_hidden_sizes, use_lstm, lstm_size, seed and initializer fields (V-trace's, ACER's
  and Reactor's configs share them); `heads`: q_head, q_atoms, unroll_torso_dtype, name."""
  return PolicyValueNetwork(
      env_spec.observation_shape, env_spec.observation_dtype, env_spec.num_actions,
      torso=config.torso, mlp_hidden_sizes=config.mlp_hidden_sizes,
      use_lstm=config.use_lstm, lstm_size=config.lstm_size, seed=config.seed,
      initializer=config.initializer, **heads)


class PolicyValueNetwork(torsos.TorsoNetworkMixin, keras.layers.Layer):
  """Torso (+ optional LSTM) + policy and baseline heads.

  The recurrent state, when `use_lstm`, is the tuple (c, h) of [B, lstm_size]
  float32 arrays; without an LSTM it is the empty tuple.
  """

  def __init__(self, observation_shape: Sequence[int], observation_dtype: str,
               num_actions: int, *, torso: str, mlp_hidden_sizes: Sequence[int],
               use_lstm: bool, lstm_size: int, seed: int, initializer: str = 'glorot',
               q_head: bool = False, q_atoms: int = 0, unroll_torso_dtype: str = 'float32',
               lstm_input_layer_norm: bool = False, name: str = 'policy_value'):
    """torso, mlp_hidden_sizes, use_lstm, lstm_size, seed, initializer,
    unroll_torso_dtype: the VTraceConfig fields. q_head: the second head gives Q(x, .)
    [B, A] (ACER), not V(x); q_atoms > 0 (with q_head): return-distribution logits
    [B, A, q_atoms] (Reactor). lstm_input_layer_norm: layer-normalise the torso's
    features on their way into the LSTM (Reactor on Atari)."""
    super().__init__(name=name)
    self._init_core(observation_shape, observation_dtype, num_actions, torso, use_lstm,
                    lstm_size, seed, unroll_torso_dtype)
    orthogonal = initializer == 'orthogonal'

    def init(gain: float):
      # Glorot ignores the gain; each call draws the next seed of the stream.
      if orthogonal:
        return keras.initializers.Orthogonal(gain=gain, seed=self._next_seed())
      return self._glorot()

    self._torso_layers = torsos.build_torso_layers(self._torso_name, mlp_hidden_sizes,
                                                   lambda: init(np.sqrt(2.0)))
    # tf.train.Checkpoint does not follow Keras 3's wrapped lists: without an
    # attribute of its own, a torso layer was saved only by position through the
    # optimizer, and a restore of the model alone silently lost it.
    for i, layer in enumerate(self._torso_layers):
      setattr(self, f'_torso_layer_{i}', layer)
    self._lstm = self._make_lstm()
    self._lstm_input_norm = self._make_lstm_input_norm(lstm_input_layer_norm)
    self._policy_head = keras.layers.Dense(
        self._num_actions, name='policy_logits', kernel_initializer=init(0.01))
    self._q_head = bool(q_head)
    self._q_atoms = int(q_atoms)
    if self._q_atoms and not self._q_head:
      raise ValueError(f'q_atoms = {q_atoms} needs q_head=True')
    width = self._num_actions * max(self._q_atoms, 1) if q_head else 1
    self._baseline_head = keras.layers.Dense(
        width, name='q_values' if q_head else 'baseline', kernel_initializer=init(1.0))
    self._build_variables()

  @property
  def baseline_head(self) -> keras.layers.Dense:
    """The Dense layer giving the baseline (PopArt rescales it)."""
    return self._baseline_head

  def _heads(self, features: tf.Tensor) -> Tuple[tf.Tensor, tf.Tensor]:
    """[N, F] -> (logits [N, A], baseline [N], or with q_head Q [N, A] or with q_atoms
    [N, A, q_atoms])."""
    values = self._baseline_head(features)
    if self._q_atoms:
      values = tf.reshape(values, [-1, self._num_actions, self._q_atoms])
    return self._policy_head(features), values if self._q_head else tf.squeeze(values, -1)

  def step(self, observation, done, core_state):
    """One time step.

    Args:
      observation: [B, *observation_shape].
      done: [B] bool, the step starts an episode (the LSTM state is reset first).
      core_state: () or (c, h), each [B, lstm_size].

    Returns:
      (logits [B, A] float32, baseline [B] (Q [B, A] with q_head) float32, new core_state).
    """
    features, new_state = self._core_step(observation, done, core_state)
    logits, baseline = self._heads(features)
    return logits, baseline, new_state

  def unroll(self, observations, done, core_state):
    """T time steps, the same function as T calls of `step`.

    Args:
      observations: [T, B, *observation_shape], time-major.
      done: [T, B] bool.
      core_state: () or (c, h), each [B, lstm_size]: the state before step 0.

    Returns:
      (logits [T, B, A], baseline [T, B] (Q [T, B, A] with q_head), core_state after
      step T - 1).
    """
    features, time_batch, final_state = self._core_unroll(observations, done, core_state)
    logits, baseline = self._heads(features)
    logits = tf.reshape(logits, tf.concat([time_batch, [self._num_actions]], 0))
    baseline = tf.reshape(baseline, tf.concat([time_batch, tf.shape(baseline)[1:]], 0))
    return logits, baseline, final_state
