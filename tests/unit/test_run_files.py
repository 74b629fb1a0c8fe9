"""The run's own files on a full disk: records are dropped and logged once, lines are
never torn, nothing raises into training, and writing resumes once there is room."""
import csv
import logging
import os

import numpy as np
import pytest
from tensorboard.backend.event_processing.event_file_loader import EventFileLoader

from tests.system.faults import full_disk
from seed.learner import metrics as metrics_lib
from seed.learner.counters import Counters
from seed.learner import run_files, tuning_report
from seed.learner.run_files import AppendOnlyCsv
from tests.unit.test_checkpoint_full_disk import small_tmpfs

pytestmark = pytest.mark.timeout(120)


def test_lines_append_whole_and_the_header_once(tmp_path):
  path = str(tmp_path / 'progress.csv')
  log = AppendOnlyCsv(path, ('a', 'b'))
  assert log.write_line('1,2')
  log.close()
  log = AppendOnlyCsv(path, ('a', 'b'))  # a resumed run appends
  assert log.write_line('3,4')
  log.close()
  assert open(path).read() == 'a,b\n1,2\n3,4\n'


def test_a_resumed_learner_with_other_logs_writes_by_the_files_columns(tmp_path):
  # A newer learner resuming a run may log a name the file's header lacks (R2D2's
  # top_rung_epsilon came later): its lines follow the header, not its own logs.
  counters = Counters()
  first = metrics_lib.Metrics(str(tmp_path), counters, log_train_steps=True)
  first.on_train({'loss': 0.5, 'mean_q': 1.0})
  first.close()
  counters.add(learner_steps=1)
  resumed = metrics_lib.Metrics(str(tmp_path), counters, log_train_steps=True)
  resumed.on_train({'loss': 0.25, 'a_new_log': 7.0, 'mean_q': 2.0})
  resumed.on_train({'loss': 0.125})  # a step without mean_q: NaN in its column
  resumed.close()
  rows = list(csv.DictReader(open(tmp_path / 'train_steps.csv')))
  assert list(rows[0]) == ['learner_steps', 'loss', 'mean_q']
  assert [(r['learner_steps'], r['loss'], r['mean_q']) for r in rows] == [
      ('0', '0.5', '1.0'), ('1', '0.25', '2.0'), ('1', '0.125', 'nan')]
  assert AppendOnlyCsv(str(tmp_path / 'train_steps.csv'), ('x',)).columns == (
      'learner_steps', 'loss', 'mean_q')


def test_a_torn_last_line_is_cut_when_the_file_is_opened(tmp_path):
  path = tmp_path / 'episodes.csv'
  path.write_text('a,b\n1,2\n3,')
  log = AppendOnlyCsv(str(path), ('a', 'b'))
  log.write_line('5,6')
  log.close()
  assert path.read_text() == 'a,b\n1,2\n5,6\n'
  path.write_text('a,')  # not even a whole header
  AppendOnlyCsv(str(path), ('a', 'b')).close()
  assert path.read_text() == 'a,b\n'


def test_a_full_disk_drops_lines_whole_and_logs_the_outage_once(caplog):
  with small_tmpfs(size_mb=1) as disk:
    path = os.path.join(disk, 'progress.csv')
    log = AppendOnlyCsv(path, ('n', 'text'))
    assert log.write_line('0,before')
    filler = full_disk.fill_disk(disk)
    with caplog.at_level(logging.WARNING, logger='seed.learner.run_files'):
      # Long lines, so that some of them would only partly fit.
      written = [log.write_line(f'{i},{"x" * (700 + 37 * i)}') for i in range(1, 200)]
      os.remove(filler)
      assert log.write_line('200,after')
    log.close()
    rows = list(csv.reader(open(path)))
  assert not all(written)
  assert rows[0] == ['n', 'text'] and rows[1] == ['0', 'before'] and rows[-1] == ['200', 'after']
  for row in rows[1:]:  # whole lines only
    assert len(row) == 2 and row[1] in ('before', 'after', 'x' * (700 + 37 * int(row[0])))
  errors = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
  assert len(errors) == 1 and 'could not write progress.csv' in errors[0]
  assert 'No space left on device' in errors[0] and 'training goes on' in errors[0]
  recovered = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
  assert recovered == [f'writing progress.csv again ({written.count(False)} records were '
                       'dropped)']


