"""Crash during checkpoint: SIGKILLs at random moments of checkpoint writing.

Expectation (the issue): zero unreadable checkpoints, and a restart always
resumes from the newest complete one.

The unit is the real seed.learner.checkpoint.Checkpointer with what a learner gives it:
a Keras model and its Adam optimizer with built slots (about 10 MB, so a save
takes tens of milliseconds), Counters, and a ReplayInput of a few hundred
R2D2-like unrolls (tests.unit.test_replay.sequence). Every save's contents are a
function of its number n: each variable filled with n, counters n * (1, 2, 3, 4),
and the replay holding unrolls _inserts(n) - _CAPACITY ... _inserts(n) - 1.

Each life is a process forked from a zygote that imported TensorFlow once, so a
life is forked in milliseconds. A life checks every checkpoint the index lists
(tf.train.load_checkpoint, every tensor, and its replay file restored), restores
the latest through the Checkpointer and checks what it got (this is the
restart), then saves n = latest + 1, ... telling the parent "begin n" and
"done n" on a pipe (text lines). The parent lets 0 to 2 saves of a life complete
and SIGKILLs the life during the next one, at a delay after "begin" drawn over
the save time measured so far. Only kills that land before "done" count. The
next life must resume from the last "done" number, or from n when the kill
landed after the index already named ckpt-n (seen in the index file).

Where a kill landed is read from the directory afterwards: 'replay' (ckpt-n's
replay file not yet in place, including the instant before save() began),
'tf_write' (replay written, the index does not name ckpt-n), 'index' (the index
names ckpt-n: TF's sweep, the replay prune or the return).

Not failed, counted: TF's CheckpointManager names a new checkpoint in the index,
deletes those beyond max_to_keep, then rewrites the index; a kill in between
leaves the oldest entry listed with its files gone, until the next save. The
Checkpointer only ever reads the latest.

Strays: a last life resumes and saves twice without a kill; whatever is then in
the directory besides the listed checkpoints and the index was left for good by
the kills, and a learner killed often would pile it up: a failure.

  python -m tests.system.faults checkpoint_kills --count 200
"""
import collections
import os
import queue
import random
import re
import signal
import statistics
import subprocess
import sys
import threading
import time
import traceback
from typing import Dict, List, Optional, Tuple

import numpy as np

from tests.system.faults.outcome import Outcome, Stopwatch
from seed.process.local_processes import REPO, child_env
from seed.inputs.replay_input import ReplayInput
from seed.learner.counters import Counters
from tests.unit import test_replay

CI_COUNT = 50
FULL_COUNT = 1000

_MAX_TO_KEEP = 3
_CAPACITY = 300  # Replay capacity, in unrolls.
_INSERTS_PER_SAVE = 4
_INPUT_SIZE, _LAYERS = 256, (1024, 512, 64)  # 0.8 M parameters; 9.8 MB with Adam's slots.
_SAMPLED = 16  # Unrolls of a restored replay compared with what was inserted.
_LINE_TIMEOUT_S = 120  # For any line from a life (a healthy one writes every 0.1 s or so).
_MAX_FAILURE_LINES = 30  # Beyond this, only the counts in the figures.
# A file written by this save, as opposed to one left by an earlier attempt at
# the same number a life ago: filesystem times lag by up to a jiffy (4 ms).
_FRESH_SLACK_NS = 50_000_000

_INDEX_PATHS = re.compile(r'^all_model_checkpoint_paths: "(?:.*/)?ckpt-(\d+)"$', re.M)


# ------------------------------------------------------------- in a life
# TensorFlow (with Keras and seed.learner.checkpoint) is imported in the zygote only:
# the parent never loads it.


def _inserts(n: int) -> int:
  """How many unrolls the replay of save n has had inserted (it holds the last _CAPACITY)."""
  return _CAPACITY + _INSERTS_PER_SAVE * n


def _unroll(i: int):
  return test_replay.sequence(np.random.default_rng(i), i)


def _counter_values(n: int) -> np.ndarray:
  return n * np.arange(1, 5, dtype=np.int64)


