"""One learner per run directory (learner/run_lock.py): a second learner on a directory a
live one holds waits for its heartbeat to stop, then refuses naming the holder; a dead
holder's lock (stale, or its process gone on this host, or a restart within the same
job) is taken over."""
import json
import os
import socket
import time

import pytest

from seed.learner import run_lock
from tests.processes import Run

pytestmark = pytest.mark.timeout(240)


def write_lock(logdir, **fields):
  now = time.time()
  owner = {**dict(host='elsewhere', pid=4242, job='', started=now, heartbeat=now), **fields}
  with open(os.path.join(logdir, run_lock.LOCK_FILE), 'w') as f:
    json.dump(owner, f)


def test_a_second_learner_waits_then_refuses_and_leaves_the_run_alone(tmp_path):
  run = Run(tmp_path / 'run', 'gin/toy/vtrace.gin', gin_bindings=["EnvConfig.name='Catch'"],
            learner_flags=['--run_lock_stale_s=3'])
  with run:
    run.start_learner()
    first = run.learner
    holder = run_lock.read(run.logdir)
    assert (holder.host, holder.pid) == (socket.gethostname(), first.pid)
    # A second learner (a second job with the same run name), on another "host": the
    # holder looks alive, so after waiting it refuses.
    second = Run(run.logdir, 'gin/toy/vtrace.gin', gin_bindings=["EnvConfig.name='Catch'"],
                 learner_flags=['--run_lock_stale_s=3'])
    started = time.monotonic()
    with pytest.raises(RuntimeError, match='learner exited with 2'):
      second.start_learner(extra_flags=['--seed=1'])  # same host: first.pid is alive
    assert time.monotonic() - started < 90
    log = run.learner_log()
    assert 'is held by learner pid' in log and 'waiting up to' in log, log
    assert f'is in use by learner pid {first.pid} on {socket.gethostname()}' in log, log
    assert '--run_lock_stale_s' in log
    assert first.poll() is None  # the first one trains on
    assert run_lock.read(run.logdir).pid == first.pid
  assert not os.path.exists(os.path.join(run.logdir, run_lock.LOCK_FILE))  # released


@pytest.mark.parametrize('fields, why', [
    (dict(heartbeat=0.0), 'stale heartbeat'),
    (dict(host=socket.gethostname(), pid=2 ** 22 + 17), 'its process is gone'),
    (dict(job='slurm-77'), 'a restart within the same job')])
def test_a_dead_holders_lock_is_taken_over_at_once(tmp_path, fields, why, monkeypatch):
  monkeypatch.setenv('SLURM_JOB_ID', '77')
  logdir = str(tmp_path)
  write_lock(logdir, **fields)
  lock = run_lock.RunLock(logdir, stale_s=60)
  started = time.monotonic()
  lock.acquire()
  assert time.monotonic() - started < 10, why
  assert run_lock.read(logdir) == lock.me
  lock.release()
  assert run_lock.read(logdir) is None


def test_a_learner_whose_lock_was_taken_over_stops_at_once(tmp_path, monkeypatch):
  lost = []
  lock = run_lock.RunLock(str(tmp_path), stale_s=1, on_lost=lambda: lost.append(True))
  lock.acquire()
  write_lock(str(tmp_path))  # another learner, after this one stalled past stale_s
  deadline = time.monotonic() + 10
  while not lost and time.monotonic() < deadline:
    time.sleep(0.1)
  assert lost == [True]
  lock.release()
  assert run_lock.read(str(tmp_path)).pid == 4242  # the new owner's lock stays
