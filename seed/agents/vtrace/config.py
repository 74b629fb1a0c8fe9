"""V-trace hyperparameters: one frozen dataclass, bound by gin, checked on construction.

Defaults follow IMPALA/SEED where they carry over (discount 0.99, baseline_cost 0.5,
max_grad_norm 40, rho-bars 1, lambda 1; RMSProp with IMPALA's decay 0.99 and
epsilon 0.01). entropy_cost 0.01 and learning_rate 6e-4 suit small control tasks
and Atari alike.
"""
import dataclasses
from typing import Optional, Tuple

import gin

from seed.agents.common import choices
from seed.agents.common import config_checks as checks

OPTIMIZERS = ('adam', 'rmsprop')


@gin.configurable
@dataclasses.dataclass(frozen=True)
class VTraceConfig:
  """Every VTraceAgent hyperparameter (the env spec aside)."""

  unroll_length: int = 20
  """T, transitions per unroll, in agent steps (unrolls hold T + 1 steps)."""
  batch_unrolls: int = 32
  """Unrolls per train step."""
  epochs: int = 1
  """Passes of optimizer updates over each batch. 1 is IMPALA's (each transition learnt
  from once); more reuse the batch as PPO does, the V-trace weights pi/mu correcting
  for how far the updates have moved the policy from the one that acted."""
  num_minibatches: int = 1
  """Updates per pass: the batch's unrolls shuffled into this many minibatches of
  whole unrolls (it must divide batch_unrolls). 1 with epochs 1: one update on the
  batch in arrival order."""
  discount: float = 0.99
  """gamma in [0, 1], per agent step."""
  baseline_cost: float = 0.5
  """Weight of the value loss, >= 0."""
  entropy_cost: float = 0.01
  """Weight of the entropy bonus, >= 0."""
  learning_rate: float = 6e-4
  """The optimizer's step size, > 0."""
  optimizer: str = 'adam'
  """'adam' or 'rmsprop'."""
  adam_epsilon: float = 1e-3
  """Adam's epsilon, > 0 (ignored by RMSProp)."""
  rmsprop_epsilon: float = 0.01
  """RMSProp's epsilon inside the square root, > 0 (ignored by Adam)."""
  max_grad_norm: Optional[float] = 40.0
  """Global-norm gradient clip, > 0; None disables clipping."""
  reward_scale: float = 1.0
  """Rewards are multiplied by this (> 0) in the loss only, before any clipping."""
  reward_clipping: Optional[str] = None
  """None, or 'abs_one' to clip rewards to [-1, 1] in the loss only (logged
  returns are the raw ones)."""
  value_normalization: Optional[str] = None
  """None, or 'popart': the baseline head learns values normalised by the running
  mean and standard deviation of the V-trace targets, and the advantages are
  divided by that deviation (Hessel et al. 2019), so neither the value loss nor
  the policy gradient grows with the returns' scale."""
  popart_step_size: float = 3e-4
  """PopArt's beta in (0, 1]: the statistics average every batch for the first
  1 / beta train steps, then follow an EMA of this step."""
  lambda_: float = 1.0
  """V-trace lambda in [0, 1]."""
  normalize_advantages: bool = False
  """Scale each batch's policy-gradient advantages to mean 0, std 1 (as PPO does),
  so the entropy bonus keeps its weight whatever the rewards' scale."""
  policy_clip: Optional[float] = None
  """None: IMPALA's policy gradient. epsilon in (0, 1): PPO's clipped surrogate instead,
  min(r A, clip(r, 1 - epsilon, 1 + epsilon) A) with r = pi / mu the ratio to the
  actors' policy and A = r_t + gamma vs_{t+1} - V(x_t) the V-trace advantage (APPO,
  as in Sample Factory and RLlib): a trust region for a batch trained over several
  epochs."""
  clip_rho_threshold: Optional[float] = 1.0
  """V-trace rho-bar, > 0; None disables clipping."""
  clip_pg_rho_threshold: Optional[float] = 1.0
  """Clip of the policy-gradient importance weights, > 0; None disables clipping."""
  torso: str = 'auto'
  """'auto' (picked from the observations, seed.agents.common.networks.resolve_torso: mlp for
  rank 0-2, for images [C, H, W] or [H, W, C] nature from 36 x 36 and small_conv
  below), 'mlp', 'nature', 'impala_shallow' or 'small_conv'."""
  mlp_hidden_sizes: Tuple[int, ...] = (64, 64)
  """Hidden layer widths (units) of the mlp torso."""
  initializer: str = 'glorot'
  """'glorot' (uniform, every layer) or 'orthogonal': the torso with gain sqrt(2),
  the policy head 0.01 and the baseline head 1.0 (the init of PPO and A2C on
  Atari). Glorot's variance halves through each ReLU layer, so on Pong's frames
  the Nature torso's features barely differ between states (docs/learning.md)."""
  use_lstm: bool = False
  """Put an LSTM core after the torso."""
  lstm_size: int = 256
  """LSTM units."""
  unroll_torso_dtype: str = 'float32'
  """The dtype of the torso's arithmetic in the learner's unrolls: 'float32', or
  'bfloat16' where the hardware multiplies it faster (CPUs with AVX512_BF16 or AMX,
  GPUs from Ampere, TPUs; elsewhere it is slower), or 'auto': bfloat16 where the
  learner's device has it (seed.agents.common.native_bfloat16). Variables, LSTM and heads stay float32 and inference runs in float32, so
  the learner's logits then differ from the actors' by bfloat16's rounding (rho near
  1, not exactly 1, on-policy)."""
  seed: int = 0
  """Seeds the weights and the action sampling, >= 0."""

  def __post_init__(self):
    """Raises ValueError naming the first field outside its accepted values."""
    checks.ints_at_least(self, 1, 'unroll_length', 'batch_unrolls', 'epochs', 'num_minibatches',
                         'lstm_size')
    checks.ints_at_least(self, 0, 'seed')
    checks.in_range(self, 0.0, 1.0, 'discount', 'lambda_')
    checks.non_negative(self, 'baseline_cost', 'entropy_cost')
    checks.positive(self, 'learning_rate', 'adam_epsilon', 'rmsprop_epsilon',
                    'reward_scale')
    # Beyond these the run cannot learn: an entropy bonus above 1 outweighs any clipped
    # Atari advantage, and a step size above 1 moves every weight by more than its scale.
    checks.in_range(self, 0.0, 1.0, 'entropy_cost', 'learning_rate')
    checks.positive(self, 'max_grad_norm', 'clip_rho_threshold', 'clip_pg_rho_threshold',
                    optional=True)
    checks.one_of(self, 'optimizer', OPTIMIZERS)
    checks.one_of(self, 'reward_clipping', checks.REWARD_CLIPPINGS)
    checks.one_of(self, 'torso', choices.TORSO_CHOICES)
    checks.one_of(self, 'unroll_torso_dtype', choices.TORSO_DTYPES)
    checks.one_of(self, 'initializer', choices.INITIALIZERS)
    checks.one_of(self, 'use_lstm', (False, True))
    checks.one_of(self, 'normalize_advantages', (False, True))
    if self.policy_clip is not None and not 0.0 < self.policy_clip < 1.0:
      raise ValueError(f'VTraceConfig.policy_clip = {self.policy_clip!r}; accepted: None '
                       'or a number in (0, 1), e.g. 0.1 (PPO on Atari)')
    checks.value_normalization(self)
    if self.value_normalization == 'popart' and self.normalize_advantages:
      raise ValueError(
          "VTraceConfig.normalize_advantages = True and VTraceConfig."
          "value_normalization = 'popart' normalise the advantages twice (PopArt "
          'already divides them by its scale); accepted: one of the two.')
    checks.widths(self, 'mlp_hidden_sizes')
    if self.batch_unrolls % self.num_minibatches:
      checks.fail(self, 'num_minibatches',
                  f'a divisor of batch_unrolls = {self.batch_unrolls}')
