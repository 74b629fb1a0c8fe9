"""Atari-5: five games that predict the median human-normalised score over all 57.

  seed suite atari5 run --root runs/atari5 --agent vtrace --max_env_frames 10000000
  seed suite atari5 report --root runs/atari5
  seed suite atari5 report --csv docs/figures/learning_qbert.csv --csv ... [--label L]

`run` trains BattleZone, DoubleDunk, NameThisGame, Phoenix and Qbert one after another,
each with the agent's shipped Atari config (gin/atari/<agent>.gin) and only the game
changed, in ROOT/<Game>__seed=<seed>. It writes ROOT/atari5.json (an experiments file)
and hands it to the experiment runner (seed.experiments), which skips a game whose
finished.json shows the budget and resumes any other from its checkpoint: after a kill
or a lost machine, run the same command again.

`report` scores each game by the mean return of the last 100 training episodes that
ended by --frames (the behaviour policy's returns, as Dopamine's and RLlib's curves
are), its human-normalised score, and the Atari-5 estimate of the 57-game median
(Aitchison et al., 2022), beside the published values at the same frames
(seed.experiments.atari_references, each with its protocol). From run directories
(--root) a game counts once its finished.json shows the frames; from curve files
(--csv, as `seed plot --save_data` writes them, the game named in the file name) once
its episodes reach within 1% of them. A game short of the frames, or with fewer than
20 episodes by then, is named with what it has, and no estimate is printed.
"""
import argparse
import csv
import json
import os
import re
import sys
from typing import Dict, List, NamedTuple, Optional, Sequence

import numpy as np

from seed import config
from seed.experiments import atari_references as refs

PLAN_FILE = 'atari5.json'
SCORE_EPISODES = 100
MIN_EPISODES = 20
# A curve file's episodes must reach this share of the frames for its run to count as
# having trained that long (the last episodes end a little before the run stops).
CURVE_REACH = 0.99
DEFAULT_FRAMES = 10_000_000


def atari_agents() -> List[str]:
  """Agents with a shipped Atari config: gin/atari/<agent>.gin."""
  directory = os.path.join(config.gin_root(), 'atari')
  return sorted(name[:-len('.gin')] for name in os.listdir(directory) if name.endswith('.gin'))


def run_name(game: str, seed: int) -> str:
  """The run directory under the root (the experiment runner's name for it)."""
  return f'{game}__seed={seed}'


def check_games(games: Sequence[str]) -> List[str]:
  for game in games:
    if game not in refs.ATARI5_GAMES:
      raise ValueError(f'{game!r} is not an Atari-5 game; the five: '
                       f'{", ".join(refs.ATARI5_GAMES)}')
  return list(games)


def plan(agent: str, max_env_frames: int, seed: int = 0,
         games: Sequence[str] = refs.ATARI5_GAMES, gin_bindings: Sequence[str] = (),
         learner_flags: Optional[Dict[str, str]] = None, num_actors: int = 2,
         num_envs: int = 4) -> List[dict]:
  """The experiments file's entries: one per game, the agent's Atari config, the game bound."""
  if agent not in atari_agents():
    raise ValueError(f'agent {agent!r} has no Atari config (gin/atari/{agent}.gin); the '
                     f'Atari configs: {", ".join(atari_agents())}')
  if max_env_frames < 1:
    raise ValueError(f'max_env_frames must be >= 1, got {max_env_frames}')
  gin_file = os.path.join(config.gin_root(), 'atari', f'{agent}.gin')
  return [{'name': game, 'agent': agent, 'gin_file': gin_file,
           'gin_bindings': [f"EnvConfig.name = 'atari:{game}'", *gin_bindings],
           'learner_flags': {'max_env_frames': str(max_env_frames), **(learner_flags or {})},
           'seeds': [seed], 'num_actors': num_actors, 'num_envs': num_envs}
          for game in check_games(games)]


def run(root: str, entries: List[dict], extra_args: Sequence[str] = ()) -> int:
  """Writes the plan and runs it through seed.experiments; that runner's exit code."""
  from seed.experiments import __main__ as experiments  # pylint: disable=g-import-not-at-top
  os.makedirs(root, exist_ok=True)
  path = os.path.join(root, PLAN_FILE)
  with open(path, 'w') as f:
    json.dump(entries, f, indent=1)
  return experiments.main(['--root', root, '--experiments', path, *extra_args])


class Curve(NamedTuple):
  """One game's training episodes, in the order they ended, and how far its run went."""
  game: str
  frames: np.ndarray   # env frames at each episode's end
  returns: np.ndarray
  trained_frames: int  # what the run is known to have trained
  where: str           # the run directory or curve file, for messages


