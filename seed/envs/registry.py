"""Env names, how to build them, and their specs.

Names are plain (`Catch`, `CartPole-v1`) or in a family (`atari:Pong`,
`gym:Acrobot-v1`, `gym:my_pkg.envs:MyEnv-v0`, `mujoco:HalfCheetah-v5`,
`dmc:cheetah-run`, `dmlab:rooms_watermaze`, `football:academy_empty_goal_close`, `dm_env:my_pkg.envs:make_maze`). Every factory
takes `seed` plus the env's options as keywords and returns an env whose first
unseeded `reset()` uses that seed (see `seed.envs.wrappers`). Learner and
actors agree on the env through one gin-bound `EnvConfig`.

Nothing here may import TensorFlow: actor processes import this module.
"""
import dataclasses
import difflib
import functools
import importlib
import inspect
from typing import Any, Callable, Mapping, Optional

import gin
import gymnasium
from gymnasium import spaces
import numpy as np

from seed.envs import batch as batch_lib
from seed.envs import catch
from seed.envs import classic
from seed.envs import memory
from seed.envs import spec as spec_lib
from seed.envs import wrappers

Factory = Callable[..., gymnasium.Env]

# EnvConfig.backend: how actors step their envs.
BACKENDS = ('gymnasium', 'envpool')

_FACTORIES: dict[str, Factory] = {}
# Family prefix -> how to write a member, for error messages.
_FAMILIES = {'atari': 'atari:<Game>, e.g. atari:Pong (any game ale-py has)',
             'gym': 'gym:<gymnasium id>, e.g. gym:Acrobot-v1, or gym:<module>:<id> for '
                    'an env a package registers when imported (observation spaces other '
                    'than Box flattened to float32, state numbers one-hot)',
             'mujoco': 'mujoco:<gymnasium MuJoCo id>, e.g. mujoco:HalfCheetah-v5',
             'dmc': 'dmc:<domain>-<task>, e.g. dmc:cheetah-run (DM Control suite)',
             'football': 'football:<scenario>, e.g. football:academy_empty_goal_close '
                         '(Google Research Football; scripts/install_football.sh)',
             'dmlab': 'dmlab:<DMLab-30 level>, e.g. dmlab:rooms_watermaze (needs '
                      'deepmind_lab, built by the user)',
             'dm_env': 'dm_env:<module>:<factory>, e.g. dm_env:my_pkg.envs:make_maze '
                       '(factory(seed=..., **options) returns a dm_env.Environment)'}


class UnknownEnvError(ValueError):
  """An env name that is neither registered nor a member of a family."""


def register(name: str, factory: Factory) -> None:
  """Registers `factory(seed=..., **options) -> gymnasium.Env` as `name`."""
  if not isinstance(name, str) or not name or name != name.strip():
    raise ValueError(f'Env name must be a non-empty string without surrounding '
                     f'spaces, got {name!r}.')
  prefix = name.partition(':')[0]
  if ':' in name and prefix in _FAMILIES:
    raise ValueError(f'Cannot register {name!r}: the {prefix!r} prefix '
                     f'belongs to the family {_FAMILIES[prefix]}.')
  if name in _FACTORIES:
    raise ValueError(f'Env {name!r} is already registered (to '
                     f'{_FACTORIES[name]!r}); pick another name.')
  if not callable(factory):
    raise ValueError(f'Factory for env {name!r} must be callable, got '
                     f'{factory!r}.')
  _FACTORIES[name] = factory


def registered_names() -> tuple[str, ...]:
  """Registered plain names, sorted; families are described in errors."""
  return tuple(sorted(_FACTORIES))


def _accepted() -> str:
  names = ', '.join(registered_names())
  families = '; '.join(_FAMILIES.values())
  return f'Accepted names: {names}; families: {families}.'


