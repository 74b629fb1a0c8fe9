"""Reactor's priority estimate for sequences not yet trained on (Gruslys et al., 2018).

Prioritized replay as Schaul et al. define it gives every new item one constant
priority (seed.replay.prioritized: the largest seen so far). Reactor starts from the
assumption that TD errors are correlated in time, more so the closer two steps are,
and estimates an unvisited sequence's priority from the visited sequences near it in
time ("lazy initialization"):

- Take one stream, the sequences of one env in time order, positions 0..n-1. Some
  have an assigned priority (a train step has measured it); the rest do not.
- Partition the positions into contiguous cells, each holding exactly one assigned
  sequence. Here a cell ends halfway to the next assigned one (an odd gap's middle
  position goes to the earlier cell). The partition depends on where the assigned
  sequences are, never on their priorities, which keeps the estimate unbiased.
- An unassigned sequence in cell c gets the average of the assigned priorities of
  cells c - 1, c and c + 1, each weighted by its cell's size. A cell's size estimates
  the inverse of how densely that region was sampled: high-priority regions are
  sampled more and so have more, smaller cells, and weighting by size keeps them from
  pulling the estimates of their unvisited neighbours up.

The paper leaves the partition and the neighbourhood to the implementation (its
Contextual Priority Tree is one); the midpoint cells and the three-cell neighbourhood
are this project's choices. A stream with no assigned sequence has no context: its
sequences get `fallback` (the replay passes the largest priority seen so far, as for
every new sequence without this estimate).
"""
import numpy as np


def contextual_priorities(assigned, priorities, fallback: float) -> np.ndarray:
  """Priorities of one stream's sequences, estimated where none is assigned.

  Args:
    assigned: bool [n], True where a sequence's priority was measured.
    priorities: float [n], read where `assigned` (anything elsewhere).
    fallback: the priority of every sequence of a stream with none assigned.

  Returns:
    float64 [n]: `priorities` where assigned, the size-weighted average of the three
    nearest cells' priorities elsewhere.

  Raises:
    ValueError: on shapes that differ or are not 1-D.
  """
  assigned = np.asarray(assigned, bool)
  priorities = np.asarray(priorities, np.float64)
  if assigned.ndim != 1 or assigned.shape != priorities.shape:
    raise ValueError(f'assigned {assigned.shape} and priorities {priorities.shape} must be '
                     'equal 1-D.')
  anchors = np.flatnonzero(assigned)
  if anchors.size == 0:
    return np.full(assigned.shape, float(fallback))
  # Cell i starts one past the midpoint between anchors i - 1 and i.
  starts = np.concatenate([[0], (anchors[:-1] + anchors[1:]) // 2 + 1, [assigned.size]])
  sizes = np.diff(starts).astype(np.float64)
  cell = np.searchsorted(starts[1:-1], np.arange(assigned.size), side='right')
  estimates = _three_cell_sum(sizes * priorities[anchors])[cell] / _three_cell_sum(sizes)[cell]
  return np.where(assigned, priorities, estimates)


def _three_cell_sum(values: np.ndarray) -> np.ndarray:
  """values[c - 1] + values[c] + values[c + 1] per cell c, missing ends counting 0."""
  padded = np.pad(values, 1)
  return padded[:-2] + padded[1:-1] + padded[2:]
