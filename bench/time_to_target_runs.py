"""Running one system until the target or a cap: seed's learner and actors as `seed suite
learning_curve` starts them, or a peer's own training command in its venv.

Each system has a folder of its own under the bench's work folder, named after its label
(kept: logs, run directory, episode files, its segments). A run that does not end in one
sitting (the bench's --stop_after_hours, or SIGTERM or Ctrl-C to the bench) is stopped
the way each system saves itself (seed's learner checkpoints on SIGTERM; Sample Factory and
RL Zoo save on SIGINT) and resumes from there when the bench runs again with the same work
folder; its clock is the segments' wall time added up (bench/time_to_target_segments.py).
Wall time counts from each launch of the system's command, the command a user would type,
so start-up (imports, tracing, spawning workers) is part of it.
"""
import dataclasses
import os
import re
import subprocess
import time
from typing import Callable, List, Optional, Sequence

from bench import peer_episodes
from bench import peer_sample_factory
from bench import peer_venv
from bench.time_to_target_report import Caps, Result, reached_at
from bench.time_to_target_segments import HEARTBEAT_S, Outcome, Segments
from seed import config
from seed.process import local_processes as processes
from seed.run_dir import records
from seed.run_dir.layout import RunDir

LAUNCHER = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'peer_launch.py')
EPISODE_DIR_ENV = 'SEED_BENCH_EPISODE_DIR'  # peer_launch.EPISODE_DIR_ENV
# How often a peer's episode files are read while it runs.
POLL_S = 5.0
LOG_TAIL_LINES = 30


def system_folder(workdir: str, label: str) -> str:
  """The folder of `label`'s run under `workdir` (made if new): the same on every start
  of the bench, so that a run resumes there."""
  slug = re.sub(r'[^A-Za-z0-9]+', '_', label).strip('_').lower()
  folder = os.path.join(workdir, slug)
  os.makedirs(folder, exist_ok=True)
  return folder


def log_tail(path: str, lines: int = LOG_TAIL_LINES) -> str:
  try:
    with open(path, errors='replace') as f:
      return ''.join(f.readlines()[-lines:]).rstrip()
  except OSError as error:
    return f'(no log: {error})'


def _stop_reason(caps: Caps, segments: Segments, pause_at_epoch_s: Optional[float],
                 now_epoch_s: float) -> str:
  """'wall' once the run's clock reaches the wall cap, 'paused' once the bench's sitting
  is over, else ''."""
  if segments.elapsed_s(now_epoch_s) >= caps.wall_s:
    return 'wall'
  if pause_at_epoch_s is not None and now_epoch_s >= pause_at_epoch_s:
    return 'paused'
  return ''


def _seconds_left(caps: Caps, segments: Segments, pause_at_epoch_s: Optional[float]) -> float:
  """How long to wait before the next heartbeat: HEARTBEAT_S, or less where the wall cap
  or the sitting's end comes first. (A wait of more than wait_learner's
  LEARNER_FINISHING_S, as HEARTBEAT_S is, sees every actor gone that long within it.)"""
  now = time.time()
  left = [HEARTBEAT_S, caps.wall_s - segments.elapsed_s(now)]
  if pause_at_epoch_s is not None:
    left.append(pause_at_epoch_s - now)
  return max(0.5, min(left))


