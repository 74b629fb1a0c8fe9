"""DDPG hyperparameters: one frozen dataclass, bound by gin, checked on construction.

Defaults: Adam 3e-4 for both networks, minibatch 256, gamma 0.99, tau 0.005,
Gaussian exploration noise of std 0.2, 256x256 MLPs.
"""
import dataclasses

import gin

from seed.agents.common import config_checks as checks
from seed.agents.common import offpolicy_config


@gin.configurable
@dataclasses.dataclass(frozen=True)
class DDPGConfig(offpolicy_config.OffPolicyConfig):
  """Every DDPGAgent hyperparameter (the env spec aside); the replay side's are
  OffPolicyConfig's."""

  actor_learning_rate: float = 3e-4
  """Adam's step size for the actor, > 0."""
  critic_learning_rate: float = 3e-4
  """Adam's step size for the critic, > 0."""
  exploration_noise: float = 0.2
  """Std of the Gaussian noise added to actions, in [-1, 1] action units, >= 0."""

  def __post_init__(self):
    super().__post_init__()
    checks.positive(self, 'actor_learning_rate', 'critic_learning_rate')
    checks.non_negative(self, 'exploration_noise')
