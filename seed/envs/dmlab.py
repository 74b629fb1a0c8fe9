"""DeepMind Lab levels as `dmlab:<level>`, with SEED's (and IMPALA's) settings.

  * Levels: the 30 of DMLab-30 (`contributed/dmlab30/<level>`); `test=True` plays the
    held-out variants (`*_train` levels become `*_test`, hold-out levels allowed,
    the fixed mixer seed), as SEED's evaluation does.
  * Observations: `RGB_INTERLEAVED` at 72 x 96, delivered channels-first
    [3, 72, 96] uint8 (the layout our image torsos take).
  * Actions: IMPALA's 9 discrete actions (`ACTION_SET`), each held for
    `action_repeat` (4) frames, rewards summed by the engine.
  * Episode ends: when the level stops running (its time limit or its own end), the
    step is `terminated`, as SEED and IMPALA treat it; the engine has no observation
    after the end, so the last one is repeated.
  * Seeding: each reset draws the level's seed from a RandomState seeded with the
    env's seed, so a seeded env replays its episodes' layouts.

`deepmind_lab` is not on the package index: it is imported only when a level is built,
and its absence is an ImportError saying how to get it (`INSTALL_HINT`). The learner
never builds one: `known_spec` gives it the spec from the name and options alone.
"""
import difflib
from typing import Any, Optional

import gymnasium
from gymnasium import spaces
import numpy as np

from seed.envs import spec as spec_lib
from seed.envs import wrappers

INSTALL_HINT = (
    'deepmind_lab is not on the package index: build its Python package from '
    'https://github.com/google-deepmind/lab (docs/users/build.md: `bazel build -c opt '
    '//python/pip_package:build_pip_package`, then run the built script and pip install '
    'the wheel it writes) into the venv or image of the actors (the learner does not '
    'need it)')

LEVELS = (
    'rooms_collect_good_objects_train', 'rooms_exploit_deferred_effects_train',
    'rooms_select_nonmatching_object', 'rooms_watermaze', 'rooms_keys_doors_puzzle',
    'language_select_described_object', 'language_select_located_object',
    'language_execute_random_task', 'language_answer_quantitative_question',
    'lasertag_one_opponent_small', 'lasertag_three_opponents_small',
    'lasertag_one_opponent_large', 'lasertag_three_opponents_large',
    'natlab_fixed_large_map', 'natlab_varying_map_regrowth', 'natlab_varying_map_randomized',
    'skymaze_irreversible_path_hard', 'skymaze_irreversible_path_varied',
    'psychlab_arbitrary_visuomotor_mapping', 'psychlab_continuous_recognition',
    'psychlab_sequential_comparison', 'psychlab_visual_search',
    'explore_object_locations_small', 'explore_object_locations_large',
    'explore_obstructed_goals_small', 'explore_obstructed_goals_large',
    'explore_goal_locations_small', 'explore_goal_locations_large',
    'explore_object_rewards_few', 'explore_object_rewards_many')

# (look left/right pixels, look up/down, strafe left/right, forward/back, fire, jump,
# crouch): IMPALA's action set, which SEED keeps.
ACTION_SET = (
    (0, 0, 0, 1, 0, 0, 0),    # forward
    (0, 0, 0, -1, 0, 0, 0),   # backward
    (0, 0, -1, 0, 0, 0, 0),   # strafe left
    (0, 0, 1, 0, 0, 0, 0),    # strafe right
    (-20, 0, 0, 0, 0, 0, 0),  # look left
    (20, 0, 0, 0, 0, 0, 0),   # look right
    (-20, 0, 0, 1, 0, 0, 0),  # look left + forward
    (20, 0, 0, 1, 0, 0, 0),   # look right + forward
    (0, 0, 0, 0, 1, 0, 0),    # fire
)
HEIGHT, WIDTH = 72, 96
# SEED's fixed mixer seed for the held-out (test) episodes.
_TEST_MIXER_SEED = 0x600D5EED


def _deepmind_lab():
  """The deepmind_lab module, or an ImportError saying how to get it."""
  try:
    import deepmind_lab  # pylint: disable=g-import-not-at-top,import-outside-toplevel
  except ImportError as e:
    raise ImportError(f'dmlab: levels need {INSTALL_HINT}.') from e
  return deepmind_lab


