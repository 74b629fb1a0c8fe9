"""ACER (discrete actions): `agent.ACERAgent` and its `config.ACERConfig`.

Import the submodules explicitly; this package must stay importable without
TensorFlow, like the rest of `seed` outside the learner.
"""
