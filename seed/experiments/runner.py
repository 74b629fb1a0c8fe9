"""Running one experiment in its run directory: a learner and its actors as separate
processes (seed.process.local_processes, as run_local.sh and the benchmarks start them), until
the learner stops. TensorFlow-free."""
import dataclasses
import json
import os
import subprocess
from typing import List, Optional

from seed.experiments.layers import Resolved
from seed.process import local_processes
from seed.run_dir import records, status
from seed.run_dir.layout import RunDir

# How often the runner looks at its processes while a run trains.
POLL_S = 1.0


@dataclasses.dataclass(frozen=True)
class Outcome:
  """How an experiment ended: 'finished', 'skipped' (finished before), 'stopped' (the
  learner stopped cleanly short of max_env_frames) or 'failed'; with a reason."""
  status: str
  detail: str = ''


def run(name: str, run_dir: str, resolved: Resolved) -> Outcome:
  """Runs (or resumes) one experiment until its learner stops; skips a finished one."""
  if status.is_finished(run_dir, resolved.max_env_frames):
    record = status.read_finished(run_dir)
    return Outcome('skipped', f'finished before at {record["env_frames"]:,} env frames')
  resumed = RunDir(run_dir).latest_checkpoint() is not None
  os.makedirs(RunDir(run_dir).logs, exist_ok=True)
  write_experiment_file(run_dir, name, resolved)
  actors = 'actor' if resolved.num_actors == 1 else 'actors'
  print(f'seed.experiments: {"resuming" if resumed else "starting"} {name} '
        f'({resolved.agent}, {resolved.num_actors} {actors} x {resolved.num_envs} envs, '
        f'to {resolved.max_env_frames:,} env frames) in {run_dir}', flush=True)
  learner_args = resolved.learner_args()
  socket_flags, actor_address = local_processes.local_socket(run_dir, learner_args)
  learner = local_processes.start_learner(run_dir, resolved.agent,
                                          socket_flags + learner_args, append=True)
  actors: List[subprocess.Popen] = []
  try:
    try:
      port = local_processes.wait_for_port(learner, run_dir, poll_s=0.2)
    except RuntimeError:
      return Outcome('failed', f'the learner exited with {learner.returncode} before serving: '
                     f'{local_processes.learner_last_line(run_dir)}')
    actors += local_processes.start_actors(run_dir, resolved.num_actors, resolved.num_envs,
                                           port, resolved.actor_args(), actor_address,
                                           append=True)
    code = local_processes.wait_learner(learner, actors, poll_s=POLL_S)
  finally:
    local_processes.stop(actors)
    local_processes.stop([learner], timeout_s=120)
  if code is None:
    return Outcome('failed', f'every actor exited ({_codes(actors)}) while the learner '
                   'still ran; see logs/actor_*.log')
  if code != 0:
    return Outcome('failed', f'the learner exited with {code}: {local_processes.learner_last_line(run_dir)}')
  record = status.read_finished(run_dir)
  if record is None or record['max_env_frames'] < resolved.max_env_frames:
    return Outcome('stopped', 'the learner stopped before max_env_frames')
  return Outcome('finished', f'{record["env_frames"]:,} env frames')


def write_experiment_file(run_dir: str, name: str, resolved: Resolved) -> None:
  """<run_dir>/experiment.json: the resolved settings and the layer each came from."""
  path = RunDir(run_dir).experiment_json
  tmp = f'{path}.tmp'
  with open(tmp, 'w') as f:
    json.dump({'name': name, **dataclasses.asdict(resolved)}, f, indent=1)
  os.replace(tmp, path)


def recent_return(run_dir: str, window_episodes: int = 20) -> Optional[float]:
  """The mean return of the run's last `window_episodes` training episodes (episodes.csv,
  without what a resume trained away)."""
  returns = [e.episode_return
             for e in records.read_training_episodes(run_dir)][-window_episodes:]
  return sum(returns) / len(returns) if returns else None


def _codes(processes: List[subprocess.Popen]) -> str:
  return ', '.join(f'exit {p.returncode}' for p in processes)
