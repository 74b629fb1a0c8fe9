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
