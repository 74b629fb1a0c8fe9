"""Watching a learner from outside: its process (memory, threads, descriptors, CPU) and
its progress.csv (frames, connected envs, ... one row per --progress_interval_s)."""
import csv
import os
import threading
import time
from typing import Callable, List, NamedTuple, Optional, Sequence, Tuple, TypeVar

import psutil

T = TypeVar('T')


class ProcessSample(NamedTuple):
  t: float          # time.monotonic()
  rss_mb: float
  threads: int
  fds: int
  cpu_s: float      # the process's user + system CPU so far
  machine_busy_s: float  # all cores' non-idle time so far (other processes' load shows here)
  machine_s: float       # all cores' time so far


def sample_process(pid: int) -> Optional[ProcessSample]:
  """One sample of process `pid`; None once it is gone."""
  try:
    process = psutil.Process(pid)
    with process.oneshot():
      cpu = process.cpu_times()
      machine = psutil.cpu_times()
      total = sum(machine)
      return ProcessSample(time.monotonic(), process.memory_info().rss / 2**20,
                           process.num_threads(), process.num_fds(), cpu.user + cpu.system,
                           total - machine.idle - getattr(machine, 'iowait', 0.0), total)
  except psutil.Error:
    return None


def cpu_between(first: ProcessSample, last: ProcessSample) -> Tuple[float, float]:
  """(the process's CPU in % of one core, the machine's busy %) between two samples."""
  wall = max(last.t - first.t, 1e-9)
  machine = max(last.machine_s - first.machine_s, 1e-9)
  return (100 * (last.cpu_s - first.cpu_s) / wall,
          100 * (last.machine_busy_s - first.machine_busy_s) / machine)


class ProcessSampler:
  """Samples a process every `interval_s` in a thread; `with` starts and stops it."""

  def __init__(self, pid: int, interval_s: float = 0.5):
    self._pid, self._interval_s = pid, interval_s
    self.samples: List[ProcessSample] = []
    self._stop = threading.Event()
    self._thread = threading.Thread(target=self._run, name='sampler', daemon=True)

  def start(self) -> 'ProcessSampler':
    self._thread.start()
    return self

  def stop(self) -> None:
    self._stop.set()
    self._thread.join()

  def sample(self) -> Optional[ProcessSample]:
    """One sample now (not kept); None once the process is gone."""
    return sample_process(self._pid)

  def __enter__(self):
    return self.start()

  def __exit__(self, *exc):
    self.stop()

  def _run(self) -> None:
    while not self._stop.is_set():
      sample = sample_process(self._pid)
      if sample is not None:
        self.samples.append(sample)
      self._stop.wait(self._interval_s)

  def between(self, start: float, end: float) -> List[ProcessSample]:
    return [s for s in self.samples if start <= s.t <= end]


def progress_rows(logdir: str) -> List[dict]:
  """The rows of <logdir>/progress.csv so far (column name -> text); [] before the first."""
  try:
    with open(os.path.join(logdir, 'progress.csv'), newline='') as f:
      return list(csv.DictReader(f))
  except OSError:
    return []


def wait_until(found: Callable[[], T], what: str, timeout_s: float,
               watched: Sequence = ()) -> T:
  """found()'s first truthy result, polled every 0.2 s; RuntimeError if a `watched` Popen
  exits first, TimeoutError after `timeout_s`."""
  deadline = time.monotonic() + timeout_s
  while True:
    result = found()
    if result:
      return result
    for process in watched:
      if process.poll() is not None:
        raise RuntimeError(f'{" ".join(process.args[:4])}... exited with '
                           f'{process.returncode} waiting for {what}')
    if time.monotonic() > deadline:
      raise TimeoutError(f'no {what} within {timeout_s:.0f} s')
    time.sleep(0.2)


def wait_progress(logdir: str, done: Callable[[List[dict]], bool], timeout_s: float,
                  watched: Sequence = ()) -> List[dict]:
  """Polls progress.csv until `done(rows)`; raises if a `watched` Popen exits or on timeout."""
  deadline = time.monotonic() + timeout_s
  while True:
    rows = progress_rows(logdir)
    if rows and done(rows):
      return rows
    for process in watched:
      if process.poll() is not None:
        raise RuntimeError(f'{" ".join(process.args[:4])}... exited with {process.returncode}')
    if time.monotonic() > deadline:
      last = rows[-1] if rows else 'no row'
      raise TimeoutError(f'progress.csv did not reach the expected state in {timeout_s:.0f} s '
                         f'(last row: {last})')
    time.sleep(0.2)
