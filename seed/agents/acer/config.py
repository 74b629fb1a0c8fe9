"""ACER hyperparameters: frozen dataclasses bound by gin, `ACERConfig` for discrete
actions and `ACERContinuousConfig` for continuous ones, both extending
`ACERSharedConfig` (the data schedule, Retrace, the trust region, the optimizer).

Defaults are the paper's where it gives them (Wang et al. 2017, appendix): truncation
c = 10, trust region delta = 1 against a Polyak average with alpha = 0.99, replay
ratio 4 (a Poisson number of replayed batches after each fresh one), Retrace's
lambda 1, entropy bonus 0.01, discount 0.99; continuous: a Gaussian policy with a
fixed diagonal covariance, and a stochastic dueling network averaging the advantage
over n = 5 sampled actions.
"""
import dataclasses
from typing import Optional, Tuple

import gin

from seed.agents.common import choices
from seed.agents.common import config_checks as checks

OPTIMIZERS = ('adam', 'rmsprop')


@dataclasses.dataclass(frozen=True)
class ACERSharedConfig:
  """The fields both ACER variants have; not bound by gin itself."""

  unroll_length: int = 20
  """T, transitions per trace, in agent steps (unrolls hold T + 1 steps)."""
  batch_unrolls: int = 16
  """Traces per train step, fresh or replayed."""
  discount: float = 0.99
  """gamma in [0, 1], per agent step."""
  retrace_lambda: float = 1.0
  """lambda in [0, 1] of Retrace's trace coefficients c_t = lambda min(1, rho_t)
  (continuous: rho_t^(1/A) for A action dimensions)."""
  importance_clip: float = 10.0
  """c > 0, the truncation of the policy gradient's importance weight (the bias
  correction takes over above it)."""
  trust_region: bool = True
  """Project each step's policy gradient onto the trust region around the average
  policy (off: the plain truncated-with-bias-correction gradient)."""
  max_kl: float = 1.0
  """delta > 0, the trust region's bound on the linearised KL(average || current)."""
  average_decay: float = 0.99
  """alpha in (0, 1): the average network follows theta_a <- alpha theta_a +
  (1 - alpha) theta after every train step."""
  replay_ratio: float = 4.0
  """>= 0, the mean of the Poisson number of replayed batches after each fresh batch
  (0: on-policy only)."""
  replay_capacity_unrolls: int = 5000
  """Traces the replay holds (oldest overwritten)."""
  replay_start_unrolls: int = 100
  """Traces the replay must hold before a replayed batch is drawn."""
  q_cost: float = 0.5
  """Weight of the Q loss 1/2 (Q^ret - Q(x, a))^2, >= 0."""
  learning_rate: float = 7e-4
  """The optimizer's step size, > 0."""
  optimizer: str = 'rmsprop'
  """'adam' or 'rmsprop' (the paper's, decay 0.99)."""
  adam_epsilon: float = 1e-6
  """Adam's epsilon, > 0 (ignored by RMSProp)."""
  rmsprop_epsilon: float = 1e-5
  """RMSProp's epsilon, > 0 (ignored by Adam)."""
  max_grad_norm: Optional[float] = 10.0
  """Global-norm gradient clip, > 0; None disables clipping."""
  seed: int = 0
  """Seeds the weights, the action sampling and the replay schedule, >= 0."""

  def __post_init__(self):
    """Raises ValueError naming the first field outside its accepted values."""
    checks.ints_at_least(self, 1, 'unroll_length', 'batch_unrolls', 'replay_capacity_unrolls')
    checks.ints_at_least(self, 0, 'seed', 'replay_start_unrolls')
    checks.in_range(self, 0.0, 1.0, 'discount', 'retrace_lambda')
    checks.positive(self, 'importance_clip', 'max_kl', 'learning_rate', 'adam_epsilon',
                    'rmsprop_epsilon')
    checks.non_negative(self, 'replay_ratio', 'q_cost')
    checks.positive(self, 'max_grad_norm', optional=True)
    if not (isinstance(self.average_decay, (int, float)) and 0.0 < self.average_decay < 1.0):
      checks.fail(self, 'average_decay', 'a number in (0, 1)')
    checks.one_of(self, 'trust_region', (False, True))
    checks.one_of(self, 'optimizer', OPTIMIZERS)
    if self.replay_capacity_unrolls < max(self.batch_unrolls, self.replay_start_unrolls):
      checks.fail(self, 'replay_capacity_unrolls',
                  f'an int >= batch_unrolls ({self.batch_unrolls}) and >= '
                  f'replay_start_unrolls ({self.replay_start_unrolls})')


