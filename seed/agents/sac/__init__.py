"""SAC agent (twin critics, learned temperature, tanh-Gaussian policy): `agent.SACAgent`,
its hyperparameters `config.SACConfig`.

Import the submodules explicitly; this package must stay importable without
TensorFlow, like the rest of `seed` outside the learner.
"""

from seed.agents.registry import Registration

REGISTERED = (
    Registration('sac', 'seed.agents.sac.agent:SACAgent', 'SACConfig', multi_seed=True),
    # SR-SAC (D'Oro et al., 2023): the same agent at a high replay ratio with resets,
    # named for its own gin files (gin/<env>/sr_sac.gin).
    Registration('sr_sac', 'seed.agents.sac.agent:SACAgent', 'SACConfig', multi_seed=True),
)
