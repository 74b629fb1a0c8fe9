"""One learner per run directory: <logdir>/learner.lock names its owner.

Two learners on one run directory (a second job or study with the same run name, a
pod started twice) would overwrite each other's checkpoints and interleave their
episodes. The owner rewrites the lock's heartbeat every HEARTBEAT_S (or a quarter of
`stale_s`, if less); another learner
takes the directory only when the holder is gone:
  * no lock, or a heartbeat older than `stale_s` (the holder died without a word);
  * the same job (`seed.cluster.run_paths.job_id`: CLOUD_ML_JOB_ID, SLURM_JOB_ID): a
    restart of this job's learner;
  * the same kernel and PID namespace (`pid_space`), and the holder's process is gone.
A pid names a process only within its PID namespace: under containers on one node
(podman with the host's network and name) every learner is PID 1 on the same host
name, so the host and pid alone would take a live learner's lock at once. A holder in
another namespace is treated as another host: its heartbeat decides.
Otherwise it waits up to `stale_s` for the holder's heartbeat to stop (a learner
restarted on another machine finds its dead predecessor's lock still fresh) and then
refuses, naming the holder. JSON, no pickle; TensorFlow-free.
"""
import dataclasses
import json
import logging
import os
import socket
import threading
import time
import uuid
from typing import Callable, Mapping, Optional

import psutil

from seed.cluster import run_paths

LOCK_FILE = 'learner.lock'
HEARTBEAT_S = 30.0
_POLL_S = 5.0
_SETTLE_S = 1.0

_log = logging.getLogger(__name__)


class RunDirectoryInUse(Exception):
  """Another live learner owns the run directory."""


@dataclasses.dataclass(frozen=True)
class Owner:
  host: str
  pid: int
  job: str          # '' when the platform gives no job id (a laptop)
  started: float    # time.time() when it took the directory
  heartbeat: float  # time.time() of its latest sign of life
  pid_space: str = ''  # where `pid` names one process: boot id and PID namespace ('' unknown)
  instance: str = ''   # this learner process, unique (pids repeat across namespaces)

  def describe(self, now: float) -> str:
    job = f', job {self.job}' if self.job else ''
    return (f'learner pid {self.pid} on {self.host}{job}, heartbeat '
            f'{max(0.0, now - self.heartbeat):.0f} s ago')


def read(logdir: str) -> Optional[Owner]:
  """The lock's owner; None without a lock (or an unreadable one, left half-written)."""
  try:
    with open(os.path.join(logdir, LOCK_FILE)) as f:
      return Owner(**json.load(f))
  except (OSError, ValueError, TypeError):
    return None


def pid_space() -> str:
  """This kernel's boot id and this process's PID namespace ('' where /proc has neither)."""
  try:
    with open('/proc/sys/kernel/random/boot_id') as f:
      boot_id = f.read().strip()
    return f'{boot_id}/{os.readlink("/proc/self/ns/pid")}'
  except OSError:
    return ''


def _alive(pid: int) -> bool:
  """Whether process `pid` runs on this host (a zombie, exited but not reaped, does not)."""
  try:
    return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
  except psutil.NoSuchProcess:
    return False
  except psutil.AccessDenied:
    return True


class RunLock:
  """Holds <logdir>/learner.lock from `acquire` to `release`, with a heartbeat thread.

  `on_lost()` is called (once) if another learner took the directory over meanwhile
  (this one stalled past `stale_s`): this learner must stop.
  """

  def __init__(self, logdir: str, stale_s: float, on_lost: Callable[[], None] = lambda: None,
               environ: Mapping[str, str] = os.environ):
    self.path = os.path.join(logdir, LOCK_FILE)
    self.logdir = logdir
    self.stale_s = stale_s
    # Several beats within stale_s, so a live holder never looks stale.
    self.heartbeat_s = min(HEARTBEAT_S, stale_s / 4)
    self._on_lost = on_lost
    now = time.time()
    self.me = Owner(host=socket.gethostname(), pid=os.getpid(),
                    job=run_paths.job_id(None, environ) or '',
                    started=now, heartbeat=now, pid_space=pid_space(),
                    instance=uuid.uuid4().hex)
    self._stop = threading.Event()
    self._thread: Optional[threading.Thread] = None

  def _may_take(self, holder: Optional[Owner], now: float) -> bool:
    if holder is None or now - holder.heartbeat > self.stale_s:
      return True
    if holder.instance and holder.instance == self.me.instance:
      return True
    if holder.job and holder.job == self.me.job:
      return True
    return self._same_pid_space(holder) and not _alive(holder.pid)

  def _same_pid_space(self, holder: Owner) -> bool:
    """Whether the holder's pid can be looked up here (same kernel and PID namespace)."""
    if holder.host != self.me.host:
      return False
    if holder.pid_space or self.me.pid_space:
      return holder.pid_space == self.me.pid_space
    return True  # Neither knows its namespace (no /proc): the host stands for it.

  def _mine(self, holder: Optional[Owner]) -> bool:
    return holder is not None and holder.instance == self.me.instance

  def acquire(self) -> None:
    """Takes the directory, waiting up to `stale_s` for a live-looking holder's
    heartbeat to stop; RunDirectoryInUse if it does not."""
    deadline = time.monotonic() + self.stale_s + self.heartbeat_s
    waited = False
    while True:
      holder = read(self.logdir)
      now = time.time()
      if self._may_take(holder, now):
        self._write(now)
        time.sleep(_SETTLE_S)  # Another learner that wrote at the same moment shows now.
        if read(self.logdir) == self.me:
          if holder is not None and not self._mine(holder):
            _log.info('took over %s from %s', self.path, holder.describe(now))
          break
        continue
      if time.monotonic() > deadline:
        raise RunDirectoryInUse(
            f'{self.logdir} is in use by {holder.describe(now)}: a second learner would '
            'overwrite its checkpoints. Give this run another --logdir (a new run name), or '
            f'stop that learner; a lock whose heartbeat is older than {self.stale_s:.0f} s '
            '(--run_lock_stale_s) is taken over.')
      if not waited:
        _log.warning('%s is held by %s; waiting up to %.0f s for its heartbeat to stop',
                     self.path, holder.describe(now), self.stale_s + self.heartbeat_s)
        waited = True
      time.sleep(min(_POLL_S, self.heartbeat_s))
    self._thread = threading.Thread(target=self._beat, name='run-lock', daemon=True)
    self._thread.start()

  def _write(self, now: float) -> None:
    self.me = dataclasses.replace(self.me, heartbeat=now)
    tmp = f'{self.path}.{self.me.instance}.tmp'  # pids repeat across namespaces
    with open(tmp, 'w') as f:
      json.dump(dataclasses.asdict(self.me), f)
    os.replace(tmp, self.path)  # Whole or not at all: readers never see half a lock.

  def _beat(self) -> None:
    while not self._stop.wait(self.heartbeat_s):
      holder = read(self.logdir)
      if holder is not None and not self._mine(holder):
        _log.error('%s was taken over by %s while this learner held it; stopping',
                   self.path, holder.describe(time.time()))
        self._on_lost()
        return
      try:
        self._write(time.time())
      except OSError as e:  # A full disk: the next beat tries again.
        _log.warning('could not renew %s: %s', self.path, e)

  def release(self) -> None:
    """Stops the heartbeat and removes the lock if this learner still holds it."""
    self._stop.set()
    if self._thread is not None:
      self._thread.join(timeout=5)
    if self._mine(read(self.logdir)):
      try:
        os.remove(self.path)
      except OSError:
        pass  # Stale in stale_s anyway.
