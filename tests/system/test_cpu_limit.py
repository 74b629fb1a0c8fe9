"""A learner under a CPU limit sizes TensorFlow's thread pools from it, not from the
machine's cores (seed/process/cpu_quota.py): run here in a real cgroup (v1 or v2, made
and removed by the test) whose quota is one CPU. Skips where no cgroup can be made."""
import os
import signal
import time

import pytest

from tests.processes import Run

pytestmark = pytest.mark.timeout(300)

# (folder of the cpu controller, file and value for a quota of one CPU)
HIERARCHIES = [('/sys/fs/cgroup/cpu', 'cpu.cfs_quota_us', '100000'),
               ('/sys/fs/cgroup', 'cpu.max', '100000 100000')]


@pytest.fixture
def one_cpu_cgroup():
  """A new cgroup with a quota of one CPU (100 ms each 100 ms); removed at the end."""
  if (os.cpu_count() or 1) < 2:
    pytest.skip('one CPU here: a limit of one CPU changes nothing')
  for root, quota_file, quota in HIERARCHIES:
    if not os.path.exists(os.path.join(root, quota_file if root.endswith('cpu') else
                                       'cgroup.controllers')):
      continue
    folder = os.path.join(root, f'seed-test-{os.getpid()}')
    try:
      os.mkdir(folder)
    except OSError:
      continue
    try:
      with open(os.path.join(folder, quota_file), 'w') as f:
        f.write(quota)
    except OSError:
      os.rmdir(folder)
      continue
    try:
      yield folder
    finally:
      deadline = time.monotonic() + 30
      while True:  # empty once the processes put there have exited
        try:
          os.rmdir(folder)
          break
        except OSError:
          if time.monotonic() > deadline:
            raise
          time.sleep(0.5)
    return
  pytest.skip('cannot make a cgroup with a CPU quota here (not root, or no cpu controller)')


def test_a_learner_limited_to_one_cpu_runs_tensorflow_on_one_thread_a_pool(tmp_path,
                                                                          one_cpu_cgroup):
  # Into the cgroup before anything runs: the shell moves itself, then becomes the learner.
  enter = ['sh', '-c', f'echo $$ > {one_cpu_cgroup}/cgroup.procs && exec "$@"', 'sh']
  run = Run(tmp_path / 'run', 'gin/toy/vtrace.gin', gin_bindings=["EnvConfig.name='Catch'"],
            learner_prefix=enter)
  with run:
    run.start_learner(timeout_s=240)
    log = run.learner_log(tail_chars=None)
    run.learner.send_signal(signal.SIGTERM)
    run.learner.wait(timeout=120)
  assert f"TensorFlow threads: 1 intra-op, 1 inter-op (1 of the machine's {os.cpu_count()} " \
         'CPUs' in log, log[-3000:]
