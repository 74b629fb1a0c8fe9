"""PPO agent (clipped objective, GAE, observation normalisation): `agent.PPOAgent`,
its hyperparameters `config.PPOConfig`.

Import the submodules explicitly; this package must stay importable without
TensorFlow, like the rest of `seed` outside the learner.
"""
