"""Builds one env's unrolls from the steps that pass through inference."""
from typing import Dict, List, Optional, Tuple

import numpy as np


class UnrollBuilder:
  """Appends steps into a preallocated [T+1, ...] buffer per field.

  A full unroll is handed out and the next one starts with its last
  `overlap + 1` steps: consecutive unrolls always share their boundary step
  (the value bootstrap of one is the first step of the next), and
  `overlap` more when an agent wants it (R2D2 overlaps by its burn-in, so
  that every step is trained on once after a burn-in). The recurrent state
  stored with an unroll is the state before its step 0.
  """

  def __init__(self, unroll_length: int, overlap: int = 0):
    if unroll_length < 1:
      raise ValueError(f'unroll_length must be >= 1, got {unroll_length}')
    if not 0 <= overlap < unroll_length:
      raise ValueError(f'overlap must be in [0, unroll_length={unroll_length}), got {overlap}')
    self._num_steps = unroll_length + 1
    self._kept_steps = overlap + 1
    self._buffers: Optional[Dict[str, np.ndarray]] = None
    self._size = 0
    # The state before each buffered step: the next unroll starts part-way in.
    self._states: List[Tuple[np.ndarray, ...]] = []

  @property
  def num_buffered_steps(self) -> int:
    return self._size

  def append(self, step: Dict[str, np.ndarray],
             core_state_before: Tuple[np.ndarray, ...]) -> Optional[Dict[str, object]]:
    """Adds one step; returns a finished unroll dict when T+1 steps are in."""
    if self._buffers is None:
      self._buffers = self._allocate(step)
    for name, value in step.items():
      self._buffers[name][self._size] = value
    self._states.append(core_state_before)
    self._size += 1
    if self._size < self._num_steps:
      return None
    unroll: Dict[str, object] = dict(self._buffers)
    unroll['core_state'] = self._states[0]
    # Fresh buffers: the finished ones now belong to the consumer.
    kept = self._kept_steps
    self._buffers = self._allocate(step)
    for name, finished in unroll.items():
      if name != 'core_state':
        self._buffers[name][:kept] = finished[-kept:]
    self._states = self._states[-kept:]
    self._size = kept
    return unroll

  def reset(self) -> None:
    """Drops the partial unroll (new episode source: a reconnect or a new run id)."""
    self._size = 0
    self._states = []

  def _allocate(self, step: Dict[str, np.ndarray]) -> Dict[str, np.ndarray]:
    return {name: np.empty((self._num_steps,) + np.shape(value), np.asarray(value).dtype)
            for name, value in step.items()}
