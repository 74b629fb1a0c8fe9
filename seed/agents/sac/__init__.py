"""SAC agent (twin critics, learned temperature, tanh-Gaussian policy): `agent.SACAgent`,
its hyperparameters `config.SACConfig`.

Import the submodules explicitly; this package must stay importable without
TensorFlow, like the rest of `seed` outside the learner.
"""