def unknown_level_message(level: str) -> str:
  close = difflib.get_close_matches(str(level), LEVELS, n=3, cutoff=0.5)
  hint = f' Did you mean {", ".join("dmlab:" + c for c in close)}?' if close else ''
  return (f'Unknown DMLab level {level!r}.{hint} The DMLab-30 levels: '
          f'{", ".join(LEVELS)}.')


def level_path(level: str, test: bool) -> str:
  """The engine's level name; a `*_train` level's held-out variant with `test`."""
  if test and level.endswith('_train'):
    level = level[:-len('_train')] + '_test'
  return f'contributed/dmlab30/{level}'


def known_spec(level: str, action_repeat: int = 4, test: bool = False,
               renderer: str = 'software') -> spec_lib.EnvSpec:
  """The spec of `dmlab:<level>` with these options, without deepmind_lab."""
  del test, renderer
  if level not in LEVELS:
    raise ValueError(unknown_level_message(level))
  return spec_lib.EnvSpec((3, HEIGHT, WIDTH), 'uint8', num_actions=len(ACTION_SET),
                          frames_per_step=action_repeat)


class DmLabEnv(gymnasium.Env):
  """One DMLab-30 level as a gymnasium env; see the module docstring."""

  metadata = {'render_modes': []}

  def __init__(self, level: str, seed: int, action_repeat: int = 4, test: bool = False,
               renderer: str = 'software', level_cache: Optional[Any] = None):
    if level not in LEVELS:
      raise ValueError(unknown_level_message(level))
    if not isinstance(action_repeat, int) or isinstance(action_repeat, bool) or action_repeat < 1:
      raise ValueError(f'dmlab:{level}: option action_repeat must be an int >= 1, '
                       f'got {action_repeat!r}.')
    config = {'width': str(WIDTH), 'height': str(HEIGHT), 'logLevel': 'WARN'}
    if test:
      config.update(allowHoldOutLevels='true', mixerSeed=str(_TEST_MIXER_SEED))
    self._lab = _deepmind_lab().Lab(level_path(level, test), ['RGB_INTERLEAVED'],
                                    config=config, renderer=renderer, level_cache=level_cache)
    self.action_repeat = action_repeat
    self.action_space = spaces.Discrete(len(ACTION_SET))
    self.observation_space = spaces.Box(0, 255, (3, HEIGHT, WIDTH), np.uint8)
    self._actions = [np.array(action, np.intc) for action in ACTION_SET]
    self._level_seeds = np.random.RandomState(seed)
    self._last = np.zeros(self.observation_space.shape, np.uint8)

  def _observation(self) -> np.ndarray:
    frame = self._lab.observations()['RGB_INTERLEAVED']  # [H, W, 3]
    self._last = np.ascontiguousarray(np.transpose(frame, (2, 0, 1)), np.uint8)
    return self._last

  def reset(self, *, seed: Optional[int] = None, options: Optional[dict[str, Any]] = None):
    super().reset(seed=seed)
    if seed is not None:
      self._level_seeds = np.random.RandomState(seed)
    self._lab.reset(seed=int(self._level_seeds.randint(0, 2**31 - 1)))
    return self._observation(), {}

  def step(self, action):
    reward = float(self._lab.step(self._actions[int(action)], num_steps=self.action_repeat))
    if not self._lab.is_running():
      return self._last, reward, True, False, {}
    return self._observation(), reward, False, False, {}

  def close(self):
    self._lab.close()


def make_dmlab(level: str, seed: int, action_repeat: int = 4, test: bool = False,
               renderer: str = 'software') -> gymnasium.Env:
  """Builds a DMLab-30 level; `frames_per_step == action_repeat`.

  Raises:
    ImportError: deepmind_lab is not installed (the message says how to get it).
    ValueError: an unknown level or a bad option.
  """
  env = DmLabEnv(level, seed, action_repeat, test, renderer)
  return wrappers.SeededEnv(env, seed, frames_per_step=action_repeat)
