"""Gin parsing, and the run's configuration written into (and read back from) its directory."""
import os
import re
import tokenize
from typing import Dict, Iterable, List, Optional, Sequence

import gin
import gin.config
import gin.config_parser

from seed.run_dir.layout import RunDir

# Agent hyperparameters moved from the agent classes to their config dataclasses
# (issue 12), some under new names. Old bindings fail with the new name.
_CONFIG_OF_AGENT = {'VTraceAgent': 'VTraceConfig', 'PPOAgent': 'PPOConfig',
                    'R2D2Agent': 'R2D2Config', 'SACAgent': 'SACConfig',
                    'DDPGAgent': 'DDPGConfig'}
_RENAMED_FIELDS = {
    'VTraceConfig': {'batch_size': 'batch_unrolls'},
    'PPOConfig': {'batch_size': 'batch_unrolls'},
    'R2D2Config': {'burn_in': 'burn_in_steps', 'unroll_length': 'trained_steps',
                   'batch_size': 'batch_sequences'},
    'SACConfig': {'minibatch_size': 'minibatch_transitions'},
    'DDPGConfig': {'minibatch_size': 'minibatch_transitions'},
}
# `Name.param =` at the start of a binding line (gin's scopes and macros ignored).
_BINDING = re.compile(r'^\s*(?:[\w.]+/)?(\w+)\.(\w+)\s*=', re.MULTILINE)


def renamed_binding(configurable: str, parameter: str) -> Optional[str]:
  """The binding that replaced `configurable.parameter`, or None if it is current."""
  config = _CONFIG_OF_AGENT.get(configurable)
  renames = _RENAMED_FIELDS.get(config or configurable, {})
  if config is None and parameter not in renames:
    return None
  return f'{config or configurable}.{renames.get(parameter, parameter)}'


def check_renamed(texts: Iterable[str], where: Iterable[str]) -> None:
  """Raises ValueError for the first binding in `texts` that uses a replaced name."""
  for text, origin in zip(texts, where):
    for match in _BINDING.finditer(text):
      new = renamed_binding(*match.groups())
      if new is not None:
        old = '.'.join(match.groups())
        raise ValueError(f'{origin}: {old} was renamed; bind {new} instead (agent '
                         'hyperparameters live in the agent\'s config dataclass).')


def gin_root() -> str:
  """The folder of the configs gin/ENV/AGENT.gin: the repository's gin/ beside the
  package, or the copy an installed wheel carries inside it (seed/gin, setup.py)."""
  package = os.path.dirname(os.path.abspath(__file__))
  for root in (os.path.join(os.path.dirname(package), 'gin'), os.path.join(package, 'gin')):
    if os.path.isdir(root):
      return root
  raise FileNotFoundError(f'no gin/ folder beside {package} or inside it')


def resolve_gin_file(path: str) -> str:
  """`path` if it exists; else a `gin/...` path found under gin_root(), so the configs
  are found from any folder where seed is installed; FileNotFoundError otherwise."""
  if os.path.exists(path):
    return path
  parts = os.path.normpath(path).split(os.sep)
  if parts[0] == 'gin' and len(parts) > 1:
    installed = os.path.join(gin_root(), *parts[1:])
    if os.path.exists(installed):
      return installed
  raise FileNotFoundError(f'gin file {path!r} does not exist; expected a path to one, or '
                          'gin/ENV/AGENT.gin of the configs seed ships (e.g. '
                          'gin/toy/vtrace.gin)')


# What gin raises for a config it cannot take, besides ValueError (an unknown
# configurable or parameter): its parser's SyntaxError, the tokenizer's TokenError, and
# what a value's evaluation or an `import` line raise.
GIN_ERRORS = (ValueError, SyntaxError, tokenize.TokenError, TypeError, KeyError,
              AttributeError, ImportError)
_VALUE_SYNTAX = ("expected Configurable.parameter = value, the value a number, a 'string', "
                 'a (tuple,), a [list], True, False, None or a @reference')


