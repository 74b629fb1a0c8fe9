"""The package's layers (docs/architecture.md, "Layout"): each module imports only from
layers below its own, so no import cycle and no import that climbs a layer can come back.
Function-level imports count: a deferred import that climbs is still a climb."""
import ast
import os

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# Installed names and the folders they come from (setup.py's package_dir).
PACKAGE_FOLDERS = {'seed': 'seed', 'seed.learner': 'learner', 'seed.actors': 'actors'}

# Bottom first. A module belongs to the layer of the longest name here that is it or a
# package above it. Units within one layer do not import each other.
LAYERS = [
    # Plain data, every option's declaration, gin parsing: what every side may use.
    ['seed.types', 'seed.proto', 'seed.run_dir', 'seed.settings', 'seed.cluster.run_paths',
     'seed.unix_address', 'seed.event_loop', 'seed.thread_names', 'seed.refusal_log',
     'seed.process.exit_codes'],
    ['seed.config'],
    # Starting processes; envs; pure losses; replay storage; who may connect; reading a
    # checkpoint.
    ['seed.process', 'seed.envs', 'seed.losses', 'seed.replay', 'seed.security',
     'seed.run_dir.checkpoints'],
    # What the learner trains from, built on the replay storage.
    ['seed.inputs'],
    # The wire format; the agents (models, losses, what they train from).
    ['seed.protocol', 'seed.agents'],
    # The Unix socket's transport, for actors of the learner's host.
    ['seed.local_transport'],
    # The two sides of a stream: the learner's inference service, the actor's client.
    ['seed.inference', 'seed.actors'],
    ['seed.evaluation'],
    # The learner process.
    ['seed.learner'],
    ['seed.api', 'seed.experiments'],
    # What users and platforms start: test mode, seed-job.
    ['seed.evaluate', 'seed.cluster'],
    ['seed.cli'],
    ['seed.__main__', 'seed'],
]


def _modules():
  """{module name: file} for every module of the installed package."""
  modules = {}
  for package, folder in PACKAGE_FOLDERS.items():
    top = os.path.join(REPO, folder)
    for dirpath, dirnames, files in os.walk(top):
      dirnames[:] = [d for d in dirnames if d != '__pycache__']
      rel = os.path.relpath(dirpath, top)
      parts = [package] + ([] if rel == '.' else rel.split(os.sep))
      for name in files:
        if name.endswith('.py'):
          stem = [] if name == '__init__.py' else [name[:-3]]
          modules['.'.join(parts + stem)] = os.path.join(dirpath, name)
  return modules


MODULES = _modules()


def _owning_module(name):
  """`name` or the nearest package above it that is a module here (None if outside)."""
  while name and name not in MODULES:
    name = name.rpartition('.')[0]
  return name or None


def _imports(module, path, source):
  """(imported module, line) for each seed module `module` imports, at any depth."""
  tree = ast.parse(source, path)
  package = module if path.endswith('__init__.py') else module.rpartition('.')[0]
  for node in ast.walk(tree):
    if isinstance(node, ast.Import):
      for alias in node.names:
        if alias.name.split('.')[0] == 'seed':
          yield _owning_module(alias.name), node.lineno
    elif isinstance(node, ast.ImportFrom):
      base = node.module or ''
      if node.level:
        kept = package.split('.')[:len(package.split('.')) - node.level + 1]
        base = '.'.join(kept + ([base] if base else []))
      if base.split('.')[0] != 'seed':
        continue
      for alias in node.names:
        full = f'{base}.{alias.name}'
        yield (full if full in MODULES else _owning_module(base)), node.lineno


def _layer_and_unit(module):
  best = None
  for index, units in enumerate(LAYERS):
    for unit in units:
      if (module == unit or module.startswith(unit + '.')) and (
          best is None or len(unit) > len(best[1])):
        best = (index, unit)
  return best


def _climbs(module, path, source):
  """One line per import in `source` that reaches `module`'s own layer or one above."""
  layer, unit = _layer_and_unit(module)
  for imported, line in _imports(module, path, source):
    if imported is None or imported == module:
      continue
    imported_layer, imported_unit = _layer_and_unit(imported)
    if imported_unit != unit and imported_layer >= layer:  # A unit's own modules may.
      yield (f'{os.path.relpath(path, REPO)}:{line} {module} (layer {layer}) imports '
             f'{imported} (layer {imported_layer})')


def test_every_module_has_a_layer():
  assert len(MODULES) > 100, f'only {len(MODULES)} modules found under {REPO}'
  assert [m for m in MODULES if _layer_and_unit(m) is None] == []


def test_no_module_imports_from_its_own_layer_or_above():
  climbs = []
  for module, path in sorted(MODULES.items()):
    with open(path) as f:
      climbs.extend(_climbs(module, path, f.read()))
  assert climbs == [], '\n'.join(climbs)


@pytest.mark.parametrize('source,expected', [
    ('from seed.learner import runtime', 'imports seed.learner.runtime (layer 8)'),
    ('def f():\n  from seed import api', 'imports seed.api (layer 9)'),
    ('from seed.actors import client', 'imports seed.actors.client (layer 6)'),  # Same layer.
    ('from ..learner.launch import launch', 'imports seed.learner.launch (layer 8)'),
])
def test_a_climb_is_reported(source, expected):
  path = os.path.join(REPO, 'seed', 'inference', 'probe.py')
  assert [climb.split(' ', 1)[1] for climb in _climbs('seed.inference.probe', path, source)] \
      == [f'seed.inference.probe (layer 6) {expected}']


def test_a_downward_import_is_not():
  path = os.path.join(REPO, 'seed', 'inference', 'probe.py')
  assert list(_climbs('seed.inference.probe', path,
                      'from seed import types\nfrom seed.inference import batcher')) == []


def _top_level_imports(path):
  """(top-level package, line) for each absolute import in the file at `path`."""
  with open(path) as f:
    tree = ast.parse(f.read(), path)
  for node in ast.walk(tree):
    if isinstance(node, ast.Import):
      for alias in node.names:
        yield alias.name.split('.')[0], node.lineno
    elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
      yield node.module.split('.')[0], node.lineno


def _python_files(folder):
  for dirpath, dirnames, files in os.walk(os.path.join(REPO, folder)):
    dirnames[:] = [d for d in dirnames if d != '__pycache__']
    yield from (os.path.join(dirpath, f) for f in files if f.endswith('.py'))


# Above the package: bench/ (benchmarks) may use the tests' process harness, tests/ never
# import bench/ (they run it as a child process), and the package imports neither.
FORBIDDEN_TOPS = {'tests': {'bench'},
                  **{folder: {'bench', 'tests'} for folder in PACKAGE_FOLDERS.values()}}


def test_the_package_bench_and_tests_import_one_way():
  found = []
  for folder, forbidden in FORBIDDEN_TOPS.items():
    for path in _python_files(folder):
      found += [f'{os.path.relpath(path, REPO)}:{line} imports {top}'
                for top, line in _top_level_imports(path) if top in forbidden]
  assert found == [], '\n'.join(found)
