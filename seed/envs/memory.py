"""MemoryCue: a toy task that only an agent with memory can solve.

At the first step the observation shows one of `num_cues` cues (one-hot). Then
`delay` blank observations follow, and finally a query observation (its last
element is 1). The action taken at the query is the answer: reward +1 if it
names the cue, -1 if not, and the episode ends. Actions at other steps do
nothing. The cue is visible only at the first step, so a memoryless (feed-forward)
policy answers at chance: its expected reward is 0 with uniformly drawn cues.
An LSTM that keeps the cue for `delay + 1` steps gets +1 every time.
"""
from typing import Optional

import gymnasium
from gymnasium import spaces
import numpy as np

from seed.envs import wrappers


class MemoryCue(gymnasium.Env):
  """Remember the first observation's cue; answer it at the query step.

  Observation: float32 [num_cues + 1]: the cue one-hot at step 0, zeros while
  waiting, and only the last element (the query flag) set at the query step.
  Episodes last `delay + 2` observations (`delay + 1` actions).
  """

  metadata = {'render_modes': []}

  def __init__(self, delay: int = 5, num_cues: int = 2):
    if delay < 0:
      raise ValueError(f'delay must be >= 0, got {delay}')
    if num_cues < 2:
      raise ValueError(f'num_cues must be >= 2, got {num_cues}')
    self.delay = delay
    self.num_cues = num_cues
    self.observation_space = spaces.Box(0.0, 1.0, (num_cues + 1,), np.float32)
    self.action_space = spaces.Discrete(num_cues)
    self._cue = 0
    self._t = 0

  @property
  def cue(self) -> int:
    return self._cue

  def reset(self, *, seed: Optional[int] = None, options: Optional[dict] = None):
    super().reset(seed=seed)
    self._cue = int(self.np_random.integers(self.num_cues))
    self._t = 0
    return self._observation(), {}

  def step(self, action):
    self._t += 1
    if self._t <= self.delay + 1:
      return self._observation(), 0.0, False, False, {}
    reward = 1.0 if int(action) == self._cue else -1.0
    return self._observation(), reward, True, False, {}

  def _observation(self) -> np.ndarray:
    observation = np.zeros(self.num_cues + 1, np.float32)
    if self._t == 0:
      observation[self._cue] = 1.0
    elif self._t == self.delay + 1:
      observation[-1] = 1.0
    return observation


def make_memory_cue(seed: int, delay: int = 5, num_cues: int = 2) -> gymnasium.Env:
  """MemoryCue seeded on its first reset."""
  return wrappers.SeededEnv(MemoryCue(delay=delay, num_cues=num_cues), seed)
