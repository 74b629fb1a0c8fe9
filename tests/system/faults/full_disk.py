"""Full disk: the learner's whole run directory on a small tmpfs that fills up mid-run.

R2D2 on the toy memory task checkpoints every second into <run>/ckpt and writes
progress.csv, episodes.csv and TensorBoard events into <run>, all on a tmpfs of
TMPFS_MB (the processes' own logs go to a tmpfs of their own, as a cluster's
go to stdout). Once a checkpoint exists, a file fills the tmpfs:
  - each save must fail with a clear error ('could not write checkpoint ... No
    space left on device ... the previous checkpoint ... is intact') and leave
    nothing behind;
  - progress.csv, episodes.csv and the summaries must each log an error and
    drop their records, once per outage: a failed save frees the room its
    partial files took, so a file may write again for a moment and fail anew,
    but two errors for one file never come without a recovery between them;
  - training and the actors' streams must go on (learner steps rising in the
    log's progress lines, no actor stream ended).
`count` failed saves later the filler is deleted: the next save must succeed,
progress.csv must get rows again, and every line of both CSVs must be whole.
"""
import contextlib
import csv
import os
import re
import subprocess

from tests.system.faults import watch
from tests.system.faults.outcome import Outcome, Stopwatch, Unavailable
from tests.system.faults.toy_run import ToyRun, log_lines

CI_COUNT = 3
FULL_COUNT = 20

TMPFS_MB = 64
LOGS_TMPFS_MB = 256
TIMEOUT_S = 180.0
_LEARNER_STEPS = re.compile(r'\| learner (\d+) steps')
_OUTPUTS = ('progress.csv', 'episodes.csv', 'the TensorBoard summaries')


def run(count: int, workdir: str) -> Outcome:
  outcome = Outcome('full_disk', count)
  logdir = os.path.join(workdir, 'run')
  with tmpfs(logdir, TMPFS_MB), tmpfs(os.path.join(logdir, 'logs'), LOGS_TMPFS_MB):
    try:
      _fill_and_free(outcome, count, logdir)
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
  fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
  try:
    for chunk_bytes in (1 << 16, 1 << 12, 1):  # down to the last byte that fits
      try:
        while True:
          os.write(fd, b'\0' * chunk_bytes)
      except OSError:
        pass
  finally:
    os.close(fd)
  return path


