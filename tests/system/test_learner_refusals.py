"""Settings the learner refuses, from its own main (how Kubernetes, Slurm, Vertex AI and
seed-job start it) and from `seed train`: one line naming the value and what is accepted,
exit 2, no traceback, before TensorFlow loads and before the run directory is made.
TensorFlow is a stand-in that ends the process if imported (tests/fakes/no_tensorflow)."""
import os
import subprocess
import sys

import pytest

from tests.processes import REPO, _env

pytestmark = pytest.mark.timeout(300)

NO_TENSORFLOW = os.path.join(REPO, 'tests', 'fakes', 'no_tensorflow')

CASES = {
    'unknown-agent': (['--agent=impala'], "--agent='impala'; expected one of acer, "),
    'malformed-binding': (['--gin_bindings=VTraceConfig.learning_rate = ('],
                          "--gin_bindings='VTraceConfig.learning_rate = (': gin cannot parse "
                          'it (EOF in multi-line statement); expected Configurable.parameter '
                          '= value'),
    'unparsable-value': (['--gin_bindings=VTraceConfig.learning_rate = 1 2'],
                         "--gin_bindings='VTraceConfig.learning_rate = 1 2': gin cannot parse "
                         'it (Expected newline'),
    'missing-gin-file': (['--gin_file=gin/toy/vtrce.gin'],
                         "gin file 'gin/toy/vtrce.gin' does not exist; expected a path to one"),
}


def without_tensorflow():
  env = _env()
  env['PYTHONPATH'] = NO_TENSORFLOW + os.pathsep + env['PYTHONPATH']
  return env


@pytest.mark.parametrize('case', sorted(CASES))
def test_the_learners_main_refuses_in_one_line_before_tensorflow(tmp_path, case):
  flags, message = CASES[case]
  logdir = tmp_path / 'run'
  gin = [] if any(f.startswith('--gin_file') for f in flags) else ['--gin_file=gin/toy/vtrace.gin']
  done = subprocess.run([sys.executable, '-m', 'seed.learner.main', f'--logdir={logdir}',
                         *gin, *flags], capture_output=True, text=True, env=without_tensorflow(),
                        cwd=REPO, timeout=120)
  output = done.stdout + done.stderr
  assert done.returncode == 2, output
  assert message in output, output
  assert 'Traceback' not in output and 'tensorflow was imported' not in output, output
  assert [line for line in output.splitlines() if line.strip()] == [
      line for line in output.splitlines() if message in line], output  # one line
  assert not logdir.exists()  # nothing made for a start that cannot go on


def test_a_tuning_trial_whose_metric_file_cannot_be_written_is_refused_at_start(tmp_path):
  # It trained to its end and reported nothing: a sweep failing in silence.
  logdir = tmp_path / 'run'
  done = subprocess.run([sys.executable, '-m', 'seed.learner.main', f'--logdir={logdir}',
                         '--gin_file=gin/toy/vtrace.gin', '--hypertune_metric=episode_return'],
                        capture_output=True, text=True, cwd=REPO, timeout=120,
                        env=dict(without_tensorflow(),
                                 CLOUD_ML_HP_METRIC_FILE='/proc/seed-no-such/output.metrics'))
  output = done.stdout + done.stderr
  assert done.returncode == 2, output
  assert ("--hypertune_metric=episode_return: cannot write the tuning service's metric file "
          '/proc/seed-no-such/output.metrics') in output, output
  assert 'this trial would report nothing' in output and 'Traceback' not in output, output
  assert not logdir.exists()


def test_the_actors_main_refuses_a_malformed_binding_too():
  flags, message = CASES['malformed-binding']
  done = subprocess.run([sys.executable, '-m', 'seed.actors.main', '--env=Catch',
                         '--server_address=localhost:1', '--gin_file=gin/toy/vtrace.gin',
                         *flags], capture_output=True, text=True, env=without_tensorflow(),
                        cwd=REPO, timeout=120)
  output = done.stdout + done.stderr
  assert done.returncode == 2, output
  assert message in output and 'Traceback' not in output, output


def test_seed_train_passes_the_learners_refusal_on(tmp_path):
  done = subprocess.run([sys.executable, '-m', 'seed', 'train', 'toy', 'vtrace', '1', '1',
                         f'--logdir={tmp_path / "run"}', '--gin_bindings=VTraceConfig.x = ('],
                        capture_output=True, text=True,
                        env=dict(without_tensorflow(), SEED_TENSORBOARD_PORT='0'), cwd=REPO,
                        timeout=120)
  output = done.stdout + done.stderr
  assert done.returncode == 2, output
  assert "--gin_bindings='VTraceConfig.x = (': gin cannot parse it" in output, output
  assert 'Traceback' not in output, output
