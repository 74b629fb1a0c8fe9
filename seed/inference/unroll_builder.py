"""Builds one env's unrolls from the steps that pass through inference."""
from typing import Dict, Optional, Tuple

import numpy as np


class UnrollBuilder:
  """Appends steps into a preallocated [T+1, ...] buffer per field.

  A full unroll is handed out and the next one starts with its last step, so
  consecutive unrolls share their boundary step (the value bootstrap of one is
  the first step of the next). The recurrent state stored with an unroll is the
  state before its step 0.
  """

  def __init__(self, unroll_length: int):
    if unroll_length < 1:
      raise ValueError(f'unroll_length must be >= 1, got {unroll_length}')
    self._num_steps = unroll_length + 1
    self._buffers: Optional[Dict[str, np.ndarray]] = None
    self._size = 0
    self._core_state: Tuple[np.ndarray, ...] = ()

  @property
  def num_buffered_steps(self) -> int:
    return self._size

  def append(self, step: Dict[str, np.ndarray],
             core_state_before: Tuple[np.ndarray, ...]) -> Optional[Dict[str, object]]:
    """Adds one step; returns a finished unroll dict when T+1 steps are in."""
    if self._buffers is None:
      self._buffers = self._allocate(step)
    if self._size == 0:
      self._core_state = core_state_before
    for name, value in step.items():
      self._buffers[name][self._size] = value
    self._size += 1
    if self._size < self._num_steps:
      return None
    unroll: Dict[str, object] = dict(self._buffers)
    unroll['core_state'] = self._core_state
    # Fresh buffers: the finished ones now belong to the consumer.
    self._buffers = self._allocate(step)
    for name, value in step.items():
      self._buffers[name][0] = value
    self._size = 1
    self._core_state = core_state_before
    return unroll

  def reset(self) -> None:
    """Drops the partial unroll (new episode source: a reconnect or a new run id)."""
    self._size = 0
    self._core_state = ()

  def _allocate(self, step: Dict[str, np.ndarray]) -> Dict[str, np.ndarray]:
    return {name: np.empty((self._num_steps,) + np.shape(value), np.asarray(value).dtype)
            for name, value in step.items()}
