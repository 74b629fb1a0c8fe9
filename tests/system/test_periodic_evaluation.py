"""--eval_interval_s: checkpoints evaluated while training goes on, into TensorBoard with
a GIF of the first episode; and the pieces by themselves."""
import errno
import glob
import os

import numpy as np
import pytest

from seed.learner import periodic_evaluation as periodic
from tests.processes import Run

pytestmark = pytest.mark.timeout(600)


def test_bad_settings_are_refused():
  with pytest.raises(ValueError, match=r'--eval_interval_s=0 and --eval_episodes=5; '
                     r'expected > 0 and >= 1'):
    periodic.PeriodicEvaluation('unused', 0, 5, video=False)


def test_a_due_evaluation_starts_once_and_waits_for_the_last(tmp_path, monkeypatch):
  started = []

  class FakeChild:
    def poll(self):
      return None  # still running

  def fake_popen(command, **kwargs):
    del kwargs
    started.append(command)
    return FakeChild()
  monkeypatch.setattr(periodic.subprocess, 'Popen', fake_popen)
  evaluation = periodic.PeriodicEvaluation(str(tmp_path), 3600, 2, video=True)
  assert evaluation.on_checkpoint(str(tmp_path / 'ckpt' / 'ckpt-1'))
  assert not evaluation.on_checkpoint(str(tmp_path / 'ckpt' / 'ckpt-2'))  # one runs
  [command] = started
  assert '--checkpoint=' + str(tmp_path / 'evaluation' / 'pinned' / 'ckpt-1') in command
  assert '--episodes=2' in command and '--tensorboard' in command
  assert f'--video={tmp_path}/evaluation/ckpt-1.mp4' in command


def test_the_evaluated_checkpoint_outlives_its_rotation_until_the_child_exits(
    tmp_path, monkeypatch):
  # The learner keeps its last few checkpoints; the child needs seconds to start.
  ckpt = tmp_path / 'ckpt'
  ckpt.mkdir()
  for suffix, data in (('.index', b'index'), ('.data-00000-of-00001', b'weights'),
                       ('.replay.npz', b'replay')):
    (ckpt / f'ckpt-1{suffix}').write_bytes(data)
  exit_code = [None]

  class FakeChild:
    def poll(self):
      return exit_code[0]

  commands = []
  monkeypatch.setattr(periodic.subprocess, 'Popen',
                      lambda command, **kwargs: commands.append(command) or FakeChild())
  evaluation = periodic.PeriodicEvaluation(str(tmp_path), 1e-9, 2, video=False)
  assert evaluation.on_checkpoint(str(ckpt / 'ckpt-1'))
  for path in ckpt.iterdir():
    path.unlink()  # CheckpointManager's rotation
  pinned = tmp_path / 'evaluation' / 'pinned'
  assert sorted(p.name for p in pinned.iterdir()) == ['ckpt-1.data-00000-of-00001',
                                                      'ckpt-1.index']  # not the replay
  assert (pinned / 'ckpt-1.data-00000-of-00001').read_bytes() == b'weights'
  assert not evaluation.on_checkpoint(str(ckpt / 'ckpt-2'))  # still running
  assert (pinned / 'ckpt-1.index').exists()
  exit_code[0] = 0
  evaluation.close()
  assert not pinned.exists() and len(commands) == 1


def test_a_killed_learners_pinned_checkpoint_is_removed_at_the_next_start(tmp_path):
  pinned = tmp_path / 'evaluation' / 'pinned'
  pinned.mkdir(parents=True)
  (pinned / 'ckpt-4.index').write_bytes(b'index')
  periodic.PeriodicEvaluation(str(tmp_path), 60, 2, video=False)
  assert not pinned.exists()


def test_a_full_disk_skips_the_evaluation_and_training_goes_on(tmp_path, monkeypatch):
  # on_checkpoint runs in the trainer's thread: an OSError there would end training.
  ckpt = tmp_path / 'ckpt'
  ckpt.mkdir()
  (ckpt / 'ckpt-1.index').write_bytes(b'index')

  def no_space(*args):
    raise OSError(errno.ENOSPC, 'No space left on device')
  monkeypatch.setattr(periodic.os, 'link', no_space)  # as a filesystem without links
  monkeypatch.setattr(periodic.shutil, 'copyfile', no_space)
  monkeypatch.setattr(periodic.subprocess, 'Popen', lambda *a, **k: pytest.fail('started'))
  evaluation = periodic.PeriodicEvaluation(str(tmp_path), 1e-9, 2, video=False)
  assert not evaluation.on_checkpoint(str(ckpt / 'ckpt-1'))
  assert not (tmp_path / 'evaluation' / 'pinned').exists() and evaluation.started == 0


def test_training_with_periodic_evaluation_logs_returns_and_a_gif(tmp_path):
  tf = pytest.importorskip('tensorflow')
  from tensorboard.backend.event_processing import event_accumulator  # pylint: disable=g-import-not-at-top
  with Run(tmp_path / 'run', 'gin/toy/vtrace.gin',
           learner_flags=['--checkpoint_interval_s=3', '--eval_interval_s=1',
                          '--eval_episodes=2', '--eval_video',
                          '--max_env_frames=10000']) as run:
    run.start_learner()
    run.start_actors(1, 4)
    assert run.wait_learner(timeout_s=400) == 0, run.learner_log()
  evaluations = glob.glob(os.path.join(run.logdir, 'evaluation', 'ckpt-*_greedy_seed0.json'))
  assert evaluations, open(os.path.join(run.logdir, 'logs', 'evaluation.log')).read()[-3000:]
  assert glob.glob(os.path.join(run.logdir, 'evaluation', 'ckpt-*.mp4'))
  # One events file per evaluation process; a quick run may finish more than one.
  events_dir = os.path.join(run.logdir, 'evaluation', 'tb')
  assert glob.glob(os.path.join(events_dir, 'events.out.tfevents.*'))
  accumulator = event_accumulator.EventAccumulator(
      events_dir, size_guidance={event_accumulator.TENSORS: 0})
  accumulator.Reload()
  tags = accumulator.Tags()['tensors']
  assert 'evaluation/return_mean' in tags and 'evaluation/video' in tags
  [video] = accumulator.Tensors('evaluation/video')[:1]
  width, height, gif = tf.make_ndarray(video.tensor_proto)
  assert gif[:6] == b'GIF89a' and int(width) <= 240 and int(height) > 0
  mean = accumulator.Tensors('evaluation/return_mean')[0]
  assert np.isfinite(float(tf.make_ndarray(mean.tensor_proto)))
