"""R2D2 hyperparameters, validated once (R2D2Agent's constructor arguments).

Defaults follow R2D2 (Kapturowski et al., 2019) and SEED's Atari R2D2.
"""
import dataclasses
from typing import Optional, Tuple

import numpy as np

from seed.agents.r2d2 import networks


def _check(condition: bool, message: str) -> None:
  if not condition:
    raise ValueError(message)


@dataclasses.dataclass(frozen=True)
class R2D2Config:
  """Every R2D2Agent argument but the env spec.

  Attributes:
    unroll_length: transitions trained per sequence, after the burn-in.
    burn_in: leading steps that only prime the LSTM state (no gradient).
    batch_size: sequences per train step.
    discount: gamma in [0, 1].
    n_steps: n >= 1 of the n-step targets.
    learning_rate: Adam's step size.
    adam_epsilon: Adam's epsilon.
    max_grad_norm: global-norm gradient clip; None disables clipping.
    target_update_period: the target network is copied from the online one
      whenever the optimizer's step count is a multiple of it.
    rescaling_eps: eps of the value rescaling h, >= 0; None disables rescaling.
    priority_eta: priority = eta max|delta| + (1 - eta) mean|delta|, in [0, 1].
    torso: 'auto' (mlp for rank 0-2 observations, nature for rank 3), 'mlp' or
      'nature'; the nature torso takes [C, H, W] observations.
    mlp_hidden_sizes: hidden layer widths of the mlp torso.
    lstm_size: LSTM units.
    use_lstm: put an LSTM core after the torso.
    head_hidden_size: hidden width of each dueling stream; 0 for linear streams.
    num_epsilon_envs: N of the Ape-X epsilon ladder.
    epsilon_base: base of the ladder, in [0, 1]; also the default epsilon.
    epsilon_alpha: exponent spread of the ladder, >= 0.
    eval_epsilon: epsilon of evaluation envs, in [0, 1].
    seed: seeds the weights and the exploration.
  """
  unroll_length: int = 80
  burn_in: int = 40
  batch_size: int = 64
  discount: float = 0.997
  n_steps: int = 5
  learning_rate: float = 1e-4
  adam_epsilon: float = 1e-3
  max_grad_norm: Optional[float] = 40.0
  target_update_period: int = 2500
  rescaling_eps: Optional[float] = 1e-3
  priority_eta: float = 0.9
  torso: str = 'auto'
  mlp_hidden_sizes: Tuple[int, ...] = (64,)
  lstm_size: int = 512
  use_lstm: bool = True
  head_hidden_size: int = 512
  num_epsilon_envs: int = 256
  epsilon_base: float = 0.4
  epsilon_alpha: float = 7.0
  eval_epsilon: float = 1e-3
  seed: int = 0

  def __post_init__(self):
    """Raises ValueError naming any field outside its accepted values."""
    for name, low in (('unroll_length', 1), ('burn_in', 0), ('batch_size', 1),
                      ('n_steps', 1), ('target_update_period', 1), ('lstm_size', 1),
                      ('head_hidden_size', 0), ('num_epsilon_envs', 1)):
      value = getattr(self, name)
      _check(isinstance(value, (int, np.integer)) and not isinstance(value, bool)
             and value >= low, f'{name} must be an int >= {low}, got {value!r}.')
    for name in ('discount', 'priority_eta', 'epsilon_base', 'eval_epsilon'):
      value = getattr(self, name)
      _check(0.0 <= value <= 1.0, f'{name} must be in [0, 1], got {value}.')
    _check(self.learning_rate > 0, f'learning_rate must be > 0, got {self.learning_rate}.')
    _check(self.adam_epsilon > 0, f'adam_epsilon must be > 0, got {self.adam_epsilon}.')
    _check(self.max_grad_norm is None or self.max_grad_norm > 0,
           f'max_grad_norm must be > 0 or None (no clipping), got {self.max_grad_norm}.')
    _check(self.rescaling_eps is None or self.rescaling_eps >= 0,
           f'rescaling_eps must be >= 0 or None (no rescaling), got {self.rescaling_eps}.')
    _check(self.epsilon_alpha >= 0, f'epsilon_alpha must be >= 0, got {self.epsilon_alpha}.')
    _check(self.torso in networks.TORSO_CHOICES,
           f'Unknown torso {self.torso!r}; accepted: {", ".join(networks.TORSO_CHOICES)}.')
    sizes = tuple(self.mlp_hidden_sizes)
    _check(all(int(size) >= 1 for size in sizes),
           f'mlp_hidden_sizes must be positive widths, got {sizes}.')
    object.__setattr__(self, 'mlp_hidden_sizes', tuple(int(size) for size in sizes))
