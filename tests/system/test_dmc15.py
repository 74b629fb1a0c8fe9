"""seed/experiments/suites/dmc15.py: the DMC15 plan, a real tiny run through
seed.experiments, the IQM."""
import csv
import json
import os

import numpy as np
import pytest

from seed.experiments.suites import dmc15

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_unknown_tasks_and_agents_are_named_with_the_valid_ones():
  with pytest.raises(ValueError, match=r"unknown DMC15 task 'walker-sprint'; valid tasks: "
                     r'acrobot-swingup, cheetah-run, .*, walker-run'):
    dmc15.plan('sr_sac', ['walker-run', 'walker-sprint'], [0], 1000)
  with pytest.raises(ValueError, match="agent 'r2d2' has no DM Control config"):
    dmc15.plan('r2d2', ['walker-run'], [0], 1000)
  assert dmc15.main(['run', '--root', '/nonexistent', '--tasks', 'nope']) == 2
  with pytest.raises(ValueError, match=r'seeds 0,2: seeds trained in one learner are '
                     r'consecutive .* pass --learner_per_seed'):
    dmc15.plan('sr_sac', ['walker-run'], [0, 2], 1000)


def test_seeds_share_a_learner_unless_asked_otherwise():
  [entry] = dmc15.plan('sr_sac', ['walker-run'], [3, 4, 5], 1000)
  # One run, --seed=3 --num_seeds=3, an env per seed and 1,000 env steps for each.
  assert entry['seeds'] == [3] and entry['num_envs'] == 3
  assert entry['learner_flags'] == {'max_env_frames': '3000', 'num_seeds': '3'}
  [entry] = dmc15.plan('sr_sac', ['walker-run'], [0, 2], 1000, one_learner=False)
  assert entry['seeds'] == [0, 2] and entry['num_envs'] == 1
  assert entry['learner_flags'] == {'max_env_frames': '1000'}


def test_bad_scores_files_are_named(tmp_path, capsys):
  bad = tmp_path / 'bad.json'
  bad.write_text(json.dumps({'walker-sprint': {'0': 1.0}}))
  assert dmc15.main(['report', '--scores_file', str(bad)]) == 2
  assert "unknown DMC15 task 'walker-sprint'" in capsys.readouterr().err
  bad.write_text(json.dumps({'walker-run': {'first': 1.0}}))
  assert dmc15.main(['report', '--scores_file', str(bad)]) == 2
  assert "task 'walker-run' needs {seed: score} with int seeds" in capsys.readouterr().err
  assert dmc15.main(['report', '--scores_file', str(tmp_path / 'missing.json')]) == 2
  assert 'missing.json' in capsys.readouterr().err
  with pytest.raises(SystemExit):
    dmc15.main(['report'])


def test_iqm_and_per_task_means_by_hand():
  # 4 seeds x 2 tasks: the 8 scores sorted are 10 20 30 100 200 300 400 1000; the IQM
  # drops the lowest and highest quarter: (30 + 100 + 200 + 300) / 4 = 157.5.
  scores = {'walker-run': {0: 100.0, 1: 200.0, 2: 300.0, 3: 400.0},
            'cheetah-run': {0: 10.0, 1: 20.0, 2: 30.0, 3: 1000.0},
            'fish-swim': {0: 5.0, 1: None}}
  report = dmc15.aggregate(scores, reps=2000)
  assert report['tasks'] == ['walker-run', 'cheetah-run']
  assert report['unfinished'] == ['fish-swim seed 1']
  assert report['iqm']['value'] == pytest.approx(157.5)
  assert report['iqm']['low'] <= 157.5 <= report['iqm']['high']
  walker = report['per_task']['walker-run']
  assert walker['mean'] == pytest.approx(250.0)
  # The bootstrap resamples 4 seeds within a task: its mean stays within the scores.
  assert 100.0 <= walker['low'] <= 250.0 <= walker['high'] <= 400.0
  # Equal scores leave nothing to resample: the interval is the point.
  flat = dmc15.aggregate({'reacher-hard': {0: 7.0, 1: 7.0}}, reps=200)
  assert flat['iqm'] == {'value': 7.0, 'low': 7.0, 'high': 7.0}
  assert dmc15.aggregate({'fish-swim': {0: None}})['iqm'] is None
  # The bootstrap repeats (rliable resamples from NumPy's global generator) and leaves
  # the caller's global generator where it was.
  spread = {'walker-run': {0: 1.0, 1: 5.0, 2: 9.0}, 'reacher-hard': {0: 2.0, 1: 30.0, 2: 7.0}}
  np.random.seed(7)
  expected_draw = np.random.rand()
  np.random.seed(7)
  first = dmc15.aggregate(spread, reps=500)
  assert np.random.rand() == expected_draw
  assert dmc15.aggregate(spread, reps=500) == first


def test_a_tiny_run_is_resumable_and_reported(tmp_path, capsys):
  # pendulum-swingup x 2 seeds x 1,100 env steps (one 1,000-step episode each) in one
  # learner, SR-SAC shrunk to run in seconds.
  root = str(tmp_path / 'dmc15')
  args = ['run', '--root', root, '--agent', 'sr_sac', '--tasks', 'pendulum-swingup',
          '--seeds', '0,1', '--env_steps', '1100',
          '--gin_bindings', 'SACConfig.hidden_sizes = (16, 16)',
          '--gin_bindings', 'SACConfig.updates_per_step = 2',
          '--gin_bindings', 'SACConfig.minibatch_transitions = 32',
          '--gin_bindings', 'SACConfig.reset_interval_updates = 400',
          '--gin_bindings', 'ReplayInput.min_fill_unrolls = 100',
          '--gin_bindings', 'ReplayInput.capacity_unrolls = 1000']
  assert dmc15.main(args) == 0
  assert sorted(os.listdir(root)) == ['dmc15.json', 'pendulum-swingup__seed=0']
  run_dir = os.path.join(root, 'pendulum-swingup__seed=0')
  with open(os.path.join(run_dir, 'finished.json')) as f:
    assert json.load(f)['env_frames'] >= 2200
  with open(os.path.join(run_dir, 'episodes.csv')) as f:
    assert {row['seed'] for row in csv.DictReader(f)} == {'0', '1'}
  capsys.readouterr()
  assert dmc15.main(args) == 0  # Everything finished: the run is skipped.
  assert 'skipped' in capsys.readouterr().out
  png = str(tmp_path / 'dmc15.png')
  assert dmc15.main(['report', '--root', root, '--png', png, '--reps', '200']) == 0
  table = capsys.readouterr().out
  assert '| pendulum-swingup |' in table and '**IQM** (1 tasks x 2 seeds)' in table
  with open(os.path.join(root, dmc15.REPORT_FILE)) as f:
    report = json.load(f)
  assert report['seeds'] == [0, 1] and np.isfinite(report['iqm']['value'])
  assert os.path.getsize(png) > 0
  # A task scored earlier (its runs gone) joins from a scores file; the file alone
  # gives the same report again.
  recorded = tmp_path / 'recorded.json'
  recorded.write_text(json.dumps({'cheetah-run': {'0': 150.0, '1': 250.0}}))
  assert dmc15.main(['report', '--root', root, '--scores_file', str(recorded),
                     '--reps', '200']) == 0
  table = capsys.readouterr().out
  assert '| cheetah-run | 200.0 |' in table and '(2 tasks x 2 seeds)' in table
  kept = os.path.join(root, dmc15.SCORES_FILE)
  assert dmc15.main(['report', '--scores_file', kept, '--reps', '200']) == 0
  assert capsys.readouterr().out == table
