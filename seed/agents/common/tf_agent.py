"""What the TensorFlow agents share besides their gradient step (common/learning.py):
warm-up, one concrete policy per batch size, optimizer slots, the configured learning
rates winning over restored ones."""
import abc
from typing import Any, NamedTuple, Optional, Sequence

import numpy as np
import tensorflow as tf

from seed import types
from seed.agents.common import base


# What tf.experimental.dlpack takes in place (it refuses bool and checks no alignment:
# an unaligned buffer aborts the process in a kernel, so zero_copy_tensor checks it).
_DLPACK_DTYPES = frozenset(np.dtype(t) for t in (np.uint8, np.int8, np.int16, np.int32,
                                                 np.int64, np.float16, np.float32, np.float64))
_TF_ALIGNMENT_BYTES = 64  # EIGEN_MAX_ALIGN_BYTES of TensorFlow's CPU builds
# Below this a copy costs about what the checks and the DLPack capsule do (~5 µs).
_ZERO_COPY_MIN_BYTES = 64 * 1024


def zero_copy_tensor(array: np.ndarray):
  """`array` as a tensor on the same memory when TensorFlow can use it in place
  (at least 64 KB, C-contiguous, 64-byte aligned, a DLPack dtype); otherwise the array
  itself, which the call converts with a copy. A batch of 64 Pong frames (1.8 MB) costs
  0.5-0.7 ms to copy and a few microseconds this way. The caller must not write to
  `array` afterwards. (step_processor.aligned_empty makes the inference batches aligned.)"""
  if (array.nbytes >= _ZERO_COPY_MIN_BYTES and array.dtype in _DLPACK_DTYPES and
      array.flags.c_contiguous and array.ctypes.data % _TF_ALIGNMENT_BYTES == 0):
    return tf.experimental.dlpack.from_dlpack(array.__dlpack__())
  return array


def pack_per_env(reward, done, acting: types.ActingParams) -> np.ndarray:
  """[B, 5] float32: reward, done, epsilon, evaluation, seed_index (exact below 2**24)."""
  return np.stack([reward, done, acting.epsilon, acting.evaluation, acting.seed_index],
                  axis=1).astype(np.float32, copy=False)


def adam_or_rmsprop(config):
  """The optimizer a config names (its `optimizer`: 'adam' or 'rmsprop'): Adam with the
  config's adam_epsilon, or RMSProp with IMPALA's and ACER's decay 0.99, no momentum and
  the config's rmsprop_epsilon; at the config's learning_rate."""
  import keras  # pylint: disable=g-import-not-at-top
  if config.optimizer == 'adam':
    return keras.optimizers.Adam(config.learning_rate, epsilon=config.adam_epsilon)
  return keras.optimizers.RMSprop(config.learning_rate, rho=0.99, momentum=0.0,
                                  epsilon=config.rmsprop_epsilon)


class Optimized(NamedTuple):
  """One optimizer of an agent: the variables it trains, as they are now, and its
  configured step size (which a restore does not override, and --anneal_learning_rate
  scales)."""
  optimizer: Any  # a Keras 3 optimizer
  variables: Sequence[tf.Variable]
  learning_rate: float


class TFAgent(base.Agent):
  """An agent whose `inference` is a tf.function over `env_spec`'s observations: its
  warm-up, one concrete policy per batch size, and its optimizers' slots and configured
  step sizes, from what `_optimized` lists. A subclass calls this constructor first."""

  def __init__(self, env_spec, config=None):
    """config: the hyperparameters; None takes the agent's `config_class()` as gin binds it
    (the config checks itself)."""
    self.env_spec = env_spec
    self.config = config if config is not None else self.config_class()
    # Built under a tf.distribute strategy's scope, the train step runs data-parallel over
    # its devices (learning.gradients); the default strategy is one device.
    self.strategy = tf.distribute.get_strategy()

  @abc.abstractmethod
  def _optimized(self) -> Sequence[Optimized]:
    """Every optimizer of the agent, with the variables it trains and its step size."""

  def warm_up(self, batch_sizes) -> None:
    """Traces `inference` and the batched policy for each batch size and creates the
    optimizer slots."""
    for size in batch_sizes:
      self.inference(*self._example_inputs(int(size)))
    for size in batch_sizes:
      self.batched_policy(int(size))
    self._build_optimizer()

  def batched_policy(self, batch_size: int, device: Optional[str] = None):
    """`inference` for `batch_size` rows on `device` (None: where TensorFlow places it),
    through a traced concrete function that takes reward, done and the acting parameters
    as one array.

    One trace serves every device: its ops carry no device, so a call runs where the
    caller's device scope says, reading the variables where they live (a mirrored
    variable's first copy, which every update writes: the latest weights on any device).

    The concrete function skips tf.function's argument matching (about 0.6 ms a call
    on the dev machine), and every input array costs a conversion to a tensor in the
    call: one array for five saves 0.1-0.3 ms a call at batches of 1-4
    (`bench.round_trip_floor`), where the learner's inference thread spends most.
    """
    policies = self.__dict__.setdefault('_batched_policies', {})
    if batch_size not in policies:
      observation, reward, done, core_state, acting = self._example_inputs(batch_size)
      policies[batch_size] = self._per_env_packed_inference.get_concrete_function(
          observation, pack_per_env(reward, done, acting), core_state)
    packed = policies[batch_size]

    def policy(observation, reward, done, core_state, acting: types.ActingParams):
      return packed(zero_copy_tensor(observation), pack_per_env(reward, done, acting),
                    core_state)

    if device is None:
      return policy

    def policy_on_device(*args):
      with tf.device(device):  # The eager device scope is per thread: lanes keep theirs.
        return policy(*args)
    return policy_on_device

  @tf.function
  def _per_env_packed_inference(self, observation, per_env, core_state):
    """`inference`, with the columns of `pack_per_env` unpacked in the graph."""
    reward, done, epsilon, evaluation, seed_index = tf.unstack(per_env, num=5, axis=1)
    return self.inference(observation, reward, done > 0.5, core_state, types.ActingParams(
        epsilon=epsilon, evaluation=evaluation > 0.5,
        seed_index=tf.cast(seed_index, tf.int32)))

  def on_restored(self) -> None:
    # Optimizers checkpoint their learning rates; the configured ones win.
    self.scale_learning_rates(1.0)

  def scale_learning_rates(self, fraction: float) -> None:
    for optimized in self._optimized():
      optimized.optimizer.learning_rate.assign(optimized.learning_rate * fraction)

  def _example_inputs(self, size: int):
    spec = self.env_spec
    return (np.zeros((size,) + spec.observation_shape, spec.observation_dtype),
            np.zeros([size], np.float32), np.zeros([size], bool),
            self.initial_core_state(size),
            types.ActingParams(epsilon=np.zeros([size], np.float32),
                               evaluation=np.zeros([size], bool),
                               seed_index=np.zeros([size], np.int32)))

  def _build_optimizer(self) -> None:
    # Keras 3 creates slots in build(); a checkpoint read before that leaves the
    # slots pending, and train_step must not create variables inside a trace.
    for optimized in self._optimized():
      if not optimized.optimizer.built:
        optimized.optimizer.build(optimized.variables)
