"""The one wrapper every env built by `make_env` ends in.

Seeding contract: the caller passes `seed` to `make_env` and never needs to
pass it to `reset()`. The first `reset()` without an explicit seed uses it, so
an actor can build its envs with distinct seeds (e.g. `actor_id * num_envs +
i`) and then drive them with plain `reset()` calls. Later resets without a seed
continue the env's own random stream rather than reseeding: reseeding every
episode would replay the same start state forever. An explicit
`reset(seed=...)` always wins. The action and observation spaces are seeded too,
so `env.action_space.sample()` is reproducible as well.
"""
import operator
from typing import Any, Optional

import gymnasium


def _as_seed(seed: Any) -> int:
  """Returns `seed` as a Python int, or says why it is not a usable seed."""
  try:
    if isinstance(seed, bool):
      raise TypeError  # True/False as a seed is always a slip.
    value = operator.index(seed)  # Accepts numpy ints too.
  except TypeError:
    raise ValueError(
        f'Env seed must be a non-negative integer, got {seed!r} '
        f'({type(seed).__name__}).') from None
  if value < 0:
    raise ValueError(f'Env seed must be a non-negative integer, got {value}.')
  return value


class SeededEnv(gymnasium.Wrapper):
  """Seeds the first reset and carries `frames_per_step`.

  Gymnasium 1.x wrappers no longer forward attribute access to the wrapped
  env, so `frames_per_step` must live on the outermost wrapper for
  `getattr(env, 'frames_per_step', 1)` (what `env_spec` reads) to see it.

  Attributes:
    initial_seed: The seed the first unseeded `reset()` uses.
    frames_per_step: Emulator frames one `step()` advances (action repeat).
  """

  def __init__(self, env: gymnasium.Env, seed: int, frames_per_step: int = 1):
    super().__init__(env)
    seed = _as_seed(seed)
    if not isinstance(frames_per_step, int) or frames_per_step < 1:
      raise ValueError(
          f'frames_per_step must be a positive int, got {frames_per_step!r}.')
    self.initial_seed = seed
    self.frames_per_step = frames_per_step
    self._pending_seed: Optional[int] = seed
    self.action_space.seed(seed)
    self.observation_space.seed(seed)

  def reset(self, *, seed: Optional[int] = None,
            options: Optional[dict[str, Any]] = None):
    if seed is None:
      seed = self._pending_seed
    # Whether it came from us or from the caller, the env is now seeded; from
    # here on unseeded resets continue its stream.
    self._pending_seed = None
    return self.env.reset(seed=seed, options=options)
