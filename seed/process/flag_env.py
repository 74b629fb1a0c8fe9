"""Flags from environment variables: SEED_<FLAG> sets the default of --<flag>.

Images and cluster manifests configure a process this way without rebuilding
and without long command lines; a flag given on the command line still wins.
Multi-value flags (--gin_file, --gin_bindings) take one value per line.
"""
import logging
import os
import sys
from typing import Any, Callable, Dict, Iterable, Mapping, Optional, Sequence

from absl import app
from absl import flags

from seed import settings
from seed.process import cpu_affinity, malloc_tuning
from seed.settings import variable_name

_DEFINE = {'string': flags.DEFINE_string, 'integer': flags.DEFINE_integer,
           'float': flags.DEFINE_float, 'bool': flags.DEFINE_bool,
           'multi_string': flags.DEFINE_multi_string}


def define(schema: Sequence[settings.Setting], module_name: str,
           flag_values: flags.FlagValues = flags.FLAGS) -> None:
  """Defines one absl flag per setting, as key flags of `module_name` (its --help)."""
  if module_name == '__main__':
    module_name = sys.argv[0]  # absl's name for the main module, as its own DEFINEs use.
  for setting in schema:
    if setting.kind == 'enum':
      flags.DEFINE_enum(setting.name, setting.default, setting.choices, setting.help,
                        flag_values=flag_values, module_name=module_name)
    else:
      default = list(setting.default) if setting.kind == 'multi_string' else setting.default
      _DEFINE[setting.kind](setting.name, default, setting.help, flag_values=flag_values,
                            module_name=module_name)


def values(schema: Sequence[settings.Setting],
           flag_values: flags.FlagValues = flags.FLAGS) -> Dict[str, Any]:
  """{name: parsed value} of `schema`'s flags."""
  return {setting.name: flag_values[setting.name].value for setting in schema}


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


def run_process(schema: Sequence[settings.Setting], module_name: str,
                launch: Callable[[Dict[str, Any], str], int]) -> None:
  """The main of a process whose flags `define(schema, module_name)` made (the learner's,
  the actor's): its flags, SEED_* variables too; then, before anything starts a thread
  (the threads started later keep to these cores), --cpu_cores and the allocator's
  tuning; INFO logging; and `launch(flag values, absl's flags text)`, whose return is the
  exit code."""
  def main(argv):
    del argv
    cpu_affinity.pin_or_exit(flags.FLAGS.cpu_cores)
    malloc_tuning.keep_large_buffers()
    logging.getLogger().setLevel(logging.INFO)
    sys.exit(launch(values(schema), flags.FLAGS.flags_into_string()))

  run(main, module_name)
