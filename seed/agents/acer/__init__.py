"""ACER (discrete actions): `agent.ACERAgent` and its `config.ACERConfig`.

Import the submodules explicitly; this package must stay importable without
TensorFlow, like the rest of `seed` outside the learner.
"""

from seed.agents.registry import Registration

REGISTERED = (
    Registration('acer', 'seed.agents.acer.agent:ACERAgent', 'ACERConfig'),
    Registration('acer_continuous', 'seed.agents.acer.agent:ACERContinuousAgent', 'ACERContinuousConfig'),
)
