"""Flags from environment variables: SEED_<FLAG> sets the default of --<flag>.

Images and cluster manifests configure a process this way without rebuilding
and without long command lines; a flag given on the command line still wins.
Multi-value flags (--gin_file, --gin_bindings) take one value per line.
"""
import os
import sys
from typing import Callable, Iterable, Mapping, Optional

from absl import app
from absl import flags

PREFIX = 'SEED_'


def variable_name(flag_name: str) -> str:
  return PREFIX + flag_name.upper()


def apply_environment(flag_values: flags.FlagValues, flag_names: Iterable[str],
                      environ: Optional[Mapping[str, str]] = None) -> None:
  """Sets the defaults of `flag_names` from their SEED_* variables, before parsing.

  Raises ValueError naming the variable when its value does not parse.
  """
  environ = os.environ if environ is None else environ
  for name in flag_names:
    variable = variable_name(name)
    if variable not in environ:
      continue
    raw = environ[variable]
    flag = flag_values[name]
    value = multi_values(raw) if isinstance(flag, flags.MultiFlag) else raw
    try:
      flag_values.set_default(name, value)
    except (flags.IllegalFlagValueError, ValueError) as e:
      raise ValueError(f'{variable}={raw!r} is not a valid value for --{name}: {e}') from None


def multi_values(raw: str) -> list:
  """A multi-value flag's values from its variable: one a line, blank lines skipped."""
  return [line.strip() for line in raw.splitlines() if line.strip()]


def run(main: Callable, module_name: str, flags_parser: Optional[Callable] = None) -> None:
  """app.run(main) with the flags of entry-point module `module_name` read from SEED_*.

  flags_parser: as app.run's (argv -> what main gets), for an entry point that takes
  arguments besides its flags.
  """
  flag_values = flags.FLAGS
  key_flags = flag_values.get_key_flags_for_module(sys.modules[module_name])
  names = [flag.name for flag in key_flags]
  # --help lists the key flags of the module named by argv[0]; for a console
  # script (seed-learner) that is the script, not the module defining the flags.
  for flag in key_flags:
    flag_values.register_key_flag_for_module(sys.argv[0], flag)
  try:
    apply_environment(flag_values, names)
  except ValueError as e:
    print(f'error: {e}', file=sys.stderr)
    sys.exit(2)
  if flags_parser is None:
    app.run(main)
  else:
    app.run(main, flags_parser=flags_parser)


def require(value, flag_name: str, what: str) -> None:
  """A setting without which the process cannot start: say which flag and variable."""
  if value in (None, ''):
    raise ValueError(f'{what} is not set: pass --{flag_name} or set '
                     f'{variable_name(flag_name)}')
