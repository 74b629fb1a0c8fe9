"""R2D2 agent: `agent.R2D2Agent`, its `config.R2D2Config`, Q network and sequence loss.

Import the submodules explicitly; this package must stay importable without
TensorFlow, like the rest of `seed` outside the learner.
"""

from seed.agents.registry import Registration

REGISTERED = (
    Registration('r2d2', 'seed.agents.r2d2.agent:R2D2Agent', 'R2D2Config'),
    # R2D2 sized for a CPU workstation (gin/atari/r2d2_cpu.gin): the same agent.
    Registration('r2d2_cpu', 'seed.agents.r2d2.agent:R2D2Agent', 'R2D2Config'),
)
