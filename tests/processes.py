"""Launches real learner and actor processes for end-to-end tests."""
import os
import signal
import subprocess
import sys
import time
from typing import List, Optional

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _env():
  env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL='2', PYTHONUNBUFFERED='1')
  env['PYTHONPATH'] = REPO + os.pathsep + env.get('PYTHONPATH', '')
  return env


class Run:
  """A learner on a free port plus its actors, all logging into the run directory."""

  def __init__(self, logdir: str, gin_file: str, agent: str = 'vtrace',
               gin_bindings: Optional[List[str]] = None, learner_flags: Optional[List[str]] = None):
    self.logdir = str(logdir)
    self.gin_file = os.path.join(REPO, gin_file)
    self.gin_bindings = list(gin_bindings or [])
    self.agent = agent
    self.learner_flags = list(learner_flags or [])
    self.learner: Optional[subprocess.Popen] = None
    self.actors: List[subprocess.Popen] = []
    os.makedirs(os.path.join(self.logdir, 'logs'), exist_ok=True)

  def _gin_flags(self):
    return [f'--gin_file={self.gin_file}'] + [f'--gin_bindings={b}' for b in self.gin_bindings]

  def start_learner(self, timeout_s: float = 120, extra_flags: Optional[List[str]] = None) -> int:
    port_file = os.path.join(self.logdir, 'port')
    if os.path.exists(port_file):
      os.remove(port_file)
    log = open(os.path.join(self.logdir, 'logs', 'learner.log'), 'a')
    self.learner = subprocess.Popen(
        [sys.executable, '-m', 'seed.learner.main', f'--logdir={self.logdir}',
         f'--agent={self.agent}', '--server_address=localhost:0', '--progress_interval_s=2']
        + self._gin_flags() + self.learner_flags + list(extra_flags or []),
        stdout=log, stderr=subprocess.STDOUT, env=_env(), cwd=REPO)
    deadline = time.monotonic() + timeout_s
    while not os.path.exists(port_file):
      if self.learner.poll() is not None:
        raise RuntimeError(f'learner exited with {self.learner.returncode}:\n{self.learner_log()}')
      if time.monotonic() > deadline:
        raise TimeoutError(f'learner did not start within {timeout_s} s:\n{self.learner_log()}')
      time.sleep(0.2)
    with open(port_file) as f:
      self.port = int(f.read())
    return self.port

  def start_actors(self, num_actors: int, num_envs: int, first_id: int = 0,
                   extra_flags: Optional[List[str]] = None,
                   port: Optional[int] = None) -> List[subprocess.Popen]:
    started = []
    for actor_id in range(first_id, first_id + num_actors):
      log = open(os.path.join(self.logdir, 'logs', f'actor_{actor_id}.log'), 'a')
      started.append(subprocess.Popen(
          [sys.executable, '-m', 'seed.actors.main', f'--actor_id={actor_id}',
           f'--num_envs={num_envs}', f'--server_address=localhost:{port or self.port}']
          + self._gin_flags() + list(extra_flags or []),
          stdout=log, stderr=subprocess.STDOUT, env=_env(), cwd=REPO))
    self.actors += started
    return started

  def wait_learner(self, timeout_s: float) -> int:
    try:
      return self.learner.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
      self.learner.send_signal(signal.SIGINT)
      self.learner.wait(timeout=60)
      raise

  def stop(self) -> None:
    for process in self.actors + [self.learner]:
      if process is not None and process.poll() is None:
        process.send_signal(signal.SIGTERM)
    for process in self.actors + [self.learner]:
      if process is not None:
        try:
          process.wait(timeout=60)
        except subprocess.TimeoutExpired:
          process.kill()

  def learner_log(self) -> str:
    with open(os.path.join(self.logdir, 'logs', 'learner.log')) as f:
      return f.read()[-6000:]

  def actor_log(self, actor_id: int) -> str:
    with open(os.path.join(self.logdir, 'logs', f'actor_{actor_id}.log')) as f:
      return f.read()[-6000:]

  def episodes(self):
    """[(env_frames, episode_return)] from episodes.csv."""
    with open(os.path.join(self.logdir, 'episodes.csv')) as f:
      next(f)
      return [(int(row.split(',')[0]), float(row.split(',')[1])) for row in f]

  def __enter__(self):
    return self

  def __exit__(self, *exc):
    self.stop()
