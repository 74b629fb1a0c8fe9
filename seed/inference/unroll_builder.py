"""Builds one env's unrolls from the steps that pass through inference."""
from typing import List, NamedTuple, Optional, Tuple

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
    # [T + 1, ...] per field in StepRows order: the step fields, then the policy outputs.
    self._buffers: Optional[List[np.ndarray]] = None
    self._names: Tuple[str, ...] = ()
    self._size = 0
    # The state before each buffered step: the next unroll starts part-way in.
    self._states: List[Tuple[np.ndarray, ...]] = []

  @property
  def num_buffered_steps(self) -> int:
    return self._size

  def append(self, step: types.Steps,
             core_state_before: Tuple[np.ndarray, ...]) -> Optional[types.Unroll]:
    """Adds one step (a Steps of single-step values); returns an Unroll when T+1 are in."""
    batch = StepRows.of(types.Steps(*(np.asarray(getattr(step, field))[None]
                                      for field in types.STEP_FIELDS),
                                    policy_outputs={name: np.asarray(value)[None] for name, value
                                                    in step.policy_outputs.items()}))
    return self.append_row(batch, 0, core_state_before)

  def append_row(self, batch: 'StepRows', row: int,
                 core_state_before: Tuple[np.ndarray, ...]) -> Optional[types.Unroll]:
    """Adds row `row` of one inference batch's step (this env's); returns an Unroll when
    T+1 steps are in. The inference thread's path: one write per field, no per-env
    structures."""
    if self._buffers is None:
      self._names = batch.names
      self._buffers = self._allocate(batch)
    elif batch.names is not self._names and batch.names != self._names:
      raise ValueError(f'step fields {batch.names} differ from the unroll\'s {self._names}')
    size = self._size
    for buffer, array in zip(self._buffers, batch.arrays):
      buffer[size] = array[row]
    self._states.append(core_state_before)
    self._size = size + 1
    if self._size < self._num_steps:
      return None
    finished = self._buffers
    # Fresh buffers: the finished ones now belong to the consumer.
    kept = self._kept_steps
    self._buffers = [np.empty_like(array) for array in finished]
    for fresh, array in zip(self._buffers, finished):
      fresh[:kept] = array[-kept:]
    num_fields = len(types.STEP_FIELDS)
    unroll = types.Unroll(
        steps=types.Steps(*finished[:num_fields],
                          policy_outputs=dict(zip(self._names[num_fields:],
                                                  finished[num_fields:]))),
        core_state=self._states[0], env_id=self._env_id)
    self._states = self._states[-kept:]
    self._size = kept
    return unroll

  def reset(self) -> None:
    """Drops the partial unroll (new episode source: a reconnect or a new run id)."""
    self._size = 0
    self._states = []

  def _allocate(self, batch: 'StepRows') -> List[np.ndarray]:
    return [np.empty((self._num_steps,) + array.shape[1:], array.dtype)
            for array in batch.arrays]


class StepRows(NamedTuple):
  """One step of a batch of envs in the unroll's field order: the step fields, then the
  policy outputs by name; every array [B, ...]. Made once per inference batch, read by
  each env's builder at its row."""
  names: Tuple[str, ...]
  arrays: Tuple[np.ndarray, ...]

  @classmethod
  def of(cls, steps: types.Steps) -> 'StepRows':
    """The rows of `steps` (a Steps of [B, ...] arrays); ValueError for a policy output
    named like a step field."""
    for name in steps.policy_outputs:
      if name in types.STEP_FIELDS:
        raise ValueError(f'policy output {name!r} clashes with a step field; rename it.')
    return cls(types.STEP_FIELDS + tuple(steps.policy_outputs),
               tuple(getattr(steps, field) for field in types.STEP_FIELDS) +
               tuple(steps.policy_outputs.values()))