def test_metrics_on_a_full_disk_go_on_and_write_again_once_there_is_room(caplog, monkeypatch):
  monkeypatch.setattr(metrics_lib, 'RETRY_S', 0.0)  # a new events file at the next tick
  with small_tmpfs(size_mb=2) as disk:
    counters = Counters()
    metrics = metrics_lib.Metrics(disk, counters)

    def ticks(episodes: int, first_frames: int):
      for i in range(episodes):
        counters.add(env_frames=first_frames + i - counters.get('env_frames'))
        metrics.on_episode(float(i), 10)
        if i % 10 == 0:
          metrics.on_train({'loss': np.float32(0.5)})
          metrics.tick(0.5)

    ticks(100, first_frames=1)
    filler = full_disk.fill_disk(disk)
    with caplog.at_level(logging.WARNING, logger='seed.learner.run_files'):
      ticks(2_000, first_frames=1_000)  # nothing raises
      os.remove(filler)
      ticks(100, first_frames=1_000_000)
    metrics.close()
    errors = sorted(r.getMessage().split(' (')[0] for r in caplog.records
                    if r.levelno == logging.ERROR)
    steps = sorted(event.step for name in os.listdir(disk) if name.startswith('events.')
                   for event in EventFileLoader(os.path.join(disk, name)).Load()
                   if any(v.tag == 'episode/return' for v in event.summary.value))
    progress = list(csv.reader(open(os.path.join(disk, 'progress.csv'))))
    episodes = list(csv.reader(open(os.path.join(disk, 'episodes.csv'))))
  assert errors == ['could not write episodes.csv', 'could not write progress.csv',
                    'could not write the TensorBoard summaries']
  assert all(len(row) == len(progress[0]) for row in progress)
  assert all(len(row) == len(episodes[0]) for row in episodes)
  assert int(progress[-1][1]) >= 1_000_000 and int(episodes[-1][0]) >= 1_000_000
  assert steps[0] < 1_000 and steps[-1] >= 1_000_000  # before the outage and after it


def test_each_checkpoint_makes_the_csv_files_durable(tmp_path, monkeypatch):
  # On Cloud Storage FUSE a file's lines reach the bucket at fsync or close; a learner
  # preempted after hours would otherwise leave no episodes.csv there.
  from types import SimpleNamespace  # pylint: disable=g-import-not-at-top
  from seed.learner.runtime import Learner  # pylint: disable=g-import-not-at-top
  synced = []
  monkeypatch.setattr(os, 'fsync', lambda fd: synced.append(
      os.path.basename(os.readlink(f'/proc/self/fd/{fd}'))))
  counters = Counters()
  metrics = metrics_lib.Metrics(str(tmp_path), counters, log_train_steps=True)
  metrics.on_episode(1.0, 10)
  metrics.on_train({'loss': np.float32(0.5)})
  metrics.tick(0.5)
  evaluated = []
  learner = SimpleNamespace(metrics=metrics,
                            evaluation=SimpleNamespace(on_checkpoint=evaluated.append))
  Learner._on_checkpoint(learner, str(tmp_path / 'ckpt' / 'ckpt-1'))
  assert sorted(synced) == ['episodes.csv', 'progress.csv', 'train_steps.csv']
  assert evaluated == [str(tmp_path / 'ckpt' / 'ckpt-1')]  # then the evaluation, as before
  metrics.close()


def test_a_failed_sync_is_an_outage_not_an_error(tmp_path, monkeypatch, caplog):
  log = AppendOnlyCsv(str(tmp_path / 'episodes.csv'), ('a',))
  def no_room(fd):
    raise OSError(28, 'No space left on device')
  monkeypatch.setattr(os, 'fsync', no_room)
  with caplog.at_level(logging.WARNING, logger='seed.learner.run_files'):
    assert not log.sync()
  assert 'could not write episodes.csv' in caplog.text
  log.close()


def test_a_tuning_report_it_cannot_write_is_refused_at_start(monkeypatch):
  # As uid 1000 under a root-owned /var/hypertune: the trial would train to its end and
  # report nothing, so the learner refuses to start it (exit 2 in learner/launch.py).
  monkeypatch.setenv('CLOUD_ML_HP_METRIC_FILE', '/proc/seed-no-such/output.metrics')
  with pytest.raises(tuning_report.MetricFileUnwritable,
                     match=r'--hypertune_metric=episode_return: cannot write the tuning '
                           r"service's metric file /proc/seed-no-such/output.metrics"):
    tuning_report.TuningReport('episode_return')


def test_a_tuning_report_that_fails_later_says_so(tmp_path, monkeypatch):
  path = tmp_path / 'hypertune' / 'output.metrics'
  monkeypatch.setenv('CLOUD_ML_HP_METRIC_FILE', str(path))
  report = tuning_report.TuningReport('episode_return')
  report.report(1.5, env_frames=10)
  assert '"episode_return": "1.5"' in path.read_text()
  path.unlink()
  path.mkdir()  # the file's place taken: the next write fails
  with pytest.raises(tuning_report.ReportFailed, match='cannot report episode_return'):
    report.report(2.0, env_frames=20)