def _finish(result: Result, segments: Segments) -> Result:
  """Writes a run's outcome to its segments unless it was only paused."""
  if result.status != 'paused':
    segments.finish(Outcome(result.status, result.stopped_by, result.detail))
  return result


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

  def run(self, caps: Caps, workdir: str,
          pause_at_epoch_s: Optional[float] = None) -> Result:
    logdir = system_folder(workdir, self.label)
    segments = Segments(logdir)
    if segments.finished or segments.elapsed_s() >= caps.wall_s:
      return _finish(self.result(logdir, segments, caps, None, 'wall'), segments)
    gin_flags = [f'--gin_file={os.path.abspath(config.resolve_gin_file(self.gin_file))}']
    socket_flags, actor_address = processes.local_socket(logdir, self.learner_flags)
    flags = ([f'--max_env_frames={caps.frames}', f'--target_return={caps.target}',
              f'--return_window={caps.window}', f'--seed={self.seed}',
              '--checkpoint_interval_s=1800'] + (['--anneal_learning_rate'] if self.anneal else [])
             + socket_flags + gin_flags + list(self.learner_flags))
    resumed = ' (resumed from its checkpoint)' if segments.segments else ''
    print(f'[{self.label}] run directory {logdir}{resumed}', flush=True)
    segment = segments.begin()
    # A resumed run's logs follow the earlier sittings'.
    learner = processes.start_learner(logdir, self.agent, flags, append=bool(resumed))
    actors: List[subprocess.Popen] = []
    code, stopped_by = None, ''
    try:
      with processes.sigterm_raises():
        try:
          port = processes.wait_for_port(learner, logdir, poll_s=0.2)
          actors += processes.start_actors(logdir, self.num_actors, self.num_envs, port,
                                           gin_flags + [f'--seed={self.seed}'], actor_address,
                                           append=bool(resumed))
          while not stopped_by:
            try:
              code = processes.wait_learner(
                  learner, actors, poll_s=1.0,
                  timeout_s=_seconds_left(caps, segments, pause_at_epoch_s))
              break
            except TimeoutError:
              segment.clock_start_epoch_s = _clock_start(logdir, segment.start_epoch_s)
              segments.heartbeat()
              stopped_by = _stop_reason(caps, segments, pause_at_epoch_s, time.time())
        except RuntimeError:  # The learner exited before serving.
          code = learner.returncode
        finally:
          processes.stop(actors)
          processes.stop([learner], timeout_s=120)  # It checkpoints on SIGTERM.
    except (SystemExit, KeyboardInterrupt):  # SIGTERM or Ctrl-C to the bench: a pause.
      stopped_by = 'paused'
    segment.clock_start_epoch_s = _clock_start(logdir, segment.start_epoch_s)
    segments.heartbeat()
    return _finish(self.result(logdir, segments, caps, code, stopped_by), segments)

  def result(self, logdir: str, segments: Segments, caps: Caps, code: Optional[int],
             stopped_by: str) -> Result:
    """The run as it stands in `logdir`; the saved outcome for a finished one, else from
    the last segment's learner exit `code` and `stopped_by` ('wall', 'paused' or '')."""
    episodes = seed_episodes(logdir, segments)
    progress = records.read_latest_progress(logdir)
    result = Result(self.label, self.config, self.layout, 'cap', episodes,
                    progress.env_frames if progress else 0, segments.elapsed_s(),
                    stopped_by or 'frames')
    if segments.outcome is not None:
      result.status = segments.outcome.status
      result.stopped_by, result.detail = segments.outcome.stopped_by, segments.outcome.detail
    elif reached_at(episodes, caps.target, caps.window) is not None:
      result.status, result.stopped_by = 'reached', ''
    elif stopped_by == 'paused':
      result.status = 'paused'
    elif code not in (0, None) or (code is None and not stopped_by):
      result.status = 'crashed'
      result.detail = (f'learner exit {code} (None: every actor exited first); '
                       f'{RunDir(logdir).learner_log}:\n{log_tail(RunDir(logdir).learner_log)}')
    return result


def _clock_start(logdir: str, segment_start_epoch_s: float) -> Optional[float]:
  """When the learner of the segment that began at `segment_start_epoch_s` started its
  clock, once it has logged an episode; None before.

  The learner's clock starts when it has built its model, after the launch: its start is
  episodes.csv's last write (mtime) less the last line's time, each line being one
  write(2) as it happens (learner/run_files.py). A write after the segment's launch is
  this segment's learner's."""
  path = RunDir(logdir).episodes_csv
  if not os.path.exists(path) or os.stat(path).st_mtime <= segment_start_epoch_s:
    return None
  episodes = records.read_training_episodes(logdir)
  last = episodes[-1] if episodes else None
  return os.stat(path).st_mtime - last.wall_time_s if last else None


def seed_episodes(logdir: str, segments: Segments) -> List[peer_episodes.Episode]:
  """The run's training episodes that its training kept (episodes.csv, less what a resume
  threw away), timed on the run's clock: the i-th start of the learner that logged
  episodes is the i-th segment whose clock start is known."""
  clocks = [s.clock_start_epoch_s for s in segments.segments
            if s.clock_start_epoch_s is not None]
  timed = []
  for e in records.read_training_episodes(logdir):
    if e.learner_start < len(clocks):
      wall_s = segments.bench_s(clocks[e.learner_start] + e.wall_time_s)
    else:  # Its start's clock was never read (the bench was killed first): training time.
      wall_s = e.training_s
    timed.append(peer_episodes.Episode(e.env_frames, round(wall_s, 3), e.episode_return))
  return timed


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

  def run(self, caps: Caps, workdir: str,
          pause_at_epoch_s: Optional[float] = None) -> Result:
    if not self.venv.ready():
      why = f'{self.unavailable}\n' if self.unavailable else ''
      return Result(self.label, self.config, self.layout, 'not installed',
                    detail=f'{why}install: {self.venv.install_hint()}')
    if self.unavailable:
      return Result(self.label, self.config, self.layout, 'not installed',
                    detail=self.unavailable)
    folder = system_folder(workdir, self.label)
    command = [self.venv.python, LAUNCHER, *self.arguments(caps, folder)]
    return run_command(self.label, self.config, self.layout, command, caps, folder,
                       pause_at_epoch_s=pause_at_epoch_s)


