"""Blocks the agents share: the Agent interface (base) and its TensorFlow half
(tf_agent), torsos, MLPs, the policy-value network of V-trace, ACER and Reactor
(policy_value), acting helpers, PopArt, continuous-action heads, the off-policy agent
SAC and DDPG build on, the seed axis of multi-seed agents, and the names and checks
configs use without TensorFlow (choices, config_checks, offpolicy_config)."""
