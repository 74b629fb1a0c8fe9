"""What an actor steps: k envs as one batch, finished episodes restarted in the same step.

An actor's split sends the observations of all its envs in one message and gets one
action per env back, so it steps its envs as a batch. Two kinds of batch do that:
`EnvList` (k gymnasium envs, one after another in Python: every env seed has) and
`seed.envs.envpool_atari.EnvPoolAtari` (EnvPool's C++ Atari, `EnvConfig.backend =
'envpool'`). Both follow the protocol's order: an env whose episode ended in this step
reports that step's reward and `terminated`/`truncated`, and the observation it returns
is already the first one of its next episode (the learner never sees a terminal frame:
it bootstraps nothing across the boundary). An env may also mark a step that lost a
life while its game goes on (`info[LIFE_LOST]`, Atari's `episodic_life`): the learner ends
the value target there and the episode goes on.
"""
import dataclasses
from typing import Protocol, Sequence

import numpy as np

from seed.envs import spec as spec_lib

# The info key of a gymnasium env's step that lost a life while the game goes on (True).
LIFE_LOST = 'life_lost'


@dataclasses.dataclass(frozen=True)
class BatchStep:
  """One step of k envs.

  Attributes:
    observations: [k, ...] the observation after the step; for an env whose episode
      ended, the first observation of the next one.
    rewards: float32 [k].
    terminated: bool [k], the episode ended in a terminal state.
    truncated: bool [k], the episode was cut short (a time limit).
    life_lost: bool [k], the step lost a life and the game goes on (never with
      terminated or truncated): the end of the value target, not of the episode.
    episodes_ended: How many of the k episodes ended in this step.
  """
  observations: np.ndarray
  rewards: np.ndarray
  terminated: np.ndarray
  truncated: np.ndarray
  life_lost: np.ndarray
  episodes_ended: int

  @classmethod
  def first(cls, observations: np.ndarray) -> 'BatchStep':
    """The step a batch starts from: its first observations, nothing earned or ended."""
    num_envs = len(observations)
    no = np.zeros(num_envs, bool)
    return cls(observations, np.zeros(num_envs, np.float32), no, no, no, 0)


class EnvBatch(Protocol):
  """k envs stepped together; see the module docstring for the order of a step."""
  spec: spec_lib.EnvSpec
  num_envs: int

  def reset(self) -> np.ndarray:
    """Starts a new episode in every env; their first observations, [k, ...]."""

  def step(self, actions: np.ndarray) -> BatchStep:
    """Steps env i with actions[i] (as the learner sent them: int32 or float arrays)."""

  def close(self) -> None:
    """Frees the envs."""


def to_env_action(action: np.ndarray):
  """An action as gymnasium takes it: a Python int for a discrete one, the array otherwise."""
  return int(action) if action.ndim == 0 else action


class EnvList:
  """k gymnasium envs (from `EnvConfig.make`), stepped one after another."""

  def __init__(self, envs: Sequence, spec: spec_lib.EnvSpec):
    if not envs:
      raise ValueError('An env batch needs at least one env.')
    self._envs = list(envs)
    self.spec = spec
    self.num_envs = len(self._envs)

  def reset(self) -> np.ndarray:
    return np.stack([env.reset()[0] for env in self._envs])

  def step(self, actions: np.ndarray) -> BatchStep:
    observations = [None] * self.num_envs
    rewards = np.zeros(self.num_envs, np.float32)
    terminated = np.zeros(self.num_envs, bool)
    truncated = np.zeros(self.num_envs, bool)
    life_lost = np.zeros(self.num_envs, bool)
    for i, env in enumerate(self._envs):
      observation, rewards[i], terminated[i], truncated[i], info = env.step(
          to_env_action(actions[i]))
      if terminated[i] or truncated[i]:
        observation, _ = env.reset()
      else:
        life_lost[i] = info.get(LIFE_LOST, False)
      observations[i] = observation
    return BatchStep(np.stack(observations), rewards, terminated, truncated, life_lost,
                     int(np.count_nonzero(terminated | truncated)))

  def close(self) -> None:
    for env in self._envs:
      env.close()
