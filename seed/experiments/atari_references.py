"""Published Atari figures to hold seed's runs against, and the Atari-5 estimate.

Facts from public sources, gathered in the team's ATARI-REFERENCES.md:
  * Dopamine (google/dopamine, baselines/atari/data/<game>.json, the legacy baselines):
    the mean return of the training episodes of each 1M-frame iteration, 5 seeds,
    sticky actions 0.25.
  * RLlib (ray-project/rl-experiments, progress.csv, episode_reward_mean of the training
    episodes): one run per game, NoFrameskip-v4, no sticky actions.
  * Aitchison, Sweetser and Hutter (2022), "Atari-5": the median human-normalised score
    over the 57 games predicted from five games' scores (weights from maitchison/PPO,
    tools/plot_util.py; random and human scores from maitchison/Atari-5, Atari-Human.csv;
    Pong's and Breakout's from deepmind/dqn_zoo, atari_data.py).

Frames are emulator frames: one agent step is 4 of them.
"""
import math
from typing import Dict, Mapping, NamedTuple, Optional, Tuple


class Source(NamedTuple):
  """Who published a curve, and how its returns were measured."""
  name: str      # e.g. 'Dopamine Rainbow'
  protocol: str  # sticky actions or not, which episodes, how many seeds


DOPAMINE_PROTOCOL = 'training episodes, sticky actions 0.25, mean of 5 seeds'
RLLIB_PROTOCOL = 'training episodes, no sticky actions, one run'

# The frames (emulator frames) at which the sources below give a value.
FRAMES = (5_000_000, 10_000_000, 20_000_000, 40_000_000)

# {source: {game: (return at 5M, 10M, 20M, 40M frames)}}
PUBLISHED: Dict[Source, Dict[str, Tuple[float, float, float, float]]] = {
    Source('Dopamine DQN', DOPAMINE_PROTOCOL): {
        'Pong': (-15.4, -4.9, 5.7, 10.0),
        'Breakout': (9.3, 21.5, 52.9, 81.7),
        'Qbert': (893, 1_658, 3_831, 6_923),
        'BattleZone': (3_477, 3_599, 12_444, 11_978),
        'DoubleDunk': (-19.9, -18.9, -18.4, -18.0),
        'NameThisGame': (3_107, 4_001, 4_574, 5_237),
        'Phoenix': (1_644, 4_949, 4_747, 4_820),
    },
    Source('Dopamine Rainbow', DOPAMINE_PROTOCOL): {
        'Pong': (-12.6, 15.2, 18.4, 19.3),
        'Breakout': (19.8, 41.9, 67.4, 47.7),
        'Qbert': (2_512, 5_354, 12_940, 15_751),
        'BattleZone': (3_605, 20_209, 26_666, 30_467),
        'DoubleDunk': (-21.4, -18.9, -10.6, 14.8),
        'NameThisGame': (6_048, 8_604, 8_879, 8_403),
        'Phoenix': (2_340, 4_830, 5_992, 7_502),
    },
    Source('Dopamine IQN', DOPAMINE_PROTOCOL): {
        'Pong': (4.3, 15.2, 18.4, 19.6),
        'Breakout': (41.6, 102.7, 147.1, 90.4),
        'Qbert': (3_008, 5_207, 12_003, 12_999),
        'BattleZone': (20_038, 24_152, 27_066, 27_196),
        'DoubleDunk': (-18.5, -12.9, 7.5, 19.5),
        'NameThisGame': (7_890, 8_644, 9_031, 8_170),
        'Phoenix': (4_453, 4_753, 5_028, 4_963),
    },
    Source('RLlib IMPALA', RLLIB_PROTOCOL): {
        'Breakout': (25.5, 72.4, 259.7, 394.5),
        'Qbert': (485, 850, 1_443, 3_969),
    },
    Source('RLlib PPO', RLLIB_PROTOCOL): {
        'Breakout': (2.0, 32.7, 49.1, 109.5),
        'Qbert': (1_516, 4_108, 5_618, 6_002),
    },
    Source('RLlib A2C', RLLIB_PROTOCOL): {
        'Breakout': (35.7, 137.5, 302.6, 376.6),
        'Qbert': (529, 819, 1_341, 3_055),
    },
}

# The Atari-5 regression's weight of each game (no intercept).
ATARI5_WEIGHTS: Mapping[str, float] = {
    'BattleZone': 0.3819751,
    'DoubleDunk': 0.0679099,
    'NameThisGame': 0.3108041,
    'Phoenix': 0.1241262,
    'Qbert': 0.0804852,
}
ATARI5_GAMES = tuple(ATARI5_WEIGHTS)

# {game: (random agent's score, human's score)}
RANDOM_AND_HUMAN: Mapping[str, Tuple[float, float]] = {
    'BattleZone': (2_360.0, 37_187.5),
    'DoubleDunk': (-18.55, -16.4),
    'NameThisGame': (2_292.35, 8_049.0),
    'Phoenix': (761.4, 7_242.6),
    'Qbert': (163.88, 13_455.0),
    'Pong': (-20.7, 14.6),
    'Breakout': (1.7, 30.5),
}


def return_text(value: Optional[float]) -> str:
  """A game's return as the docs' tables print it: thousands separated and whole from
  1,000 up (BattleZone's 5,680), one decimal below (Pong's 18.4); '' for None."""
  if value is None:
    return ''
  return f'{value:,.0f}' if abs(value) >= 1000 else f'{value:.1f}'


def human_normalised(game: str, score: float) -> float:
  """100 * (score - random) / (human - random): 0 plays like random, 100 like a human."""
  if game not in RANDOM_AND_HUMAN:
    raise ValueError(f'no random and human scores for {game!r}; known: '
                     f'{", ".join(RANDOM_AND_HUMAN)}')
  random_score, human_score = RANDOM_AND_HUMAN[game]
  return 100.0 * (score - random_score) / (human_score - random_score)


def atari5_estimate(scores: Mapping[str, float]) -> float:
  """The predicted median human-normalised score (%) over the 57 games, from the raw
  scores of the five Atari-5 games: 10 ** sum(w * log10(1 + max(0, HNS))) - 1."""
  missing = [game for game in ATARI5_GAMES if game not in scores]
  if missing:
    raise ValueError(f'the Atari-5 estimate needs all five games; missing: {", ".join(missing)}')
  log_sum = sum(weight * math.log10(1.0 + max(0.0, human_normalised(game, scores[game])))
                for game, weight in ATARI5_WEIGHTS.items())
  return 10.0 ** log_sum - 1.0


def published_at(game: str, frames: int) -> Dict[Source, float]:
  """Every source's value for `game` at `frames` (one of FRAMES), by source."""
  if frames not in FRAMES:
    raise ValueError(f'published values are at {", ".join(f"{f:,}" for f in FRAMES)} frames, '
                     f'not {frames:,}')
  index = FRAMES.index(frames)
  return {source: values[game][index] for source, values in PUBLISHED.items()
          if game in values}


def source_named(name: str) -> Optional[Source]:
  """The source called `name` ('Dopamine Rainbow'), or None."""
  return next((source for source in PUBLISHED if source.name == name), None)
