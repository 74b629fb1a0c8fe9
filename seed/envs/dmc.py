"""The DeepMind Control suite (`dm_control.suite`), as `dmc:<domain>-<task>`.

`DmControlEnv` adapts a dm_env environment to gymnasium:
  * Observations: the suite's observation dict (an OrderedDict, so its order is
    fixed), each entry flattened and concatenated into one float32 vector.
  * Actions: a float32 Box in [-1, 1], mapped linearly onto the action spec's
    bounds, so one policy head fits every domain.
  * Episode ends: the suite's time limit (1000 steps for the benchmark tasks)
    ends with discount 1 and is `truncated`; a real end (discount 0) is
    `terminated`.
  * Seeding: `reset(seed=s)` reloads the env with `task_kwargs={'random': s}`.
    Reseeding `env.task.random` in place reproduces episodes for every task
    except lqr, whose model itself is drawn at load time, so reloading (about
    80 ms) is the one way that always works; it happens only on seeded resets.

Any task in `suite.ALL_TASKS` is accepted, but quadruped-escape uploads its
terrain through an OpenGL context on reset and fails without one; we never
render and set no MUJOCO_GL. dm_control (and so mujoco) is imported only
when a `dmc:` name is used.
"""
import difflib
from typing import Any, Mapping, Optional

import gymnasium
from gymnasium import spaces
import numpy as np

from seed.envs import wrappers

INSTALL_HINT = "pip install 'dm-control==1.0.50' 'mujoco==3.17.0'"
# Wider bounds than this are "unbounded" in disguise (lqr uses +-1e10): a policy
# in [-1, 1] mapped onto them would command forces of 1e10.
_MAX_ACTION_BOUND = 1e6


def _suite():
  """dm_control.suite, or an ImportError saying how to install it."""
  try:
    from dm_control import suite  # pylint: disable=g-import-not-at-top,import-outside-toplevel
  except ImportError as e:
    raise ImportError(f'dmc: envs need dm_control: {INSTALL_HINT}.') from e
  return suite


def split_name(name: str) -> tuple[str, str]:
  """('finger', 'turn_hard') from 'finger-turn_hard': split at the first '-'."""
  domain, _, task = str(name).partition('-')
  return domain, task


def resolve(name: str) -> Optional[tuple[str, str]]:
  """(domain, task) if `name` is a suite task, else None."""
  domain_task = split_name(name)
  return domain_task if domain_task in _suite().ALL_TASKS else None


def unknown_task_message(name: str) -> str:
  """A message for a name that is no suite task, with the closest names."""
  suite = _suite()
  every = [f'{d}-{t}' for d, t in suite.ALL_TASKS]
  close = difflib.get_close_matches(str(name), every, n=3, cutoff=0.5)
  hint = f' Did you mean {", ".join("dmc:" + c for c in close)}?' if close else ''
  benchmarking = ', '.join(f'{d}-{t}' for d, t in suite.BENCHMARKING)
  return (f'Unknown DM Control task {name!r}.{hint} Name them '
          f"'dmc:<domain>-<task>', e.g. dmc:cheetah-run; the benchmarking tasks "
          f'are: {benchmarking}.')


def scale_action(action: np.ndarray, minimum: np.ndarray, maximum: np.ndarray) -> np.ndarray:
  """Maps `action` in [-1, 1] linearly onto [minimum, maximum], clipping first."""
  action = np.clip(np.asarray(action, np.float64), -1.0, 1.0)
  return minimum + (action + 1.0) * 0.5 * (maximum - minimum)


def flatten_observation(observation: Mapping[str, Any]) -> np.ndarray:
  """The observation dict's values, raveled and concatenated in its order, float32."""
  return np.concatenate([np.ravel(v) for v in observation.values()]).astype(np.float32)


