"""The V-trace agent's network: the shared policy + baseline network
(seed.agents.common.policy_value: torso, optional LSTM, logits [B, A] and V(x) [B]) built
from a VTraceConfig. ACER and Reactor build the same network with other second heads."""
from seed.agents.common import policy_value
from seed.agents.vtrace import config as config_lib
from seed.envs import spec as spec_lib


def policy_baseline_network(env_spec: spec_lib.EnvSpec, config: config_lib.VTraceConfig
                            ) -> policy_value.PolicyValueNetwork:
  """Logits and the baseline V(x), through the config's torso, LSTM and initializer."""
  return policy_value.from_config(env_spec, config,
                                  unroll_torso_dtype=config.unroll_torso_dtype)
