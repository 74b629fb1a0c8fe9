"""The run directory's files as the other processes read them (seed.run_dir): the
episodes training kept across resumes, the progress line, the finished marker."""
from seed.run_dir import records, status
from seed.run_dir.layout import RunDir

COUNTERS = {'env_frames': 5000, 'env_steps': 5000, 'episodes': 9, 'learner_steps': 3}


def _episodes_csv(run_dir, rows, tail=''):
  (run_dir / 'episodes.csv').write_text(
      ','.join(records.EPISODE_COLUMNS) + '\n' +
      ''.join(f'{frames},{ret},100,{wall_s}\n' for frames, ret, wall_s in rows) + tail)
  return str(run_dir)


def test_training_episodes_leave_out_what_each_resume_trained_away(tmp_path):
  # To 500 frames (40 s); resumed from 300 (its clock from 0) to 550; resumed again from
  # 450; and a line still being written.
  rows = [(100, 1, 10.0), (200, 2, 20.0), (300, 3, 30.0), (400, 4, 35.0), (500, 5, 40.0),
          (350, -3, 6.0), (450, -4, 12.0), (550, -5, 18.0),
          (500, 7, 5.0)]
  kept = records.read_training_episodes(_episodes_csv(tmp_path, rows, tail='600,8'))
  assert [e.env_frames for e in kept] == [100, 200, 300, 350, 450, 500]
  assert [e.episode_return for e in kept] == [1, 2, 3, -3, -4, 7]
  assert [e.training_s for e in kept] == [10.0, 20.0, 30.0, 36.0, 42.0, 47.0]
  assert kept[-1].wall_time_s == 5.0  # as logged
  assert records.read_training_episodes(str(tmp_path / 'none')) == []


def test_the_api_and_the_runner_read_episodes_as_training_kept_them(tmp_path):
  from seed import api  # pylint: disable=g-import-not-at-top
  from seed.experiments import runner  # pylint: disable=g-import-not-at-top
  _episodes_csv(tmp_path, [(100, 1, 10.0), (200, 2, 20.0), (300, 9, 30.0), (250, 3, 4.0)])
  run = api.TrainingRun(str(tmp_path), learner=None, actors=[])
  assert [e.env_frames for e in run.episodes()] == [100, 200, 250]
  assert runner.recent_return(str(tmp_path), window_episodes=2) == 2.5
  assert api.TrainingRun(str(tmp_path / 'none'), None, []).episodes() == []


def test_the_latest_progress_line_and_checkpoint_are_read_without_tensorflow(tmp_path):
  run_dir = RunDir(str(tmp_path))
  assert records.read_latest_progress(run_dir.root) is None
  assert run_dir.latest_checkpoint() is None
  with open(run_dir.progress_csv, 'w') as f:
    f.write(','.join(records.PROGRESS_COLUMNS) + '\n'
            '1.0,100,2,1,50.0,1.0,0.5,1,4,300.0,20,30\n'
            '2.0,200,4,3,100.0,1.0,0.5,1,4,300.0,20,30\n'
            '3.0,300')  # a line being written
  assert records.read_latest_progress(run_dir.root) == records.Progress(
      wall_time_s=2.0, env_frames=200, learner_steps=4, episodes=3, env_frames_per_s=100.0)
  (tmp_path / 'ckpt').mkdir()
  (tmp_path / 'ckpt' / 'checkpoint').write_text(
      'model_checkpoint_path: "ckpt-7"\nall_model_checkpoint_paths: "ckpt-7"\n')
  assert run_dir.latest_checkpoint() == str(tmp_path / 'ckpt' / 'ckpt-7')


def test_a_run_is_finished_for_budgets_up_to_the_one_it_reached(tmp_path):
  assert not status.mark_if_finished(str(tmp_path), COUNTERS, max_env_frames=6000)
  assert not status.mark_if_finished(str(tmp_path), COUNTERS, max_env_frames=0)
  assert status.read_finished(str(tmp_path)) is None
  assert status.mark_if_finished(str(tmp_path), COUNTERS, max_env_frames=4000)
  assert status.is_finished(str(tmp_path), 4000)
  assert status.is_finished(str(tmp_path), 1000)
  assert not status.is_finished(str(tmp_path), 4001)  # a larger budget: resume it


def test_the_marker_covers_launches_whose_goal_it_met(tmp_path):
  logdir = str(tmp_path)
  assert not status.covers(status.read_finished(logdir), 1000, None)
  assert status.mark_if_finished(logdir, COUNTERS, max_env_frames=4000)
  record = status.read_finished(logdir)
  assert status.covers(record, 4000, None) and status.covers(record, 5000, None)
  assert not status.covers(record, 5001, None)  # A larger budget trains on.
  assert not status.covers(record, 0, None)  # No goal at all: trains on.
  assert not status.covers(record, 0, 10.0)  # It never reached a target.


def test_a_target_return_reached_marks_the_run_with_it(tmp_path):
  logdir = str(tmp_path)
  assert not status.mark_if_finished(logdir, COUNTERS, 0, target_return=0.9, mean_return=0.5)
  assert status.mark_if_finished(logdir, COUNTERS, 0, target_return=0.9, mean_return=0.95)
  record = status.read_finished(logdir)
  assert (record['target_return'], record['mean_return']) == (0.9, 0.95)
  assert status.covers(record, 0, 0.9) and status.covers(record, 0, 0.5)
  assert not status.covers(record, 0, 0.99)  # A higher target trains on.
