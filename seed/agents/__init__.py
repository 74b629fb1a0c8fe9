"""Agents: one folder each (config, networks, loss, learner step).

Agents are named here and imported lazily, so that naming one does not import
TensorFlow (or another agent's code).
"""
import importlib

AGENTS = {
    'acer': 'seed.agents.acer.agent:ACERAgent',
    'acer_continuous': 'seed.agents.acer.continuous:ACERContinuousAgent',
    'ddpg': 'seed.agents.ddpg.agent:DDPGAgent',
    'ppo': 'seed.agents.ppo.agent:PPOAgent',
    'r2d2': 'seed.agents.r2d2.agent:R2D2Agent',
    # R2D2 sized for a CPU workstation (gin/atari/r2d2_cpu.gin): the same agent.
    'r2d2_cpu': 'seed.agents.r2d2.agent:R2D2Agent',
    'reactor': 'seed.agents.reactor.agent:ReactorAgent',
    'sac': 'seed.agents.sac.agent:SACAgent',
    # SAC and DDPG at high replay ratios with resets (D'Oro et al., 2023): the same
    # agents, named for their own gin files (gin/<env>/sr_sac.gin, sr_ddpg.gin).
    'sr_ddpg': 'seed.agents.ddpg.agent:DDPGAgent',
    'sr_sac': 'seed.agents.sac.agent:SACAgent',
    'vtrace': 'seed.agents.vtrace.agent:VTraceAgent',
}

# The agents that train several independent seeds in one learner (--num_seeds), whose
# config has a num_seeds field.
MULTI_SEED_AGENTS = ('ddpg', 'sac', 'sr_ddpg', 'sr_sac')

# Each agent's gin-bound config class (its `config_class`), by name: the experiment
# runner binds `<config>.seed` without importing the agent (and TensorFlow).
CONFIG_CLASSES = {
    'acer': 'ACERConfig',
    'acer_continuous': 'ACERContinuousConfig',
    'ddpg': 'DDPGConfig',
    'ppo': 'PPOConfig',
    'r2d2': 'R2D2Config',
    'r2d2_cpu': 'R2D2Config',
    'reactor': 'ReactorConfig',
    'sac': 'SACConfig',
    'sr_ddpg': 'DDPGConfig',
    'sr_sac': 'SACConfig',
    'vtrace': 'VTraceConfig',
}


def agent_class(name: str):
  """The agent class registered as `name`."""
  if name not in AGENTS:
    raise ValueError(f'unknown agent {name!r}; known agents: {", ".join(sorted(AGENTS))}')
  module_name, class_name = AGENTS[name].split(':')
  return getattr(importlib.import_module(module_name), class_name)