class DmControlEnv(gymnasium.Env):
  """One suite task as a gymnasium env; see the module docstring."""

  metadata = {'render_modes': []}

  def __init__(self, domain: str, task: str, seed: int, action_repeat: int = 1,
               task_kwargs: Optional[Mapping[str, Any]] = None,
               environment_kwargs: Optional[Mapping[str, Any]] = None):
    if not isinstance(action_repeat, int) or isinstance(action_repeat, bool) or action_repeat < 1:
      raise ValueError(f'DM Control option action_repeat must be an int >= 1, '
                       f'got {action_repeat!r}.')
    task_kwargs = dict(task_kwargs or {})
    if 'random' in task_kwargs:
      raise ValueError("DM Control task_kwargs must not hold 'random': the env's seed "
                       'comes from make_env(seed=...) and reset(seed=...).')
    self._domain, self._task = domain, task
    self._task_kwargs = task_kwargs
    self._environment_kwargs = dict(environment_kwargs or {})
    self.action_repeat = action_repeat
    self._load(seed)

    spec = self._env.action_spec()
    self._minimum = np.broadcast_to(spec.minimum, spec.shape).astype(np.float64)
    self._maximum = np.broadcast_to(spec.maximum, spec.shape).astype(np.float64)
    if not np.all(np.abs(np.concatenate([self._minimum, self._maximum])) <= _MAX_ACTION_BOUND):
      raise ValueError(f'dmc:{domain}-{task} has action bounds [{spec.minimum}, '
                       f'{spec.maximum}], too wide to rescale to [-1, 1].')
    self.action_space = spaces.Box(-1.0, 1.0, spec.shape, np.float32)
    size = sum(int(np.prod(s.shape)) for s in self._env.observation_spec().values())
    self.observation_space = spaces.Box(-np.inf, np.inf, (size,), np.float32)
    self._needs_reset = True

  def _load(self, seed: int) -> None:
    self._env = _suite().load(
        self._domain, self._task, task_kwargs={**self._task_kwargs, 'random': seed},
        environment_kwargs=self._environment_kwargs)
    # Seed of a freshly loaded env not yet reset: a reset with this same seed
    # (SeededEnv's first reset) need not load it again.
    self._unused_seed: Optional[int] = seed

  @property
  def suite_env(self):
    """The wrapped dm_control environment (replaced on every seeded reset)."""
    return self._env

  def reset(self, *, seed: Optional[int] = None, options: Optional[dict[str, Any]] = None):
    super().reset(seed=seed)
    if seed is not None and seed != self._unused_seed:
      self._env.close()
      self._load(seed)
    self._unused_seed = None
    self._needs_reset = False
    return flatten_observation(self._env.reset().observation), {}

  def step(self, action):
    if self._needs_reset:
      # dm_env would silently start a new episode here; say so instead.
      raise RuntimeError('Call reset() before step(): the episode has ended '
                         'or never started.')
    physical = scale_action(action, self._minimum, self._maximum)
    reward = 0.0
    for _ in range(self.action_repeat):
      time_step = self._env.step(physical)
      reward += time_step.reward or 0.0
      if time_step.last():
        break
    ended = time_step.last()
    terminated = bool(ended and time_step.discount == 0.0)
    truncated = bool(ended and time_step.discount > 0.0)
    self._needs_reset = ended
    return (flatten_observation(time_step.observation), float(reward), terminated,
            truncated, {})

  def close(self):
    self._env.close()


def make_dmc(domain: str, task: str, seed: int, action_repeat: int = 1,
             task_kwargs: Optional[Mapping[str, Any]] = None,
             environment_kwargs: Optional[Mapping[str, Any]] = None) -> gymnasium.Env:
  """Builds a DM Control suite task as a gymnasium env.

  Args:
    domain: Suite domain, e.g. 'cheetah'.
    task: Task of that domain, e.g. 'run'.
    seed: Seeds the first `reset()` (the task's RandomState); see
      `seed.envs.wrappers`.
    action_repeat: Physics control steps per `step()`, rewards summed; the
      episode stops early at its last step.
    task_kwargs: Extra keywords for the task, e.g. `{'time_limit': 20}`; not
      `random`, which the seed sets.
    environment_kwargs: Keywords for the control.Environment, e.g.
      `{'flat_observation': True}`.

  Returns:
    The env, with `frames_per_step == action_repeat` on its outermost wrapper.

  Raises:
    ImportError: dm_control is not installed.
    ValueError: an unknown task or a bad option.
  """
  if (domain, task) not in _suite().ALL_TASKS:
    raise ValueError(unknown_task_message(f'{domain}-{task}'))
  try:
    env = DmControlEnv(domain, task, seed, action_repeat, task_kwargs, environment_kwargs)
  except TypeError as e:
    raise ValueError(f'dmc:{domain}-{task} rejected task_kwargs {task_kwargs} or '
                     f'environment_kwargs {environment_kwargs}: {e}') from e
  return wrappers.SeededEnv(env, seed, frames_per_step=action_repeat)

