"""One table of every Atari run the docs show, computed from the curve files.

  python -m seed.experiments.atari_results                 # print the table
  python -m seed.experiments.atari_results --check docs/learning.md

The runs are listed in docs/figures/atari_results.json: for each, the agent, the game,
the config it ran, the curve file in docs/figures/ (`seed plot --save_data`) and the
run's label in it. Per run the table gives the frames it trained, the mean return of the
last 100 training episodes that ended by 5M, 10M and 20M frames (blank where the run
stopped before), the greedy evaluation of its last checkpoint, and the published values
at the same frames (seed.experiments.atari_references, Dopamine with sticky actions,
RLlib without); then, per agent that ran all five, the Atari-5 estimate at 10M frames.

--check compares the table with the one in a Markdown file, between the lines
`<!-- atari-results:begin -->` and `<!-- atari-results:end -->`, and says what differs:
the docs' numbers come from the data, not from a hand.
"""
import argparse
import csv
import json
import os
import sys
from typing import Dict, List, NamedTuple, Optional, Sequence

import numpy as np

from seed.experiments import atari_references as refs

INDEX = os.path.join('docs', 'figures', 'atari_results.json')
BEGIN, END = '<!-- atari-results:begin -->', '<!-- atari-results:end -->'
WINDOW = 100
AT_FRAMES = (5_000_000, 10_000_000, 20_000_000)
# A run counts as having trained to F frames when its episodes reach this share of F
# (its last episodes end a little before the learner stops).
REACH = 0.99
INDEX_KEYS = ('agent', 'game', 'config', 'csv', 'label')


class Run(NamedTuple):
  agent: str
  game: str
  config: str
  frames: np.ndarray            # env frames at each training episode's end, ascending
  returns: np.ndarray
  greedy: Optional[np.ndarray]  # the last checkpoint's greedy episodes, if evaluated

  @property
  def trained_frames(self) -> int:
    return int(self.frames[-1]) if len(self.frames) else 0

  def mean_by(self, frames: int) -> Optional[float]:
    """Mean of the last WINDOW episodes that ended by `frames`; None if the run stopped
    before them."""
    if self.trained_frames < REACH * frames:
      return None
    return float(np.mean(self.returns[self.frames <= frames][-WINDOW:]))


def read_index(path: str) -> List[dict]:
  with open(path) as f:
    entries = json.load(f)
  for i, entry in enumerate(entries):
    missing = [key for key in INDEX_KEYS if key not in entry]
    if missing:
      raise ValueError(f'{path}: entry {i} lacks {", ".join(missing)}; each entry has '
                       f'{", ".join(INDEX_KEYS)}')
  return entries


def load_run(entry: dict, figures: str) -> Run:
  path = os.path.join(figures, entry['csv'])
  with open(path, newline='') as f:
    rows = [r for r in csv.DictReader(f) if r['label'] == entry['label']]
  training = sorted((r for r in rows if r['role'] == 'run'), key=lambda r: float(r['env_frames']))
  if not training:
    raise ValueError(f'{path} has no training episodes labelled {entry["label"]!r}')
  evaluations = [r for r in rows if r['role'] == 'evaluation']
  greedy = None
  if evaluations:
    last = max(float(r['env_frames']) for r in evaluations)
    if last >= REACH * float(training[-1]['env_frames']):
      greedy = np.array([float(r['episode_return']) for r in evaluations
                         if float(r['env_frames']) == last])
  return Run(entry['agent'], entry['game'], entry['config'],
             np.array([float(r['env_frames']) for r in training]),
             np.array([float(r['episode_return']) for r in training]), greedy)


