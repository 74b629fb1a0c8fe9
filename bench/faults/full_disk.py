"""Full disk: the learner's checkpoint directory on a small tmpfs that fills up mid-run.

R2D2 on the toy memory task checkpoints every second into <run>/ckpt, a tmpfs
of TMPFS_MB. Once a checkpoint exists, a file fills the tmpfs: each save must
then fail with a clear error in the log ('could not write checkpoint ... No
space left on device ... the previous checkpoint ... is intact'), leave nothing
behind, and training must go on (learner steps rising). `count` failed saves
later the filler is deleted and the next save must succeed.
"""
import contextlib
import os
import subprocess
import time

from bench.faults.outcome import Outcome, Stopwatch, Unavailable
from bench.faults.toy_run import ToyRun, log_lines

CI_COUNT = 3
FULL_COUNT = 20

TMPFS_MB = 64
TIMEOUT_S = 180.0


def run(count: int, workdir: str) -> Outcome:
  outcome = Outcome('full_disk', count)
  logdir = os.path.join(workdir, 'run')
  checkpoints = os.path.join(logdir, 'ckpt')
  with tmpfs(checkpoints, TMPFS_MB):
    try:
      _fill_and_free(outcome, count, logdir, checkpoints)
    except (TimeoutError, RuntimeError) as e:
      outcome.fail(str(e))
  return outcome


@contextlib.contextmanager
def tmpfs(directory: str, size_mb: int):
  """A tmpfs of `size_mb` mounted on `directory` (made if missing) for the block, and
  unmounted after it, also when it raises; Unavailable where mounting is refused."""
  os.makedirs(directory, exist_ok=True)
  mounted = subprocess.run(['mount', '-t', 'tmpfs', '-o', f'size={size_mb}m', 'tmpfs',
                            directory], capture_output=True, text=True)
  if mounted.returncode != 0:
    raise Unavailable(f'cannot mount a tmpfs (needs root): {mounted.stderr.strip()}')
  try:
    yield directory
  finally:
    subprocess.run(['umount', '--lazy', directory], check=False)


def fill_disk(directory: str) -> str:
  """A file that takes all the room left in `directory`'s filesystem; returns its path."""
  path = os.path.join(directory, 'filler')
  with open(path, 'wb') as f:
    try:
      while True:
        f.write(b'\0' * (1 << 16))
        f.flush()
    except OSError:
      pass
  return path


def _fill_and_free(outcome: Outcome, count: int, logdir: str, checkpoints: str) -> None:
  """The scenario proper, with `checkpoints` on a small tmpfs."""
  with Stopwatch(outcome), ToyRun(logdir, agent='r2d2', gin_file='gin/toy/r2d2.gin',
                                  env_flags=[],
                                  learner_flags=['--checkpoint_interval_s=1']) as run_:
    run_.start_learner()
    for actor_id in range(2):
      run_.start_actor(actor_id, 4)
    _wait_for(lambda: _messages(run_, 'checkpoint written: '), run_, 'a first checkpoint')
    filler = fill_disk(checkpoints)
    steps_at_full = int(run_.rows()[-1]['learner_steps'])
    failures = _wait_for(lambda: _enough(_messages(run_, 'could not write checkpoint'), count),
                         run_, f'{count} failed saves')
    steps_later = int(run_.wait_progress(lambda r: True)[-1]['learner_steps'])
    leftovers = sorted(set(os.listdir(checkpoints)) - {'filler'} -
                       _listed_files(checkpoints))
    written_before = len(_messages(run_, 'checkpoint written: '))
    os.unlink(filler)
    _wait_for(lambda: len(_messages(run_, 'checkpoint written: ')) > written_before, run_,
              'a checkpoint after the disk had room again')
    outcome.figures.update({
        'failed_saves': str(len(failures)),
        'learner_steps_while_full': f'{steps_at_full} -> {steps_later}',
        'error': failures[0][:160] + '...'})
    for message in failures:
      if 'No space left on device' not in message or 'is intact' not in message:
        outcome.fail(f'unclear error: {message}')
    if steps_later <= steps_at_full:
      outcome.fail(f'training stopped while the disk was full ({steps_at_full} steps)')
    if leftovers:
      outcome.fail(f'files of failed saves left behind: {leftovers}')
    if run_.learner.poll() is not None:
      outcome.fail(f'the learner exited with {run_.learner.returncode}')


def _messages(run_: ToyRun, prefix: str):
  return [message for _, message in log_lines(run_.learner_log_path)
          if message.startswith(prefix)]


def _enough(items, count):
  return items if len(items) >= count else None


def _wait_for(found, run_: ToyRun, what: str):
  deadline = time.monotonic() + TIMEOUT_S
  while True:
    result = found()
    if result:
      return result
    if run_.learner.poll() is not None:
      raise RuntimeError(f'the learner exited with {run_.learner.returncode} waiting for '
                         f'{what}:\n{run_.learner_log()}')
    if time.monotonic() > deadline:
      raise TimeoutError(f'no {what} within {TIMEOUT_S:.0f} s')
    time.sleep(0.2)


def _listed_files(directory: str):
  """The index file and the files of the checkpoints it names."""
  with open(os.path.join(directory, 'checkpoint')) as f:
    names = [line.split('"')[1] for line in f if line.startswith('all_model_checkpoint_paths')]
  return {'checkpoint'} | {f'{os.path.basename(n)}{suffix}' for n in names
                           for suffix in ('.index', '.data-00000-of-00001', '.replay.npz')}
