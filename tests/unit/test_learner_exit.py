"""The learner's exit code (learner/runtime.py: Learner.exit_code), the same whether its
shutdown ends by itself or by the watchdog of --shutdown_limit_s: 0 only for a run that
reached its goal with its final checkpoint written (finished.json then marks it), the
stopped exit code for a signal before the goal with the checkpoint written, 1 when the
run is not saved as it stands."""
import threading
from types import SimpleNamespace

import pytest

from seed.learner import runtime
from seed.run_dir import status


def learner(tmp_path, *, done=True, written=True, finish_reason=None, trainer_error=None,
            tuning_failed=False):
  return SimpleNamespace(
      trainer=SimpleNamespace(error=trainer_error), _tuning_failed=tuning_failed,
      _final_checkpoint_done=done, _final_checkpoint_written=written,
      finish_reason=finish_reason,
      options=SimpleNamespace(logdir=str(tmp_path), stopped_exit_code=75, max_env_frames=1000,
                              target_return=None),
      counters=SimpleNamespace(snapshot=lambda: {'env_frames': 1200, 'learner_steps': 3}),
      metrics=SimpleNamespace(mean_recent_return=lambda: 0.5))


@pytest.mark.parametrize('state, code', [
    (dict(finish_reason='max_env_frames=1000 reached at 1200 frames'), 0),
    (dict(), 75),  # a preemption before the goal, its checkpoint written
    (dict(written=False), 1),  # the final save failed
    (dict(written=False, finish_reason='reached'), 1),
    (dict(done=False), 1),  # the final save not finished (the watchdog came first)
    (dict(done=False, finish_reason='reached'), 1),
    (dict(trainer_error=RuntimeError('nan')), 1),
    (dict(tuning_failed=True), 1),  # a sweep trial that could not report
], ids=['finished', 'preempted', 'save-failed', 'finished-save-failed', 'save-unfinished',
        'finished-save-unfinished', 'trainer-failed', 'tuning-failed'])
def test_the_exit_code_says_whether_the_run_is_saved_and_finished(tmp_path, state, code):
  assert runtime.Learner.exit_code(learner(tmp_path, **state)) == code
  # Only a run that reached its goal, saved, reads as finished to a restart.
  assert (status.read_finished(str(tmp_path)) is not None) == (code == 0)


def test_the_watchdog_exits_with_that_code(monkeypatch):
  exited = threading.Event()
  codes = []
  def fake_exit(code):
    codes.append(code)
    exited.set()
  monkeypatch.setattr(runtime.os, '_exit', fake_exit)
  monkeypatch.setattr(runtime.logging, 'shutdown', lambda: None)
  runtime._exit_if_stuck(0.01, lambda: 75, lambda: 'written')  # pylint: disable=protected-access
  assert exited.wait(timeout=30)
  assert codes == [75]
