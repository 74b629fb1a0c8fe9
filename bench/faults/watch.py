"""Watching a learner from outside: its process (memory, threads, descriptors, CPU) and
its progress.csv (frames, connected envs, ... one row per --progress_interval_s)."""
import csv
import os
import threading
import time
from typing import Callable, List, NamedTuple, Optional, Sequence

import psutil


class ProcessSample(NamedTuple):
  t: float          # time.monotonic()
  rss_mb: float
  threads: int
  fds: int
  cpu_s: float      # the process's user + system CPU so far


def sample_process(pid: int) -> Optional[ProcessSample]:
  """One sample of process `pid`; None once it is gone."""
  try:
    process = psutil.Process(pid)
    with process.oneshot():
      cpu = process.cpu_times()
      return ProcessSample(time.monotonic(), process.memory_info().rss / 2**20,
                           process.num_threads(), process.num_fds(), cpu.user + cpu.system)
  except psutil.Error:
    return None


class ProcessSampler:
  """Samples a process every `interval_s` in a thread; `with` starts and stops it."""

  def __init__(self, pid: int, interval_s: float = 0.5):
    self._pid, self._interval_s = pid, interval_s
    self.samples: List[ProcessSample] = []
    self._stop = threading.Event()
    self._thread = threading.Thread(target=self._run, name='sampler', daemon=True)

  def __enter__(self):
    self._thread.start()
    return self

  def __exit__(self, *exc):
    self._stop.set()
    self._thread.join()

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
