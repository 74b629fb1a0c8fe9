"""`seed plot`: curves from TensorBoard event files, seeds as a band, a baseline, panels
side by side; paths without curves named."""
import os
import subprocess
import sys

import numpy as np
import pytest

from seed import plotting
from tests.processes import REPO, _env

tf = pytest.importorskip('tensorflow')


def _write_run(run_dir, returns_by_tag, frames_per_episode=100):
  """Event files as the learner writes them: each episode's return at its end frame."""
  writer = tf.summary.create_file_writer(str(run_dir))
  with writer.as_default():
    for tag, returns in returns_by_tag.items():
      for i, value in enumerate(returns):
        tf.summary.scalar(tag, np.float32(value), step=np.int64((i + 1) * frames_per_episode))
  writer.close()


def test_running_mean_and_the_band_over_seeds_by_hand():
  np.testing.assert_allclose(plotting.running_mean(np.array([1.0, 3.0, 5.0, 7.0]), 2),
                             [1.0, 2.0, 4.0, 6.0])
  frames = np.array([100.0, 200.0, 300.0])
  seeds = [plotting.Seed(frames, frames / 100, np.array([0.0, 0.0, 0.0])),
           plotting.Seed(frames, frames / 100, np.array([2.0, 4.0, 6.0]))]
  x, mean, low, high = plotting.band(seeds, 'frames', window=1, points=3)
  np.testing.assert_allclose(x, [100, 200, 300])
  np.testing.assert_allclose(mean, [1, 2, 3])
  np.testing.assert_allclose(low, [0, 0, 0])
  np.testing.assert_allclose(high, [2, 4, 6])


def test_seeds_come_from_run_directories_or_from_one_multi_seed_learner(tmp_path):
  for k in range(3):
    _write_run(tmp_path / 'grid' / f'catch__seed={k}', {'episode/return': [k, k, k]})
  _write_run(tmp_path / 'multi', {'episode/return': [0, 1, 2, 3],
                                  'seed_0/episode/return': [0, 2],
                                  'seed_1/episode/return': [1, 3]})
  _write_run(tmp_path / 'single', {'episode/return': [5, 6, 7]})
  assert len(plotting.load_run(str(tmp_path / 'grid'))) == 3
  multi = plotting.load_run(str(tmp_path / 'multi'))
  assert [list(s.returns) for s in multi] == [[0, 2], [1, 3]]
  [single] = plotting.load_run(str(tmp_path / 'single'))
  assert list(single.frames) == [100, 200, 300] and single.wall_s[0] == 0
  out = str(tmp_path / 'curves.png')
  assert plotting.main([str(tmp_path / 'grid'), str(tmp_path / 'multi'), '--baseline',
                        str(tmp_path / 'single'), '--window', '2', '--out', out]) == 0
  assert os.path.getsize(out) > 0
  side = str(tmp_path / 'side.png')
  assert plotting.main([str(tmp_path / 'grid'), str(tmp_path / 'single'), '--compare',
                        '--out', side]) == 0
  assert os.path.getsize(side) > 0


def test_paths_without_curves_are_named(tmp_path, capsys):
  empty = tmp_path / 'empty'
  empty.mkdir()
  assert plotting.main([str(empty), '--out', str(tmp_path / 'x.png')]) == 2
  assert f'seed plot: {empty}: no TensorBoard event files' in capsys.readouterr().err
  _write_run(tmp_path / 'other', {'loss/total_loss': [1, 2]})
  assert plotting.main([str(tmp_path / 'other'), '--out', str(tmp_path / 'x.png')]) == 2
  assert "its event files have no 'episode/return'" in capsys.readouterr().err
  assert plotting.main([str(tmp_path / 'nope'), '--out', str(tmp_path / 'x.png')]) == 2
  assert 'nope: not a directory' in capsys.readouterr().err
  assert not os.path.exists(tmp_path / 'x.png')


def test_the_seed_command():
  def seed_command(*args):
    return subprocess.run([sys.executable, '-m', 'seed', *args], capture_output=True,
                          text=True, env=_env(), cwd=REPO, timeout=120)
  listed = seed_command()
  assert listed.returncode == 0 and 'seed plot' in listed.stdout and 'seed eval' in listed.stdout
  unknown = seed_command('train')
  assert unknown.returncode == 2
  assert "unknown command 'train'; accepted: plot, eval" in unknown.stderr
  assert 'usage: seed plot' in seed_command('plot', '--help').stdout
