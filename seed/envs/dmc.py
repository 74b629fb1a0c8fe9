"""The DeepMind Control suite (`dm_control.suite`), as `dmc:<domain>-<task>`.

`DmControlEnv` adapts a suite task to gymnasium through `seed.envs.dm_env_adapter`:
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

from seed.envs import dm_env_adapter
from seed.envs import wrappers

INSTALL_HINT = "pip install 'dm-control==1.0.50' 'mujoco==3.17.0'"


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


# Kept here too: the adapter's helpers under the names this module always had.
scale_action = dm_env_adapter.scale_action
flatten_observation = dm_env_adapter.flatten_observation


class DmControlEnv(dm_env_adapter.DmEnvAdapter):
  """One suite task as a gymnasium env; see the module docstring."""

  def __init__(self, domain: str, task: str, seed: int, action_repeat: int = 1,
               task_kwargs: Optional[Mapping[str, Any]] = None,
               environment_kwargs: Optional[Mapping[str, Any]] = None):
    task_kwargs = dict(task_kwargs or {})
    if 'random' in task_kwargs:
      raise ValueError("DM Control task_kwargs must not hold 'random': the env's seed "
                       'comes from make_env(seed=...) and reset(seed=...).')
    environment_kwargs = dict(environment_kwargs or {})

    def load(env_seed: int):
      return _suite().load(domain, task, task_kwargs={**task_kwargs, 'random': env_seed},
                           environment_kwargs=environment_kwargs)

    super().__init__(load, seed, f'dmc:{domain}-{task}', action_repeat)

  @property
  def suite_env(self):
    """The wrapped dm_control environment (replaced on every seeded reset)."""
    return self.dm_env


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

