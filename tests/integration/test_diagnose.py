"""`seed diagnose RUN` on a checkpoint of each kind of agent, and its one-line refusals."""
import os

import pytest

from seed import cli
from tests.checkpoints import write_untrained_run

# diagnose parses each run's gin config in this process: later tests must not inherit it.
pytestmark = [pytest.mark.timeout(300), pytest.mark.usefixtures('gin_cleared')]

# One of each: logits and an MLP torso, Q values and an LSTM, PPO's MLPs (no torso),
# continuous actions.
AGENTS = {'vtrace': 'gin/toy/vtrace.gin', 'r2d2': 'gin/toy/r2d2.gin',
          'ppo': 'gin/classic/ppo.gin', 'sac': 'gin/toy/sac.gin'}


@pytest.fixture(scope='module')
def runs(tmp_path_factory):
  root = tmp_path_factory.mktemp('runs')
  return {agent: write_untrained_run(root / agent, agent, gin_file)
          for agent, gin_file in AGENTS.items()}


def _diagnose(capsys, *args):
  code = cli.main(['diagnose', *args])
  out, err = capsys.readouterr()
  return code, out, err


@pytest.mark.parametrize('agent, acting, layers', [
    ('vtrace', '| logits: std across states |', '| mlp_0 | '),
    ('r2d2', '| Q: std across states |', '| LSTM output gates | '),
    ('ppo', '| logits: std across states |', 'no torso layers to probe'),
    ('sac', 'continuous actions', 'no torso layers to probe'),
])
def test_any_agent_s_checkpoint_gets_its_figures_with_what_they_say(runs, capsys, agent,
                                                                    acting, layers):
  code, out, err = _diagnose(capsys, runs[agent], '--steps=20')
  assert code == 0, err
  assert out.startswith(f'{agent} on '), out
  assert acting in out and layers in out
  assert 'no step yet, no figures' in out  # Adam's moments before its first step
  if agent != 'sac':  # A fresh policy warns (nothing learnt yet), each kind with why.
    assert 'Warnings (' in out and '\n- ' in out


def test_adam_s_figures_are_read_for_each_variable_of_a_stepped_optimizer():
  import keras  # pylint: disable=g-import-not-at-top
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  from seed.evaluation import diagnose  # pylint: disable=g-import-not-at-top
  kernel = tf.Variable(tf.ones([2, 3]), name='fc_kernel')
  bias = tf.Variable(tf.ones([3]), name='fc_bias')
  optimizer = keras.optimizers.Adam(1e-3, epsilon=1e-3)
  # RMS gradient 1e-6 next to epsilon 1e-3: throttled; zeros: no gradient.
  optimizer.apply_gradients([(tf.fill([2, 3], 1e-6), kernel), (tf.zeros([3]), bias)])
  figures, missing = diagnose.optimizer_figures({'model': object(), 'optimizer': optimizer})
  by_name = {f.name: f for f in figures}
  assert missing == ''
  assert list(by_name)[0] == 'optimizer/fc_kernel_0 (2, 3): median RMS gradient'
  assert by_name['optimizer/fc_kernel_0 (2, 3): median RMS gradient'].value == pytest.approx(1e-6)
  assert by_name['optimizer/fc_kernel_0 (2, 3): median step / learning rate'].warning
  assert by_name['optimizer/fc_bias_0 (3,): parameters with no gradient'].value == 1.0


def test_a_run_directory_without_a_checkpoint_is_one_line_and_exit_2(tmp_path, capsys):
  code, out, err = _diagnose(capsys, str(tmp_path))
  assert (code, out) == (2, '')
  assert err == (f'seed diagnose: {tmp_path} has no checkpoint ({tmp_path}/ckpt lists none): '
                 'its learner writes the first after --checkpoint_interval_s\n')
  code, _, err = _diagnose(capsys, str(tmp_path / 'nowhere'))
  assert code == 2 and err.count('\n') == 1 and 'is not a directory' in err


def test_a_checkpoint_the_run_s_agent_cannot_read_is_one_line_and_exit_2(runs, capsys):
  # R2D2's checkpoint under V-trace's config: the variables differ.
  code, _, err = _diagnose(capsys, runs['vtrace'], '--checkpoint',
                           os.path.join(runs['r2d2'], 'ckpt', 'ckpt-1'))
  assert code == 2 and err.count('\n') == 1, err
  assert 'does not match this network' in err and 'agent r2d2' in err
  # A run of an agent this seed does not have.
  flags = os.path.join(runs['sac'], 'flags.txt')
  with open(flags) as f:
    saved = f.read()
  try:
    with open(flags, 'w') as f:
      f.write('--agent=dqn\n')
    code, _, err = _diagnose(capsys, runs['sac'])
  finally:
    with open(flags, 'w') as f:
      f.write(saved)
  assert code == 2 and err.count('\n') == 1, err
  assert "unknown agent 'dqn'; known agents: " in err
