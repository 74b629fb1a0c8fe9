"""Progress counters shared by inference, training, logging and checkpoints."""
import threading

import numpy as np

from seed.run_dir.checkpoints import SavedCounters


class Counters:
  """env_frames (with action repeat), env_steps, episodes, learner_steps."""

  NAMES = SavedCounters._fields  # The order a checkpoint keeps them in.

  def __init__(self):
    self._lock = threading.Lock()
    self._values = dict.fromkeys(self.NAMES, 0)

  def add(self, **increments: int) -> None:
    with self._lock:
      for name, amount in increments.items():
        self._values[name] += int(amount)

  def get(self, name: str) -> int:
    with self._lock:
      return self._values[name]

  def snapshot(self) -> dict:
    with self._lock:
      return dict(self._values)

  def as_array(self) -> np.ndarray:
    with self._lock:
      return np.array([self._values[n] for n in self.NAMES], np.int64)

  def load_array(self, values: np.ndarray) -> None:
    with self._lock:
      self._values = {n: int(v) for n, v in zip(self.NAMES, values)}