def _new_replay() -> ReplayInput:
  return ReplayInput(_SAMPLED, capacity_unrolls=_CAPACITY, min_fill_unrolls=_SAMPLED)


class _Learner:
  """What a learner checkpoints, set to a function of the save number."""

  def __init__(self):
    import keras  # pylint: disable=g-import-not-at-top
    self.model = keras.Sequential([keras.Input((_INPUT_SIZE,))] +
                                  [keras.layers.Dense(units) for units in _LAYERS])
    self.optimizer = keras.optimizers.Adam(1e-3)
    self.optimizer.build(self.model.trainable_variables)  # The slots, as warm_up makes them.
    self.counters = Counters()
    self.replay = _new_replay()

  @property
  def variables(self) -> list:
    return list(self.model.variables) + list(self.optimizer.variables)

  def become(self, n: int, inserted: int) -> int:
    """Sets everything to save n's contents, given `inserted` unrolls so far; returns the
    new count."""
    for i in range(inserted, _inserts(n)):
      self.replay.replay.insert(_unroll(i))
    for variable in self.variables:
      variable.assign(np.full(variable.shape, n, variable.dtype))
    self.counters.load_array(_counter_values(n))
    return _inserts(n)

  def check(self, n: int) -> List[str]:
    """What differs from save n's contents in memory (after a restore)."""
    problems = []
    if not np.array_equal(self.counters.as_array(), _counter_values(n)):
      problems.append(f'counters {self.counters.snapshot()}, expected {_counter_values(n)}')
    wrong = [v.path for v in self.variables if not np.all(np.asarray(v.numpy()) == n)]
    if wrong:
      problems.append(f'{len(wrong)} variables not all {n}, e.g. {wrong[0]}')
    return problems + _check_replay(self.replay, n)


def _check_replay(replay_input, n: int) -> List[str]:
  """What differs from save n's replay: size, insert count and sampled unrolls."""
  replay = replay_input.replay
  num_inserts = int(replay.state_dict()['num_inserts'])
  if len(replay) != _CAPACITY or num_inserts != _inserts(n):
    return [f'replay holds {len(replay)} of {num_inserts} inserted, expected {_CAPACITY} of '
            f'{_inserts(n)}']
  sample = replay.sample(_SAMPLED)
  for b, item_id in enumerate(sample.ids):
    if not _inserts(n) - _CAPACITY <= int(item_id) < _inserts(n):
      return [f'replay sampled id {int(item_id)}, outside the last {_CAPACITY} inserted']
    try:
      test_replay.assert_unroll_equal(test_replay.row(sample.data, b), _unroll(int(item_id)))
    except AssertionError as e:
      return [f'replay unroll {int(item_id)} differs: {_one_line(e)}']
  return []


