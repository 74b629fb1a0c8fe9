"""Playing whole episodes in-process with an agent's batched policy, no actors or server.

The loop keeps the conventions of the actor and the learner's env table: the first
step of an env has reward 0 and done False with a fresh core state; after an episode
ends the env is reset and its first observation goes in with the final reward and
done True, so the agent zeroes that row's recurrent state, which otherwise carries
from step to step.
"""
import dataclasses
from typing import Callable, List, Optional, Sequence

import numpy as np

from seed import types
from seed.envs.batch import LIFE_LOST, to_env_action


@dataclasses.dataclass(frozen=True)
class Episode:
  """One finished episode: which env played it, its return and its length in env steps."""
  env_index: int
  episode_return: float
  length_steps: int


def run_episodes(policy: Callable, initial_core_state: Callable[[int], tuple], envs: Sequence,
                 num_episodes: int, acting: types.ActingParams,
                 on_frame: Optional[Callable[[int], None]] = None) -> List[Episode]:
  """Plays `num_episodes` episodes over `envs`, env i taking episodes i, i + B, i + 2B, ...

  Args:
    policy: the agent's `inference` for exactly B = len(envs) rows:
      (observation, reward, done, core_state, acting) -> (action, outputs, core_state).
    initial_core_state: the agent's, (num_envs) -> tuple of [num_envs, ...] arrays.
    envs: B gymnasium envs, not yet reset.
    num_episodes: episodes to play in all, >= 1.
    acting: ActingParams of [B] arrays: how each env acts.
    on_frame: called with k whenever env 0 shows a new frame of its episode k (after
      its resets and after each of its steps, before a reset), to render env 0.

  Returns:
    The episodes in the order they finished.
  """
  if num_episodes < 1:
    raise ValueError(f'num_episodes={num_episodes}; expected at least 1')
  num_envs = len(envs)
  quota = [len(range(i, num_episodes, num_envs)) for i in range(num_envs)]
  observations = [env.reset()[0] for env in envs]
  reward = np.zeros(num_envs, np.float32)
  done = np.zeros(num_envs, bool)
  core_state = initial_core_state(num_envs)
  returns = np.zeros(num_envs, np.float64)
  lengths = np.zeros(num_envs, np.int64)
  finished: List[Episode] = []
  finished_by_env = [0] * num_envs
  if on_frame is not None:
    on_frame(0)
  while any(finished_by_env[i] < quota[i] for i in range(num_envs)):
    action, _, core_state = policy(np.stack(observations), reward, done, core_state, acting)
    action = np.asarray(action)
    core_state = tuple(np.asarray(part) for part in core_state)
    for i, env in enumerate(envs):
      if finished_by_env[i] == quota[i]:
        continue  # Done with its share: its row rides along unused.
      observation, step_reward, terminated, truncated, info = env.step(
          to_env_action(action[i]))
      if i == 0 and on_frame is not None:
        on_frame(finished_by_env[0])
      returns[i] += step_reward
      lengths[i] += 1
      reward[i] = step_reward
      # The policy's done as in training, a lost life too (episodic_life: its recurrent
      # state resets there); the episode is the whole game.
      done[i] = terminated or truncated or info.get(LIFE_LOST, False)
      if terminated or truncated:
        finished.append(Episode(i, float(returns[i]), int(lengths[i])))
        finished_by_env[i] += 1
        returns[i], lengths[i] = 0.0, 0
        if finished_by_env[i] < quota[i]:
          observation, _ = env.reset()
          if i == 0 and on_frame is not None:
            on_frame(finished_by_env[0])
      observations[i] = observation
  return finished
