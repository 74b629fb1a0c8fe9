"""Agents register themselves (seed/agents/<folder>/__init__.py): what seed.agents
collects, what the learner and gcp/submit.py read from it, without TensorFlow."""
import dataclasses
import importlib
import os
import subprocess
import sys

from seed import agents
from tests.processes import REPO, _env


def test_every_registration_names_its_agent_and_config():
  assert 'vtrace' in agents.AGENTS and 'r2d2' in agents.AGENTS
  for name, registration in agents.AGENTS.items():
    agent = agents.agent_class(name)
    package = registration.agent.split(':')[0].rsplit('.', 1)[0]
    # The config lives in the folder's config module, which imports no TensorFlow.
    config = getattr(importlib.import_module(f'{package}.config'), registration.config)
    assert agent.config_class is config, name
    fields = {field.name for field in dataclasses.fields(config)}
    assert ('num_seeds' in fields) == registration.multi_seed, name


def test_collecting_the_agents_and_their_configs_imports_no_tensorflow():
  code = ('import importlib, sys, seed.agents\n'
          'for r in seed.agents.AGENTS.values():\n'
          '  importlib.import_module(r.agent.split(":")[0].rsplit(".", 1)[0] + ".config")\n'
          'print(len(seed.agents.AGENTS)); print("tensorflow" in sys.modules)')
  out = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, cwd=REPO,
                       env=_env(), timeout=120, check=True).stdout.split()
  assert out == [str(len(agents.AGENTS)), 'False']


def test_gcp_reads_the_same_registrations():
  sys.path.insert(0, os.path.join(REPO, 'gcp'))
  try:
    import repo_source  # pylint: disable=g-import-not-at-top,import-outside-toplevel
  finally:
    sys.path.pop(0)
  assert repo_source.read_agent_configs(REPO) == agents.CONFIG_CLASSES


def test_every_agent_has_a_gin_file():
  names = {name[:-len('.gin')] for env in os.listdir(os.path.join(REPO, 'gin'))
           for name in os.listdir(os.path.join(REPO, 'gin', env)) if name.endswith('.gin')}
  assert set(agents.AGENTS) <= names, sorted(set(agents.AGENTS) - names)


def test_every_agent_folder_has_the_same_files_for_the_same_roles():
  # config (the gin-bound dataclass), networks, loss (what an update minimises), agent
  # (acting and the train step); __init__ registers the names. Shared blocks: common/.
  folder = os.path.dirname(agents.__file__)
  roles = {'__init__.py', 'config.py', 'networks.py', 'loss.py', 'agent.py'}
  for name in sorted(os.listdir(folder)):
    path = os.path.join(folder, name)
    if not os.path.isdir(path) or name in ('common', '__pycache__'):
      continue
    assert {f for f in os.listdir(path) if f.endswith('.py')} == roles, name
  assert {r.agent.split(':')[0].rsplit('.', 1)[1] for r in agents.AGENTS.values()} == {'agent'}