def _fill_and_free(outcome: Outcome, count: int, logdir: str) -> None:
  """The scenario proper, with `logdir` on a small tmpfs."""
  checkpoints = os.path.join(logdir, 'ckpt')
  with Stopwatch(outcome), ToyRun(logdir, agent='r2d2', gin_file='gin/toy/r2d2.gin',
                                  env_flags=[],
                                  learner_flags=['--checkpoint_interval_s=1']) as run_:
    run_.start_learner()
    for actor_id in range(2):
      run_.start_actor(actor_id, 4)
    _wait_for(lambda: _messages(run_, 'checkpoint written: '), run_, 'a first checkpoint')
    filler = fill_disk(logdir)
    steps_at_full = _learner_steps(run_)
    failures = _wait_for(lambda: _enough(_messages(run_, 'could not write checkpoint'), count),
                         run_, f'{count} failed saves')
    # Each file first fills the rest of its last page (progress.csv: ~20 s of rows).
    _wait_for(lambda: all(_outage_messages(run_, output) for output in _OUTPUTS), run_,
              'errors for progress.csv, episodes.csv and the summaries')
    steps_later = _learner_steps(run_)
    leftovers = sorted(set(os.listdir(checkpoints)) - _listed_files(checkpoints))
    written_before = len(_messages(run_, 'checkpoint written: '))
    rows_before = len(run_.rows())
    os.unlink(filler)
    _wait_for(lambda: len(_messages(run_, 'checkpoint written: ')) > written_before, run_,
              'a checkpoint after the disk had room again')
    rows = run_.wait_progress(lambda r: len(r) > rows_before + 2)
    recovered = _messages(run_, 'writing ')
    outcome.figures.update({
        'failed_saves': str(len(failures)),
        'learner_steps_while_full': f'{steps_at_full} -> {steps_later}',
        'dropped_while_full': '; '.join(m.split(' again ')[0][len('writing '):] + ' ' +
                                        m.split('(')[-1].rstrip(')') for m in recovered),
        'error': failures[0][:160] + '...'})
    for message in failures:
      if 'No space left on device' not in message or 'is intact' not in message:
        outcome.fail(f'unclear error: {message}')
    for output in _OUTPUTS:
      messages = _outage_messages(run_, output)
      if not messages or not messages[0].startswith('could not write'):
        outcome.fail(f'no error for {output} while the disk was full')
      repeated = [m for m, after in zip(messages, messages[1:])
                  if m.startswith('could not write') and after.startswith('could not write')]
      if repeated:
        outcome.fail(f'{output} logged its outage again before it recovered: {repeated[0]}')
    for output in ('progress.csv', 'episodes.csv'):
      if not any(m.startswith(f'writing {output} again') for m in recovered):
        outcome.fail(f'{output} was not written again once there was room')
      torn = _torn_lines(os.path.join(logdir, output))
      if torn:
        outcome.fail(f'{output} has {len(torn)} torn lines, e.g. {torn[0]!r}')
    if int(rows[-1]['learner_steps']) <= steps_later:
      outcome.fail('progress.csv got no rows of later learner steps once there was room')
    if steps_later <= steps_at_full:
      outcome.fail(f'training stopped while the disk was full ({steps_at_full} steps)')
    if leftovers:
      outcome.fail(f'files of failed saves left behind: {leftovers}')
    if run_.learner.poll() is not None:
      outcome.fail(f'the learner exited with {run_.learner.returncode}')
    ended = [line for actor_id in run_.actors for line in _actor_log(logdir, actor_id)
             if 'stream to the learner' in line]
    if ended:
      outcome.fail(f'{len(ended)} actor streams ended, e.g. {ended[0]}')


def _outage_messages(run_: ToyRun, output: str):
  """`output`'s errors and recoveries in the learner's log, in order."""
  return _messages(run_, (f'could not write {output} (', f'writing {output} again'))


def _learner_steps(run_: ToyRun) -> int:
  """Learner steps in the log's latest progress line (progress.csv may be dropping rows)."""
  steps = [int(m.group(1)) for _, message in log_lines(run_.learner_log_path)
           for m in [_LEARNER_STEPS.search(message)] if m]
  return steps[-1] if steps else 0


def _torn_lines(path: str):
  with open(path, newline='') as f:
    rows = list(csv.reader(f))
  return [row for row in rows[1:] if len(row) != len(rows[0])]


def _actor_log(logdir: str, actor_id: int):
  with open(os.path.join(logdir, 'logs', f'actor_{actor_id}.log'), errors='replace') as f:
    return f.read().splitlines()


def _messages(run_: ToyRun, prefix):
  """The learner's log messages that start with `prefix` (a string or a tuple of them)."""
  return [message for _, message in log_lines(run_.learner_log_path)
          if message.startswith(prefix)]


def _enough(items, count):
  return items if len(items) >= count else None


def _wait_for(found, run_: ToyRun, what: str):
  try:
    return watch.wait_until(found, what, TIMEOUT_S, watched=[run_.learner])
  except RuntimeError as e:
    raise RuntimeError(f'{e}:\n{run_.learner_log()}') from None


def _listed_files(directory: str):
  """The index file and the files of the checkpoints it names."""
  with open(os.path.join(directory, 'checkpoint')) as f:
    names = [line.split('"')[1] for line in f if line.startswith('all_model_checkpoint_paths')]
  return {'checkpoint'} | {f'{os.path.basename(n)}{suffix}' for n in names
                           for suffix in ('.index', '.data-00000-of-00001', '.replay.npz')}
