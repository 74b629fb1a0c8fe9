"""A bounded FIFO of unrolls: each used once, in arrival order (on-policy agents)."""
import collections
import threading
from typing import Dict, List, Optional

import numpy as np


def stack_unrolls(unrolls: List[Dict[str, object]]) -> Dict[str, object]:
  """[unroll] -> {field: [B, T+1, ...]}, with 'core_state' a tuple of [B, ...]."""
  batch = {name: np.stack([u[name] for u in unrolls])
           for name in unrolls[0] if name != 'core_state'}
  batch['core_state'] = tuple(np.stack(parts) for parts in zip(*[u['core_state'] for u in unrolls]))
  return batch


class UnrollFifo:
  """Bounded queue; `put` blocks while it is full, which holds back inference.

  That blocking is the backpressure: when the trainer lags, the inference
  thread waits here, actors wait for actions, and no unroll goes stale.
  """

  def __init__(self, capacity_unrolls: int, stop_event: Optional[threading.Event] = None):
    if capacity_unrolls < 1:
      raise ValueError(f'capacity_unrolls must be >= 1, got {capacity_unrolls}')
    self.capacity_unrolls = capacity_unrolls
    self._items = collections.deque()
    self._cond = threading.Condition()
    self._stop = stop_event or threading.Event()

  def put(self, unroll: Dict[str, object]) -> bool:
    """Blocks while full; returns False (dropping the unroll) once stopping."""
    with self._cond:
      while len(self._items) >= self.capacity_unrolls:
        if self._stop.is_set():
          return False
        self._cond.wait(timeout=0.1)
      self._items.append(unroll)
      self._cond.notify_all()
      return True

  def get_batch(self, batch_size: int, timeout_s: float = 0.5) -> Optional[Dict[str, object]]:
    """The oldest `batch_size` unrolls stacked, or None if not there within the timeout."""
    if batch_size > self.capacity_unrolls:
      raise ValueError(f'batch_size {batch_size} exceeds the FIFO capacity '
                       f'{self.capacity_unrolls}; the FIFO could never fill a batch')
    with self._cond:
      if not self._cond.wait_for(lambda: len(self._items) >= batch_size, timeout=timeout_s):
        return None
      unrolls = [self._items.popleft() for _ in range(batch_size)]
      self._cond.notify_all()
    return stack_unrolls(unrolls)

  def after_train(self, logs: Dict[str, object]) -> Dict[str, object]:
    """Nothing flows back to a FIFO."""
    return logs

  @property
  def fill(self) -> float:
    """Fraction of the capacity in use."""
    return len(self._items) / self.capacity_unrolls

  def __len__(self) -> int:
    return len(self._items)
