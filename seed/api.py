"""Train and evaluate from Python, with the same processes `./run_local.sh` starts.

  import seed
  run = seed.train(env='toy', agent='vtrace', num_actors=2, num_envs=4,
                   gin_bindings=["EnvConfig.name='Catch'"], logdir='runs/catch',
                   max_env_frames=200_000)
  run.wait()          # returns when the learner stops: max_env_frames, or run.stop()
  print(run.progress().env_frames, run.checkpoint)
  report = seed.evaluate(run.logdir, episodes=10)
  print(report.mean_return, report.returns)

`env` names the config family as `run_local.sh`'s first argument does: the gin file is
gin/<env>/<agent>.gin unless `gin_file` is given. The learner and the actors are child
processes (`python -m seed.learner.main`, `python -m seed.actors.main`, as the
experiment runner and the benchmarks start them); `seed.evaluate` runs
`python -m seed.evaluate` and reads the report it writes. Nothing here imports
TensorFlow. A run directory that holds a checkpoint resumes from it.
"""
import dataclasses
import json
import os
import re
import signal
import subprocess
import sys
from typing import List, Optional, Sequence

from seed import config
from seed.process import local_processes
from seed.run_dir import records
from seed.run_dir.layout import RunDir

REPO = local_processes.REPO


# The learner's latest progress line, and one training episode (seed.run_dir.records).
Progress = records.Progress
Episode = records.TrainingEpisode


@dataclasses.dataclass(frozen=True)
class EvaluationReport:
  """What `seed.evaluate` played: the checkpoint, the policy, every episode's return
  and length, their mean and spread, and the files written."""
  checkpoint: str
  policy: str
  returns: tuple
  lengths_steps: tuple
  mean_return: float
  std_return: float
  report_path: str
  video_path: Optional[str]


class TrainingRun:
  """A learner and its actors training in `logdir`; see `train`."""

  def __init__(self, logdir: str, learner: subprocess.Popen,
               actors: List[subprocess.Popen]):
    self.logdir = logdir
    self._learner = learner
    self._actors = actors

  @property
  def running(self) -> bool:
    return self._learner.poll() is None

  @property
  def returncode(self) -> Optional[int]:
    """The learner's exit code (0: stopped cleanly, with a final checkpoint), or None
    while it runs."""
    return self._learner.poll()

  def wait(self, timeout_s: Optional[float] = None) -> int:
    """Waits for the learner to stop (its max_env_frames, target_return, or `stop`),
    then stops the actors; the learner's exit code. TimeoutError after `timeout_s`,
    with everything still running; RuntimeError (the learner stopped with a checkpoint)
    when every actor exited while the learner still ran."""
    try:
      code = local_processes.wait_learner(self._learner, self._actors, poll_s=0.5,
                                          timeout_s=timeout_s)
    except TimeoutError as e:
      raise TimeoutError(f'the run in {self.logdir} still trains after {timeout_s} s') from e
    if code is None:
      codes = ', '.join(str(actor.returncode) for actor in self._actors)
      self.stop()
      raise RuntimeError(f'every actor exited (codes {codes}) while the learner still ran; '
                         f'see {RunDir(self.logdir).logs}/actor_*.log')
    local_processes.stop(self._actors)
    return code

  def stop(self, timeout_s: float = 120) -> int:
    """SIGTERM to the learner, which writes a checkpoint and stops, then to the actors;
    the learner's exit code."""
    if self._learner.poll() is None:
      self._learner.send_signal(signal.SIGTERM)
    local_processes.stop([self._learner], timeout_s=timeout_s)
    local_processes.stop(self._actors)
    return self._learner.returncode

  def progress(self) -> Optional[Progress]:
    """The latest progress line, or None before the first."""
    return records.read_latest_progress(self.logdir)

  def episodes(self) -> List[Episode]:
    """Every training episode so far, in the order they ended, without those a resume
    trained away (played after the checkpoint it resumed from)."""
    return records.read_training_episodes(self.logdir)

  @property
  def checkpoint(self) -> Optional[str]:
    """The latest complete checkpoint's prefix, or None before the first."""
    return RunDir(self.logdir).latest_checkpoint()

  def __enter__(self) -> 'TrainingRun':
    return self

  def __exit__(self, *exc) -> None:
    self.stop()


def _gin_file(env: str, agent: str, gin_file: Optional[str]) -> str:
  if gin_file:
    if not os.path.exists(gin_file):
      raise ValueError(f'gin_file {gin_file!r} does not exist')
    return os.path.abspath(gin_file)
  root = config.gin_root()
  path = os.path.join(root, env, f'{agent}.gin')
  if not os.path.exists(path):
    families = sorted(name for name in os.listdir(root)
                      if os.path.exists(os.path.join(root, name, f'{agent}.gin')))
    raise ValueError(f'no config gin/{env}/{agent}.gin; env families with a {agent!r} config: '
                     f'{", ".join(families) or "none"} (or pass gin_file=)')
  return path


