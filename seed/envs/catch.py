"""Catch: the toy env of bsuite and SEED, as a gymnasium env.

A ball starts in a random column of the top row and falls one row per step; the
agent moves a paddle along the bottom row to be under it when it lands. It
learns in seconds, so it is what smoke tests and CPU runs train on.
"""
from typing import Any, Optional

import gymnasium
from gymnasium import spaces
import numpy as np

from seed.envs import wrappers

LEFT, STAY, RIGHT = 0, 1, 2
_MOVES = {LEFT: -1, STAY: 0, RIGHT: 1}


class Catch(gymnasium.Env):
  """Catch the falling ball with the paddle.

  Observation: float32 [rows, columns], 1.0 where the ball and the paddle are,
  0.0 elsewhere. Actions: 0 left, 1 stay, 2 right (the paddle stops at the
  walls). Every episode lasts exactly `rows - 1` steps and ends with
  `terminated=True` and a reward of +1 if the paddle is under the ball, -1 if
  not; every other step rewards 0. The paddle starts in the middle column.
  """

  metadata = {'render_modes': []}

  def __init__(self, rows: int = 10, columns: int = 5):
    for what, value, least in (('rows', rows, 2), ('columns', columns, 1)):
      if isinstance(value, bool) or not isinstance(value, int) or value < least:
        raise ValueError(
            f'Catch {what} must be an int >= {least}, got {value!r}.')
    self.rows = rows
    self.columns = columns
    self.observation_space = spaces.Box(
        low=0.0, high=1.0, shape=(rows, columns), dtype=np.float32)
    self.action_space = spaces.Discrete(3)
    self._ball_row = 0
    self._ball_column = 0
    self._paddle_column = columns // 2
    # Stepping before reset() is a bug in the caller; say so instead of
    # silently playing a ball nobody dropped.
    self._needs_reset = True

  @property
  def ball(self) -> tuple[int, int]:
    """(row, column) of the ball; for scripted policies and tests."""
    return self._ball_row, self._ball_column

  @property
  def paddle_column(self) -> int:
    """Column of the paddle, which always sits on the bottom row."""
    return self._paddle_column

  def reset(self, *, seed: Optional[int] = None,
            options: Optional[dict[str, Any]] = None):
    super().reset(seed=seed)  # Seeds self.np_random when a seed is given.
    self._ball_row = 0
    self._ball_column = int(self.np_random.integers(self.columns))
    self._paddle_column = self.columns // 2
    self._needs_reset = False
    return self._observation(), {}

  def step(self, action):
    if self._needs_reset:
      raise RuntimeError(
          'Catch.step() called before reset() or after the episode ended; '
          'call reset() first.')
    try:
      move = _MOVES[int(action)]
    except (KeyError, TypeError, ValueError):
      raise ValueError(
          f'Catch action must be 0 (left), 1 (stay) or 2 (right), '
          f'got {action!r}.') from None
    self._paddle_column = min(max(self._paddle_column + move, 0),
                              self.columns - 1)
    self._ball_row += 1
    terminated = self._ball_row == self.rows - 1
    reward = 0.0
    if terminated:
      reward = 1.0 if self._paddle_column == self._ball_column else -1.0
      self._needs_reset = True
    return self._observation(), reward, terminated, False, {}

  def _observation(self) -> np.ndarray:
    board = np.zeros((self.rows, self.columns), dtype=np.float32)
    board[self._ball_row, self._ball_column] = 1.0
    board[self.rows - 1, self._paddle_column] = 1.0
    return board


def make_catch(seed: int, rows: int = 10, columns: int = 5) -> gymnasium.Env:
  """A Catch env seeded on its first reset (see `seed.envs.wrappers`)."""
  return wrappers.SeededEnv(Catch(rows=rows, columns=columns), seed)
