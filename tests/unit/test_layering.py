"""The package's layers (docs/architecture.md, "Layout"): each module imports only from
layers below its own, so no import cycle and no import that climbs a layer can come back.
Function-level imports count: a deferred import that climbs is still a climb.

Folders, not only installed names: nothing in the folder seed/ imports the processes'
folders learner/ (installed as seed.learner) or actors/ (seed.actors); inside those two,
siblings are imported relatively, and neither imports the other. Inside a unit too, no
module reaches itself through its imports (no cycle anywhere)."""
import ast
import os

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# Installed names and the folders they come from (setup.py's package_dir).
PACKAGE_FOLDERS = {'seed': 'seed', 'seed.learner': 'learner', 'seed.actors': 'actors'}
PROCESSES = ('seed.learner', 'seed.actors')

# Bottom first. A module belongs to the layer of the longest name here that is it or a
# package above it. Units within one layer do not import each other.
LAYERS = [
    # Plain data, the run directory's names, every option's declaration, the exit codes,
    # naming threads, the event loop, unix: addresses: what every side may use.
    ['seed.types', 'seed.proto', 'seed.run_dir', 'seed.settings', 'seed.cluster.run_paths',
     'seed.transport', 'seed.transport.unix_address', 'seed.transport.refusal_log',
     'seed.process.event_loop', 'seed.process.thread_names', 'seed.process.exit_codes'],
    # Gin parsing and the run's saved config.
    ['seed.config'],
    # Starting processes; envs; pure losses; replay storage; who may connect; reading a
    # checkpoint.
    ['seed.process', 'seed.envs', 'seed.losses', 'seed.replay', 'seed.transport.security',
     'seed.run_dir.checkpoints'],
    # What the learner trains from, built on the replay storage.
    ['seed.inputs'],
    # The wire format; the agents (models, losses, what they train from).
    ['seed.protocol', 'seed.agents'],
    # The Unix socket's transport, for actors of the learner's host.
    ['seed.transport.unix_socket'],
    # The learner's inference service.
    ['seed.inference'],
    # Test mode's and the diagnostics' parts: a run's agent at a checkpoint.
    ['seed.evaluation'],
    ['seed.api', 'seed.experiments'],
    # What users and platforms start: test mode, seed-job.
    ['seed.evaluate', 'seed.cluster'],
    ['seed.cli'],
    ['seed.__main__', 'seed'],
    # The two processes, above the whole library: nothing in it imports them.
    ['seed.learner', 'seed.actors'],
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
    ('from seed.learner import runtime', 'imports seed.learner.runtime (layer 12)'),
    ('def f():\n  from seed import api', 'imports seed.api (layer 8)'),
    ('from seed.actors import client', 'imports seed.actors.client (layer 12)'),
    ('from ..learner.launch import launch', 'imports seed.learner.launch (layer 12)'),
    ('from seed.transport import unix_socket', 'imports seed.transport.unix_socket (layer 5)'),
])
def test_a_climb_is_reported(source, expected):
  path = os.path.join(REPO, 'seed', 'transport', 'probe.py')
  layer = _layer_and_unit('seed.transport.probe')[0]
  assert [climb.split(' ', 1)[1] for climb in _climbs('seed.transport.probe', path, source)] \
      == [f'seed.transport.probe (layer {layer}) {expected}']


def test_a_downward_import_is_not():
  path = os.path.join(REPO, 'seed', 'inference', 'probe.py')
  assert list(_climbs('seed.inference.probe', path,
                      'from seed import types\nfrom seed.inference import batcher')) == []


def _folder_of(module):
  return next(package for package in sorted(PACKAGE_FOLDERS, key=len, reverse=True)
              if module == package or module.startswith(package + '.'))


def _absolute_imports(path):
  """(imported name, line) for each absolute import of seed in the file at `path`."""
  with open(path) as f:
    tree = ast.parse(f.read(), path)
  for node in ast.walk(tree):
    if isinstance(node, ast.Import):
      yield from ((alias.name, node.lineno) for alias in node.names)
    elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
      yield from ((f'{node.module}.{alias.name}', node.lineno) for alias in node.names)


def test_the_library_never_imports_the_processes_and_they_import_their_own_relatively():
  found = []
  for module, path in sorted(MODULES.items()):
    folder = _folder_of(module)
    with open(path) as f:
      edges = list(_imports(module, path, f.read()))
    for imported, line in edges:
      if imported is None:
        continue
      where = f'{os.path.relpath(path, REPO)}:{line}'
      if folder == 'seed' and _folder_of(imported) in PROCESSES:
        found.append(f'{where}: the library imports the process {imported}')
      elif folder in PROCESSES and _folder_of(imported) in PROCESSES and (
          _folder_of(imported) != folder):
        found.append(f'{where}: {folder} imports the other process, {imported}')
    if folder in PROCESSES:
      found += [f'{os.path.relpath(path, REPO)}:{line}: imports its sibling {name} by its '
                'installed name; import it relatively (from . import ...)'
                for name, line in _absolute_imports(path)
                if name == folder or name.startswith(folder + '.')]
  assert found == [], '\n'.join(found)


def _cycle(graph):
  """One import cycle of `graph` ({module: set of modules}) as a list, or None."""
  state = {}  # module -> 'open' while on the path, 'done' after

  def visit(module, path):
    state[module] = 'open'
    for imported in sorted(graph.get(module, ())):
      if state.get(imported) == 'open':
        return path[path.index(imported):] + [imported]
      if imported not in state:
        found = visit(imported, path + [imported])
        if found:
          return found
    state[module] = 'done'
    return None

  for module in sorted(graph):
    if module not in state:
      found = visit(module, [module])
      if found:
        return found
  return None


def test_no_module_reaches_itself_through_its_imports():
  graph = {}
  for module, path in MODULES.items():
    with open(path) as f:
      graph[module] = {imported for imported, _ in _imports(module, path, f.read())
                       if imported not in (None, module)}
  cycle = _cycle(graph)
  assert cycle is None, ' -> '.join(cycle)


def test_a_cycle_inside_one_unit_is_found():
  graph = {'seed.agents.a': {'seed.agents.b'}, 'seed.agents.b': {'seed.agents.c'},
           'seed.agents.c': {'seed.agents.a'}, 'seed.types': set()}
  assert _cycle(graph) == ['seed.agents.a', 'seed.agents.b', 'seed.agents.c', 'seed.agents.a']
  assert _cycle({'seed.agents.a': {'seed.types'}, 'seed.types': set()}) is None


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