def train(env: str, agent: str, num_actors: int = 2, num_envs: int = 4,
          gin_bindings: Sequence[str] = (), logdir: Optional[str] = None,
          max_env_frames: Optional[int] = None, seed: int = 0,
          gin_file: Optional[str] = None, learner_flags: Sequence[str] = (),
          actor_flags: Sequence[str] = ()) -> TrainingRun:
  """Starts a learner and `num_actors` actors of `num_envs` envs each; returns once the
  actors are started, with the run training.

  Args:
    env: the config family, gin/<env>/ (toy, classic, atari, mujoco, dmc, dmlab).
    agent: vtrace, r2d2, ppo, sac, ...; gin/<env>/<agent>.gin is the config.
    gin_bindings: bindings over the gin file, e.g. "EnvConfig.name='Catch'".
    logdir: the run directory (default runs/<env>_<agent>, as run_local.sh); one with
      a checkpoint resumes from it.
    max_env_frames: the learner stops there (default: never; call `stop`).
    seed: the learner's and the actors' --seed.
    learner_flags, actor_flags: more flags, e.g. ['--target_return=400'].

  Raises:
    ValueError: a config that does not exist, or counts below 1.
    RuntimeError: the learner stopped before serving (the message has its last log line).
  """
  if num_actors < 1 or num_envs < 1:
    raise ValueError(f'num_actors={num_actors}, num_envs={num_envs}; both must be >= 1')
  path = _gin_file(env, agent, gin_file)
  logdir = os.path.abspath(logdir or os.path.join('runs', f'{env}_{agent}'))
  gin_flags = [f'--gin_file={path}'] + [f'--gin_bindings={b}' for b in gin_bindings]
  socket_flags, actor_address = local_processes.local_socket(logdir, learner_flags)
  flags = gin_flags + [f'--seed={seed}'] + socket_flags + list(learner_flags)
  if max_env_frames is not None:
    flags.append(f'--max_env_frames={max_env_frames}')
  learner = local_processes.start_learner(logdir, agent, flags, append=True)
  try:
    port = local_processes.wait_for_port(learner, logdir, poll_s=0.2)
  except RuntimeError as e:
    raise RuntimeError(f'the learner exited with {learner.returncode} before serving: '
                       f'{local_processes.learner_last_line(logdir)}') from e
  actors = local_processes.start_actors(
      logdir, num_actors, num_envs, port, gin_flags + [f'--seed={seed}'] + list(actor_flags),
      actor_address, append=True)
  return TrainingRun(logdir, learner, actors)


def evaluate(logdir: str, episodes: int = 10, policy: str = 'greedy', seed: int = 0,
             num_envs: int = 1, checkpoint: Optional[str] = None,
             video: Optional[str] = None, extra_args: Sequence[str] = ()) -> EvaluationReport:
  """Plays `episodes` episodes of the run's checkpoint (`python -m seed.evaluate`: the
  latest, or `checkpoint`) with the `policy` ('greedy' or 'sample'); `video` writes env
  0's first episode as MP4 there. ValueError with the evaluator's one-line reason when it
  refuses (an unknown policy, a checkpoint of another network, ...)."""
  args = [f'--logdir={logdir}', f'--episodes={episodes}', f'--policy={policy}',
          f'--seed={seed}', f'--num_envs={num_envs}']
  if checkpoint:
    args.append(f'--checkpoint={checkpoint}')
  if video:
    args.append(f'--video={video}')
  done = subprocess.run([sys.executable, '-m', 'seed.evaluate', *args, *extra_args],
                        capture_output=True, text=True, env=local_processes.child_env(),
                        cwd=REPO)
  if done.returncode != 0:
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    raise ValueError(lines[-1] if lines else f'seed.evaluate exited with {done.returncode}')
  written = re.search(r'^written: (.*)$', done.stdout, re.M)
  report_path = next(p for p in written.group(1).split(', ') if p.endswith('.json'))
  with open(report_path) as f:
    report = json.load(f)
  returns = tuple(e['return'] for e in report['per_episode'])
  return EvaluationReport(
      checkpoint=report['checkpoint'], policy=report['policy'], returns=returns,
      lengths_steps=tuple(e['length_steps'] for e in report['per_episode']),
      mean_return=report['summary']['return']['mean'],
      std_return=report['summary']['return']['std'], report_path=report_path,
      video_path=video if video and os.path.exists(video) else None)
