"""Gymnasium's MuJoCo envs (HalfCheetah-v5, Humanoid-v5, ...), as `mujoco:<id>`.

Everything is gymnasium's: `gym.make(id, **options)` with its TimeLimit (1000
steps, then `truncated=True`), `RescaleAction` to [-1, 1] so one policy head fits
every body (Humanoid's native range is [-0.4, 0.4]), and `TransformObservation`
to float32 (MuJoCo gives float64, which the wire format and the model do not
need).

The mujoco package is imported only when an env is built, so naming or
resolving an env, or importing the registry, does not load it.
"""
import difflib
import functools
import importlib

import gymnasium
from gymnasium import spaces
from gymnasium import wrappers as gym_wrappers
import numpy as np

from seed.envs import wrappers

_ENTRY_POINT_PREFIX = 'gymnasium.envs.mujoco.'
INSTALL_HINT = "pip install 'gymnasium[mujoco]'"


@functools.cache
def env_ids() -> tuple[str, ...]:
  """Gymnasium ids whose env is one of gymnasium's MuJoCo envs, sorted."""
  return tuple(sorted(
      env_id for env_id, env_spec in gymnasium.registry.items()
      if isinstance(env_spec.entry_point, str) and
      env_spec.entry_point.startswith(_ENTRY_POINT_PREFIX)))


def unknown_id_message(env_id: str) -> str:
  """A message for an id that is not a gymnasium MuJoCo env, with the closest."""
  close = difflib.get_close_matches(str(env_id), env_ids(), n=3, cutoff=0.5)
  hint = f' Did you mean {", ".join("mujoco:" + c for c in close)}?' if close else ''
  v5 = ', '.join(i for i in env_ids() if i.endswith('-v5'))
  return (f'Unknown MuJoCo env id {env_id!r}.{hint} Name MuJoCo envs as '
          f"'mujoco:<gymnasium id>', e.g. mujoco:HalfCheetah-v5; the v5 ids are: {v5}.")


def make_mujoco(env_id: str, seed: int, **options) -> gymnasium.Env:
  """Builds a gymnasium MuJoCo env with actions in [-1, 1] and float32 observations.

  Args:
    env_id: A gymnasium MuJoCo id, e.g. 'HalfCheetah-v5'.
    seed: Seeds the first `reset()` (the initial-state noise; the physics is
      deterministic); see `seed.envs.wrappers`.
    **options: Passed to `gym.make`, e.g. `ctrl_cost_weight=0.1` or
      `max_episode_steps=500`.

  Returns:
    The env, with `frames_per_step == 1` on its outermost wrapper.

  Raises:
    ImportError: mujoco is not installed.
    ValueError: `env_id` is not a MuJoCo env, or gym.make rejects an option.
  """
  if env_id not in env_ids():
    raise ValueError(unknown_id_message(env_id))
  try:
    # Only to fail with the install hint; gymnasium's env imports it again.
    importlib.import_module('mujoco')
  except ImportError as e:
    raise ImportError(f'Env mujoco:{env_id} needs the mujoco package: '
                      f'{INSTALL_HINT}.') from e
  try:
    env = gymnasium.make(env_id, **options)
  except TypeError as e:
    raise ValueError(f'Env mujoco:{env_id} rejected options {sorted(options)}: '
                     f'{e}') from e
  env = gym_wrappers.RescaleAction(env, np.float32(-1.0), np.float32(1.0))
  # Not DtypeObservation: it builds the float32 Box from float64 bounds and
  # gymnasium warns "precision lowered" for every MuJoCo env (bounds are -inf..inf).
  space = env.observation_space
  env = gym_wrappers.TransformObservation(
      env, lambda obs: obs.astype(np.float32),
      spaces.Box(space.low.astype(np.float32), space.high.astype(np.float32),
                 dtype=np.float32))
  return wrappers.SeededEnv(env, seed)
