"""seed from a wheel, outside the repository: `pip install <wheel>[learner]` into a fresh
venv, then `seed train toy vtrace 2 4` from an empty folder trains and checkpoints with
the configs the wheel carries (seed/gin), not the repository's.

No network: the fresh venv sees the test venv's installed dependencies through a .pth
line (and not its editable seed, whose finder only a site directory's own .pth files
load), and pip installs with --no-index, so it must find every requirement satisfied.
"""
import os
import shutil
import subprocess
import sys
import sysconfig

import pytest

from tests.processes import REPO
from tests.server_harness import free_port

pytestmark = pytest.mark.timeout(600)

# What the wheel is built from: the repository's files, not its environments or runs.
_NOT_SOURCE = shutil.ignore_patterns('.git', '.venv*', 'runs', 'build', '*.egg-info',
                                     '__pycache__', '.pytest_cache')


def _run(command, **kwargs):
  result = subprocess.run(command, capture_output=True, text=True, **kwargs)
  assert result.returncode == 0, f'{command}\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}'
  return result


def test_the_wheel_trains_from_any_folder(tmp_path):
  source = tmp_path / 'source'
  shutil.copytree(REPO, source, ignore=_NOT_SOURCE)
  _run([sys.executable, '-m', 'pip', 'wheel', '--no-deps', '--no-build-isolation', '--quiet',
        '-w', str(tmp_path / 'dist'), str(source)])
  [wheel] = os.listdir(tmp_path / 'dist')

  venv = tmp_path / 'venv'
  _run([sys.executable, '-m', 'venv', str(venv)])
  python = str(venv / 'bin' / 'python')
  site = _run([python, '-c', 'import sysconfig; print(sysconfig.get_paths()["purelib"])'])
  with open(os.path.join(site.stdout.strip(), 'dependencies.pth'), 'w') as f:
    f.write(sysconfig.get_paths()['purelib'] + '\n')
  _run([python, '-m', 'pip', 'install', '--no-index', '--quiet',
        f'{tmp_path / "dist" / wheel}[learner]'])

  folder = tmp_path / 'anywhere'
  folder.mkdir()
  where = _run([python, '-c', 'import seed, seed.config; print(seed.__file__); '
                'print(seed.config.gin_root())'], cwd=folder).stdout.split()
  assert all(path.startswith(str(venv)) for path in where), where

  env = {key: value for key, value in os.environ.items() if key != 'PYTHONPATH'}
  env.update(SEED_PORT=str(free_port()), SEED_TENSORBOARD_PORT='0',
             PATH=f'{venv / "bin"}{os.pathsep}{env["PATH"]}')
  trained = subprocess.run([str(venv / 'bin' / 'seed'), 'train', 'toy', 'vtrace', '2', '4',
                            '--max_env_frames=3000', '--checkpoint_interval_s=1'],
                           capture_output=True, text=True, cwd=folder, env=env, timeout=420)
  output = trained.stdout + trained.stderr
  assert trained.returncode == 0, output[-4000:]
  run = folder / 'runs' / 'toy_vtrace'
  assert (run / 'ckpt' / 'checkpoint').exists(), output[-4000:]
  assert 'seed/gin/toy/vtrace.gin' in (run / 'flags.txt').read_text()
  assert 'checkpoint written' in output