def _check_file(path: str, n: int, num_variables: int) -> List[str]:
  """Reads checkpoint `path` (save n) and its replay file as a restarting learner could."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  reader = tf.train.load_checkpoint(path)
  problems, variables = [], 0
  for key in reader.get_variable_to_shape_map():
    if key == '_CHECKPOINTABLE_OBJECT_GRAPH' or key.startswith('save_counter/'):
      continue
    value = reader.get_tensor(key)  # Reads the data, checking its CRC.
    if key.startswith('counters/'):
      if not np.array_equal(value, _counter_values(n)):
        problems.append(f'counters {value.tolist()}')
      continue
    variables += 1
    if not np.all(value == n):
      problems.append(f'{key} not all {n}')
  if variables != num_variables:
    problems.append(f'{variables} variables, expected {num_variables}')
  replay = _new_replay()
  if not replay.restore(path):
    return problems + [f'no replay file {path}.replay.npz']
  return problems + _check_replay(replay, n)


def _check_listed(directory: str, num_variables: int) -> Tuple[List[str], int, int]:
  """Checks every checkpoint the index lists: (problems, how many listed, surplus unread).

  TF's CheckpointManager names a new checkpoint in the index before deleting the
  ones beyond max_to_keep and then rewrites the index: a kill in between leaves
  the oldest entries listed with their files (partly) gone. Those surplus
  entries, older than the max_to_keep newest, are counted, not failed.
  """
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  state = tf.train.get_checkpoint_state(directory)
  paths = list(state.all_model_checkpoint_paths) if state else []
  problems, surplus_unread = [], 0
  for index, path in enumerate(paths):
    name = os.path.basename(path)
    try:
      found = _check_file(path, int(name.rsplit('-', 1)[1]), num_variables)
    except Exception as e:  # pylint: disable=broad-except
      if index < len(paths) - _MAX_TO_KEEP:
        surplus_unread += 1
        continue
      found = [f'cannot read it: {_one_line(e)}']
    problems += [f'unreadable {name}: {p}' for p in found]
  return problems, len(paths), surplus_unread


def _live(directory: str, max_saves: int, out: int) -> None:
  """One learner life: check, restore and check, then save up to `max_saves` times."""
  from seed.learner.checkpoint import Checkpointer  # pylint: disable=g-import-not-at-top
  _say(out, f'started {os.getpid()}')
  learner = _Learner()
  problems, listed, surplus_unread = _check_listed(directory, len(learner.variables))
  for problem in problems:
    _say(out, f'fail {problem}')
  _say(out, f'checked {listed} {surplus_unread}')
  checkpointer = Checkpointer(directory, {'model': learner.model, 'optimizer': learner.optimizer},
                              learner.counters, max_to_keep=_MAX_TO_KEEP,
                              replay=learner.replay)
  try:
    resumed = checkpointer.restore_latest()
  except Exception as e:  # pylint: disable=broad-except
    _say(out, f'fail restore of {checkpointer.latest}: {_one_line(e)}')
    raise
  number = int(checkpointer.latest.rsplit('-', 1)[1]) if resumed else 0
  _say(out, f'restored {number if resumed else "none"}')
  for problem in (learner.check(number) if resumed else []):
    _say(out, f'fail contents of restored ckpt-{number}: {problem}')
  inserted = _inserts(number) if resumed else 0
  for n in range(number + 1, number + 1 + max_saves):
    inserted = learner.become(n, inserted)
    _say(out, f'begin {n} {time.time_ns()}')
    path = checkpointer.save()
    _say(out, f'done {n}')
    if os.path.basename(path) != f'ckpt-{n}':
      _say(out, f'fail save {n} wrote {path}')


def _serve(directory: str) -> None:
  """The zygote: imports once, then forks a life per 'life <max_saves>' line on stdin."""
  import tensorflow  # pylint: disable=g-import-not-at-top,unused-import
  import keras  # pylint: disable=g-import-not-at-top,unused-import
  import seed.learner.checkpoint  # pylint: disable=g-import-not-at-top,unused-import
  out = sys.stdout.fileno()
  _say(out, 'ready')
  for line in sys.stdin:
    pid = os.fork()
    if pid == 0:
      code = 0
      try:
        _live(directory, int(line.split()[1]), out)
      except BaseException:  # pylint: disable=broad-except
        _say(out, f'fail crash {_one_line(traceback.format_exc())}')
        code = 1
      finally:
        os._exit(code)  # pylint: disable=protected-access
    _, status = os.waitpid(pid, 0)
    _say(out, f'exit {pid} {os.waitstatus_to_exitcode(status)}')


def _say(out: int, line: str) -> None:
  os.write(out, (line.replace('\n', ' ') + '\n').encode())  # One write: lines never interleave.


def _one_line(error) -> str:
  text = ' | '.join(s.strip() for s in str(error).strip().splitlines() if s.strip())
  return text[-400:]


# ------------------------------------------------------------- the parent


class _Zygote:
  """The zygote process and the lines its lives write, each with its arrival time."""

  def __init__(self, directory: str, log_path: str):
    self._log = open(log_path, 'ab')
    # Its own process group: close() kills it with every life it forked.
    self.process = subprocess.Popen(_zygote_command(directory), stdin=subprocess.PIPE,
                                    stdout=subprocess.PIPE, stderr=self._log, env=child_env(),
                                    cwd=REPO, start_new_session=True)
    self._lines = queue.Queue()
    self._unread = collections.deque()
    threading.Thread(target=self._read, daemon=True).start()

  def _read(self) -> None:
    for raw in self.process.stdout:
      self._lines.put((time.monotonic(), raw.decode(errors='replace').rstrip('\n')))
    self._lines.put((time.monotonic(), None))

  def line(self, timeout_s: float = _LINE_TIMEOUT_S) -> Tuple[float, Optional[str]]:
    """(arrival time, line); the line is None at the end of output. Raises queue.Empty."""
    if self._unread:
      return self._unread.popleft()
    return self._lines.get(timeout=max(0.0, timeout_s))

  def unread(self, item: Tuple[float, Optional[str]]) -> None:
    self._unread.appendleft(item)

  def expect(self, word: str) -> str:
    """The next line, which must start with `word`."""
    _, line = self.line()
    if line is None or line.split(' ', 1)[0] != word:
      raise RuntimeError(f'expected {word!r} from the zygote, got {line!r}')
    return line

  def start_life(self, max_saves: int) -> int:
    """Forks a life that saves at most `max_saves` times; returns its pid."""
    self.process.stdin.write(f'life {max_saves}\n'.encode())
    self.process.stdin.flush()
    return int(self.expect('started').split()[1])

  def close(self) -> None:
    if self.process.poll() is None:
      os.killpg(self.process.pid, signal.SIGKILL)
    self.process.wait()
    self._log.close()


def _zygote_command(directory: str) -> List[str]:
  return [sys.executable, '-m', 'tests.system.faults.checkpoint_kills', directory]


def _listed(directory: str) -> List[int]:
  """The checkpoint numbers the index file lists, read as text (no TensorFlow here)."""
  try:
    with open(os.path.join(directory, 'checkpoint')) as f:
      return [int(n) for n in _INDEX_PATHS.findall(f.read())]
  except FileNotFoundError:
    return []


def _strays(directory: str) -> Dict[str, int]:
  """Files that belong to no listed checkpoint: relative path -> bytes."""
  keep = {'checkpoint'} | {f'ckpt-{n}{suffix}' for n in _listed(directory)
                           for suffix in ('.index', '.data-00000-of-00001', '.replay.npz')}
  strays = {}
  for root, _, files in os.walk(directory):
    for name in files:
      path = os.path.join(root, name)
      if os.path.relpath(path, directory) not in keep:
        strays[os.path.relpath(path, directory)] = os.path.getsize(path)
  return strays


def _pattern(relative_path: str) -> str:
  """A stray's name with its number and random part as '*', to group them."""
  name = re.sub(r'\.tmp[0-9a-f]{32}$', '.tmp*', relative_path)  # TF's index temporaries.
  name = re.sub(r'\.npz\.[^./]+\.tmp$', '.npz.*.tmp', name)  # npz.write_atomically's.
  name = re.sub(r'\.tempstate\d+$', '.tempstate*', name)  # TF's data file temporaries.
  return re.sub(r'ckpt-\d+', 'ckpt-*', name)


