"""The networks the agents share: the observation torsos (MLP, Nature CNN, IMPALA-shallow,
a small CNN for grid images), the torso + optional LSTM core of V-trace's, ACER's,
Reactor's and R2D2's networks (`TorsoNetwork`), and the policy + value network of the
first three (`PolicyValueNetwork`). PPO builds its own from the torso layers.

Images may come channels first [C, H, W] (seed's Atari stacks: uint8 [4, 84, 84]) or
channels last [H, W, C] (gymnasium's Box images, MinAtar); `image_layout` tells which
from the shape, and the torso moves channels last inside, because TensorFlow's CPU
convolutions only run NHWC. Any dtype: uint8 is scaled by 1/255, bool and float are cast
to float32.

A network computes the same function two ways: `step`, one time step for a batch (the
actors' inference), and `unroll`, T steps at once (the learner, which must recompute
exactly the outputs the actors acted on: that is what makes V-trace's rho = 1 on-policy,
unless `unroll_torso_dtype` runs the torso in bfloat16, then up to its rounding). Both
reset the LSTM state to zeros for rows whose `done` is True *before* they process that
step, since such a step holds the first observation of an episode. Every variable is
created in the constructor (on a dummy batch of one), so `tf.train.Checkpoint` finds them
all without a first call.
"""
from typing import Callable, List, Sequence, Tuple

import keras
import numpy as np
import tensorflow as tf

from seed.agents.common import native_bfloat16
from seed.agents.common import strided_conv
from seed.agents.common.choices import TORSO_CHOICES, TORSO_DTYPES

# (filters, kernel size, stride) of each convolution, then the dense layer's width.
CONV_SPECS = {
    # Mnih et al. 2015, "Human-level control through deep RL".
    'nature': (((32, 8, 4), (64, 4, 2), (64, 3, 1)), 512),
    # Espeholt et al. 2018, "IMPALA", the shallow model (figure 3, left).
    'impala_shallow': (((16, 8, 4), (32, 4, 2)), 256),
    # Young and Tian 2019, "MinAtar": one 3 x 3 convolution at stride 1, for grids too
    # small for the 8 x 8 stride-4 first layers above.
    'small_conv': (((16, 3, 1),), 128),
}
# The smallest image side each conv torso takes (its convolutions, VALID padding).
MIN_IMAGE_SIDE = {'nature': 36, 'impala_shallow': 20, 'small_conv': 3}


def image_layout(observation_shape: Sequence[int]) -> str:
  """'channels_first' ([C, H, W]) or 'channels_last' ([H, W, C]) for a rank-3 image:
  the channels are the smaller of the two end axes (first on a tie, as seed's Atari
  stacks [4, 84, 84])."""
  if len(observation_shape) != 3:
    raise ValueError(f'an image is rank 3, got shape {tuple(observation_shape)}')
  return 'channels_last' if observation_shape[-1] < observation_shape[0] else 'channels_first'


def image_sides(observation_shape: Sequence[int]) -> Tuple[int, int]:
  """(height, width) of a rank-3 image in either layout."""
  if image_layout(observation_shape) == 'channels_last':
    return tuple(observation_shape[:2])
  return tuple(observation_shape[1:])


