"""Atari 2600 games through ale-py, preprocessed the DQN / SEED way.

Everything is the library's: ale-py's `ALE/<Game>-v5` env with its own frame
skip turned off, then gymnasium's `AtariPreprocessing` (action repeat 4 with a
max over the last two frames, grayscale, 84x84, up to `noop_max` no-op starts)
and `FrameStackObservation`. Observations are uint8 [frame_stack, 84, 84].

Two behaviours of the library worth knowing:
  * No-op starts happen on the raw env, below the action repeat, so each no-op
    is ONE emulator frame: after `reset()` the episode has advanced between 1
    and `noop_max` frames (not `4 * noop_max`), the count drawn from the env's
    seeded `np_random`. This matches the DQN setup (baselines' NoopResetEnv
    also sits below MaxAndSkipEnv).
  * `terminal_on_life_loss=True` ends the episode on a lost life and the next
    `reset()` restarts the whole game; unlike DQN's EpisodicLifeEnv it does not
    carry on with the remaining lives.

`episodic_life=True` is the signal DQN's EpisodicLifeEnv gives, without its cost: a lost
life is marked (`info['life_lost']`, `seed.envs.batch.LIFE_LOST`) while the game plays on
with the lives left, and the learner ends the value target there (zero discount) but
counts the whole game as one episode, so returns stay those of whole games.
"""
import difflib
import functools
import numbers
from typing import Optional

import ale_py
import gymnasium
from gymnasium import wrappers as gym_wrappers

from seed.envs import batch
from seed.envs import wrappers

# The action repeat. SEED once shipped 1 here by mistake and Pong stopped
# learning; tests/integration/test_envs.py checks one step advances exactly this many
# emulator frames.
FRAME_SKIP = 4
SCREEN_SIZE = 84


@functools.cache
def register_ale_envs() -> None:
  """Registers the ALE/... ids with gymnasium, once per process."""
  gymnasium.register_envs(ale_py)


@functools.cache
def games() -> tuple[str, ...]:
  """Names of all games ale-py ships ROMs for, e.g. 'Pong', 'Breakout'."""
  register_ale_envs()
  return tuple(sorted(
      env_id[len('ALE/'):-len('-v5')] for env_id in gymnasium.registry
      if env_id.startswith('ALE/') and env_id.endswith('-v5')))


def resolve_game(game: str) -> Optional[str]:
  """The canonical game name for `game` (case-insensitive), or None."""
  by_lower = {name.lower(): name for name in games()}
  return by_lower.get(str(game).lower())


def unknown_game_message(game: str) -> str:
  """A message for a game ale-py does not have, with the closest names."""
  close = difflib.get_close_matches(str(game), games(), n=3, cutoff=0.5)
  hint = f' Did you mean {", ".join(close)}?' if close else ''
  return (f'Unknown Atari game {game!r}.{hint} Name Atari games as '
          f"'atari:<Game>' with one of ale-py's {len(games())} games: "
          f'{", ".join(games())}.')


def _check_number(name, value, low, high=None, integer=True, allow_none=False):
  """Raises a ValueError naming the option if `value` is out of range."""
  if value is None and allow_none:
    return
  kind = numbers.Integral if integer else numbers.Real
  ok = isinstance(value, kind) and not isinstance(value, bool)
  ok = ok and value >= low and (high is None or value <= high)
  if not ok:
    accepted = f'{"an int" if integer else "a number"} >= {low}'
    if high is not None:
      accepted = f'{"an int" if integer else "a number"} in [{low}, {high}]'
    if allow_none:
      accepted += ' or None'
    raise ValueError(f'Atari option {name} must be {accepted}, got {value!r}.')


def check_options(*, sticky_action_probability, noop_max, frame_stack, full_action_space,
                  max_episode_frames, terminal_on_life_loss, episodic_life) -> None:
  """Raises a ValueError naming the first Atari option out of range (both backends')."""
  _check_number('sticky_action_probability', sticky_action_probability, 0, 1,
                integer=False)
  _check_number('noop_max', noop_max, 0)
  _check_number('frame_stack', frame_stack, 1)
  _check_number('max_episode_frames', max_episode_frames, 1, allow_none=True)
  for name, flag in (('full_action_space', full_action_space),
                     ('terminal_on_life_loss', terminal_on_life_loss),
                     ('episodic_life', episodic_life)):
    if not isinstance(flag, bool):
      raise ValueError(f'Atari option {name} must be True or False, '
                       f'got {flag!r}.')
  if terminal_on_life_loss and episodic_life:
    raise ValueError('Atari options terminal_on_life_loss=True and episodic_life=True '
                     'exclude each other: the first restarts the game after a lost life, '
                     'the second plays on with the lives left. Choose one.')


