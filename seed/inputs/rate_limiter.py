"""Replay-ratio control: keep samples per insert near a target (as Reverb's SampleToInsertRatio).

Counting one sampled item (sequence) as one sample, the limiter tracks
  diff = inserts * samples_per_insert - samples
and keeps it in [min_diff, max_diff], centred on offset = samples_per_insert *
min_size_to_sample (the diff at the moment sampling may start):
  * an insert of k items may proceed while inserts + k <= min_size_to_sample (filling
    up is never blocked) or diff + k * samples_per_insert <= max_diff;
  * a sample of k items may proceed once inserts >= min_size_to_sample and
    diff - k >= min_diff.
The side that runs ahead blocks until the other catches up. With error_buffer e
(a number), min_diff = offset - e and max_diff = offset + e; a pair gives
(min_diff, max_diff) directly. The band must admit one insert and one sample of
the sizes used, or both sides could block for ever: max_diff - min_diff >=
samples_per_insert + k for samples of k items (checked in `await_sample`).

`await_insert` / `await_sample` reserve: when they return True the operation is
already counted (atomically with the check, so two threads cannot both pass on
the same headroom) and the caller must then do it. Counting inserts rather than
the replay's size assumes min_size_to_sample <= the replay's capacity; after a
resume, restore the counts with `load_state_dict` so the ratio carries on.
"""
import threading
import time
from typing import Dict, Optional, Tuple, Union

# How often a waiter re-checks a stop Event that was set directly (not via stop()).
_POLL_S = 0.1


class SampleToInsertRatio:
  """Blocks inserters or samplers to hold samples / inserts near `samples_per_insert`."""

  def __init__(self, samples_per_insert: float, min_size_to_sample: int,
               error_buffer: Union[float, Tuple[float, float]],
               stop_event: Optional[threading.Event] = None):
    if not samples_per_insert > 0:
      raise ValueError(f'samples_per_insert must be > 0, got {samples_per_insert}.')
    if not isinstance(min_size_to_sample, int) or min_size_to_sample < 1:
      raise ValueError(f'min_size_to_sample must be an int >= 1, got {min_size_to_sample!r}.')
    offset = samples_per_insert * min_size_to_sample
    if isinstance(error_buffer, (tuple, list)):
      if len(error_buffer) != 2:
        raise ValueError(f'error_buffer must be a number or (min_diff, max_diff), got '
                         f'{error_buffer!r}.')
      min_diff, max_diff = (float(x) for x in error_buffer)
    else:
      min_diff, max_diff = offset - float(error_buffer), offset + float(error_buffer)
    # One insert and one single-item sample must fit, else the first wait deadlocks.
    if not max_diff - min_diff >= samples_per_insert + 1:
      raise ValueError(f'error_buffer {error_buffer!r} gives a band [{min_diff}, {max_diff}] '
                       f'narrower than samples_per_insert + 1 = {samples_per_insert + 1}; '
                       f'widen it (e.g. error_buffer >= samples_per_insert * batch_size).')
    self.samples_per_insert = float(samples_per_insert)
    self.min_size_to_sample = min_size_to_sample
    self.min_diff = min_diff
    self.max_diff = max_diff
    self._cond = threading.Condition()
    self._stop = stop_event or threading.Event()
    self._inserts = 0
    self._samples = 0

  @property
  def inserts(self) -> int:
    """Items counted as inserted so far."""
    return self._inserts

  @property
  def samples(self) -> int:
    """Items counted as sampled so far."""
    return self._samples

  @property
  def diff(self) -> float:
    """inserts * samples_per_insert - samples."""
    with self._cond:
      return self._inserts * self.samples_per_insert - self._samples

  def can_sample(self, num_samples: int = 1) -> bool:
    """Whether a sample of `num_samples` items may proceed now (does not count it)."""
    with self._cond:
      return self._can_sample(num_samples)

  def _can_insert(self, num_inserts: int) -> bool:
    if self._inserts + num_inserts <= self.min_size_to_sample:
      return True
    diff = (self._inserts + num_inserts) * self.samples_per_insert - self._samples
    return diff <= self.max_diff

  def _can_sample(self, num_samples: int) -> bool:
    if self._inserts < self.min_size_to_sample:
      return False
    diff = self._inserts * self.samples_per_insert - self._samples - num_samples
    return diff >= self.min_diff

  def _await(self, ready, timeout_s: Optional[float]) -> bool:
    """Waits (lock held) until ready() or stop or timeout; returns ready() at the end."""
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    while not ready():
      if self._stop.is_set():
        return False
      wait_s = _POLL_S
      if deadline is not None:
        remaining_s = deadline - time.monotonic()
        if remaining_s <= 0:
          return False
        wait_s = min(wait_s, remaining_s)
      self._cond.wait(wait_s)
    return not self._stop.is_set()

  def await_insert(self, timeout_s: Optional[float] = None, num_inserts: int = 1) -> bool:
    """Blocks while inserting would run too far ahead of sampling; counts the insert.

    Args:
      timeout_s: seconds to wait at most; None waits until allowed or stopped.
      num_inserts: items about to be inserted, >= 1.

    Returns:
      True (the inserts are counted; do them), or False on timeout or stop.
    """
    if num_inserts < 1:
      raise ValueError(f'num_inserts must be >= 1, got {num_inserts}.')
    with self._cond:
      if not self._await(lambda: self._can_insert(num_inserts), timeout_s):
        return False
      self._inserts += num_inserts
      self._cond.notify_all()
      return True

  def await_sample(self, timeout_s: Optional[float] = None, num_samples: int = 1) -> bool:
    """Blocks while below min size or sampling would run too far ahead; counts the samples.

    Args:
      timeout_s: seconds to wait at most; None waits until allowed or stopped.
      num_samples: items about to be sampled (the batch size), >= 1.

    Returns:
      True (the samples are counted; draw them), or False on timeout or stop.

    Raises:
      ValueError: if num_samples < 1 or the band is too narrow for it (would deadlock).
    """
    if num_samples < 1:
      raise ValueError(f'num_samples must be >= 1, got {num_samples}.')
    if self.max_diff - self.min_diff < self.samples_per_insert + num_samples:
      raise ValueError(f'num_samples {num_samples} does not fit the band [{self.min_diff}, '
                       f'{self.max_diff}] with samples_per_insert {self.samples_per_insert}: '
                       f'needs max_diff - min_diff >= samples_per_insert + num_samples, '
                       f'else inserter and sampler can block each other for ever.')
    with self._cond:
      if not self._await(lambda: self._can_sample(num_samples), timeout_s):
        return False
      self._samples += num_samples
      self._cond.notify_all()
      return True

  def stop(self) -> None:
    """Sets the stop Event and wakes every waiter; all awaits then return False."""
    with self._cond:
      self._stop.set()
      self._cond.notify_all()

  def state_dict(self) -> Dict[str, int]:
    """The counts, to checkpoint next to the replay."""
    with self._cond:
      return {'inserts': self._inserts, 'samples': self._samples}

  def load_state_dict(self, state: Dict[str, int]) -> None:
    """Restores the counts of `state_dict` (and wakes waiters: the band moved)."""
    with self._cond:
      self._inserts = int(state['inserts'])
      self._samples = int(state['samples'])
      self._cond.notify_all()
