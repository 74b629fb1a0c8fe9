"""DDPG agent (deterministic actor, one critic, Gaussian exploration): `agent.DDPGAgent`.

Import the submodules explicitly; this package must stay importable without
TensorFlow, like the rest of `seed` outside the learner.
"""
