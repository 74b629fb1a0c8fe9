"""V-trace's network: the shared policy + value network (seed.agents.common.networks:
torso, optional LSTM, logits [B, A] and the baseline V(x) [B]) as a VTraceConfig
describes it. ACER and Reactor build the same network with other second heads."""
from seed.agents.common import networks as shared
from seed.agents.vtrace import config as config_lib
from seed.envs import spec as spec_lib


def policy_baseline_network(env_spec: spec_lib.EnvSpec, config: config_lib.VTraceConfig
                            ) -> shared.PolicyValueNetwork:
  """Logits and the baseline V(x), through the config's torso, LSTM and initializer."""
  return shared.PolicyValueNetwork.from_config(env_spec, config,
                                               unroll_torso_dtype=config.unroll_torso_dtype)
