"""dm_env environments as gymnasium envs: what `dmc:` names and `dm_env:` names share.

`DmEnvAdapter` takes a `load(seed) -> dm_env.Environment` function:
  * Observations: a dict of arrays (DM Control's OrderedDict, so its order is fixed)
    is flattened and concatenated into one float32 vector; a single array keeps its
    shape and dtype (uint8 frames stay uint8).
  * Actions: a float BoundedArray becomes a float32 Box in [-1, 1], mapped linearly
    onto the spec's bounds, so one policy head fits every env; a DiscreteArray
    becomes a Discrete of its values.
  * Episode ends: a last step with discount > 0 (a time limit) is `truncated`; one
    with discount 0 is `terminated`.
  * Seeding: `reset(seed=s)` loads the env again with `load(s)` (dm_env has no
    seeding call); unseeded resets continue the loaded env's stream.

`make_dm_env` builds a user's dm_env environment named `dm_env:<module>:<factory>`,
where `factory(seed=..., **options)` returns it.
"""
import importlib
import inspect
from typing import Any, Callable, Mapping, Optional

import gymnasium
from gymnasium import spaces
import numpy as np

from seed.envs import wrappers

# Wider bounds than this are "unbounded" in disguise (DM Control's lqr uses +-1e10): a
# policy in [-1, 1] mapped onto them would command forces of 1e10.
_MAX_ACTION_BOUND = 1e6


def scale_action(action: np.ndarray, minimum: np.ndarray, maximum: np.ndarray) -> np.ndarray:
  """Maps `action` in [-1, 1] linearly onto [minimum, maximum], clipping first."""
  action = np.clip(np.asarray(action, np.float64), -1.0, 1.0)
  return minimum + (action + 1.0) * 0.5 * (maximum - minimum)


def flatten_observation(observation: Mapping[str, Any]) -> np.ndarray:
  """The observation dict's values, raveled and concatenated in its order, float32."""
  return np.concatenate([np.ravel(v) for v in observation.values()]).astype(np.float32)


def _array_space(spec) -> spaces.Box:
  """A Box for one dm_env Array spec, of its shape and dtype, with its bounds when it
  has them, else the dtype's own range."""
  dtype = np.dtype(spec.dtype)
  if hasattr(spec, 'minimum'):
    low, high = spec.minimum, spec.maximum
  elif dtype == np.bool_:
    low, high = 0, 1
  elif np.issubdtype(dtype, np.integer):
    low, high = np.iinfo(dtype).min, np.iinfo(dtype).max
  else:
    low, high = -np.inf, np.inf
  return spaces.Box(np.broadcast_to(low, spec.shape).astype(dtype),
                    np.broadcast_to(high, spec.shape).astype(dtype), spec.shape, dtype)