def _phase(directory: str, number: int, begin_ns: int) -> str:
  """Where the kill landed in save `number`, from what the directory holds now."""
  if number in _listed(directory):
    return 'index'
  try:
    replay_ns = os.stat(os.path.join(directory, f'ckpt-{number}.replay.npz')).st_mtime_ns
  except FileNotFoundError:
    return 'replay'
  return 'tf_write' if replay_ns >= begin_ns - _FRESH_SLACK_NS else 'replay'


class _Book:
  """The parent's bookkeeping over lives: what each must resume from, timings, failures."""

  def __init__(self, directory: str, outcome: Outcome):
    self.directory, self.outcome = directory, outcome
    self.rng = random.Random(0)
    self.last_done: Optional[int] = None  # The newest save a life reported done.
    self.expected: Optional[int] = None  # What the next life must resume from.
    self.note = 'the first life'  # How the previous life ended, for failure lines.
    self.save_s = {True: [], False: []}  # Save times, by "first save of its life".
    self.phases = collections.Counter()
    self.tallies = collections.Counter()  # Failures by kind, kills, surplus entries.
    self.lives = 0
    self.unlisted_failures = 0
    self.stray_max = (0, 0)  # (files, bytes) after a kill.

  def fail(self, kind: str, message: str) -> None:
    self.tallies[kind] += 1
    if len(self.outcome.failures) < _MAX_FAILURE_LINES:
      self.outcome.fail(f'life {self.lives} (after {self.note}): {message}')
    else:
      self.unlisted_failures += 1

  def draw_delay(self, first_in_life: bool) -> Optional[float]:
    """When to kill after a 'begin': mostly uniform over a typical save, a fifth of
    draws at its very start or around its end; None before 3 saves are measured."""
    if len(self.save_s[True]) + len(self.save_s[False]) < 3:
      return None
    typical_s = statistics.median(self.save_s[first_in_life][-50:] or
                                  self.save_s[not first_in_life][-50:])
    u = self.rng.random()
    if u < 0.1:
      return self.rng.uniform(0.0, 0.05) * typical_s
    if u < 0.2:
      return self.rng.uniform(0.9, 1.2) * typical_s
    return self.rng.uniform(0.0, 1.0) * typical_s

  def life(self, zygote: _Zygote, kill: bool) -> None:
    """One life: its checks and saves, and (if `kill`) a SIGKILL inside one save."""
    self.lives += 1
    complete_first = self.rng.randint(0, 2)  # Saves left to complete before the kill.
    pid = zygote.start_life(max_saves=complete_first + 50 if kill else 2)
    killed, done_after_kill, saves, begin = False, False, 0, None
    while True:
      arrival, line = zygote.line()
      if line is None:
        raise RuntimeError('the zygote exited')
      word, _, rest = line.partition(' ')
      if word == 'fail':
        self.fail(rest.split(' ', 1)[0], rest)
      elif word == 'checked':
        self.tallies['lives_seeing_surplus_gone'] += int(int(rest.split()[1]) > 0)
      elif word == 'restored':
        self.check_resumed(None if rest == 'none' else int(rest))
      elif word == 'begin':
        number, wall_ns = map(int, rest.split())
        begin = (number, arrival, wall_ns)
        if kill and not killed and saves >= complete_first:
          killed = self.kill_in_save(zygote, pid, arrival, first_in_life=saves == 0)
      elif word == 'done':
        self.last_done = int(rest)
        if killed:
          done_after_kill = True  # Written before the kill landed, read after it.
        else:
          self.save_s[saves == 0].append(arrival - begin[1])
        saves += 1
      elif word == 'exit':
        self.after_exit(int(rest.split()[1]), kill, killed, done_after_kill, begin)
        return

  def kill_in_save(self, zygote: _Zygote, pid: int, begin_s: float,
                   first_in_life: bool) -> bool:
    """SIGKILLs the life at a random moment of the save that began at `begin_s`;
    False when the save ended before that moment (or nothing is measured yet)."""
    delay_s = self.draw_delay(first_in_life)
    if delay_s is None:
      return False
    try:
      item = zygote.line(timeout_s=begin_s + delay_s - time.monotonic())
    except queue.Empty:
      # The zygote reaps the life only after it ends: until 'exit', the pid is its.
      os.kill(pid, signal.SIGKILL)
      return True
    zygote.unread(item)  # 'done' came first: no kill this save.
    return False

  def check_resumed(self, number: Optional[int]) -> None:
    if number != self.expected:
      self.fail('wrong_resume', f'resumed from ckpt-{number}, expected ckpt-{self.expected}')
    # The newest complete save now; and judge later lives by what is there, not cascade.
    self.last_done = self.expected = number

  def after_exit(self, status: int, kill: bool, killed: bool, done_after_kill: bool,
                 begin) -> None:
    """Where the kill landed, and so what the next life must resume from."""
    self.expected = self.last_done
    if not kill or not killed:
      self.note = f'a life that exited with {status}'
      if status != 0 or kill:
        self.fail('crash', f'the life exited with {status}, unkilled')
      return
    number, _, wall_ns = begin
    if status != -signal.SIGKILL:
      self.fail('crash', f'the life exited with {status} before the kill in save {number}')
    # Under load this reader can lag the life: the kill meant for save n may land after
    # 'done n' and a 'begin n + 1' were written, inside save n + 1 (whose files then
    # say how far it got, as for any kill in a save). Only a kill after the last save's
    # own 'done' leaves that save complete.
    if done_after_kill and self.last_done == number:
      self.phases['after_done'] += 1
      self.note = f'a kill after save {number} was done'
      return
    phase = _phase(self.directory, number, wall_ns)
    self.phases[phase] += 1
    self.tallies['kills_in_save'] += 1
    if phase == 'index':  # The save was complete: only 'done' was missing.
      self.expected = number
    self.note = f'a kill in {phase} of save {number}'
    strays = _strays(self.directory)
    self.stray_max = max(self.stray_max, (len(strays), sum(strays.values())))