def _make_gym(env_id: str, seed: int, **options) -> gymnasium.Env:
  """Builds any registered gymnasium id as-is (with gym.make's wrappers).

  A Box observation keeps its shape and dtype (bool, integers, floats); any other
  space is flattened by gymnasium into one float32 vector: a Discrete observation
  (a state number: FrozenLake, Taxi, CliffWalking) becomes one-hot, the input an MLP
  can learn from, and so does each part of a MultiDiscrete; Dict and Tuple parts
  are concatenated.
  """
  try:
    env = gymnasium.make(env_id, **options)
  except TypeError as e:
    raise ValueError(f'Env gym:{env_id} rejected options {sorted(options)}: '
                     f'{e}') from e
  if not isinstance(env.observation_space, spaces.Box):
    env = gymnasium.wrappers.DtypeObservation(
        gymnasium.wrappers.FlattenObservation(env), np.float32)
  return wrappers.SeededEnv(env, seed)


def _import_env_module(module_name: str, name: str) -> None:
  """Imports the module of a `gym:<module>:<id>` name, which registers its envs."""
  try:
    importlib.import_module(module_name)
  except ImportError as e:
    raise UnknownEnvError(
        f'Env name {name!r}: cannot import module {module_name!r} ({e}); install the '
        'package that registers the env or put it on PYTHONPATH.') from e


def _resolve(name: str) -> Factory:
  """The factory for `name`, or an UnknownEnvError saying what exists."""
  if not isinstance(name, str):
    raise UnknownEnvError(f'Env name must be a string, got {name!r} '
                          f'({type(name).__name__}). {_accepted()}')
  if name in _FACTORIES:
    return _FACTORIES[name]
  prefix, colon, rest = name.partition(':')
  if colon and prefix == 'atari':
    # Imported here so that processes without Atari never load ale-py.
    from seed.envs import atari  # pylint: disable=g-import-not-at-top
    game = atari.resolve_game(rest)
    if game is None:
      raise UnknownEnvError(atari.unknown_game_message(rest))
    return functools.partial(atari.make_atari, game)
  if colon and prefix == 'mujoco':
    # Imported here, like atari; the module itself loads mujoco only to build.
    from seed.envs import mujoco  # pylint: disable=g-import-not-at-top
    if rest not in mujoco.env_ids():
      raise UnknownEnvError(mujoco.unknown_id_message(rest))
    return functools.partial(mujoco.make_mujoco, rest)
  if colon and prefix == 'dmc':
    # Imported here so that processes without DM Control never load dm_control.
    from seed.envs import dmc  # pylint: disable=g-import-not-at-top
    domain_task = dmc.resolve(rest)
    if domain_task is None:
      raise UnknownEnvError(dmc.unknown_task_message(rest))
    return functools.partial(dmc.make_dmc, *domain_task)
  if colon and prefix == 'football':
    # The scenario list is static: a name is checked without gfootball installed.
    from seed.envs import football  # pylint: disable=g-import-not-at-top
    if rest not in football.SCENARIOS:
      raise UnknownEnvError(football.unknown_scenario_message(rest))
    return functools.partial(football.make_football, rest)
  if colon and prefix == 'dmlab':
    # The level list is static: a name is checked without deepmind_lab installed.
    from seed.envs import dmlab  # pylint: disable=g-import-not-at-top
    if rest not in dmlab.LEVELS:
      raise UnknownEnvError(dmlab.unknown_level_message(rest))
    return functools.partial(dmlab.make_dmlab, rest)
  if colon and prefix == 'dm_env':
    # Imported here so that processes without dm_env envs never load dm_env.
    from seed.envs import dm_env_adapter  # pylint: disable=g-import-not-at-top
    try:
      dm_env_adapter.import_factory(rest)
    except ValueError as e:
      raise UnknownEnvError(str(e)) from e
    return functools.partial(dm_env_adapter.make_dm_env, rest)
  if colon and prefix == 'gym':
    module_name, _, env_id = rest.rpartition(':')
    if module_name:
      _import_env_module(module_name, name)
      rest = env_id
    if rest not in gymnasium.registry:
      # Atari ids (ALE/Pong-v5, PongNoFrameskip-v4) exist only once ale-py is
      # imported; load it only when the id is not already known.
      from seed.envs import atari  # pylint: disable=g-import-not-at-top
      atari.register_ale_envs()
    if rest not in gymnasium.registry:
      close = difflib.get_close_matches(rest, list(gymnasium.registry), n=3)
      hint = f' Did you mean {", ".join("gym:" + c for c in close)}?'
      raise UnknownEnvError(
          f'Unknown gymnasium id {rest!r} in env name {name!r}.'
          f'{hint if close else ""} Any id in gymnasium.registry works, e.g. '
          'gym:CartPole-v1, gym:Pendulum-v1.')
    return functools.partial(_make_gym, rest)
  close = difflib.get_close_matches(name, list(_FACTORIES), n=3)
  hint = f' Did you mean {", ".join(close)}?' if close else ''
  raise UnknownEnvError(f'Unknown env name {name!r}.{hint} {_accepted()}')