class GameScore(NamedTuple):
  game: str
  score: float       # mean of the last SCORE_EPISODES episodes by the frames
  episodes: int      # how many episodes that mean took
  hns: float         # human-normalised, %
  where: str


class ShortRun(ValueError):
  """A game whose run did not train the frames, or ended too few episodes by them."""


def score(curve: Curve, frames: int) -> GameScore:
  """The game's score at `frames`; ShortRun naming the game and what it has."""
  if curve.trained_frames < frames:
    trained = (f'trained {curve.trained_frames:,} frames' if curve.trained_frames
               else 'has no episodes yet')
    raise ShortRun(f'{curve.game}: {curve.where} {trained}, short of {frames:,}')
  returns = curve.returns[curve.frames <= frames]
  if len(returns) < MIN_EPISODES:
    raise ShortRun(f'{curve.game}: {curve.where} has {len(returns)} episodes by '
                   f'{frames:,} frames; the score needs at least {MIN_EPISODES}')
  last = returns[-SCORE_EPISODES:]
  value = float(np.mean(last))
  return GameScore(curve.game, value, len(last), refs.human_normalised(curve.game, value),
                   curve.where)


def curve_of_run(run_dir: str, game: str) -> Curve:
  """A run directory's kept training episodes, and its frames from finished.json (else
  its last episode's; none where it has not started)."""
  from seed.run_dir import records, status  # pylint: disable=g-import-not-at-top
  episodes = records.read_training_episodes(run_dir)
  frames = np.array([e.env_frames for e in episodes], np.int64)
  returns = np.array([e.episode_return for e in episodes])
  finished = status.read_finished(run_dir)
  trained = int(finished['env_frames']) if finished else int(frames[-1]) if len(frames) else 0
  return Curve(game, frames, returns, trained, run_dir)


def curves_of_root(root: str, seed: int = 0) -> List[Curve]:
  """Each Atari-5 game's curve under ROOT (its run directory for `seed`)."""
  return [curve_of_run(os.path.join(root, run_name(game, seed)), game)
          for game in refs.ATARI5_GAMES]


def game_in_file_name(path: str) -> str:
  """The Atari-5 game a curve file's name names ('learning_namethisgame.csv')."""
  name = re.sub(r'[^a-z]', '', os.path.basename(path).lower())
  found = [game for game in refs.ATARI5_GAMES if game.lower() in name]
  if len(found) != 1:
    raise ValueError(f'{path}: its name should name one Atari-5 game '
                     f'({", ".join(refs.ATARI5_GAMES)}), e.g. learning_qbert.csv')
  return found[0]


def curve_of_file(path: str, label: Optional[str] = None) -> Curve:
  """A curve file's training episodes ('run' rows) of `label` (or of its only label)."""
  game = game_in_file_name(path)
  with open(path, newline='') as f:
    rows = [r for r in csv.DictReader(f) if r['role'] == 'run']
  labels = sorted({r['label'] for r in rows})
  if label is None:
    if len(labels) != 1:
      raise ValueError(f'{path} holds the runs {labels}: choose one with --label')
    label = labels[0]
  elif label not in labels:
    raise ValueError(f'{path} has no run labelled {label!r}; its runs: {labels}')
  rows = sorted((r for r in rows if r['label'] == label), key=lambda r: int(r['env_frames']))
  frames = np.array([int(r['env_frames']) for r in rows], np.int64)
  returns = np.array([float(r['episode_return']) for r in rows])
  last = int(frames[-1]) if len(frames) else 0
  return Curve(game, frames, returns, last, f'{path} ({label})')


def reached(curve: Curve, frames: int) -> Curve:
  """A curve file's run counted as trained to `frames` when its episodes reach within
  (1 - CURVE_REACH) of them."""
  if curve.trained_frames >= CURVE_REACH * frames:
    return curve._replace(trained_frames=max(curve.trained_frames, frames))
  return curve


class Report(NamedTuple):
  frames: int
  scores: List[GameScore]
  short: List[str]              # why each game without a score has none
  estimate: Optional[float]     # None unless all five games scored


def report(curves: Sequence[Curve], frames: int) -> Report:
  scores, short = [], []
  for curve in curves:
    try:
      scores.append(score(curve, frames))
    except ShortRun as e:
      short.append(str(e))
  estimate = None
  if not short and len(scores) == len(refs.ATARI5_GAMES):
    estimate = refs.atari5_estimate({s.game: s.score for s in scores})
  return Report(frames, scores, short, estimate)


