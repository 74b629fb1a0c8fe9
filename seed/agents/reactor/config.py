"""Reactor hyperparameters: one frozen dataclass, bound by gin.

Facts from the paper (Gruslys et al., 2018): a categorical return distribution on 51
fixed atoms, distributional Retrace targets, the beta-LOO policy gradient with
beta = min(c, 1 / mu(a)), an LSTM, prioritized replay of sequences. Other defaults
(the support's range, the learning rate) are this project's choices for its small
tasks and are stated in the gin files.
"""
import dataclasses
from typing import Optional, Tuple

import gin

from seed.agents.common import choices
from seed.agents.common import config_checks as checks

OPTIMIZERS = ('adam', 'rmsprop')


@gin.configurable
@dataclasses.dataclass(frozen=True)
class ReactorConfig:
  """Every ReactorAgent hyperparameter, the env spec aside."""

  unroll_length: int = 20
  """T, transitions per sequence, in agent steps (unrolls hold T + 1 steps)."""
  batch_unrolls: int = 16
  """Sequences per train step."""
  discount: float = 0.99
  """gamma in [0, 1], per agent step."""
  retrace_lambda: float = 1.0
  """lambda in [0, 1] of the trace coefficients c_t = lambda min(1, rho_t)."""
  beta_clip: float = 1.0
  """c > 0 of beta = min(c, 1 / mu(a)) in the beta-LOO policy gradient (large c: the
  unbiased 1 / mu; c = 1: beta = 1, the lowest variance)."""
  num_atoms: int = 51
  """N >= 2, atoms of the categorical return distribution."""
  v_min: float = -10.0
  """The lowest atom; returns below are clipped onto it."""
  v_max: float = 10.0
  """The highest atom, > v_min."""
  q_cost: float = 1.0
  """Weight of the distributional critic's cross-entropy loss, >= 0."""
  entropy_cost: float = 0.01
  """Weight of the entropy bonus, >= 0."""
  priority_eta: float = 0.9
  """A sequence's priority eta max_t |Q^ret_t - Q_t| + (1 - eta) mean_t, in [0, 1]."""
  reward_clipping: Optional[str] = None
  """None, or 'abs_one' to clip rewards to [-1, 1] in the loss only."""
  reward_scale: float = 1.0
  """Rewards are multiplied by this in the loss only (after clipping), > 0. The
  policy gradient's scale is the critic's (sum_a Q(a) grad pi(a)), so large returns
  would swamp the entropy bonus; the atoms must span the scaled returns."""
  learning_rate: float = 1e-3
  """The optimizer's step size, > 0."""
  optimizer: str = 'adam'
  """'adam' or 'rmsprop'."""
  adam_epsilon: float = 1e-6
  """Adam's epsilon, > 0 (ignored by RMSProp)."""
  rmsprop_epsilon: float = 1e-5
  """RMSProp's epsilon, > 0 (ignored by Adam)."""
  max_grad_norm: Optional[float] = 10.0
  """Global-norm gradient clip, > 0; None disables clipping."""
  target_update_period: int = 0
  """0: the Retrace targets bootstrap from the online network's return distributions
  (gradient stopped). N >= 1: from a target network, a copy of the online one made
  every N applied train steps (counted by the optimizer, so a restore keeps the
  period); the policy pi in the targets stays the online one."""
  torso: str = 'auto'
  """'auto' (picked from the observations, seed.agents.common.networks.resolve_torso: mlp for
  rank 0-2, for images [C, H, W] or [H, W, C] nature from 36 x 36 and small_conv
  below), 'mlp', 'nature', 'impala_shallow' or 'small_conv'."""
  mlp_hidden_sizes: Tuple[int, ...] = (64,)
  """Hidden layer widths (units) of the mlp torso."""
  initializer: str = 'glorot'
  """'glorot' or 'orthogonal'."""
  use_lstm: bool = True
  """Put an LSTM core after the torso (Reactor's; replayed sequences start from their
  stored state)."""
  lstm_size: int = 64
  """LSTM units."""
  lstm_input_layer_norm: bool = False
  """Layer-normalise the torso's features on their way into the LSTM (needs use_lstm).
  Without it, on Pong's frames, the critic's cross-entropy and the beta-LOO policy
  term each grow the features until the LSTM's gates saturate and no gradient passes
  (docs/learning.md, "Reactor on Pong")."""
  seed: int = 0
  """Seeds the weights and the action sampling, >= 0."""

  def __post_init__(self):
    """Raises ValueError naming the first field outside its accepted values."""
    checks.ints_at_least(self, 1, 'unroll_length', 'batch_unrolls', 'lstm_size')
    checks.ints_at_least(self, 2, 'num_atoms')
    checks.ints_at_least(self, 0, 'seed', 'target_update_period')
    checks.in_range(self, 0.0, 1.0, 'discount', 'retrace_lambda', 'priority_eta')
    checks.positive(self, 'beta_clip', 'reward_scale', 'learning_rate', 'adam_epsilon', 'rmsprop_epsilon')
    checks.non_negative(self, 'q_cost', 'entropy_cost')
    checks.positive(self, 'max_grad_norm', optional=True)
    if not (isinstance(self.v_min, (int, float)) and isinstance(self.v_max, (int, float))
            and self.v_min < self.v_max):
      checks.fail(self, 'v_max', f'a number > v_min ({self.v_min!r})')
    checks.one_of(self, 'optimizer', OPTIMIZERS)
    checks.one_of(self, 'reward_clipping', checks.REWARD_CLIPPINGS)
    checks.one_of(self, 'torso', choices.TORSO_CHOICES)
    checks.one_of(self, 'initializer', choices.INITIALIZERS)
    checks.one_of(self, 'use_lstm', (False, True))
    checks.one_of(self, 'lstm_input_layer_norm', (False, True))
    if self.lstm_input_layer_norm and not self.use_lstm:
      checks.fail(self, 'lstm_input_layer_norm', 'False when use_lstm is False (it '
                  'normalises the LSTM\'s input)')
    checks.widths(self, 'mlp_hidden_sizes')
