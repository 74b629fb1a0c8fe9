"""DDPG agent (deterministic actor, one critic, Gaussian exploration): `agent.DDPGAgent`,
its hyperparameters `config.DDPGConfig`.

Import the submodules explicitly; this package must stay importable without
TensorFlow, like the rest of `seed` outside the learner.
"""
