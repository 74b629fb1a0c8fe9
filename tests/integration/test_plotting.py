"""`seed plot`: curves from TensorBoard event files, seeds as a band, a baseline, panels
side by side; paths without curves named."""
import os
import subprocess
import sys
import time

import numpy as np
import pytest

from seed.evaluation.episodes import Episode
from seed.experiments import plotting
from tests.processes import REPO, _env

tf = pytest.importorskip('tensorflow')


def _write_run(run_dir, returns_by_tag, frames_per_episode=100, first_frame=None):
  """Event files as the learner writes them: each episode's return at its end frame."""
  first_frame = first_frame or frames_per_episode
  writer = tf.summary.create_file_writer(str(run_dir))
  with writer.as_default():
    for tag, returns in returns_by_tag.items():
      for i, value in enumerate(returns):
        tf.summary.scalar(tag, np.float32(value),
                          step=np.int64(first_frame + i * frames_per_episode))
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


def test_episodes_written_together_get_times_spread_along_their_frames():
  # Two writes 5 s apart, two episodes each: the last of each keeps its write's time.
  spread = plotting._spread_within_writes(np.array([100.0, 200.0, 300.0, 400.0]),  # pylint: disable=protected-access
                                          np.array([5.0, 5.001, 10.0, 10.002]))
  np.testing.assert_allclose(spread, [2.5005, 5.001, 7.5015, 10.002])
  seed = plotting._seed([(300, 110.0, 3.0), (100, 105.0, 1.0), (200, 105.0, 2.0)])  # pylint: disable=protected-access
  np.testing.assert_allclose(seed.wall_s, [0.0, 0.0, 5.0])
  np.testing.assert_allclose(seed.returns, [1.0, 2.0, 3.0])


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
  assert list(single.frames) == [100, 200, 300] and single.wall_s[0] == pytest.approx(0, abs=0.5)
  out = str(tmp_path / 'curves.png')
  assert plotting.main([str(tmp_path / 'grid'), str(tmp_path / 'multi'), '--baseline',
                        str(tmp_path / 'single'), '--window', '2', '--out', out]) == 0
  assert os.path.getsize(out) > 0
  side = str(tmp_path / 'side.png')
  assert plotting.main([str(tmp_path / 'grid'), str(tmp_path / 'single'), '--compare',
                        '--out', side]) == 0
  assert os.path.getsize(side) > 0


def test_a_multi_seed_learner_logs_each_seed_at_its_own_frames(tmp_path):
  from seed.learner import metrics as metrics_lib  # pylint: disable=g-import-not-at-top
  from seed.learner.counters import Counters  # pylint: disable=g-import-not-at-top
  counters = Counters()
  metrics = metrics_lib.Metrics(str(tmp_path), counters, num_seeds=2)
  for i in range(4):  # Two envs, one per seed, stepping together: 100 frames each.
    counters.add(env_frames=200)
    metrics.on_episode(float(i), 100, seed_index=i % 2)
  metrics.tick(0.0)
  metrics.close()
  seeds = plotting.load_run(str(tmp_path))
  assert [list(s.frames) for s in seeds] == [[100, 300], [200, 400]]
  assert [list(s.returns) for s in seeds] == [[0, 2], [1, 3]]


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


def test_a_resumed_run_continues_its_clock_without_the_pause(tmp_path):
  run = tmp_path / 'resumed'
  _write_run(run, {'episode/return': [1, 2]})
  [first] = plotting.load_run(str(run))
  time.sleep(2.5)  # The pause between a stop and the resume: not training time.
  # The resumed learner's own events file, named by its (later) start time.
  _write_run(run, {'episode/return': [3, 4]}, first_frame=300)
  [seed] = plotting.load_run(str(run))
  assert list(seed.frames) == [100, 200, 300, 400]
  assert list(seed.returns) == [1, 2, 3, 4]
  # Written within a second or so of each other: no 2.5 s jump between the files.
  assert seed.wall_s[-1] - first.wall_s[-1] < 2.0


def test_episodes_after_the_checkpoint_a_run_resumed_from_are_left_out(tmp_path):
  run = tmp_path / 'resumed'
  # Trained to 500 frames, checkpointed at 300, killed; the resume logs from 300 again.
  _write_run(run, {'episode/return': [1, 2, 3, 4, 5]})
  time.sleep(1.5)
  _write_run(run, {'episode/return': [-3, -4]}, first_frame=350)
  [seed] = plotting.load_run(str(run))
  assert list(seed.frames) == [100, 200, 300, 350, 450]
  assert list(seed.returns) == [1, 2, 3, -3, -4]
  # The clock goes on from the last episode kept.
  assert seed.wall_s[-1] < 1.0


