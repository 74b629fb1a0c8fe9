"""Running one system until the target or a cap: seed's learner and actors as `seed suite
learning_curve` starts them, or a peer's own training command in its venv.

Each run gets a fresh folder of its own under the bench's work folder (kept: logs, run
directory, episode files). Wall time counts from the system's launch, the command a user
would type, so start-up (imports, tracing, spawning workers) is part of it.
"""
import dataclasses
import os
import re
import subprocess
import tempfile
import time
from typing import Callable, List, Optional, Sequence

from bench import peer_episodes
from bench import peer_sample_factory
from bench import peer_venv
from bench.time_to_target_report import Caps, Result, reached_at
from seed import config
from seed.process import local_processes as processes
from seed.run_dir import records
from seed.run_dir.layout import RunDir

LAUNCHER = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'peer_launch.py')
EPISODE_DIR_ENV = 'SEED_BENCH_EPISODE_DIR'  # peer_launch.EPISODE_DIR_ENV
# How often a peer's episode files are read while it runs.
POLL_S = 5.0
LOG_TAIL_LINES = 30


def run_folder(workdir: str, label: str) -> str:
  """A new folder for one run of `label` under `workdir`."""
  os.makedirs(workdir, exist_ok=True)
  slug = re.sub(r'[^A-Za-z0-9]+', '_', label).strip('_').lower()
  return tempfile.mkdtemp(prefix=f'{slug}-', dir=workdir)


def log_tail(path: str, lines: int = LOG_TAIL_LINES) -> str:
  try:
    with open(path, errors='replace') as f:
      return ''.join(f.readlines()[-lines:]).rstrip()
  except OSError as error:
    return f'(no log: {error})'


@dataclasses.dataclass(frozen=True)
class SeedSystem:
  """seed's learner and actors on this machine, started with local_processes as `seed
  suite learning_curve` starts them, stopping at the target (--target_return over
  --return_window), the frame cap (--max_env_frames, over which --anneal_learning_rate
  anneals) or the wall cap."""
  label: str
  agent: str
  gin_file: str
  num_actors: int
  num_envs: int
  anneal: bool = False
  learner_flags: Sequence[str] = ()
  seed: int = 0

  @property
  def config(self) -> str:
    anneal = ', --anneal_learning_rate over the frame cap' if self.anneal else ''
    return f'`{self.gin_file}`{anneal}' + ''.join(f', `{f}`' for f in self.learner_flags)

  @property
  def layout(self) -> str:
    return f'{self.num_actors} × {self.num_envs}'

  def run(self, caps: Caps, workdir: str) -> Result:
    logdir = run_folder(workdir, self.label)
    gin_flags = [f'--gin_file={os.path.abspath(config.resolve_gin_file(self.gin_file))}']
    socket_flags, actor_address = processes.local_socket(logdir, self.learner_flags)
    flags = ([f'--max_env_frames={caps.frames}', f'--target_return={caps.target}',
              f'--return_window={caps.window}', f'--seed={self.seed}',
              '--checkpoint_interval_s=1800'] + (['--anneal_learning_rate'] if self.anneal else [])
             + socket_flags + gin_flags + list(self.learner_flags))
    print(f'[{self.label}] run directory {logdir}', flush=True)
    launched = time.time()
    learner = processes.start_learner(logdir, self.agent, flags)
    actors: List[subprocess.Popen] = []
    code, stopped_by = None, ''
    with processes.sigterm_raises():
      try:
        port = processes.wait_for_port(learner, logdir, poll_s=0.2)
        for i in range(self.num_actors):
          actors.append(processes.start_actor(
              i, self.num_envs, port, gin_flags + [f'--seed={self.seed}'],
              log_path=RunDir(logdir).actor_log(i), address=actor_address))
        code = processes.wait_learner(learner, actors, poll_s=1.0,
                                      timeout_s=max(1.0, caps.wall_s - (time.time() - launched)))
      except RuntimeError:  # The learner exited before serving.
        code = learner.returncode
      except TimeoutError:
        stopped_by = 'wall'
      finally:
        wall_s = time.time() - launched
        processes.stop(actors)
        processes.stop([learner], timeout_s=120)
    episodes = seed_episodes(logdir, launched)
    progress = records.read_latest_progress(logdir)
    result = Result(self.label, self.config, self.layout, 'cap', episodes,
                    progress.env_frames if progress else 0, wall_s, stopped_by or 'frames')
    if reached_at(episodes, caps.target, caps.window) is not None:
      result.status, result.stopped_by = 'reached', ''
    elif code not in (0, None) or (code is None and not stopped_by):
      result.status = 'crashed'
      result.detail = (f'learner exit {code} (None: every actor exited first); '
                       f'{RunDir(logdir).learner_log}:\n{log_tail(RunDir(logdir).learner_log)}')
    return result


