"""PPO agent (clipped objective, GAE, observation normalisation): `agent.PPOAgent`,
its hyperparameters `config.PPOConfig`.

Import the submodules explicitly; this package must stay importable without
TensorFlow, like the rest of `seed` outside the learner.
"""

from seed.agents.registry import Registration

REGISTERED = (
    Registration('ppo', 'seed.agents.ppo.agent:PPOAgent', 'PPOConfig'),
)