@gin.configurable
@dataclasses.dataclass(frozen=True)
class ACERConfig(ACERSharedConfig):
  """Every ACERAgent (discrete actions) hyperparameter, the env spec aside."""

  entropy_cost: float = 0.01
  """Weight of the entropy bonus, >= 0."""
  reward_clipping: Optional[str] = None
  """None, or 'abs_one' to clip rewards to [-1, 1] in the loss only."""
  torso: str = 'auto'
  """'auto' (picked from the observations, seed.agents.common.networks.resolve_torso: mlp for
  rank 0-2, for images [C, H, W] or [H, W, C] nature from 36 x 36 and small_conv
  below), 'mlp', 'nature', 'impala_shallow' or 'small_conv'."""
  mlp_hidden_sizes: Tuple[int, ...] = (64, 64)
  """Hidden layer widths (units) of the mlp torso."""
  initializer: str = 'glorot'
  """'glorot' or 'orthogonal' (seed.agents.vtrace.config.VTraceConfig.initializer)."""
  use_lstm: bool = False
  """Put an LSTM core after the torso (replayed traces start from their stored state)."""
  lstm_size: int = 256
  """LSTM units."""

  def __post_init__(self):
    super().__post_init__()
    checks.ints_at_least(self, 1, 'lstm_size')
    checks.non_negative(self, 'entropy_cost')
    checks.one_of(self, 'reward_clipping', checks.REWARD_CLIPPINGS)
    checks.one_of(self, 'torso', choices.TORSO_CHOICES)
    checks.one_of(self, 'initializer', choices.INITIALIZERS)
    checks.one_of(self, 'use_lstm', (False, True))
    checks.widths(self, 'mlp_hidden_sizes')


@gin.configurable
@dataclasses.dataclass(frozen=True)
class ACERContinuousConfig(ACERSharedConfig):
  """Every ACERContinuousAgent hyperparameter, the env spec aside (vector
  observations into MLPs, feed-forward)."""

  hidden_sizes: Tuple[int, ...] = (64, 64)
  """Hidden layer widths (units) of each of the three MLPs: the policy mean, V(x) and
  the advantage A(x, a)."""
  policy_std: float = 0.3
  """The Gaussian policy's fixed standard deviation in unit action space [-1, 1], > 0
  (the paper fixes the covariance; its mean is the only statistic the trust region
  constrains)."""
  sdn_samples: int = 5
  """n >= 1, the actions u_i ~ pi(.|x) over which the stochastic dueling network
  averages A(x, u_i): Q~(x, a) = V(x) + A(x, a) - mean_i A(x, u_i)."""
  reward_scale: float = 1.0
  """Rewards are multiplied by this in the loss only (logged returns stay raw), > 0:
  keeps Q and V near unit scale where per-step rewards are large (Pendulum's reach
  -16 a step, values -1,000 at gamma 0.99)."""
  value_cost: float = 0.5
  """Weight of V(x)'s loss 1/2 (V^target - V(x))^2, >= 0, with V^target =
  min(1, rho) (Q^ret - Q~(x, a)) + V(x)."""

  def __post_init__(self):
    super().__post_init__()
    checks.ints_at_least(self, 1, 'sdn_samples')
    checks.positive(self, 'policy_std', 'reward_scale')
    checks.non_negative(self, 'value_cost')
    checks.widths(self, 'hidden_sizes')
