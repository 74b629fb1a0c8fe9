"""Checkpoints of the whole learner: model, optimizer and counters."""
import glob
import logging
import os
import re
import shutil
from typing import Any, Dict

import tensorflow as tf

from seed.run_dir import checkpoints

from .counters import Counters

_log = logging.getLogger(__name__)

# ckpt-<number> followed by what TensorFlow and the replay add: .index,
# .data-00000-of-00001, _temp/ (a save in progress), .replay.npz, .replay.npz.*.tmp
_CHECKPOINT_FILE = re.compile(r'^ckpt-(\d+)(\..*|_temp.*)$')
# TensorFlow writes this last, once a checkpoint's data is whole.
_COMPLETE_CHECKPOINT = re.compile(r'^ckpt-(\d+)\.index$')
# What TensorFlow writes the index into before renaming it to `checkpoint`.
_INDEX_TEMPORARY = re.compile(r'^checkpoint\.tmp[0-9a-f]{32}$')


class CheckpointWriteError(Exception):
  """A checkpoint could not be written (e.g. the disk is full); the previous one is intact."""


class CheckpointReadError(Exception):
  """No checkpoint the index lists could be read; the message names each one's error."""


class Checkpointer:
  """Saves into <logdir>/ckpt and restores the latest checkpoint there.

  tf.train.CheckpointManager writes the data files first and then replaces the
  small `checkpoint` index file atomically, so a crash mid-write leaves the
  previous checkpoint as the latest one. A replay (when the agent input is one)
  is written atomically beside its checkpoint, before the index names it. Files
  of checkpoints the index does not name (a save that was killed or failed) are
  deleted when a Checkpointer opens the directory and when a save fails, so
  they cannot pile up and fill the disk.
  """

  def __init__(self, directory: str, items: Dict[str, Any], counters: Counters,
               max_to_keep: int = 3, replay=None):
    self._counters = counters
    self._replay = replay
    os.makedirs(directory, exist_ok=True)  # The replay is written before the first index.
    self._counter_values = checkpoints.counters_variable(counters.as_array())
    self._checkpoint = checkpoints.learner_checkpoint(self._counter_values, items)
    self._max_to_keep = max_to_keep
    self.directory = directory
    self._manager = self._open_manager()
    self._rebuild_lost_index()
    self._remove_unlisted()

  def restore_latest(self) -> bool:
    """Restores the newest checkpoint that reads whole; returns whether there was one.

    A checkpoint that cannot be read (a damaged or truncated file, a replay in a
    format this code does not read) is logged and the one before it is tried.

    Raises:
      CheckpointReadError: the index lists checkpoints and none of them reads.
    """
    errors = []
    for path in reversed(self._manager.checkpoints):
      try:
        self._checkpoint.restore(path).assert_existing_objects_matched()
        if self._replay is not None:
          self._replay.restore(path)
      except Exception as e:  # pylint: disable=broad-except
        # A damaged file raises TensorFlow's, NumPy's, zipfile's or zlib's errors.
        problem = f'{type(e).__name__}: {_first_line(e)}'
        _log.error('cannot resume from %s (%s); trying the checkpoint before it', path, problem)
        errors.append(f'{os.path.basename(path)}: {problem}')
        continue
      # The counters only now: a failed try must not leave another checkpoint's.
      self._counters.load_array(self._counter_values.numpy())
      _log.info('resumed from %s: %s', path, self._counters.snapshot())
      return True
    if errors:
      raise CheckpointReadError(
          f'no checkpoint in {self.directory} could be read ({"; ".join(errors)}); fix what '
          'the errors name, or move the directory aside to start afresh')
    return False

  def restore_initial(self, path: str, load_counters: bool) -> str:
    """Starts this run from another run's checkpoint: its model, optimizer and agent
    extras, not its replay. Returns the prefix read.

    Args:
      path: a checkpoint prefix (RUN/ckpt/ckpt-7) or a run directory (its latest).
      load_counters: continue the checkpoint's counters; False leaves them at zero.

    Raises:
      checkpoints.CheckpointMismatchError: it does not fit this network.
      ValueError: there is no such checkpoint, or it cannot be read.
    """
    prefix = checkpoints.resolve(path)
    checkpoints.restore(self._checkpoint, prefix)
    if load_counters:
      self._counters.load_array(self._counter_values.numpy())
    _log.info('initialised from %s (counters %s): %s', prefix,
              'continued' if load_counters else 'restarted', self._counters.snapshot())
    return prefix

  def save(self) -> str:
    """Writes a new checkpoint; raises CheckpointWriteError, leaving the previous one intact."""
    self._counter_values.assign(self._counters.as_array())
    # A fresh number every time: re-saving ckpt-N in place would not be atomic.
    number = self._next_number()
    try:
      if self._replay is not None:
        # The manager names checkpoints <dir>/ckpt-<number>.
        self._replay.save(os.path.join(self.directory, f'ckpt-{number}'))
      path = self._manager.save(checkpoint_number=number)
    except (OSError, tf.errors.OpError) as e:
      # The manager may list the failed checkpoint already: list again what the
      # index file on disk names (it is replaced atomically, so it names only
      # complete checkpoints), then delete the rest of the failed one.
      self._manager = self._open_manager()
      self._remove_unlisted()
      raise CheckpointWriteError(
          f'could not write checkpoint {number} into {self.directory} '
          f'({type(e).__name__}: {_first_line(e)}); the previous checkpoint '
          f'{self.latest or "(none)"} is intact') from e
    if self._replay is not None:
      self._replay.prune(self.directory, self._manager.checkpoints)
    _log.info('checkpoint written: %s', path)
    return path

  def _next_number(self) -> int:
    numbers = [int(path.rsplit('-', 1)[1]) for path in self._manager.checkpoints]
    return max(numbers, default=0) + 1

  def _open_manager(self) -> tf.train.CheckpointManager:
    return tf.train.CheckpointManager(self._checkpoint, self.directory, self._max_to_keep)

  def _rebuild_lost_index(self) -> None:
    """Lists again the checkpoints on disk when the index names none (it was deleted, or
    is garbled: TensorFlow then ignores it), rather than take them all for strays."""
    if self._manager.checkpoints:
      return
    numbers = sorted(int(match.group(1)) for match in
                     (_COMPLETE_CHECKPOINT.match(name) for name in os.listdir(self.directory))
                     if match)
    if not numbers:
      return
    paths = [os.path.join(self.directory, f'ckpt-{number}') for number in numbers]
    _log.warning('the checkpoint index in %s is missing or unreadable; listing again the '
                 'checkpoints on disk: %s', self.directory,
                 ', '.join(os.path.basename(p) for p in paths))
    # The manager keeps only paths whose timestamp is after the last preserved one.
    timestamps = [os.path.getmtime(f'{path}.index') for path in paths]
    tf.compat.v1.train.update_checkpoint_state(
        self.directory, paths[-1], all_model_checkpoint_paths=paths,
        all_model_checkpoint_timestamps=timestamps, last_preserved_timestamp=min(timestamps) - 1)
    self._manager = self._open_manager()

  def _remove_unlisted(self) -> None:
    """Deletes files of checkpoints that the index does not name, and index temporaries
    (this Checkpointer is the directory's only writer)."""
    listed = {int(path.rsplit('-', 1)[1]) for path in self._manager.checkpoints}
    for path in glob.glob(os.path.join(self.directory, '*')):
      name = os.path.basename(path)
      match = _CHECKPOINT_FILE.match(name)
      if not (match and int(match.group(1)) not in listed or _INDEX_TEMPORARY.match(name)):
        continue
      _log.info('removing %s (left by a save that did not complete)', path)
      if os.path.isdir(path):
        shutil.rmtree(path, ignore_errors=True)
      else:
        try:
          os.unlink(path)
        except OSError:
          pass

  @property
  def latest(self):
    return self._manager.latest_checkpoint


def _first_line(error: BaseException) -> str:
  return (str(error).strip().splitlines() or [''])[0]
