"""R2D2 hyperparameters: one frozen dataclass, bound by gin, checked on construction.

Defaults follow R2D2 (Kapturowski et al., 2019) and SEED's Atari R2D2. A sequence
holds burn_in_steps + trained_steps + 1 steps: the burn-in only primes the LSTM
from the stored state, the trained part is regressed on (trained_steps
transitions and the bootstrap state).
"""
import dataclasses
from typing import Optional, Tuple

import gin
import numpy as np

from seed.agents.common import choices
from seed.agents.common import config_checks as checks


@gin.configurable
@dataclasses.dataclass(frozen=True)
class R2D2Config:
  """Every R2D2Agent hyperparameter (the env spec aside)."""

  burn_in_steps: int = 40
  """Leading steps of a sequence that only prime the LSTM state (no gradient), >= 0."""
  trained_steps: int = 80
  """Transitions trained on per sequence, after the burn-in, >= 1."""
  batch_sequences: int = 64
  """Sequences per train step."""
  discount: float = 0.997
  """gamma in [0, 1], per agent step."""
  n_steps: int = 5
  """n of the n-step targets, in agent steps, >= 1."""
  learning_rate: float = 1e-4
  """Adam's step size, > 0."""
  adam_epsilon: float = 1e-3
  """Adam's epsilon, > 0."""
  max_grad_norm: Optional[float] = 40.0
  """Global-norm gradient clip, > 0; None disables clipping."""
  target_update_period: int = 2500
  """Train steps between copies of the online network to the target network: the copy
  happens whenever the optimizer's step count is a multiple of it."""
  rescaling_eps: Optional[float] = 1e-3
  """eps of the value rescaling h, >= 0; None disables rescaling."""
  priority_eta: float = 0.9
  """A sequence's priority is eta max|delta| + (1 - eta) mean|delta|; eta in [0, 1]."""
  torso: str = 'auto'
  """'auto' (picked from the observations, seed.agents.common.networks.resolve_torso: mlp for
  rank 0-2, for images [C, H, W] or [H, W, C] nature from 36 x 36 and small_conv
  below), 'mlp', 'nature', 'impala_shallow' or 'small_conv'."""
  mlp_hidden_sizes: Tuple[int, ...] = (64,)
  """Hidden layer widths (units) of the mlp torso."""
  lstm_size: int = 512
  """LSTM units."""
  use_lstm: bool = True
  """Put an LSTM core after the torso; without it the burn-in steps are skipped."""
  head_hidden_size: int = 512
  """Units of the hidden layer of each dueling stream; 0 for none."""
  unroll_torso_dtype: str = 'float32'
  """The dtype of the torso's arithmetic in the learner's unrolls (burn-in, trained part,
  target): 'float32', or 'bfloat16' where the hardware multiplies it faster (CPUs with
  AVX512_BF16 or AMX, GPUs from Ampere, TPUs; elsewhere it is slower), or 'auto':
  bfloat16 where the learner's device has it (seed.agents.common.native_bfloat16);
  variables, LSTM and heads stay float32, and inference
  runs in float32 whatever this says."""
  num_epsilon_envs: int = 256
  """N, the rungs of the Ape-X epsilon ladder: env i acts with rung i mod N."""
  epsilon_base: float = 0.4
  """Ape-X's epsilon: rung i has epsilon_base ** (1 + epsilon_alpha i / (N - 1)); in [0, 1]."""
  epsilon_alpha: float = 7.0
  """Ape-X's alpha, the ladder's spread, >= 0."""
  epsilon_base_final: Optional[float] = None
  """None: the ladder stays fixed. A number in (0, epsilon_base]: the ladder's base falls
  linearly from epsilon_base to it over the first epsilon_decay_frames env frames of the
  run (counted by the learner, kept by its checkpoints), then stays; every rung follows
  (agent.ladder_exponent). Needs 0 < epsilon_base < 1."""
  epsilon_decay_frames: int = 0
  """Env frames over which the ladder's base falls to epsilon_base_final, >= 1 when
  that is set; 0 otherwise. The learner moves the ladder before each train step, so it
  stays at its start while the replay fills, and for good without training."""
  eval_epsilon: float = 1e-3
  """Epsilon of evaluation envs, in [0, 1]."""
  seed: int = 0
  """Seeds the weights and the exploration, >= 0."""

  def __post_init__(self):
    """Raises ValueError naming the first field outside its accepted values."""
    checks.ints_at_least(self, 1, 'trained_steps', 'batch_sequences', 'n_steps',
                         'target_update_period', 'lstm_size', 'num_epsilon_envs')
    checks.ints_at_least(self, 0, 'burn_in_steps', 'head_hidden_size', 'seed')
    checks.in_range(self, 0.0, 1.0, 'discount', 'priority_eta', 'epsilon_base',
                    'eval_epsilon')
    checks.positive(self, 'learning_rate', 'adam_epsilon')
    checks.positive(self, 'max_grad_norm', optional=True)
    checks.non_negative(self, 'rescaling_eps', optional=True)
    checks.non_negative(self, 'epsilon_alpha')
    checks.one_of(self, 'torso', choices.TORSO_CHOICES)
    checks.one_of(self, 'unroll_torso_dtype', choices.TORSO_DTYPES)
    checks.one_of(self, 'use_lstm', (False, True))
    checks.widths(self, 'mlp_hidden_sizes')
    if self.epsilon_base_final is None:
      if self.epsilon_decay_frames != 0:
        checks.fail(self, 'epsilon_decay_frames',
                    '0 while epsilon_base_final is None (nothing decays)')
    else:
      if not 0.0 < self.epsilon_base < 1.0:
        checks.fail(self, 'epsilon_base', 'a number in (0, 1) with a decaying ladder '
                    '(epsilon_base_final set)')
      final = self.epsilon_base_final
      if not (isinstance(final, (int, float, np.number)) and not isinstance(final, bool)
              and 0.0 < final <= self.epsilon_base):
        checks.fail(self, 'epsilon_base_final',
                    f'None, or a number in (0, epsilon_base = {self.epsilon_base:g}]')
      checks.ints_at_least(self, 1, 'epsilon_decay_frames')
