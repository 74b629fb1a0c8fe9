"""Reactor's network: the shared policy network (seed.agents.common.networks) whose
second head gives the logits of a categorical return distribution per action,
[B, A, num_atoms] (Gruslys et al., 2018, section 3.3), built from a ReactorConfig."""
from seed.agents.common import networks as shared
from seed.agents.reactor import config as config_lib
from seed.envs import spec as spec_lib


def policy_distribution_network(env_spec: spec_lib.EnvSpec, config: config_lib.ReactorConfig,
                                name: str = 'policy_distribution'
                                ) -> shared.PolicyValueNetwork:
  """Logits [B, A] and return-distribution logits [B, A, num_atoms]."""
  return shared.PolicyValueNetwork.from_config(
      env_spec, config, q_head=True, q_atoms=config.num_atoms,
      lstm_input_layer_norm=config.lstm_input_layer_norm, name=name)
