"""Which experiments to run: a grid of gin bindings × seeds, from the command line or
from a JSON file, each named readably after its grid point and seed. TensorFlow-free.

A grid axis is `Configurable.parameter=v1,v2,...` (gin value text; commas inside
brackets or quotes do not split). An experiments file is a JSON list of entries:

  [{"name": "catch", "gin_file": "gin/toy/vtrace.gin",
    "gin_bindings": ["EnvConfig.name = 'Catch'"],
    "grid": {"VTraceConfig.entropy_cost": [0.01, 0.001]}, "seeds": [0, 1],
    "learner_flags": {"max_env_frames": 20000}, "num_actors": 2, "num_envs": 4}]

where every key is optional, grid values are JSON values (a string is a gin string)
and gin files are relative to the experiments file.
"""
import dataclasses
import itertools
import json
import re
from typing import Any, List, Optional, Sequence, Tuple

from seed.experiments.layers import Layer

ENTRY_KEYS = ('name', 'agent', 'gin_file', 'gin_bindings', 'grid', 'seeds', 'learner_flags',
              'num_actors', 'num_envs')
_OPEN, _CLOSE = '([{', ')]}'


@dataclasses.dataclass(frozen=True)
class Experiment:
  """One run: its directory name under the root, and what the runner sets for it."""
  name: str
  overrides: Layer


@dataclasses.dataclass(frozen=True)
class Spec:
  """Experiments before expansion: a base name, fixed settings, grid axes and seeds."""
  name: Optional[str] = None
  overrides: Layer = Layer()
  grid: Tuple[Tuple[str, Tuple[str, ...]], ...] = ()  # (Configurable.parameter, gin values)
  seeds: Tuple[int, ...] = ()


def split_values(text: str) -> List[str]:
  """'0.01,(64, 64),'a,b'' -> ['0.01', '(64, 64)', "'a,b'"]: commas at the top level."""
  values, depth, quote, start = [], 0, None, 0
  for i, char in enumerate(text):
    if quote:
      quote = None if char == quote else quote
    elif char in '\'"':
      quote = char
    elif char in _OPEN:
      depth += 1
    elif char in _CLOSE:
      depth -= 1
    elif char == ',' and depth == 0:
      values.append(text[start:i].strip())
      start = i + 1
  values.append(text[start:].strip())
  return values


def parse_grid_axis(text: str) -> Tuple[str, Tuple[str, ...]]:
  """'VTraceConfig.entropy_cost=0.01,0.001' -> ('VTraceConfig.entropy_cost', ('0.01', '0.001'))."""
  key, equals, values = text.partition('=')
  key = key.strip()
  if not equals or not re.fullmatch(r'[\w./]+\.\w+', key):
    raise ValueError(f'--grid {text!r}: expected Configurable.parameter=v1,v2,... (e.g. '
                     'VTraceConfig.entropy_cost=0.01,0.001)')
  parsed = tuple(split_values(values))
  if any(not v for v in parsed):
    raise ValueError(f'--grid {text!r}: an empty value; expected Configurable.parameter=v1,v2,...')
  return key, parsed


def parse_seeds(text: str) -> Tuple[int, ...]:
  """'0,1,2' -> (0, 1, 2)."""
  try:
    seeds = tuple(int(part) for part in text.split(','))
  except ValueError:
    raise ValueError(f'--seeds {text!r}: expected integers >= 0 separated by commas, '
                     'e.g. 0,1,2') from None
  if any(seed < 0 for seed in seeds) or len(set(seeds)) != len(seeds):
    raise ValueError(f'--seeds {text!r}: expected distinct integers >= 0')
  return seeds