class DmEnvAdapter(gymnasium.Env):
  """A dm_env environment as a gymnasium env; see the module docstring."""

  metadata = {'render_modes': []}

  def __init__(self, load: Callable[[int], Any], seed: int, name: str,
               action_repeat: int = 1):
    from dm_env import specs  # pylint: disable=g-import-not-at-top,import-outside-toplevel
    if not isinstance(action_repeat, int) or isinstance(action_repeat, bool) or action_repeat < 1:
      raise ValueError(f'{name}: option action_repeat must be an int >= 1, '
                       f'got {action_repeat!r}.')
    self._load_env, self._name = load, name
    self.action_repeat = action_repeat
    self._load(seed)

    spec = self._env.action_spec()
    self._discrete = isinstance(spec, specs.DiscreteArray)
    if self._discrete:
      self._action_dtype = np.dtype(spec.dtype)
      self.action_space = spaces.Discrete(int(spec.num_values))
    elif isinstance(spec, specs.BoundedArray) and np.issubdtype(spec.dtype, np.floating):
      self._minimum = np.broadcast_to(spec.minimum, spec.shape).astype(np.float64)
      self._maximum = np.broadcast_to(spec.maximum, spec.shape).astype(np.float64)
      if not np.all(np.abs(np.concatenate([self._minimum.ravel(), self._maximum.ravel()]))
                    <= _MAX_ACTION_BOUND):
        raise ValueError(f'{name} has action bounds [{spec.minimum}, {spec.maximum}], too '
                         'wide to rescale to [-1, 1].')
      self.action_space = spaces.Box(-1.0, 1.0, spec.shape, np.float32)
    else:
      raise ValueError(f'{name}: its action spec must be a float BoundedArray or a '
                       f'DiscreteArray, got {spec!r}.')

    observation_spec = self._env.observation_spec()
    self._flatten = isinstance(observation_spec, Mapping)
    if self._flatten:
      size = sum(int(np.prod(s.shape)) for s in observation_spec.values())
      self.observation_space = spaces.Box(-np.inf, np.inf, (size,), np.float32)
    elif isinstance(observation_spec, specs.Array):
      self.observation_space = _array_space(observation_spec)
    else:
      raise ValueError(f'{name}: its observation spec must be a dm_env Array or a dict of '
                       f'them, got {observation_spec!r}.')
    self._needs_reset = True

  def _load(self, seed: int) -> None:
    self._env = self._load_env(seed)
    # Seed of a freshly loaded env not yet reset: a reset with this same seed
    # (SeededEnv's first reset) need not load it again.
    self._unused_seed: Optional[int] = seed

  @property
  def dm_env(self):
    """The wrapped dm_env environment (replaced on every seeded reset)."""
    return self._env

  def _observation(self, observation) -> np.ndarray:
    if self._flatten:
      return flatten_observation(observation)
    return np.asarray(observation, self.observation_space.dtype)

  def reset(self, *, seed: Optional[int] = None, options: Optional[dict[str, Any]] = None):
    super().reset(seed=seed)
    if seed is not None and seed != self._unused_seed:
      self._env.close()
      self._load(seed)
    self._unused_seed = None
    self._needs_reset = False
    return self._observation(self._env.reset().observation), {}

  def step(self, action):
    if self._needs_reset:
      # dm_env would silently start a new episode here; say so instead.
      raise RuntimeError('Call reset() before step(): the episode has ended '
                         'or never started.')
    if self._discrete:
      command = np.asarray(action, self._action_dtype)
    else:
      command = scale_action(action, self._minimum, self._maximum)
    reward = 0.0
    for _ in range(self.action_repeat):
      time_step = self._env.step(command)
      reward += time_step.reward or 0.0
      if time_step.last():
        break
    ended = time_step.last()
    terminated = bool(ended and time_step.discount == 0.0)
    truncated = bool(ended and time_step.discount > 0.0)
    self._needs_reset = ended
    return self._observation(time_step.observation), float(reward), terminated, truncated, {}

  def close(self):
    self._env.close()


def import_factory(path: str) -> Callable[..., Any]:
  """The callable at '<module>:<name>' (e.g. 'my_pkg.envs:make_maze'); ValueError
  naming what is missing."""
  module_name, colon, attribute = path.rpartition(':')
  if not colon or not module_name or not attribute:
    raise ValueError(f'dm_env:{path}: name a factory as dm_env:<module>:<callable>, e.g. '
                     'dm_env:my_pkg.envs:make_maze.')
  try:
    module = importlib.import_module(module_name)
  except ImportError as e:
    raise ValueError(f'dm_env:{path}: cannot import module {module_name!r} ({e}); install '
                     'the package that defines it or put it on PYTHONPATH.') from e
  factory = getattr(module, attribute, None)
  if not callable(factory):
    raise ValueError(f'dm_env:{path}: module {module_name!r} has no callable {attribute!r}.')
  parameters = inspect.signature(factory).parameters
  if 'seed' not in parameters and not any(
      p.kind == p.VAR_KEYWORD for p in parameters.values()):
    raise ValueError(f'dm_env:{path}: the factory takes no seed keyword; it is called as '
                     f'{attribute}(seed=..., **EnvConfig.options), each env with its own seed.')
  return factory


def make_dm_env(path: str, seed: int, action_repeat: int = 1, **options) -> gymnasium.Env:
  """Builds `dm_env:<path>`: `factory(seed=..., **options)` behind DmEnvAdapter.

  Raises:
    ValueError: the factory cannot be imported, takes no seed, rejects the options or
      returns no dm_env environment.
  """
  import dm_env  # pylint: disable=g-import-not-at-top,import-outside-toplevel
  factory = import_factory(path)
  name = f'dm_env:{path}'

  def load(env_seed: int):
    try:
      environment = factory(seed=env_seed, **options)
    except TypeError as e:
      raise ValueError(f'{name} rejected options {sorted(options)}: {e}') from e
    if not isinstance(environment, dm_env.Environment):
      raise ValueError(f'{name} returned {environment!r}, not a dm_env.Environment.')
    return environment

  env = DmEnvAdapter(load, seed, name, action_repeat)
  return wrappers.SeededEnv(env, seed, frames_per_step=action_repeat)