class LifeLossSignal(gymnasium.Wrapper):
  """Marks a step that lost a life while the game goes on: `info[batch.LIFE_LOST]`.

  Read from the ALE's own life counter after each (action-repeated) step. A step that
  ends the game (terminated or truncated) is never marked: the episode ends there anyway.
  """

  def __init__(self, env: gymnasium.Env):
    super().__init__(env)
    self._ale = env.unwrapped.ale
    self._lives = 0

  def reset(self, **kwargs):
    observation, info = self.env.reset(**kwargs)
    self._lives = self._ale.lives()
    return observation, {**info, batch.LIFE_LOST: False}

  def step(self, action):
    observation, reward, terminated, truncated, info = self.env.step(action)
    lives = self._ale.lives()
    life_lost = lives < self._lives and not (terminated or truncated)
    self._lives = lives
    return observation, reward, terminated, truncated, {**info, batch.LIFE_LOST: life_lost}


def make_atari(game: str,
               seed: int,
               sticky_action_probability: float = 0.0,
               noop_max: int = 30,
               frame_stack: int = 4,
               full_action_space: bool = False,
               max_episode_frames: Optional[int] = 108_000,
               terminal_on_life_loss: bool = False,
               episodic_life: bool = False,
               render_mode: Optional[str] = None) -> gymnasium.Env:
  """Builds a preprocessed Atari env.

  Args:
    game: Game name as ale-py has it, e.g. 'Pong' (case-insensitive).
    seed: Seeds the first `reset()`, which seeds the ALE (sticky actions) and
      the env's `np_random` (the no-op count); see `seed.envs.wrappers`.
    sticky_action_probability: Chance the ALE repeats the previous action
      instead of the new one, per emulator frame (Machado et al. use 0.25).
    noop_max: Most no-op frames at the start of an episode; 0 turns them off.
    frame_stack: How many 84x84 frames each observation stacks.
    full_action_space: Use all 18 actions instead of the game's minimal set.
    max_episode_frames: Emulator frames after which the episode ends with
      `truncated=True` (108k frames = 30 minutes of play); None for no cap.
    terminal_on_life_loss: End the episode (`terminated=True`) on a lost life; the
      next `reset()` restarts the whole game.
    episodic_life: Mark a lost life (`info[seed.envs.batch.LIFE_LOST]`) and play on:
      the learner ends the value target there, the episode goes on to the game's end.
    render_mode: gymnasium's, e.g. 'rgb_array' (full-size color frames) for
      `seed.evaluate --video`.

  Returns:
    The env, with `frames_per_step == 4` on its outermost wrapper.

  Raises:
    ValueError: an unknown game or an option out of range.
  """
  canonical = resolve_game(game)
  if canonical is None:
    raise ValueError(unknown_game_message(game))
  check_options(sticky_action_probability=sticky_action_probability, noop_max=noop_max,
                frame_stack=frame_stack, full_action_space=full_action_space,
                max_episode_frames=max_episode_frames,
                terminal_on_life_loss=terminal_on_life_loss, episodic_life=episodic_life)

  register_ale_envs()
  env = gymnasium.make(
      f'ALE/{canonical}-v5',
      # AtariPreprocessing does the frame skip (with max-pooling); the ALE must
      # not skip as well or every step would be 16 frames.
      frameskip=1,
      repeat_action_probability=float(sticky_action_probability),
      full_action_space=full_action_space,
      # 0 is the ALE's own "no cap"; say it outright rather than rely on what
      # ale-py makes of None.
      max_num_frames_per_episode=max_episode_frames or 0,
      render_mode=render_mode)
  try:
    env = gym_wrappers.AtariPreprocessing(
        env,
        noop_max=int(noop_max),
        frame_skip=FRAME_SKIP,
        screen_size=SCREEN_SIZE,
        terminal_on_life_loss=terminal_on_life_loss,
        grayscale_obs=True,
        scale_obs=False)
  except ValueError as e:
    # E.g. Backgammon's action 0 is not NOOP, so no-op starts cannot work.
    env.close()
    raise ValueError(f'Cannot preprocess Atari game {canonical!r}: {e} '
                     '(pass noop_max=0 for games without a NOOP action).'
                     ) from e
  env = gym_wrappers.FrameStackObservation(env, int(frame_stack))
  if episodic_life:
    env = LifeLossSignal(env)
  return wrappers.SeededEnv(env, seed, frames_per_step=FRAME_SKIP)