def resolve_torso(torso: str, observation_shape: Sequence[int]) -> str:
  """Maps 'auto' to a concrete torso and checks that it fits the observations.

  'auto' picks from the observations: an MLP for rank 0-2 (vectors, small matrices);
  for rank 3 (an image in either layout, see `image_layout`) the Nature CNN when both
  sides are at least 36, the small CNN when they are at least 3, an MLP below that.

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
      side = min(image_sides(observation_shape))
      return ('nature' if side >= MIN_IMAGE_SIDE['nature'] else
              'small_conv' if side >= MIN_IMAGE_SIDE['small_conv'] else 'mlp')
    raise ValueError(
        f"torso='auto' has no torso for rank-{rank} observations of shape "
        f'{tuple(observation_shape)}; it takes rank 0-2 (mlp) or rank 3 images, [C, H, W] '
        "or [H, W, C] (a conv torso). Pass torso='mlp' to flatten them.")
  if torso in CONV_SPECS:
    if rank != 3:
      raise ValueError(
          f'torso={torso!r} needs image observations, [C, H, W] or [H, W, C], got '
          f'shape {tuple(observation_shape)}; use torso=\'mlp\' for vector observations.')
    if min(image_sides(observation_shape)) < MIN_IMAGE_SIDE[torso]:
      fits = [name for name, side in MIN_IMAGE_SIDE.items()
              if min(image_sides(observation_shape)) >= side]
      raise ValueError(
          f'torso={torso!r} needs image sides of at least {MIN_IMAGE_SIDE[torso]}, got '
          f'{image_sides(observation_shape)} (observation shape {tuple(observation_shape)}); '
          f"accepted for it: {', '.join(repr(n) for n in fits + ['mlp'])}, or 'auto'.")
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


def torso_input(torso: str, observation_shape: Sequence[int], observation: tf.Tensor,
                compute_dtype: str = 'float32') -> tf.Tensor:
  """[N, *observation_shape] -> what the torso's first layer takes, in `compute_dtype`.

  uint8 observations (frames) are scaled by 1/255, bool and float ones cast; image
  torsos move channels-first observations to NHWC; the MLP flattens.
  """
  dtype = tf.as_dtype(compute_dtype)
  x = observation
  if torso != 'mlp' and image_layout(observation_shape) == 'channels_first':
    # [N, C, H, W] -> [N, H, W, C] before the cast: uint8 frames move a quarter of the
    # bytes float32 ones would (V-trace's batch of 1,032 Atari frames: 137 ms against
    # 227 on a 2-core AVX2 host, docs/performance.md).
    x = tf.transpose(x, [0, 2, 3, 1])
  x = tf.cast(x, dtype)
  if observation.dtype == tf.uint8:
    x = x * tf.constant(1.0 / 255.0, dtype)
  if torso == 'mlp':
    return tf.reshape(x, [tf.shape(x)[0], int(np.prod(observation_shape))])
  return x


def apply_torso(layers: Sequence[keras.layers.Layer], torso: str,
                observation_shape: Sequence[int], observation: tf.Tensor,
                compute_dtype: str = 'float32') -> tf.Tensor:
  """[N, *observation_shape] -> [N, features] float32, the input made by `torso_input`.

  With `compute_dtype` 'bfloat16' the layers' products run in bfloat16 on their float32
  variables (cast on the way in; gradients reach the variables in float32) and the
  features come back as float32: bfloat16 keeps float32's range, so no loss scaling is
  needed.
  """
  return apply_torso_layers(layers, torso_input(torso, observation_shape, observation,
                                                compute_dtype))


def apply_torso_layers(layers: Sequence[keras.layers.Layer], x: tf.Tensor) -> tf.Tensor:
  """The torso's layers on what `torso_input` made, [N, ...] in its compute dtype ->
  [N, features] float32."""
  for index, layer in enumerate(layers):
    if x.dtype != tf.float32:
      x = _apply_layer_in(layer, x)
    elif index == 0 and _is_strided_valid_conv(layer):
      x = _apply_strided_input_conv(layer, x)
    else:
      x = layer(x)
  return tf.cast(x, tf.float32)


def _is_strided_valid_conv(layer: keras.layers.Layer) -> bool:
  """A built NHWC Conv2D of stride > 1, VALID padding and no dilation: the torsos' first
  layer, whose kernel gradient seed.agents.common.strided_conv computes faster."""
  return (isinstance(layer, keras.layers.Conv2D) and layer.built
          and layer.padding == 'valid' and layer.data_format == 'channels_last'
          and tuple(layer.dilation_rate) == (1, 1) and layer.strides[0] == layer.strides[1] > 1)


def _apply_strided_input_conv(layer: keras.layers.Conv2D, x: tf.Tensor) -> tf.Tensor:
  """`layer(x)`, its kernel's gradient by strided_conv (the same sum, another op)."""
  y = strided_conv.conv2d_valid(x, tf.convert_to_tensor(layer.kernel), layer.strides[0])
  if layer.use_bias:
    y = tf.nn.bias_add(y, layer.bias)
  return layer.activation(y)


def torso_layer_outputs(layers: Sequence[keras.layers.Layer], torso: str,
                        observation) -> List[Tuple[str, tf.Tensor]]:
  """Each torso layer's float32 output for observations [N, *observation_shape], by layer
  name, in order (Flatten's left out): the torso as `apply_torso` runs it, every step
  kept. For diagnostics (seed diagnose)."""
  observation = tf.convert_to_tensor(observation)
  x = torso_input(torso, observation.shape[1:], observation)
  outputs = []
  for layer in layers:
    x = layer(x)
    if not isinstance(layer, keras.layers.Flatten):
      outputs.append((layer.name, x))
  return outputs


