"""The policy's observations reach TensorFlow without a copy when TensorFlow can use them
in place, and as the array (converted with a copy) otherwise."""
import numpy as np
import pytest

tf = pytest.importorskip('tensorflow')

from seed.agents.common import tf_agent  # pylint: disable=g-import-not-at-top,g-bad-import-order
from seed.inference import step_processor  # pylint: disable=g-import-not-at-top,g-bad-import-order


def test_an_aligned_batch_becomes_a_tensor_on_its_own_memory():
  frames = step_processor.aligned_empty((4, 84, 84, 4), np.uint8)
  frames[:] = np.arange(4, dtype=np.uint8)[:, None, None, None]
  tensor = tf_agent.zero_copy_tensor(frames)
  assert isinstance(tensor, tf.Tensor) and tensor.dtype == tf.uint8
  assert tensor.shape == (4, 84, 84, 4)
  np.testing.assert_array_equal(tensor.numpy(), frames)
  frames[2, 0, 0, 0] = 77  # The same memory (what the inference thread must never do).
  assert int(tensor[2, 0, 0, 0]) == 77
  floats = step_processor.aligned_empty((64, 1024), np.float32)
  floats[:] = 0.5
  np.testing.assert_array_equal(tf_agent.zero_copy_tensor(floats).numpy(), floats)


def test_arrays_tensorflow_cannot_take_in_place_stay_arrays():
  large = 1 << 20
  aligned = step_processor.aligned_empty((large + 1,), np.uint8)
  unaligned = aligned[1:]  # Would abort the process in a kernel if taken in place.
  grid = step_processor.aligned_empty((4096, 10, 10, 4), np.bool_)  # bool frames (MinAtar)
  strided = step_processor.aligned_empty((16384, 6), np.float32)[:, ::2]
  small = step_processor.aligned_empty((4, 3), np.float32)  # A copy costs less.
  empty = step_processor.aligned_empty((0, 3), np.float32)
  for array in (unaligned, grid, strided, small, empty):
    assert tf_agent.zero_copy_tensor(array) is array
