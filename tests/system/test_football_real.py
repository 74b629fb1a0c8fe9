"""Football with the real gfootball, in the venv scripts/install_football.sh builds
(.venv-football, or SEED_FOOTBALL_VENV): the spec the learner knows matches the real
env's, and a learner (this venv, no gfootball) trains with a Football actor."""
import fcntl
import json
import os
import subprocess
import time

import pytest

from tests.processes import REPO, Run, _env

# An install in progress may take its whole build (~11 min on 2 cores) before a test starts.
INSTALL_WAIT_S = 1500
pytestmark = pytest.mark.timeout(INSTALL_WAIT_S + 600)

FOOTBALL_VENV = os.environ.get('SEED_FOOTBALL_VENV') or os.path.join(REPO, '.venv-football')
FOOTBALL_PYTHON = os.path.join(FOOTBALL_VENV, 'bin', 'python')


def _wait_for_an_install_in_progress(lock_path: str, wait_s: float) -> None:
  """Returns once no scripts/install_football.sh holds `lock_path` (CI builds Football
  beside the other tests), or after `wait_s`."""
  if not os.path.exists(lock_path):
    return
  deadline = time.monotonic() + wait_s
  with open(lock_path, encoding='utf-8') as lock:
    while True:
      try:
        fcntl.flock(lock, fcntl.LOCK_SH | fcntl.LOCK_NB)
        fcntl.flock(lock, fcntl.LOCK_UN)
        return
      except BlockingIOError:
        if time.monotonic() > deadline:
          return
        time.sleep(2.0)


@pytest.fixture(scope='module')
def football_python():
  _wait_for_an_install_in_progress(FOOTBALL_VENV + '.lock', INSTALL_WAIT_S)
  if not os.path.exists(os.path.join(FOOTBALL_VENV, '.football-ready')):
    pytest.skip(f'no finished Football install in {FOOTBALL_VENV}: run '
                'scripts/install_football.sh')
  return FOOTBALL_PYTHON


def test_the_real_env_matches_the_spec_the_learner_knows(football_python):
  code = '''
import json
import numpy as np
import seed.envs
for scenario, options in [('academy_empty_goal_close', {}),
                          ('11_vs_11_easy_stochastic', {'rewards': 'scoring,checkpoints'})]:
  name = 'football:' + scenario
  env = seed.envs.make_env(name, seed=1, **options)
  real = seed.envs.env_spec(env)
  assert real == seed.envs.EnvConfig(name=name, options=options).spec(), real
  observation, _ = env.reset()
  assert observation.shape == (16, 72, 96) and set(np.unique(observation)) <= {0, 255}
  steps, done = 0, False
  while not done and steps < 400:
    _, reward, done, truncated, _ = env.step(12 if scenario.startswith('academy') else 0)
    steps += 1
  env.close()
  print(json.dumps({'scenario': scenario, 'steps': steps, 'done': done}))
'''
  done = subprocess.run([football_python, '-c', code], capture_output=True, text=True,
                        env=_env(), cwd=REPO, timeout=300)
  assert done.returncode == 0, done.stderr[-3000:]
  results = [json.loads(line) for line in done.stdout.splitlines() if line.startswith('{')]
  assert [r['scenario'] for r in results] == ['academy_empty_goal_close',
                                              '11_vs_11_easy_stochastic']
  assert results[0]['done']  # Shooting at an empty goal ends the episode.


def test_a_learner_trains_with_football_actors(football_python, tmp_path):
  with Run(tmp_path / 'run', 'gin/football/vtrace.gin',
           learner_flags=['--max_env_frames=3000']) as run:
    run.start_learner()
    run.start_actors(1, 4, python=football_python)
    assert run.wait_learner(timeout_s=500) == 0, run.learner_log()
    episodes = run.episodes()
  assert episodes, 'no Football episode ended'
