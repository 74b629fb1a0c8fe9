"""EnvList: k gymnasium envs as one batch, an ended episode restarted in the same step."""
import gymnasium
import numpy as np
import pytest

from seed.actors.client import split_bounds, split_envs
from seed.envs.batch import EnvList
from seed.envs.spec import EnvSpec

SPEC = EnvSpec((2,), 'float32', num_actions=3)


class Countdown(gymnasium.Env):
  """Episodes of `length` steps; observation [episode, step]; reward = 10·action + step."""
  observation_space = gymnasium.spaces.Box(0, 1e6, (2,), np.float32)
  action_space = gymnasium.spaces.Discrete(3)

  def __init__(self, length):
    self.length, self.episode, self.t = length, -1, 0

  def reset(self, *, seed=None, options=None):
    self.episode, self.t = self.episode + 1, 0
    return np.array([self.episode, 0], np.float32), {}

  def step(self, action):
    assert isinstance(action, int)  # what gymnasium envs expect of a discrete action
    self.t += 1
    return (np.array([self.episode, self.t], np.float32), 10.0 * action + self.t,
            self.t == self.length, False, {})


def test_an_ended_episode_reports_its_last_step_and_shows_the_next_first_frame():
  envs = EnvList([Countdown(2), Countdown(3)], SPEC)
  np.testing.assert_array_equal(envs.reset(), [[0, 0], [0, 0]])
  first = envs.step(np.array([1, 2], np.int32))
  np.testing.assert_array_equal(first.observations, [[0, 1], [0, 1]])
  np.testing.assert_array_equal(first.rewards, [11, 21])
  assert first.episodes_ended == 0 and first.rewards.dtype == np.float32
  second = envs.step(np.array([0, 0], np.int32))
  # Env 0 ended: its reward and `terminated` are the last step's, its frame the next
  # episode's first; env 1 goes on.
  np.testing.assert_array_equal(second.observations, [[1, 0], [0, 2]])
  np.testing.assert_array_equal(second.rewards, [2, 2])
  np.testing.assert_array_equal(second.terminated, [True, False])
  assert not second.truncated.any() and second.episodes_ended == 1
  third = envs.step(np.array([0, 0], np.int32))
  np.testing.assert_array_equal(third.observations, [[1, 1], [1, 0]])
  np.testing.assert_array_equal(third.terminated, [False, True])
  assert third.episodes_ended == 1


def test_splits_are_contiguous_nearly_equal_and_refuse_a_bad_count():
  assert split_bounds(5, 2) == [0, 2, 5] and split_bounds(4, 4) == [0, 1, 2, 3, 4]
  assert [b.num_envs for b in split_envs([Countdown(2)] * 5, SPEC, 2)] == [2, 3]
  for bad in (0, 6):
    with pytest.raises(ValueError, match=f'num_splits={bad} must be between 1 and'):
      split_bounds(5, bad)
  with pytest.raises(ValueError, match='at least one env'):
    EnvList([], SPEC)