def table(runs: Sequence[Run]) -> str:
  """Runs grouped by game, each game's published values under its runs in the same
  columns (their protocol in the config column)."""
  frames_heads = ' | '.join(f'{f // 1_000_000}M' for f in AT_FRAMES)
  lines = [f'| agent | game | config | frames | mean of {WINDOW} at {frames_heads} | greedy at '
           'the end (episodes) |', '|---|---|---|---:|---:|---:|---:|---|']
  for game in dict.fromkeys(run.game for run in runs):
    for run in (r for r in runs if r.game == game):
      means = ' | '.join(refs.return_text(run.mean_by(f)) for f in AT_FRAMES)
      greedy = ('' if run.greedy is None else
                f'{refs.return_text(np.mean(run.greedy))} ± '
                f'{refs.return_text(np.std(run.greedy))} ({len(run.greedy)})')
      lines.append(f'| {run.agent} | {game} | {run.config} | '
                   f'{run.trained_frames / 1e6:.2f}M | {means} | {greedy} |')
    for source, values in refs.PUBLISHED.items():
      if game in values:
        means = ' | '.join(refs.return_text(values[game][refs.FRAMES.index(f)]) for f in AT_FRAMES)
        lines.append(f'| *{source.name}* | {game} | published: {source.protocol} | | '
                     f'{means} | |')
  estimates = atari5_lines(runs)
  return '\n'.join(lines + ([''] + estimates if estimates else []))


def atari5_lines(runs: Sequence[Run]) -> List[str]:
  """Per agent that ran all five Atari-5 games to a frame count: its estimate there."""
  lines = []
  agents = list(dict.fromkeys(run.agent for run in runs))
  for agent in agents:
    games = {run.game: run for run in runs if run.agent == agent}
    if not all(game in games for game in refs.ATARI5_GAMES):
      continue
    parts = []
    for frames in AT_FRAMES:
      scores = {game: games[game].mean_by(frames) for game in refs.ATARI5_GAMES}
      if all(score is not None for score in scores.values()):
        published = ', '.join(
            f'{name} {value:.0f}%' for name, value in _dopamine_atari5(frames).items())
        parts.append(f'{refs.atari5_estimate(scores):.1f}% at {frames // 1_000_000}M '
                     f'({published})')
    if parts:
      lines.append(f'Atari-5 estimate of the 57-game median human-normalised score, {agent}: '
                   + '; '.join(parts) + '.')
  return lines


def _dopamine_atari5(frames: int) -> Dict[str, float]:
  index = refs.FRAMES.index(frames)
  return {source.name: refs.atari5_estimate({g: values[g][index] for g in refs.ATARI5_GAMES})
          for source, values in refs.PUBLISHED.items()
          if all(g in values for g in refs.ATARI5_GAMES)}


def documented_table(markdown_path: str) -> str:
  """The table between the markers in a Markdown file."""
  with open(markdown_path) as f:
    text = f.read()
  if BEGIN not in text or END not in text:
    raise ValueError(f'{markdown_path} has no {BEGIN} ... {END} block')
  return text.split(BEGIN, 1)[1].split(END, 1)[0].strip()


def main(argv: Optional[List[str]] = None) -> int:
  parser = argparse.ArgumentParser(prog='python -m seed.experiments.atari_results',
                                   description=__doc__,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument('--index', default=INDEX, help='the runs to tabulate (JSON)')
  parser.add_argument('--check', metavar='MARKDOWN',
                      help='compare with the table in this file; exit 1 where it differs')
  args = parser.parse_args(argv)
  try:
    entries = read_index(args.index)
    figures = os.path.dirname(args.index)
    computed = table([load_run(entry, figures) for entry in entries])
    if args.check:
      documented = documented_table(args.check)
      if documented != computed:
        differ = [f'  docs: {d}\n  data: {c}' for d, c in
                  zip(documented.splitlines(), computed.splitlines()) if d != c]
        count = len(documented.splitlines()), len(computed.splitlines())
        print(f'{args.check}: the Atari results table differs from the data '
              f'({count[0]} lines there, {count[1]} computed):\n' + '\n'.join(differ),
              file=sys.stderr)
        return 1
      print(f'{args.check}: the Atari results table matches the data')
      return 0
  except (OSError, ValueError) as e:
    print(f'seed.experiments.atari_results: {e}', file=sys.stderr)
    return 2
  print(computed)
  return 0


if __name__ == '__main__':
  sys.exit(main())
