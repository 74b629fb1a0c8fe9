"""seed/envs/dmlab.py against a stand-in deepmind_lab (tests/fakes/deepmind_lab.py) with
the API it uses, and without any deepmind_lab: the message says how to get it."""
import os
import sys

import numpy as np
import pytest

import seed.envs
from seed.envs import registry
from tests.processes import REPO, actor_that_cannot_start

FAKES = os.path.join(REPO, 'tests', 'fakes')


@pytest.fixture
def fake_lab(monkeypatch):
  monkeypatch.syspath_prepend(FAKES)
  monkeypatch.delitem(sys.modules, 'deepmind_lab', raising=False)
  import deepmind_lab  # pylint: disable=g-import-not-at-top,import-outside-toplevel
  deepmind_lab.LABS.clear()
  return deepmind_lab


def test_without_deepmind_lab_the_error_says_how_to_get_it(monkeypatch):
  monkeypatch.setitem(sys.modules, 'deepmind_lab', None)  # import raises ImportError
  config = seed.envs.EnvConfig(name='dmlab:rooms_watermaze')  # names check without it
  with pytest.raises(ImportError, match=r'deepmind_lab is not on the package index: build '
                     r'its Python package from https://github.com/google-deepmind/lab'):
    config.make(seed=0)


def test_unknown_levels_are_named_with_the_closest_and_the_list():
  with pytest.raises(registry.UnknownEnvError,
                     match=r"Unknown DMLab level 'rooms_watermazes'. Did you mean "
                     r'dmlab:rooms_watermaze\?.* The DMLab-30 levels: '
                     r'rooms_collect_good_objects_train, .*explore_object_rewards_many\.'):
    seed.envs.EnvConfig(name='dmlab:rooms_watermazes')


def test_a_level_with_seeds_settings(fake_lab):
  env = seed.envs.make_env('dmlab:explore_goal_locations_small', seed=3)
  spec = seed.envs.env_spec(env)
  assert (spec.observation_shape, spec.observation_dtype) == ((3, 72, 96), 'uint8')
  assert spec.num_actions == 9 and spec.frames_per_step == 4
  [lab] = fake_lab.LABS
  assert lab.level == 'contributed/dmlab30/explore_goal_locations_small'
  assert lab.observation_names == ['RGB_INTERLEAVED']
  assert lab.config == {'width': '96', 'height': '72', 'logLevel': 'WARN'}
  observation, _ = env.reset()
  # Channels first: the interleaved pixel (1, 2, 3) is read down the channel axis.
  assert observation.shape == (3, 72, 96) and tuple(observation[:, 0, 0]) == (1, 2, 3)
  # Action 6 is look left + forward, held 4 frames; the fake's reward is its forward part.
  assert env.step(6)[1:4] == (1.0, False, False)
  assert lab.steps[-1] == ((-20, 0, 0, 1, 0, 0, 0), 4)
  assert env.step(1)[1] == -1.0 and lab.steps[-1] == ((0, 0, 0, -1, 0, 0, 0), 4)
  # The third step reaches the fake's 12 frames: the end, with the last frame repeated.
  last, _, terminated, truncated, _ = env.step(8)
  assert lab.steps[-1] == ((0, 0, 0, 0, 1, 0, 0), 4) and (terminated, truncated) == (True, False)
  np.testing.assert_array_equal(last[:, 1:, :], observation[:, 1:, :] + 8)


def test_seeded_levels_replay_and_test_mode_plays_held_out_levels(fake_lab):
  first = [seed.envs.make_env('dmlab:rooms_watermaze', seed=s) for s in (5, 5, 6)]
  for env in first:
    env.reset()
    env.reset()
  seeds = [lab.seeds for lab in fake_lab.LABS]
  assert seeds[0] == seeds[1] and seeds[0] != seeds[2] and seeds[0][0] != seeds[0][1]
  seed.envs.make_env('dmlab:rooms_collect_good_objects_train', seed=0, test=True)
  held_out = fake_lab.LABS[-1]
  assert held_out.level == 'contributed/dmlab30/rooms_collect_good_objects_test'
  assert held_out.config['allowHoldOutLevels'] == 'true'
  assert held_out.config['mixerSeed'] == str(0x600D5EED)


def test_an_actor_without_deepmind_lab_exits_with_the_install_hint():
  # A real actor process (no TensorFlow, no learner needed): exit 2, one line.
  done = actor_that_cannot_start('dmlab:rooms_watermaze')
  assert done.returncode == 2, done.stderr
  assert 'deepmind_lab is not on the package index' in done.stderr
  assert 'Traceback' not in done.stderr