def _apply_layer_in(layer: keras.layers.Layer, x: tf.Tensor) -> tf.Tensor:
  """What `layer(x)` computes, in x's dtype (a float32-policy Keras layer would cast x
  back to float32). Covers the layers build_torso_layers makes."""
  if isinstance(layer, keras.layers.Flatten):
    return tf.reshape(x, [tf.shape(x)[0], -1])
  if not isinstance(layer, (keras.layers.Conv2D, keras.layers.Dense)):
    raise TypeError(f'no {x.dtype.name} form of the torso layer {layer.name!r} '
                    f'({type(layer).__name__})')
  kernel, bias = tf.cast(layer.kernel, x.dtype), tf.cast(layer.bias, x.dtype)
  if isinstance(layer, keras.layers.Conv2D):
    y = tf.nn.conv2d(x, kernel, strides=layer.strides, padding=layer.padding.upper())
  else:
    y = tf.matmul(x, kernel)
  return layer.activation(tf.nn.bias_add(y, bias))


class TorsoNetwork(keras.layers.Layer):
  """The torso and optional LSTM core of a network; a subclass adds its heads, `step`
  and `unroll` (from `_core_step` and `_core_unroll`), and calls `_build_variables` last.

  Its layers draw their initializer seeds from one stream in a fixed order (the torso's
  layers, the LSTM's, then the subclass's heads), so the order fixes the initial weights.
  Each torso layer is held under an attribute of its own, named by `torso_attribute`
  (`{index}` and `{name}` filled in): tf.train.Checkpoint does not follow Keras 3's
  wrapped lists, so a layer kept only in one would not be saved, and the name fixes the
  checkpoint's layout.
  """

  def __init__(self, observation_shape: Sequence[int], observation_dtype: str,
               num_actions: int, *, torso: str, mlp_hidden_sizes: Sequence[int],
               use_lstm: bool, lstm_size: int, seed: int, initializer: str,
               torso_attribute: str, unroll_torso_dtype: str = 'float32',
               lstm_input_layer_norm: bool = False, name: str):
    """initializer: 'glorot' or 'orthogonal' (the torso's with gain sqrt(2));
    lstm_input_layer_norm: layer-normalise the torso's features on their way into the
    LSTM. The rest as the agents' configs name them."""
    super().__init__(name=name)
    self._observation_shape = tuple(int(d) for d in observation_shape)
    self._observation_dtype = tf.as_dtype(np.dtype(observation_dtype))
    self._num_actions = int(num_actions)
    self._torso_name = resolve_torso(torso, self._observation_shape)
    self._use_lstm = bool(use_lstm)
    self._lstm_size = int(lstm_size)
    if unroll_torso_dtype not in TORSO_DTYPES:
      raise ValueError(f'Unknown unroll_torso_dtype {unroll_torso_dtype!r}; accepted: '
                       f'{", ".join(TORSO_DTYPES)}.')
    self._unroll_torso_dtype = native_bfloat16.resolve_torso_dtype(unroll_torso_dtype)
    # A fixed integer seed makes a Keras 3 initializer return the same values on
    # every call, so each layer draws its own seed from this stream.
    self._seed_stream = np.random.default_rng(seed)
    self._orthogonal = initializer == 'orthogonal'
    self._torso_layers = build_torso_layers(self._torso_name, mlp_hidden_sizes,
                                            lambda: self._initializer(np.sqrt(2.0)))
    for index, layer in enumerate(self._torso_layers):
      setattr(self, torso_attribute.format(index=index, name=layer.name), layer)
    self._lstm = None
    if self._use_lstm:
      self._lstm = keras.layers.LSTMCell(
          self._lstm_size, name='lstm', kernel_initializer=self._glorot(),
          recurrent_initializer=keras.initializers.Orthogonal(seed=self._next_seed()))
    # Made after the LSTM, the normalisation draws no seed: the other layers' initial
    # weights are the same with it and without.
    self._lstm_input_norm = None
    if lstm_input_layer_norm:
      if not self._use_lstm:
        raise ValueError('lstm_input_layer_norm = True needs use_lstm = True: it normalises '
                         'the LSTM\'s input.')
      self._lstm_input_norm = keras.layers.LayerNormalization(name='lstm_input_norm')

  def _initializer(self, gain: float):
    """The next initializer of the stream: orthogonal with `gain`, or Glorot (no gain)."""
    if self._orthogonal:
      return keras.initializers.Orthogonal(gain=gain, seed=self._next_seed())
    return self._glorot()

  def step(self, observation, done, core_state):
    raise NotImplementedError

  def unroll(self, observations, done, core_state):
    raise NotImplementedError

  def _build_variables(self):
    """Creates every variable now, in a fixed order, with one step on a dummy batch.

    Optimizer slots are saved by position and a target network is copied from its
    online twin by position, so two networks with one config must list variables
    alike; and tf.train.Checkpoint then finds them all before a first call.
    """
    self.step(tf.zeros((1,) + self._observation_shape, self._observation_dtype),
              tf.zeros([1], tf.bool), self.initial_state(1))
    self.built = True

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
    """[N, *observation_shape] -> [N, features] float32, in float32 (one step: acting;
    an unroll's compute dtype applies through `unroll_torso_inputs`)."""
    return apply_torso(self._torso_layers, self._torso_name, self._observation_shape,
                       observation)

  def layer_outputs(self, observation) -> List[Tuple[str, tf.Tensor]]:
    """Each torso layer's output for [N, *observation_shape] (Flatten's left out),
    then, with an LSTM, the LSTM's input features and its gates' inputs from them,
    W x + b [N, 4 * lstm_size] in Keras' order (input, forget, cell, output) without
    the recurrent part. For diagnostics (seed diagnose): a layer whose units are
    all silent, or an LSTM whose gates' inputs are beyond |5| (sigmoid and tanh
    saturated), passes no gradient down."""
    outputs = torso_layer_outputs(self._torso_layers, self._torso_name, observation)
    if self._use_lstm:
      features = self._lstm_input(outputs[-1][1])
      outputs.append(('lstm_input', features))
      outputs.append(('lstm_gate_inputs',
                      tf.matmul(features, self._lstm.kernel) + self._lstm.bias))
    return outputs

  def _lstm_input(self, features):
    """The torso's features [N, F] as the LSTM reads them: layer-normalised when the
    network has `_lstm_input_norm`. Rows are independent, so an unroll normalises all
    its T * B rows at once, outside the scan."""
    if self._lstm_input_norm is None:
      return features
    return self._lstm_input_norm(features)

  def _lstm_step(self, features, done, state):
    """One LSTM step with the state zeroed where `done`; returns (output, (c, h))."""
    c, h = state
    reset = tf.expand_dims(tf.convert_to_tensor(done, tf.bool), -1)
    c = tf.where(reset, tf.zeros_like(c), c)
    h = tf.where(reset, tf.zeros_like(h), h)
    output, (new_h, new_c) = self._lstm(features, [h, c])
    return output, (new_c, new_h)

  def _core_step(self, observation, done, core_state):
    """Torso then LSTM for one time step.

    Args:
      observation: [B, *observation_shape].
      done: [B] bool, the step starts an episode (the LSTM state is reset first).
      core_state: () or (c, h), each [B, lstm_size].

    Returns:
      (features [B, F], new core_state).
    """
    features = self._torso(tf.convert_to_tensor(observation))
    if not self._use_lstm:
      return features, ()
    return self._lstm_step(self._lstm_input(features), done, tuple(core_state))

  def _core_unroll(self, observations, done, core_state):
    """Torso then LSTM for T time steps, the same function as T `_core_step` calls
    (up to bfloat16's rounding when `unroll_torso_dtype` is 'bfloat16').

    Args:
      observations: [T, B, *observation_shape], time-major.
      done: [T, B] bool.
      core_state: () or (c, h), each [B, lstm_size]: the state before step 0.

    Returns:
      (features [T * B, F] time-major, time_batch [2] = (T, B), core_state after
      step T - 1).
    """
    return self._core_unroll_torso_inputs(self.unroll_torso_inputs(observations), done,
                                          core_state)

  def unroll_torso_inputs(self, observations) -> tf.Tensor:
    """[T, B, *observation_shape] -> what the torso's first layer takes for each step,
    [T, B, ...] in the unroll's compute dtype (frames cast, scaled by 1/255 and moved to
    NHWC). An agent that unrolls the same steps several times (epochs of minibatches)
    makes them once and takes minibatches of them: the same numbers, without converting
    every frame again for each update."""
    observations = tf.convert_to_tensor(observations)
    time_batch = tf.shape(observations)[:2]
    rows = torso_input(self._torso_name, self._observation_shape,
                       tf.reshape(observations, (-1,) + self._observation_shape),
                       self._unroll_torso_dtype)
    return tf.reshape(rows, tf.concat([time_batch, rows.shape[1:]], 0))

  def _core_unroll_torso_inputs(self, torso_inputs, done, core_state):
    """`_core_unroll` from `unroll_torso_inputs`' [T, B, ...]."""
    torso_inputs = tf.convert_to_tensor(torso_inputs)
    done = tf.convert_to_tensor(done, tf.bool)
    time_batch = tf.shape(torso_inputs)[:2]
    # The torso has no memory, so all T * B rows go through it in one batch.
    features = apply_torso_layers(
        self._torso_layers, tf.reshape(torso_inputs, (-1,) + tuple(torso_inputs.shape[2:])))
    if not self._use_lstm:
      return features, time_batch, ()
    features = tf.reshape(self._lstm_input(features),
                          tf.concat([time_batch, [features.shape[-1]]], 0))

    def scan_step(state, inputs):
      features_t, done_t = inputs
      _, new_state = self._lstm_step(features_t, done_t, state)
      return new_state

    # The LSTM output is its new h, so scanning the state gives the outputs too.
    cs, hs = tf.scan(scan_step, (features, done), initializer=tuple(core_state))
    return tf.reshape(hs, [-1, self._lstm_size]), time_batch, (cs[-1], hs[-1])


