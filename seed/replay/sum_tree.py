"""A sum tree (and max tree) over a fixed number of non-negative priorities.

Layout: a complete binary tree in one array. With L = the smallest power of two
>= capacity, node 1 is the root, node i has children 2i and 2i + 1, and leaf j
(slot j) is node L + j; leaves capacity..L-1 stay 0. Every internal node is
recomputed from its two children on update (never adjusted by a delta), so sums
do not drift however many updates there are.

All operations are vectorised over index arrays and take O(k log L) for k
indices: one NumPy step per tree level. Not thread-safe; PrioritizedReplay locks.
"""
import numpy as np


class SumTree:
  """Priorities p_j >= 0 of slots 0..capacity-1, with sampling j ~ p_j / sum(p)."""

  def __init__(self, capacity: int):
    if not isinstance(capacity, (int, np.integer)) or capacity < 1:
      raise ValueError(f'capacity must be an int >= 1, got {capacity!r}.')
    self._capacity = int(capacity)
    self._num_leaves = 1 << (self._capacity - 1).bit_length()  # Power of two >= capacity.
    self._depth = self._num_leaves.bit_length() - 1  # Levels below the root.
    # float64: sums of many float32-sized priorities keep their precision.
    self._sum = np.zeros(2 * self._num_leaves, np.float64)
    self._max = np.zeros(2 * self._num_leaves, np.float64)

  @property
  def capacity(self) -> int:
    """Number of slots."""
    return self._capacity

  @property
  def nbytes(self) -> int:
    """Bytes of the two trees (sums and maxima)."""
    return self._sum.nbytes + self._max.nbytes

  @property
  def total(self) -> float:
    """Sum of all priorities."""
    return float(self._sum[1])

  @property
  def max(self) -> float:
    """Largest priority currently stored (0 when all are 0)."""
    return float(self._max[1])

  def _check_indices(self, indices) -> np.ndarray:
    indices = np.asarray(indices)
    if indices.ndim != 1 or not (indices.dtype.kind in 'iu' or indices.size == 0):
      raise ValueError(f'indices must be a 1-D integer array, got shape {indices.shape} '
                       f'dtype {indices.dtype}.')
    indices = indices.astype(np.int64)
    bad = (indices < 0) | (indices >= self._capacity)
    if bad.any():
      raise ValueError(f'indices must be in [0, {self._capacity}), got {indices[bad][:5]}.')
    return indices

  def get(self, indices) -> np.ndarray:
    """Priorities of `indices` (1-D int array), float64 [k]."""
    return self._sum[self._check_indices(indices) + self._num_leaves].copy()

  def set(self, indices, priorities) -> None:
    """Sets p[indices] = priorities; for repeated indices the last one wins.

    Args:
      indices: 1-D int array of slots in [0, capacity).
      priorities: array broadcastable to indices.shape, finite and >= 0.

    Raises:
      ValueError: on an index out of range or a negative or non-finite priority.
    """
    indices = self._check_indices(indices)
    priorities = np.broadcast_to(np.asarray(priorities, np.float64), indices.shape)
    bad = ~np.isfinite(priorities) | (priorities < 0)
    if bad.any():
      raise ValueError(f'priorities must be finite and >= 0, got {priorities[bad][:5]}.')
    if indices.size == 1:  # One insert's update: scalar steps, not a NumPy call per level.
      self._set_one(int(indices[0]), float(priorities[0]))
      return
    # Keep the last occurrence of each index: NumPy does not promise which of
    # several fancy-index writes to one element wins.
    last = indices.size - 1 - np.unique(indices[::-1], return_index=True)[1]
    nodes = indices[last] + self._num_leaves
    self._sum[nodes] = priorities[last]
    self._max[nodes] = priorities[last]
    for _ in range(self._depth):
      nodes = np.unique(nodes >> 1)
      left = 2 * nodes
      self._sum[nodes] = self._sum[left] + self._sum[left + 1]
      self._max[nodes] = np.maximum(self._max[left], self._max[left + 1])

  def _set_one(self, index: int, priority: float) -> None:
    node = index + self._num_leaves
    self._sum[node] = self._max[node] = priority
    node >>= 1
    while node:
      left = 2 * node
      self._sum[node] = self._sum[left] + self._sum[left + 1]
      self._max[node] = max(self._max[left], self._max[left + 1])
      node >>= 1

  def sample(self, uniforms) -> np.ndarray:
    """Slots j chosen by inverse CDF: the j with cumsum(p)[j-1] <= u * total < cumsum(p)[j].

    Args:
      uniforms: 1-D array of numbers in [0, 1], e.g. rng.random(batch_size).

    Returns:
      int64 [k] slots, each with priority > 0.

    Raises:
      ValueError: if total is 0 or a uniform lies outside [0, 1].
    """
    uniforms = np.asarray(uniforms, np.float64)
    if uniforms.ndim != 1:
      raise ValueError(f'uniforms must be 1-D, got shape {uniforms.shape}.')
    bad = ~((uniforms >= 0) & (uniforms <= 1))
    if bad.any():
      raise ValueError(f'uniforms must be in [0, 1], got {uniforms[bad][:5]}.')
    if not self._sum[1] > 0:
      raise ValueError('cannot sample: all priorities are 0.')
    targets = uniforms * self._sum[1]
    nodes = np.ones(uniforms.shape, np.int64)
    for _ in range(self._depth):
      left = 2 * nodes
      left_sum = self._sum[left]
      right_sum = self._sum[left + 1]
      # Rounding can leave a target at or past the end of a subtree's mass; never
      # step into a zero-mass child, so the leaf reached always has p > 0.
      go_right = ((targets >= left_sum) & (right_sum > 0)) | (left_sum <= 0)
      targets = np.where(go_right, targets - left_sum, targets)
      nodes = left + go_right
    return nodes - self._num_leaves
