"""Checkpoints of the whole learner: model, optimizer and counters."""
import logging
import os
from typing import Any, Dict

import tensorflow as tf

from seed.counters import Counters

_log = logging.getLogger(__name__)


class Checkpointer:
  """Saves into <logdir>/ckpt and restores the latest checkpoint there.

  tf.train.CheckpointManager writes the data files first and then replaces the
  small `checkpoint` index file atomically, so a crash mid-write leaves the
  previous checkpoint as the latest one. A replay (when the agent input is one)
  is written atomically beside its checkpoint, before the index names it.
  """

  def __init__(self, directory: str, items: Dict[str, Any], counters: Counters,
               max_to_keep: int = 3, replay=None):
    self._counters = counters
    self._replay = replay
    os.makedirs(directory, exist_ok=True)  # The replay is written before the first index.
    self._counter_values = tf.Variable(counters.as_array(), dtype=tf.int64, trainable=False)
    self._checkpoint = tf.train.Checkpoint(counters=self._counter_values, **items)
    self._manager = tf.train.CheckpointManager(self._checkpoint, directory, max_to_keep)
    self.directory = directory

  def restore_latest(self) -> bool:
    """Restores the latest checkpoint if there is one; returns whether it did."""
    path = self._manager.latest_checkpoint
    if path is None:
      return False
    self._checkpoint.restore(path).assert_existing_objects_matched()
    self._counters.load_array(self._counter_values.numpy())
    if self._replay is not None:
      self._replay.restore(path)
    _log.info('resumed from %s: %s', path, self._counters.snapshot())
    return True

  def save(self) -> str:
    self._counter_values.assign(self._counters.as_array())
    # A fresh number every time: re-saving ckpt-N in place would not be atomic.
    number = self._next_number()
    if self._replay is not None:
      # The manager names checkpoints <dir>/ckpt-<number>.
      self._replay.save(os.path.join(self.directory, f'ckpt-{number}'))
    path = self._manager.save(checkpoint_number=number)
    if self._replay is not None:
      self._replay.prune(self.directory, self._manager.checkpoints)
    _log.info('checkpoint written: %s', path)
    return path

  def _next_number(self) -> int:
    numbers = [int(path.rsplit('-', 1)[1]) for path in self._manager.checkpoints]
    return max(numbers, default=0) + 1

  @property
  def latest(self):
    return self._manager.latest_checkpoint


def checkpoint_dir(logdir: str) -> str:
  return os.path.join(logdir, 'ckpt')
