"""Blocks the agents share: the Agent interface (base) and its TensorFlow half (tf_agent:
the TFAgent base class), the networks (torsos, the torso + LSTM core, the policy-value
network of V-trace, ACER and Reactor), the gradient step (learning: data-parallel
gradients, the non-finite skip, target copies, PopArt's statistics), MLPs, categorical
acting, continuous-action heads, the off-policy agent SAC and DDPG build on, the seed
axis of multi-seed agents, and the names and checks configs use without TensorFlow
(choices, config_checks, offpolicy_config)."""
