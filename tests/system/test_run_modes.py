"""Run modes: a new run from another run's checkpoint (--init_checkpoint), and test mode
(python -m seed.evaluate), on a toy V-trace run trained for a few thousand frames."""
import importlib.util
import json
import os
import signal
import subprocess
import sys

import numpy as np
import pytest

from seed.evaluation import episodes as episodes_lib
from seed.evaluation import report
from tests.checkpoints import write_untrained_run
from tests.processes import REPO, Run, _env

# They parse gin in this process, as evaluate and the runner's check do.
pytestmark = [pytest.mark.timeout(300), pytest.mark.usefixtures('gin_cleared')]

GIN = 'gin/toy/vtrace.gin'


@pytest.fixture(scope='module')
def trained(tmp_path_factory):
  """The run directory of CartPole V-trace trained to 3,000 frames (one checkpoint)."""
  logdir = tmp_path_factory.mktemp('trained') / 'run'
  with Run(logdir, GIN, learner_flags=['--max_env_frames=3000']) as run:
    run.start_learner()
    run.start_actors(1, 4)
    assert run.wait_learner(timeout_s=180) == 0, run.learner_log()
  return str(logdir)


def latest_tensors(logdir):
  """{variable name: value} of the run's latest checkpoint."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  reader = tf.train.load_checkpoint(tf.train.latest_checkpoint(os.path.join(logdir, 'ckpt')))
  return {name.replace('/.ATTRIBUTES/VARIABLE_VALUE', ''): reader.get_tensor(name)
          for name in reader.get_variable_to_shape_map()
          if name.endswith('VARIABLE_VALUE')}


def serve_and_stop(logdir, flags):
  """Starts a learner (no actors: nothing trains), lets it serve, stops it; its log."""
  with Run(logdir, GIN, learner_flags=flags) as run:
    run.start_learner()  # Returns once it serves: the checkpoint has been read.
    run.learner.send_signal(signal.SIGTERM)
    assert run.learner.wait(timeout=60) == 0, run.learner_log()
    return run.learner_log()


@pytest.mark.parametrize('counters', ['restart', 'continue'])
def test_init_checkpoint_starts_a_new_run_from_the_weights_with_counters_by_flag(
    trained, tmp_path, counters):
  source = latest_tensors(trained)
  logdir = str(tmp_path / 'new')
  log = serve_and_stop(logdir, [f'--init_checkpoint={trained}', f'--init_counters={counters}'])
  assert f'initialised from {trained}/ckpt/ckpt-' in log
  copied = latest_tensors(logdir)
  for name in ('model/_policy_head/_kernel', 'model/_torso_layer_0/_kernel',
               'optimizer/_iterations'):
    np.testing.assert_array_equal(copied[name], source[name], err_msg=name)
  assert source['optimizer/_iterations'] > 0
  expected = source['counters'] if counters == 'continue' else np.zeros(4, np.int64)
  np.testing.assert_array_equal(copied['counters'], expected)
  assert source['counters'][0] >= 3000  # env frames


def test_a_run_with_its_own_checkpoint_ignores_init_checkpoint(trained, tmp_path):
  logdir = str(tmp_path / 'new')
  serve_and_stop(logdir, [f'--init_checkpoint={trained}'])
  log = serve_and_stop(logdir, [f'--init_checkpoint={trained}', '--init_counters=continue'])
  assert 'has a checkpoint of its own' in log and 'is ignored' in log
  np.testing.assert_array_equal(latest_tensors(logdir)['counters'], np.zeros(4, np.int64))


def test_init_checkpoint_of_another_network_is_refused_before_serving(trained, tmp_path):
  logdir = tmp_path / 'new'
  result = subprocess.run(
      [sys.executable, '-m', 'seed.learner.main', f'--logdir={logdir}',
       '--server_address=localhost:0', f'--gin_file={os.path.join(REPO, GIN)}',
       '--gin_bindings=VTraceConfig.mlp_hidden_sizes = (32,)', f'--init_checkpoint={trained}'],
      capture_output=True, text=True, env=_env(), cwd=REPO, timeout=180)
  assert result.returncode == 2, result.stderr[-3000:]
  errors = [line for line in result.stderr.splitlines() if line.startswith('E')]
  assert len(errors) == 1, errors
  assert f'checkpoint {trained}/ckpt/ckpt-' in errors[0]
  assert 'does not match this network: model/' in errors[0]
  assert '[64, 1] in the checkpoint, [32, 1] here' in errors[0]
  assert not os.path.exists(logdir / 'port')


def evaluate(*args, timeout_s=180):
  return subprocess.run([sys.executable, '-m', 'seed.evaluate', *args], capture_output=True,
                        text=True, env=_env(), cwd=REPO, timeout=timeout_s)


def test_evaluate_prints_and_writes_the_table_of_n_episodes(trained):
  result = evaluate('--logdir', trained, '--episodes', '4')
  assert result.returncode == 0, result.stderr[-3000:]
  print(result.stdout)
  assert 'vtrace on CartPole-v1, checkpoint' in result.stdout
  assert 'policy greedy' in result.stdout
  assert '| 4 episodes | mean | std | min | max |' in result.stdout
  assert '| return |' in result.stdout and '| length_steps |' in result.stdout
  name = os.path.join(trained, 'evaluation', 'ckpt-1_greedy_seed0')
  with open(f'{name}.json') as f:
    written = json.load(f)
  returns = [e['return'] for e in written['per_episode']]
  assert written['episodes'] == len(returns) == 4
  assert written['summary']['return']['mean'] == pytest.approx(np.mean(returns))
  assert written['counters']['env_frames'] >= 3000
  with open(f'{name}.csv') as f:
    assert f.readline().strip() == 'quantity,episodes,mean,std,min,max'
    assert [line.split(',')[:2] for line in f] == [['return', '4'], ['length_steps', '4']]
  # Over 2 envs (seeds 0 and 1) the same checkpoint's evaluation goes beside this one.
  result = evaluate('--logdir', trained, '--episodes', '2', '--num_envs', '2')
  assert result.returncode == 0, result.stderr[-3000:]
  with open(os.path.join(trained, 'evaluation', 'ckpt-1_greedy_seeds0-1.json')) as f:
    assert json.load(f)['num_envs'] == 2
  with open(f'{name}.json') as f:
    assert json.load(f)['episodes'] == 4


@pytest.mark.skipif(importlib.util.find_spec('imageio_ffmpeg') is None,
                    reason="the video extra is not installed (pip install '.[video]')")
def test_evaluate_renders_the_first_episodes_to_mp4(trained, tmp_path):
  path = tmp_path / 'episodes.mp4'
  result = evaluate('--logdir', trained, '--episodes', '3', '--policy', 'sample',
                    '--video', str(path), '--video_episodes', '2')
  assert result.returncode == 0, result.stderr[-3000:]
  assert 'policy sample' in result.stdout
  assert path.stat().st_size > 0
  import imageio.v3 as iio  # pylint: disable=g-import-not-at-top
  frames = iio.imread(path)
  assert frames.shape[1:] == (400, 600, 3)  # CartPole's rgb_array frames, unscaled
  with open(os.path.join(trained, 'evaluation', 'ckpt-1_sample_seed0.json')) as f:
    lengths = [e['length_steps'] for e in json.load(f)['per_episode']]
  assert len(frames) == lengths[0] + lengths[1] + 2  # each step, and each start


def test_evaluate_refuses_a_checkpoint_of_another_env(trained):
  result = evaluate('--logdir', trained, '--env', 'Catch', '--episodes', '1')
  assert result.returncode == 2, result.stderr[-3000:]
  last = result.stderr.strip().splitlines()[-1]
  assert last.startswith(f'seed.evaluate: checkpoint {trained}/ckpt/ckpt-1 does not match '
                         'this network: ')
  assert 'in the checkpoint' in last and 'CartPole-v1' in last


@pytest.mark.parametrize('args, message', [
    (['--policy', 'best'], "unknown --policy 'best'; accepted: greedy, sample"),
    (['--episodes', '0'], '--episodes=0; expected at least 1'),
])
def test_evaluate_refuses_bad_arguments_naming_what_is_accepted(trained, args, message):
  result = evaluate('--logdir', trained, *args)
  assert result.returncode == 2
  assert result.stderr.strip() == f'seed.evaluate: {message}'


# In this process, on a checkpoint of untrained weights: each agent's recurrent state,
# acting parameters and action types go through the episode loop.
@pytest.mark.parametrize('agent, gin_file', [
    ('ppo', 'gin/toy/ppo.gin'), ('r2d2', 'gin/toy/r2d2.gin'), ('sac', 'gin/toy/sac.gin'),
    ('vtrace', 'gin/classic/vtrace.gin')])
@pytest.mark.parametrize('policy', ['greedy', 'sample'])
def test_evaluate_plays_each_agent(tmp_path, agent, gin_file, policy, capsys):
  from seed import evaluate as evaluate_lib  # pylint: disable=g-import-not-at-top
  logdir = write_untrained_run(tmp_path / agent, agent, gin_file)
  assert evaluate_lib.main(['--logdir', logdir, '--episodes', '3', '--num_envs', '2',
                            '--policy', policy]) == 0
  assert '| 3 episodes |' in capsys.readouterr().out
  with open(os.path.join(logdir, 'evaluation', f'ckpt-1_{policy}_seeds0-1.json')) as f:
    written = json.load(f)
  assert [e['env_index'] for e in written['per_episode']].count(0) == 2




class _CountingEnv:
  """Episodes of `length` steps, reward 1 each; records the actions it is given."""

  def __init__(self, length):
    self.length, self.actions, self._t = length, [], 0

  def reset(self):
    self._t = 0
    return np.zeros(1, np.float32), {}

  def step(self, action):
    self.actions.append(action)
    self._t += 1
    return np.zeros(1, np.float32), 1.0, self._t == self.length, False, {}


def _steps_since_reset(observation, reward, done, core_state, acting):
  """Acts with its core state (steps since the episode began), which it resets on done."""
  del observation, reward, acting
  steps = np.where(done, 0, core_state[0])
  return steps.astype(np.int32), {}, (steps + 1,)


def test_run_episodes_carries_the_core_state_and_resets_it_at_each_episode():
  envs = [_CountingEnv(3), _CountingEnv(2)]
  frames = []
  played = episodes_lib.run_episodes(
      _steps_since_reset, lambda n: (np.zeros(n, np.int64),), envs, num_episodes=3,
      acting=None, on_frame=frames.append)
  assert envs[0].actions == [0, 1, 2, 0, 1, 2]  # episodes 0 and 2
  assert envs[1].actions == [0, 1]              # episode 1
  assert [(e.env_index, e.episode_return, e.length_steps) for e in played] == [
      (1, 2.0, 2), (0, 3.0, 3), (0, 3.0, 3)]
  assert frames == [0, 0, 0, 0, 1, 1, 1, 1]  # env 0: start, 3 steps, start, 3 steps


def test_summary_statistics_by_hand():
  stats = report.summarize([1.0, 2.0, 3.0, 6.0])
  # mean 3; deviations -2, -1, 0, 3; population variance (4 + 1 + 0 + 9) / 4 = 3.5
  assert stats == pytest.approx({'mean': 3.0, 'std': 3.5 ** 0.5, 'min': 1.0, 'max': 6.0})


def test_an_evaluation_over_several_envs_is_saved_beside_the_one_env_one():
  assert report.file_stem('/run/ckpt/ckpt-7', 'greedy', 0, 1) == 'ckpt-7_greedy_seed0'
  assert report.file_stem('/run/ckpt/ckpt-7', 'greedy', 0, 10) == 'ckpt-7_greedy_seeds0-9'
  assert report.file_stem('ckpt-7', 'sample', 3, 2) == 'ckpt-7_sample_seeds3-4'
