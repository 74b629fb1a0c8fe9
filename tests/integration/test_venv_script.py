"""scripts/venv.sh's ensure_venv against a stand-in venv whose pip records its calls: which
extras it installs, when it reinstalls, and the switch to a GPU learner
(SEED_LEARNER_EXTRA=learner-gpu), which the venv remembers."""
import os
import subprocess

import pytest

from tests.processes import REPO

PIP = '''#!/bin/sh
echo "$@" >> "$(dirname "$0")/../pip.log"
if [ "$1" = show ]; then grep -qx "$3" "$(dirname "$0")/../installed"; exit $?; fi
'''


@pytest.fixture
def venv(tmp_path):
  """A venv that exists (bin/python, bin/activate) with tensorflow-cpu installed."""
  bin_dir = tmp_path / 'venv' / 'bin'
  bin_dir.mkdir(parents=True)
  for name, text in (('python', '#!/bin/sh\n'), ('pip', PIP), ('activate', '')):
    (bin_dir / name).write_text(text)
    (bin_dir / name).chmod(0o755)
  (tmp_path / 'venv' / 'installed').write_text('tensorflow-cpu\n')
  return tmp_path / 'venv'


def _ensure(venv, extra=None):
  env = dict(os.environ, SEED_VENV=str(venv))
  env.pop('SEED_LEARNER_EXTRA', None)
  if extra is not None:
    env['SEED_LEARNER_EXTRA'] = extra
  done = subprocess.run(['bash', '-c', 'source scripts/venv.sh && ensure_venv'], cwd=REPO,
                        env=env, capture_output=True, text=True, timeout=60)
  calls = (venv / 'pip.log').read_text().splitlines() if (venv / 'pip.log').exists() else []
  (venv / 'pip.log').unlink(missing_ok=True)
  return done, calls


def test_the_gpu_learner_replaces_tensorflow_cpu_and_stays(venv):
  done, calls = _ensure(venv)
  assert done.returncode == 0, done.stderr
  assert calls == ['show --quiet tensorflow',
                   f'install --quiet -e {REPO}[learner,test,plots,video,envpool]']
  assert _ensure(venv)[1] == []  # Installed: nothing to do.
  done, calls = _ensure(venv, 'learner-gpu')
  assert done.returncode == 0, done.stderr
  assert calls == ['show --quiet tensorflow-cpu', 'uninstall --quiet -y tensorflow-cpu',
                   f'install --quiet -e {REPO}[learner-gpu,test,plots,video,envpool]']
  assert _ensure(venv)[1] == []  # Remembered: still the GPU learner, no reinstall.
  (venv / 'installed').write_text('tensorflow\n')
  for stamp in venv.glob('.seed-installed-*'):  # setup.py changed: it installs again...
    stamp.unlink()
  assert _ensure(venv)[1] == [  # ... the GPU learner it remembers.
      'show --quiet tensorflow-cpu',
      f'install --quiet -e {REPO}[learner-gpu,test,plots,video,envpool]']
  done, calls = _ensure(venv, 'learner')  # Back to the CPU learner.
  assert calls == ['show --quiet tensorflow', 'uninstall --quiet -y tensorflow',
                   f'install --quiet -e {REPO}[learner,test,plots,video,envpool]']


def test_an_unknown_learner_extra_is_refused_with_what_is_accepted(venv):
  done, calls = _ensure(venv, 'learner-tpu')
  assert done.returncode == 2 and calls == []
  assert "SEED_LEARNER_EXTRA='learner-tpu'; accepted: learner (CPU), learner-gpu" in done.stderr
