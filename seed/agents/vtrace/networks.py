"""The V-trace agent's network: the shared policy + baseline network
(seed.agents.common.policy_value: torso, optional LSTM, logits [B, A] and V(x) [B]) built
from a VTraceConfig. ACER and Reactor build the same network with other second heads."""
from seed.agents.common import policy_value
from seed.agents.vtrace import config as config_lib
from seed.envs import spec as spec_lib


def policy_baseline_network(env_spec: spec_lib.EnvSpec, config: config_lib.VTraceConfig
                            ) -> policy_value.PolicyValueNetwork:
  """Logits and the baseline V(x), through the config's torso, LSTM and initializer."""
  return policy_value.PolicyValueNetwork(
      env_spec.observation_shape, env_spec.observation_dtype, env_spec.num_actions,
      torso=config.torso, mlp_hidden_sizes=config.mlp_hidden_sizes,
      use_lstm=config.use_lstm, lstm_size=config.lstm_size, seed=config.seed,
      initializer=config.initializer, unroll_torso_dtype=config.unroll_torso_dtype)
