"""What SACConfig and DDPGConfig share: n-step replay, the replay ratio, targets, MLPs.

No TensorFlow here: the configs import without it, like the rest of `seed` outside
the learner.
"""
import dataclasses
from typing import Optional, Tuple

from seed.agents.common import config_checks as checks


@dataclasses.dataclass(frozen=True)
class OffPolicyConfig:
  """The hyperparameters of the replay side (seed.agents.common.offpolicy); gin binds the
  subclasses (SACConfig, DDPGConfig), never this one."""

  n_steps: int = 1
  """n of the n-step targets, in env steps, >= 1 (unrolls hold n + 1 steps)."""
  minibatch_transitions: int = 256
  """Transitions per gradient update, >= 1."""
  updates_per_step: int = 1
  """Gradient updates per env step (the replay ratio), >= 1."""
  discount: float = 0.99
  """gamma in [0, 1], per env step."""
  tau: float = 0.005
  """Polyak rate of the target networks, in (0, 1]."""
  hidden_sizes: Tuple[int, ...] = (256, 256)
  """Hidden layer widths (units) of the actor's and each critic's MLP."""
  seed: int = 0
  """Seeds the weights and all sampling, >= 0."""
  num_seeds: int = 1
  """Independent agents trained together in one learner, seeds seed, seed + 1, ...,
  >= 1: networks with a leading seed axis, one update for all (seed.agents.common.offpolicy).
  The learner's --num_seeds binds it."""
  reset_interval_updates: Optional[int] = None
  """Re-initialise every network (targets and SAC's temperature included) and every
  optimizer's state after each this many gradient updates, keeping the replay (the
  resets of D'Oro et al., 2023); an int >= 1, or None for never. A reset comes at the
  end of the train step that reaches the interval."""
  reset_interval_env_steps: Optional[int] = None
  """The same interval in env steps (each makes updates_per_step updates); set at
  most one of the two."""
  xla_train_step: bool = True
  """Compile the updates of a train step with XLA when the learner trains on one device
  (several keep graph mode): the numbers of graph mode to float rounding, a train step
  4.8x faster on a CPU for SR-SAC's 64-unit MLPs, 10-25% for 256 units
  (bench.offpolicy_step). False: graph mode (for a platform where XLA fails)."""

  def __post_init__(self):
    """Raises ValueError naming the first field outside its accepted values."""
    checks.ints_at_least(self, 1, 'n_steps', 'minibatch_transitions', 'updates_per_step',
                         'num_seeds')
    checks.ints_at_least(self, 0, 'seed')
    for field in ('reset_interval_updates', 'reset_interval_env_steps'):
      if getattr(self, field) is not None:
        checks.ints_at_least(self, 1, field)
    if self.reset_interval_updates is not None and self.reset_interval_env_steps is not None:
      checks.fail(self, 'reset_interval_env_steps',
                  f'None while reset_interval_updates is set '
                  f'({self.reset_interval_updates!r}): one unit, not both')
    checks.in_range(self, 0.0, 1.0, 'discount')
    if not (isinstance(self.tau, (int, float)) and 0.0 < self.tau <= 1.0):
      checks.fail(self, 'tau', 'a number in (0, 1]')
    checks.widths(self, 'hidden_sizes')
    if not isinstance(self.xla_train_step, bool):
      checks.fail(self, 'xla_train_step', 'True or False')

  @property
  def batch_transitions(self) -> int:
    """Transitions sampled per train step: updates_per_step * minibatch_transitions."""
    return self.updates_per_step * self.minibatch_transitions

  @property
  def reset_interval(self) -> Optional[int]:
    """Gradient updates between resets, whichever unit set it; None: no resets."""
    if self.reset_interval_env_steps is not None:
      return self.reset_interval_env_steps * self.updates_per_step
    return self.reset_interval_updates
