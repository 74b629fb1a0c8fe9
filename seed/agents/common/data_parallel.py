"""A train step's gradients computed data-parallel over the devices of a tf.distribute
strategy: the batch split into one equal shard per replica, each replica's loss and
gradients on its shard, their weighted sum the whole batch's, one set of variables.

With the default strategy (one device, what the learner runs unless told otherwise)
`gradients` is a plain GradientTape over the whole batch, the same ops as before. Under
a MirroredStrategy (several GPUs, or logical CPU devices in the tests) the agent's
variables are mirrored, every replica computes its shard in parallel and the reduced
gradients are applied once, in cross-replica context, so an optimizer update guarded
by `tf_agent.apply_if_finite`'s tf.cond stays whole.

The loss must be a mean over the batch's items (unrolls): the mean of equal shards'
means, each weighted 1/N, is then the whole batch's. A loss with statistics across the
batch (advantages normalised by the batch's mean and spread, PopArt's running targets)
is not a mean of shards: agents refuse several devices for such configs.
"""
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import tensorflow as tf

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
    raise ValueError('data_parallel.gradients needs the batch\'s item count when the '
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
