"""PPO hyperparameters: one frozen dataclass, bound by gin, checked on construction.

Defaults are the usual MuJoCo ones (Schulman et al., 2017; CleanRL's
ppo_continuous_action): 2,048 transitions per update (32 unrolls x 64), 10 epochs x
32 minibatches, Adam 3e-4, clip 0.2, GAE lambda 0.95, gamma 0.99, value cost 0.5, no
entropy bonus, global-norm clip 0.5, 64x64 tanh MLPs.

The same config serves discrete actions (gin/atari/ppo.gin and gin/classic/ppo.gin
set cleanrl's ppo_atari and ppo values there).
"""
import dataclasses
from typing import Optional, Tuple

import gin

from seed.agents.common import choices
from seed.agents.common import config_checks as checks


@gin.configurable
@dataclasses.dataclass(frozen=True)
class PPOConfig:
  """Every PPOAgent hyperparameter (the env spec aside)."""

  unroll_length: int = 64
  """T, transitions per unroll, in env steps (unrolls hold T + 1 steps)."""
  batch_unrolls: int = 32
  """Unrolls per train step: batch_unrolls * unroll_length transitions."""
  epochs: int = 10
  """Passes over each batch, >= 1."""
  num_minibatches: int = 32
  """Minibatches per pass; divides batch_unrolls * unroll_length."""
  discount: float = 0.99
  """gamma in (0, 1], per env step."""
  gae_lambda: float = 0.95
  """GAE lambda in [0, 1]."""
  clip: float = 0.2
  """The ratio clip epsilon, in (0, 1)."""
  value_cost: float = 0.5
  """Weight of the value loss 0.5 * (V - return)^2, >= 0."""
  entropy_cost: float = 0.0
  """Weight of the entropy bonus, >= 0."""
  learning_rate: float = 3e-4
  """Adam's step size, > 0."""
  adam_epsilon: float = 1e-5
  """Adam's epsilon, > 0."""
  max_grad_norm: float = 0.5
  """Global-norm clip of each minibatch's gradient, > 0."""
  hidden_sizes: Tuple[int, ...] = (64, 64)
  """Hidden layer widths (units) of the policy and of the value MLP."""
  torso: str = 'auto'
  """'auto' (picked from the observations, seed.agents.common.networks.resolve_torso: mlp for
  rank 0-2, for images [C, H, W] or [H, W, C] nature from 36 x 36 and small_conv
  below), 'mlp', 'nature', 'impala_shallow' or 'small_conv'. Image torsos are
  shared by the policy and value heads (discrete actions only); the mlp is one per head."""
  normalize_observations: bool = True
  """Normalise observations by running statistics (updated on the learner)."""
  observation_clip: float = 10.0
  """Bound on normalised observations, in standard deviations, > 0."""
  initial_log_std: float = 0.0
  """The policy's starting log standard deviation, in unit action space."""
  reward_scale: float = 1.0
  """Rewards are multiplied by this in the loss only (logged returns are the env's),
  > 0; 0.1 keeps MuJoCo value targets near unit scale."""
  reward_clipping: Optional[str] = None
  """None, or 'abs_one' to clip the (scaled) rewards to [-1, 1] in the loss only,
  as Atari agents do."""
  value_normalization: Optional[str] = None
  """None, or 'popart': the value head learns the GAE returns normalised by their
  running mean and standard deviation (PopArt, as V-trace's option; PPO's own
  per-minibatch advantage normalisation stays), so the value loss, and with it the
  global-norm clip shared with the policy, does not grow with the returns' scale."""
  popart_step_size: float = 3e-4
  """PopArt's beta in (0, 1]: the statistics average every batch for the first
  1 / beta train steps, then follow an EMA of this step."""
  seed: int = 0
  """Seeds the weights, the action noise and the minibatch shuffles, >= 0."""

  def __post_init__(self):
    """Raises ValueError naming the first field outside its accepted values."""
    checks.ints_at_least(self, 1, 'unroll_length', 'batch_unrolls', 'epochs',
                         'num_minibatches')
    checks.ints_at_least(self, 0, 'seed')
    if self.batch_transitions % self.num_minibatches:
      checks.fail(self, 'num_minibatches', 'a divisor of batch_unrolls * unroll_length = '
                  f'{self.batch_transitions}')
    if not (isinstance(self.discount, (int, float)) and 0.0 < self.discount <= 1.0):
      checks.fail(self, 'discount', 'a number in (0, 1]')
    if not (isinstance(self.clip, (int, float)) and 0.0 < self.clip < 1.0):
      checks.fail(self, 'clip', 'a number in (0, 1)')
    checks.in_range(self, 0.0, 1.0, 'gae_lambda')
    checks.non_negative(self, 'value_cost', 'entropy_cost')
    checks.positive(self, 'learning_rate', 'adam_epsilon', 'max_grad_norm',
                    'observation_clip', 'reward_scale')
    checks.one_of(self, 'normalize_observations', (True, False))
    checks.one_of(self, 'torso', choices.TORSO_CHOICES)
    checks.one_of(self, 'reward_clipping', checks.REWARD_CLIPPINGS)
    checks.value_normalization(self)
    checks.widths(self, 'hidden_sizes')

  @property
  def batch_transitions(self) -> int:
    """Transitions per train step: batch_unrolls * unroll_length."""
    return self.batch_unrolls * self.unroll_length

  @property
  def minibatch_transitions(self) -> int:
    """Transitions per gradient update: batch_transitions / num_minibatches."""
    return self.batch_transitions // self.num_minibatches
