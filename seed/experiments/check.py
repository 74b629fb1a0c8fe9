"""Checking every experiment's gin config before the first one starts, as strictly as
its learner will: a typo in the fifth grid point must not wait for four runs to fail.
TensorFlow-free: what a learner binds in gin is its configs (seed.agents)."""
import inspect
import re
import tokenize

import gin

from seed import agents, config
from seed.experiments.layers import Resolved

# `Configurable.parameter =` at the start of a binding (scopes dropped).
_BINDING_KEY = re.compile(r'^\s*(?:[\w.]+/)?([\w.]+)\.(\w+)\s*=')
_GIN_ERRORS = (ValueError, SyntaxError, tokenize.TokenError, TypeError)


def check(name: str, resolved: Resolved) -> None:
  """Raises ValueError naming the experiment, what gin or a config refuses, and what it
  accepts; leaves gin's bindings cleared."""
  agents.register_gin_configurables(resolved.agent)
  # Unlocked: a learner's parse (parse_gin) finalizes gin's config; here it is parsed
  # once per experiment, piece by piece.
  with gin.unlock_config():
    gin.clear_config()
    try:
      _check(name, resolved)
    finally:
      gin.clear_config()


def _check(name: str, resolved: Resolved) -> None:
  from seed.envs import EnvConfig  # pylint: disable=g-import-not-at-top
  try:
    texts = []
    for path in resolved.gin_files:
      with open(path) as f:
        texts.append(f.read())
    config.check_renamed(texts, resolved.gin_files)
    for path in resolved.gin_files:
      gin.parse_config_file(path)
  except (OSError,) + _GIN_ERRORS as e:
    raise ValueError(f'experiment {name}: gin rejects its files '
                     f'{", ".join(resolved.gin_files)}: {_first_line(e)}') from None
  for binding in resolved.gin_bindings:
    try:
      config.check_renamed([binding], ['--gin_bindings'])
      gin.parse_config(binding)
    except _GIN_ERRORS as e:
      raise ValueError(f'experiment {name}: gin rejects the binding {binding!r}: '
                       f'{_first_line(e)}{_accepted(binding, resolved.agent, e)}') from None
  if 'env' in resolved.learner_flags:
    gin.bind_parameter('EnvConfig.name', resolved.learner_flags['env'])
  try:
    EnvConfig()
    agents.config_class(resolved.agent)()
  except ValueError as e:  # A value out of range, an unknown env: the config says which.
    raise ValueError(f'experiment {name}: {_first_line(e)}') from None


def _accepted(binding: str, agent: str, error: Exception) -> str:
  """What was expected: gin's value syntax, or what the binding's configurable takes."""
  if isinstance(error, (SyntaxError, tokenize.TokenError)):
    return ("; expected a gin value: a number, a 'string', a (tuple,), True, False or None")
  match = _BINDING_KEY.match(binding)
  config_class = agents.CONFIG_CLASSES[agent]
  if not match:
    return f'; expected Configurable.parameter = value, e.g. {config_class}.seed = 1'
  try:
    configurable = gin.get_configurable(match.group(1))
  except (KeyError, ValueError):
    return (f'; the learner\'s configurables include EnvConfig, {config_class} (agent {agent}) '
            'and ReplayInput')
  if config.renamed_binding(*match.groups()):
    return ''  # The error names the new binding.
  parameters = [p for p in inspect.signature(configurable).parameters if p != 'self']
  return f'; {match.group(1)} takes {", ".join(parameters)}'


def _first_line(error: BaseException) -> str:
  return (str(error).strip().splitlines() or [type(error).__name__])[0].rstrip('.')
