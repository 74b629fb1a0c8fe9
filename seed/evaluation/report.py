"""The test-mode table: returns and lengths of N episodes (mean, std, min, max), printed
as Markdown and written as CSV and JSON; the JSONs of a run read back (`read_all`)."""
import csv
import dataclasses
import glob
import json
import os
from typing import Dict, List, Mapping, Sequence, Tuple

import numpy as np

from seed.evaluation.episodes import Episode

STATISTICS = ('mean', 'std', 'min', 'max')


def summarize(values: Sequence[float]) -> Dict[str, float]:
  """mean, std (population: over these episodes, not an estimate of a wider one), min, max."""
  if not len(values):
    raise ValueError('no episodes to summarize')
  array = np.asarray(values, np.float64)
  return {'mean': float(array.mean()), 'std': float(array.std()),
          'min': float(array.min()), 'max': float(array.max())}


def summary(episodes: Sequence[Episode]) -> Dict[str, Dict[str, float]]:
  """{'return': statistics, 'length_steps': statistics} of `episodes`."""
  return {'return': summarize([e.episode_return for e in episodes]),
          'length_steps': summarize([e.length_steps for e in episodes])}


def table(stats: Mapping[str, Mapping[str, float]], num_episodes: int) -> str:
  """A Markdown table, one row per quantity."""
  episodes = 'episode' if num_episodes == 1 else 'episodes'
  lines = [f'| {num_episodes} {episodes} | ' + ' | '.join(STATISTICS) + ' |',
           '|---|' + '---|' * len(STATISTICS)]
  for name, values in stats.items():
    lines.append(f'| {name} | ' + ' | '.join(f'{values[s]:.2f}' for s in STATISTICS) + ' |')
  return '\n'.join(lines)


def file_stem(checkpoint: str, policy: str, seed: int, num_envs: int) -> str:
  """The files' name for one evaluation: `ckpt-7_greedy_seed0` with one env,
  `ckpt-7_greedy_seeds0-9` with envs seeded 0..9, so that evaluating a checkpoint over
  several envs does not replace its one-env evaluation."""
  seeds = f'seed{seed}' if num_envs == 1 else f'seeds{seed}-{seed + num_envs - 1}'
  return f'{os.path.basename(checkpoint)}_{policy}_{seeds}'


def write(directory: str, name: str, stats: Mapping[str, Mapping[str, float]],
          episodes: Sequence[Episode], about: Mapping[str, object]) -> List[str]:
  """<directory>/<name>.csv (the table) and <name>.json (the table, each episode and
  `about`: checkpoint, policy, seed, ...). Returns both paths."""
  os.makedirs(directory, exist_ok=True)
  csv_path = os.path.join(directory, f'{name}.csv')
  with open(csv_path, 'w', newline='') as f:
    writer = csv.writer(f)
    writer.writerow(['quantity', 'episodes', *STATISTICS])
    for quantity, values in stats.items():
      writer.writerow([quantity, len(episodes), *(repr(values[s]) for s in STATISTICS)])
  json_path = os.path.join(directory, f'{name}.json')
  with open(json_path, 'w') as f:
    json.dump({**about, 'episodes': len(episodes), 'summary': stats,
               'per_episode': [{'env_index': e.env_index, 'return': e.episode_return,
                                'length_steps': e.length_steps} for e in episodes]},
              f, indent=1)
  return [csv_path, json_path]


@dataclasses.dataclass(frozen=True)
class SavedEvaluation:
  """One evaluation as `write` saved it: the checkpoint's env frames, how it acted, each
  episode's return."""
  path: str
  env_frames: int
  policy: str
  seed: int
  returns: Tuple[float, ...]


def read(path: str) -> SavedEvaluation:
  """The evaluation saved at `path` (a JSON of `write`); ValueError naming the file and
  what it lacks otherwise."""
  try:
    with open(path) as f:
      saved = json.load(f)
    return SavedEvaluation(path, int(saved['counters']['env_frames']), str(saved['policy']),
                           int(saved['seed']),
                           tuple(float(e['return']) for e in saved['per_episode']))
  except (OSError, ValueError, KeyError, TypeError) as e:
    raise ValueError(f'{path}: not an evaluation of seed.evaluate (expected JSON with '
                     f'counters.env_frames, policy, seed and per_episode returns): '
                     f'{type(e).__name__}: {e}') from None


def read_all(directory: str, policy: str) -> List[SavedEvaluation]:
  """The evaluations saved in `directory` (a run's evaluation/) that acted with `policy`,
  in order of env frames; none when there is no such directory."""
  saved = [read(path) for path in sorted(glob.glob(os.path.join(directory, '*.json')))]
  return sorted((e for e in saved if e.policy == policy), key=lambda e: (e.env_frames, e.path))
