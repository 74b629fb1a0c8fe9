"""Classic-control envs, straight from gymnasium."""
from typing import Optional

import gymnasium

from seed.envs import wrappers


def make_cartpole(seed: int, render_mode: Optional[str] = None) -> gymnasium.Env:
  """CartPole-v1 as gymnasium ships it, seeded on its first reset.

  Observations are float32 [4]; there are 2 actions; episodes are truncated
  (`truncated=True`) after 500 steps by gymnasium's TimeLimit.

  Args:
    seed: Seed for the first `reset()` (see `seed.envs.wrappers`).
    render_mode: gymnasium's, e.g. 'rgb_array' for `seed.evaluate --video`.

  Returns:
    The env, with `frames_per_step == 1`.
  """
  return wrappers.SeededEnv(gymnasium.make('CartPole-v1', render_mode=render_mode), seed)
