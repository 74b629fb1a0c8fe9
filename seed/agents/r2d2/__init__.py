"""R2D2 agent: `agent.R2D2Agent`, its `config.R2D2Config`, Q network and sequence loss.

Import the submodules explicitly; this package must stay importable without
TensorFlow, like the rest of `seed` outside the learner.
"""
