"""A learner (V-trace on Catch unless told otherwise) and its actors as real processes,
for the fault scenarios: started, watched and always stopped."""
import datetime
import os
import re
import signal
import socket
import subprocess
from typing import Dict, Iterator, List, Optional, Tuple

from seed.process import local_processes as processes
from tests.system.faults import watch

TOY_ENV_FLAGS = ['--env=Catch']


# absl's prefix: I1123 15:23:20.232570 <thread> file.py:123] message
_LOG_LINE = re.compile(r'^[IWEF]\d{4} (\d\d:\d\d:\d\d\.\d{6}) +\d+ [^\]]+\] (.*)$')


def free_port() -> int:
  with socket.socket() as s:
    s.bind(('127.0.0.1', 0))
    return s.getsockname()[1]


def log_lines(path: str) -> Iterator[Tuple[float, str]]:
  """(seconds since midnight, message) of each absl line of a log (one run within a day)."""
  with open(path, errors='replace') as f:
    for line in f:
      match = _LOG_LINE.match(line)
      if match:
        clock = datetime.datetime.strptime(match.group(1), '%H:%M:%S.%f')
        yield (clock.hour * 3600 + clock.minute * 60 + clock.second +
               clock.microsecond / 1e6), match.group(2)


def checkpoints_written(log_path: str):
  """The checkpoints a learner's log says it wrote, oldest first."""
  return [message.split(': ', 1)[1] for _, message in log_lines(log_path)
          if message.startswith('checkpoint written: ')]


def resumed_from(log_path: str):
  """(checkpoint path the learner resumed from, replay sequences restored) from its log."""
  resumed, replay = None, 0
  for _, message in log_lines(log_path):
    if message.startswith('resumed from '):
      resumed = message[len('resumed from '):].split(': ', 1)[0]
    if message.startswith('replay restored: '):
      replay = int(message.split()[2])
  return resumed, replay


class ToyRun:
  """`with ToyRun(logdir) as run:` a learner on a free port; actors by id; all stopped at the end.

  gin_file: relative to the repository. learner_flags: added to the learner's
  (checkpoints every hour unless given).
  """

  def __init__(self, logdir: str, agent: str = 'vtrace', gin_file: str = 'gin/toy/vtrace.gin',
               learner_flags: Optional[List[str]] = None, env_flags: Optional[List[str]] = None):
    self.logdir = logdir
    self.agent = agent
    self._gin_flags = [f'--gin_file={os.path.join(processes.REPO, gin_file)}']
    self._env_flags = TOY_ENV_FLAGS if env_flags is None else env_flags
    self._learner_flags = (['--checkpoint_interval_s=3600', '--progress_interval_s=0.5'] +
                          list(learner_flags or []))
    self.learner: Optional[subprocess.Popen] = None
    self.learner_starts = 0
    self.port: Optional[int] = None
    self.actors: Dict[int, subprocess.Popen] = {}
    os.makedirs(os.path.join(logdir, 'logs'), exist_ok=True)

  def start_learner(self, port: int = 0) -> int:
    """Starts the learner (on `port`, or a free one) and returns its port once it listens."""
    flags = self._gin_flags + self._env_flags + self._learner_flags
    if port:
      flags.append(f'--server_address=localhost:{port}')
    self.learner_starts += 1
    self.learner = processes.start_learner(self.logdir, self.agent, flags,
                                           log_name=os.path.basename(self.learner_log_path))
    self.port = processes.wait_for_port(self.learner, self.logdir)
    return self.port

  def start_actor(self, actor_id: int, num_envs: int,
                  port: Optional[int] = None) -> subprocess.Popen:
    """An actor dialing the learner, or `port` on localhost (a proxy in between)."""
    self.actors[actor_id] = processes.start_actor(
        actor_id, num_envs, port or self.port, self._gin_flags + self._env_flags,
        log_path=os.path.join(self.logdir, 'logs', f'actor_{actor_id}.log'))
    return self.actors[actor_id]

  def kill_actor(self, actor_id: int) -> None:
    """SIGKILL: no goodbye, as when a machine or the OOM killer takes it."""
    actor = self.actors.pop(actor_id)
    actor.send_signal(signal.SIGKILL)
    actor.wait()

  def live_actors(self) -> List[int]:
    return [i for i, actor in self.actors.items() if actor.poll() is None]

  def rows(self) -> List[dict]:
    return watch.progress_rows(self.logdir)

  def wait_progress(self, done, timeout_s: float = 120) -> List[dict]:
    """Rows once done(rows); raises if the learner exits first."""
    return watch.wait_progress(self.logdir, done, timeout_s, watched=[self.learner])

  @property
  def learner_log_path(self) -> str:
    """The current learner's log: learner.log, then learner.2.log after a restart, ..."""
    suffix = '' if self.learner_starts <= 1 else f'.{self.learner_starts}'
    return os.path.join(self.logdir, 'logs', f'learner{suffix}.log')

  def learner_log(self, tail_chars: int = 4000) -> str:
    with open(self.learner_log_path, errors='replace') as f:
      return f.read()[-tail_chars:]

  def __enter__(self):
    return self

  def __exit__(self, *exc):
    processes.stop(list(self.actors.values()))
    if self.learner is not None:
      processes.stop([self.learner], timeout_s=120)