def run(count: int, workdir: str) -> Outcome:
  """`count` SIGKILLs inside checkpoint saves, each followed by a checked restart."""
  outcome = Outcome('checkpoint_kills', count)
  directory = os.path.join(workdir, 'ckpt')
  os.makedirs(directory, exist_ok=True)
  book = _Book(directory, outcome)
  with Stopwatch(outcome):
    zygote = _Zygote(directory, os.path.join(workdir, 'lives.log'))
    try:
      started = time.monotonic()
      zygote.expect('ready')
      zygote_s, started = time.monotonic() - started, time.monotonic()
      while book.tallies['kills_in_save'] < count and book.lives < 3 * count + 10:
        book.life(zygote, kill=True)
      book.life(zygote, kill=False)  # Resumes, checks, then saves twice in peace.
      lives_s = time.monotonic() - started
    except queue.Empty:
      outcome.fail(f'life {book.lives}: silent for {_LINE_TIMEOUT_S} s (see {workdir}/lives.log)')
      return outcome
    except (RuntimeError, OSError) as e:  # The zygote died, or a line made no sense.
      outcome.fail(f'life {book.lives}: {type(e).__name__}: {e} (see {workdir}/lives.log)')
      return outcome
    finally:
      zygote.close()
  _report(book, outcome, zygote_s, lives_s)
  return outcome


