"""seed/envs/football.py against a stand-in gfootball (tests/fakes) with the API it uses:
SEED's settings, the spec the learner knows without gfootball, bad names and options."""
import os
import sys

import numpy as np
import pytest

import seed.envs
from seed.envs import football
from seed.envs import registry
from tests.processes import REPO, actor_that_cannot_start

FAKES = os.path.join(REPO, 'tests', 'fakes')


@pytest.fixture
def fake_gfootball(monkeypatch):
  monkeypatch.syspath_prepend(FAKES)
  for name in ('gfootball', 'gfootball.env'):
    monkeypatch.delitem(sys.modules, name, raising=False)
  import gfootball.env  # pylint: disable=g-import-not-at-top,import-outside-toplevel
  gfootball.env.ENVS.clear()
  return gfootball.env


def test_a_scenario_with_seeds_settings(fake_gfootball):
  env = seed.envs.make_env('football:academy_empty_goal_close', seed=4,
                           rewards='scoring,checkpoints')
  spec = seed.envs.env_spec(env)
  assert (spec.observation_shape, spec.observation_dtype) == ((16, 72, 96), 'uint8')
  assert spec.num_actions == 19 and spec.frames_per_step == 1
  [made] = fake_gfootball.ENVS
  assert made.kwargs == {'env_name': 'academy_empty_goal_close', 'stacked': True,
                         'representation': 'extracted', 'rewards': 'scoring,checkpoints',
                         'channel_dimensions': (96, 72)}
  observation, _ = env.reset()
  # Channels first: plane 0 of the first SMM is the one filled.
  assert observation.shape == (16, 72, 96) and observation[0].min() == 255
  assert observation[1:].max() == 0
  assert env.step(12)[1:4] == (1.0, False, False)
  assert env.step(np.int32(3))[1] == 0.0 and made.actions == [12, 3]
  for _ in range(2):
    env.step(0)
  *_, terminated, truncated, _ = env.step(0)
  assert (terminated, truncated) == (True, False)
  # The learner's spec, from the name alone, is the env's.
  assert seed.envs.EnvConfig(name='football:academy_empty_goal_close',
                             options={'rewards': 'scoring,checkpoints'}).spec() == spec


def test_engine_seeds_repeat_with_the_env_seed(fake_gfootball):
  for seed_value in (7, 7, 8):
    env = seed.envs.make_env('football:11_vs_11_easy_stochastic', seed=seed_value)
    env.reset()
    env.reset()
  first, again, other = [made.engine_seeds for made in fake_gfootball.ENVS]
  assert first == again and first != other and first[0] != first[1]


def test_the_spec_is_known_without_gfootball(monkeypatch):
  monkeypatch.setitem(sys.modules, 'gfootball', None)
  monkeypatch.setitem(sys.modules, 'gfootball.env', None)
  spec = seed.envs.EnvConfig(name='football:academy_corner', options={'smm_size': 'large'}).spec()
  assert spec.observation_shape == (16, 108, 144) and spec.num_actions == 19
  with pytest.raises(ImportError, match=r'gfootball is built from source: run '
                     r'scripts/install_football.sh'):
    seed.envs.make_env('football:academy_corner', seed=0)


def test_unknown_scenarios_and_options_are_named():
  with pytest.raises(registry.UnknownEnvError,
                     match=r"Unknown Football scenario 'academy_empty_goal_clos'. Did you mean "
                     r'football:academy_empty_goal_close.*Scenarios: academy_empty_goal_close, '):
    seed.envs.EnvConfig(name='football:academy_empty_goal_clos')
  with pytest.raises(ValueError, match=r"option rewards='checkpoints'; accepted: 'scoring', "
                     r"'scoring,checkpoints'"):
    seed.envs.EnvConfig(name='football:academy_corner', options={'rewards': 'checkpoints'}).spec()
  with pytest.raises(ValueError, match=r"option smm_size='huge'; accepted: default, medium, large"):
    football.known_spec('academy_corner', smm_size='huge')


def test_an_actor_without_gfootball_says_how_to_get_it():
  done = actor_that_cannot_start('football:academy_empty_goal_close')
  assert done.returncode == 2, done.stderr
  assert 'scripts/install_football.sh' in done.stderr and 'Traceback' not in done.stderr
