"""Builds one env's unrolls from the steps that pass through inference."""
from typing import Dict, List, Mapping, Optional, Tuple

import numpy as np

from seed import types


class UnrollBuilder:
  """Appends steps into a preallocated [T+1, ...] buffer per field.

  A full unroll is handed out and the next one starts with its last
  `overlap + 1` steps: consecutive unrolls always share their boundary step
  (the value bootstrap of one is the first step of the next), and
  `overlap` more when an agent wants it (R2D2 overlaps by its burn-in, so
  that every step is trained on once after a burn-in). The recurrent state
  stored with an unroll is the state before its step 0.
  """

  def __init__(self, unroll_length: int, overlap: int = 0, env_id: int = 0):
    if unroll_length < 1:
      raise ValueError(f'unroll_length must be >= 1, got {unroll_length}')
    if not 0 <= overlap < unroll_length:
      raise ValueError(f'overlap must be in [0, unroll_length={unroll_length}), got {overlap}')
    self._num_steps = unroll_length + 1
    self._kept_steps = overlap + 1
    self._env_id = np.int64(env_id)
    # Field name -> [T + 1, ...]; policy outputs under their own names after the step fields.
    self._buffers: Optional[Dict[str, np.ndarray]] = None
    self._output_names: Tuple[str, ...] = ()
    self._size = 0
    # The state before each buffered step: the next unroll starts part-way in.
    self._states: List[Tuple[np.ndarray, ...]] = []

  @property
  def num_buffered_steps(self) -> int:
    return self._size

  def append(self, step: types.Steps,
             core_state_before: Tuple[np.ndarray, ...]) -> Optional[types.Unroll]:
    """Adds one step (a Steps of single-step values); returns an Unroll when T+1 are in."""
    values = self._values(step)
    if self._buffers is None:
      self._output_names = tuple(step.policy_outputs)
      self._buffers = self._allocate(values)
    for name, value in values.items():
      self._buffers[name][self._size] = value
    self._states.append(core_state_before)
    self._size += 1
    if self._size < self._num_steps:
      return None
    finished = self._buffers
    # Fresh buffers: the finished ones now belong to the consumer.
    kept = self._kept_steps
    self._buffers = self._allocate(values)
    for name, array in finished.items():
      self._buffers[name][:kept] = array[-kept:]
    unroll = types.Unroll(
        steps=types.Steps(*(finished[field] for field in types.STEP_FIELDS),
                          policy_outputs={name: finished[name] for name in self._output_names}),
        core_state=self._states[0], env_id=self._env_id)
    self._states = self._states[-kept:]
    self._size = kept
    return unroll

  def reset(self) -> None:
    """Drops the partial unroll (new episode source: a reconnect or a new run id)."""
    self._size = 0
    self._states = []

  @staticmethod
  def _values(step: types.Steps) -> Mapping[str, object]:
    values = {field: getattr(step, field) for field in types.STEP_FIELDS}
    for name, value in step.policy_outputs.items():
      if name in values:
        raise ValueError(f'policy output {name!r} clashes with a step field; rename it.')
      values[name] = value
    return values

  def _allocate(self, values: Mapping[str, object]) -> Dict[str, np.ndarray]:
    return {name: np.empty((self._num_steps,) + np.shape(value), np.asarray(value).dtype)
            for name, value in values.items()}