def _report(book: _Book, outcome: Outcome, zygote_s: float, lives_s: float) -> None:
  """Figures, and the failures that are totals rather than one life's."""
  strays = _strays(book.directory)
  saves_ms = sorted(1e3 * s for s in book.save_s[True] + book.save_s[False])
  tallies, kills = book.tallies, book.tallies['kills_in_save']
  outcome.figures.update({
      'kills_in_save': str(kills),
      'kills_replay/tf_write/index': '/'.join(str(book.phases[p])
                                             for p in ('replay', 'tf_write', 'index')),
      'kills_after_done': str(book.phases['after_done']),
      'unreadable': str(tallies['unreadable']),
      'wrong_resume': str(tallies['wrong_resume']),
      'wrong_contents': str(tallies['contents']),
      'failed_restore': str(tallies['restore']),
      'lives_seeing_surplus_gone': str(tallies['lives_seeing_surplus_gone']),
      's_per_life': f'{lives_s / book.lives:.2f}',
      'zygote_start_s': f'{zygote_s:.1f}',
      'save_ms_p50': f'{saves_ms[len(saves_ms) // 2]:.0f}',
      'save_ms_p90': f'{saves_ms[int(0.9 * (len(saves_ms) - 1))]:.0f}',
      'stray_files_max': str(book.stray_max[0]),
      'stray_files_end': str(len(strays)),
      'stray_kb_end': f'{sum(strays.values()) / 1024:.0f}',
  })
  if kills < outcome.count:
    outcome.fail(f'only {kills} of {outcome.count} kills landed in a save in {book.lives} lives')
  if strays:
    kinds = dict(collections.Counter(_pattern(path) for path in strays))
    outcome.fail(f'{len(strays)} files ({sum(strays.values()) / 1024:.0f} KiB) left behind for '
                 f'good by {kills} kills (still there after two clean saves): {kinds}; a '
                 'learner killed often would fill its disk')
  if book.unlisted_failures:
    outcome.fail(f'{book.unlisted_failures} more failures of lives, not listed: see the figures')


if __name__ == '__main__':
  _serve(sys.argv[1])
