"""A peer's training episodes from the per-env files bench/peer_launch.py writes.

Each env appends to its own CSV (wall_epoch_s, env_frames, episode_return): its own frames
so far, with a return on the lines where a game ended. What the time-to-target curve
needs is every episode with the frames of *all* envs when it ended: at the episode's time,
each env's frames are read off its own lines (interpolated between the two around it;
they are at most peer_launch.PROGRESS_FRAMES apart) and added up. Envs of one peer step
at nearly the same pace, so the error is a fraction of one progress interval per env.
"""
import csv
import glob
import os
from typing import Callable, List, NamedTuple, Optional, Tuple

import numpy as np

COLUMNS = ('wall_epoch_s', 'env_frames', 'episode_return')
FILE_GLOB = 'env_*.csv'


class Episode(NamedTuple):
  """One training episode: every env's frames when it ended, the seconds of the system's
  run to its end (from its launch, over all its segments), its (unclipped) return."""
  env_frames: int
  wall_s: float
  episode_return: float


class EnvLines(NamedTuple):
  """One env's file: times (epoch s) and frames of every line, in order, and its
  episodes as (epoch s, frames, return)."""
  times: np.ndarray
  frames: np.ndarray
  episodes: List[Tuple[float, int, float]]


def read_env_file(path: str) -> Optional[EnvLines]:
  """The whole lines of one env's file (a line still being written is left out); None
  for a file without a line yet. ValueError naming the file for other columns."""
  with open(path, newline='') as f:
    text = f.read()
  whole = text[:text.rfind('\n') + 1]
  rows = list(csv.reader(whole.splitlines()))
  if not rows:
    return None
  if tuple(rows[0]) != COLUMNS:
    raise ValueError(f'{path}: not an episode file of bench/peer_launch.py (columns '
                     f'{",".join(COLUMNS)}; found {",".join(rows[0])})')
  times, frames, episodes = [], [], []
  for row in rows[1:]:
    t, n = float(row[0]), int(row[1])
    times.append(t)
    frames.append(n)
    if len(row) > 2 and row[2] != '':
      episodes.append((t, n, float(row[2])))
  if not times:
    return None
  return EnvLines(np.array(times), np.array(frames, np.float64), episodes)


class Snapshot(NamedTuple):
  """What a peer's files say at one moment: its episodes in order of their end, every
  env's frames added up, and the epoch time of the latest line (None before any)."""
  episodes: List[Episode]
  env_frames: int
  last_epoch_s: Optional[float]


def read_episodes(episode_dir: str, run_s: Callable[[float], float]) -> Snapshot:
  """All envs' episodes in `episode_dir`, each with all envs' frames at its end and its
  time on the run's clock, `run_s(epoch seconds)` (Segments.bench_s). A resumed peer's
  envs write new files: frames add up over every sitting's."""
  envs = [lines for path in sorted(glob.glob(os.path.join(episode_dir, FILE_GLOB)))
          if (lines := read_env_file(path)) is not None]
  if not envs:
    return Snapshot([], 0, None)
  ended = sorted(e for env in envs for e in env.episodes)
  at = np.array([t for t, _, _ in ended], np.float64)
  total = np.zeros(len(ended))
  for env in envs:
    # Before an env's first line: none of its frames yet; after its last: all of them.
    total += np.interp(at, env.times, env.frames, left=0.0, right=env.frames[-1])
  episodes = [Episode(int(round(frames)), round(run_s(t), 3), value)
              for (t, _, value), frames in zip(ended, total)]
  return Snapshot(episodes, int(sum(env.frames[-1] for env in envs)),
                  max(float(env.times[-1]) for env in envs))
