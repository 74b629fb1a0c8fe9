"""Shape checks and layout changes, one copy for the losses and the agents.

Losses take time-major tensors [T, B, ...]; samples arrive batch-major [B, T + 1, ...].
"""
from typing import Optional, Sequence

import numpy as np
import tensorflow as tf

from seed import types


def check_shape(name: str, tensor, expected) -> None:
  """Raises ValueError unless `tensor`'s static shape is compatible with `expected`."""
  shape = tf.TensorShape(getattr(tensor, 'shape', np.shape(tensor)))
  if not shape.is_compatible_with(expected):
    raise ValueError(f'{name} has shape {shape}, expected {tf.TensorShape(expected)}.')


def check_same_shapes(**tensors) -> None:
  """Raises ValueError unless every tensor's static shape matches the first one's."""
  (first_name, first), *rest = tensors.items()
  for name, tensor in rest:
    if not tensor.shape.is_compatible_with(first.shape):
      raise ValueError(f'{name} has shape {tensor.shape}, expected the shape of '
                       f'{first_name} {first.shape}.')


def time_major(x) -> tf.Tensor:
  """[B, T, ...] -> [T, B, ...] (and back: the swap is its own inverse)."""
  x = tf.convert_to_tensor(x)
  return tf.transpose(x, [1, 0] + list(range(2, x.shape.rank)))


batch_major = time_major


def check_sample(sample: types.Sample, rows: int, steps: int, leading_names: str,
                 trained_outputs: Sequence[str] = (), core_state_parts: Optional[int] = None) -> None:
  """Raises ValueError naming the first part of `sample` that a train step cannot take.

  Args:
    sample: what the agent input handed over.
    rows: B, the unrolls a train step takes.
    steps: T + 1, the steps each unroll holds.
    leading_names: how the message names [B, T + 1], e.g. '[batch_unrolls, unroll_length + 1]'.
    trained_outputs: policy outputs the train step reads.
    core_state_parts: how many arrays core_state must hold (None: not checked).
  """
  if not isinstance(sample, types.Sample):
    raise ValueError(f'train_step takes a seed.types.Sample, got {type(sample).__name__}.')
  expected = (rows, steps)
  data = sample.data
  arrays = [(field, getattr(data.steps, field)) for field in types.STEP_FIELDS]
  missing = [name for name in trained_outputs if name not in data.steps.policy_outputs]
  if missing:
    raise ValueError(f'sample lacks the policy outputs {missing}; it has '
                     f'{sorted(data.steps.policy_outputs)}.')
  arrays += [(f'policy_outputs[{name!r}]', data.steps.policy_outputs[name])
             for name in trained_outputs]
  for name, array in arrays:
    shape = tuple(np.shape(array))
    if shape[:2] != expected:
      raise ValueError(f'sample {name} has shape {shape}, expected leading dims '
                       f'{leading_names} = {list(expected)}.')
  for name, array in (('ids', sample.ids), ('weights', sample.weights)):
    if tuple(np.shape(array)) != (rows,):
      raise ValueError(f'sample {name} has shape {tuple(np.shape(array))}, expected [{rows}].')
  if core_state_parts is not None and len(data.core_state) != core_state_parts:
    raise ValueError(f'sample core_state has {len(data.core_state)} arrays, expected '
                     f'{core_state_parts}.')
  for i, part in enumerate(data.core_state):
    if tuple(np.shape(part))[:1] != (rows,):
      raise ValueError(f'sample core_state[{i}] has shape {tuple(np.shape(part))}, expected '
                       f'leading dim [{rows}].')