def seed_episodes(logdir: str, launched_epoch_s: float) -> List[peer_episodes.Episode]:
  """The run's training episodes (episodes.csv), their times from `launched_epoch_s`.

  The learner's clock starts when it has built its model, after the launch: its start
  is the file's last write (mtime) less the last line's time, each line being one
  write(2) as it happens (learner/run_files.py)."""
  episodes = records.read_training_episodes(logdir)
  if not episodes:
    return []
  started = os.stat(RunDir(logdir).episodes_csv).st_mtime - episodes[-1].wall_time_s
  offset_s = started - launched_epoch_s
  return [peer_episodes.Episode(e.env_frames, round(e.training_s + offset_s, 3),
                                e.episode_return) for e in episodes]


@dataclasses.dataclass(frozen=True)
class PeerSystem:
  """A peer's own training command, run with bench/peer_launch.py in its venv.

  arguments(caps, run_folder): what follows `peer_launch.py`: the peer's name and its
  own flags. unavailable: why it cannot run here although its venv might exist ('' if
  it can)."""
  label: str
  config: str
  layout: str
  venv: peer_venv.Venv
  arguments: Callable[[Caps, str], List[str]]
  unavailable: str = ''

  def run(self, caps: Caps, workdir: str) -> Result:
    if not self.venv.ready():
      why = f'{self.unavailable}\n' if self.unavailable else ''
      return Result(self.label, self.config, self.layout, 'not installed',
                    detail=f'{why}install: {self.venv.install_hint()}')
    if self.unavailable:
      return Result(self.label, self.config, self.layout, 'not installed',
                    detail=self.unavailable)
    folder = run_folder(workdir, self.label)
    command = [self.venv.python, LAUNCHER, *self.arguments(caps, folder)]
    return run_command(self.label, self.config, self.layout, command, caps, folder)


def run_command(label: str, config_text: str, layout: str, command: List[str], caps: Caps,
                folder: str, poll_s: float = POLL_S) -> Result:
  """Runs a peer's `command` in `folder` until its episodes (EPISODE_DIR_ENV, under
  `folder`) reach the target, a cap is reached, or it exits; stops its process group."""
  episode_dir = os.path.join(folder, 'episodes')
  os.makedirs(episode_dir, exist_ok=True)
  log_path = os.path.join(folder, 'peer.log')
  # Keep seed's packages and venv out of the peer's interpreter.
  env = {k: v for k, v in os.environ.items() if k not in ('PYTHONPATH', 'VIRTUAL_ENV')}
  env.update({EPISODE_DIR_ENV: episode_dir, 'PYTHONUNBUFFERED': '1'})
  print(f'[{label}] {" ".join(command)}\n[{label}] log {log_path}', flush=True)
  launched = time.time()
  with open(log_path, 'w') as log:
    process = subprocess.Popen(command, cwd=folder, env=env, stdin=subprocess.DEVNULL,
                               stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
  stopped_by: Optional[str] = None
  try:
    while stopped_by is None:
      try:
        process.wait(timeout=poll_s)
        break  # It ended by itself: its own step budget, or a failure.
      except subprocess.TimeoutExpired:
        pass
      snapshot = peer_episodes.read_episodes(episode_dir, launched)
      if reached_at(snapshot.episodes, caps.target, caps.window) is not None:
        stopped_by = 'target'
      elif snapshot.env_frames >= caps.frames:
        stopped_by = 'frames'
      elif time.time() - launched >= caps.wall_s:
        stopped_by = 'wall'
  finally:
    wall_s = time.time() - launched
    peer_sample_factory.stop_group(process)  # Its workers too, whatever happened here.
  snapshot = peer_episodes.read_episodes(episode_dir, launched)
  result = Result(label, config_text, layout, 'cap', snapshot.episodes, snapshot.env_frames,
                  wall_s, stopped_by or 'frames')
  if reached_at(snapshot.episodes, caps.target, caps.window) is not None:
    result.status, result.stopped_by = 'reached', ''
  elif stopped_by is None and process.returncode != 0:
    result.status = 'crashed'
    result.detail = f'exit {process.returncode}; {log_path}:\n{log_tail(log_path)}'
  return result
