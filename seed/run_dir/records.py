"""The run's records, episodes.csv and progress.csv: their columns (the learner writes
them, seed.learner.metrics) and their readers, as typed rows."""
import csv
import os
from typing import Dict, List, NamedTuple, Optional

from seed.run_dir.layout import RunDir

EPISODE_COLUMNS = ('env_frames', 'episode_return', 'episode_steps', 'wall_time_s')
# The column added when one learner trains several seeds (--num_seeds).
SEED_COLUMN = 'seed'
PROGRESS_COLUMNS = ('wall_time_s', 'env_frames', 'learner_steps', 'episodes',
                    'env_frames_per_s', 'mean_inference_batch', 'queue_fill', 'actor_streams',
                    'connected_envs', 'rss_mb', 'threads', 'open_fds')


class TrainingEpisode(NamedTuple):
  """One training episode of episodes.csv."""
  env_frames: int  # the learner's env frames when it ended
  episode_return: float
  episode_steps: int
  wall_time_s: float  # as the learner that played it logged it (each start counts from 0)
  training_s: float  # wall_time_s summed over the learner's starts: training time
  seed_index: int = 0  # which of --num_seeds seeds played it
  learner_start: int = 0  # which of the learner's starts logged it (0: the first)


class Progress(NamedTuple):
  """One progress line (progress.csv): the learner's counters and rates at a tick."""
  wall_time_s: float
  env_frames: int
  learner_steps: int
  episodes: int
  env_frames_per_s: float


def _whole_rows(path: str) -> List[Dict[str, str]]:
  with open(path, newline='') as f:
    # A line being appended as we read has fewer fields: it is left for the next read.
    return [row for row in csv.DictReader(f) if None not in row.values()]


def read_training_episodes(logdir: str) -> List[TrainingEpisode]:
  """The episodes of the run in `logdir` that its training kept, in order; [] before the
  first.

  A resume rewinds the frames to its checkpoint's: the rows logged before it that ended
  at or after the resumed learner's first came from training it threw away, and are left
  out (as `seed plot` leaves them out of the curves). A resume shows as the clock going
  back."""
  path = RunDir(logdir).episodes_csv
  if not os.path.exists(path):
    return []
  episodes: List[TrainingEpisode] = []
  offset_s = last_s = 0.0
  start = 0
  for row in _whole_rows(path):
    wall_s, frames = float(row['wall_time_s']), int(row['env_frames'])
    if wall_s + offset_s < last_s:  # A resumed learner's clock restarted.
      episodes = [e for e in episodes if e.env_frames < frames]
      offset_s = episodes[-1].training_s if episodes else 0.0
      start += 1
    last_s = wall_s + offset_s
    episodes.append(TrainingEpisode(
        env_frames=frames, episode_return=float(row['episode_return']),
        episode_steps=int(row['episode_steps']), wall_time_s=wall_s, training_s=last_s,
        seed_index=int(row.get(SEED_COLUMN) or 0), learner_start=start))
  return episodes


def read_latest_progress(logdir: str) -> Optional[Progress]:
  """The run's latest progress line, or None before the first."""
  path = RunDir(logdir).progress_csv
  rows = _whole_rows(path) if os.path.exists(path) else []
  if not rows:
    return None
  row = rows[-1]
  return Progress(wall_time_s=float(row['wall_time_s']), env_frames=int(row['env_frames']),
                  learner_steps=int(row['learner_steps']), episodes=int(row['episodes']),
                  env_frames_per_s=float(row['env_frames_per_s']))