def _first_line(error: BaseException) -> str:
  # TokenError's args are (message, position): its str() is the tuple's.
  text = str(error.args[0]) if isinstance(error, tokenize.TokenError) and error.args else str(error)
  return (text.strip().splitlines() or [type(error).__name__])[0].rstrip('.')


def check_syntax(gin_files: Sequence[str], gin_bindings: Sequence[str]) -> List[str]:
  """The gin files resolved (resolve_gin_file), after checking that they and the bindings
  parse as gin, without importing what they bind (no TensorFlow): ValueError naming the
  file or binding and what gin accepts. FileNotFoundError for a file that is missing."""
  resolved = [resolve_gin_file(path) for path in gin_files]
  sources = [(path, _read(path)) for path in resolved]
  sources += [(f'--gin_bindings={binding!r}', binding) for binding in gin_bindings]
  for origin, text in sources:
    try:
      for _ in gin.config_parser.ConfigParser(text, gin.config.ParserDelegate(
          skip_unknown=True)):
        pass
    except (SyntaxError, tokenize.TokenError) as e:
      raise ValueError(f'{origin}: gin cannot parse it ({_first_line(e)}); '
                       f'{_VALUE_SYNTAX}') from None
  return resolved


def _read(path: str) -> str:
  with open(path) as f:
    return f.read()


def parse_gin(gin_files: Sequence[str], gin_bindings: Sequence[str],
              skip_unknown: bool = False, env_name: Optional[str] = None) -> None:
  """Parses gin files then bindings (bindings win), then `env_name` (--env) over both.

  The learner parses strictly, so a typo fails at start with gin's error, as one line
  in a ValueError whatever gin raised. Actors pass skip_unknown=True: they import only
  the env modules, and the agent bindings in the same file are not theirs to apply.
  """
  gin_files = check_syntax(gin_files, gin_bindings)
  bindings = list(gin_bindings)
  texts = [_read(path) for path in gin_files]
  check_renamed(texts + bindings, list(gin_files) + ['--gin_bindings'] * len(bindings))
  if env_name:
    bindings.append(f'EnvConfig.name = {env_name!r}')
  try:
    gin.parse_config_files_and_bindings(list(gin_files), bindings, skip_unknown=skip_unknown)
  except GIN_ERRORS as e:
    raise ValueError(f'gin refuses the config ({", ".join(gin_files) or "no file"}; '
                     f'--gin_bindings {bindings}): {_first_line(e)}') from None


def read_saved_flags(logdir: str, bool_names: Iterable[str] = ()) -> Dict[str, List[str]]:
  """The flags in <logdir>/flags.txt as {name: [values, in order]}; {} if there is none.

  absl writes one `--name=value` a line (a multi-valued flag once per value) and
  booleans as `--name` or `--noname`: those are read as 'true' or 'false' under
  `name`, where `name` is in `bool_names` (a bare `--noX` could be X's or noX's).
  """
  path = RunDir(logdir).flags_txt
  if not os.path.exists(path):
    return {}
  bool_names = set(bool_names)
  flags: Dict[str, List[str]] = {}
  with open(path) as f:
    for line in f:
      line = line.strip()
      if not line.startswith('--'):
        continue
      name, equals, value = line[2:].partition('=')
      if not equals:
        if name.startswith('no') and name[2:] in bool_names:
          name, value = name[2:], 'false'
        else:
          value = 'true'
      flags.setdefault(name, []).append(value)
  return flags


def write_run_config(logdir: str, flags_text: str) -> None:
  """operative_config.gin (the values actually used) and flags.txt."""
  os.makedirs(logdir, exist_ok=True)
  _write_atomically(RunDir(logdir).operative_config, gin.operative_config_str())
  _write_atomically(RunDir(logdir).flags_txt, flags_text)


def _write_atomically(path: str, text: str) -> None:
  tmp = f'{path}.tmp'
  with open(tmp, 'w') as f:
    f.write(text)
  os.replace(tmp, path)
