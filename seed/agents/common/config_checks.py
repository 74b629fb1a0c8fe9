"""Validation of agent config dataclasses: one error style for every agent.

Every agent's hyperparameters are a frozen dataclass bound by gin (`VTraceConfig`,
`R2D2Config`, ...), with defaults written once, on the fields, and checked in
`__post_init__` with these helpers, so a bad value fails at construction with a
message naming the class, the field, the value and what is accepted.
"""
from typing import Any, Iterable, Optional

import numpy as np


# Reward clippings the agents accept: none, or to [-1, 1] (Atari's).
REWARD_CLIPPINGS = (None, 'abs_one')
# Value normalisations (V-trace, PPO): none, or PopArt's (seed/agents/common/popart.py).
VALUE_NORMALIZATIONS = (None, 'popart')


def fail(config: Any, field: str, accepted: str) -> None:
  """Raises ValueError: '<Class>.<field> = <value>; accepted: <accepted>.'"""
  value = getattr(config, field)
  raise ValueError(f'{type(config).__name__}.{field} = {value!r}; accepted: {accepted}.')


def _is_int(value) -> bool:
  return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


def ints_at_least(config: Any, low: int, *fields: str) -> None:
  """Each field is an int >= low."""
  for field in fields:
    value = getattr(config, field)
    if not (_is_int(value) and value >= low):
      fail(config, field, f'an int >= {low}')


def in_range(config: Any, low: float, high: float, *fields: str) -> None:
  """Each field is a number in [low, high]."""
  for field in fields:
    value = getattr(config, field)
    if not (isinstance(value, (int, float, np.number)) and low <= value <= high):
      fail(config, field, f'a number in [{low:g}, {high:g}]')


def positive(config: Any, *fields: str, optional: bool = False) -> None:
  """Each field is a number > 0 (or None, when optional: the feature is off)."""
  for field in fields:
    value = getattr(config, field)
    if optional and value is None:
      continue
    if not (isinstance(value, (int, float, np.number)) and value > 0):
      fail(config, field, 'a number > 0' + (', or None to disable it' if optional else ''))


def non_negative(config: Any, *fields: str, optional: bool = False) -> None:
  """Each field is a number >= 0 (or None, when optional)."""
  for field in fields:
    value = getattr(config, field)
    if optional and value is None:
      continue
    if not (isinstance(value, (int, float, np.number)) and value >= 0):
      fail(config, field, 'a number >= 0' + (', or None to disable it' if optional else ''))


def one_of(config: Any, field: str, choices: Iterable[Optional[str]]) -> None:
  """The field is one of `choices`."""
  choices = tuple(choices)
  if getattr(config, field) not in choices:
    fail(config, field, 'one of ' + ', '.join(repr(c) for c in choices))


def widths(config: Any, field: str) -> None:
  """The field is a non-empty sequence of layer widths >= 1; stored back as a tuple of ints."""
  value = getattr(config, field)
  try:
    sizes = tuple(int(size) for size in value)
  except (TypeError, ValueError):
    fail(config, field, 'a sequence of layer widths >= 1, e.g. (64, 64)')
  if not sizes or min(sizes) < 1:
    fail(config, field, 'a sequence of layer widths >= 1, e.g. (64, 64)')
  object.__setattr__(config, field, sizes)


def value_normalization(config: Any) -> None:
  """`value_normalization` is None or 'popart', and `popart_step_size` in (0, 1]: the
  two fields of every agent with PopArt (V-trace, PPO)."""
  one_of(config, 'value_normalization', VALUE_NORMALIZATIONS)
  in_range(config, 0.0, 1.0, 'popart_step_size')
  positive(config, 'popart_step_size')
