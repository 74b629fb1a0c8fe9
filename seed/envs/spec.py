"""What an environment looks like from the outside: the shapes both sides agree on."""
import dataclasses
from typing import Optional, Tuple

import numpy as np


@dataclasses.dataclass(frozen=True)
class EnvSpec:
  """Observation and action specs of one environment, as sent in the hello.

  Discrete actions have `num_actions` set and an empty `action_shape`;
  continuous actions have `num_actions=None`, an `action_shape` and bounds.
  """
  observation_shape: Tuple[int, ...]
  observation_dtype: str
  num_actions: Optional[int] = None
  action_shape: Tuple[int, ...] = ()
  action_dtype: str = 'int32'
  action_low: Optional[Tuple[float, ...]] = None
  action_high: Optional[Tuple[float, ...]] = None
  # Emulator frames per agent step (action repeat), for counting env frames.
  frames_per_step: int = 1

  def __post_init__(self):
    object.__setattr__(self, 'observation_shape', tuple(int(d) for d in self.observation_shape))
    object.__setattr__(self, 'action_shape', tuple(int(d) for d in self.action_shape))
    object.__setattr__(self, 'observation_dtype', np.dtype(self.observation_dtype).name)
    object.__setattr__(self, 'action_dtype', np.dtype(self.action_dtype).name)

  @property
  def is_discrete(self) -> bool:
    return self.num_actions is not None

  def describe(self) -> str:
    """A one-line human description, used in error messages."""
    obs = f'observation {self.observation_dtype}{list(self.observation_shape)}'
    if self.is_discrete:
      act = f'{self.num_actions} discrete actions'
    else:
      act = f'action {self.action_dtype}{list(self.action_shape)}'
    return f'{obs}, {act}'
