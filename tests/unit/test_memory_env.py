"""MemoryCue: only memory of the first observation can answer the query."""
import numpy as np

from seed.envs import env_spec, make_env
from seed.envs.memory import MemoryCue


def play(env, answer):
  observation, _ = env.reset()
  first, steps = observation, 0
  while True:
    observation, reward, terminated, truncated, _ = env.step(answer(first, observation))
    steps += 1
    if terminated or truncated:
      return reward, steps, observation


def test_remembering_the_cue_always_wins_and_episodes_have_a_fixed_length():
  env = make_env('MemoryCue', seed=3, delay=4)
  for _ in range(20):
    reward, steps, _ = play(env, lambda first, obs: int(np.argmax(first[:-1])))
    assert reward == 1.0 and steps == 4 + 2


def test_the_query_observation_shows_no_cue():
  env = MemoryCue(delay=3)
  observations = [env.reset(seed=0)[0]]
  for _ in range(4):
    observations.append(env.step(0)[0])
  assert observations[0][:2].sum() == 1 and observations[0][-1] == 0
  assert all(not o.any() for o in observations[1:4])
  np.testing.assert_array_equal(observations[4], [0, 0, 1])


def test_a_memoryless_policy_answers_at_chance():
  env = make_env('MemoryCue', seed=0)
  # Any policy of the current observation alone gives the same answer for both cues.
  rewards = [play(env, lambda first, obs: 0)[0] for _ in range(2000)]
  assert abs(np.mean(rewards)) < 0.08  # expected 0; ±0.08 is about 3.6 standard errors
  assert env_spec(env).num_actions == 2 and env_spec(env).observation_shape == (3,)