def expand(specs: Sequence[Spec]) -> List[Experiment]:
  """Every grid point × seed of every spec, named; raises ValueError on a repeated name."""
  experiments = []
  for index, spec in enumerate(specs):
    keys = [key for key, _ in spec.grid]
    labels = [_short_key(key, keys) for key in keys]
    points = itertools.product(*(values for _, values in spec.grid))
    for point, seed in itertools.product(points, spec.seeds or (None,)):
      parts = [f'{label}={_name_part(value)}' for label, value in zip(labels, point)]
      if seed is not None:
        parts.append(f'seed={seed}')
      name = '__'.join(([spec.name] if spec.name else []) + parts) or f'experiment{index}'
      overrides = dataclasses.replace(
          spec.overrides,
          gin_bindings=spec.overrides.gin_bindings + tuple(
              f'{key} = {value}' for key, value in zip(keys, point)),
          seed=seed if seed is not None else spec.overrides.seed)
      experiments.append(Experiment(name, overrides))
  names = [e.name for e in experiments]
  repeated = sorted({n for n in names if names.count(n) > 1})
  if repeated:
    raise ValueError(f'two experiments would share the run directory {repeated[0]!r}; give '
                     'their entries different names')
  return experiments


def load_file(path: str) -> List[Spec]:
  """The specs of a JSON experiments file (see the module doc)."""
  with open(path) as f:
    try:
      entries = json.load(f)
    except json.JSONDecodeError as e:
      raise ValueError(f'{path}: not JSON ({e})') from None
  if not isinstance(entries, list) or not entries:
    raise ValueError(f'{path}: expected a non-empty JSON list of experiment entries')
  return [_spec_of(entry, f'{path} entry {i}') for i, entry in enumerate(entries)]


def _spec_of(entry: Any, where: str) -> Spec:
  if not isinstance(entry, dict):
    raise ValueError(f'{where}: expected an object, got {entry!r}')
  unknown = sorted(set(entry) - set(ENTRY_KEYS))
  if unknown:
    raise ValueError(f'{where}: unknown key {unknown[0]!r}; accepted: {", ".join(ENTRY_KEYS)}')
  grid = entry.get('grid', {})
  if not isinstance(grid, dict) or not all(isinstance(v, list) and v for v in grid.values()):
    raise ValueError(f'{where}: grid must map Configurable.parameter to a non-empty list of '
                     f'values, got {grid!r}')
  name = entry.get('name')
  if name is not None and not re.fullmatch(r'[\w.=+-]+', str(name)):
    raise ValueError(f'{where}: name {name!r}; expected letters, digits and . _ = + -')
  try:
    overrides = Layer(agent=entry.get('agent'), gin_files=_strings(entry.get('gin_file', [])),
                      gin_bindings=_strings(entry.get('gin_bindings', [])),
                      learner_flags={k: str(v) for k, v in entry.get('learner_flags', {}).items()},
                      num_actors=entry.get('num_actors'), num_envs=entry.get('num_envs'))
    seeds = entry.get('seeds', [])
    if not isinstance(seeds, list):
      raise ValueError(f'seeds must be a list of integers, got {seeds!r}')
    seeds = parse_seeds(','.join(str(s) for s in seeds)) if seeds else ()
  except (ValueError, AttributeError) as e:
    raise ValueError(f'{where}: {e}') from None
  return Spec(name=name, overrides=overrides,
              grid=tuple((key, tuple(_gin_literal(v) for v in values))
                         for key, values in grid.items()),
              seeds=seeds)


def _strings(value) -> Tuple[str, ...]:
  return (value,) if isinstance(value, str) else tuple(str(v) for v in value)


def _gin_literal(value) -> str:
  """A JSON value as gin text: strings quoted, lists as tuples."""
  if isinstance(value, list):
    return repr(tuple(value))
  return repr(value) if isinstance(value, (str, bool)) or value is None else str(value)


def _short_key(key: str, keys: Sequence[str]) -> str:
  """The parameter name alone, unless another axis has the same one."""
  parameter = key.rsplit('.', 1)[1]
  same = [k for k in keys if k.rsplit('.', 1)[1] == parameter]
  return parameter if len(same) == 1 else _name_part(key)


def _name_part(value: str) -> str:
  """A value as part of a directory name: quotes dropped, other signs as '_'."""
  cleaned = re.sub(r'[^\w.+-]+', '_', value.replace("'", '').replace('"', ''))
  return cleaned.strip('_') or '_'


def command_line_spec(grid: Sequence[str], seeds: Optional[str]) -> Spec:
  """The one spec --grid and --seeds describe."""
  return Spec(grid=tuple(parse_grid_axis(axis) for axis in grid),
              seeds=parse_seeds(seeds) if seeds else ())
