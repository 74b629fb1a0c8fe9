"""What the TensorFlow agents share: warm-up, one concrete policy per batch size,
optimizer slots, the configured learning rates winning over restored ones, and
optimizer updates that skip themselves on a non-finite loss or gradient."""
from typing import Optional, Sequence, Tuple

import numpy as np
import tensorflow as tf

from seed import types


def apply_if_finite(optimizer, gradients: Sequence[Optional[tf.Tensor]],
                    variables: Sequence[tf.Variable], loss,
                    max_grad_norm: Optional[float] = None,
                    inputs: Sequence[tf.Tensor] = ()) -> Tuple[tf.Tensor, tf.Tensor]:
  """Clips and applies `gradients` unless the loss or a gradient is NaN or Inf.

  One NaN applied would spread through every later update (through the Adam
  moments too), so such an update is skipped whole: the variables and the
  optimizer's state (slots, iterations) stay as they were. Call it inside a traced
  train function, with the optimizer built (a tf.cond branch must not create
  variables).

  Args:
    optimizer: a built Keras 3 optimizer.
    gradients: the gradients of `loss` w.r.t. `variables`, before clipping; None
      for a variable the loss does not reach.
    variables: the variables `optimizer` trains.
    loss: the loss the gradients are of (any shape).
    max_grad_norm: clip the gradients to this global norm; None does not clip.
    inputs: float tensors the loss was computed from; a NaN or Inf among them skips
      the update too. A NaN input need not reach the loss: compiled ReLU layers
      (oneDNN's fused MatMul + ReLU on AVX-512 CPUs) turn NaN into 0, and the loss
      then comes out finite and wrong.

  Returns:
    (applied, grad_norm): a bool scalar, whether the update was applied, and the
    global norm of the gradients before clipping (NaN or Inf when skipped).
  """
  gradients = list(gradients)
  # The global norm is finite exactly when every gradient is, and none of them
  # overflows when squared (clip_by_global_norm turns an Inf norm into NaNs).
  grad_norm = tf.linalg.global_norm(gradients)
  finite = tf.logical_and(tf.reduce_all(tf.math.is_finite(loss)), tf.math.is_finite(grad_norm))
  for tensor in inputs:
    finite = tf.logical_and(finite, tf.reduce_all(tf.math.is_finite(tensor)))
  if max_grad_norm is not None:
    gradients, _ = tf.clip_by_global_norm(gradients, max_grad_norm, use_norm=grad_norm)

  def apply():
    optimizer.apply_gradients(zip(gradients, variables))
    return tf.constant(True)

  applied = tf.cond(finite, apply, lambda: tf.constant(False))
  return applied, grad_norm


def copy_weights(network, target_network) -> None:
  """target <- network, variable by variable (both built in the same order)."""
  for target, online in zip(target_network.weights, network.weights):
    target.assign(online)


def copy_to_target_when_due(optimizer, applied, period: int, network, target_network):
  """copy_weights after an applied update that makes the optimizer's step count a
  multiple of `period`; inside a tf.function. Returns the bool tensor: copied this step.

  Counted by the optimizer's iterations, so the period survives a checkpoint restore;
  a skipped update does not advance them (it would copy again after a copying one)."""

  def copy():
    copy_weights(network, target_network)
    return tf.constant(True)

  due = tf.logical_and(applied, tf.equal(tf.convert_to_tensor(optimizer.iterations) % period, 0))
  return tf.cond(due, copy, lambda: tf.constant(False))


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


class KerasAgentMixin:
  """For agents with `inference` (a tf.function) and `_env_spec`.

  Single-network agents set `_network`, `_optimizer` (Keras 3) and
  `_configured_learning_rate`; agents with several optimizers override
  `_optimizers` instead.
  """

  @property
  def network(self):
    return self._network

  @property
  def optimizer(self):
    return self._optimizer

  def _optimizers(self):
    """(optimizer, the variables it trains, its configured learning rate) for each."""
    return ((self._optimizer, self._network.trainable_variables,
             self._configured_learning_rate),)

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
    for optimizer, _, learning_rate in self._optimizers():
      optimizer.learning_rate.assign(learning_rate * fraction)

  def _example_inputs(self, size: int):
    spec = self._env_spec
    return (np.zeros((size,) + spec.observation_shape, spec.observation_dtype),
            np.zeros([size], np.float32), np.zeros([size], bool),
            self.initial_core_state(size),
            types.ActingParams(epsilon=np.zeros([size], np.float32),
                               evaluation=np.zeros([size], bool),
                               seed_index=np.zeros([size], np.int32)))

  def _build_optimizer(self) -> None:
    # Keras 3 creates slots in build(); a checkpoint read before that leaves the
    # slots pending, and train_step must not create variables inside a trace.
    for optimizer, variables, _ in self._optimizers():
      if not optimizer.built:
        optimizer.build(variables)


def reset_optimizer_state(optimizer) -> None:
  """Zeroes a built Keras optimizer's slots (moments) and step count; its learning
  rate stays."""
  for variable in optimizer.variables:
    if variable is not optimizer.learning_rate:
      variable.assign(tf.zeros_like(variable))
