"""Atari through EnvPool (`EnvConfig.backend = 'envpool'`), preprocessed as `seed.envs.atari`.

EnvPool (sail-sg/envpool) steps a batch of ALE emulators in C++ threads, with the
DQN preprocessing in C++ too. Set up to match `seed.envs.atari.make_atari` on every
option that path has: action repeat 4 with a max over the last two frames, grayscale,
84 x 84 by area interpolation, `frame_stack` frames, 1..`noop_max` no-op frames after
each reset, no fire reset, unclipped rewards, the game's minimal action set unless
`full_action_space`, and with `episodic_life` the lost lives marked from EnvPool's life
counter while the game plays on. With `noop_max=1` and no sticky actions both paths give
the same observations, rewards, lost lives and episode ends, bit for bit
(tests/integration/test_envpool.py).

Where the two cannot agree, EnvPool refuses rather than differ:
  * `terminal_on_life_loss=True`: seed's Atari path restarts the whole game after a
    lost life; EnvPool's `episodic_life` carries on with the lives left.
  * `noop_max=0`: EnvPool always plays at least one no-op (and 0 crashes it).
  * `render_mode`: videos (`seed.evaluate --video`) come from the ale-py path.
What stays different: the no-op counts and sticky actions draw from EnvPool's own
random streams, so with `noop_max > 1` or sticky actions episodes differ from the
ale-py path's for the same seed (the same distributions, other draws); and
`max_episode_frames` becomes `max_episode_frames // 4` agent steps after the no-ops,
where the ALE counts the no-op frames too (at most `noop_max` frames apart).

Each actor process makes one pool per split with `EnvConfig.envpool_threads` threads
(1 by default: seed scales by actor processes, one a core).
"""
import functools
import inspect
from typing import Any, Mapping, Optional

import numpy as np

from seed.envs import atari
from seed.envs import batch
from seed.envs import spec as spec_lib

INSTALL_HINT = ("EnvConfig.backend = 'envpool' needs the envpool package: "
                "pip install 'seed-rl[envpool]' (or pip install envpool)")


def _import_envpool():
  try:
    import envpool  # pylint: disable=g-import-not-at-top
  except ImportError as e:
    raise ImportError(f'{INSTALL_HINT}; importing it failed: {e}') from e
  return envpool


@functools.cache
def _task_ids() -> dict[str, str]:
  """{lower-case game: EnvPool task id}, e.g. {'pong': 'Pong-v5'}."""
  return {task[:-len('-v5')].lower(): task for task in _import_envpool().list_all_envs()
          if task.endswith('-v5')}


def task_id(game: str) -> str:
  """EnvPool's id for an ale-py game name ('Pong' -> 'Pong-v5'), or a ValueError."""
  task = _task_ids().get(game.lower())
  if task is None:
    raise ValueError(f'EnvPool has no Atari game {game!r}; use the ale-py backend for it '
                     "(EnvConfig.backend = 'gymnasium').")
  return task


def check_options(options: Mapping[str, Any]) -> None:
  """Raises a ValueError for Atari options (EnvConfig.options) EnvPool cannot follow; needs
  no envpool installed, so a learner checks its config before any actor starts."""
  defaults = {name: p.default for name, p in
              inspect.signature(EnvPoolAtari.__init__).parameters.items()
              if p.kind == p.KEYWORD_ONLY and name != 'num_threads'}
  _check_options(**{**defaults, **options})


def _check_options(sticky_action_probability, noop_max, frame_stack, full_action_space,
                   max_episode_frames, terminal_on_life_loss, episodic_life,
                   render_mode) -> None:
  """The ale-py path's own checks, then what only EnvPool refuses."""
  atari.check_options(sticky_action_probability=sticky_action_probability, noop_max=noop_max,
                      frame_stack=frame_stack, full_action_space=full_action_space,
                      max_episode_frames=max_episode_frames,
                      terminal_on_life_loss=terminal_on_life_loss,
                      episodic_life=episodic_life)
  if terminal_on_life_loss:
    raise ValueError('Atari option terminal_on_life_loss=True is not available with '
                     "EnvConfig.backend = 'envpool': EnvPool carries on with the lives left "
                     "where seed's Atari path restarts the game. Use the 'gymnasium' backend.")
  if noop_max < 1:
    raise ValueError(f"Atari option noop_max must be >= 1 with EnvConfig.backend = 'envpool' "
                     f'(EnvPool always plays at least one no-op), got {noop_max!r}.')
  if render_mode is not None:
    raise ValueError(f"Atari option render_mode={render_mode!r} is not available with "
                     "EnvConfig.backend = 'envpool'; videos come from the 'gymnasium' backend.")


