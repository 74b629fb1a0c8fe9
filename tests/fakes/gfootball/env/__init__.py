"""A stand-in for gfootball.env with the API seed/envs/football.py uses: create_environment
returns an old-gym-style env (reset() -> obs; step(a) -> obs, reward, done, info) with
19 actions and a `_config` dict on `unwrapped`. Observations are stacked SMM planes
[height, width, 16] of 0/255, plane k filled where k == the step count mod 16; the
reward is 1 for action 12 (shot), and an episode lasts EPISODE_STEPS steps. Every env
made is kept in ENVS, with the arguments it was made with and its engine seeds."""
import types

import numpy as np

EPISODE_STEPS = 5
ENVS = []


class _Env:

  def __init__(self, **kwargs):
    self.kwargs = kwargs
    self.action_space = types.SimpleNamespace(n=19)
    self._config = {}
    self.engine_seeds = []
    self.actions = []
    self._steps = 0

  @property
  def unwrapped(self):
    return self

  def _observation(self):
    width, height = self.kwargs['channel_dimensions']
    smm = np.zeros((height, width, 16), np.uint8)
    smm[..., self._steps % 16] = 255
    return smm

  def reset(self):
    self.engine_seeds.append(self._config.get('game_engine_random_seed'))
    self._steps = 0
    return self._observation()

  def step(self, action):
    assert isinstance(action, int), action
    self.actions.append(action)
    self._steps += 1
    return self._observation(), float(action == 12), self._steps >= EPISODE_STEPS, {}

  def close(self):
    pass


def create_environment(env_name, stacked, representation, rewards, channel_dimensions,
                       **kwargs):
  env = _Env(env_name=env_name, stacked=stacked, representation=representation,
             rewards=rewards, channel_dimensions=channel_dimensions, **kwargs)
  ENVS.append(env)
  return env