def known_spec(name: str, options: Mapping[str, Any]) -> Optional[spec_lib.EnvSpec]:
  """The spec of envs whose package only actors install (football:, dmlab:), from the
  name and options alone; None for every other env (build one to read its spec)."""
  prefix, _, rest = name.partition(':')
  if prefix == 'football':
    from seed.envs import football  # pylint: disable=g-import-not-at-top
    return football.known_spec(rest, **options)
  if prefix == 'dmlab':
    from seed.envs import dmlab  # pylint: disable=g-import-not-at-top
    return dmlab.known_spec(rest, **options)
  return None


def _check_options(name: str, factory: Factory, options: Mapping[str, Any]):
  """Raises a ValueError naming the env and any option it does not take."""
  if 'seed' in options:
    raise ValueError(f'Env {name!r}: pass the seed as make_env(seed=...) or '
                     'EnvConfig.make(seed), not as an option.')
  parameters = inspect.signature(factory).parameters.values()
  if any(p.kind == p.VAR_KEYWORD for p in parameters):
    return  # E.g. gym:<id>, whose options gym.make checks.
  accepted = [p.name for p in parameters if p.name != 'seed' and
              p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
  unknown = sorted(set(options) - set(accepted))
  if unknown:
    raise ValueError(f'Env {name!r} has no option {", ".join(unknown)}; '
                     f'it accepts: {", ".join(accepted) or "no options"}.')


def make_env(name: str, seed: int = 0, **options) -> gymnasium.Env:
  """Builds the env called `name`, seeded with `seed` on its first reset.

  Args:
    name: A registered name or a family member (`atari:Pong`, `gym:<id>`,
      `mujoco:<id>`, `dmc:<domain>-<task>`).
    seed: Seed for the first `reset()` without a seed and for the spaces.
    **options: Keyword options of the env's factory, e.g. for Atari
      `sticky_action_probability=0.25`.

  Returns:
    A gymnasium env; `getattr(env, 'frames_per_step', 1)` is its action repeat.

  Raises:
    UnknownEnvError: `name` is not known.
    ValueError: an option the env does not take, or a bad option value.
  """
  factory = _resolve(name)
  _check_options(name, factory, options)
  env = factory(seed=seed, **options)
  if not isinstance(env, gymnasium.Env):
    raise TypeError(f'Factory for env {name!r} returned {env!r}, not a '
                    'gymnasium.Env.')
  return env


def env_spec(env: gymnasium.Env) -> spec_lib.EnvSpec:
  """The EnvSpec of `env`, read from its spaces and `frames_per_step`."""
  observation_space = env.observation_space
  if not isinstance(observation_space, spaces.Box):
    raise ValueError(f'Observation space must be a gymnasium Box, got '
                     f'{observation_space!r} from {env!r}.')
  action_space = env.action_space
  if isinstance(action_space, spaces.Discrete):
    if int(action_space.start) != 0:
      raise ValueError(f'Discrete actions must start at 0 (agents emit 0..n-1), '
                       f'got {action_space!r} from {env!r}.')
    # The wire format sends discrete actions as int32, whatever the space's
    # own dtype; EnvSpec's default action_dtype says so.
    action = dict(num_actions=int(action_space.n))
  elif isinstance(action_space, spaces.Box):
    action = dict(
        action_shape=action_space.shape,
        action_dtype=action_space.dtype,
        action_low=tuple(float(x) for x in np.ravel(action_space.low)),
        action_high=tuple(float(x) for x in np.ravel(action_space.high)))
  else:
    raise ValueError(f'Action space must be a gymnasium Discrete or Box, got '
                     f'{action_space!r} from {env!r}.')
  return spec_lib.EnvSpec(
      observation_shape=observation_space.shape,
      observation_dtype=observation_space.dtype,
      frames_per_step=int(getattr(env, 'frames_per_step', 1)),
      **action)


@gin.configurable
@dataclasses.dataclass(frozen=True)
class EnvConfig:
  """The env learner and actors share, bound in gin.

  For example:
    EnvConfig.name = 'atari:Pong'
    EnvConfig.options = {'sticky_action_probability': 0.25}

  The name and option names are checked when the config is built, so a typo
  fails in the learner before any actor starts.

  Attributes:
    name: Env name for `make_env`.
    options: Keyword options for the env's factory.
    backend: How actors step their envs: 'gymnasium' (each env built by `make_env`,
      stepped in Python; every env) or 'envpool' (EnvPool's C++ Atari, `atari:` names
      only, the same preprocessing: seed/envs/envpool_atari.py). The learner and
      `seed.evaluate` build single envs the 'gymnasium' way either way.
    envpool_threads: EnvPool's threads per actor split (backend 'envpool').
  """
  name: str = 'CartPole-v1'
  options: Mapping[str, Any] = dataclasses.field(default_factory=dict)
  backend: str = 'gymnasium'
  envpool_threads: int = 1

  def __post_init__(self):
    if not isinstance(self.options, Mapping):
      raise ValueError(f'EnvConfig.options must be a mapping of option name to '
                       f'value, got {self.options!r}.')
    # A private copy, so mutating the bound dict later cannot change the env.
    object.__setattr__(self, 'options', dict(self.options))
    _check_options(self.name, _resolve(self.name), self.options)
    if self.backend not in BACKENDS:
      raise ValueError(f'EnvConfig.backend must be one of {", ".join(map(repr, BACKENDS))}, '
                       f'got {self.backend!r}.')
    if (not isinstance(self.envpool_threads, int) or isinstance(self.envpool_threads, bool)
        or self.envpool_threads < 1):
      raise ValueError(f'EnvConfig.envpool_threads must be an int >= 1, '
                       f'got {self.envpool_threads!r}.')
    if self.backend == 'envpool':
      if not self.name.startswith('atari:'):
        raise ValueError(f"EnvConfig.backend = 'envpool' steps Atari games only (atari:<Game>), "
                         f"got EnvConfig.name = {self.name!r}; use backend 'gymnasium'.")
      from seed.envs import envpool_atari  # pylint: disable=g-import-not-at-top
      envpool_atari.check_options(self.options)

  def make(self, seed: int) -> gymnasium.Env:
    """Builds the env, seeded with `seed` on its first reset."""
    return make_env(self.name, seed, **self.options)

  def make_batch(self, first_seed: int, num_envs: int) -> batch_lib.EnvBatch:
    """num_envs envs an actor steps together, seeded first_seed, first_seed + 1, ..."""
    if self.backend == 'envpool':
      from seed.envs import envpool_atari  # pylint: disable=g-import-not-at-top
      return envpool_atari.EnvPoolAtari(self.name.partition(':')[2], first_seed, num_envs,
                                        num_threads=self.envpool_threads, **self.options)
    envs = [self.make(first_seed + i) for i in range(num_envs)]
    return batch_lib.EnvList(envs, env_spec(envs[0]))

  def spec(self) -> spec_lib.EnvSpec:
    """The env's EnvSpec: known from the name for football: and dmlab: (whose packages
    only actors install), else read from a throwaway instance."""
    known = known_spec(self.name, self.options)
    if known is not None:
      return known
    env = self.make(seed=0)
    try:
      return env_spec(env)
    finally:
      env.close()


register('Catch', catch.make_catch)
register('CartPole-v1', classic.make_cartpole)
register('MemoryCue', memory.make_memory_cue)
