"""Files a run appends to while it trains (progress.csv, episodes.csv, TensorBoard
events), written so that a full disk costs records, never the run.

A record that cannot be written (no space, a quota, an I/O error) is dropped
and the outage is logged once, with what was lost when it ends; training and
the actors' streams go on. Checkpoints are handled apart (`learner/checkpoint.py`); the
files' names and columns are seed.run_dir's.
"""
import logging
import os
from typing import Sequence

_log = logging.getLogger('seed.learner.run_files')


class Outage:
  """Tracks one output's failures: logs the first and the recovery, counts the drops."""

  def __init__(self, what: str):
    self.what = what
    self.dropped = 0      # records lost in the current outage
    self.failing = False

  def failed(self, error: BaseException) -> None:
    """A write failed: its record is dropped; the first failure of an outage is logged."""
    if not self.failing:
      _log.error('could not write %s (%s); dropping its records until it can be written '
                 'again; training goes on', self.what, _one_line(error))
    self.failing = True
    self.dropped += 1

  def skipped(self) -> None:
    """A record dropped without trying, during an outage (e.g. before a retry is due)."""
    self.dropped += 1

  def succeeded(self) -> None:
    if self.failing:
      _log.warning('writing %s again (%d records were dropped)', self.what, self.dropped)
    self.failing = False
    self.dropped = 0


class AppendOnlyCsv:
  """A CSV file that gets whole lines or nothing.

  Each line is one write(2) on an O_APPEND descriptor; a write that fails or is
  cut short is truncated back off, so a reader never sees half a line. A file
  left with a torn last line (a crash during a short write) is cut back to its
  last whole line when opened.

  `columns` is the header the file has: `header` for a new file, an existing file's
  own otherwise, which a resumed run's lines must follow (a newer learner may log more
  or other names than the one that began the file).
  """

  def __init__(self, path: str, header: Sequence[str]):
    self.path = path
    self._outage = Outage(os.path.basename(path))
    self._fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
    _cut_torn_line(self._fd)
    if os.fstat(self._fd).st_size == 0:
      self.columns = tuple(header)
      self.write_line(','.join(self.columns))
    else:
      self.columns = tuple(_first_line(self._fd).split(','))

  def write_line(self, line: str) -> bool:
    """Appends `line` and a newline; False when it was dropped."""
    data = (line + '\n').encode()
    size = os.fstat(self._fd).st_size
    try:
      written = 0
      while written < len(data):  # after a short write, the next says why (ENOSPC, EDQUOT)
        written += os.write(self._fd, data[written:])
    except OSError as e:
      try:
        os.ftruncate(self._fd, size)
      except OSError:
        pass  # _cut_torn_line repairs it at the next open.
      self._outage.failed(e)
      return False
    self._outage.succeeded()
    return True

  def sync(self) -> bool:
    """Makes what was written durable (fsync); False when that failed. On a network
    file system that stages writes (Cloud Storage FUSE), this is when the lines reach
    the bucket: without it they appear only when the file is closed, and are lost
    with a preempted machine."""
    try:
      os.fsync(self._fd)
    except OSError as e:
      self._outage.failed(e)
      return False
    return True

  def close(self) -> None:
    os.close(self._fd)


def _first_line(fd: int) -> str:
  first, offset = b'', 0
  while b'\n' not in first:
    chunk = os.pread(fd, 4096, offset)
    if not chunk:
      break
    first, offset = first + chunk, offset + len(chunk)
  return first.split(b'\n', 1)[0].decode()


def _cut_torn_line(fd: int) -> None:
  size = os.fstat(fd).st_size
  if size == 0 or os.pread(fd, 1, size - 1) == b'\n':
    return
  tail_start = max(0, size - (1 << 16))
  tail = os.pread(fd, size - tail_start, tail_start)
  os.ftruncate(fd, tail_start + tail.rfind(b'\n') + 1 if b'\n' in tail else tail_start)


def _one_line(error: BaseException) -> str:
  text = f'{type(error).__name__}: {error}'.replace('\n', ' ').replace('\t', '')
  return text if len(text) <= 300 else text[:300] + '...'
