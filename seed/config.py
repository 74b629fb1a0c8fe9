"""Gin parsing and writing the run's configuration into its directory."""
import os
from typing import Optional, Sequence

import gin


def parse_gin(gin_files: Sequence[str], gin_bindings: Sequence[str],
              skip_unknown: bool = False, env_name: Optional[str] = None) -> None:
  """Parses gin files then bindings (bindings win), then `env_name` (--env) over both.

  The learner parses strictly, so a typo fails at start with gin's error.
  Actors pass skip_unknown=True: they import only the env modules, and the
  agent bindings in the same file are not theirs to apply.
  """
  for path in gin_files:
    if not os.path.exists(path):
      raise FileNotFoundError(f'gin file {path!r} does not exist')
  bindings = list(gin_bindings)
  if env_name:
    bindings.append(f'EnvConfig.name = {env_name!r}')
  gin.parse_config_files_and_bindings(list(gin_files), bindings, skip_unknown=skip_unknown)


def write_run_config(logdir: str, flags_text: str) -> None:
  """operative_config.gin (the values actually used) and flags.txt."""
  os.makedirs(logdir, exist_ok=True)
  _write_atomically(os.path.join(logdir, 'operative_config.gin'), gin.operative_config_str())
  _write_atomically(os.path.join(logdir, 'flags.txt'), flags_text)


def _write_atomically(path: str, text: str) -> None:
  tmp = f'{path}.tmp'
  with open(tmp, 'w') as f:
    f.write(text)
  os.replace(tmp, path)