class PolicyValueNetwork(TorsoNetwork):
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
    super().__init__(observation_shape, observation_dtype, num_actions, torso=torso,
                     mlp_hidden_sizes=mlp_hidden_sizes, use_lstm=use_lstm,
                     lstm_size=lstm_size, seed=seed, initializer=initializer,
                     torso_attribute='_torso_layer_{index}',
                     unroll_torso_dtype=unroll_torso_dtype,
                     lstm_input_layer_norm=lstm_input_layer_norm, name=name)
    # Glorot ignores the gains; each initializer draws the next seed of the stream.
    self._policy_head = keras.layers.Dense(
        self._num_actions, name='policy_logits', kernel_initializer=self._initializer(0.01))
    self._q_head = bool(q_head)
    self._q_atoms = int(q_atoms)
    if self._q_atoms and not self._q_head:
      raise ValueError(f'q_atoms = {q_atoms} needs q_head=True')
    width = self._num_actions * max(self._q_atoms, 1) if q_head else 1
    self._baseline_head = keras.layers.Dense(
        width, name='q_values' if q_head else 'baseline',
        kernel_initializer=self._initializer(1.0))
    self._build_variables()

  @classmethod
  def from_config(cls, env_spec, config, **heads) -> 'PolicyValueNetwork':
    """The network an agent config describes for `env_spec`: the config's torso,
    mlp_hidden_sizes, use_lstm, lstm_size, seed and initializer fields (V-trace's, ACER's
    and Reactor's configs share them); `heads`: q_head, q_atoms, unroll_torso_dtype,
    lstm_input_layer_norm, name."""
    return cls(env_spec.observation_shape, env_spec.observation_dtype, env_spec.num_actions,
               torso=config.torso, mlp_hidden_sizes=config.mlp_hidden_sizes,
               use_lstm=config.use_lstm, lstm_size=config.lstm_size, seed=config.seed,
               initializer=config.initializer, **heads)

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
    return self.unroll_from_torso_inputs(self.unroll_torso_inputs(observations), done,
                                         core_state)

  def unroll_from_torso_inputs(self, torso_inputs, done, core_state):
    """`unroll` from `unroll_torso_inputs(observations)` [T, B, ...]."""
    features, time_batch, final_state = self._core_unroll_torso_inputs(torso_inputs, done,
                                                                        core_state)
    logits, baseline = self._heads(features)
    logits = tf.reshape(logits, tf.concat([time_batch, [self._num_actions]], 0))
    baseline = tf.reshape(baseline, tf.concat([time_batch, tf.shape(baseline)[1:]], 0))
    return logits, baseline, final_state