class EnvPoolAtari:
  """num_envs Atari envs in one EnvPool, seeds first_seed .. first_seed + num_envs - 1."""

  def __init__(self, game: str, first_seed: int, num_envs: int, *, num_threads: int = 1,
               sticky_action_probability: float = 0.0, noop_max: int = 30,
               frame_stack: int = 4, full_action_space: bool = False,
               max_episode_frames: Optional[int] = 108_000,
               terminal_on_life_loss: bool = False, episodic_life: bool = False,
               render_mode: Optional[str] = None):
    """game ... render_mode: as `seed.envs.atari.make_atari` takes them."""
    canonical = atari.resolve_game(game)
    if canonical is None:
      raise ValueError(atari.unknown_game_message(game))
    _check_options(sticky_action_probability, noop_max, frame_stack, full_action_space,
                   max_episode_frames, terminal_on_life_loss, episodic_life, render_mode)
    if not isinstance(num_envs, int) or num_envs < 1:
      raise ValueError(f'An EnvPool batch needs num_envs >= 1, got {num_envs!r}.')
    envpool = _import_envpool()
    self._pool = envpool.make(
        task_id(canonical), env_type='gymnasium', num_envs=num_envs,
        batch_size=num_envs,  # synchronous: every step answers for all envs
        num_threads=num_threads, seed=int(first_seed),
        repeat_action_probability=float(sticky_action_probability),
        noop_max=int(noop_max), stack_num=int(frame_stack),
        full_action_space=full_action_space,
        max_episode_steps=(max(1, max_episode_frames // atari.FRAME_SKIP)
                           if max_episode_frames else np.iinfo(np.int32).max),
        frame_skip=atari.FRAME_SKIP, img_height=atari.SCREEN_SIZE,
        img_width=atari.SCREEN_SIZE, gray_scale=True, use_inter_area_resize=True,
        # EnvPool's own episodic_life ends the episode at a lost life; seed plays on and
        # marks it (step's life_lost), from the life counter every step reports.
        use_fire_reset=False, reward_clip=False, episodic_life=False,
        zero_discount_on_life_loss=False)
    self.num_envs = num_envs
    self._episodic_life = episodic_life
    self._lives = np.zeros(num_envs, np.int64)
    space = self._pool.observation_space
    self.spec = spec_lib.EnvSpec(observation_shape=space.shape, observation_dtype=space.dtype,
                                 num_actions=int(self._pool.action_space.n),
                                 frames_per_step=atari.FRAME_SKIP)

  def reset(self) -> np.ndarray:
    observations, info = self._pool.reset()
    order = np.argsort(info['env_id'])
    self._lives = info['lives'][order].astype(np.int64)
    return observations[order]

  def step(self, actions: np.ndarray) -> batch.BatchStep:
    observations, rewards, terminated, truncated, info = self._pool.step(
        np.asarray(actions, np.int32))
    order = np.argsort(info['env_id'])
    observations, rewards = observations[order], rewards[order].astype(np.float32)
    terminated, truncated = terminated[order].astype(bool), truncated[order].astype(bool)
    lives = info['lives'][order].astype(np.int64)
    life_lost = (lives < self._lives) & ~(terminated | truncated)
    if not self._episodic_life:
      life_lost[:] = False
    ended = np.flatnonzero(terminated | truncated)
    if ended.size:
      # EnvPool would restart these envs on their next step and return the first frame
      # then; the protocol wants it now, in place of the terminal one.
      first, reset_info = self._pool.reset(ended.astype(np.int32))
      observations[reset_info['env_id']] = first
      lives[reset_info['env_id']] = reset_info['lives']
    self._lives = lives
    return batch.BatchStep(observations, rewards, terminated, truncated, life_lost,
                           int(ended.size))

  def close(self) -> None:
    self._pool.close()

