"""A bounded FIFO of unrolls: each used once, in arrival order (on-policy agents)."""
import collections
import threading
from typing import Dict, Optional

import numpy as np

from seed import types


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
    self._num_arrived = 0  # Numbers the unrolls in arrival order: a Sample's ids.
    self._cond = threading.Condition()
    self._stop = stop_event or threading.Event()

  def put(self, unroll: types.Unroll) -> bool:
    """Blocks while full; returns False (dropping the unroll) once stopping."""
    with self._cond:
      while len(self._items) >= self.capacity_unrolls:
        if self._stop.is_set():
          return False
        self._cond.wait(timeout=0.1)
      self._items.append((self._num_arrived, unroll))
      self._num_arrived += 1
      self._cond.notify_all()
      return True

  def sample(self, batch_unrolls: int, timeout_s: float = 0.5) -> Optional[types.Sample]:
    """The oldest `batch_unrolls` unrolls stacked, or None if not there within the timeout."""
    if batch_unrolls > self.capacity_unrolls:
      raise ValueError(f'batch_unrolls {batch_unrolls} exceeds the FIFO capacity '
                       f'{self.capacity_unrolls}; the FIFO could never fill a batch')
    with self._cond:
      if not self._cond.wait_for(lambda: len(self._items) >= batch_unrolls, timeout=timeout_s):
        return None
      items = [self._items.popleft() for _ in range(batch_unrolls)]
      self._cond.notify_all()
    return types.Sample(ids=np.array([number for number, _ in items], np.int64),
                        data=types.stack_unrolls([unroll for _, unroll in items]),
                        weights=np.ones(batch_unrolls, np.float32))

  def update_priorities(self, ids, priorities) -> None:
    """A FIFO has no priorities: an agent returning some belongs on a replay."""
    del ids, priorities
    raise TypeError('the unroll FIFO has no priorities to update; an agent that returns '
                    "TrainResult.priorities needs input_kind = 'replay'")

  def stats(self) -> Dict[str, float]:
    """Nothing to log beyond `fill`."""
    return {}

  @property
  def fill(self) -> float:
    """Fraction of the capacity in use."""
    return len(self._items) / self.capacity_unrolls

  def __len__(self) -> int:
    return len(self._items)
