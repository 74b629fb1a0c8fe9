"""A peer's virtual environment under ~/.cache/seed-bench: made from exact pins, trusted
only when complete.

Each peer (Sample Factory, Stable-Baselines3 with RL Zoo) lives in a venv of its own,
never in seed's: they need PyTorch and other gymnasium/numpy versions than seed's, and
must never become seed's dependencies. `torch==2.13.0` is pinned in each because that
version has a CPU wheel on the project's machines; an unpinned torch pulls a multi-GB
CUDA build.

  python -m bench.peer_venv sb3         # install one (what `--install` of a bench does)
"""
import dataclasses
import os
import pathlib
import subprocess
import sys
import time
from typing import Tuple

ROOT = pathlib.Path.home() / '.cache' / 'seed-bench'
# Written last by `install`; holds the pins it installed, so a half-built venv or one
# built from other pins is rebuilt instead of trusted.
STAMP_NAME = 'seed-bench-installed.txt'


@dataclasses.dataclass(frozen=True)
class Venv:
  """A peer's venv: `name` for messages, `path`, and the exact `packages` it holds."""
  name: str
  path: pathlib.Path
  packages: Tuple[str, ...]

  @property
  def python(self) -> str:
    return str(self.path / 'bin' / 'python')

  def ready(self) -> bool:
    """Whether the venv exists and was completed from these pins."""
    stamp = self.path / STAMP_NAME
    return (os.path.exists(self.python) and stamp.exists()
            and stamp.read_text() == self._stamp_text())

  def install_hint(self) -> str:
    """How to make the venv: the command that runs `install`, and what it installs."""
    return (f'python -m bench.peer_venv {self.name}   (a venv at {self.path} with: '
            f'pip install {" ".join(self.packages)})')

  def install(self, log=print) -> str:
    """Makes the venv unless it is ready; its Python. RuntimeError naming the failed step."""
    if self.ready():
      return self.python
    start = time.monotonic()
    if not os.path.exists(self.python):
      log(f'[peer {self.name}] creating a venv at {self.path}')
      self.path.parent.mkdir(parents=True, exist_ok=True)
      _check_call([sys.executable, '-m', 'venv', str(self.path)], self.name, 'creating the venv')
    log(f'[peer {self.name}] installing {" ".join(self.packages)} (minutes the first time)')
    _check_call([self.python, '-m', 'pip', 'install', *self.packages], self.name,
                'installing the pinned packages')
    (self.path / STAMP_NAME).write_text(self._stamp_text())
    log(f'[peer {self.name}] venv ready in {time.monotonic() - start:.0f} s')
    return self.python

  def _stamp_text(self) -> str:
    return '\n'.join(self.packages) + '\n'


def _check_call(command, name: str, what: str) -> None:
  try:
    subprocess.run(command, check=True)
  except (OSError, subprocess.CalledProcessError) as error:
    raise RuntimeError(f'{name} venv: {what} failed ({error}). Command: '
                       f'{" ".join(command)}') from error


# Stable-Baselines3's PPO run by RL Zoo's own train script with its Atari hyperparameters.
# gymnasium and ale-py as RL Zoo 2.9 resolves them; opencv for SB3's AtariWrapper (its
# `[extra]` would pull the GUI build).
SB3 = Venv('sb3', ROOT / 'sb3-venv', (
    'torch==2.13.0',
    'stable-baselines3==2.9.2',
    'rl_zoo3==2.9.2',
    'gymnasium==1.4.0',
    'ale-py==0.10.1',
    'opencv-python-headless==5.1.0.95',
))
# PufferLib 3. Its only release on PyPI (3.0.0) is a source archive whose setup.py
# downloads raylib 5.5 from GitHub while it builds; where only package registries are
# reachable the build stops there ("Name or service not known").
PUFFERLIB = Venv('pufferlib', ROOT / 'pufferlib-venv', (
    'torch==2.13.0',
    'pufferlib==3.0.0',
))


def main(argv=None) -> int:
  from bench import peer_sample_factory  # pylint: disable=import-outside-toplevel
  venvs = {venv.name: venv for venv in (peer_sample_factory.VENV, SB3, PUFFERLIB)}
  names = (argv if argv is not None else sys.argv[1:]) or list(venvs)
  unknown = [n for n in names if n not in venvs]
  if unknown:
    print(f'peer_venv: unknown peer {unknown[0]!r}; known: {", ".join(venvs)}', file=sys.stderr)
    return 2
  failed = 0
  for name in names:
    try:
      print(venvs[name].install())
    except RuntimeError as error:
      print(error, file=sys.stderr)
      failed += 1
  return 1 if failed else 0


if __name__ == '__main__':
  sys.exit(main())