def run_command(label: str, config_text: str, layout: str, command: List[str], caps: Caps,
                folder: str, poll_s: float = POLL_S,
                pause_at_epoch_s: Optional[float] = None) -> Result:
  """Runs a peer's `command` in `folder` until its episodes (EPISODE_DIR_ENV, under
  `folder`) reach the target, a cap is reached, the bench's sitting ends
  (`pause_at_epoch_s`, SIGTERM, Ctrl-C) or it exits; stops its process group (SIGINT
  first: the peers save on it). A run the folder's segments say ended is reported again,
  not run; one paused before goes on (the command resumes the peer from its own save)."""
  episode_dir = os.path.join(folder, 'episodes')
  os.makedirs(episode_dir, exist_ok=True)
  segments = Segments(folder)
  if segments.finished or segments.elapsed_s() >= caps.wall_s:
    return _finish(_peer_result(label, config_text, layout, caps, folder, segments, 'wall',
                                None), segments)
  log_path = os.path.join(folder, 'peer.log')
  # Keep seed's packages and venv out of the peer's interpreter.
  env = {k: v for k, v in os.environ.items() if k not in ('PYTHONPATH', 'VIRTUAL_ENV')}
  env.update({EPISODE_DIR_ENV: episode_dir, 'PYTHONUNBUFFERED': '1'})
  resumed = ' (resumed)' if segments.segments else ''
  print(f'[{label}] {" ".join(command)}{resumed}\n[{label}] log {log_path}', flush=True)
  segments.begin()
  with open(log_path, 'a') as log:  # A resumed run's log follows the earlier sittings'.
    process = subprocess.Popen(command, cwd=folder, env=env, stdin=subprocess.DEVNULL,
                               stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
  stopped_by = ''
  beat = time.time()
  try:
    with processes.sigterm_raises():
      try:
        while not stopped_by:
          try:
            process.wait(timeout=poll_s)
            break  # It ended by itself: its own step budget, or a failure.
          except subprocess.TimeoutExpired:
            pass
          if time.time() - beat >= HEARTBEAT_S:
            segments.heartbeat()
            beat = time.time()
          snapshot = peer_episodes.read_episodes(episode_dir, segments.bench_s)
          if reached_at(snapshot.episodes, caps.target, caps.window) is not None:
            stopped_by = 'target'
          elif snapshot.env_frames >= caps.frames:
            stopped_by = 'frames'
          else:
            stopped_by = _stop_reason(caps, segments, pause_at_epoch_s, time.time())
      finally:
        peer_sample_factory.stop_group(process)  # Its workers too, whatever happened here.
  except (SystemExit, KeyboardInterrupt):  # SIGTERM or Ctrl-C to the bench: a pause.
    stopped_by = 'paused'
  segments.heartbeat()
  return _finish(_peer_result(label, config_text, layout, caps, folder, segments, stopped_by,
                              process.returncode), segments)


def _peer_result(label: str, config_text: str, layout: str, caps: Caps, folder: str,
                 segments: Segments, stopped_by: str, returncode: Optional[int]) -> Result:
  """The peer's run as its episode files and segments say; the saved outcome for a
  finished one, else from how the last segment stopped."""
  snapshot = peer_episodes.read_episodes(os.path.join(folder, 'episodes'), segments.bench_s)
  result = Result(label, config_text, layout, 'cap', snapshot.episodes, snapshot.env_frames,
                  segments.elapsed_s(),
                  stopped_by if stopped_by in ('wall', 'frames') else 'frames')
  log_path = os.path.join(folder, 'peer.log')
  if segments.outcome is not None:
    result.status = segments.outcome.status
    result.stopped_by, result.detail = segments.outcome.stopped_by, segments.outcome.detail
  elif reached_at(snapshot.episodes, caps.target, caps.window) is not None:
    result.status, result.stopped_by = 'reached', ''
  elif stopped_by == 'paused':
    result.status = 'paused'
  elif not stopped_by and returncode not in (0, None):
    result.status = 'crashed'
    result.detail = f'exit {returncode}; {log_path}:\n{log_tail(log_path)}'
  return result
