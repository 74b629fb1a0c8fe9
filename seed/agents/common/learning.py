"""The gradient step every TensorFlow agent takes, written once: the loss's gradients,
data-parallel over the learner's devices; clipped and applied unless non-finite; target
networks copied on a period; and PopArt's statistics, which an update moves with the value
head it rescales.

On one device the loss's gradients come from one tape. On several (--learner_devices:
GPUs, or logical CPU devices in the tests) the agent's variables are mirrored, every
replica computes its shard in parallel and the reduced gradients are applied once, in
cross-replica context, so an optimizer update guarded by `apply_if_finite`'s tf.cond stays
whole.

The loss must be a mean over the batch's items (unrolls): the mean of equal shards'
means, each weighted 1/N, is then the whole batch's. A loss with statistics across the
batch (advantages normalised by the batch's mean and spread, PopArt's running targets)
is not a mean of shards: agents refuse several devices for such configs.
"""
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import keras
import tensorflow as tf

from seed.losses import popart

# (scalar loss, {name: scalar log, a mean over the items}, a nest of per-item outputs)
LossFn = Callable[[object], Tuple[tf.Tensor, Dict[str, tf.Tensor], object]]


def num_replicas(strategy: Optional[tf.distribute.Strategy] = None) -> int:
  return (strategy or tf.distribute.get_strategy()).num_replicas_in_sync


def gradients(strategy: tf.distribute.Strategy, loss_fn: LossFn,
              variables: Sequence[tf.Variable], batch, batch_axes, output_axes
              ) -> Tuple[tf.Tensor, List[Optional[tf.Tensor]], Dict[str, tf.Tensor], object]:
  """(loss, gradients, logs, outputs) of `loss_fn` on the whole `batch`.

  Call it in cross-replica context (the agent's traced train function).

  Args:
    strategy: the strategy the variables were made under.
    loss_fn: shard -> (scalar loss, scalar logs, a nest of per-item outputs); the loss
      and the logs means over the shard's items.
    variables: what to differentiate against.
    batch: a nest of tensors.
    batch_axes: a nest of ints, the structure of `batch`: each tensor's item axis
      (1 for time-major [T, B, ...], 0 for [B, ...]).
    output_axes: the same for the outputs of `loss_fn`.

  Returns:
    The loss and logs (means over the whole batch), the gradients (None for a variable
    the loss does not reach), and the outputs, each shard's in batch order.

  Raises:
    ValueError: the batch does not split into equal shards.
  """
  replicas = strategy.num_replicas_in_sync
  if replicas == 1:
    with tf.GradientTape() as tape:
      loss, logs, outputs = loss_fn(batch)
    return loss, tape.gradient(loss, variables), logs, outputs

  sizes = {x.shape[axis] for x, axis in zip(tf.nest.flatten(batch),
                                             tf.nest.flatten(batch_axes))}
  if None in sizes:
    raise ValueError('learning.gradients needs the batch\'s item count when the '
                     f'train step is traced; got item axes of sizes {sizes}')
  if len(sizes) != 1 or next(iter(sizes)) % replicas:
    raise ValueError(f'a batch of {sorted(sizes)} items does not split into {replicas} '
                     'equal shards, one per device: make the batch a multiple of the '
                     'number of --learner_devices')

  def shard(context):
    index = context.replica_id_in_sync_group
    return tf.nest.map_structure(lambda x, axis: tf.split(x, replicas, axis=axis)[index],
                                 batch, batch_axes)

  def replica(shard_batch):
    with tf.GradientTape() as tape:
      loss, logs, outputs = loss_fn(shard_batch)
      # Equal shards: the batch's mean is the sum of the shards' means over N.
      loss = loss / replicas
    grads = tape.gradient(loss, variables)
    return loss, grads, {name: value / replicas for name, value in logs.items()}, outputs

  shards = strategy.experimental_distribute_values_from_function(shard)
  loss, grads, logs, outputs = strategy.run(replica, args=(shards,))

  def total(value):
    return None if value is None else strategy.reduce(tf.distribute.ReduceOp.SUM, value,
                                                      axis=None)
  return (total(loss), [total(g) for g in grads],
          {name: total(value) for name, value in logs.items()},
          # Each device's outputs, in shard order (a concat takes any dtype, bool masks too).
          tf.nest.map_structure(
              lambda value, axis: tf.concat(strategy.experimental_local_results(value), axis),
              outputs, output_axes))


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


def reset_optimizer_state(optimizer) -> None:
  """Zeroes a built Keras optimizer's slots (moments) and step count; its learning
  rate stays."""
  for variable in optimizer.variables:
    if variable is not optimizer.learning_rate:
      variable.assign(tf.zeros_like(variable))


class PopArtStatistics(tf.Module):
  """mu, nu and the update count of one value head's targets.

  Before the first update mu = 0 and nu = 1 (sigma = 1), so V(x) = n(x).
  """

  def __init__(self, step_size: float, name: str = 'popart'):
    """step_size: beta in (0, 1], the statistics' EMA step once past 1 / beta updates."""
    super().__init__(name=name)
    self._step_size = float(step_size)
    self.mean = tf.Variable(0.0, trainable=False, name='mean')
    self.second_moment = tf.Variable(1.0, trainable=False, name='second_moment')
    self.updates = tf.Variable(0, dtype=tf.int64, trainable=False, name='updates')

  def moments(self) -> popart.Moments:
    return popart.Moments(tf.convert_to_tensor(self.mean),
                          tf.convert_to_tensor(self.second_moment))

  def scale(self) -> tf.Tensor:
    """sigma, float32 scalar."""
    return popart.scale(self.moments())

  def denormalize(self, normalized) -> tf.Tensor:
    """The value sigma * n(x) + mu from the head's output n(x)."""
    return self.scale() * normalized + self.mean

  def normalize(self, targets) -> tf.Tensor:
    """Targets in the head's units: (targets - mu) / sigma."""
    return (targets - self.mean) / self.scale()

  def update(self, targets, weights, head: keras.layers.Dense) -> None:
    """ART on `targets` (weighted, see popart.updated_moments), then POP on `head`,
    the Dense layer whose single output is the normalised value n(x)."""
    old = self.moments()
    old_scale = popart.scale(old)
    new = popart.updated_moments(old, targets, weights, self._step_size,
                                 self.updates + 1)
    new_scale = popart.scale(new)
    kernel, bias = popart.preserved_head(head.kernel, head.bias, old.mean, old_scale,
                                         new.mean, new_scale)
    head.kernel.assign(kernel)
    head.bias.assign(bias)
    self.mean.assign(new.mean)
    self.second_moment.assign(new.second_moment)
    self.updates.assign_add(1)
