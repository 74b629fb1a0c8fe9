"""Agents: one folder each (config, networks, loss, agent), shared blocks in common/.

Each folder registers its names itself (`REGISTERED` in its `__init__.py`, a
`registry.Registration` each); collecting them imports no TensorFlow: an agent's
class, and with it TensorFlow, is imported when `agent_class` asks for it.
"""
import importlib
import pkgutil
from typing import Dict, Tuple

from seed.agents.registry import Registration


def _collect() -> Dict[str, Registration]:
  found: Dict[str, Registration] = {}
  for module in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
    if not module.ispkg:
      continue
    for registration in getattr(importlib.import_module(f'{__name__}.{module.name}'),
                                'REGISTERED', ()):
      if registration.name in found:
        raise ValueError(f'agent {registration.name!r} is registered twice: by '
                         f'{found[registration.name].agent} and {registration.agent}')
      found[registration.name] = registration
  return dict(sorted(found.items()))


# name -> Registration, for every agent folder.
AGENTS: Dict[str, Registration] = _collect()
# The agents that train several independent seeds in one learner (--num_seeds).
MULTI_SEED_AGENTS: Tuple[str, ...] = tuple(n for n, r in AGENTS.items() if r.multi_seed)
# Each agent's gin-bound config class name: the experiment runner binds `<config>.seed`
# without importing the agent (and TensorFlow).
CONFIG_CLASSES: Dict[str, str] = {name: r.config for name, r in AGENTS.items()}


def agent_class(name: str):
  """The agent class registered as `name`."""
  if name not in AGENTS:
    raise ValueError(f'unknown agent {name!r}; known agents: {", ".join(AGENTS)}')
  module_name, class_name = AGENTS[name].agent.split(':')
  return getattr(importlib.import_module(module_name), class_name)


def config_class(name: str) -> type:
  """The gin-bound config dataclass of agent `name`, from its package's `config` module
  (no TensorFlow)."""
  if name not in AGENTS:
    raise ValueError(f'unknown agent {name!r}; known agents: {", ".join(AGENTS)}')
  package = AGENTS[name].agent.split(':')[0].rpartition('.')[0]
  return getattr(importlib.import_module(f'{package}.config'), AGENTS[name].config)


def register_gin_configurables(name: str) -> Tuple[type, ...]:
  """What a learner of agent `name` binds in gin: the env's config, the agent's, and
  its input's (a replay, a mixture of replays). Gin knows a configurable once its module
  is imported; importing them here lets a process that parses a run's config (test
  mode, the experiment runner's check) parse it as strictly as the learner does, without
  TensorFlow. ValueError for an unknown agent, naming the known ones."""
  # pylint: disable=g-import-not-at-top
  from seed.envs.registry import EnvConfig
  from seed.inputs.mixture_spec import ReplayMixtureConfig
  from seed.inputs.replay_input import ReplayInput
  # pylint: enable=g-import-not-at-top
  return (EnvConfig, config_class(name), ReplayMixtureConfig, ReplayInput)
