"""SAC hyperparameters: one frozen dataclass, bound by gin, checked on construction.

Defaults are the paper's (Haarnoja et al., 2018, appendix D): Adam 3e-4 for every
network and the temperature, minibatch 256, gamma 0.99, tau 0.005, 256x256 MLPs.
"""
import dataclasses
from typing import Optional

import gin

from seed.agents.common import config_checks as checks
from seed.agents.common import offpolicy_config


@gin.configurable
@dataclasses.dataclass(frozen=True)
class SACConfig(offpolicy_config.OffPolicyConfig):
  """Every SACAgent hyperparameter (the env spec aside); the replay side's are
  OffPolicyConfig's."""

  actor_learning_rate: float = 3e-4
  """Adam's step size for the policy, > 0."""
  critic_learning_rate: float = 3e-4
  """Adam's step size for the twin critics, > 0."""
  temperature_learning_rate: float = 3e-4
  """Adam's step size for log(alpha), > 0."""
  initial_alpha: float = 1.0
  """The temperature alpha before learning, > 0."""
  target_entropy: Optional[float] = None
  """The policy entropy the temperature aims at, in nats; None for
  -target_entropy_scale * |A|."""
  target_entropy_scale: float = 1.0
  """With target_entropy None, the target is -target_entropy_scale * |A| nats (SAC: 1;
  SR-SAC: 0.5), > 0."""

  def __post_init__(self):
    super().__post_init__()
    checks.positive(self, 'actor_learning_rate', 'critic_learning_rate',
                    'temperature_learning_rate', 'initial_alpha', 'target_entropy_scale')
    if self.target_entropy is not None and not isinstance(self.target_entropy, (int, float)):
      checks.fail(self, 'target_entropy', 'a number, or None for -|A|')
