"""One learner per run directory (learner/run_lock.py): a second learner on a directory a
live one holds waits for its heartbeat to stop, then refuses naming the holder; a dead
holder's lock (stale, or its process gone on this host, or a restart within the same
job) is taken over."""
import json
import os
import signal
import socket
import subprocess
import sys
import time

import pytest

from seed.learner import run_lock
from tests.processes import REPO, Run, _env

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
    (dict(host=socket.gethostname(), pid=2 ** 22 + 17, pid_space=run_lock.pid_space()),
     'its process is gone'),
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


# A learner as PID 1 of a PID namespace of its own, as every learner is in a container:
# it holds the lock (or is refused it) and says which.
HOLD = """
import os, sys, time
from seed.learner import run_lock
lock = run_lock.RunLock(sys.argv[1], stale_s=float(sys.argv[2]))
try:
  lock.acquire()
except run_lock.RunDirectoryInUse as e:
  print('refused:', e, flush=True)
  sys.exit(2)
print('holding as pid', os.getpid(), flush=True)
time.sleep(float(sys.argv[3]))
lock.release()
"""


def in_new_pid_namespace(*args):
  # --kill-child: the learner (PID 1 inside) dies with the unshare process we stop.
  return ['unshare', '--pid', '--fork', '--kill-child', '--mount-proc',
          sys.executable, '-c', HOLD, *args]


def test_two_learners_as_pid_1_on_one_host_cannot_both_hold_a_run_directory(tmp_path):
  # Under podman with the host's network every learner is PID 1 with the node's host
  # name: host + pid took a live learner's lock at once.
  probe = subprocess.run(['unshare', '--pid', '--fork', '--mount-proc', 'true'],
                         capture_output=True, text=True)
  if probe.returncode != 0:
    pytest.skip(f'cannot make PID namespaces here: {probe.stderr.strip()}')
  logdir = str(tmp_path)
  first = subprocess.Popen(in_new_pid_namespace(logdir, '3', '600'), env=_env(), cwd=REPO,
                           stdout=subprocess.PIPE, text=True)
  try:
    assert first.stdout.readline().strip() == 'holding as pid 1'
    second = subprocess.run(in_new_pid_namespace(logdir, '3', '0'), env=_env(), cwd=REPO,
                            capture_output=True, text=True, timeout=120)
    assert second.returncode == 2, second.stdout + second.stderr
    assert second.stdout.startswith(f'refused: {logdir} is in use by learner pid 1 on '
                                    f'{socket.gethostname()}'), second.stdout
    holder = run_lock.read(logdir)
    assert holder.pid == 1 and first.poll() is None  # the first still holds it
  finally:
    first.send_signal(signal.SIGKILL)
    first.wait(timeout=30)
