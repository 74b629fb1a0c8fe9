"""DDPG agent (deterministic actor, one critic, Gaussian exploration): `agent.DDPGAgent`,
its hyperparameters `config.DDPGConfig`.

Import the submodules explicitly; this package must stay importable without
TensorFlow, like the rest of `seed` outside the learner.
"""

from seed.agents.registry import Registration

REGISTERED = (
    Registration('ddpg', 'seed.agents.ddpg.agent:DDPGAgent', 'DDPGConfig', multi_seed=True),
    # SR-DDPG (D'Oro et al., 2023): the same agent at a high replay ratio with resets,
    # named for its own gin files (gin/<env>/sr_ddpg.gin).
    Registration('sr_ddpg', 'seed.agents.ddpg.agent:DDPGAgent', 'DDPGConfig', multi_seed=True),
)