def test_references_a_frame_budget_and_the_saved_data_round_trip(tmp_path):
  for k in range(2):
    _write_run(tmp_path / 'grid' / f'catch__seed={k}', {'episode/return': [k, k + 1, k + 2]})
  _write_run(tmp_path / 'single', {'episode/return': [5, 6, 7]})
  data = tmp_path / 'figures' / 'catch.csv'
  first = str(tmp_path / 'first.png')
  assert plotting.main([str(tmp_path / 'grid'), '--label', 'grid', '--baseline',
                        str(tmp_path / 'single'), '--reference', 'published, 1M=4.5',
                        '--max_env_frames', '200', '--save_data', str(data),
                        '--out', first]) == 0
  runs, baseline = plotting.load_data(str(data))
  assert list(runs) == ['grid'] and baseline[0] == 'single'
  assert [list(s.returns) for s in runs['grid']] == [[0, 1], [1, 2]]
  assert list(baseline[1][0].frames) == [100, 200]
  again = str(tmp_path / 'again.png')
  assert plotting.main([str(data), '--out', again]) == 0
  assert os.path.getsize(again) > 0
  # --label names the run directories only: the curve file keeps its saved labels.
  both = tmp_path / 'figures' / 'both.csv'
  assert plotting.main([str(data), str(tmp_path / 'single'), '--label', 'added',
                        '--save_data', str(both), '--out', again]) == 0
  assert list(plotting.load_data(str(both))[0]) == ['grid', 'added']
  assert plotting._reference('cleanrl PPO, 1M=1400') == ('cleanrl PPO, 1M', 1400.0, None)
  assert plotting._reference('RLlib IMPALA@5M=25.5') == ('RLlib IMPALA', 25.5, 5e6)
  assert plotting._reference('x@250K=-3') == ('x', -3.0, 250e3)
  assert plotting._reference('x@1000=2') == ('x', 2.0, 1000.0)


def test_published_atari_values_are_drawn_as_points_at_their_frames(tmp_path):
  published = plotting.published_references('Breakout', 12e6)
  assert ('RLlib IMPALA', 25.5, 5e6) in published and ('RLlib A2C', 137.5, 10e6) in published
  assert ('Dopamine Rainbow', 41.9, 10e6) in published
  assert max(p.frames for p in published) == 10e6  # none past the longest run
  _write_run(tmp_path / 'single', {'episode/return': [5, 6, 7]})
  out = str(tmp_path / 'points.png')
  assert plotting.main([str(tmp_path / 'single'), '--published', 'Qbert', '--reference',
                        'mine@150=6', '--out', out]) == 0
  assert os.path.getsize(out) > 0


def test_bad_references_budgets_and_curve_files_are_named(tmp_path, capsys):
  _write_run(tmp_path / 'single', {'episode/return': [5, 6, 7]})
  out = str(tmp_path / 'x.png')
  assert plotting.main([str(tmp_path / 'single'), '--reference', 'cleanrl', '--out', out]) == 2
  assert "--reference='cleanrl'; expected LABEL=RETURN" in capsys.readouterr().err
  assert plotting.main([str(tmp_path / 'single'), '--reference', 'x@5Q=1', '--out', out]) == 2
  assert "--reference='x@5Q=1'; expected" in capsys.readouterr().err
  assert plotting.main([str(tmp_path / 'single'), '--published', 'Pitfall', '--out', out]) == 2
  assert "--published='Pitfall': no published values; games with some: BattleZone, " in (
      capsys.readouterr().err)
  assert plotting.main([str(tmp_path / 'single'), '--max_env_frames', '50', '--out', out]) == 2
  assert 'single: no episode ended by --max_env_frames=50' in capsys.readouterr().err
  other = tmp_path / 'other.csv'
  other.write_text('step,value\n1,2\n')
  assert plotting.main([str(other), '--out', out]) == 2
  assert 'not a curve file of seed plot --save_data' in capsys.readouterr().err
  assert plotting.main([str(tmp_path / 'missing.csv'), '--out', out]) == 2
  assert 'missing.csv: no such curve file' in capsys.readouterr().err
  assert not os.path.exists(out)


def _write_evaluation(run_dir, name, env_frames, returns, policy='greedy'):
  """An evaluation as seed.evaluate and the learner's evaluator save it."""
  from seed.evaluation import report  # pylint: disable=g-import-not-at-top
  played = [Episode(0, value, 100) for value in returns]
  report.write(str(run_dir / 'evaluation'), name, report.summary(played), played,
               about={'policy': policy, 'seed': 0, 'counters': {'env_frames': env_frames}})


