"""Classic-control envs, straight from gymnasium."""
import gymnasium

from seed.envs import wrappers


def make_cartpole(seed: int) -> gymnasium.Env:
  """CartPole-v1 as gymnasium ships it, seeded on its first reset.

  Observations are float32 [4]; there are 2 actions; episodes are truncated
  (`truncated=True`) after 500 steps by gymnasium's TimeLimit.

  Args:
    seed: Seed for the first `reset()` (see `seed.envs.wrappers`).

  Returns:
    The env, with `frames_per_step == 1`.
  """
  return wrappers.SeededEnv(gymnasium.make('CartPole-v1'), seed)
