"""What the learner, the actors and gin accept, read from this checkout's source.

The submitter runs with the standard library only (no absl, no gin, no TensorFlow),
yet a typo in a flag or a gin binding should stop it before a job costs anything.
So it reads the flags from seed/settings.py (standard library only, loaded from its
file) and the gin configurables from the source files the images are built from, and
stays in step with them without a copied list.
Where the source is not there (gcp/ copied elsewhere), nothing is checked.
"""
import ast
import dataclasses
import importlib.util
import os
from typing import Callable, Dict, Optional, Set

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Flag kinds as the submitter checks a value: absl's DEFINE_<kind> (seed.settings.KINDS).
BOOL_KINDS = ('bool', 'boolean')
INT_KINDS = ('integer',)
FLOAT_KINDS = ('float',)


@dataclasses.dataclass(frozen=True)
class Flags:
  learner: Dict[str, str]   # flag name -> absl kind (string, integer, bool, ...)
  actor: Dict[str, str]
  job: Dict[str, str]       # seed-job's own flags: a sweep parameter must not shadow one
  # (flag name, parsed value, value as written) -> why a program that has the flag
  # refuses the value, or None: the settings' own checks (seed.settings.refusal).
  refusal: Callable[[str, object, str], Optional[str]] = lambda name, value, written: None
  # (--learner_devices, the learner's GPUs, the flag giving them) -> why they do not fit,
  # or None (seed.settings.learner_gpus_refusal).
  learner_gpus_refusal: Callable[[str, int, str], Optional[str]] = lambda *_: None


def read_flags(root: str = REPO_ROOT) -> Optional[Flags]:
  path = os.path.join(root, 'seed', 'settings.py')
  if not os.path.isfile(path):
    return None
  spec = importlib.util.spec_from_file_location('seed_settings_of_checkout', path)
  settings = importlib.util.module_from_spec(spec)
  spec.loader.exec_module(settings)
  schemas = (settings.LEARNER, settings.ACTOR, settings.JOB)

  def refusal(name: str, value: object, written: str) -> Optional[str]:
    for schema in schemas:
      setting = settings.by_name(schema).get(name)
      problem = setting and settings.refusal(setting, value, written)
      if problem:
        return problem
    return None

  return Flags(*({setting.name: setting.kind for setting in schema} for schema in schemas),
               refusal=refusal, learner_gpus_refusal=settings.learner_gpus_refusal)


def _is_configurable(decorator: ast.expr) -> bool:
  target = decorator.func if isinstance(decorator, ast.Call) else decorator
  return (isinstance(target, ast.Attribute) and target.attr == 'configurable'
          and isinstance(target.value, ast.Name) and target.value.id == 'gin')


def _parameters(node: ast.AST) -> Set[str]:
  """Keyword parameters of a function, a class's __init__, or a dataclass's fields."""
  if isinstance(node, ast.ClassDef):
    for item in node.body:
      if isinstance(item, ast.FunctionDef) and item.name == '__init__':
        return _parameters(item) - {'self'}
    return {item.target.id for item in node.body
            if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name)}
  args = node.args
  return {a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs]}


def read_configurables(root: str = REPO_ROOT) -> Optional[Dict[str, Set[str]]]:
  """Gin configurable name -> its parameters, for every @gin.configurable under seed/."""
  package = os.path.join(root, 'seed')
  if not os.path.isdir(package):
    return None
  found: Dict[str, Set[str]] = {}
  for directory, _, files in os.walk(package):
    for name in files:
      if not name.endswith('.py'):
        continue
      with open(os.path.join(directory, name), encoding='utf-8') as f:
        text = f.read()
      if 'gin.configurable' not in text:
        continue
      for node in ast.walk(ast.parse(text)):
        if (isinstance(node, (ast.ClassDef, ast.FunctionDef))
            and any(_is_configurable(d) for d in node.decorator_list)):
          found[node.name] = _parameters(node)
  return found


def read_agent_configs(root: str = REPO_ROOT) -> Optional[Dict[str, str]]:
  """Agent name (vtrace) -> its gin-bound config class (VTraceConfig), from the
  `Registration(name, agent, config, ...)` entries each seed/agents/<folder>/__init__.py
  lists (seed.agents.registry)."""
  package = os.path.join(root, 'seed', 'agents')
  if not os.path.isdir(package):
    return None
  found: Dict[str, str] = {}
  for folder in sorted(os.listdir(package)):
    path = os.path.join(package, folder, '__init__.py')
    if not os.path.isfile(path):
      continue
    with open(path, encoding='utf-8') as f:
      tree = ast.parse(f.read())
    for node in ast.walk(tree):
      if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
          and node.func.id == 'Registration' and len(node.args) >= 3):
        name, _, config = (ast.literal_eval(arg) for arg in node.args[:3])
        found[name] = config
  return found or None
