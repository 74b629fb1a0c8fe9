"""Google Research Football scenarios as `football:<scenario>`, with SEED's settings.

  * Observations: the stacked Super Mini Map (`representation='extracted'`,
    `stacked=True`): 4 frames x 4 planes (left team, right team, ball, active player)
    of 72 x 96 at the default size, values 0 or 255, delivered channels-first
    [16, 72, 96] uint8 (the layout our image torsos take). `smm_size` 'medium'
    (90 x 120) and 'large' (108 x 144) as in SEED.
  * Actions: gfootball's default set of 19, one env step each (no action repeat).
  * Rewards: `rewards='scoring'` (+1/-1 a goal) or `'scoring,checkpoints'` (plus
    0.1 for each of 10 checkpoints on the way to the opponent's goal, once each).
  * Episode ends: gfootball's `done` (a goal or the ball out in the academy
    scenarios, the end of the match in 11 vs 11) is `terminated`, as SEED has it.
  * Seeding: each reset draws the engine's seed (`game_engine_random_seed`) from a
    RandomState seeded with the env's seed.

gfootball is built from source (scripts/install_football.sh) into a venv of its own,
for actors; it is imported only when a scenario is built. The learner never builds
one: `known_spec` gives it the spec from the name and options alone.
"""
import difflib
from typing import Any, Optional

import gymnasium
from gymnasium import spaces
import numpy as np

from seed.envs import spec as spec_lib
from seed.envs import wrappers

INSTALL_HINT = ('gfootball is built from source: run scripts/install_football.sh (a venv '
                'of its own, .venv-football, for Football actors; ./run_local.sh football '
                'uses it)')

# gfootball 2.10's scenarios (gfootball/scenarios/*.py) that SEED trains on: the academy
# and the 11 vs 11 games.
SCENARIOS = (
    'academy_empty_goal_close', 'academy_empty_goal', 'academy_run_to_score',
    'academy_run_to_score_with_keeper', 'academy_pass_and_shoot_with_keeper',
    'academy_run_pass_and_shoot_with_keeper', 'academy_3_vs_1_with_keeper',
    'academy_corner', 'academy_counterattack_easy', 'academy_counterattack_hard',
    'academy_single_goal_versus_lazy', '11_vs_11_easy_stochastic', '11_vs_11_stochastic',
    '11_vs_11_hard_stochastic')
REWARDS = ('scoring', 'scoring,checkpoints')
SMM_SIZES = {'default': (96, 72), 'medium': (120, 90), 'large': (144, 108)}  # (width, height)
NUM_ACTIONS = 19
STACKED_PLANES = 16


def _gfootball_env():
  try:
    import gfootball.env  # pylint: disable=g-import-not-at-top,import-outside-toplevel
  except ImportError as e:
    raise ImportError(f'football: scenarios need gfootball; {INSTALL_HINT}.') from e
  return gfootball.env


def unknown_scenario_message(scenario: str) -> str:
  close = difflib.get_close_matches(str(scenario), SCENARIOS, n=3, cutoff=0.5)
  hint = f' Did you mean {", ".join("football:" + c for c in close)}?' if close else ''
  return f'Unknown Football scenario {scenario!r}.{hint} Scenarios: {", ".join(SCENARIOS)}.'


def _check_options(scenario: str, rewards: str, smm_size: str) -> None:
  if scenario not in SCENARIOS:
    raise ValueError(unknown_scenario_message(scenario))
  if rewards not in REWARDS:
    raise ValueError(f'football:{scenario}: option rewards={rewards!r}; accepted: '
                     f'{", ".join(repr(r) for r in REWARDS)}')
  if smm_size not in SMM_SIZES:
    raise ValueError(f'football:{scenario}: option smm_size={smm_size!r}; accepted: '
                     f'{", ".join(SMM_SIZES)}')


def known_spec(scenario: str, rewards: str = 'scoring',
               smm_size: str = 'default') -> spec_lib.EnvSpec:
  """The spec of `football:<scenario>` with these options, without gfootball."""
  _check_options(scenario, rewards, smm_size)
  width, height = SMM_SIZES[smm_size]
  return spec_lib.EnvSpec((STACKED_PLANES, height, width), 'uint8', num_actions=NUM_ACTIONS)


class FootballEnv(gymnasium.Env):
  """One scenario as a gymnasium env; see the module docstring."""

  metadata = {'render_modes': []}

  def __init__(self, scenario: str, seed: int, rewards: str = 'scoring',
               smm_size: str = 'default'):
    _check_options(scenario, rewards, smm_size)
    self._env = _gfootball_env().create_environment(
        env_name=scenario, stacked=True, representation='extracted', rewards=rewards,
        channel_dimensions=SMM_SIZES[smm_size])
    spec = known_spec(scenario, rewards, smm_size)
    self.observation_space = spaces.Box(0, 255, spec.observation_shape, np.uint8)
    self.action_space = spaces.Discrete(NUM_ACTIONS)
    if self._env.action_space.n != NUM_ACTIONS:
      raise ValueError(f'football:{scenario} has {self._env.action_space.n} actions; '
                       f'expected gfootball\'s default {NUM_ACTIONS}')
    self._engine_seeds = np.random.RandomState(seed)

  def _observation(self, smm) -> np.ndarray:
    return np.ascontiguousarray(np.transpose(np.asarray(smm, np.uint8), (2, 0, 1)))

  def _seed_engine(self) -> None:
    # gfootball reads the engine's seed from its config at each reset.
    config = self._env.unwrapped._config  # pylint: disable=protected-access
    config['game_engine_random_seed'] = int(self._engine_seeds.randint(0, 2**31 - 1))

  def reset(self, *, seed: Optional[int] = None, options: Optional[dict[str, Any]] = None):
    super().reset(seed=seed)
    if seed is not None:
      self._engine_seeds = np.random.RandomState(seed)
    self._seed_engine()
    return self._observation(self._env.reset()), {}

  def step(self, action):
    observation, reward, done, info = self._env.step(int(action))
    del info
    return self._observation(observation), float(reward), bool(done), False, {}

  def close(self):
    self._env.close()


def make_football(scenario: str, seed: int, rewards: str = 'scoring',
                  smm_size: str = 'default') -> gymnasium.Env:
  """Builds a Football scenario (see the module docstring).

  Raises:
    ImportError: gfootball is not installed (the message says how to install it).
    ValueError: an unknown scenario or a bad option.
  """
  return wrappers.SeededEnv(FootballEnv(scenario, seed, rewards, smm_size), seed)