def test_saved_greedy_evaluations_are_drawn_at_their_checkpoints_and_kept_in_the_data(
    tmp_path):
  run = tmp_path / 'pong'
  _write_run(run, {'episode/return': [-21, -20, -10, 5]})  # At 100, 200, 300, 400 frames.
  _write_evaluation(run, 'ckpt-2_greedy_seed0', 250, [18.0, 20.0, 21.0])
  _write_evaluation(run, 'ckpt-1_greedy_seed0', 150, [-21.0])
  _write_evaluation(run, 'ckpt-2_sample_seed0', 250, [3.0], policy='sample')  # Not drawn.
  assert plotting.load_run(str(run))[0].evaluations == ()
  [seed] = plotting.load_run(str(run), evaluations=True)
  assert [e.frames for e in seed.evaluations] == [150, 250]
  np.testing.assert_allclose(seed.evaluations[1].returns, [18, 20, 21])
  # On the run's clock: halfway between the episodes that ended at 200 and 300 frames.
  assert seed.evaluations[1].wall_s == pytest.approx((seed.wall_s[1] + seed.wall_s[2]) / 2)
  data = tmp_path / 'pong.csv'
  out = str(tmp_path / 'pong.png')
  assert plotting.main([str(run), '--evaluations', '--save_data', str(data),
                        '--out', out]) == 0
  assert os.path.getsize(out) > 0
  [again] = plotting.load_data(str(data))[0]['pong']
  assert [(e.frames, list(e.returns)) for e in again.evaluations] == [
      (150, [-21]), (250, [18, 20, 21])]
  assert plotting.main([str(data), '--out', out]) == 0
  # A frame budget keeps the checkpoints evaluated within it.
  [cut] = plotting._cut('pong', [again], 200)  # pylint: disable=protected-access
  assert [e.frames for e in cut.evaluations] == [150]


def test_a_broken_evaluation_file_and_orphan_evaluation_rows_are_named(tmp_path, capsys):
  run = tmp_path / 'pong'
  _write_run(run, {'episode/return': [1, 2]})
  (run / 'evaluation').mkdir()
  (run / 'evaluation' / 'ckpt-1_greedy_seed0.json').write_text('{"policy": "greedy"}')
  out = str(tmp_path / 'x.png')
  assert plotting.main([str(run), '--evaluations', '--out', out]) == 2
  err = capsys.readouterr().err
  assert 'ckpt-1_greedy_seed0.json: not an evaluation of seed.evaluate' in err
  assert 'counters.env_frames' in err
  orphan = tmp_path / 'orphan.csv'
  orphan.write_text(','.join(plotting.DATA_COLUMNS) + '\nruns,run,0,100,1.0,2\n'
                    'other,evaluation,0,100,1.0,3\n')
  assert plotting.main([str(orphan), '--out', out]) == 2
  assert "evaluations of 'other' seed 0 without its episodes" in capsys.readouterr().err
  assert not os.path.exists(out)


def test_the_seed_command():
  def seed_command(*args):
    return subprocess.run([sys.executable, '-m', 'seed', *args], capture_output=True,
                          text=True, env=_env(), cwd=REPO, timeout=120)
  # The command's other subcommands: tests/integration/test_cli.py.
  assert 'usage: seed plot' in seed_command('plot', '--help').stdout


def test_the_default_title_is_short_the_legend_names_the_runs():
  assert plotting.default_title(1, 20) == 'return: mean of 20 episodes'
  assert plotting.default_title(3, 100) == '3 runs, return: mean of 100 episodes'


def test_one_legend_below_the_panels_holds_long_labels_inside_the_figure():
  import matplotlib  # pylint: disable=import-outside-toplevel
  matplotlib.use('Agg')
  from matplotlib import pyplot  # pylint: disable=import-outside-toplevel
  figure, axes = pyplot.subplots(2, 1, figsize=(7, 7), squeeze=False)
  labels = [f'V-trace, 16 updates per batch (shipped), seed {k}, a run started on 2026-12-0{k}'
            ' with a label longer than the figure is wide' for k in range(5)]
  for ax in axes.flat:
    for k, label in enumerate(labels):
      ax.plot([0, 1], [k, k + 1], label=label)
  plotting._legend_and_title(figure, axes, ', '.join(labels))
  figure.canvas.draw()
  assert not any(ax.get_legend() for ax in axes.flat) and len(figure.legends) == 1
  renderer = figure.canvas.get_renderer()
  box, page = figure.legends[0].get_window_extent(renderer), figure.bbox
  assert page.x0 <= box.x0 and box.x1 <= page.x1 and page.y0 <= box.y0
  lowest_panel = min(ax.get_tightbbox(renderer).y0 for ax in axes.flat)
  assert box.y1 <= lowest_panel  # Below the panels, over no curve.
  assert len(figure.legends[0].get_texts()) == len(labels)  # Each once, not once a panel.
  pyplot.close(figure)