def _published_estimates(frames: int) -> Dict[str, float]:
  """Atari-5 of every source that has all five games at `frames`."""
  if frames not in refs.FRAMES:
    return {}
  index = refs.FRAMES.index(frames)
  return {source.name: refs.atari5_estimate({g: values[g][index] for g in refs.ATARI5_GAMES})
          for source, values in refs.PUBLISHED.items()
          if all(g in values for g in refs.ATARI5_GAMES)}


def markdown(result: Report) -> str:
  frames_text = f'{result.frames / 1e6:g}M'
  sources = ([s for s in refs.PUBLISHED if any(g.game in refs.PUBLISHED[s] for g in result.scores)]
             if result.frames in refs.FRAMES else [])
  header = ''.join([f'| game | mean of last {SCORE_EPISODES} at {frames_text} (episodes) | '
                    'human-normalised |'] + [f' {s.name} at {frames_text} |' for s in sources])
  lines = [header, '|---|---:|---:|' + '---:|' * len(sources)]
  for s in result.scores:
    published = refs.published_at(s.game, result.frames) if sources else {}
    cells = [refs.return_text(published.get(src)) for src in sources]
    lines.append(''.join([f'| {s.game} | {refs.return_text(s.score)} ({s.episodes}) | '
                          f'{s.hns:.1f}% |'] + [f' {cell} |' for cell in cells]))
  lines.append('')
  if result.estimate is None:
    lines.append('No Atari-5 estimate: ' + ('; '.join(result.short) if result.short
                                            else 'not all five games given') + '.')
  else:
    lines.append(f'**Atari-5 estimate of the 57-game median human-normalised score at '
                 f'{frames_text} frames: {result.estimate:.1f}%**')
  published = _published_estimates(result.frames)
  if published:
    lines.append('Published at the same frames (' + refs.DOPAMINE_PROTOCOL + '): '
                 + ', '.join(f'{name} {value:.1f}%' for name, value in published.items()) + '.')
  lines.append("seed's returns: training episodes, no sticky actions, up to 30 no-op starts, "
               "the game's minimal action set (gin/atari/*.gin).")
  return '\n'.join(lines)


def main(argv=None) -> int:
  parser = argparse.ArgumentParser(prog='seed suite atari5', description=__doc__,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
  commands = parser.add_subparsers(dest='command', required=True)
  run_parser = commands.add_parser('run', help='train the five games in turn (resumable)')
  run_parser.add_argument('--root', required=True)
  run_parser.add_argument('--agent', default='vtrace')
  run_parser.add_argument('--games', nargs='+', default=list(refs.ATARI5_GAMES))
  run_parser.add_argument('--max_env_frames', type=int, default=DEFAULT_FRAMES)
  run_parser.add_argument('--seed', type=int, default=0)
  run_parser.add_argument('--num_actors', type=int, default=2)
  run_parser.add_argument('--num_envs', type=int, default=4)
  run_parser.add_argument('--gin_bindings', action='append', default=[])
  run_parser.add_argument('--learner_flag', action='append', default=[],
                          help='passed to every learner, e.g. --learner_flag=--anneal_learning_rate')
  report_parser = commands.add_parser('report', help='per-game scores and the Atari-5 estimate')
  report_parser.add_argument('--root', help='the run root of `run`')
  report_parser.add_argument('--seed', type=int, default=0, help='whose runs under --root')
  report_parser.add_argument('--csv', action='append', default=[],
                             help='a curve file (seed plot --save_data) naming its game')
  report_parser.add_argument('--label', help="the curve files' run to score, where they hold several")
  report_parser.add_argument('--frames', type=int, default=DEFAULT_FRAMES)
  args = parser.parse_args(argv)
  try:
    if args.command == 'run':
      check_games(args.games)
      entries = plan(args.agent, args.max_env_frames, args.seed, args.games, args.gin_bindings,
                     num_actors=args.num_actors, num_envs=args.num_envs)
      return run(args.root, entries, [f'--learner_flag={f}' for f in args.learner_flag])
    if not (args.root or args.csv):
      raise ValueError('report needs --root or --csv')
    curves = curves_of_root(args.root, args.seed) if args.root else []
    by_file = [reached(curve_of_file(path, args.label), args.frames) for path in args.csv]
    # A curve file stands in for a game the root has not given.
    games = {c.game for c in curves}
    curves += [c for c in by_file if c.game not in games]
  except (OSError, ValueError) as e:
    print(f'seed suite atari5: {e}', file=sys.stderr)
    return 2
  result = report(curves, args.frames)
  print(markdown(result))
  return 0 if result.estimate is not None else 1


if __name__ == '__main__':
  sys.exit(main())
