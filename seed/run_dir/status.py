"""Whether a run is finished: <logdir>/finished.json, written when it reached its budget.

The learner writes it when it stops cleanly at --max_env_frames or --target_return;
a learner started again on the run directory with a goal the marker already covers
exits at once (a Kubernetes or Slurm restart must not train on), and the experiment
runner (seed.experiments) skips a run whose marker shows a budget at least as large
as the one asked for, and resumes any other. TensorFlow-free.
"""
import json
import os
import time
from typing import Mapping, Optional

from seed.run_dir.layout import RunDir


def mark_if_finished(logdir: str, counters: Mapping[str, int], max_env_frames: int,
                     target_return: Optional[float] = None,
                     mean_return: Optional[float] = None) -> bool:
  """Writes the marker if `counters` reached `max_env_frames` (> 0), or `mean_return`
  reached `target_return`; returns whether it did."""
  reached_frames = max_env_frames > 0 and counters['env_frames'] >= max_env_frames
  reached_target = (target_return is not None and mean_return is not None and
                    mean_return >= target_return)
  if not (reached_frames or reached_target):
    return False
  record = dict(counters, max_env_frames=max_env_frames, finished_at=time.time())
  if reached_target:
    record.update(target_return=target_return, mean_return=mean_return)
  path = RunDir(logdir).finished_json
  tmp = f'{path}.tmp'
  with open(tmp, 'w') as f:
    json.dump(record, f, indent=1)
  os.replace(tmp, path)  # Whole or absent: a run never reads as finished by half.
  return True


def read_finished(logdir: str) -> Optional[dict]:
  """The marker's record (counters, max_env_frames, finished_at), or None if there is none."""
  path = RunDir(logdir).finished_json
  if not os.path.exists(path):
    return None
  with open(path) as f:
    return json.load(f)


def is_finished(logdir: str, max_env_frames: int) -> bool:
  """Whether the run reached a budget of at least `max_env_frames` env frames."""
  record = read_finished(logdir)
  return record is not None and record['max_env_frames'] >= max_env_frames


def covers(record: Optional[Mapping], max_env_frames: int,
           target_return: Optional[float]) -> bool:
  """Whether a finished run's marker already meets a launch's goal: it played
  `max_env_frames` (> 0), or reached a target at least `target_return`. A launch with
  a larger budget, a higher target or no goal at all trains on."""
  if record is None:
    return False
  if max_env_frames > 0 and record['env_frames'] >= max_env_frames:
    return True
  return (target_return is not None and record.get('target_return') is not None and
          record['target_return'] >= target_return)
